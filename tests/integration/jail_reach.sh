#!/usr/bin/env bash
# The box reads only the objects of its base commit's history and of the origin's branches and
# tags (shown as origin/*, core/origin_refs.c): not a `.env` once staged and unstaged (a
# dangling blob), not `git stash -u`'s untracked files, neither through git nor by reading the
# object files themselves; each probe with a control that shows the secret is there on the
# host, and that the history the box may read is readable.
# As root and, when root can switch, as an ordinary user.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp}
. "$(dirname "$0")/lib.sh"
command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user and pid namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"

# The case, as a script run by whoever is under test: DIR ARB. Prints PASS/FAIL lines.
cat >"$T/case.sh" <<'EOF'
set -u
cd "$1"
ARB=$2
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1"; }
# is WANT GOT WHAT
is() { if [ "$1" == "$2" ]; then ok "$3"; else bad "$3: expected [$1], got [$2]"; fi; }
has() { if grep -q -- "$1" <<<"$2"; then ok "$3"; else bad "$3: no [$1] in [$2]"; fi; }
hasnt() { if grep -q -- "$1" <<<"$2"; then bad "$3: [$1] found"; else ok "$3"; fi; }
export GIT_CONFIG_GLOBAL=/dev/null
git init -q -b main r && cd r
git config user.email t@example.com && git config user.name tester
printf 'first-%s\n' "$$" >kept.txt && mkdir sub && printf 'sub\n' >sub/f && seq 1 5000 >big.txt
git add -A && git commit -qm one
old_blob=$(git rev-parse HEAD:kept.txt)
printf 'second\n' >>kept.txt && echo end >>big.txt && git commit -qam two
git checkout -q -b side && printf 'SIDE-BRANCH\n' >side.txt && git add side.txt &&
	git commit -qm side && git checkout -q main
printf 'ENV-SECRET\n' >.env && git add .env && git rm -q --cached .env && rm .env
printf 'STASH-SECRET\n' >notes.txt && git stash -q -u
env_blob=$(printf 'ENV-SECRET\n' | git hash-object --stdin)
stash_blob=$(printf 'STASH-SECRET\n' | git hash-object --stdin)
side_blob=$(printf 'SIDE-BRANCH\n' | git hash-object --stdin)
# Half packed: the stash and the branch go into gc's pack beside the base's objects.
git gc -q 2>/dev/null
obj=$(cd .git/objects && pwd -P)

# reads OBJDIR: every object in the files under OBJDIR (packs and loose), read as files
# into a scratch repository: what reading the store directly yields, alternates or not.
reads() {
	local s
	s=$(mktemp -d "${TMPDIR:-/tmp}/reads.XXXXXX")
	git init -q --bare "$s"
	(cd "$1" && find . -type f \( -path './pack/*' -o -path './??/*' \) -print0 |
		xargs -0 -r cp --parents -t "$s/objects" 2>/dev/null)
	git -C "$s" cat-file --batch-all-objects --batch 2>&1
	rm -rf "$s"
}
# CONTROL: on the host every secret is in the origin's store, through git and as files.
for b in "$env_blob" "$stash_blob" "$side_blob"; do
	git cat-file -e "$b" && ok "control: $b on the host" || bad "control: $b missing on the host"
done
all=$(git cat-file --batch-all-objects --batch | tr -d '\0')
has ENV-SECRET "$all" "control: --batch-all-objects prints the dangling .env on the host"
has STASH-SECRET "$all" "control: --batch-all-objects prints the stashed file on the host"
files=$(reads "$obj" | tr -d '\0')
has STASH-SECRET "$files" "control: the origin's pack holds the stash"
has ENV-SECRET "$files" "control: the origin's loose files hold the .env"
deltas=$(git verify-pack -v .git/objects/pack/*.idx | awk '$2 == "blob" && NF >= 7' | wc -l)
[ "$deltas" -ge 1 ] && ok "control: the origin's pack has a delta" || bad "no delta in the origin's pack"

"$ARB" workspace create w >/dev/null || bad "create w"
inbox() { "$ARB" shell w -- sh -c "$1" 2>&1 | tr -d '\0'; }
out=$(inbox "git cat-file -e $env_blob && echo FOUND-env; git cat-file -e $stash_blob && echo FOUND-stash;
	git cat-file -p $env_blob; git cat-file -p $stash_blob")
hasnt FOUND "$out" "cat-file -e of the secrets fails in the box"
hasnt SECRET "$out" "cat-file -p of the secrets in the box"
# The origin's other branch is shown, by design: its history is the user's to read.
has SIDE-BRANCH "$(inbox "git cat-file -p $side_blob; git show origin/side:side.txt")" \
	"control: the origin's branch side is readable in the box (origin/side)"
out=$(inbox "git cat-file --batch-all-objects --batch")
hasnt SECRET "$out" "--batch-all-objects in the box"
has "first-" "$out" "control: --batch-all-objects in the box prints the base's history"
out=$("$ARB" shell w -- bash -c "$(declare -f reads); reads '$obj'" 2>&1 | tr -d '\0')
hasnt SECRET "$out" "the files at the objects path read directly in the box"
has "first-" "$out" "control: the files read directly hold the base's history"
out=$(inbox "ls -A '$obj' '$obj/info' 2>&1; cat '$obj/info/alternates' 2>&1; touch '$obj/x' 2>&1 && echo wrote")
hasnt wrote "$out" "the store is read-only in the box"
hasnt "^alternates" "$out" "the store has no alternates"
# CONTROL: the history the box may read is whole.
out=$(inbox "git cat-file -p $old_blob; git log --oneline | wc -l; git blame -s kept.txt | wc -l;
	git status --short | wc -l; git fsck --no-dangling HEAD 2>&1 | head -3; echo x >>kept.txt && git -c user.email=b@x -c user.name=b commit -qam three && git log --oneline | wc -l")
is "$(printf 'first-%s\n2\n2\n0\n3' "$$")" "$out" "old blob, log, blame, status and commit in the box"

# A workspace made before the store existed (or whose store was removed): built at box start.
rm -rf .git/arborinth/objects-view
out=$(inbox "git log --oneline | wc -l; git cat-file --batch-all-objects --batch")
has "^3$" "$out" "a workspace without a store: git works in the box"
hasnt SECRET "$out" "a workspace without a store: no secret either"
[ -d .git/arborinth/objects-view ] && ok "the store rebuilt at box start" || bad "no store rebuilt"

# The base moves on: the new store starts from the old one (its pack linked) plus one pack.
printf 'third\n' >>kept.txt && git commit -qam three-origin
"$ARB" workspace create w3 >/dev/null || bad "create w3"
links=$(stat -c %h .git/arborinth/objects-view/"$(git rev-parse HEAD)"/pack/*.pack)
is 2 "$links" "the descendant's store links the ancestor's pack"
is "$(git rev-parse HEAD:kept.txt)" "$("$ARB" shell w3 -- git rev-parse HEAD:kept.txt 2>&1)" \
	"the descendant's new blob in its box"
out=$("$ARB" shell w3 -- sh -c "git log --oneline | wc -l; git cat-file --batch-all-objects --batch" 2>&1 | tr -d '\0')
has "^3$" "$out" "the descendant's history in its box"
hasnt SECRET "$out" "the descendant's box: no secret"

# A fork: its base is a commit of w's checkpoint over w's base.
"$ARB" workspace create f --from w >/dev/null || bad "create f --from w"
out=$("$ARB" shell f -- sh -c "git cat-file -p HEAD:kept.txt | tail -1; git log --oneline | wc -l;
	git cat-file --batch-all-objects --batch" 2>&1 | tr -d '\0')
has "^x$" "$out" "the fork's box reads w's change through git"
hasnt SECRET "$out" "the fork's box: no secret"
for w in w w3 f; do "$ARB" workspace delete "$w" --force >/dev/null || bad "delete $w"; done
is 1 "$(ls .git/arborinth/objects-view | wc -l)" "unused stores removed on delete, the newest kept"
EOF

# run WHO: the case's lines, counted as checks here.
run() {
	local who=$1 line
	shift
	while IFS= read -r line; do
		case "$line" in
		PASS*) pass ;;
		FAIL*) fail "$who: ${line#FAIL }" ;;
		*) echo "$who: $line" >&2 ;;
		esac
	done < <("$@" 2>&1)
}
mkdir "$T/root"
run root bash "$T/case.sh" "$T/root" "$ARB"

user=arbtest
if [ "$(id -u)" != 0 ] || ! command -v runuser >/dev/null || [ ! -u "$(command -v fusermount3)" ]; then
	echo "SKIP (part): the ordinary user's case needs root to switch users, runuser and a setuid fusermount3" >&2
else
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	chmod 0755 "$T"
	U=$T/user
	mkdir "$U"
	# The build tree may sit where the user cannot reach: copy what runs.
	cp "$ARB" "$U/arborinth"
	chown -R "$user" "$U"
	run "$user" runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U" PATH=/usr/bin:/bin \
		bash "$T/case.sh" "$U" "$U/arborinth"
fi
finish
