#!/usr/bin/env bash
# tests/integration/audit_sync.sh: ARB_FS_IOC_AUDIT_SYNC (fs/fs.h), the request that makes a
# view's audit current. The daemon coalesces writes and records them up to a second later, so
# a write's row is missing right after it (the control) and there once the request returned,
# on a view served over /dev/fuse and, where the kernel has it, over io_uring. Any other
# command, or the request on another directory or a file, is ENOTTY; fsync of the root still
# makes the audit current. The end of a `shell` session asks with the request, not fsync.
# (The fallback to fsync for a daemon that does not know the request: check_core.)
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no FUSE"
command -v python3 >/dev/null || skip "no python3"

P=/sys/module/fuse/parameters/enable_uring
old=
if [ -w "$P" ]; then
	old=$(cat "$P")
	# The switch is put back, then lib.sh's cleanup runs with the script's exit status.
	trap 'st=$?; set +e; if [ "$old" = Y ]; then echo 1 >"$P"; else echo 0 >"$P"; fi;
		(exit $st); arb_cleanup' EXIT
fi

R=$T/repo
mkrepo "$R"
cd "$R"
# create_with VALUE NAME: creates NAME while enable_uring is VALUE (read at the mount).
create_with() {
	[ -z "$old" ] || echo "$1" >"$P"
	expect_status 0 "create $2" -- "$ARB" workspace create "$2"
	[ -z "$old" ] || echo 0 >"$P"
}
transport() {
	"$ARB" workspace info "$1" | sed -n 's/^requests: *//p'
}
views=(d)
create_with 0 d
expect_match "^/dev/fuse" "$(transport d)" "view d over /dev/fuse"
if [ -n "$old" ]; then
	create_with 1 u
	if [[ "$(transport u)" == io_uring* ]]; then
		views+=(u)
	else
		fail "view u: no io_uring with enable_uring on: $(transport u)"
	fi
elif [ "${ARBORINTH_TEST_MUST_RUN:-}" = 1 ]; then
	fail "FUSE over io_uring cannot be switched on here ($P): its view not checked"
else
	echo "note: FUSE over io_uring cannot be switched on here ($P); /dev/fuse only" >&2
fi

cat >"$T/probe.py" <<'PY'
import errno, fcntl, os, sqlite3, sys

view, db, name = sys.argv[1:4]
AUDIT_SYNC = (0xA7 << 8) | 0x01  # ARB_FS_IOC_AUDIT_SYNC: _IO(0xA7, 0x01)
FS_IOC_GETFLAGS = 0x80086601     # what lsattr asks


def rows(path):
    c = sqlite3.connect(db)
    n = c.execute("SELECT count(*) FROM audit_events WHERE op = 'write' AND path = ?",
                  (path,)).fetchone()[0]
    c.close()
    return n


def write(path):
    fd = os.open(os.path.join(view, path), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"x" * 10)
    os.write(fd, b"y" * 5)
    os.close(fd)


def errname(fd, cmd, *arg):
    try:
        fcntl.ioctl(fd, cmd, *arg)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]


root = os.open(view, os.O_RDONLY | os.O_DIRECTORY)
write(name)
print("before the request:", rows(name))
print("request:", errname(root, AUDIT_SYNC))
print("after the request:", rows(name))
print("unknown command:", errname(root, AUDIT_SYNC + 1))
print("unknown type:", errname(root, (0xA8 << 8) | 0x01))
sub = os.open(view + "/src", os.O_RDONLY | os.O_DIRECTORY)
print("on a subdirectory:", errname(sub, AUDIT_SYNC))
git = os.open(view + "/.git", os.O_RDONLY | os.O_DIRECTORY)
print("on .git:", errname(git, AUDIT_SYNC))
f = os.open(view + "/README", os.O_RDONLY)
print("on a file:", errname(f, AUDIT_SYNC))
print("lsattr's GETFLAGS:", errname(f, FS_IOC_GETFLAGS, b"\0" * 8))
# fsync of the root keeps its meaning.
write(name + ".fsync")
print("before fsync:", rows(name + ".fsync"))
os.fsync(root)
print("after fsync:", rows(name + ".fsync"))
# Many requests in a row, for the ring threads' count below.
for _ in range(100):
    fcntl.ioctl(root, AUDIT_SYNC)
PY

for v in "${views[@]}"; do
	W=$R/.git/arborinth/workspaces/$v/workdir
	pid=$(cat "$R/.git/arborinth/workspaces/$v/run/daemon.pid")
	before=$(ring_switches "$pid")
	expect_status 0 "probe on view $v" -- python3 "$T/probe.py" "$W" "$R/.git/arborinth/state.db" "f-$v"
	after=$(ring_switches "$pid")
	expect_eq "before the request: 0
request: ok
after the request: 1
unknown command: ENOTTY
unknown type: ENOTTY
on a subdirectory: ENOTTY
on .git: ENOTTY
on a file: ENOTTY
lsattr's GETFLAGS: ENOTTY
before fsync: 0
after fsync: 1" "$OUT" "view $v ($(transport "$v"))"
	expect_status 0 "view $v: the rows" -- "$ARB" audit "$v" --path "f-$v" --op write --json
	expect_match '"size":15,"count":2,' "$OUT" "view $v: one row of both writes"
	if [ "$v" = u ]; then
		# Each request waits for the audit's commit in the thread that serves it.
		[ $((after - before)) -ge 100 ] && pass ||
			fail "the ring threads served the requests: $before -> $after context switches"
	else
		expect_eq 0 "$after" "control: the /dev/fuse view has no ring threads"
	fi
done

# The end of a session: its last writes are in the audit when `shell` returns, recorded by
# the request (strace, where there is one: the ioctl and no fsync of the view's root).
W=$R/.git/arborinth/workspaces/d/workdir
count_rows() {
	python3 - "$R/.git/arborinth/state.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT count(*) FROM audit_events WHERE op = 'write' AND path = ? "
                 "AND session IS NOT NULL", (sys.argv[2],)).fetchone()[0])
PY
}
expect_status 0 "control: a write without a sync" -- python3 -c '
import os, sys
fd = os.open(sys.argv[1] + "/control.txt", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"c")
os.close(fd)' "$W"
expect_eq 0 "$(python3 - "$R/.git/arborinth/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT count(*) FROM audit_events WHERE op = 'write' "
                 "AND path = 'control.txt'").fetchone()[0])
PY
)" "control: the write's row is not there yet"
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under ptrace: no leak check for this one command.
	run=(env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
		strace -f -y -e "trace=ioctl,fsync" -o "$T/strace.log")
else
	run=()
fi
expect_status 0 "shell" -- "${run[@]}" "$ARB" shell d --jail none -- \
	python3 -c 'import os; fd = os.open("session.txt", os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b"s"); os.close(fd)'
expect_eq 1 "$(count_rows session.txt)" "the session's write is in the audit when shell returns"
if [ ${#run[@]} -gt 0 ]; then
	expect_match "ioctl\([0-9]+<$W>, _IOC\(_IOC_NONE, 0xa7, 0x1, 0\)(, 0)?\) = 0" \
		"$(grep -F "<$W>" "$T/strace.log" || true)" "shell asked with the request"
	if grep -qE "fsync\([0-9]+<$W>\)" "$T/strace.log"; then
		fail "shell fsynced the view's root: $(grep -E "fsync\([0-9]+<$W>\)" "$T/strace.log")"
	else
		pass
	fi
else
	echo "note: no strace here; which request shell made is not checked" >&2
fi

# `arborinth audit` shows a write made just before it: the rows its sync records are
# printed (they come after the highest row it had seen before the sync). The control is the
# row still missing from the database before `audit` runs.
printf 'x' >"$W/just-now.txt"
expect_eq 0 "$(python3 - "$R/.git/arborinth/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT count(*) FROM audit_events WHERE op = 'write' "
                 "AND path = 'just-now.txt'").fetchone()[0])
PY
)" "control: the newest write's row is not there yet"
expect_status 0 "audit right after a write" -- "$ARB" audit d
expect_match "write +just-now\.txt" "$OUT" "audit shows the write made just before it"
finish
