#!/usr/bin/env bash
# Submodules in the view: one the origin initialised (and its own, nested) is there at the
# commit the superproject records, read from the origin's .git/modules store; git in a box
# finds it clean, `git submodule status` right, and can edit and commit in it; one the origin
# has not initialised is an empty directory and create names it; a .gitmodules name that
# would leave .git/modules is refused (a sane name for the same store is the control). The box
# reads no object of a submodule's store that the recorded commit does not reach. Run as root,
# then (when root) the same as an ordinary user.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v bwrap >/dev/null || skip "no bwrap"

gitc() { git -c protocol.file.allow=always -c user.email=t@example.com -c user.name=tester "$@"; }
mk() { # mk DIR FILE TEXT: a repository with one commit
	git init -q -b main "$1"
	printf '%s\n' "$3" >"$1/$2"
	gitc -C "$1" add -A
	gitc -C "$1" commit -q -m "$2"
}

scenario() {
	local R=$T/r V
	mkdir -p "$R"
	mk "$R/nest" nfile "nested content"
	mk "$R/lib1" file1 "lib1 content"
	gitc -C "$R/lib1" submodule add -q "$R/nest" nest
	gitc -C "$R/lib1" commit -q -m "add nest"
	mk "$R/lib2" file2 "lib2 content"
	mk "$R/bait" secret.txt "bait secret"
	mk "$R/super" top.txt "top"
	gitc -C "$R/super" submodule add -q "$R/lib1" lib1
	gitc -C "$R/super" submodule add -q "$R/lib2" lib2
	gitc -C "$R/super" commit -q -m "add submodules"
	gitc -C "$R/super" submodule update -q --init --recursive
	# lib2: not initialised in the origin (as a clone without --recurse-submodules leaves it).
	gitc -C "$R/super" submodule deinit -q -f lib2
	rm -rf "$R/super/.git/modules/lib2"
	# Two gitlinks to the bait's commit: one named to escape .git/modules (where the bait's
	# store is planted: .git/modules/../../etc is the checkout's etc/), one named sanely.
	local bait
	bait=$(git -C "$R/bait" rev-parse HEAD)
	git clone -q --bare "$R/bait" "$R/super/etc"
	git clone -q --bare "$R/bait" "$R/super/.git/modules/evilctl"
	printf 'etc/\n' >>"$R/super/.git/info/exclude"
	git -C "$R/super" update-index --add --cacheinfo "160000,$bait,evil"
	git -C "$R/super" update-index --add --cacheinfo "160000,$bait,evilctl"
	git config -f "$R/super/.gitmodules" "submodule.../../etc.path" evil
	git config -f "$R/super/.gitmodules" "submodule.evilctl.path" evilctl
	gitc -C "$R/super" add .gitmodules
	gitc -C "$R/super" commit -q -m "bait"
	# An object in lib1's store the recorded commit does not reach.
	local hidden
	hidden=$(printf 'unreachable secret\n' | git --git-dir="$R/super/.git/modules/lib1" hash-object -w --stdin)

	expect_status 0 "create" -- "$ARB" --workdir "$R/super" workspace create w
	expect_match "not initialised in the origin, empty in the view: lib2 " "$ERR" \
		"create names the uninitialised submodule"
	expect_match "refused, empty in the view: evil$" "$ERR" "create names the refused one"
	expect_eq 2 "$(printf '%s\n' "$ERR" | grep -c .)" "one line each"
	V=$("$ARB" --workdir "$R/super" workspace info w --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["workdir"])')
	expect_status 0 "info" -- "$ARB" --workdir "$R/super" workspace info w
	expect_match "lib1/nest [0-9a-f]{12} \(in the view\)" "$OUT" "info lists the nested one"
	expect_match "lib2 [0-9a-f]{12} \(empty: not initialised" "$OUT" "info lists lib2"

	# The view, from the host.
	expect_eq "lib1 content" "$(cat "$V/lib1/file1")" "submodule file"
	expect_eq "nested content" "$(cat "$V/lib1/nest/nfile")" "nested submodule file"
	expect_eq "" "$(ls -A "$V/lib2")" "uninitialised submodule is empty"
	expect_eq "" "$(ls -A "$V/evil")" "the refused name's directory is empty"
	expect_eq "bait secret" "$(cat "$V/evilctl/secret.txt")" "control: the same commit under a sane name"

	# In a box.
	local lib1 nest
	lib1=$(git -C "$R/super" rev-parse HEAD:lib1)
	nest=$(git -C "$R/lib1" rev-parse HEAD:nest)
	expect_status 0 "box: status" -- "$ARB" --workdir "$R/super" shell w -- git status --porcelain
	expect_eq "" "$OUT" "git status clean in the box"
	expect_status 0 "box: submodule status" -- "$ARB" --workdir "$R/super" shell w -- \
		git submodule status --recursive -- lib1 lib2
	expect_match "^ $lib1 lib1( |$)" "$OUT" "submodule status: lib1 checked out at the recorded commit"
	expect_match "^ $nest lib1/nest( |$)" "$OUT" "submodule status: the nested one too"
	expect_match "^-[0-9a-f]{40} lib2$" "$OUT" "submodule status: lib2 not initialised"
	expect_status 0 "box: log" -- "$ARB" --workdir "$R/super" shell w -- git -C lib1 log -1 --format=%H
	expect_eq "$lib1" "$OUT" "git -C lib1 log -1"
	expect_status 0 "box: cat" -- "$ARB" --workdir "$R/super" shell w -- cat lib1/nest/nfile
	expect_eq "nested content" "$OUT" "the box reads the nested submodule's file"
	expect_status 0 "box: edit" -- "$ARB" --workdir "$R/super" shell w -- sh -c \
		'echo more >>lib1/file1 && git status --porcelain && git -C lib1 status --porcelain'
	expect_match "^ M lib1$" "$OUT" "the superproject sees lib1 modified"
	expect_match "^ M file1$" "$OUT" "the submodule sees file1 modified"
	expect_status 0 "box: commit" -- "$ARB" --workdir "$R/super" shell w -- sh -c \
		'git -C lib1 -c user.email=a@b -c user.name=agent commit -qam "agent edit" &&
		 git -C lib1 log -1 --format=%s && git -C lib1 status --porcelain && git status --porcelain'
	expect_eq "$(printf 'agent edit\n M lib1')" "$OUT" "commit inside the submodule"
	# A checkpoint keeps the gitlink: the submodule's files are its own repository's to commit.
	expect_status 0 "checkpoint" -- "$ARB" --workdir "$R/super" checkpoint w
	expect_status 0 "diff" -- "$ARB" --workdir "$R/super" diff w
	case "$OUT" in
	*"160000"* | *"lib1/file1"*) fail "the checkpoint replaced the gitlink lib1: $OUT" ;;
	*) pass ;;
	esac
	# So a rewind gives the superproject back and leaves the submodule's files as they are.
	local ck
	ck=$("$ARB" --workdir "$R/super" checkpoint w | sed -n 's/^checkpoint \([0-9]*\) of.*/\1/p')
	expect_status 0 "box: edit top" -- "$ARB" --workdir "$R/super" shell w -- sh -c \
		'echo changed >top.txt && echo again >>lib1/file1'
	expect_status 0 "rewind" -- "$ARB" --workdir "$R/super" rewind w --to "$ck"
	expect_eq "top" "$(cat "$V/top.txt")" "rewind gave top.txt back"
	expect_eq "$(printf 'lib1 content\nmore\nagain')" "$(cat "$V/lib1/file1")" \
		"and left the submodule's files as they were"
	expect_status 0 "box: status after rewind" -- "$ARB" --workdir "$R/super" shell w -- \
		git -C lib1 status --porcelain
	expect_eq " M file1" "$OUT" "the submodule still sees its edit"
	# Objects: the box sees what the recorded commit reaches, not the rest of the store.
	git --git-dir="$R/super/.git/modules/lib1" cat-file -e "$hidden" && pass ||
		fail "control: the origin's store of lib1 has the unreachable object"
	expect_status 1 "box: unreachable object" -- "$ARB" --workdir "$R/super" shell w -- \
		git -C lib1 cat-file -e "$hidden"
	expect_status 0 "box: reachable object" -- "$ARB" --workdir "$R/super" shell w -- \
		git -C lib1 cat-file -e "$lib1:file1"
	# Create looked the submodules up once and recorded them in the workspace's own folder
	# (out of the box's reach); a box's start reads the record and does not walk .gitmodules
	# and the origin's modules/ again (strace, where there is one). The control: without a
	# record (a workspace of an older version) the walk happens, and everything still works.
	local root
	root=$("$ARB" --workdir "$R/super" workspace info w --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["root"])')
	expect_eq "p 0 $lib1 lib1 lib1 modules/lib1" "$(sed -n 2p "$root/submodules")" \
		"create recorded lib1"
	expect_eq "p 1 $nest nest lib1/nest modules/lib1/modules/nest" \
		"$(sed -n 3p "$root/submodules")" "and its nested one"
	expect_eq "a r p" "$(sed -n '4,$p' "$root/submodules" | cut -c1 | tr '\n' ' ' | sed 's/ $//')" \
		"lib2 absent, evil refused, evilctl present"
	local walked="\"$R/super/.git/modules/lib1/HEAD\""
	# LeakSanitizer cannot run under ptrace: no leak check for the traced commands.
	local traced=(env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -e trace=%file)
	if command -v strace >/dev/null; then
		expect_status 0 "box start, traced" -- "${traced[@]}" -o "$T/trace1" \
			"$ARB" --workdir "$R/super" shell w -- cat lib1/nest/nfile
		expect_eq "nested content" "$OUT" "the traced box reads the nested submodule"
		grep -qF "$walked" "$T/trace1" && fail "box start walked the origin's modules/ again" || pass
	fi
	mv "$root/submodules" "$T/record"
	if command -v strace >/dev/null; then
		expect_status 0 "box start without a record, traced" -- "${traced[@]}" -o "$T/trace2" \
			"$ARB" --workdir "$R/super" shell w -- cat lib1/nest/nfile
		grep -qF "$walked" "$T/trace2" && pass || fail "control: without a record the walk is seen"
	else
		expect_status 0 "box start without a record" -- "$ARB" --workdir "$R/super" shell w -- \
			cat lib1/nest/nfile
	fi
	expect_eq "nested content" "$OUT" "without a record: the box reads the nested submodule"
	expect_status 0 "info without a record" -- "$ARB" --workdir "$R/super" workspace info w
	expect_match "lib1/nest [0-9a-f]{12} \(in the view\)" "$OUT" "without a record: info lists it"
	printf 'arborinth-submodules 1\np 0 %s lib1 lib1 ../../x\n' "$lib1" >"$root/submodules"
	expect_status 0 "box start with a bad record" -- "$ARB" --workdir "$R/super" shell w -- \
		cat lib1/nest/nfile
	expect_eq "nested content" "$OUT" "a record that does not read is not trusted: the walk"
	mv "$T/record" "$root/submodules"
	# A workspace made before submodules were shown (no gitdir for them) keeps empty ones.
	expect_status 0 "create w2" -- "$ARB" --workdir "$R/super" workspace create w2
	local info
	info=$("$ARB" --workdir "$R/super" workspace info w2 --json)
	# (its submodule indexes came from the cache w filled: as clean)
	expect_status 0 "box: w2 status" -- "$ARB" --workdir "$R/super" shell w2 -- sh -c \
		'git status --porcelain; git -C lib1/nest status --porcelain; cat lib1/nest/nfile'
	expect_eq "nested content" "$OUT" "a second workspace of the base: clean, from the cache"
	expect_status 0 "unmount w2" -- "$ARB" --workdir "$R/super" workspace unmount w2
	rm -rf "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["root"])' "$info")/git/modules"
	rm "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["root"])' "$info")/submodules"
	expect_status 0 "mount w2" -- "$ARB" --workdir "$R/super" workspace mount w2
	V=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["workdir"])' "$info")
	expect_eq "" "$(ls -A "$V/lib1")" "an older workspace's lib1 stays empty"
	expect_status 0 "box: status w2" -- "$ARB" --workdir "$R/super" shell w2 -- git status --porcelain
	expect_eq "" "$OUT" "and git status is clean in it"
	# The boxes' submodule stores go with the last workspace that shows them.
	local state
	state=$("$ARB" --workdir "$R/super" project info --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["state_dir"])')
	expect_eq 3 "$(ls "$state/objects-view/modules" | grep -c .)" "stores of lib1, nest, evilctl"
	expect_eq 3 "$(ls "$state/index-cache/modules" | grep -c .)" "indexes of lib1, nest, evilctl"
	expect_status 0 "gc" -- "$ARB" --workdir "$R/super" gc
	expect_eq 3 "$(ls "$state/objects-view/modules" | grep -c .)" "gc keeps the stores boxes use"
	expect_eq 3 "$(ls "$state/index-cache/modules" | grep -c .)" "and their indexes"
	# What a delete killed before its prune leaves: a store and an index of a submodule commit
	# no view shows. gc --dry-run names them and changes nothing; gc takes them and only them.
	local gone=0123456789abcdef0123456789abcdef01234567 one
	one=$(ls "$state/objects-view/modules" | head -1)
	cp -a "$state/objects-view/modules/$one" "$state/objects-view/modules/$gone"
	cp "$(ls -d "$state/index-cache/modules/"* | head -1)" "$state/index-cache/modules/$gone-1"
	expect_status 0 "gc --dry-run" -- "$ARB" --workdir "$R/super" gc --dry-run --json
	expect_eq "index-cache/modules/$gone-1 objects-view/modules/$gone" \
		"$(printf '%s' "$OUT" | python3 -c 'import json, os, sys
d = json.load(sys.stdin)
print(" ".join(sorted(os.path.relpath(i["path"], sys.argv[1]) for i in d["items"]
                      if i["removed"] and i["what"].startswith("submodule"))))' "$state")" \
		"the dry run names the leftover store and index, and nothing a view shows"
	expect_eq 4 "$(ls "$state/objects-view/modules" | grep -c .)" "the dry run changed nothing"
	expect_status 0 "gc takes the leftovers" -- "$ARB" --workdir "$R/super" gc
	expect_match "removed submodule store .*/objects-view/modules/$gone" "$OUT" "gc names the store"
	expect_eq 3 "$(ls "$state/objects-view/modules" | grep -c .)" "the stores views show stay"
	expect_eq 3 "$(ls "$state/index-cache/modules" | grep -c .)" "and their indexes"
	expect_status 0 "delete w" -- "$ARB" --workdir "$R/super" workspace delete w
	expect_eq 3 "$(ls "$state/objects-view/modules" | grep -c .)" "kept while w2 shows them"
	expect_status 0 "gc beside w2 (no record: the walk)" -- "$ARB" --workdir "$R/super" gc
	expect_eq 3 "$(ls "$state/objects-view/modules" | grep -c .)" "gc keeps what w2 shows"
	expect_status 0 "delete w2" -- "$ARB" --workdir "$R/super" workspace delete w2
	expect_eq 0 "$(ls "$state/objects-view/modules" | grep -c .)" "removed with the last"
	expect_eq 0 "$(ls "$state/index-cache/modules" | grep -c .)" "their indexes too"
}

if [ "${1:-}" = --inner ]; then
	scenario
	finish
	exit 0
fi
scenario
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid"
	chmod 0755 "$T"
	U="$T/user"
	mkdir "$U"
	cp "$ARB" "$U/arborinth"
	cp "$0" "$ARB_SRC/tests/integration/lib.sh" "$U/"
	chown -R "$user" "$U"
	expect_status 0 "as $user" -- runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U" \
		ARB="$U/arborinth" ARB_SRC="$ARB_SRC" bash "$U/$(basename "$0")" --inner
	printf '%s\n' "$OUT" | tail -1
fi
finish
