#!/usr/bin/env bash
# tests/integration/fs_disk.sh: a workspace's disk budget (--disk) and the filesystem's
# reserve, enforced by the view's daemon on a box: writes, fallocate and truncates that would
# go past the budget fail with ENOSPC (CONTROL: the same under the budget work), each refusal
# is in the audit (one disk-full row a second at most, counting the rest), the session's end
# checkpoint completes, another workspace still creates, the usage survives a remount and is
# given back when files go, and `--disk none` lifts the budget. As root, a project on a small
# tmpfs shows the reserve: a box without a budget cannot take the last 16 MiB (and a budget
# stops a mkdir storm there too, though tmpfs gives directories no blocks). As root the
# whole test runs again as an ordinary user (ARB_DISK_USER=1), without the tmpfs part.
source "$(dirname "$0")/lib.sh"

[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no FUSE"
command -v python3 >/dev/null || skip "no python3"

# fill WS WHAT FILE BYTES: a box writes BYTES to FILE in 64 KiB writes, then tries 2000 more
# 64 KiB writes if the first ENOSPC came; prints "wrote N errno E refused R".
fill() {
	expect_status 0 "$2" -- "$ARB" shell "$1" -- python3 -c '
import errno, os, sys
path, want = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
n, err, refused = 0, 0, 0
while n < want:
    try:
        n += os.write(fd, b"x" * min(65536, want - n))
    except OSError as e:
        err = e.errno
        break
if err:
    refused = 1
    for _ in range(2000):
        try:
            os.write(fd, b"y" * 65536)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
            refused += 1
os.close(fd)
print("wrote", n, "errno", err, "refused", refused)' "$3" "$4"
	SID=$("$ARB" audit "$1" --kind exec --op exec --json | tail -1 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])')
}

R=$T/repo
mkrepo "$R"
cd "$R"
"$ARB" workspace create probe >/dev/null && "$ARB" shell probe -- true 2>/dev/null ||
	skip "no bubblewrap box here"
"$ARB" workspace delete probe >/dev/null

# Bad input: one line, non-zero, nothing made.
expect_status 1 "bad --disk" -- "$ARB" workspace create bad --disk 2Q
expect_one_line_error "bad --disk"
expect_match "disk" "$ERR" "the error names --disk"
[ ! -e "$R/.git/arborinth/workspaces/bad" ] && pass || fail "no workspace made by a bad --disk"
for bad in -1 "" 1.5G 10GB5 9999999999999T " 5M"; do
	expect_status 1 "bad --disk '$bad'" -- "$ARB" workspace create bad --disk "$bad"
done

expect_status 0 "create --disk 2M" -- "$ARB" workspace create w --disk 2M
W=$R/.git/arborinth/workspaces/w/workdir
expect_match "disk budget 2097152 bytes" "$(cat "$R/.git/arborinth/workspaces/w/run/fs.log")" \
	"the daemon took the budget"

# CONTROL: under the budget a write works.
fill w "1 MiB in a box" a.bin 1048576
expect_eq "wrote 1048576 errno 0 refused 0" "$OUT" "1 MiB under a 2 MiB budget"
# Past it: ENOSPC, and every later growing write too.
fill w "3 MiB in a box" b.bin 3145728
FSID=$SID
read -r _ wrote _ err _ refused <<<"$OUT"
expect_eq 28 "$err" "ENOSPC past the budget"
expect_eq 2001 "$refused" "every later write refused"
[ "$wrote" -lt 1048576 ] && [ "$wrote" -gt 500000 ] && pass || fail "wrote $wrote of b.bin"
expect_eq "$wrote" "$(stat -c %s "$W/b.bin")" "the file holds what was written"

# The refusals in the audit, in the box's session: few rows, all counted.
expect_status 0 "disk-full rows" -- "$ARB" audit w --session "$FSID" --op disk-full --json
python3 - "$OUT" <<'PY' && pass || fail "disk-full rows rate limited and complete"
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
assert rows, "no disk-full row"
span = (rows[-1]["time_ns"] - rows[0]["time_ns"]) / 1e9
assert len(rows) <= span + 2, (len(rows), span)
assert sum(r["count"] for r in rows) == 2001, [r["count"] for r in rows]
for r in rows:
    assert r["errno"] == 28 and r["path"] == "b.bin" and r["mode"] == 1, r
    assert r["comm"] == "python3" and r["pid"] and r["session"], r
PY
expect_status 0 "disk-full text" -- "$ARB" audit w --session "$FSID" --op disk-full
expect_match "disk-full +b.bin +64.0 KiB refused \(over the disk budget\)" "$OUT" "shown"

# fallocate and an extending truncate are refused too; CONTROL: a shrinking truncate and a
# write inside the file's size work at the limit.
expect_status 0 "fallocate and truncate" -- "$ARB" shell w -- python3 -c '
import errno, os
fd = os.open("a.bin", os.O_RDWR)
for what, f in (("fallocate", lambda: os.posix_fallocate(fd, 0, 4 << 20)),
                ("truncate", lambda: os.ftruncate(fd, 8 << 20))):
    try:
        f()
        raise SystemExit(what + " went through")
    except OSError as e:
        assert e.errno == errno.ENOSPC, (what, e)
os.pwrite(fd, b"z" * 4096, 4096)
os.ftruncate(fd, 1 << 19)
os.close(fd)
print("ok")'
expect_eq ok "$OUT" "fallocate/truncate refused, in-place write and shrink allowed"
expect_eq 524288 "$(stat -c %s "$W/a.bin")" "the shrink happened"

# New names cost a block each: a mkdir storm stops at the budget too (CONTROL: the first work).
expect_status 0 "mkdir storm" -- "$ARB" shell w -- python3 -c '
import errno, os
n = 0
try:
    for i in range(5000):
        os.mkdir("dir%d" % i); n += 1
except OSError as e:
    assert e.errno == errno.ENOSPC, e
    print(n, "ENOSPC")'
read -r made what <<<"$OUT"
expect_eq ENOSPC "$what" "mkdir refused past the budget"
[ "$made" -gt 10 ] && [ "$made" -lt 5000 ] && pass || fail "made $made directories"
for i in $(seq 0 $((made - 1))); do rmdir "$W/dir$i"; done

# The session's end checkpoint completed, and another workspace still creates.
expect_status 0 "log" -- "$ARB" log w --json
python3 - "$OUT" "$FSID" <<'PY' && pass || fail "end checkpoint of the session that hit the budget"
import json, sys
log = json.loads(sys.argv[1])
s = [s for s in log["sessions"] if s["session"] == int(sys.argv[2])][0]
assert s["end_checkpoint"], s
PY
expect_status 0 "another workspace" -- "$ARB" workspace create w2

# The usage survives a remount (the budget is kept with the workspace)...
expect_status 0 "unmount" -- "$ARB" workspace unmount w
expect_status 0 "mount" -- "$ARB" workspace mount w
expect_match "disk budget 2097152 bytes, [0-9]+ used" "$(tail -1 "$R/.git/arborinth/workspaces/w/run/fs.log")" \
	"budget kept"
expect_match "used \(saved; read in" "$(tail -1 "$R/.git/arborinth/workspaces/w/run/fs.log")" \
	"a clean unmount saved the usage"
fill w "past the budget after a remount" a.bin 1048576
expect_match "errno 28" "$OUT" "usage kept across a clean remount"
# After a crash (nothing saved) the layer is measured again.
kill -9 "$(cat "$R/.git/arborinth/workspaces/w/run/daemon.pid")"
sleep 0.2
expect_status 0 "mount after kill -9" -- "$ARB" workspace mount w
expect_match "used \(measured in" "$(tail -1 "$R/.git/arborinth/workspaces/w/run/fs.log")" \
	"measured after a crash"
fill w "past the budget after a crash" a.bin 1048576
expect_match "errno 28" "$OUT" "usage measured again at mount"
# ...and is given back when a file goes (CONTROL for the refusals just seen).
rm "$W/b.bin"
: >"$W/a.bin"
fill w "after deleting" d.bin 1048576
expect_eq "wrote 1048576 errno 0 refused 0" "$OUT" "space given back by unlink"
# --disk none: no budget.
expect_status 0 "unmount" -- "$ARB" workspace unmount w
expect_status 0 "mount --disk none" -- "$ARB" workspace mount w --disk none
fill w "no budget" e.bin 4194304
expect_eq "wrote 4194304 errno 0 refused 0" "$OUT" "--disk none lifts the budget"
expect_status 0 "verify" -- "$ARB" audit w --verify
expect_match ": ok, [0-9]+ rows" "$OUT" "the chain verifies"

# The reserve: a project on a 48 MiB tmpfs, a workspace without a budget.
if [ "$(id -u)" = 0 ] && [ -z "${ARB_DISK_USER:-}" ]; then
	S=$T/small
	mkdir "$S"
	mount -t tmpfs -o size=48m tmpfs "$S"
	mkrepo "$S/repo"
	cd "$S/repo"
	# tmpfs gives a directory no blocks (st_blocks 0): a mkdir storm meets a budget here too,
	# each directory charged a block as on ext4 (CONTROL: the first ones are made).
	expect_status 0 "create on tmpfs with a budget" -- "$ARB" workspace create d --disk 1M
	expect_status 0 "mkdir storm on tmpfs" -- "$ARB" shell d -- python3 -c '
import errno, os
n = 0
try:
    for i in range(5000):
        os.mkdir("dir%d" % i); n += 1
except OSError as e:
    assert e.errno == errno.ENOSPC, e
    print(n, "ENOSPC")'
	read -r made what <<<"$OUT"
	expect_eq ENOSPC "$what" "mkdir refused past the budget on tmpfs"
	[ "${made:-0}" -gt 10 ] && [ "${made:-0}" -le 256 ] && pass || fail "made $made directories on tmpfs"
	"$ARB" workspace unmount d >/dev/null
	expect_status 0 "create on tmpfs" -- "$ARB" workspace create r --disk none
	fill r "fill the tmpfs" big.bin 60000000
	RSID=$SID
	expect_match "errno 28" "$OUT" "ENOSPC before the filesystem is full"
	free=$(python3 -c 'import os, sys; s = os.statvfs(sys.argv[1]); print(s.f_bavail * s.f_frsize)' "$S")
	[ "$free" -ge $((15 << 20)) ] && pass || fail "the reserve was kept: $free bytes free"
	expect_status 0 "reserve rows" -- "$ARB" audit r --session "$RSID" --op disk-full --json
	expect_match '"mode":2' "$OUT" "refused for the reserve"
	expect_match "free space below the reserve" "$("$ARB" audit r --op disk-full)" "shown"
	expect_status 0 "log r" -- "$ARB" log r --json
	python3 - "$OUT" "$RSID" <<'PY' && pass || fail "end checkpoint on the full filesystem"
import json, sys
s = [s for s in json.loads(sys.argv[1])["sessions"] if s["session"] == int(sys.argv[2])][0]
assert s["end_checkpoint"], s
PY
	expect_status 0 "another workspace on the full filesystem" -- "$ARB" workspace create r2
	# Its box runs and reads; its writes wait for space like everyone's.
	expect_status 0 "its box runs" -- "$ARB" shell r2 -- python3 -c '
import errno, os
print(open("README").read().split()[0])
try:
    os.write(os.open("f", os.O_CREAT | os.O_WRONLY, 0o644), b"ok")
except OSError as e:
    print(errno.errorcode[e.errno])'
	expect_eq "$(printf 'hello\nENOSPC')" "$OUT" "the other workspace works, within the reserve"
	cd "$R"
	"$ARB" --workdir "$S/repo" workspace unmount r >/dev/null
	"$ARB" --workdir "$S/repo" workspace unmount r2 >/dev/null
	umount "$S"
elif [ -z "${ARB_DISK_USER:-}" ]; then
	echo "note: not root: the reserve (tmpfs) part not run" >&2
fi

# As root: all of the above again as an ordinary user.
if [ "$(id -u)" = 0 ] && [ -z "${ARB_DISK_USER:-}" ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || fail "cannot create $user"
	chmod 0666 /dev/fuse
	chmod 0755 "$T"
	U=$T/user
	mkdir -p "$U/src/tests/integration"
	cp "$ARB_SRC/tests/integration/lib.sh" "$0" "$U/src/tests/integration/"
	cp "$(dirname "$ARB")"/arborinth* "$U/"
	chown -R "$user" "$U"
	expect_status 0 "as $user" -- runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U" \
		ARB="$U/arborinth" ARB_SRC="$U/src" ARB_DISK_USER=1 \
		bash "$U/src/tests/integration/$(basename "$0")"
	printf '%s\n' "$OUT" | tail -1
	[ -n "$ERR" ] && printf '%s\n' "$ERR" >&2
fi
finish
