#!/usr/bin/env bash
# The view never makes the daemon act outside the workspace: symlinks the workload makes (or
# that are planted in layer/) are operated on as links, never followed by the daemon; the
# blob cache is never written through the view. Each probe has a control showing it works.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"

mkrepo "$T/repo"
mkdir -p "$T/outside"
printf 'precious\n' >"$T/outside/secret"
chmod 0640 "$T/outside/secret"
touch -d '2020-01-01 00:00:00' "$T/outside/secret"
outside_state() { stat -c '%a %h %s %Y %U' "$T/outside/secret"; sha256sum <"$T/outside/secret"; ls -A "$T/outside"; }
before=$(outside_state)

"$ARB" --workdir "$T/repo" workspace create s >/dev/null
V="$T/repo/.git/arborinth/workspaces/s/workdir"
L="$T/repo/.git/arborinth/workspaces/s/layer"

# A symlink the workload makes, pointing out of the workspace.
ln -s "$T/outside/secret" "$V/evil"
# Control: the kernel follows it for the caller (this test runs outside any box).
expect_eq "precious" "$(cat "$V/evil")" "control: the link resolves for the caller"
# Operations on the link itself, which the daemon performs: none may touch the target.
touch -h -d '2001-01-01' "$V/evil"
chown -h "$(id -u):$(id -g)" "$V/evil"
ln "$V/evil" "$V/evil-hardlink" 2>/dev/null || true
mv "$V/evil" "$V/evil2"
setfattr -h -n user.x -v y "$V/evil2" 2>/dev/null || true
rm -f "$V/evil2" "$V/evil-hardlink"
expect_eq "$before" "$(outside_state)" "link operations left the outside file untouched"
[ -L "$V/evil-hardlink" ] || [ ! -e "$V/evil-hardlink" ] && pass || fail "hard link of a symlink became a regular file"

# A symlink planted in layer/ while unmounted, where the base has a directory: it shadows the
# directory as a link; removing and recreating through the view never writes through it.
"$ARB" --workdir "$T/repo" workspace unmount s >/dev/null
ln -s "$T/outside" "$L/src"
"$ARB" --workdir "$T/repo" workspace mount s >/dev/null
[ -L "$V/src" ] && pass || fail "planted link shows as a link"
rm "$V/src"
mkdir "$V/src"
printf 'inside\n' >"$V/src/new.c"
expect_eq "$before" "$(outside_state)" "planted link: outside untouched after rm/mkdir/create"
[ ! -e "$T/outside/new.c" ] && pass || fail "file created through the planted link"
[ -d "$L/src" ] && [ ! -L "$L/src" ] && pass || fail "layer/src is a real directory again"
expect_eq "" "$(ls "$V/src" | grep -v new.c)" "recreated directory does not show the base's children"

# Swapping an upper directory for a link while the view is mounted (a check-then-use race):
# the daemon keeps working on the directory it opened, never on the link.
mkdir -p "$V/swap"
printf 'x\n' >"$V/swap/f"
mv "$L/swap" "$L/swap-moved"
ln -s "$T/outside" "$L/swap"
printf 'after swap\n' >"$V/swap/g" 2>/dev/null || true
mkdir "$V/swap/sub" 2>/dev/null || true
expect_eq "$before" "$(outside_state)" "swapped-in link never followed by the daemon"
[ ! -e "$T/outside/g" ] && [ ! -e "$T/outside/sub" ] && pass || fail "write landed outside"

# Names: too long, and the reserved whiteout spelling.
expect_status 2 "name of 256 bytes" -- sh -c "printf x > '$V/$(printf 'n%.0s' $(seq 256))'"
expect_match "File name too long" "$ERR" "ENAMETOOLONG"
expect_status 0 "control: name of 255 bytes" -- sh -c "printf x > '$V/$(printf 'n%.0s' $(seq 255))'"
expect_status 1 "mknod of a whiteout" -- mknod "$V/wh" c 0 0
expect_status 0 "control: mknod of a fifo" -- mknod "$V/fifo" p
# arborinth's own xattrs cannot be set or seen through the view: it has no xattrs at all
# (fs/ops_xattr.c); the upper layer's are on the real directory.
setfattr -n user.arborinth.x -v y "$T/repo/.git/arborinth/workspaces/s/layer" 2>/dev/null || true
expect_status 1 "set reserved xattr" -- setfattr -n user.arborinth.opaque -v y "$V/src"
expect_match "not supported" "$ERR" "refused as unsupported"
expect_status 0 "control: set an ordinary xattr natively" -- setfattr -n user.ok -v y "$T/repo/README"
expect_status 1 "an ordinary xattr in the view" -- setfattr -n user.ok -v y "$V/src"
expect_eq "" "$(getfattr -d -m 'user.arborinth' "$V" 2>/dev/null)" "reserved xattrs hidden"

# The blob cache is never written through the view.
cat "$V/README" >/dev/null
blob=$(find "$T/repo/.git/arborinth/blobs" -type f | head -1)
[ -n "$blob" ] && pass || fail "reading materialised a blob"
h1=$(sha256sum <"$blob")
printf 'rewritten\n' >"$V/README"
printf 'more\n' >>"$V/run.sh"
truncate -s 1 "$V/src/main.c"
expect_eq "$h1" "$(sha256sum <"$blob")" "blob cache file unchanged after writes to the view"
expect_eq "444" "$(stat -c %a "$blob")" "blob cache file is read-only"
expect_eq "" "$(find "$T/repo/.git/arborinth/blobs" -type f ! -perm 0444)" "every cached blob read-only"

finish
