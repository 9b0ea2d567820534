#!/usr/bin/env bash
# The origin's branches and tags in a real box (core/origin_refs.c): `git log main` and
# `origin/main`, `git diff origin/main`, `git rebase origin/main` after the origin advanced
# (refreshed at the next shell), `git describe --tags`; what the box does to those refs stays
# in the box (CONTROL: the box sees its own move) and the origin's refs never change; another
# workspace's objects stay out of the box (CONTROL: the origin has them). The user's git
# identity arrives, nothing else of their config (credential helper, include, signing).
# fsmonitor with Debian's git and a git >= 2.55 (which takes FUSE for remote): no
# "incompatible with fsmonitor", and the view's answers used (CONTROL: with allowRemote
# off, the new git says so and does not use them). As root, then the same as an ordinary
# user.
#
# The new git: $ARB_TEST_NEW_GIT (a git binary), else the build scripts/newgit.sh caches in
# ${ARB_GIT_CACHE:-/var/cache/arborinth-git}/current (from Debian sid's source; tests/run-all.sh
# runs it before the build), else an older hand-made build in .../git/bin/git, else built
# there once from the git source in $ARB_TEST_GIT_SRC (a source tree or a git directory of
# git.git). Without any of them that part alone is skipped (exit 77 at the end); under CI
# (CI=true) that is a failure.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v bwrap >/dev/null || skip "no bwrap"

cache=${ARB_GIT_CACHE:-/var/cache/arborinth-git}
new_git_version() { "$1" version 2>/dev/null | sed -n 's/^git version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p'; }
new_enough() { # git >= 2.55
	local v
	v=$(new_git_version "$1")
	[ -n "$v" ] && { set -- $v; [ "$1" -gt 2 ] || { [ "$1" = 2 ] && [ "$2" -ge 55 ]; }; }
}
find_new_git() {
	local g src
	for g in ${ARB_TEST_NEW_GIT:-$cache/current/bin/git $cache/git/bin/git}; do
		g=$(readlink -f "$g") || continue
		if [ -x "$g" ] && new_enough "$g"; then echo "$g"; return; fi
	done
	src=${ARB_TEST_GIT_SRC:-}
	[ -n "$src" ] && [ -z "${ARB_TEST_NEW_GIT:-}" ] && [ -w "$(dirname "$cache")" ] || return 0
	# Built once into the cache: a source tree, or git.git's git directory.
	local b="$T/gitsrc"
	mkdir -p "$b" "$cache"
	if [ -f "$src/GIT-VERSION-GEN" ]; then cp -a "$src/." "$b/"; else git --git-dir="$src" archive HEAD | tar -x -C "$b"; fi
	echo "building git from $src into $cache/git (once)" >&2
	nice make -C "$b" -j"$(nproc)" NO_RUST=1 NO_CURL=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PERL=1 \
		NO_PYTHON=1 NO_EXPAT=1 prefix="$cache/git" install >"$T/gitbuild.log" 2>&1 ||
		{ tail -5 "$T/gitbuild.log" >&2; return 0; }
	[ -x "$cache/git/bin/git" ] && new_enough "$cache/git/bin/git" && echo "$cache/git/bin/git"
}

# fsm_check NAME GIT [SHELL OPTIONS]: git status in a box of w with that git. git before 2.43
# gets the view's answers for `git status` only (fs/fsmon.c: its other commands misread
# fsmonitor-valid entries), so there the trace of `git status` shows the answer used; newer
# git keeps the entries fsmonitor-valid (`ls-files -f`: h).
fsm_check() {
	local name=$1 g=$2 probe want
	shift 2
	if "$g" version | awk '{split($3, v, "."); exit !(v[1] > 2 || (v[1] == 2 && v[2] >= 43))}'; then
		probe="$g status --porcelain 2>&1 && $g ls-files -f src/main.c"
		want="^h src/main.c"
	else
		probe="$g status --porcelain >/dev/null && echo again >>run.sh && GIT_TRACE_FSMONITOR=1 $g status --porcelain 2>&1"
		want="fsmonitor_refresh_callback 'run.sh'"
	fi
	expect_status 0 "status with $name" -- "$ARB" shell w "$@" -- sh -c "echo more >>run.sh && $probe"
	if grep -q "incompatible" <<<"$OUT"; then fail "$name: $OUT"; else pass; fi
	expect_match "$want" "$OUT" "$name: the view's fsmonitor answers used"
	# git on the host in the view reads the daemon's config (fs/hostgit.c): the same.
	expect_status 0 "host status with $name" -- sh -c "cd '$V' && echo more >>run.sh && $probe"
	if grep -q "incompatible" <<<"$OUT"; then fail "host $name: $OUT"; else pass; fi
	expect_match "$want" "$OUT" "host $name: the view's fsmonitor answers used"
	[ "$g" != git ] || return 0
	expect_status 0 "CONTROL" -- "$ARB" shell w "$@" -- sh -c \
		"$g -c fsmonitor.allowRemote=false status --porcelain 2>&1 &&
		 $g -c fsmonitor.allowRemote=false ls-files -f src/main.c"
	expect_match "incompatible with fsmonitor" "$OUT" \
		"CONTROL: $name without allowRemote refuses the view"
	expect_match "^H src/main.c" "$OUT" "CONTROL: and does not use its answers"
}

# The checks, in $1 (a fresh directory) as whoever runs them; $2: the new git or "".
checks() {
	local d=$1 NEW=$2 O V head1 main0 feat
	O="$d/o"
	export HOME="$d/home" XDG_CONFIG_HOME="$d/home/.config"
	mkdir -p "$HOME/.config"
	mkrepo "$O"
	# The user's config: identity, and what must not reach the box.
	cat >"$HOME/.gitconfig" <<-EOF
		[user]
			name = Ada \"Box\" Tester
			email = ada@example.com
			signingkey = ABCDEF0123456789
		[init]
			defaultBranch = trunk
		[credential]
			helper = store --file=$d/secret-creds
		[commit]
			gpgSign = true
		[gpg]
			program = /bin/false
		[include]
			path = $d/included.cfg
	EOF
	printf '[alias]\n\tleak = !echo leaked\n[core]\n\tsshCommand = ssh -i %s/key\n' "$d" \
		>"$d/included.cfg"
	git -C "$O" config --unset user.email
	git -C "$O" config --unset user.name
	git -C "$O" -c commit.gpgSign=false tag -a v1 -m "release 1" HEAD~1
	git -C "$O" checkout -qb feat
	echo feat >"$O/feat.txt"
	git -C "$O" add feat.txt
	git -C "$O" -c commit.gpgSign=false commit -qm feat
	git -C "$O" checkout -q main
	feat=$(git -C "$O" rev-parse feat)
	main0=$(git -C "$O" rev-parse main)
	cd "$O"
	expect_status 0 "create" -- "$ARB" workspace create w
	V=$(sed -n 's/^ *workdir: *//p' <<<"$OUT")
	expect_status 0 "host git in the view" -- git -C "$V" \
		cat-file -p origin/feat:feat.txt
	expect_eq "feat" "$OUT" "right after create, the view's git reads the origin's branch"

	# --- the origin's refs in the box ------------------------------------------------------
	expect_status 0 "refs in the box" -- "$ARB" shell w -- sh -c \
		'git rev-parse main origin/main origin/feat origin/HEAD && git describe --tags &&
		 git log --format=%s origin/feat | head -1 && git diff --stat origin/feat | tail -1'
	expect_eq "$(printf '%s\n%s\n%s\n%s\nv1-1-g%s\nfeat\n 1 file changed, 1 deletion(-)' "$main0" \
		"$main0" "$feat" "$main0" "$(git rev-parse --short main)")" "$OUT" \
		"git log main, origin/main, origin/feat, describe, diff origin/feat in the box"
	expect_status 0 "status" -- "$ARB" shell w -- git status -sb
	expect_eq "## arborinth/w...origin/main" "$OUT" "the workspace branch follows origin/main"

	# The origin advances; the box commits; the next shell sees the new origin/main.
	echo more >>"$O/README"
	git -C "$O" -c commit.gpgSign=false commit -qam advanced
	git -C "$O" -c commit.gpgSign=false tag v2
	expect_status 0 "box commit" -- "$ARB" shell w -- sh -c \
		'echo w >wfile && git add wfile && git commit -qm "box work" && git log --format=%an -1'
	expect_eq 'Ada "Box" Tester' "$OUT" "git commit in the box with the user's identity"
	# The refresh (the origin changed) wrote through the view before the box: the box's
	# writes are still its session's in the audit.
	expect_status 0 "audit" -- "$ARB" audit w --json
	expect_match '"path":"wfile".*"session":[0-9]+' "$(grep '"op":"create"' <<<"$OUT")" \
		"the box's writes after a refresh belong to its session"
	expect_status 0 "rebase" -- "$ARB" shell w -- sh -c \
		'git rebase -q origin/main 2>&1 && git log --format=%s -3 && git describe --tags --abbrev=0 &&
		 git diff --name-only origin/main'
	expect_eq "$(printf 'box work\nadvanced\nsecond\nv2\nwfile')" "$OUT" \
		"refreshed at the next shell: rebase onto the new origin/main, its tag there"

	# New branches (a new directory), packed refs: seen at the next start too.
	git -C "$O" branch topic/x HEAD~1
	git -C "$O" pack-refs --all
	git -C "$O" branch -f feat HEAD
	expect_status 0 "new refs" -- "$ARB" shell w -- git rev-parse origin/topic/x origin/feat
	expect_eq "$(git -C "$O" rev-parse topic/x feat)" "$OUT" "a new nested branch and a packed one refreshed"

	# The box plants a symlink where the refresh writes: nothing is written through it, the
	# box still starts (a warning), and the target is untouched.
	mkdir "$d/target"
	git -C "$O" -c commit.gpgSign=false commit -q --allow-empty -m bump
	expect_status 0 "plant" -- "$ARB" shell w -- sh -c \
		"rm -rf .git/refs/remotes/origin && ln -s '$d/target' .git/refs/remotes/origin"
	git -C "$O" -c commit.gpgSign=false commit -q --allow-empty -m bump2
	expect_status 0 "repair" -- "$ARB" shell w -- sh -c 'rm .git/refs/remotes/origin'
	expect_match "warning: the origin's branches were not refreshed" "$ERR" "the refresh refuses the symlink"
	expect_eq "" "$(ls -A "$d/target")" "nothing written through the box's symlink"
	expect_status 0 "repaired" -- "$ARB" shell w -- git rev-parse origin/main
	expect_eq "$(git -C "$O" rev-parse main)" "$OUT" "refreshed again once the box removed it"
	expect_status 0 "reset" -- "$ARB" shell w -- git reset -q --hard origin/main~1

	# --- nothing flows back ----------------------------------------------------------------
	local before after
	before=$(git -C "$O" for-each-ref --format='%(refname) %(objectname)')
	expect_status 0 "box moves refs" -- "$ARB" shell w -- sh -c \
		'echo m >merged.txt && git add merged.txt && git commit -qm merged &&
		 f=$(git commit-tree HEAD^{tree} -p HEAD -m forged) &&
		 git update-ref refs/remotes/origin/main $f && git update-ref refs/heads/main $f &&
		 git tag -f v1 HEAD >/dev/null && git rev-parse HEAD origin/main main v1^{commit}'
	local forged
	head1=$(printf '%s\n' "$OUT" | sed -n 1p)
	forged=$(printf '%s\n' "$OUT" | sed -n 2p)
	expect_eq "$(printf '%s\n%s\n%s\n%s' "$head1" "$forged" "$forged" "$head1")" "$OUT" \
		"CONTROL: the box's own moves (origin/main and main at a forged commit) are visible in the box"
	expect_status 0 "export" -- "$ARB" export w
	expect_status 0 "shell again" -- "$ARB" shell w -- git rev-parse v1^{commit}
	expect_eq "$head1" "$OUT" "a tag the box moved stays the box's at refresh"
	expect_status 0 "fetch" -- git fetch -q arborinth/w
	after=$(git -C "$O" for-each-ref --format='%(refname) %(objectname)' | grep -v '^refs/remotes/arborinth/w/')
	expect_eq "$before" "$after" "the origin's branches and tags unchanged by the box"
	expect_eq "$(git -C "$O" for-each-ref --format='%(refname) %(objectname)' refs/remotes/arborinth/w/)" \
		"refs/remotes/arborinth/w/arborinth/w $head1" "export and fetch took the workspace branch only"
	expect_status 0 "merge" -- "$ARB" merge w
	expect_status 0 "merged" -- git merge-base --is-ancestor "$head1" main
	expect_status 1 "the forged commit" -- git cat-file -e "$forged"
	expect_eq "" "$(git branch -a --contains "$head1" 2>/dev/null | grep -v -e main -e arborinth/w)" \
		"merge took the workspace branch, never the box's origin/main (its commit is not in the origin)"

	# --- what the box does not see ---------------------------------------------------------
	expect_status 0 "other ws" -- "$ARB" workspace create other
	expect_status 0 "other commit" -- "$ARB" shell other -- sh -c \
		'echo secret >s && git add s && git commit -qm s && git rev-parse HEAD'
	local secret=$OUT
	expect_status 0 "export other" -- "$ARB" export other
	expect_status 0 "fetch other" -- git fetch -q arborinth/other
	expect_status 0 "CONTROL: the origin has it" -- git cat-file -e "$secret"
	expect_status 1 "another workspace's commit" -- "$ARB" shell w -- git cat-file -e "$secret"
	expect_status 0 "shell" -- "$ARB" shell w -- sh -c 'git rev-parse refs/remotes/arborinth/other/arborinth/other 2>&1 || echo none'
	expect_match "none" "$OUT" "no workspace's remote-tracking branch in the box"

	# --- identity and nothing else -----------------------------------------------------------
	expect_status 0 "box config" -- "$ARB" shell w -- sh -c \
		'git config --local --list; git config --global --list 2>&1 || :'
	expect_match 'user.name=Ada "Box" Tester' "$OUT" "user.name arrives"
	expect_match 'user.email=ada@example.com' "$OUT" "user.email arrives"
	expect_match 'init.defaultbranch=trunk' "$OUT" "init.defaultBranch arrives"
	expect_match 'commit.gpgsign=false' "$OUT" "signing off"
	if grep -Eqi 'credential|signingkey|gpg.program|include|alias|sshcommand|secret-creds' <<<"$OUT"; then
		fail "the box's git config has more than the identity: $OUT"
	else pass; fi
	expect_status 0 "CONTROL: the host's config has them" -- git config --list
	expect_match 'credential.helper=store' "$OUT" "CONTROL: the helper is in the user's config"
	expect_match 'alias.leak=' "$OUT" "CONTROL: the include is followed on the host"

	# --- fsmonitor ------------------------------------------------------------------------
	fsm_check "Debian's $(git version)" git
	[ -z "$NEW" ] || fsm_check "$("$NEW" version)" "$NEW" --mount "ro:$(dirname "$(dirname "$NEW")")"
	cd /
}

NEW=$(find_new_git)
if [ "${ARB_ORIGIN_REFS_INNER:-}" = 1 ]; then
	checks "$T/u" "${ARB_TEST_NEW_GIT:-}"
	finish
	exit
fi
mkdir "$T/root"
checks "$T/root" "$NEW"

# The same as an ordinary user.
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	chmod 0755 "$T"
	U="$T/user"
	mkdir "$U"
	cp "$ARB" "$U/arborinth"
	cp "$ARB_SRC"/tests/integration/ws_origin_refs.sh "$ARB_SRC"/tests/integration/lib.sh "$U/"
	chown -R "$user" "$U"
	expect_status 0 "as $user" -- runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U" \
		ARB="$U/arborinth" ARB_SRC="$ARB_SRC" ARB_ORIGIN_REFS_INNER=1 ARB_TEST_NEW_GIT="$NEW" \
		bash "$U/ws_origin_refs.sh"
	printf '%s\n' "$OUT" | tail -1
fi
if [ -z "$NEW" ] && [ "${CI:-}" = true ]; then
	fail "no git >= 2.55 under CI: scripts/newgit.sh (run by tests/run-all.sh) must build it into $cache"
elif [ -z "$NEW" ] && [ "$FAILS" = 0 ]; then
	finish >&2
	skip "the git >= 2.55 part only: no new git (run scripts/newgit.sh, or set ARB_TEST_NEW_GIT)"
fi
finish
