#!/usr/bin/env bash
# Persistence: unmount/remount and kill -9 of the daemon followed by a remount keep every
# completed write, deletion and rename; SIGTERM unmounts cleanly.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"

mkrepo "$T/repo"
"$ARB" --workdir "$T/repo" workspace create p >/dev/null
V="$T/repo/.git/arborinth/workspaces/p/workdir"
RUN="$T/repo/.git/arborinth/workspaces/p/run"

state() { (cd "$V" && find . -path ./.git -prune -o -printf '%p %y %m %s %l\n' | LC_ALL=C sort && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }

mutate() {
	printf '%s\n' "$1" >>"$V/README"
	printf 'new %s\n' "$1" >"$V/new-$1.txt"
	rm -f "$V/run.sh"
	mv "$V/src/lib" "$V/lib-$1" 2>/dev/null || mv "$V/lib-"* "$V/lib-$1"
	mkdir -p "$V/dir-$1/sub"
	rm -rf "$V/src"
	mkdir "$V/src"
	printf 'recreated\n' >"$V/src/only.txt"
}

mutate one
before=$(state)
expect_status 0 "unmount" -- "$ARB" --workdir "$T/repo" workspace unmount p
expect_eq "" "$(ls -A "$V")" "unmounted workdir is empty"
expect_status 0 "mount" -- "$ARB" --workdir "$T/repo" workspace mount p
expect_eq "$before" "$(state)" "unmount + mount keep everything"

# kill -9: the daemon dies; completed writes are in the upper layer already.
mutate two
# A write that completed through an fd still open at the time of the kill.
exec 7>"$V/open-at-kill.txt"
printf 'written before the kill\n' >&7
before=$(state)
pid=$(cat "$RUN/daemon.pid")
kill -9 "$pid"
exec 7>&-
wait_dead "$pid" || fail "daemon survived kill -9"
expect_status 0 "info after kill" -- "$ARB" --workdir "$T/repo" workspace info p --json
expect_match '"mounted": false' "$OUT" "info shows not mounted after kill"
expect_status 0 "remount after kill" -- "$ARB" --workdir "$T/repo" workspace mount p
expect_eq "$before" "$(state)" "kill -9 + remount keep every completed write, deletion and rename"
expect_eq "written before the kill" "$(cat "$V/open-at-kill.txt")" "write through an open fd survived"

# SIGTERM: clean unmount, pid file gone.
pid=$(cat "$RUN/daemon.pid")
kill -TERM "$pid"
wait_dead "$pid" && pass || fail "daemon still running after SIGTERM"
if grep -q " $V " /proc/self/mountinfo; then fail "still mounted after SIGTERM: $(grep " $V " /proc/self/mountinfo; tail -3 "$RUN/fs.log")"; else pass; fi
[ ! -e "$RUN/daemon.pid" ] && pass || fail "pid file left after SIGTERM"
expect_status 0 "mount after SIGTERM" -- "$ARB" --workdir "$T/repo" workspace mount p
expect_eq "$before" "$(state)" "state after SIGTERM + mount"

# fusermount3 -u from outside also ends the daemon.
pid=$(cat "$RUN/daemon.pid")
fusermount3 -u "$V"
wait_dead "$pid" && pass || fail "daemon still running after fusermount3 -u"

# delete unmounts first and leaves nothing.
"$ARB" --workdir "$T/repo" workspace mount p >/dev/null
expect_status 0 "delete mounted" -- "$ARB" --workdir "$T/repo" workspace delete p --force
[ ! -e "$T/repo/.git/arborinth/workspaces/p" ] && pass || fail "workspace folder left after delete"
grep -qF "$T/repo/.git/arborinth/workspaces/p/workdir" /proc/self/mountinfo && fail "mount left after delete" || pass

finish
