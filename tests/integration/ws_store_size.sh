#!/usr/bin/env bash
# The base's object store (core/objects_view.c, core/objects_pack.c) on a delta-heavy history:
# one 256 KB file changed by a line in each of 80 commits, packed by `git gc` in the origin.
# The store of the first create stays within 2x of the origin's pack, and holds the history
# only (an unreachable blob of the origin is not in it; CONTROL: the origin has it, and the
# store has the first version of the file). CONTROL: with the host's git failing, the
# fallback walk stores every version whole and the same bound fails (the test can fail).
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"

O="$T/o"
mkrepo "$O"
cd "$O"
head -c 196608 /dev/urandom | base64 >big.txt
git add big.txt
git commit -qm big
first=$(git rev-parse HEAD:big.txt)
for i in $(seq 1 80); do
	sed -i "$((i * 40))s/.*/changed $i/" big.txt
	git commit -qam "change $i"
done
secret=$(printf 'SECRET-%s\n' "$$" | git hash-object -w --stdin)
git gc -q
base=$(git rev-parse HEAD)
pack=$(du -sb .git/objects/pack | cut -f1)
whole=$(git rev-list --objects HEAD | cut -d' ' -f1 |
	git cat-file --batch-check='%(objectsize)' | awk '{s += $1} END {print s}')
# The history is delta-heavy: its objects whole are many times the pack.
[ "$whole" -gt $((10 * pack)) ] && pass || fail "not delta-heavy: $whole bytes whole, pack $pack"

state=$("$ARB" project info --json | sed -n 's/^ *"state_dir": "\(.*\)",$/\1/p')
store="$state/objects-view/$base"
expect_status 0 "create" -- "$ARB" workspace create w
size=$(du -sb "$store" | cut -f1)
echo "origin pack: $pack bytes; store: $size bytes; the history whole: $whole bytes" >&2
[ "$size" -le $((2 * pack)) ] && pass || fail "the store is $size bytes, over 2x the origin's pack ($pack)"
expect_status 0 "the store has the history" -- env GIT_OBJECT_DIRECTORY="$store" \
	GIT_ALTERNATE_OBJECT_DIRECTORIES= git cat-file -p "$first"
expect_eq "$(git cat-file -p "$first")" "$OUT" "CONTROL: the first version of big.txt is in the store"
expect_status 0 "the origin has the secret" -- git cat-file -p "$secret"
expect_match "^SECRET-" "$OUT" "CONTROL: the origin has the unreachable blob"
expect_status 128 "the store lacks the secret" -- env GIT_OBJECT_DIRECTORY="$store" \
	GIT_ALTERNATE_OBJECT_DIRECTORIES= git cat-file -p "$secret"
[ -z "$(ls -A "$store/info" 2>/dev/null)" ] && pass || fail "the store has info/: $(ls -A "$store/info")"
expect_status 0 "fsck of the store" -- env GIT_OBJECT_DIRECTORY="$store" \
	GIT_ALTERNATE_OBJECT_DIRECTORIES= git fsck --no-dangling --connectivity-only "$base"
expect_status 0 "log in the box" -- "$ARB" shell w -- sh -c 'git log --oneline | wc -l'
expect_eq 83 "$OUT" "the whole history in the box"

# CONTROL: the host's git fails: the walk stores every version whole, over the bound.
expect_status 0 "delete" -- "$ARB" workspace delete --force w
rm -rf "$state/objects-view"
mkdir "$T/nogit"
printf '#!/bin/sh\nexit 1\n' >"$T/nogit/git"
chmod +x "$T/nogit/git"
expect_status 0 "create with no working git" -- env PATH="$T/nogit:$PATH" "$ARB" workspace create w
size=$(du -sb "$store" | cut -f1)
echo "fallback store: $size bytes" >&2
[ "$size" -gt $((2 * pack)) ] && pass || fail "CONTROL: the walk's store is $size bytes, within 2x ($pack)"
expect_status 0 "log in the box, fallback store" -- "$ARB" shell w -- sh -c 'git log --oneline | wc -l'
expect_eq 83 "$OUT" "CONTROL: the fallback store holds the history too"
finish
