#!/usr/bin/env bash
# No git command in the origin damages arborinth's state or a view (issue #31): the state
# lives in .git/arborinth (core/state_dir.c), where git clean, reset, stash, checkout,
# worktree prune and gc never delete. Two workspaces (w1 mounted with a commit a box made,
# w2 with a checkpoint and a session) go through each command; after each, both list, their
# views serve, the audit verifies, log and diff are as before. CONTROL: the same git clean
# against the old layout (<root>/.arborinth, ARBORINTH_TEST_OLD_LAYOUT) destroys state. Then
# the upgrade of an old layout with live views, an audit and checkpoints (a session running
# refuses it; killed at each step, the next command finishes it), and commands run from
# inside a view. As root and, run again by itself, as an ordinary user.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v bwrap >/dev/null || skip "no bwrap"
unset ARBORINTH_TEST_OLD_LAYOUT ARBORINTH_TEST_KILL

a() { "$ARB" --workdir "$R" "$@"; }
# V NAME: the workspace's view, where the layout in use puts it.
V() {
	if [ -n "${ARBORINTH_TEST_OLD_LAYOUT:-}" ]; then
		echo "$R/.arborinth/workspaces/$1/workdir"
	else
		echo "$R/.git/arborinth/workspaces/$1/workdir"
	fi
}

# snapshot: what must not change, in the current repository $R.
snapshot() {
	{
		a workspace list | awk 'NR > 1 {print $1, $2, $3}'
		for w in w1 w2; do
			a audit "$w" --verify | sed 's/, head .*//'
			a log "$w" | sed 's/  20[0-9-]* [0-9:]*//g'
			a diff "$w" --stat
		done
		cat "$(V w1)/boxfile" "$(V w2)/f2"
		git -C "$(V w1)" log --format=%s
	} 2>&1
}

two_workspaces() {
	R=$1
	mkrepo "$R"
	a workspace create w1 >/dev/null
	a workspace create w2 >/dev/null
	a shell w1 -- sh -c 'echo boxed > boxfile && git add boxfile &&
		git -c user.name=b -c user.email=b@x commit -qm "box commit"' >/dev/null
	echo one >"$(V w2)/f2"
	a checkpoint w2 >/dev/null
	a shell w2 -- sh -c 'echo two >> f2' >/dev/null
}

# --- every git command, against the new layout ---------------------------------------------
two_workspaces "$T/repo"
want=$(snapshot)
expect_match "box commit" "$want" "the box's commit is in the view"
expect_match "audit of 'w2': ok" "$want" "w2's audit verifies"
printf 'untracked\n' >"$R/junk"
mkdir -p "$R/build" && printf 'x\n' >"$R/build/o" && printf 'build/\n' >"$R/.gitignore"
check_after() {
	expect_eq "$want" "$(snapshot)" "after $1: workspaces, views, audit, log and diff as before"
	[ -s "$R/.git/arborinth/state.db" ] && pass || fail "after $1: state.db gone"
}
git -C "$R" clean -fdx -q
check_after "git clean -fdx"
[ ! -e "$R/junk" ] && [ ! -e "$R/build" ] && pass || fail "control: git clean -fdx cleaned the origin"
printf 'untracked\n' >"$R/junk"
git -C "$R" clean -ffdx -q
check_after "git clean -ffdx"
printf 'changed\n' >>"$R/README"
git -C "$R" reset -q --hard
check_after "git reset --hard"
printf 'untracked\n' >"$R/junk"
git -C "$R" stash -q -u
[ ! -e "$R/junk" ] && pass || fail "control: git stash -u stashed the untracked file"
check_after "git stash -u"
git -C "$R" stash pop -q >/dev/null
check_after "git stash pop"
rm -f "$R/junk"
git -C "$R" checkout -q -b x
git -C "$R" checkout -q main
check_after "git checkout -b x / back"
git -C "$R" worktree add -q "$T/wt"
git -C "$R" worktree remove "$T/wt"
git -C "$R" worktree prune
check_after "git worktree add / remove / prune"
git -C "$R" gc -q --prune=now
check_after "git gc --prune=now"
expect_status 0 "git fsck in a box after gc" -- a shell w1 -- git fsck --no-progress
expect_status 0 "rewind w2 after gc" -- a rewind w2 --to 2
expect_eq "one" "$(cat "$(V w2)/f2")" "rewind gave w2 its checkpoint back"
want=$(snapshot)

# A linked worktree's state: in the common dir, not under .git/worktrees/ID, so it outlives
# `git worktree prune` once the worktree's folder is gone.
git -C "$R" worktree add -q "$T/lw"
expect_status 0 "create in a linked worktree" -- "$ARB" --workdir "$T/lw" workspace create l1
LV="$R/.git/arborinth/worktrees/lw/workspaces/l1/workdir"
expect_eq "$LV" "$(sed -n 's/^  workdir: //p' <<<"$OUT")" "the linked worktree's view under arborinth/worktrees/ID"
expect_status 0 "a box in the linked worktree's workspace" -- \
	"$ARB" --workdir "$T/lw" shell l1 -- sh -c 'echo wt > wtfile; ls -A "$1"' sh "$R/.git/arborinth"
expect_eq "worktrees" "$OUT" "its box sees none of the main worktree's state"
# Shared with --allow-other (root here: fuse.conf need not allow it): another user passes
# through arborinth/ and worktrees/ (search only) to the view.
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	expect_status 0 "an --allow-other view in the linked worktree" -- \
		"$ARB" --workdir "$T/lw" workspace create l2 --allow-other
	expect_eq "711 711 711" "$(stat -c %a "$R/.git/arborinth" "$R/.git/arborinth/worktrees" \
		"$R/.git/arborinth/worktrees/lw" | tr '\n' ' ' | sed 's/ $//')" "search-only folders above it"
	chmod 0711 "$T"
	expect_status 0 "another user reads the shared view" -- \
		runuser -u nobody -- cat "$R/.git/arborinth/worktrees/lw/workspaces/l2/workdir/README"
	expect_status 2 "and lists none of the state" -- runuser -u nobody -- ls "$R/.git/arborinth/worktrees"
	"$ARB" --workdir "$T/lw" workspace delete --force l2 >/dev/null
fi
fusermount3 -u "$LV"
rm -rf "$T/lw"
git -C "$R" worktree prune
[ ! -e "$R/.git/worktrees/lw" ] && pass || fail "control: prune removed .git/worktrees/lw"
[ -s "$R/.git/arborinth/worktrees/lw/state.db" ] && [ -e "$R/.git/arborinth/worktrees/lw/workspaces/l1/layer/wtfile" ] &&
	pass || fail "the pruned worktree's state and work are kept"
check_after "a linked worktree pruned"

# --- commands from inside a view -------------------------------------------------------------
inview=$(V w1)/src/lib
expect_status 0 "shell from inside the view" -- sh -c "cd '$inview' && '$ARB' shell w1 -- pwd"
expect_eq "$(V w1)" "$OUT" "shell from inside the view runs in w1's workdir"
expect_status 0 "workspace list from inside the view" -- sh -c "cd '$inview' && '$ARB' workspace list"
expect_match "^w2 " "$(awk 'NR > 1' <<<"$OUT")" "the origin's workspaces, not the view's repository"
expect_status 0 "log from inside the view" -- sh -c "cd '$inview' && '$ARB' log w1"
expect_match "box commit" "$OUT" "log w1 from inside the view"
expect_status 0 "diff from inside the view" -- sh -c "cd '$inview' && '$ARB' diff w1 --stat"
expect_match "boxfile" "$OUT" "diff w1 from inside the view"
# A box's decoy: a state directory of its own in its gitdir (.git in a subdirectory is not
# shown to the host at all). The leftmost match, the host's, still decides.
a shell w1 -- sh -c 'mkdir -p .git/arborinth/workspaces/w1/workdir && : > .git/arborinth/state.db' >/dev/null
expect_status 0 "from inside the box's decoy" -- sh -c "cd '$(V w1)/.git/arborinth/workspaces/w1/workdir' && '$ARB' workspace list"
expect_match "^w2 " "$(awk 'NR > 1' <<<"$OUT")" "the decoy is not taken for a state directory"
a shell w1 -- rm -rf .git/arborinth >/dev/null

# --- CONTROL: the old layout, where git clean -fdx destroys ----------------------------------
export ARBORINTH_TEST_OLD_LAYOUT=1
R=$T/old
mkrepo "$R"
a workspace create o1 >/dev/null
a shell o1 -- sh -c 'echo work > w' >/dev/null
[ -s "$R/.arborinth/state.db" ] && [ -e "$R/.arborinth/workspaces/o1/layer/w" ] && pass ||
	fail "control: the old layout made"
git -C "$R" clean -fdx -q 2>/dev/null || true
[ ! -e "$R/.arborinth/state.db" ] && pass || fail "control: git clean -fdx did not delete the old layout's state.db"
[ ! -e "$R/.arborinth/workspaces/o1/layer/w" ] && pass || fail "control: git clean -fdx did not delete the old layer"
expect_eq "" "$(a workspace list 2>/dev/null | awk 'NR > 1')" "control: no workspace left in the old layout"

# --- upgrade: refused while a session runs -------------------------------------------------
R=$T/busy
mkrepo "$R"
a workspace create b1 >/dev/null
a shell b1 -- sleep 30 >/dev/null 2>&1 &
box=$!
for _ in $(seq 100); do a log b1 2>/dev/null | grep -q 'sleep 30' && break; sleep 0.1; done
unset ARBORINTH_TEST_OLD_LAYOUT
expect_status 1 "upgrade while a session runs" -- a workspace list
expect_match "session [0-9]+ of b1 is running" "$ERR" "the running session named"
expect_one_line_error "upgrade while a session runs"
[ -d "$R/.arborinth/workspaces/b1" ] && [ ! -e "$R/.git/arborinth" ] && pass || fail "nothing moved under a session"
kill "$box" 2>/dev/null || true
wait "$box" 2>/dev/null || true
# Another user's old state: never forked into a second state beside it.
if [ "$(id -u)" = 0 ]; then
	R=$T/other
	mkrepo "$R"
	mkdir "$R/.arborinth" && : >"$R/.arborinth/state.db" && chown -R 65534 "$R/.arborinth"
	expect_status 1 "another user's old state" -- a workspace list
	expect_match "belongs to uid 65534: run arborinth as that user" "$ERR" "another user's old state: named"
	[ ! -e "$R/.git/arborinth" ] && pass || fail "no second state made beside another user's"
fi

# --- upgrade: an old layout with live views, audit and checkpoints -------------------------
export ARBORINTH_TEST_OLD_LAYOUT=1
R=$T/up
two_workspaces "$R"
[ -d "$R/.arborinth/workspaces/w1/workdir/src" ] && pass || fail "the old layout's view is mounted"
before=$(snapshot | sed 's/ok, [0-9]* rows/ok/')
unset ARBORINTH_TEST_OLD_LAYOUT
start=$(date +%s%N)
expect_status 0 "upgrade on first use" -- a workspace list
echo "upgrade of 2 mounted workspaces: $((($(date +%s%N) - start) / 1000000)) ms"
[ ! -e "$R/.arborinth" ] && [ -s "$R/.git/arborinth/state.db" ] && [ ! -e "$R/.git/arborinth.upgrade" ] &&
	pass || fail "the state moved, no journal left"
expect_eq "$before" "$(snapshot | sed 's/ok, [0-9]* rows/ok/')" "after the upgrade: the same workspaces, audit, log and diff"
grep -qF " $(V w1) " /proc/self/mountinfo && grep -qF " $(V w2) " /proc/self/mountinfo && pass ||
	fail "both views mounted again at the new place"
expect_eq "$R/.git/arborinth/workspaces/w1/export.git" "$(git -C "$R" config remote.arborinth/w1.url)" "remote URL moved"
expect_status 0 "a box after the upgrade" -- a shell w1 -- sh -c 'cat boxfile; git status --porcelain'
expect_eq "boxed" "$OUT" "the box sees its work, git status clean in its view"
before=$(snapshot | sed 's/ok, [0-9]* rows/ok/')
git -C "$R" clean -fdx -q
expect_eq "$before" "$(snapshot | sed 's/ok, [0-9]* rows/ok/')" "git clean -fdx after the upgrade harms nothing"

# --- an interrupted upgrade finishes on the next command ------------------------------------
for point in stopped moving moved fixed started; do
	R=$T/kill-$point
	export ARBORINTH_TEST_OLD_LAYOUT=1
	mkrepo "$R"
	a workspace create k >/dev/null
	a shell k -- sh -c 'echo k > kf' >/dev/null
	unset ARBORINTH_TEST_OLD_LAYOUT
	st=$({ ARBORINTH_TEST_KILL=$point "$ARB" --workdir "$R" workspace list >/dev/null 2>&1; echo $?; } 2>/dev/null)
	expect_eq 137 "$st" "killed at $point"
	expect_status 0 "the next command after a kill at $point" -- a workspace list
	expect_match "^k +[0-9a-f]+ +yes" "$(awk 'NR > 1' <<<"$OUT")" "killed at $point: listed and mounted"
	[ ! -e "$R/.arborinth" ] && [ ! -e "$R/.git/arborinth.upgrade" ] && pass || fail "killed at $point: move finished"
	expect_eq "k" "$(cat "$(V k)/kf")" "killed at $point: the view serves the work"
	expect_status 0 "killed at $point: audit" -- a audit k --verify
done

# --- across file systems: each entry copied beside its place, checked, renamed, then removed
# (ARBORINTH_TEST_COPY takes that way on one file system; killed after a copy, it resumes).
R=$T/copy
export ARBORINTH_TEST_OLD_LAYOUT=1
two_workspaces "$R"
a shell w1 -- sh -c 'rm -rf src && mkdir src && echo n > src/new && mv README R2' >/dev/null
xattrs() { (cd "$1" && getfattr -R -d -m '^user\.' . 2>/dev/null); }
xa=$(xattrs "$R/.arborinth/workspaces/w1/layer")
expect_match "user.arborinth" "$xa" "the old layer has the view's xattrs"
before=$(snapshot | sed 's/ok, [0-9]* rows/ok/')
unset ARBORINTH_TEST_OLD_LAYOUT
st=$({ ARBORINTH_TEST_COPY=1 ARBORINTH_TEST_KILL=copied "$ARB" --workdir "$R" workspace list >/dev/null 2>&1; echo $?; } 2>/dev/null)
expect_eq 137 "$st" "killed after a copy"
expect_status 0 "the copy resumed" -- env ARBORINTH_TEST_COPY=1 "$ARB" --workdir "$R" workspace list
[ ! -e "$R/.arborinth" ] && [ -z "$(find "$R/.git/arborinth" -maxdepth 1 -name '.*.copy')" ] && pass ||
	fail "copied: the old folder and the copies' temporary names gone"
expect_eq "$before" "$(snapshot | sed 's/ok, [0-9]* rows/ok/')" "copied: the same workspaces, audit, log and diff"
expect_eq "$xa" "$(xattrs "$R/.git/arborinth/workspaces/w1/layer")" "copied: the layer's xattrs and whiteouts"
expect_eq "n" "$(cat "$(V w1)/src/new")" "copied: the view serves the opaque folder"
[ ! -e "$(V w1)/README" ] && pass || fail "copied: the whiteout still hides README"
# A real other file system: the git directory on /dev/shm (a .git file points there).
if [ -d /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$T")" ] && [ -w /dev/shm ]; then
	G=$(mktemp -d /dev/shm/arb-gs.XXXXXX)
	R=$T/sep
	mkdir "$R"
	git -C "$R" init -q -b main --separate-git-dir "$G/sep.git"
	printf 'x\n' >"$R/f" && git -C "$R" add f && git -C "$R" -c user.name=a -c user.email=a@b commit -qm one
	ARBORINTH_TEST_OLD_LAYOUT=1 "$ARB" --workdir "$R" workspace create s >/dev/null
	ARBORINTH_TEST_OLD_LAYOUT=1 "$ARB" --workdir "$R" shell s -- sh -c 'echo s > sf' >/dev/null
	expect_status 0 "upgrade to another file system" -- "$ARB" --workdir "$R" workspace list
	[ ! -e "$R/.arborinth" ] && [ -s "$G/sep.git/arborinth/state.db" ] && pass || fail "moved to $G"
	expect_eq "s" "$(cat "$G/sep.git/arborinth/workspaces/s/workdir/sf")" "the view serves from the other file system"
	expect_status 0 "audit after the copy" -- "$ARB" --workdir "$R" audit s --verify
	expect_status 1 "from inside such a view" -- sh -c "cd '$G/sep.git/arborinth/workspaces/s/workdir' && '$ARB' workspace list"
	expect_match "name the repository with --workdir" "$ERR" "a view of a separate git directory: told what to do"
	"$ARB" --workdir "$R" workspace delete --force s >/dev/null
	rm -rf "$G"
fi

# --- as an ordinary user: this script again, run by the user --------------------------------
if [ "$(id -u)" = 0 ] && [ -z "${ARB_GS_INNER:-}" ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid"
	chmod 0755 "$T"
	U="$T/user"
	mkdir -p "$U"
	cp "$ARB" "$U/arborinth"
	cp "$ARB_SRC/tests/integration/ws_git_safety.sh" "$ARB_SRC/tests/integration/lib.sh" "$U/"
	chown -R "$user" "$U"
	expect_status 0 "the whole test as $user" -- runuser -u "$user" -- env HOME="/home/$user" \
		TMPDIR="$U" ARB="$U/arborinth" ARB_SRC="$ARB_SRC" ARB_GS_INNER=1 bash "$U/ws_git_safety.sh"
	printf '%s\n%s\n' "$OUT" "$ERR" | tail -20
fi
finish
