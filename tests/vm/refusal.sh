#!/bin/bash
# tests/vm/refusal.sh BUILD: run by an ordinary user from a cgroup it may not write (a login
# session's scope): --memory and --pids are refused with one line naming the cgroup and what
# to do, exit 2, nothing run; the same box without limits runs.
set -u
A=$1/cli/arborinth
fails=0
r=$TMPDIR/refusal
rm -rf "$r" && git init -q -b main "$r" && cd "$r" &&
	git -c user.name=v -c user.email=v@example.com commit -q --allow-empty -m i
"$A" workspace create q >/dev/null || { echo "FAIL (refusal): create"; exit 1; }
for opt in "--memory 64M" "--pids 20"; do
	got=0
	err=$("$A" shell q $opt -- touch ran 2>&1 >/dev/null) || got=$?
	if [ "$got" != 0 ] && [ "$(grep -c . <<<"$err")" = 1 ] &&
		grep -q "cannot place the box on cgroup v2: .*session-1.scope\|cannot place the box on cgroup v2: .*user-[0-9]*.slice is not writable by this user" <<<"$err" &&
		[ ! -e .arborinth/workspaces/q/workdir/ran ]; then
		echo "ok: $opt refused from a session scope: $err"
	else
		echo "FAIL (refusal): $opt from a session scope: exit $got: $err"
		fails=$((fails + 1))
	fi
done
if "$A" shell q -- touch ran && [ -e .arborinth/workspaces/q/workdir/ran ]; then
	echo "ok: control: the box runs there without limits"
else
	echo "FAIL (refusal): the box without limits did not run"
	fails=$((fails + 1))
fi
"$A" workspace delete q >/dev/null
[ "$fails" = 0 ]
