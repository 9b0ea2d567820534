#!/usr/bin/env bash
# Workspace lifecycle through the CLI: create/list/info/delete, bad input, atomicity under
# injected failures, concurrency, and the origin-side ref and remote.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"

mkrepo "$T/repo"
R="$T/repo"
A() { "$ARB" --workdir "$R" "$@"; }
base=$(git -C "$R" rev-parse HEAD)
first=$(git -C "$R" rev-parse HEAD~1)

# Snapshot of everything create may touch, to prove a failed create changed nothing.
origin_state() {
	git -C "$R" for-each-ref --format='%(refname) %(objectname)'
	git -C "$R" config --get-regexp '^remote\.' || true
	ls -A "$R/.git/arborinth/workspaces" 2>/dev/null || true
	sqlite3 "$R/.git/arborinth/state.db" 'SELECT name FROM workspaces ORDER BY name' 2>/dev/null || true
	grep -F "$R/.git/arborinth/workspaces" /proc/self/mountinfo | awk '{print $5}' || true
}

expect_status 0 "create" -- A workspace create w1 --json
expect_eq "$base" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["base_commit"])')" "create --json base"
expect_eq "$R/.git/arborinth/workspaces/w1/workdir" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workdir"])')" "create --json workdir"
for d in workdir tmp cache home layer git run; do
	[ -d "$R/.git/arborinth/workspaces/w1/$d" ] && pass || fail "missing $d/"
done
grep -qs arborinth "$R/.git/info/exclude" && fail "an exclude entry (the state is in .git)" || pass
expect_eq "" "$(git -C "$R" status --porcelain)" "origin status stays clean"
expect_eq "$base" "$(git -C "$R" rev-parse refs/arborinth/w1)" "origin ref at base"
expect_eq "$R/.git/arborinth/workspaces/w1/export.git" "$(git -C "$R" config remote.arborinth/w1.url)" "remote url: the export, never the gitdir"
expect_match "first" "$(git --git-dir="$R/.git/arborinth/workspaces/w1/git" log --format=%s)" "git --git-dir log shows history"
expect_eq "$base" "$(git --git-dir="$R/.git/arborinth/workspaces/w1/git" rev-parse HEAD)" "gitdir HEAD at base"
git -C "$R" fetch -q arborinth/w1 && pass || fail "git fetch arborinth/w1"

expect_status 0 "create --rev" -- A workspace create old --rev HEAD~1
expect_eq "$first" "$(git --git-dir="$R/.git/arborinth/workspaces/old/git" rev-parse HEAD)" "--rev base"
expect_eq "hello" "$(cat "$R/.git/arborinth/workspaces/old/workdir/README")" "view shows the --rev tree"

expect_status 0 "list" -- A workspace list
expect_match "^w1 +${base:0:12} +yes" "$(printf '%s\n' "$OUT" | grep '^w1 ')" "list row"
expect_status 0 "list --json" -- A workspace list --json
expect_eq "old w1" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join(w["name"] for w in json.load(sys.stdin)))')" "list --json names"
expect_status 0 "info" -- A workspace info w1
expect_match "mounted: +yes \(daemon pid [0-9]+\)" "$OUT" "info mounted"
expect_match "remote: +arborinth/w1" "$OUT" "info remote"
expect_status 0 "project info counts" -- A project info
expect_match "workspaces: 2" "$OUT" "project info count"

# Bad input: one line, exit 1 (2 for usage), nothing changed.
before=$(origin_state)
bad() {
	local want=$1 what=$2 pattern=$3
	shift 3
	expect_status "$want" "$what" -- "$@"
	expect_match "$pattern" "$ERR" "$what: message"
	expect_one_line_error "$what"
	expect_eq "$before" "$(origin_state)" "$what: nothing changed"
}
bad 1 "duplicate name" "already exists" A workspace create w1
bad 1 "empty name" "empty" A workspace create ""
bad 1 "slash" "contains '/'" A workspace create a/b
bad 1 "dotdot" "'\.\.'" A workspace create a..b
bad 1 "leading dot" "starts with '\.'" A workspace create .x
bad 1 "space" "whitespace" A workspace create "a b"
bad 1 "star" "contains '\*'" A workspace create "a*"
bad 1 "too long" "longer than 64" A workspace create "$(printf 'x%.0s' $(seq 65))"
bad 1 "bad utf-8" "UTF-8" A workspace create $'\xff'
bad 1 "bad rev" "unknown revision 'nope'" A workspace create w9 --rev nope
bad 1 "rev not a commit" "does not name a commit" A workspace create w9 --rev HEAD:README
bad 1 "unknown workspace info" "no workspace named 'zz'" A workspace info zz
bad 1 "unknown workspace delete" "no workspace named 'zz'" A workspace delete zz
bad 1 "unknown workspace shell" "no workspace named 'zz'" A shell zz --jail none -- true
bad 2 "missing name" "missing workspace NAME" A workspace create
bad 2 "extra argument" "unexpected argument" A workspace info w1 extra
mkdir -p "$T/norepo"
expect_status 1 "outside a repository" -- "$ARB" --workdir "$T/norepo" workspace list
expect_match "not inside a git repository" "$ERR" "outside message"

# Atomicity: a failure injected at each step leaves nothing behind.
for point in staging row rename origin-ref origin mount; do
	before=$(origin_state)
	expect_status 1 "fault at $point" -- env ARBORINTH_FAULT=$point "$ARB" --workdir "$R" workspace create f1
	expect_match "injected failure at $point" "$ERR" "fault $point message"
	expect_eq "$before" "$(origin_state)" "fault at $point: nothing left behind"
done
expect_status 0 "create after faults" -- A workspace create f1

# Concurrency: different names all succeed; one name exactly once.
pids=()
for i in 1 2 3 4 5 6; do A workspace create "c$i" >/dev/null 2>"$T/c$i.err" & pids+=($!); done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
expect_eq 6 "$ok" "concurrent creates of different names"
pids=()
for i in 1 2 3 4 5; do A workspace create same >/dev/null 2>"$T/s$i.err" & pids+=($!); done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
expect_eq 1 "$ok" "concurrent creates of one name: exactly one wins"
expect_eq 1 "$(A workspace list --json | python3 -c 'import json,sys; print(sum(w["name"]=="same" for w in json.load(sys.stdin)))')" "one row for the contested name"
expect_eq "$(ls -A "$R/.git/arborinth/workspaces" | grep -c '^\.')" 0 "no staging folders left"

# shell --jail none: status and signals pass through.
expect_status 7 "shell exit status" -- A shell w1 --jail none -- sh -c 'exit 7'
expect_status 143 "shell killed by signal" -- A shell w1 --jail none -- sh -c 'kill -TERM $$'
expect_status 0 "shell cwd" -- A shell w1 --jail none -- pwd
expect_eq "$R/.git/arborinth/workspaces/w1/workdir" "$OUT" "shell runs in the workdir"

# delete refuses while a session runs: its box would keep writing into a removed workspace.
rm -f "$T/ready" "$T/go"
A shell w1 --jail none -- sh -c "touch '$T/ready'; while [ ! -e '$T/go' ]; do sleep 0.1; done" &
bg=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
expect_status 1 "delete while a session runs" -- A workspace delete w1
expect_match "^arborinth: session [0-9]+ of w1 is running; delete it when that session has ended" \
	"$ERR" "the refusal names the running session"
expect_one_line_error "delete while a session runs"
[ -d "$R/.git/arborinth/workspaces/w1/workdir" ] && pass || fail "the refused delete removed the workspace"
alive "$bg" && pass || fail "the refused delete ended the session"
touch "$T/go"
wait "$bg" || fail "the session did not end well after the refused delete"

# delete removes folder, ref, remote and row, and unmounts (control: the session has ended).
expect_status 0 "delete" -- A workspace delete w1
[ ! -e "$R/.git/arborinth/workspaces/w1" ] && pass || fail "folder left"
git -C "$R" rev-parse -q --verify refs/arborinth/w1 >/dev/null && fail "ref left" || pass
git -C "$R" config remote.arborinth/w1.url >/dev/null && fail "remote left" || pass
grep -qF "$R/.git/arborinth/workspaces/w1/workdir" /proc/self/mountinfo && fail "mount left" || pass
expect_status 1 "info after delete" -- A workspace info w1
expect_status 0 "recreate after delete" -- A workspace create w1

finish
