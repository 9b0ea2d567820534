#!/usr/bin/env bash
# `workspace create --dirty`: every kind of uncommitted state in the origin shows in the view,
# and `git status` there finds the same changes. The origin is not written. A failing create
# leaves nothing behind.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"

R="$T/repo"
mkrepo "$R"
# More base content to change: a directory to delete whole, a deep tree, ignore rules.
mkdir -p "$R/gone/sub" "$R/keep/deep/er" "$R/ren"
printf 'g1\n' >"$R/gone/a"
printf 'g2\n' >"$R/gone/sub/b"
printf 'k\n' >"$R/keep/deep/er/k.txt"
printf 'k2\n' >"$R/keep/deep/k2.txt"
printf 'stays\n' >"$R/keep/deep/stay.txt"
printf 'old name\n' >"$R/ren/old.txt"
printf 'becomes a dir\n' >"$R/filedir"
mkdir -p "$R/dirfile"
printf 'x\n' >"$R/dirfile/x"
printf 'staged then reverted\n' >"$R/revert.txt"
printf '*.log\nbuild/\n' >"$R/.gitignore"
git -C "$R" add -A
git -C "$R" commit -q -m "more"
"$ARB" --workdir "$R" project info >/dev/null

# The dirty state, one of each kind.
printf 'modified\n' >>"$R/README"                     # modified, unstaged
printf 'staged\n' >>"$R/src/main.c"                   # modified, staged
git -C "$R" add src/main.c
printf 'both\n' >>"$R/src/lib/a.txt"                  # staged, then modified again
git -C "$R" add src/lib/a.txt
printf 'more\n' >>"$R/src/lib/a.txt"
rm "$R/keep/deep/k2.txt"                              # deleted, unstaged
git -C "$R" rm -q "$R/keep/deep/er/k.txt"             # deleted, staged (its dir goes too)
rm -rf "$R/gone"                                      # a deleted directory
git -C "$R" mv ren/old.txt ren/new.txt                # a staged rename
mkdir -p "$R/new/deep/er/still"                       # untracked file in a deep new dir
printf 'deep\n' >"$R/new/deep/er/still/file.c"
printf 'untracked\n' >"$R/untracked.txt"              # untracked at the top
printf 'staged new\n' >"$R/added.txt"                 # new and staged
git -C "$R" add added.txt
chmod +x "$R/src/main.c"                              # mode change
rm "$R/link" && ln -s src/main.c "$R/link"            # symlink retargeted
rm "$R/run.sh" && ln -s README "$R/run.sh"            # file became a symlink
rm "$R/filedir" && mkdir "$R/filedir" && printf 'in\n' >"$R/filedir/in.txt" # file -> dir
rm -rf "$R/dirfile" && printf 'now a file\n' >"$R/dirfile"                 # dir -> file
printf 'changed\n' >"$R/revert.txt" && git -C "$R" add revert.txt          # staged ...
printf 'staged then reverted\n' >"$R/revert.txt"                           # ... reverted
printf 'ignored\n' >"$R/debug.log"                    # ignored: stays behind
mkdir -p "$R/build" && printf 'obj\n' >"$R/build/out.o"
head -c 3000000 /dev/urandom >"$R/big.bin"            # a larger untracked file

# What the origin's working tree amounts to, through a throwaway index.
cp "$R/.git/index" "$T/idx"
want_tree=$(cd "$R" && GIT_INDEX_FILE="$T/idx" git add -A && GIT_INDEX_FILE="$T/idx" git write-tree)
git -C "$R" status >/dev/null # settles the index's stat data before the hash
# create itself adds refs/arborinth/NAME and a remote; the index and objects must not change.
origin_before=$(tree_hash "$R/.git/objects"; sha256sum <"$R/.git/index"; tree_hash "$R/.git/refs/heads"; cd "$R" && git status --porcelain=v1 -uall | LC_ALL=C sort)

expect_status 0 "create --dirty" -- "$ARB" --workdir "$R" workspace create --dirty w
V="$R/.git/arborinth/workspaces/w/workdir"
L="$R/.git/arborinth/workspaces/w/layer"

expect_eq "modified" "$(tail -n1 "$V/README")" "unstaged modification"
expect_eq "staged" "$(tail -n1 "$V/src/main.c")" "staged modification"
expect_eq "$(cat "$R/src/lib/a.txt")" "$(cat "$V/src/lib/a.txt")" "staged then modified: the working tree wins"
[ ! -e "$V/keep/deep/k2.txt" ] && pass || fail "unstaged deletion shows"
[ ! -e "$V/keep/deep/er" ] && pass || fail "staged deletion of the only file removes its directory"
expect_eq "stays" "$(cat "$V/keep/deep/stay.txt")" "the rest of a directory with deletions stays"
[ ! -e "$V/gone" ] && pass || fail "deleted directory is gone"
[ -c "$L/gone" ] && pass || fail "deleted directory is one whiteout in the layer"
[ ! -e "$L/gone/a" ] && pass || fail "no whiteouts below a deleted directory"
[ ! -e "$V/ren/old.txt" ] && [ "$(cat "$V/ren/new.txt")" == "old name" ] && pass ||
	fail "staged rename as the resulting paths"
expect_eq "deep" "$(cat "$V/new/deep/er/still/file.c")" "untracked file in a deep new directory"
expect_eq "untracked" "$(cat "$V/untracked.txt")" "untracked file"
expect_eq "staged new" "$(cat "$V/added.txt")" "new staged file"
[ -x "$V/src/main.c" ] && pass || fail "mode change carried"
expect_eq "src/main.c" "$(readlink "$V/link")" "symlink retargeted"
expect_eq "README" "$(readlink "$V/run.sh")" "file became a symlink"
[ -d "$V/filedir" ] && expect_eq "in" "$(cat "$V/filedir/in.txt")" "file became a directory"
[ -f "$V/dirfile" ] && expect_eq "now a file" "$(cat "$V/dirfile")" "directory became a file"
expect_eq "staged then reverted" "$(cat "$V/revert.txt")" "staged then reverted"
[ ! -e "$V/debug.log" ] && [ ! -e "$V/build" ] && pass || fail "ignored files stay behind"
cmp -s "$R/big.bin" "$V/big.bin" && pass || fail "larger file copied whole"
[ ! -e "$L/.git" ] && [ ! -e "$L/.arborinth" ] && pass || fail "the state directory is not carried"
# Unchanged files are not copied: only the 11 dirty regular files are in the layer.
expect_eq 11 "$(find "$L" -type f | wc -l)" "only the dirty files are in the layer"

# git status in the view shows the same changes: the same paths, and after `add -A` the same
# tree as the origin's working tree.
view_paths=$(cd "$V" && git status --porcelain=v1 -uall | cut -c4- | LC_ALL=C sort)
origin_paths=$(cd "$R" && git -c status.renames=false status --porcelain=v1 -uall | cut -c4- | grep -v '^revert.txt$' | LC_ALL=C sort)
expect_eq "$origin_paths" "$view_paths" "git status paths in the view match the origin's"
got_tree=$(cd "$V" && git add -A && git write-tree)
expect_eq "$want_tree" "$got_tree" "git add -A in the view gives the origin's working tree"

origin_after=$(tree_hash "$R/.git/objects"; sha256sum <"$R/.git/index"; tree_hash "$R/.git/refs/heads"; cd "$R" && git status --porcelain=v1 -uall | LC_ALL=C sort)
expect_eq "$origin_before" "$origin_after" "origin's index, objects, branches and working tree untouched"

# Survives remount.
expect_status 0 "unmount" -- "$ARB" --workdir "$R" workspace unmount w
expect_status 0 "mount" -- "$ARB" --workdir "$R" workspace mount w
[ ! -e "$V/gone" ] && expect_eq "deep" "$(cat "$V/new/deep/er/still/file.c")" "after remount"

# Without --dirty the view is the clean base.
expect_status 0 "create clean" -- "$ARB" --workdir "$R" workspace create c
expect_eq "" "$(git -C "$R/.git/arborinth/workspaces/c/workdir" status --porcelain)" "clean without --dirty"

# A clean origin: --dirty carries nothing.
C="$T/clean"
mkrepo "$C"
expect_status 0 "create --dirty on a clean origin" -- "$ARB" --workdir "$C" workspace create --dirty d
expect_eq "" "$(git -C "$C/.git/arborinth/workspaces/d/workdir" status --porcelain)" "clean origin, clean view"
expect_eq 0 "$(find "$C/.git/arborinth/workspaces/d/layer" -mindepth 1 | wc -l)" "empty layer"

# Atomic: a failure after the copy leaves no workspace, no staging directory, no ref.
ARBORINTH_FAULT=staging expect_status 1 "create --dirty with a fault" -- \
	"$ARB" --workdir "$R" workspace create --dirty f
[ ! -e "$R/.git/arborinth/workspaces/f" ] && pass || fail "no workspace after a failed create"
expect_eq "" "$(find "$R/.git/arborinth/workspaces" -maxdepth 1 -name '.new-*')" "no staging left"
expect_eq "" "$(git -C "$R" for-each-ref refs/arborinth/f)" "no origin ref left"
# An unreadable dirty file fails the create cleanly (only checkable when not root).
if [ "$(id -u)" != 0 ]; then
	printf 'secret\n' >"$R/unreadable.txt" && chmod 000 "$R/unreadable.txt"
	expect_status 1 "create --dirty with an unreadable file" -- \
		"$ARB" --workdir "$R" workspace create --dirty u
	expect_match "unreadable.txt" "$ERR" "the error names the file"
	[ ! -e "$R/.git/arborinth/workspaces/u" ] && pass || fail "nothing left after the failure"
	rm -f "$R/unreadable.txt"
fi
finish
