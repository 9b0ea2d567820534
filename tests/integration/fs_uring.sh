#!/usr/bin/env bash
# FUSE over io_uring (fs/transport/uring.c, fs/transport/devio.c): where root has set the fuse module's
# enable_uring, a view's requests reach its daemon through one io_uring queue per CPU instead
# of /dev/fuse. The transport is chosen when the view is mounted; `workspace info` says which
# one a view uses and why not io_uring. The same workload (parallel writers, the largest
# writes and reads, reads of base files, every kind of namespace change, fsync, statfs, git)
# gives the same results on a view of each transport; the audit still names the writing
# process; a kill -9 keeps what write() returned; unmount ends the ring's threads.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v python3 >/dev/null || skip "no python3"
P=/sys/module/fuse/parameters/enable_uring
[ -e "$P" ] || skip "this kernel has no FUSE over io_uring ($P)"
[ -w "$P" ] || skip "only root may switch FUSE over io_uring on ($P)"

old=$(cat "$P")
restore_param() {
	if [ "$old" = Y ]; then echo 1 >"$P"; else echo 0 >"$P"; fi
}
# The switch is put back, then lib.sh's cleanup runs with the script's exit status (errexit
# off: under it, a trap stops at its first failing command).
trap 'st=$?; set +e; restore_param; (exit $st); arb_cleanup' EXIT

mkrepo "$T/repo"
cd "$T/repo"
# A base file larger than a reply's two pages, read through the daemon (splice, then ring).
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 4096)' >"$T/repo/lower.bin"
git add lower.bin && git commit -q -m lower

# mount_with VALUE NAME: creates (or mounts) NAME while enable_uring is VALUE (read when the
# daemon answers INIT, before the mount is reported ready).
mount_with() {
	echo "$1" >"$P"
	if [ -d "$T/repo/.git/arborinth/workspaces/$2" ]; then
		expect_status 0 "mount $2" -- "$ARB" workspace mount "$2"
	else
		expect_status 0 "create $2" -- "$ARB" workspace create "$2"
	fi
	stat "$T/repo/.git/arborinth/workspaces/$2/workdir" >/dev/null
	restore_param
}
transport() {
	"$ARB" workspace info "$1" | sed -n 's/^requests: *//p'
}
mount_with 1 u
mount_with 0 d
U="$T/repo/.git/arborinth/workspaces/u/workdir"
D="$T/repo/.git/arborinth/workspaces/d/workdir"
ncpu=$(python3 -c 'import os; print(os.cpu_count())') # here every possible CPU is online
expect_eq "io_uring ($ncpu queues, one per CPU)" "$(transport u)" "info: the ring, one queue per CPU"
expect_eq "/dev/fuse (io_uring is off: /sys/module/fuse/parameters/enable_uring is 0)" \
	"$(transport d)" "info: /dev/fuse, and why"
expect_status 0 "info --json" -- "$ARB" workspace info u --json
expect_match "\"transport\": \"io_uring \($ncpu queues" "$OUT" "info --json has the transport"

cat >"$T/work.py" <<'PY'
import hashlib, multiprocessing, os, sys

v = sys.argv[1]
log = []


def note(*a):
    log.append(repr(a))


def writer(i):
    # Each process on its own CPU in turn, so every queue serves requests, several at once.
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[i % len(os.sched_getaffinity(0))]})
    d = "%s/w%d" % (v, i)
    os.mkdir(d)
    for n in range(150):
        p = "%s/f%03d" % (d, n)
        with open(p, "wb") as f:
            f.write(b"first %d %d\n" % (i, n))
        with open(p, "wb") as f:  # O_TRUNC: a truncate, then the write
            f.write(b"second %d %d\n" % (i, n) * (n + 1))
        if n % 3 == 0:
            os.unlink(p)
    return sorted(os.listdir(d))


with multiprocessing.Pool(4) as pool:
    for names in pool.map(writer, range(4)):
        note("listing", len(names), names[:3], names[-3:])
for i in range(4):
    h = hashlib.sha256()
    for n in sorted(os.listdir("%s/w%d" % (v, i))):
        h.update(open("%s/w%d/%s" % (v, i, n), "rb").read())
    note("content", i, h.hexdigest())

# The largest writes (1 MiB, the most one request carries) and reads back.
big = b"".join(bytes([65 + k % 26]) * 65536 for k in range(48))
fd = os.open(v + "/big.bin", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
for k in range(0, len(big), 1 << 20):
    assert os.write(fd, big[k:k + (1 << 20)]) == min(1 << 20, len(big) - k)
os.fsync(fd)
os.close(fd)
fd = os.open(v + "/big.bin", os.O_RDONLY)
assert os.pread(fd, 1 << 20, 0) == big[:1 << 20]
assert os.pread(fd, 300000, 2000001) == big[2000001:2300001]
os.close(fd)
note("big", hashlib.sha256(open(v + "/big.bin", "rb").read()).hexdigest())
lower = open(v + "/lower.bin", "rb").read()
note("lower", len(lower), hashlib.sha256(lower).hexdigest())
assert lower == bytes(range(256)) * 4096

# Namespace changes, attributes, links.
os.makedirs(v + "/a/b/c")
os.rename(v + "/big.bin", v + "/a/b/c/moved.bin")
os.rename(v + "/a/b", v + "/a/bb")
os.link(v + "/a/bb/c/moved.bin", v + "/hard.bin")
os.symlink("a/bb/c/moved.bin", v + "/sym")
note("readlink", os.readlink(v + "/sym"), os.stat(v + "/hard.bin").st_nlink)
os.chmod(v + "/hard.bin", 0o600)
os.truncate(v + "/hard.bin", 12345)
st = os.stat(v + "/a/bb/c/moved.bin")
note("stat", oct(st.st_mode), st.st_size)
os.mkdir(v + "/empty")
os.rmdir(v + "/empty")
os.unlink(v + "/README")
note("statfs", os.statvfs(v).f_bsize > 0)
try:
    os.getxattr(v + "/run.sh", "user.x")
    note("xattr", "value")
except OSError as e:
    note("xattr", e.errno)
note("root", sorted(os.listdir(v)))
print("\n".join(log))
PY
PY=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
ln -s "$PY" "$T/ur-writer"
upid=$(cat "$T/repo/.git/arborinth/workspaces/u/run/daemon.pid")
dpid=$(cat "$T/repo/.git/arborinth/workspaces/d/run/daemon.pid")
before=$(ring_switches "$upid")
expect_status 0 "workload on the io_uring view" -- "$T/ur-writer" "$T/work.py" "$U"
got_u=$OUT
after=$(ring_switches "$upid")
# 600 files of 8 requests each: the ring threads served thousands of requests.
[ $((after - before)) -gt 3000 ] && pass ||
	fail "the ring threads served the workload: $before -> $after context switches"
expect_status 0 "workload on the /dev/fuse view" -- python3 "$T/work.py" "$D"
expect_eq "$OUT" "$got_u" "the same results over io_uring and /dev/fuse"
expect_eq "0" "$(ring_switches "$dpid")" "control: the /dev/fuse view's daemon has no ring threads"
expect_match "'lower', 1048576" "$got_u" "a base file read whole"
view_hash() { # every path, mode, size, link target and content but .git's (per workspace)
	(cd "$1" && find . -path ./.git -prune -o -printf '%p %m %s %l\n' | LC_ALL=C sort &&
		find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
		sha256sum | cut -d' ' -f1
}
expect_eq "$(view_hash "$D")" "$(view_hash "$U")" "the two views hold the same tree"

# git in the view: status, add, commit.
expect_status 0 "git add" -- git -C "$U" add -A
expect_status 0 "git commit" -- git -C "$U" commit -q -m "over io_uring"
expect_status 0 "git status" -- git -C "$U" status --porcelain
expect_eq "" "$OUT" "clean after commit"
expect_eq "io_uring ($ncpu queues, one per CPU)" "$(transport u)" "still the ring after the workload"

# The audit names the process that wrote, from the request's own header.
sleep 1.5
expect_status 0 "audit" -- "$ARB" audit u --json
printf '%s\n' "$OUT" >"$T/rows.json"
python3 - "$T/rows.json" <<'PYA' && pass || fail "audit rows of ring writes"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
w = [r for r in rows if r.get("op") == "write" and r.get("path") == "big.bin"]
assert w and w[0]["comm"] == "ur-writer" and w[0]["size"] == 3145728, w
assert w[0]["count"] == 3, w  # three 1 MiB write() calls, three WRITE requests
PYA

# kill -9: what write() returned is in the layer; the next mount chooses again.
exec 7>"$U/at-kill.txt"
printf 'written before the kill\n' >&7
pid=$(cat "$T/repo/.git/arborinth/workspaces/u/run/daemon.pid")
kill -9 "$pid"
exec 7>&-
wait_dead "$pid" || fail "daemon survived kill -9"
mount_with 0 u
expect_eq "written before the kill" "$(cat "$U/at-kill.txt")" "kill -9 keeps a ring write"
expect_match "^/dev/fuse" "$(transport u)" "remounted with io_uring off: /dev/fuse"
expect_status 0 "unmount" -- "$ARB" workspace unmount u
mount_with 1 u
expect_eq "io_uring ($ncpu queues, one per CPU)" "$(transport u)" "and on again"

# Unmount ends the daemon and its ring threads promptly.
pid=$(cat "$T/repo/.git/arborinth/workspaces/u/run/daemon.pid")
start=$(date +%s%N)
expect_status 0 "unmount" -- "$ARB" workspace unmount u
wait_dead "$pid" || fail "daemon still running after unmount"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 5000 ] && pass || fail "unmount took $ms ms"
finish
