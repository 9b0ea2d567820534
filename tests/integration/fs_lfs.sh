#!/usr/bin/env bash
# git LFS in the view (fs/lfs_view.c, core/lfs_index.c), with Debian's git-lfs and a local
# store only: files whose object the origin has show its content and real size, `git status`
# is clean, git-lfs in the box lists them and commits new objects into the workspace's own
# store; a missing object stays a pointer and create says so; forged pointers (an object that
# does not hash to its oid, a symlink planted in the store, a wrong size, a pointer at a path
# that is not filter=lfs) show the pointer and never the target. As root and as an ordinary
# user.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v git-lfs >/dev/null || skip "no git-lfs (apt-get install git-lfs)"

# lfs_repo DIR: a repository tracking *.bin with git LFS (objects in DIR/.git/lfs/objects).
lfs_repo() {
	local d=$1
	mkdir -p "$d/sub"
	git -C "$d" init -q -b main
	git -C "$d" config user.email t@example.com
	git -C "$d" config user.name tester
	git -C "$d" lfs install --local >/dev/null
	git -C "$d" lfs track '*.bin' >/dev/null
	head -c 300000 /dev/urandom >"$d/big.bin"
	printf 'small object\n' >"$d/sub/small.bin"
	head -c 5000 /dev/urandom >"$d/gone.bin"
	printf 'hello\n' >"$d/README"
	git -C "$d" add -A
	GIT_COMMITTER_DATE='2024-01-02T03:04:05Z' GIT_AUTHOR_DATE='2024-01-02T03:04:05Z' \
		git -C "$d" commit -q -m lfs
}

# pointer OID SIZE: a pointer exactly as git-lfs writes it.
pointer() { printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %s\n' "$1" "$2"; }
objpath() { printf '%s/.git/lfs/objects/%s/%s/%s' "$1" "${2:0:2}" "${2:2:2}" "$2"; }

# forge DIR: pointers the view must not resolve, committed as they are (git-lfs's clean keeps
# a file that already is a pointer), and what they would point at planted in the store.
forge() {
	local d=$1 oid size
	# An object that does not hash to its oid (right size): the oid of other content.
	oid=$(printf 'other content' | sha256sum | cut -c1-64)
	mkdir -p "$(dirname "$(objpath "$d" "$oid")")"
	printf 'FORGED-TARGET' >"$(objpath "$d" "$oid")"
	pointer "$oid" 13 >"$d/forged.bin"
	# A symlink in the store to a file of the host, with that file's size.
	oid=$(printf 'shadow' | sha256sum | cut -c1-64)
	size=$(stat -c %s /etc/shadow)
	mkdir -p "$(dirname "$(objpath "$d" "$oid")")"
	ln -s /etc/shadow "$(objpath "$d" "$oid")"
	pointer "$oid" "$size" >"$d/link.bin"
	# A good object (big.bin's) under a pointer with another size.
	oid=$(git -C "$d" cat-file -p HEAD:big.bin | sed -n 's/^oid sha256://p')
	pointer "$oid" 299999 >"$d/wrongsize.bin"
	# The same good pointer at a path git LFS does not track: a text file, shown as it is.
	git -C "$d" cat-file -p HEAD:big.bin >"$d/notlfs.txt"
	git -C "$d" add -A
	git -C "$d" commit -q -m forged
}

# scenario NAME PREFIX...: everything, with PREFIX (as_user or nothing) before each command
# that touches the repository or the view.
scenario() {
	local who=$1 R ws V gitdir oid
	shift
	R=("$@")
	local r="$W/repo"
	G() { "${R[@]}" git -C "$r" "$@"; }
	"${R[@]}" bash -c "$(declare -f lfs_repo pointer objpath forge); lfs_repo '$r' && forge '$r'"
	# (git lfs ls-files lists every pointer, whatever the attributes say.)
	expect_eq "$(printf '%s\n' big.bin forged.bin gone.bin link.bin notlfs.txt sub/small.bin wrongsize.bin)" \
		"$(G lfs ls-files --name-only | LC_ALL=C sort)" "$who: git-lfs knows the pointers"
	# Last, since git may clean a racily clean file again, which stores its object again.
	oid=$(G cat-file -p HEAD:gone.bin | sed -n 's/^oid sha256://p')
	rm "$(objpath "$r" "$oid")"

	expect_status 0 "$who: create" -- "${R[@]}" "$ARB" --workdir "$r" workspace create lw --json
	ws=$OUT
	expect_match "^arborinth: 4 of 6 LFS files have no good object in the origin's LFS store" "$ERR" \
		"$who: create says how many stay pointers and why"
	expect_eq 1 "$(printf '%s\n' "$ERR" | grep -c .)" "$who: in one line"
	V=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["workdir"])' <<<"$ws")
	gitdir=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])' <<<"$ws")/git
	expect_eq "git-lfs filter-process" "$(git config --file "$gitdir/config" filter.lfs.process)" \
		"$who: the workspace's config has git-lfs's filters"

	# Content and size of the ones the origin has.
	expect_status 0 "$who: big.bin's content" -- "${R[@]}" cmp "$V/big.bin" "$r/big.bin"
	expect_eq 300000 "$("${R[@]}" stat -c %s "$V/big.bin")" "$who: big.bin's size"
	expect_eq "small object" "$("${R[@]}" cat "$V/sub/small.bin")" "$who: small.bin's content"
	expect_eq 13 "$("${R[@]}" stat -c %s "$V/sub/small.bin")" "$who: small.bin's size"
	# A missing object and every forged one: the pointer, byte for byte, and its size.
	for f in gone.bin forged.bin link.bin wrongsize.bin notlfs.txt; do
		expect_eq "$(G cat-file -p "HEAD:$f" | sha256sum)" \
			"$("${R[@]}" cat "$V/$f" | sha256sum)" "$who: $f shows the pointer"
		expect_eq "$(G cat-file -s "HEAD:$f")" "$("${R[@]}" stat -c %s "$V/$f")" \
			"$who: $f has the pointer's size"
	done
	expect_status 1 "$who: no forged target shown" -- "${R[@]}" grep -rl "FORGED-TARGET" "$V/forged.bin"
	expect_match "forged.bin: LFS object [0-9a-f]{64} is not a regular file" \
		"$(cat "$(dirname "$gitdir")/run/fs.log")" "$who: the daemon logs the forged object"

	# git on the host in the view, and git and git-lfs in a box.
	expect_eq "" "$("${R[@]}" git -C "$V" status --porcelain)" "$who: host git status clean"
	expect_status 0 "$who: box" -- "${R[@]}" "$ARB" --workdir "$r" shell lw -- sh -c '
		git status --porcelain; echo "--"; git lfs ls-files --name-only; echo "--"
		sha256sum big.bin'
	expect_eq "$(printf '%s\n' -- big.bin forged.bin gone.bin link.bin notlfs.txt sub/small.bin wrongsize.bin -- "$(sha256sum "$r/big.bin" | cut -d" " -f1)  big.bin")" \
		"$OUT" "$who: in the box git status is clean, git lfs lists the files, content right"
	# git lfs status: `git update-index --refresh`, then two `git diff-index` at once (git
	# before 2.43 misread fsmonitor-valid paths there: fs/fsmon.c, fs_racy.sh).
	expect_status 0 "$who: git lfs status" -- \
		"${R[@]}" "$ARB" --workdir "$r" shell lw -- git lfs status --porcelain
	expect_eq "" "$OUT" "$who: git lfs status in the box: nothing to commit, nothing changed"
	# An edit committed in the box: a new pointer, its object in the workspace's store only.
	expect_status 0 "$who: commit in the box" -- "${R[@]}" "$ARB" --workdir "$r" shell lw -- sh -c '
		printf "edited in the box\n" > sub/small.bin && git add sub/small.bin &&
		git -c user.name=a -c user.email=a@b commit -q -m edit &&
		git cat-file -p HEAD:sub/small.bin && git status --porcelain'
	oid=$(printf 'edited in the box\n' | sha256sum | cut -c1-64)
	expect_eq "$(pointer "$oid" 18)" "$OUT" "$who: the commit holds a new pointer, status clean"
	[ -f "$gitdir/lfs/objects/${oid:0:2}/${oid:2:2}/$oid" ] && pass ||
		fail "$who: the new object is in the workspace's LFS store"
	[ ! -e "$(objpath "$r" "$oid")" ] && pass || fail "$who: and not in the origin's"
	expect_eq "edited in the box" "$("${R[@]}" cat "$V/sub/small.bin")" "$who: the edit shows"
}

W="$T/root"
mkdir -p "$W"
scenario root

# lfs.storage in the origin's config (relative: to its .git), as git-lfs reads it.
s="$T/storage"
lfs_repo "$s"
git -C "$s" config lfs.storage lfs-elsewhere
mkdir "$s/.git/lfs-elsewhere"
mv "$s/.git/lfs/objects" "$s/.git/lfs-elsewhere/objects"
expect_status 0 "lfs.storage: create" -- "$ARB" --workdir "$s" workspace create st --json
expect_eq "" "$ERR" "lfs.storage: every object found, nothing to say"
ws=$OUT
V=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["workdir"])' <<<"$ws")
expect_status 0 "lfs.storage: big.bin's content" -- cmp "$V/big.bin" "$s/big.bin"
expect_eq "" "$(git -C "$V" status --porcelain)" "lfs.storage: git status clean"
# A workspace made before the view showed LFS objects (its index has the pointers' sizes)
# has no lfs-view file in its folder: its daemon keeps showing pointers, as that index says.
root=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])' <<<"$ws")
[ -f "$root/lfs-view" ] && pass || fail "a new workspace is marked lfs-view"
rm "$root/lfs-view"
expect_status 0 "unmount" -- "$ARB" --workdir "$s" workspace unmount st
expect_status 0 "mount" -- "$ARB" --workdir "$s" workspace mount st
expect_eq "$(git -C "$s" cat-file -p HEAD:big.bin)" "$(cat "$V/big.bin")" \
	"a workspace without the mark shows the pointer"
# A base without LFS: no mark, no filter config, the daemon never looks for pointers.
mkrepo "$T/plain" >/dev/null
expect_status 0 "plain: create" -- "$ARB" --workdir "$T/plain" workspace create p --json
root=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])' <<<"$OUT")
[ ! -e "$root/lfs-view" ] && pass || fail "a base without LFS files is not marked lfs-view"
expect_eq "" "$(git config --file "$root/git/config" --get-regexp '^filter\.lfs' || true)" \
	"and its config has no LFS filter"

# As an ordinary user.
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid"
	chmod 0755 "$T"
	W="$T/user"
	mkdir "$W"
	cp "$ARB" "$W/arborinth" # the build tree may sit where the user cannot reach
	chown -R "$user" "$W"
	ARB="$W/arborinth"
	as_user() { runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$W" "$@"; }
	scenario "$user" as_user
fi
finish
