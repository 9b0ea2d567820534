#!/usr/bin/env bash
# A repository on each file system that can be made here: tmpfs, ext4 (with its journal),
# btrfs and xfs on loop images, overlayfs over a lower folder, bindfs (FUSE under the view).
# On each, as root and as an ordinary user: create, read a file in the view, a box writes
# and commits, `audit --verify`, delete (nothing of the workspace left), and doctor's
# project file system check names the file system as one that works.
# Needs root (mounts, loop devices); the workspace steps also run as an ordinary user.
# NFS is not here: this kernel has neither an NFS client nor a server (no nfs, nfsd).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root to mount file systems"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v runuser >/dev/null || skip "no runuser"
user=arbtest
id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
chmod 0666 /dev/fuse
[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid"
chmod 0755 "$T"
U="$T/bin"
mkdir "$U"
# The build tree may sit where the user cannot reach (under /root, say): copy what runs.
cp "$(dirname "$ARB")"/arborinth* "$U/"
cp "$(dirname "$ARB")"/*.so "$U/" 2>/dev/null || true
chmod -R a+rX "$U"
ARB="$U/arborinth"
as_user() { runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$T" "$@"; }

# The workspace's workdir, as `workspace info --json` says (never a path guessed here).
workdir_of() { # WHO REPO NAME
	"$1" "$ARB" --workdir "$2" workspace info --json "$3" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["workdir"])'
}
as_root() { "$@"; }

# The round trip on file system KIND mounted at DIR, as WHO (as_root or as_user).
round_trip() { # KIND DIR WHO DOCTOR'S-NAME
	local kind=$1 dir=$2 who=$3 said=$4 repo wd
	repo="$dir/repo-${who#as_}"
	"$who" bash -c "mkdir '$repo' && cd '$repo' && git init -q && git config user.email a@b &&
		git config user.name a && echo hi > a.txt && git add a.txt && git commit -qm init"
	expect_status 0 "$kind, ${who#as_}: create" -- "$who" "$ARB" --workdir "$repo" workspace create w
	wd=$(workdir_of "$who" "$repo" w 2>/dev/null || true)
	expect_eq hi "$("$who" cat "$wd/a.txt" 2>&1)" "$kind, ${who#as_}: a file read in the view"
	expect_status 0 "$kind, ${who#as_}: a box writes and commits" -- "$who" "$ARB" --workdir "$repo" \
		shell w -- sh -c 'echo more >> a.txt && echo new > n.txt && git add -A &&
		git -c user.name=b -c user.email=b@c commit -qm box && git log -1 --format=%s &&
		git status --porcelain | wc -l'
	expect_eq "$(printf 'box\n0')" "$OUT" "$kind, ${who#as_}: the box's commit, status clean"
	expect_status 0 "$kind, ${who#as_}: diff" -- "$who" "$ARB" --workdir "$repo" diff w
	expect_match '^\+more' "$OUT" "$kind, ${who#as_}: the host sees the box's change"
	expect_status 0 "$kind, ${who#as_}: audit --verify" -- \
		"$who" "$ARB" --workdir "$repo" audit w --verify
	expect_match ": ok," "$OUT" "$kind, ${who#as_}: the audit chain holds"
	expect_status 0 "$kind, ${who#as_}: doctor" -- "$who" "$ARB" --workdir "$repo" doctor
	expect_match "^ok +project file system +.* is on $said" "$OUT" \
		"$kind, ${who#as_}: doctor names the file system as one that works"
	expect_status 0 "$kind, ${who#as_}: delete" -- "$who" "$ARB" --workdir "$repo" workspace delete --force w
	expect_eq "" "$(git -C "$repo" for-each-ref refs/arborinth/ && git -C "$repo" remote)" \
		"$kind, ${who#as_}: no ref or remote left"
	if [ -n "$wd" ] && [ -e "$wd" ]; then fail "$kind, ${who#as_}: $wd left behind"; else pass; fi
}

# renameat2(RENAME_EXCHANGE) of two files in a view of REPO (as root), as the box would.
exchange_in() { # REPO
	local wd
	"$ARB" --workdir "$1" workspace create xchg >/dev/null
	wd=$(workdir_of as_root "$1" xchg)
	echo b >"$wd/b.txt"
	python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2)
print("ok" if r == 0 else os.strerror(ctypes.get_errno()))' "$wd/a.txt" "$wd/b.txt"
	"$ARB" --workdir "$1" workspace delete --force xchg >/dev/null
}

# A loop image of SIZE made by MKFS..., mounted at $T/KIND.
loop_fs() { # KIND SIZE MKFS...
	local kind=$1 size=$2
	shift 2
	command -v "$1" >/dev/null || skip "no $1 (apt-get install btrfs-progs xfsprogs)"
	truncate -s "$size" "$T/$kind.img"
	"$@" "$T/$kind.img" >/dev/null 2>&1 || { fail "$*"; return 1; }
	mkdir "$T/$kind"
	mount -o loop "$T/$kind.img" "$T/$kind" || skip "cannot mount a loop image of $kind"
}

fs_on() { # KIND DIR DOCTOR'S-NAME: both users' round trips on the file system at DIR
	chmod 0777 "$2"
	round_trip "$1" "$2" as_root "$3"
	round_trip "$1" "$2" as_user "$3"
}

mkdir "$T/tmpfs"
mount -t tmpfs -o size=64m tmpfs "$T/tmpfs"
fs_on tmpfs "$T/tmpfs" tmpfs
expect_eq ok "$(exchange_in "$T/tmpfs/repo-root")" "tmpfs: the view exchanges two files"

loop_fs ext4 64M mkfs.ext4 -q -F -j && fs_on ext4 "$T/ext4" ext2/3/4
loop_fs btrfs 128M mkfs.btrfs -q -f && fs_on btrfs "$T/btrfs" btrfs
loop_fs xfs 320M mkfs.xfs -q -f && fs_on xfs "$T/xfs" xfs

# overlayfs: the repository's upper layer over a lower folder with a file in it.
mkdir -p "$T/ovl/lower/shared" "$T/ovl/upper" "$T/ovl/work" "$T/overlayfs"
echo lower >"$T/ovl/lower/shared/f"
mount -t overlay overlay -o "lowerdir=$T/ovl/lower,upperdir=$T/ovl/upper,workdir=$T/ovl/work" \
	"$T/overlayfs"
fs_on overlayfs "$T/overlayfs" overlayfs

# bindfs: a FUSE file system under the state and the view's upper layer (no rename flags,
# no O_TMPFILE): once "Invalid argument" at create, and every workdir taken for mounted.
if command -v bindfs >/dev/null; then
	mkdir "$T/bindfs-real" "$T/bindfs"
	bindfs -o allow_other "$T/bindfs-real" "$T/bindfs"
	fs_on bindfs "$T/bindfs" "a FUSE file system"
	expect_status 0 "bindfs: a workspace that is not mounted" -- "$ARB" --workdir \
		"$T/bindfs/repo-root" workspace create idle
	expect_status 0 "bindfs: unmount" -- "$ARB" --workdir "$T/bindfs/repo-root" workspace unmount idle
	expect_status 0 "bindfs: info" -- "$ARB" --workdir "$T/bindfs/repo-root" workspace info idle
	expect_match "mounted: +no" "$OUT" "bindfs: an unmounted workdir on FUSE is not taken for a view"
	expect_status 0 "bindfs: delete idle" -- "$ARB" --workdir "$T/bindfs/repo-root" workspace delete idle
	# What bindfs lacks, the view lacks: an exchange is refused as bindfs refuses it.
	expect_eq "Invalid argument" "$(exchange_in "$T/bindfs/repo-root")" \
		"bindfs: the view refuses RENAME_EXCHANGE (bindfs has no rename flags)"
	# Without FUSE's device, on a repository that is on FUSE: refused, naming the cause
	# (once: "created", and "mounted: yes (daemon pid 0)" for a folder on FUSE).
	expect_status 1 "bindfs: create without /dev/fuse" -- unshare -m sh -c \
		'mount --bind /dev/null /dev/fuse && exec "$@"' sh \
		"$ARB" --workdir "$T/bindfs/repo-root" workspace create nofuse
	expect_match "no /dev/fuse .*'arborinth doctor'" "$ERR" "bindfs: create without /dev/fuse says why"
	expect_status 1 "bindfs: no such workspace" -- "$ARB" --workdir "$T/bindfs/repo-root" \
		workspace info nofuse
	expect_eq "" "$(find "$T/bindfs-real" -name '.copyup-*')" \
		"bindfs: no copy-up file left in the blob cache"
elif [ "${ARBORINTH_TEST_MUST_RUN:-}" = 1 ]; then
	fail "bindfs is not installed (apt-get install bindfs)"
fi
finish
