#!/usr/bin/env bash
# tests/integration/jail_diskguard.sh: the box's disk guard (jail/diskguard.c). The box's
# tmp, cache and home are bound into it directly, not through the view, so the view's daemon
# does not see what the box writes there; the guard does. A box that writes its home past the
# workspace's --disk budget is stopped (exit 123, one line naming the folder and the budget, a
# `limit` row with path --disk, the end checkpoint taken, what it wrote kept; CONTROL: 1 MiB
# under the budget, and 8 MiB with --disk none, run to the end). As root, a project on a
# 64 MiB tmpfs: a box filling its /tmp is stopped before the filesystem's free space falls
# far below the reserve (16 MiB), so is an unpaced dd (by the box's cap on one file), the end
# checkpoints complete, another workspace still creates (CONTROL: a smaller write completes). As root, the budget part runs again as an
# ordinary user (ARB_GUARD_USER=1).
source "$(dirname "$0")/lib.sh"

[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no FUSE"
command -v python3 >/dev/null || skip "no python3"

# end_checkpoint WS: the last session of WS has its end checkpoint.
end_checkpoint() {
	expect_status 0 "log $1" -- "$ARB" log "$1" --json
	python3 - "$OUT" <<'PY' && pass || fail "$1: the end checkpoint of the stopped box"
import json, sys
s = max(json.loads(sys.argv[1])["sessions"], key=lambda s: s["session"])
assert s["end_checkpoint"], s
PY
}

# write_paced PATH MIB: 1 MiB writes, 10 ms apart (about 100 MiB/s), then a pause; prints
# "done N" when all were written, "enospc N" when the disk said no first.
write_paced() {
	"$ARB" shell "$1" -- python3 -c '
import os, sys, time
path, mib = sys.argv[1], int(sys.argv[2])
fd = os.open(os.path.expandvars(path), os.O_CREAT | os.O_WRONLY, 0o644)
n = 0
try:
    while n < mib:
        os.write(fd, b"x" * (1 << 20))
        n += 1
        time.sleep(0.01)
except OSError:
    print("enospc", n, flush=True)
    sys.exit(3)
print("done", n, flush=True)
time.sleep(float(sys.argv[3]))' "$2" "$3" "$4"
}

R=$T/repo
mkrepo "$R"
cd "$R"
"$ARB" workspace create probe >/dev/null && "$ARB" shell probe -- true 2>/dev/null ||
	skip "no bubblewrap box here"
"$ARB" workspace delete probe >/dev/null

# The budget: 8 MiB into the home of a 4 MiB workspace.
expect_status 0 "create --disk 4M" -- "$ARB" workspace create b --disk 4M
H=$R/.git/arborinth/workspaces/b/home
# CONTROL: 1 MiB, and a second for the guard to look, runs to the end.
expect_status 0 "1 MiB under a 4 MiB budget" -- write_paced b '$HOME/small' 1 1
expect_eq "done 1" "$OUT" "the control box ran to its end"
start=$(date +%s%N)
expect_status 123 "8 MiB past a 4 MiB budget" -- write_paced b '$HOME/big' 8 10
took=$((($(date +%s%N) - start) / 1000000))
expect_match "^(done 8)?$" "$OUT" "stopped while it wrote or paused"
expect_one_line_error "the guard's message"
expect_match "^arborinth: --disk: the box filled $H \\(its home\\) past the workspace's budget of 4 MiB" \
	"$ERR" "the message names the folder and the budget"
expect_match "rm -rf '$H'/\\*" "$ERR" "the message says how to clean"
[ "$took" -lt 5000 ] && pass || fail "stopped in $took ms, not at the end of its pause"
# The budget counts the whole home (the control's 1 MiB `small` and its folders too): `big` is
# stopped once the three folders pass 4 MiB, so at 3 MiB or more.
size=$(stat -c %s "$H/big")
[ "$size" -ge $((3 << 20)) ] && [ "$size" -le $((8 << 20)) ] && pass ||
	fail "what the box wrote stays: $size bytes"
expect_status 0 "audit" -- "$ARB" audit b --op limit --json
expect_match '"path":"--disk"' "$OUT" "a limit row with path --disk"
expect_match "past the workspace's budget of 4 MiB" "$OUT" "the row says why"
end_checkpoint b
# A command that ends right after its write is caught by the guard's last look.
rm -f "$H/big"
expect_status 123 "8 MiB then the end" -- "$ARB" shell b -- dd if=/dev/zero of=$HOME/quick bs=1M count=8
expect_match "past the workspace's budget of 4 MiB .*stopped as its command ended" "$ERR" \
	"the last look's message"
end_checkpoint b
expect_status 0 "verify" -- "$ARB" audit b --verify
# --disk none: no budget, the same write runs to its end.
expect_status 0 "create --disk none" -- "$ARB" workspace create n --disk none
expect_status 0 "8 MiB without a budget" -- write_paced n '$HOME/big' 8 1
expect_eq "done 8" "$OUT" "--disk none: no budget for the guard"

# The reserve: a project on a 64 MiB tmpfs (reserve 16 MiB), a box filling its /tmp.
if [ "$(id -u)" = 0 ] && [ -z "${ARB_GUARD_USER:-}" ]; then
	S=$T/small
	mkdir "$S"
	mount -t tmpfs -o size=64m tmpfs "$S"
	mkrepo "$S/repo"
	cd "$S/repo"
	free_now() { python3 -c 'import os, sys; s = os.statvfs(sys.argv[1]); print(s.f_bavail * s.f_frsize)' "$S"; }
	expect_status 0 "create on tmpfs" -- "$ARB" workspace create r --disk none
	# CONTROL: 8 MiB fits above the reserve.
	expect_status 0 "8 MiB on the tmpfs" -- write_paced r /tmp/small 8 0
	expect_eq "done 8" "$OUT" "a write above the reserve completes"
	before=$(free_now)
	expect_status 123 "fill the tmpfs" -- write_paced r /tmp/big 80 0
	after=$(free_now)
	expect_match "^done|^enospc|^$" "$OUT" "the box ran"
	expect_one_line_error "the reserve's message"
	expect_match "^arborinth: --disk: the disk holding $S/repo/.git/arborinth/workspaces/r/tmp \\(the box's tmp\\) fell below its reserve of 16 MiB" \
		"$ERR" "the message names the folder and the reserve"
	reserve=$((16 << 20))
	over=$((reserve - after))
	echo "note: free before $before, after $after bytes: $((over / 1024)) KiB below the reserve" >&2
	# The guard looks every 50 ms (at 100 MiB/s: 5 MiB); a busy machine can delay it, and
	# the cap on one file keeps half the reserve anyway.
	[ "$after" -ge $((reserve - (8 << 20) - (512 << 10))) ] && pass ||
		fail "stopped $over bytes below the reserve (more than 8.5 MiB)"
	expect_status 0 "audit r" -- "$ARB" audit r --op limit --json
	expect_match '"path":"--disk".*fell below its reserve' "$OUT" "a limit row for the reserve"
	end_checkpoint r
	# Unpaced: dd writes faster than the guard polls; the box's cap on one file (half the
	# reserve left) stops it first, then the guard stops the box.
	rm -f "$S/repo/.git/arborinth/workspaces/r/tmp/big"
	expect_status 123 "dd into /tmp" -- "$ARB" shell r -- dd if=/dev/zero of=/tmp/dd bs=1M count=80
	expect_match "fell below its reserve of 16 MiB" "$ERR" "dd: the reserve's message"
	after=$(free_now)
	echo "note: after an unpaced dd, $((after >> 10)) KiB free" >&2
	[ "$after" -ge $((7 << 20)) ] && pass || fail "dd left $after bytes free (want half the reserve)"
	end_checkpoint r
	expect_status 0 "another workspace on the filled filesystem" -- "$ARB" workspace create r2
	expect_status 0 "its box runs" -- "$ARB" shell r2 -- cat README
	expect_match "^hello" "$OUT" "the other workspace works"
	cd "$R"
	"$ARB" --workdir "$S/repo" workspace unmount r >/dev/null
	"$ARB" --workdir "$S/repo" workspace unmount r2 >/dev/null
	umount "$S"
elif [ -z "${ARB_GUARD_USER:-}" ]; then
	echo "note: not root: the reserve (tmpfs) part not run" >&2
fi

# As root: the budget part again as an ordinary user.
if [ "$(id -u)" = 0 ] && [ -z "${ARB_GUARD_USER:-}" ] && command -v runuser >/dev/null; then
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
		ARB="$U/arborinth" ARB_SRC="$U/src" ARB_GUARD_USER=1 \
		bash "$U/src/tests/integration/$(basename "$0")"
	printf '%s\n' "$OUT" | tail -1
	[ -n "$ERR" ] && printf '%s\n' "$ERR" >&2
fi
finish
