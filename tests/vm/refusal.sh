#!/bin/bash
# tests/vm/refusal.sh BUILD: run by an ordinary user from a cgroup it may not write (a login
# session's scope) with no systemd user manager: --memory and --cpus are refused with one line
# naming the cgroup and both routes that are missing, nothing run; doctor says the same;
# --pids holds there without a cgroup (RLIMIT_NPROC, jail/budget.c); the same box without
# limits runs.
set -u
A=$1/cli/arborinth
fails=0
r=$TMPDIR/refusal
rm -rf "$r" && git init -q -b main "$r" && cd "$r" &&
	git -c user.name=v -c user.email=v@example.com commit -q --allow-empty -m i
"$A" workspace create q >/dev/null || { echo "FAIL (refusal): create"; exit 1; }
for opt in "--memory 64M" "--cpus 1"; do
	got=0
	err=$("$A" shell q $opt -- touch ran 2>&1 >/dev/null) || got=$?
	if [ "$got" != 0 ] && [ "$(grep -c . <<<"$err")" = 1 ] &&
		grep -q "cannot place limits on cgroup v2: no writable cgroup (.*user-[0-9]*.slice is not this user's) and no systemd user manager (run inside 'systemd-run --user --scope -p Delegate=yes', or see arborinth doctor)" <<<"$err" &&
		[ ! -e .git/arborinth/workspaces/q/workdir/ran ]; then
		echo "ok: $opt refused from a session scope: $err"
	else
		echo "FAIL (refusal): $opt from a session scope: exit $got: $err"
		fails=$((fails + 1))
	fi
done
out=$("$A" doctor 2>&1)
if grep -q 'limits .*--memory no writable cgroup and no systemd user manager' <<<"$out"; then
	echo "ok: doctor says neither route is there"
else
	echo "FAIL (refusal): doctor: $(grep limits <<<"$out")"
	fails=$((fails + 1))
fi
hog='import os
n = 0
for i in range(60):
    try:
        if os.fork() == 0:
            import time; time.sleep(3); os._exit(0)
        n += 1
    except OSError:
        pass
print("forked", n)'
out=$("$A" shell q --pids 20 -- python3 -c "$hog" 2>/dev/null)
if grep -Eq '^forked 1?[0-9]$' <<<"$out"; then
	echo "ok: --pids 20 holds a fork hog from a session scope ($out)"
else
	echo "FAIL (refusal): --pids 20 from a session scope: [$out]"
	fails=$((fails + 1))
fi
if "$A" shell q -- touch ran && [ -e .git/arborinth/workspaces/q/workdir/ran ]; then
	echo "ok: control: the box runs there without limits"
else
	echo "FAIL (refusal): the box without limits did not run"
	fails=$((fails + 1))
fi
"$A" workspace delete q --force >/dev/null
[ "$fails" = 0 ]
