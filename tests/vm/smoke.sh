#!/bin/bash
# tests/vm/smoke.sh BUILD SRC WHO: the smoke suite the VM lane runs on each kernel, as root and
# as an ordinary user (WHO says which, for the messages): create, a box that edits and commits,
# the audit and --verify, checkpoint and rewind, --memory and --pids on cgroup v2 (a hog ended,
# the kill in the audit), a launcher's --explain, workspace info's features, delete.
set -u
build=$1 src=$2 who=$3
A=$build/cli/arborinth
fails=0 checks=0
ok() { checks=$((checks + 1)); echo "ok: $*"; }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL ($who): $*"; }
# run WANT WHAT -- CMD...: OUT/ERR and the exit status checked (a hang ends after 150 s: 124).
run() {
	local want=$1 what=$2 got=0
	shift 3
	OUT=$(timeout 150 "$@" 2>"$TMPDIR/.err") || got=$?
	ERR=$(cat "$TMPDIR/.err")
	if [ "$got" = "$want" ]; then ok "$what"; else bad "$what: exit $got (want $want): $ERR"; fi
}
has() { if grep -Eq -- "$1" <<<"$2"; then ok "$3"; else bad "$3: [$2] lacks /$1/"; fi; }

r=$TMPDIR/repo-$who
rm -rf "$r"
git init -q -b main "$r"
git -C "$r" config user.email vm@example.com
git -C "$r" config user.name vm
echo one >"$r/file"
git -C "$r" add file && git -C "$r" commit -qm first
cd "$r"

run 0 "create" -- "$A" workspace create s
run 0 "info" -- "$A" workspace info s
has '^mounted: +yes' "$OUT" "the view is mounted"
has '^io: ' "$OUT" "info says how the view does its I/O"
has '^requests: +(/dev/fuse \(.+\)|io_uring)' "$OUT" "info says how requests reach the daemon, and why"
echo "ARB-VM: $who: $(grep -E '^(io|requests):' <<<"$OUT" | tr -s ' ' | tr '\n' ' ')"

run 0 "a box edits and commits" -- "$A" shell s -- sh -c \
	'echo two >> file && git add file && git -c user.name=b -c user.email=b@e commit -qm edit && git log --oneline | wc -l'
has '^2$' "$OUT" "the box's commit is in its history"
run 0 "audit" -- "$A" audit s
has 'write +.*file' "$OUT" "the audit has the box's write"
run 0 "audit --verify" -- "$A" audit s --verify
run 0 "checkpoint" -- "$A" checkpoint s
run 0 "log" -- "$A" log s
run 0 "rewind before session 1" -- "$A" rewind s --before-session 1
run 0 "after rewind" -- cat .git/arborinth/workspaces/s/workdir/file
has '^one$' "$OUT" "rewind gave the file back its state before the session"

# Limits on cgroup v2: a memory hog ended and recorded; a fork bomb held.
hog='x = bytearray(400 << 20); print("allocated")'
run 137 "--memory ends a memory hog" -- "$A" shell s --memory 64M -- python3 -c "$hog"
has 'the box reached its limit of 64 MiB' "$ERR" "--memory says what it did"
run 0 "control: the hog without --memory" -- "$A" shell s -- python3 -c "$hog"
pids='import os
n = 0
for i in range(60):
    try:
        if os.fork() == 0:
            import time; time.sleep(3); os._exit(0)
        n += 1
    except OSError:
        pass
print("forked", n)'
run 0 "--pids holds a fork hog" -- "$A" shell s --pids 20 -- python3 -c "$pids"
has '^forked 1[0-9]$' "$OUT" "--pids 20 let fewer than 20 processes start"
has 'the box reached its limit of 20 processes' "$ERR" "--pids says what it did"
run 0 "audit after the limits" -- "$A" audit s --kind exec --json
has '"path": ?"--memory"' "$OUT" "the audit records the --memory kill"
has '"path": ?"--pids"' "$OUT" "the audit records the refused forks"
run 0 "audit --verify after the limits" -- "$A" audit s --verify

# A launcher's --explain: the whole box described, nothing run.
mkdir -p "$TMPDIR/bin-$who"
printf '#!/bin/sh\nexit 0\n' >"$TMPDIR/bin-$who/claude"
chmod +x "$TMPDIR/bin-$who/claude"
run 0 "claude --explain" -- env PATH="$TMPDIR/bin-$who:$PATH" ANTHROPIC_API_KEY=sk-vm \
	"$A" claude s --explain
has 'bwrap' "$OUT" "--explain shows the box"

# Passthrough where the kernel (6.9+) and the caller (CAP_SYS_ADMIN) allow it; else the view
# falls back to its daemon and says why. Either way it works.
run 0 "create --io passthrough" -- "$A" workspace create p --io passthrough
run 0 "info of the passthrough view" -- "$A" workspace info p
kv=$(uname -r | awk -F. '{print $1 * 1000 + $2}')
if [ "$kv" -lt 6009 ]; then
	has '^io: +daemon \(passthrough unavailable: .*kernel' "$OUT" "no passthrough before 6.9, and why"
elif [ "$who" = root ]; then
	has '^io: +passthrough' "$OUT" "passthrough on $(uname -r) as root"
else
	has '^io: +daemon \(passthrough unavailable: no CAP_SYS_ADMIN\)' "$OUT" "no passthrough for a user, and why"
fi
run 0 "a write through the passthrough view" -- "$A" shell p -- sh -c 'echo pt > new && cat new'
has '^pt$' "$OUT" "the write reads back"
run 0 "delete the passthrough view" -- "$A" workspace delete p --force

run 0 "delete" -- "$A" workspace delete s --force
[ ! -e .git/arborinth/workspaces/s ] && ok "deleted" || bad "the workspace is still there"
echo "ARB-VM: $who: $checks checks, $fails failed"
[ "$fails" = 0 ]
