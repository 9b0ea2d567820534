#!/usr/bin/env bash
# tests/integration/audit_changes.sh: content changes that do not come as plain write()s are
# recorded with their process and session, each run in a bubblewrap box of its own session:
# fallocate (zero-range, punch-hole, keep-size; the content really changes), renameat2
# RENAME_EXCHANGE (an "exchange" row, and --summary keeps both files), shared-mmap writes
# (the kernel's writeback carries no pid: they are the node's last writer's), and with
# --io passthrough a write whose mtime is set back afterwards (found by ctime and size). As
# root the whole test runs again as an ordinary user (ARB_AUDIT_USER=1).
source "$(dirname "$0")/lib.sh"

[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no FUSE"
command -v python3 >/dev/null || skip "no python3"

R=$T/repo
mkrepo "$R"
cd "$R"
expect_status 0 "create" -- "$ARB" workspace create w
W=$R/.git/arborinth/workspaces/w/workdir
"$ARB" shell w -- true 2>/dev/null || skip "no bubblewrap box here"

# box_py WS WHAT CODE [ARG...]: runs python3 -c CODE ARG... in a box of workspace WS; SID is
# its session.
box_py() {
	local ws=$1 what=$2 code=$3
	shift 3
	expect_status 0 "$what" -- "$ARB" shell "$ws" -- python3 -c "$code" "$@"
	"$ARB" audit "$ws" --kind exec --op exec --json >"$T/exec.json"
	SID=$(tail -1 "$T/exec.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])')
}

# rows WS SID: the fs rows of session SID as JSON lines, in $T/rows.json.
rows() {
	"$ARB" audit "$1" --session "$2" --kind fs --json >"$T/rows.json"
}

# --- fallocate --------------------------------------------------------------------------------
# The three calls, each one's errno printed (0 when it worked); run natively on the file system
# that holds the upper layer (the test's own directory) and in a box through the view, which
# must do what the file system does: tmpfs, for one, has no zero-range (EOPNOTSUPP) but punches
# holes, ext4 does both.
FA_CODE='
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDWR)
errs = []
for mode, off, n in ((0x10, 1000, 2000), (0x1 | 0x2, 8192, 4096), (0x1, 16384, 65536)):
    errs.append(0 if libc.fallocate(fd, mode, off, n) == 0 else ctypes.get_errno())
os.close(fd)
print(*errs)'
printf 'A%.0s' $(seq 16384) >"$T/fa-native.bin"
NATIVE=$(python3 -c "$FA_CODE" "$T/fa-native.bin")
printf 'A%.0s' $(seq 16384) >"$W/fa.bin"
box_py w "fallocate in a box" "$FA_CODE" fa.bin
expect_eq "$NATIVE" "$OUT" "fallocate through the view fails or works as natively"
FSID=$SID
# CONTROL: the content really changed (zeros where the ranges were), the size did not, and it
# is what the same calls made of the same file natively.
python3 - "$W/fa.bin" "$T/fa-native.bin" "$NATIVE" <<'PY' && pass || fail "fallocate changed the content"
import sys
b = open(sys.argv[1], "rb").read()
zr, ph, ks = (int(e) for e in sys.argv[3].split())
assert b == open(sys.argv[2], "rb").read(), "not as natively"
assert len(b) == 16384, len(b)
assert ph == 0 and b[8192:12288] == bytes(4096) and b[12288:] == b"A" * 4096, ph
want = bytes(2000) if zr == 0 else b"A" * 2000
assert b[:1000] == b"A" * 1000 and b[1000:3000] == want and b[3000:8192] == b"A" * 5192, zr
PY
rows w "$FSID"
python3 - "$T/rows.json" "$NATIVE" <<'PY' && pass || fail "fallocate rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
zr, ph, ks = (int(e) for e in sys.argv[2].split())
fa = [(r["op"], r["path"], r["mode"], r["off_lo"], r["off_hi"], r["size"], r["errno"])
      for r in rows if r["op"] == "fallocate"]
assert fa == [("fallocate", "fa.bin", 0x10, 1000, 3000, 2000, zr),
              ("fallocate", "fa.bin", 0x3, 8192, 12288, 4096, ph),
              ("fallocate", "fa.bin", 0x1, 16384, 81920, 65536, ks)], fa
for r in rows:
    assert r["comm"] == "python3" and r["pid"] and r["pid"] > 1, r
PY
ZR=$(python3 -c 'import errno, sys; e = int(sys.argv[1].split()[0])
print("ok" if e == 0 else "EOPNOTSUPP" if e == errno.EOPNOTSUPP else errno.errorcode[e])' "$NATIVE")
expect_status 0 "fallocate text" -- "$ARB" audit w --session "$FSID" --op fallocate
expect_match "fallocate +fa.bin +zero-range 2.0 KiB at 1000 +$ZR" "$OUT" "zero-range shown by name"
expect_match "fallocate +fa.bin +keep-size\+punch-hole 4.0 KiB at 8192 +ok" "$OUT" "punch-hole shown"

# --- RENAME_EXCHANGE --------------------------------------------------------------------------
printf 'one\n' >"$W/x1"
printf 'two\n' >"$W/x2"
box_py w "exchange in a box" '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, b"x1", -100, b"x2", 2) != 0:
    raise OSError(ctypes.get_errno(), "renameat2")'
XSID=$SID
expect_eq "two" "$(cat "$W/x1")" "x1 has x2's content"
expect_eq "one" "$(cat "$W/x2")" "x2 has x1's content"
rows w "$XSID"
expect_match '"op":"exchange","path":"x1","path2":"x2"' "$(cat "$T/rows.json")" "exchange row"
expect_status 0 "summary" -- "$ARB" audit w --session "$XSID" --summary --json
python3 - "$OUT" <<'PY' && pass || fail "summary after an exchange: both modified"
import json, sys
got = {e["path"]: (e["status"], e["renamed_to"]) for e in map(json.loads, sys.argv[1].splitlines())}
assert got == {"x1": ("modified", None), "x2": ("modified", None)}, got
PY
# CONTROL: a plain rename in the same way is a rename that leaves its source gone.
box_py w "rename in a box" 'import os; os.rename("x1", "x3")'
expect_status 0 "summary of a rename" -- "$ARB" audit w --session "$SID" --summary --json
expect_match '"path":"x1","status":"renamed","renamed_to":"x3"' "$OUT" "control: rename"

# --- shared mmap ------------------------------------------------------------------------------
box_py w "writer of m.bin" 'open("m.bin", "wb").write(b"m" * 100)'
PSID=$SID
box_py w "mmap writer" '
import mmap, os
fd = os.open("m.bin", os.O_RDWR)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[4096:4100] = b"MMAP"
m.flush()
m.close()
os.close(fd)'
MSID=$SID
expect_eq "MMAP" "$(dd if="$W/m.bin" bs=1 skip=4096 count=4 2>/dev/null)" "mmap write landed"
rows w "$MSID"
python3 - "$T/rows.json" <<'PY' && pass || fail "mmap writeback in the mmap session"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
w = [r for r in rows if r["op"] == "write" and r["path"] == "m.bin"]
assert w, rows
for r in w:
    assert r["pid"] and r["comm"] == "python3", r
    assert r["off_lo"] <= 4096 and r["off_hi"] >= 4100, r
PY
# No row of the workspace is left without a process (pid 0 / no session).
expect_status 0 "all rows" -- "$ARB" audit w --kind fs --json
python3 - "$OUT" <<'PY' && pass || fail "every box write has a process"
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
bad = [r for r in rows if r["op"] in ("write", "fallocate") and not r["pid"]]
assert not bad, bad
PY
expect_status 0 "writer session" -- "$ARB" audit w --session "$PSID" --kind fs --op write --json
expect_eq 1 "$(grep -c '"path":"m.bin"' <<<"$OUT")" "the first writer's session has only its own write"

# --- passthrough: a write with its mtime set back ---------------------------------------------
expect_status 0 "create p" -- "$ARB" workspace create p --io passthrough
expect_status 0 "info p" -- "$ARB" workspace info p
io=$(sed -n 's/^io: *//p' <<<"$OUT")
if [ "$io" = passthrough ]; then
	box_py p "passthrough write, mtime restored" '
import os
fd = os.open("pt.txt", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"first\n")
os.close(fd)
st = os.stat("pt.txt")
fd = os.open("pt.txt", os.O_WRONLY | os.O_CREAT)
os.pwrite(fd, b"FIRST\n", 0)
os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
os.close(fd)
assert os.stat("pt.txt").st_mtime_ns == st.st_mtime_ns'
	expect_eq "FIRST" "$(cat "$R/.git/arborinth/workspaces/p/layer/pt.txt")" "passthrough write landed"
	rows p "$SID"
	python3 - "$T/rows.json" <<'PY' && pass || fail "passthrough write found by ctime"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ops = [r["op"] for r in rows if r["path"] == "pt.txt"]
assert ops.count("write") == 2 and "utimens" in ops, ops
ut = ops.index("utimens")
assert "write" in ops[ut:], ops  # the second write's row, recorded at its release
for r in rows:
    assert r["pid"] and r["comm"] == "python3", r
PY
	# CONTROL: an open for writing that writes nothing and only touches the mtime: no write.
	box_py p "passthrough utime only" '
import os
fd = os.open("pt.txt", os.O_WRONLY | os.O_CREAT)
os.utime(fd, ns=(0, 0))
os.close(fd)'
	rows p "$SID"
	expect_eq 0 "$(grep -c '"op":"write"' "$T/rows.json" || true)" "control: utime alone is no write"
	expect_eq 1 "$(grep -c '"op":"utimens"' "$T/rows.json" || true)" "control: the utimens row"
elif [ "$(id -u)" = 0 ] && grep -q " fuse_passthrough_write_iter$" /proc/kallsyms 2>/dev/null &&
	[ "${ARBORINTH_TEST_MUST_RUN:-}" = 1 ]; then
	fail "passthrough available but not used: $io"
else
	echo "note: passthrough unavailable here ($io): its check not run" >&2
fi

expect_status 0 "verify" -- "$ARB" audit w --verify
expect_match ": ok, [0-9]+ rows" "$OUT" "the chain still verifies"

# As root: a project on a tmpfs (as /tmp is on Debian 13), which has no zero-range: the view
# gives the box tmpfs's own EOPNOTSUPP, audited as such, and still punches the hole.
if [ "$(id -u)" = 0 ] && [ -z "${ARB_AUDIT_USER:-}" ]; then
	S=$T/small
	mkdir "$S"
	mount -t tmpfs -o size=64m tmpfs "$S" # above the 16 MiB reserve (fs/disk.c)
	mkrepo "$S/repo"
	cd "$S/repo"
	expect_status 0 "create on tmpfs" -- "$ARB" workspace create t
	printf 'A%.0s' $(seq 16384) >"$S/native.bin"
	NATIVE=$(python3 -c "$FA_CODE" "$S/native.bin")
	expect_eq "$(python3 -c 'import errno; print(errno.EOPNOTSUPP)') 0 0" "$NATIVE" \
		"natively, tmpfs refuses zero-range and punches holes"
	printf 'A%.0s' $(seq 16384) >"$S/repo/.git/arborinth/workspaces/t/workdir/fa.bin"
	box_py t "fallocate in a box on tmpfs" "$FA_CODE" fa.bin
	expect_eq "$NATIVE" "$OUT" "the view fails and works as tmpfs does"
	cmp -s "$S/native.bin" "$S/repo/.git/arborinth/workspaces/t/workdir/fa.bin" && pass ||
		fail "the content on tmpfs is as natively"
	expect_status 0 "fallocate text on tmpfs" -- "$ARB" audit t --session "$SID" --op fallocate
	expect_match "fallocate +fa.bin +zero-range 2.0 KiB at 1000 +EOPNOTSUPP" "$OUT" \
		"the refused zero-range audited"
	expect_match "fallocate +fa.bin +keep-size\+punch-hole 4.0 KiB at 8192 +ok" "$OUT" \
		"the punch-hole after it audited"
	cd "$R"
	"$ARB" --workdir "$S/repo" workspace unmount t >/dev/null
	umount "$S"
fi

# As root: all of the above again as an ordinary user (passthrough then falls back).
if [ "$(id -u)" = 0 ] && [ -z "${ARB_AUDIT_USER:-}" ] && command -v runuser >/dev/null; then
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
		ARB="$U/arborinth" ARB_SRC="$U/src" ARB_AUDIT_USER=1 \
		bash "$U/src/tests/integration/$(basename "$0")"
	printf '%s\n' "$OUT" | tail -1
	[ -n "$ERR" ] && printf '%s\n' "$ERR" >&2
fi
finish
