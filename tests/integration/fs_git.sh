#!/usr/bin/env bash
# git inside the view: clean status without reading content, the everyday commands, fetching
# the result from the origin, and the origin (worktree and .git) untouched throughout.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"

mkrepo "$T/repo"
git -C "$T/repo" checkout -q -b feature
printf 'feature\n' >"$T/repo/feature.txt"
git -C "$T/repo" add feature.txt
git -C "$T/repo" commit -q -m feature
git -C "$T/repo" checkout -q main
# A branch adding 300 files in 30 folders: enough for git's parallel checkout (100 or more).
git -C "$T/repo" checkout -q -b many
for d in $(seq 30); do
	mkdir -p "$T/repo/many/d$d"
	for f in $(seq 10); do printf 'file %s/%s\n' "$d" "$f" >"$T/repo/many/d$d/f$f.txt"; done
done
git -C "$T/repo" add many
git -C "$T/repo" commit -q -m many
git -C "$T/repo" checkout -q main
# Prime the state dir so the hash below covers the origin only.
"$ARB" --workdir "$T/repo" project info >/dev/null
origin_before=$(cd "$T/repo" && git status --porcelain; tree_hash "$T/repo/.git"; find "$T/repo" -path "$T/repo/.git" -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)

# A base of this very second leaves its files racily clean (core/gitdir.c): git would read
# them, as on any disk. Past that second, status reads nothing.
while [ "$(date +%s)" -le "$(git -C "$T/repo" log -1 --format=%ct main)" ]; do sleep 0.1; done
expect_status 0 "create" -- "$ARB" --workdir "$T/repo" workspace create w
V="$T/repo/.git/arborinth/workspaces/w/workdir"
BLOBS="$T/repo/.git/arborinth/blobs"

expect_eq "" "$(git -C "$V" status --porcelain)" "status clean right after create"
nblobs=$(find "$BLOBS" -type f 2>/dev/null | wc -l)
expect_eq 0 "$nblobs" "git status read no file content (blob cache empty)"
expect_eq "arborinth/w" "$(git -C "$V" rev-parse --abbrev-ref HEAD)" "branch"
expect_eq "$(git -C "$T/repo" rev-parse main)" "$(git -C "$V" rev-parse HEAD)" "HEAD at the base"

# Edit, add, commit, branch, log, diff.
printf 'edited\n' >>"$V/README"
printf 'new\n' >"$V/new.txt"
expect_match "M README" "$(git -C "$V" status --porcelain)" "edit shows"
expect_match "\+edited" "$(git -C "$V" diff)" "diff shows the edit"
git -C "$V" add -A
git -C "$V" -c user.email=a@b -c user.name=agent commit -q -m "agent work"
expect_eq "" "$(git -C "$V" status --porcelain)" "clean after commit"
expect_eq "agent work" "$(git -C "$V" log -1 --format=%s)" "log shows the commit"
git -C "$V" branch side
expect_match "side" "$(git -C "$V" branch)" "branch created"

# stash
printf 'stash me\n' >>"$V/src/main.c"
git -C "$V" stash -q
expect_eq "" "$(git -C "$V" status --porcelain)" "clean after stash"
git -C "$V" stash pop -q
expect_match "M src/main.c" "$(git -C "$V" status --porcelain)" "stash pop restores"
git -C "$V" checkout -q -- src/main.c

# checkout of another branch (from the origin's objects)
git -C "$V" checkout -q feature 2>/dev/null || git -C "$V" checkout -q -b feature "$(git -C "$T/repo" rev-parse feature)"
expect_eq "feature" "$(cat "$V/feature.txt")" "checkout of another branch"
expect_eq "" "$(git -C "$V" status --porcelain)" "clean after checkout"
git -C "$V" checkout -q arborinth/w
[ ! -e "$V/feature.txt" ] && pass || fail "feature.txt gone after checkout back"
# Parallel checkout, which the workspace's config asks for: every file as git wrote it.
workers=$(git -C "$V" config checkout.workers)
[ "${workers:-0}" -ge 4 ] && pass || fail "checkout.workers is '$workers', expected 4 or more"
many=$(git -C "$T/repo" rev-parse many)
trace=$(GIT_TRACE=1 git -C "$V" checkout -q "$many" 2>&1)
expect_match "checkout--worker" "$trace" "the checkout of 300 files ran in parallel workers"
expect_eq "" "$(git -C "$V" status --porcelain)" "clean after the parallel checkout"
expect_eq "$(git -C "$T/repo" ls-tree -r "$many" -- many | awk '{print $3}')" \
	"$(cd "$V" && git ls-files -z -- many | xargs -0 git hash-object)" \
	"the 300 files' content after it"
trace=$(GIT_TRACE=1 git -C "$V" -c checkout.workers=1 checkout -q arborinth/w 2>&1)
case "$trace" in
*checkout--worker*) fail "checkout.workers=1 still ran workers (the probe above proves nothing)" ;;
*) pass ;;
esac
[ ! -e "$V/many" ] && pass || fail "many/ gone after checkout back"
git -C "$V" mv src source
expect_match "R  src/main.c -> source/main.c" "$(git -C "$V" status --porcelain)" "git mv of a directory"
git -C "$V" -c user.email=a@b -c user.name=agent commit -q -m "move src"
expect_eq "" "$(git -C "$V" status --porcelain)" "clean after git mv commit"

# The origin fetches the work, once exported (sessions and merge export by themselves).
expect_status 0 "export" -- "$ARB" --workdir "$T/repo" export w
git -C "$T/repo" fetch -q arborinth/w
expect_eq "move src" "$(git -C "$T/repo" log -1 --format=%s refs/remotes/arborinth/w/arborinth/w)" "origin fetched the workspace branch"
# ... also while the workspace is not mounted.
expect_status 0 "unmount" -- "$ARB" --workdir "$T/repo" workspace unmount w
git -C "$T/repo" fetch -q arborinth/w && pass || fail "fetch while unmounted"

origin_after=$(cd "$T/repo" && git status --porcelain; tree_hash "$T/repo/.git"; find "$T/repo" -path "$T/repo/.git" -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
# fetch adds remote-tracking refs and objects to the origin's .git; compare the worktree part.
expect_eq "$(printf '%s\n' "$origin_before" | tail -n +3)" "$(printf '%s\n' "$origin_after" | tail -n +3)" "origin worktree byte-identical"

# Before the fetch, the origin's .git is untouched by everything the workspace did.
mkrepo "$T/repo2"
"$ARB" --workdir "$T/repo2" project info >/dev/null
"$ARB" --workdir "$T/repo2" workspace create x >/dev/null
h1=$(tree_hash "$T/repo2/.git"; cd "$T/repo2" && git ls-files -s | sha256sum)
V2="$T/repo2/.git/arborinth/workspaces/x/workdir"
printf 'z\n' >"$V2/README"
git -C "$V2" add -A && git -C "$V2" -c user.email=a@b -c user.name=agent commit -q -m z
git -C "$V2" gc -q 2>/dev/null || true
rm -rf "$V2/src"
h2=$(tree_hash "$T/repo2/.git"; cd "$T/repo2" && git ls-files -s | sha256sum)
expect_eq "$h1" "$h2" "origin .git byte-identical while the workspace works"

# Two workspaces are independent; a later origin commit does not show through.
"$ARB" --workdir "$T/repo2" workspace create y >/dev/null
V3="$T/repo2/.git/arborinth/workspaces/y/workdir"
expect_eq "hello" "$(head -1 "$V3/README")" "second workspace sees the base, not the first's edit"
[ -d "$V3/src" ] && pass || fail "second workspace keeps src"
printf 'origin change\n' >"$T/repo2/README"
git -C "$T/repo2" commit -q -am "origin moves on"
expect_eq "hello" "$(head -1 "$V3/README")" "origin commit does not show through"
expect_eq "" "$(git -C "$V3" status --porcelain)" "second workspace still clean"

# Workspaces of one base share one index file (no disk per workspace), and nothing done
# through one view reaches another's index or the shared copy.
mkrepo "$T/repo3"
"$ARB" --workdir "$T/repo3" workspace create a >/dev/null
"$ARB" --workdir "$T/repo3" workspace create b >/dev/null
IA="$T/repo3/.git/arborinth/workspaces/a/git/index"
IB="$T/repo3/.git/arborinth/workspaces/b/git/index"
CACHE="$T/repo3/.git/arborinth/index-cache/$(git -C "$T/repo3" rev-parse HEAD)"
expect_eq "$(stat -c %i "$CACHE")" "$(stat -c %i "$IA")" "a links the shared index"
expect_eq "$(stat -c %i "$CACHE")" "$(stat -c %i "$IB")" "b links the shared index"
shared=$(sha256sum <"$CACHE")
VA="$T/repo3/.git/arborinth/workspaces/a/workdir"
VB="$T/repo3/.git/arborinth/workspaces/b/workdir"
# Writing the index in place through the view (not git's lock-and-rename) gets a private copy,
# also after the view has read it (git status: the daemon then holds the shared file open).
# (--no-optional-locks: status would otherwise write the index to store the fsmonitor token.)
git --no-optional-locks -C "$VA" status --porcelain >/dev/null
expect_eq "$shared" "$(sha256sum <"$VA/.git/index")" "the index read through the view"
python3 -c "import sys; f=open(sys.argv[1],'r+b'); f.seek(0); f.write(b'XXXX'); f.close()" "$VA/.git/index"
expect_eq "$shared" "$(sha256sum <"$CACHE")" "in-place write through a view leaves the shared index"
expect_eq "$shared" "$(sha256sum <"$IB")" "... and the other workspace's index"
expect_eq "XXXX" "$(head -c4 "$IA")" "control: the write landed in a's own index"
chmod 600 "$VB/.git/index"
expect_eq "644" "$(stat -c %a "$CACHE")" "chmod through a view leaves the shared index"
printf 'x\n' >>"$VB/README"
git -C "$VB" add README
expect_eq "$shared" "$(sha256sum <"$CACHE")" "git add in a view leaves the shared index"
expect_match "M  README" "$(git -C "$VB" status --porcelain)" "control: b staged its change"
# The private copy is made under a temporary name in .git: whatever the workload put there
# (a FIFO that would block the daemon, a hard link the copy would truncate) is replaced.
"$ARB" --workdir "$T/repo3" workspace create c >/dev/null
VC="$T/repo3/.git/arborinth/workspaces/c/workdir"
expect_eq "$(stat -c %i "$CACHE")" "$(stat -c %i "$T/repo3/.git/arborinth/workspaces/c/git/index")" "c links the shared index"
mkfifo "$VC/.git/.index.arborinth-unshare"
expect_status 0 "in-place write with a FIFO at the temporary name" -- timeout 20 \
	python3 -c "import sys; f=open(sys.argv[1],'r+b'); f.write(b'YYYY'); f.close()" "$VC/.git/index"
expect_eq "$shared" "$(sha256sum <"$CACHE")" "the shared index is untouched"
expect_eq "YYYY" "$(head -c4 "$T/repo3/.git/arborinth/workspaces/c/git/index")" "control: c got its own copy"
"$ARB" --workdir "$T/repo3" workspace delete a --force >/dev/null
"$ARB" --workdir "$T/repo3" workspace delete b --force >/dev/null
"$ARB" --workdir "$T/repo3" workspace delete c --force >/dev/null
[ ! -e "$CACHE" ] && pass || fail "shared index pruned with its last workspace"

finish
