#!/usr/bin/env bash
# A hostile box against the host-side commands that bring its work home (issue 25): from
# inside a real box it plants, in its own .git, an objects/info/alternates entry naming a
# private repository of the host and a branch ref that is a symlink to that repository's
# ref; then a FIFO as packed-refs and a commondir. CONTROLs show each plant works against
# plain git reading the gitdir (a fetch from it brings the private objects; one with the FIFO
# hangs). Then `arborinth merge`, `export`, `apply`, fork `--from` refuse within seconds with
# one line naming the plant, `git fetch arborinth/NAME` (the export) brings only the
# workspace's own commits, and the origin's store stays clean (`git fsck`, no private
# object). With the plants gone, a commit made in the box merges and fetches. Run as root,
# again without openat2 (its fallback), and, when root, as an ordinary user.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v bwrap >/dev/null || skip "no bwrap"

# within SECS WHAT -- CMD...: expect_status 1 for CMD, and that it returned within SECS.
within() {
	local secs=$1 what=$2 t0 t1
	shift 3
	t0=$(date +%s%N)
	expect_status 1 "$what" -- timeout -s KILL 30 "$@"
	t1=$(date +%s%N)
	[ $(((t1 - t0) / 1000000)) -le $((secs * 1000)) ] && pass ||
		fail "$what took $(((t1 - t0) / 1000000)) ms"
	expect_one_line_error "$what"
	echo "  $what: $ERR" >&2
}

scenario() {
	local R=$T/repo P=$T/private C=$T/control
	local W=$R/.git/arborinth/workspaces/w G secret pcommit legit
	G=$W/git
	mkrepo "$R"
	# The host's private repository the box must never get objects of.
	git init -q -b main "$P"
	echo "PRIVATE-$RANDOM-$$" >"$P/secret.txt"
	git -C "$P" add secret.txt
	git -C "$P" -c user.email=p@p -c user.name=p commit -qm private
	secret=$(git -C "$P" rev-parse HEAD:secret.txt)
	pcommit=$(git -C "$P" rev-parse HEAD)
	ARBW=("$ARB" --workdir "$R")

	expect_status 0 "create" -- "${ARBW[@]}" workspace create w
	# The legit path first: a commit made in the box, exported at the session's end.
	expect_status 0 "legit commit in the box" -- "${ARBW[@]}" shell w -- sh -c \
		'echo legit >legit.txt && git add legit.txt &&
		 git -c user.email=a@b -c user.name=agent commit -qm legit'
	legit=$(git --git-dir="$G" rev-parse refs/heads/arborinth/w)
	git -C "$R" fetch -q arborinth/w && pass || fail "git fetch arborinth/w (legit)"
	expect_eq "$legit" "$(git -C "$R" rev-parse refs/remotes/arborinth/w/arborinth/w)" \
		"the fetch brought the box's commit, exported at the session's end"

	# Plant 1, from inside the box: alternates to the private store, the branch a symlink to
	# the private repository's ref (the box cannot read either; it only names them).
	expect_status 0 "plant alternates and a symlinked ref in the box" -- \
		"${ARBW[@]}" shell w -- sh -c "echo '$P/.git/objects' >>.git/objects/info/alternates &&
		rm .git/refs/heads/arborinth/w &&
		ln -s '$P/.git/refs/heads/main' .git/refs/heads/arborinth/w"
	expect_match "not exported: w/git/objects/info/alternates names a store other" "$ERR" \
		"the session's end refused to export, naming the alternates"
	[ -L "$G/refs/heads/arborinth/w" ] && pass || fail "the symlinked ref is planted"
	# CONTROL: git reading the gitdir as it is follows both and takes the private objects.
	git init -q "$C"
	git -C "$C" fetch -q "$G" refs/heads/arborinth/w:refs/heads/stolen 2>/dev/null &&
		git -C "$C" cat-file -e "$secret" && pass ||
		fail "CONTROL: a plain fetch from the gitdir should bring the private blob"

	within 10 "merge with planted alternates" -- "${ARBW[@]}" merge w
	expect_match "objects/info/alternates names a store other than the origin's" "$ERR" \
		"merge names the alternates"
	within 10 "export with planted alternates" -- "${ARBW[@]}" export w
	within 10 "apply with planted alternates" -- "${ARBW[@]}" apply w
	within 10 "fork --from with planted alternates" -- "${ARBW[@]}" workspace create f1 --from w
	expect_status 0 "git fetch arborinth/w" -- timeout -s KILL 30 git -C "$R" fetch -q arborinth/w
	expect_eq "$legit" "$(git -C "$R" rev-parse refs/remotes/arborinth/w/arborinth/w)" \
		"git fetch arborinth/w brought only the last checked export"
	# The alternates alone (the ref a plain file again, naming the private commit).
	expect_status 0 "point the branch at the private commit in the box" -- \
		"${ARBW[@]}" shell w -- sh -c "rm .git/refs/heads/arborinth/w && echo $pcommit >.git/refs/heads/arborinth/w"
	within 10 "merge of a branch at a private commit" -- "${ARBW[@]}" merge w

	# Plant 2: the symlinked ref alone (alternates as arborinth wrote them).
	expect_status 0 "alternates back, the ref still a symlink" -- "${ARBW[@]}" shell w -- sh -c \
		"grep -v private .git/objects/info/alternates >.git/alt && mv .git/alt .git/objects/info/alternates &&
		 rm .git/refs/heads/arborinth/w && ln -s '$P/.git/refs/heads/main' .git/refs/heads/arborinth/w"
	within 10 "merge through a symlinked ref" -- "${ARBW[@]}" merge w
	expect_match "refs/heads/arborinth/w is a symlink" "$ERR" "merge names the symlinked ref"
	# An object only an alternate would have: the plain ref names the private commit.
	expect_status 0 "the ref a plain file naming the private commit" -- "${ARBW[@]}" shell w -- sh -c \
		"rm .git/refs/heads/arborinth/w && echo $pcommit >.git/refs/heads/arborinth/w"
	within 10 "merge of an object in no store of its own" -- "${ARBW[@]}" merge w
	expect_match "object $pcommit .* is in neither the workspace's own store nor the origin's" "$ERR" \
		"merge names the object"
	expect_status 0 "the branch back at the legit commit" -- "${ARBW[@]}" shell w -- sh -c \
		"echo $legit >.git/refs/heads/arborinth/w"

	# Plant 3: a FIFO as packed-refs and a commondir. The box can make both in its .git;
	# they are made here from outside because the session's own end checkpoint reading a
	# FIFO is issue 25's checkpoint part (another branch).
	mv "$G/packed-refs" "$G/packed-refs.keep" # the origin's branches and tags
	mkfifo "$G/packed-refs"
	# CONTROL: git reading the gitdir hangs on it.
	expect_status 124 "CONTROL: a plain fetch from the gitdir hangs on the FIFO" -- \
		timeout 3 git -C "$C" fetch -q "$G" refs/heads/arborinth/w:refs/heads/x
	within 10 "merge with a FIFO packed-refs" -- "${ARBW[@]}" merge w
	expect_match "packed-refs is not a regular file" "$ERR" "merge names the FIFO"
	within 10 "fork --from with a FIFO packed-refs" -- "${ARBW[@]}" workspace create f2 --from w
	expect_status 0 "git fetch arborinth/w with the FIFO there" -- \
		timeout -s KILL 30 git -C "$R" fetch -q arborinth/w
	mv "$G/packed-refs.keep" "$G/packed-refs"
	ln -s "$P/.git" "$G/commondir.target"
	echo "$P/.git" >"$G/commondir"
	within 10 "merge with a commondir" -- "${ARBW[@]}" merge w
	expect_match "w/git/commondir exists" "$ERR" "merge names commondir"
	rm "$G/commondir" "$G/commondir.target"
	# A symlink anywhere under refs/ (a tag), and an objects directory that is a symlink.
	ln -s "$P/.git/refs/heads/main" "$G/refs/tags/t"
	within 10 "merge with a symlinked tag" -- "${ARBW[@]}" merge w
	rm "$G/refs/tags/t"

	# The origin never got a private object, and its store is whole.
	if git -C "$R" cat-file -e "$secret" 2>/dev/null; then
		fail "the private blob reached the origin"
	else pass; fi
	git -C "$R" cat-file -e "$pcommit" 2>/dev/null && fail "the private commit reached the origin" || pass
	expect_status 0 "git fsck in the origin" -- git -C "$R" fsck --no-progress
	expect_eq "" "$(git -C "$R" branch --list 'f*')" "no fork was made"

	# A workspace made before exports: its remote named the gitdir; the next session's end
	# points it at the export.
	git -C "$R" config remote.arborinth/w.url "$G"
	expect_status 0 "a session" -- "${ARBW[@]}" shell w -- true
	expect_eq "$W/export.git" "$(git -C "$R" config remote.arborinth/w.url)" \
		"the session's end re-pointed the remote at the export"

	# With the plants gone, the legit path: another commit in the box merges and fetches.
	expect_status 0 "second commit in the box" -- "${ARBW[@]}" shell w -- sh -c \
		'echo more >>legit.txt && git -c user.email=a@b -c user.name=agent commit -qam more'
	expect_status 0 "merge" -- timeout -s KILL 30 "${ARBW[@]}" merge w
	expect_match "fast-forward of arborinth/w" "$OUT" "merge fast-forwards"
	expect_eq "legit
more" "$(cat "$R/legit.txt")" "the merged file in the origin"
	expect_status 0 "fork --from w" -- timeout -s KILL 30 "${ARBW[@]}" workspace create f3 --from w
	expect_status 0 "git fsck in the origin after" -- git -C "$R" fsck --no-progress
	git -C "$R" cat-file -e "$secret" 2>/dev/null && fail "private blob in the origin at the end" || pass
}

if [ "${ARB_EXPORT_ATTACK_BODY:-}" = 1 ]; then
	scenario
	finish
	exit 0
fi
scenario
# Again where openat2 is missing (before Linux 5.6, or denied by a filter): the gitdir is
# then walked one component at a time with O_NOFOLLOW, and every check above holds the same.
expect_status 0 "the scenario without openat2" -- env ARBORINTH_FAULT=openat2 \
	ARB_EXPORT_ATTACK_BODY=1 bash "$0"
printf '%s\n' "$OUT" | tail -1
# Again as an ordinary user, when root can make one.
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	chmod 0755 "$T"
	U="$T/user"
	mkdir "$U"
	cp "$ARB" "$U/arborinth"
	cp "$ARB_SRC/tests/integration/lib.sh" "$ARB_SRC/tests/integration/ws_export_attack.sh" "$U/"
	chown -R "$user" "$U"
	expect_status 0 "the scenario as $user" -- runuser -u "$user" -- env HOME="/home/$user" \
		TMPDIR="$U" ARB="$U/arborinth" ARB_SRC="$ARB_SRC" ARB_EXPORT_ATTACK_BODY=1 \
		bash "$U/ws_export_attack.sh"
	printf '%s\n' "$OUT" | tail -1
fi
finish
