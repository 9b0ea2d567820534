#!/usr/bin/env bash
# Finding the project without libgit2 (core/project_cache.c) and loading libgit2 only when a
# command needs it (compat/git2_lazy.c): the cache is used only while everything it was made
# from holds, and a command finds the same project with it as without it.
. "$(dirname "$0")/lib.sh"

# git2_loaded CMD...: "yes" when CMD opened libgit2 (glibc's LD_DEBUG=files says so).
git2_loaded() {
	local log
	log=$(LD_DEBUG=files "$@" 2>&1 >/dev/null) || true
	if grep -q 'file=libgit2.*dynamically loaded' <<<"$log"; then
		echo yes
	else
		echo no
	fi
}

# same_as_uncached WHAT DIR: `project info --json` in DIR with the cache as it is, then
# without any cache file, agree (output and status).
same_as_uncached() {
	local a b sa=0 sb=0
	a=$("$ARB" --workdir "$2" project info --json 2>&1) || sa=$?
	rm -f "$R/.git/arborinth/repo.cache"
	b=$("$ARB" --workdir "$2" project info --json 2>&1) || sb=$?
	expect_eq "$sb $b" "$sa $a" "$1: the same with and without the cache"
}

R=$T/repo
mkrepo "$R"
(cd "$R" && "$ARB" workspace create w >/dev/null)
cache=$R/.git/arborinth/repo.cache

# The first open after the state directory exists writes the cache; the next uses it.
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R" workspace list)" "no cache: libgit2 finds the project"
expect_match "^root $R\$" "$(cat "$cache")" "the cache names the root"
expect_match "^gitdir $R/.git\$" "$(cat "$cache")" "the cache names the gitdir"
expect_eq no "$(git2_loaded "$ARB" --workdir "$R" workspace list)" "workspace list: no libgit2 with the cache"
expect_eq no "$(git2_loaded "$ARB" --workdir "$R/src/lib" workspace list)" "from a subdirectory too"
expect_eq no "$(git2_loaded "$ARB" --workdir "$R" shell w --explain -- true)" "shell --explain: no libgit2"
expect_status 0 "workspace list with the cache" -- "$ARB" --workdir "$R/src" workspace list
expect_match "^w " "$OUT" "the workspace is listed"
# Controls: commands that need libgit2 still load it, and work.
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R" checkpoint w)" "checkpoint loads libgit2"
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R" project info)" "project info (HEAD) loads libgit2"
expect_status 0 "shell runs and checkpoints" -- "$ARB" --workdir "$R" shell w --jail none -- true
expect_status 0 "checkpoints" -- "$ARB" --workdir "$R" log w
same_as_uncached "plain" "$R"
same_as_uncached "subdirectory" "$R/src/lib"

# The config changed: libgit2 decides again (core.worktree moves the working tree).
"$ARB" --workdir "$R" workspace list >/dev/null
git -C "$R" config arb.test 1
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R" workspace list)" "a changed config: libgit2 again"
expect_eq no "$(git2_loaded "$ARB" --workdir "$R" workspace list)" "and the new cache is used"
mkdir "$T/other"
"$ARB" --workdir "$R" workspace list >/dev/null
git -C "$R" config core.worktree "$T/other"
expect_status 0 "core.worktree set" -- "$ARB" --workdir "$R" project info --json
expect_eq "$T/other" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])')" "core.worktree: the root libgit2 names"
git -C "$R" config --unset core.worktree
same_as_uncached "core.worktree unset" "$R"

# Another .git folder at the same place (a new inode): libgit2 again, same answer. The view
# is not mounted: the .git folder (and the state in it) is moved, copied and chowned below.
"$ARB" --workdir "$R" workspace unmount w >/dev/null
"$ARB" --workdir "$R" workspace list >/dev/null
mv "$R/.git" "$R/.git.old" && cp -a "$R/.git.old" "$R/.git" && rm -rf "$R/.git.old"
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R" workspace list)" "a new .git folder: libgit2 again"
same_as_uncached "new .git" "$R"

# A copy of the repository carries the cache: it names another root, so it is not used.
"$ARB" --workdir "$R" workspace list >/dev/null
cp -a "$R" "$T/copy"
expect_eq yes "$(git2_loaded "$ARB" --workdir "$T/copy" workspace list)" "a copied repository: libgit2"
expect_status 0 "project info in the copy" -- "$ARB" --workdir "$T/copy" project info --json
expect_eq "$T/copy" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])')" "the copy's own root"
expect_match "^root $T/copy\$" "$(cat "$T/copy/.git/arborinth/repo.cache")" "the copy's cache names its root"

# A repository inside the project is found, not the project around it.
"$ARB" --workdir "$R" workspace list >/dev/null
git init -q "$R/nested"
expect_status 0 "project info in a nested repository" -- "$ARB" --workdir "$R/nested" project info --json
expect_eq "$R/nested" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])')" "nested repository's root"
rm -rf "$R/nested"

# A folder on the way that looks like a gitdir (a HEAD file): libgit2 decides.
"$ARB" --workdir "$R" workspace list >/dev/null
mkdir -p "$R/odd" && touch "$R/odd/HEAD"
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R/odd" workspace list)" "a HEAD file on the way: libgit2"
same_as_uncached "HEAD file on the way" "$R/odd"
# From inside .git: libgit2 decides.
"$ARB" --workdir "$R" workspace list >/dev/null
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R/.git/refs" workspace list)" "inside .git: libgit2"
same_as_uncached "inside .git" "$R/.git/refs"

# A damaged cache is ignored and replaced.
printf 'garbage\n' >"$cache"
expect_status 0 "a damaged cache" -- "$ARB" --workdir "$R" workspace list
expect_match "^arborinth-repo-cache 1\$" "$(head -1 "$cache")" "the damaged cache is replaced"
printf 'arborinth-repo-cache 1\nroot %s\ngitdir %s/.git\ncommondir %s/.git\nkey 1 2 3\n' "$R" "$R" "$R" >"$cache"
expect_eq yes "$(git2_loaded "$ARB" --workdir "$R" workspace list)" "a short key: libgit2"

# Another owner of .git: the cache is not used, so libgit2's ownership check still decides.
if [ "$(id -u)" = 0 ]; then
	"$ARB" --workdir "$R" workspace list >/dev/null
	chown -R 65534 "$R/.git"
	expect_eq yes "$(git2_loaded "$ARB" --workdir "$R" workspace list)" "another owner: libgit2"
	same_as_uncached "another owner" "$R"
	chown -R 0 "$R/.git"
fi

# Not in a repository: the same error as ever.
mkdir -p "$T/plain"
expect_status 1 "not in a repository" -- "$ARB" --workdir "$T/plain" workspace list
expect_match "not inside a git repository" "$ERR" "not in a repository: message"
expect_one_line_error "not in a repository"

finish
