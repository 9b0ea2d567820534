#!/bin/bash
# tests/vm/scope.sh BUILD SCOPES [stuck]: run by an ordinary user whose own cgroup's parent
# it may not write, while its systemd user manager runs (guest.sh starts a real
# `systemd --user`): --memory, --pids and --cpus go into a transient scope with Delegate=yes
# that arborinth asks the manager for over D-Bus. A memory hog ended and the kill in the
# audit, a fork hog held, --timeout, the scope seen from outside while a box runs (the box's
# cgroup beside arborinth's leaf, its limits written), doctor naming that route. SCOPES is
# where the manager makes scopes (user@UID.service/app.slice). Controls: the set-up (the
# parent not writable), the hog without the limit. `stuck`: from where the manager may not
# move us.
set -u
A=$1/cli/arborinth scopes=$2
fails=0
ok() { echo "ok: $*"; }
bad() { fails=$((fails + 1)); echo "FAIL (scope): $*"; }
has() { if grep -Eq -- "$1" <<<"$2"; then ok "$3"; else bad "$3: [$2] lacks /$1/"; fi; }
own=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
if [ ! -w "${own%/*}" ] && [ -S "$XDG_RUNTIME_DIR/systemd/private" ]; then
	ok "control: ${own%/*} is not this user's, and the user manager runs"
else
	bad "the set-up: ${own%/*} writable, or no user manager"
fi
r=$TMPDIR/scope
rm -rf "$r" && git init -q -b main "$r" && cd "$r" &&
	git -c user.name=v -c user.email=v@example.com commit -q --allow-empty -m i
"$A" workspace create q >/dev/null || { echo "FAIL (scope): create"; exit 1; }
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
if [ "${3:-}" = stuck ]; then
	# From a root-owned login scope with no system manager to move us: the manager's job
	# fails; one line says so and nothing runs; without limits the box runs, and --pids
	# holds, through RLIMIT_NPROC alone (as without a manager).
	got=0
	out=$("$A" shell q --memory 64M -- echo ran 2>"$TMPDIR/stuck") || got=$?
	err=$(cat "$TMPDIR/stuck")
	if [ "$got" != 0 ] && [ -z "$out" ] && [ "$(grep -c . <<<"$err")" = 1 ] &&
		grep -q 'could not move this process into the scope arborinth-' <<<"$err"; then
		ok "--memory where the manager cannot move us: $err"
	else
		bad "--memory where the manager cannot move us: exit $got [$out]: $err"
	fi
	out=$("$A" shell q -- echo ran 2>&1)
	has '^ran$' "$out" "control: the box without limits runs there"
	out=$("$A" shell q --pids 20 -- python3 -c "$pids" 2>/dev/null)
	has '^forked 1?[0-9]$' "$out" "--pids 20 holds there through RLIMIT_NPROC alone"
	"$A" workspace delete q >/dev/null
	[ "$fails" = 0 ]
	exit
fi
out=$("$A" doctor 2>&1)
has 'limits .*--memory can be placed \(a scope of the systemd user manager\)' "$out" \
	"doctor names the user manager's scope as the route"

hog='x = bytearray(400 << 20); print("allocated")'
got=0
err=$("$A" shell q --memory 64M -- python3 -c "$hog" 2>&1 >/dev/null) || got=$?
if [ "$got" = 137 ] && grep -q 'the box reached its limit of 64 MiB' <<<"$err"; then
	ok "--memory 64M ends a memory hog in the manager's scope"
else
	bad "--memory 64M: exit $got: $err"
fi
out=$("$A" shell q -- python3 -c "$hog" 2>&1) &&
	has '^allocated$' "$out" "control: the hog runs without --memory"
out=$("$A" shell q --pids 20 -- python3 -c "$pids" 2>&1)
has '^forked 1[0-9]$' "$out" "--pids 20 holds a fork hog in the manager's scope"
has 'the box reached its limit of 20 processes' "$out" "--pids says what it did"

# From outside while a box runs: our leaf and the box's cgroup in a scope of the manager;
# --timeout then stops the box.
"$A" shell q --memory 96M --cpus 0.5 --pids 50 --timeout 5s -- sh -c 'echo started; sleep 60' \
	>"$TMPDIR/three" 2>&1 &
box=$!
seen=
for _ in $(seq 60); do
	for d in "$scopes"/arborinth-*.scope/arborinth-*; do
		[ -e "$d/memory.max" ] && seen=$d && break 2
	done
	sleep 0.2
done
if [ -n "$seen" ] && [ -d "${seen%/*}/supervisor" ] &&
	[ "$(cat "$seen/memory.max")" = $((96 << 20)) ] &&
	[ "$(cat "$seen/pids.max")" = 50 ] && [ "$(cat "$seen/cpu.max")" = "50000 100000" ]; then
	ok "the box's cgroup is in the manager's scope with its limits: ${seen#"$scopes"/}"
else
	bad "no box cgroup with its limits in a scope below $scopes: [$seen]" \
		"$(find "$scopes" -type d | tr '\n' ' ')"
fi
got=0
wait "$box" || got=$?
out=$(cat "$TMPDIR/three")
if [ "$got" = 124 ] && grep -q '^started$' <<<"$out" &&
	grep -q -- '--timeout: the box ran out of time' <<<"$out"; then
	ok "--timeout stops the box in the manager's scope"
else
	bad "--timeout 5s: exit $got: $out"
fi
out=$("$A" audit q --kind exec --json 2>&1)
has '"path": ?"--memory"' "$out" "the audit records the --memory kill"
has '"path": ?"--pids"' "$out" "the audit records the refused forks"
has '"path": ?"--timeout"' "$out" "the audit records the timeout"
"$A" audit q --verify >/dev/null 2>&1 && ok "audit --verify" || bad "audit --verify"

# Each scope ends with the arborinth process in it (the manager removes the empty scope).
for _ in $(seq 50); do
	left=$(find "$scopes" -maxdepth 1 -name 'arborinth-*.scope')
	[ -z "$left" ] && break
	sleep 0.2
done
if [ -z "$left" ]; then ok "no scope is left once the boxes' processes are gone"; else bad "scopes left: $left"; fi
"$A" workspace delete q >/dev/null
[ "$fails" = 0 ]
