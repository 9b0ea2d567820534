#!/usr/bin/env bash
# Attacks on checkpoints, undo and review from inside a real box (issue 25), as root and as
# an ordinary user. The box writes what it likes into the view's .git (the workspace's
# gitdir): forged checkpoint commits with tree entries named "../../../../../.bash_aliases",
# a forged start checkpoint that hides its change, refs/arborinth/checkpoints and logs made
# symlinks to the origin's refs and to a folder of the user's, a FIFO as packed-refs. Each
# attack has a control showing its planted state is really there (what the old code read and
# wrote through); then it must hold: nothing planted anywhere, the origin's git fsck clean,
# every host command back within seconds (a refusal in one line), log/diff/rewind telling
# the session's real change.
# Under /var/tmp, not /tmp: the box's /tmp is its own, which would hide the paths probed.
export TMPDIR=${TMPDIR:-/var/tmp}
[ "$TMPDIR" != /tmp ] || TMPDIR=/var/tmp
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user and pid namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"

# jpath JSON EXPR: a value of a JSON document (python3, standard library).
jpath() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

# The session that ran last in workspace w.
last_session() {
	local j
	j=$(timeout 20 "$ARB" log w --json)
	jpath "$j" '[s for s in d["sessions"]][-1]["session"]'
}

# view_hash: tree_hash of the view without its .git (the box's, which rewind leaves alone).
view_hash() {
	(cd "$V" && find . -path ./.git -prune -o -printf '%p %m %s %l\n' | LC_ALL=C sort &&
		find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
		sha256sum | cut -d' ' -f1
}

# inbox SCRIPT: runs SCRIPT with sh in a box over w (within 60 s), output in OUT.
inbox() { expect_status 0 "box: $1" -- timeout 60 "$ARB" shell w -- sh -c "$1"; }

attacks() {
	export HOME=$T/home
	mkdir -p "$HOME" "$T/victim"
	unset XDG_CACHE_HOME XDG_RUNTIME_DIR
	mkrepo "$T/repo"
	cd "$T/repo"
	"$ARB" workspace create w >/dev/null
	WS=$T/repo/.git/arborinth/workspaces/w
	V=$WS/workdir
	local marker=$T/.marker
	touch "$marker"

	# --- git keeps working in the box; a plain session is logged as it ran --------------
	inbox 'echo one >> README && git add README && git -c user.name=a -c user.email=a@b commit -qm one && git status --porcelain | wc -l'
	expect_eq "0" "$OUT" "git commit and status work in the box"
	[ ! -e "$WS/git/refs/arborinth/checkpoints" ] && pass ||
		fail "no checkpoint ref is written into the gitdir any more"
	[ -d "$WS/checkpoints.git" ] && pass || fail "the checkpoint store is beside the gitdir"
	inbox "test -e '$WS/checkpoints.git' && echo seen || echo hidden"
	expect_eq "hidden" "$OUT" "the box cannot reach the checkpoint store"
	inbox "test -e .git/objects && touch .git/probe && rm .git/probe && echo seen || echo hidden"
	expect_eq "seen" "$OUT" "control: the box reaches and writes the gitdir (the old store)"

	# --- 1: a forged checkpoint whose tree climbs out with "..", into $HOME ---------------
	local before
	before=$(view_hash)
	# A raw tree (git mktree refuses such names): a blob named ../../../../../.bash_aliases
	# and a folder src whose entry climbs too; its commit planted on every checkpoint ref.
	inbox 'b=$(printf "echo PWNED\n" | git hash-object -w --stdin) &&
		sub=$(python3 -c "import sys; sys.stdout.buffer.write(b\"100644 ../../../../../../evil\0\" + bytes.fromhex(sys.argv[1]))" $b | git hash-object -t tree --literally -w --stdin) &&
		t=$(python3 -c "import sys; sys.stdout.buffer.write(b\"100644 ../../../../../.bash_aliases\0\" + bytes.fromhex(sys.argv[1]) + b\"40000 src\0\" + bytes.fromhex(sys.argv[2]))" $b $sub | git hash-object -t tree --literally -w --stdin) &&
		c=$(git -c user.name=a -c user.email=a@b commit-tree $t -m forged) &&
		for n in $(seq 1 40); do git update-ref refs/arborinth/checkpoints/$n $c; done &&
		echo attack1 > a1.txt && echo planted'
	expect_eq "planted" "$OUT" "attack 1 planted"
	local s1
	s1=$(last_session)
	# Control: the forged name is in the gitdir, where the old rewind read checkpoint 1 from.
	expect_status 0 "control: the forged checkpoint is in the gitdir" -- \
		git --git-dir "$WS/git" ls-tree --name-only refs/arborinth/checkpoints/1
	expect_match '^\.\./\.\./\.\./\.\./\.\./\.bash_aliases$' "$OUT" \
		"control: the gitdir's checkpoint 1 names ../../../../../.bash_aliases"
	expect_status 0 "rewind --before-session $s1" -- timeout 30 "$ARB" rewind w --before-session "$s1"
	expect_eq "$before" "$(view_hash)" "rewind gives back the tree from before, byte for byte"
	# Naming the box's own ref (a revision of its repository) is refused, in one line.
	local h
	h=$(view_hash)
	expect_status 1 "rewind to the box's forged ref" -- \
		timeout 30 "$ARB" rewind w --to refs/arborinth/checkpoints/1
	expect_one_line_error "rewind to a forged tree"
	expect_match "refusing a tree entry named '\.\./\.\./\.\./\.\./\.\./\.bash_aliases'" "$ERR" \
		"the refusal names the entry"
	expect_status 1 "restore from the box's forged ref" -- \
		timeout 30 "$ARB" restore w src --at refs/arborinth/checkpoints/2
	expect_one_line_error "restore from a forged tree"
	expect_eq "$h" "$(view_hash)" "the refused rewind and restore changed nothing"
	[ ! -e "$HOME/.bash_aliases" ] && pass || fail "~/.bash_aliases was written"
	expect_eq "" "$(find "$T" / -xdev \( -name .bash_aliases -o -name evil \) -newer "$marker" \
		2>/dev/null | grep -v "^$T/repo/.git/arborinth/workspaces/w/git/" | head -3)" \
		"no planted file anywhere"

	# --- 2: a forged start checkpoint that makes review and undo lie ---------------------
	inbox 'echo evil > planted.txt && git add -A && t=$(git write-tree) &&
		c=$(git -c user.name=a -c user.email=a@b commit-tree $t -m forged) &&
		for n in $(seq 1 60); do git update-ref refs/arborinth/checkpoints/$n $c; done && echo ok'
	local s2
	s2=$(last_session)
	# Control: the gitdir's "start checkpoint" already holds the planted file (so a diff
	# against it, as the old log made, says nothing changed).
	expect_status 0 "control: ls-tree of the gitdir's forged start" -- \
		git --git-dir "$WS/git" ls-tree --name-only refs/arborinth/checkpoints/1
	expect_match '^planted\.txt$' "$OUT" "control: the forged start holds planted.txt"
	local lj
	lj=$(timeout 20 "$ARB" log w --json)
	expect_eq "1" "$(jpath "$lj" "[s for s in d['sessions'] if s['session'] == $s2][0]['changes']['files']")" \
		"log: session $s2 changed one file"
	expect_status 0 "diff --session $s2" -- timeout 20 "$ARB" diff w --session "$s2" --name-status
	expect_eq "$(printf 'A\tplanted.txt')" "$OUT" "diff --session shows the planted file"
	expect_status 0 "rewind --before-session $s2" -- timeout 30 "$ARB" rewind w --before-session "$s2"
	[ ! -e "$V/planted.txt" ] && pass || fail "rewind left the planted file"

	# --- 3: checkpoint refs and logs made symlinks to the origin's refs, the user's folder --
	inbox "git config core.logAllRefUpdates always && rm -rf .git/refs/arborinth .git/logs &&
		mkdir -p .git/refs/arborinth &&
		ln -s '$T/repo/.git/refs/heads' .git/refs/arborinth/checkpoints &&
		ln -s '$T/victim' .git/logs && echo change > s3.txt && echo ok"
	# Control: through the planted link the origin's branches are reachable from the gitdir.
	expect_eq "$T/repo/.git/refs/heads" "$(readlink -f "$WS/git/refs/arborinth/checkpoints")" \
		"control: the gitdir's checkpoint folder leads to the origin's refs/heads"
	[ -e "$WS/git/refs/arborinth/checkpoints/main" ] && pass ||
		fail "control: the origin's main is reachable through it"
	expect_eq "main" "$(ls "$T/repo/.git/refs/heads")" "the origin has no new branch"
	expect_eq "" "$(ls -A "$T/victim")" "nothing was written into the user's folder"
	expect_status 0 "git fsck in the origin" -- git -C "$T/repo" fsck --no-progress
	expect_status 0 "git log --all in the origin" -- git -C "$T/repo" log --all --oneline
	local s3
	s3=$(last_session)
	expect_status 0 "diff --session $s3" -- timeout 20 "$ARB" diff w --session "$s3" --name-status
	expect_eq "$(printf 'A\ts3.txt')" "$OUT" "diff --session shows the real change"
	inbox 'rm -f .git/refs/arborinth/checkpoints .git/logs &&
		git config --unset core.logAllRefUpdates && echo ok'

	# --- 4: a FIFO as packed-refs (and in the checkpoint folder's place) -----------------
	local t0 t1
	t0=$(date +%s)
	expect_status 0 "shell over a FIFO planted in the gitdir" -- \
		timeout 60 "$ARB" shell w -- sh -c 'rm -f .git/packed-refs && mkfifo .git/packed-refs &&
			mkdir -p .git/refs/arborinth && mkfifo .git/refs/arborinth/checkpoints &&
			echo four > s4.txt'
	t1=$(date +%s)
	[ $((t1 - t0)) -lt 20 ] && pass || fail "shell took $((t1 - t0)) s with a FIFO in the gitdir"
	# Control: a reader that opens it as git does blocks.
	expect_status 124 "control: opening the FIFO blocks" -- timeout 2 cat "$WS/git/packed-refs"
	expect_status 0 "log with a FIFO in the gitdir" -- timeout 10 "$ARB" log w
	local s4
	s4=$(last_session)
	expect_status 0 "diff --session $s4" -- timeout 10 "$ARB" diff w --session "$s4" --name-status
	expect_eq "$(printf 'A\ts4.txt')" "$OUT" "diff --session with a FIFO in the gitdir"
	# A workspace revision is resolved in the gitdir: checked first, the FIFO refused at once.
	expect_status 1 "diff of a workspace revision over a FIFO" -- timeout 10 "$ARB" diff w HEAD
	expect_match "packed-refs" "$ERR" "the refusal names the FIFO"
	expect_one_line_error "diff of a workspace revision over a FIFO"
	rm -f "$WS/git/packed-refs" "$WS/git/refs/arborinth/checkpoints"

	# --- 5: shell ends on SIGTERM once the box is gone, even while its end is held up --------
	# state.db locked by another process while the box's command ends: the end checkpoint
	# waits for it (as it would for anything slow); SIGTERM must end shell all the same.
	local sh_pid lock_pid st=0 i
	rm -f "$WS/tmp/go" "$WS/tmp/ready" "$T/locked"
	"$ARB" shell w -- sh -c 'touch /tmp/ready; while [ ! -e /tmp/go ]; do sleep 0.1; done' &
	sh_pid=$!
	for i in $(seq 100); do [ -e "$WS/tmp/ready" ] && break; sleep 0.1; done
	python3 -c 'import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(60)' "$T/repo/.git/arborinth/state.db" "$T/locked" &
	lock_pid=$!
	for i in $(seq 100); do [ -e "$T/locked" ] && break; sleep 0.1; done
	touch "$WS/tmp/go"
	sleep 3
	# Control: the command is over, and shell is still held up at the session's end.
	alive "$sh_pid" && pass || fail "control: shell is held up by the locked state.db"
	kill -TERM "$sh_pid"
	t0=$(date +%s)
	wait "$sh_pid" || st=$?
	t1=$(date +%s)
	expect_eq 143 "$st" "shell ended by SIGTERM after the box was gone"
	[ $((t1 - t0)) -lt 5 ] && pass || fail "shell took $((t1 - t0)) s to end on SIGTERM"
	kill "$lock_pid" 2>/dev/null || true
	wait "$lock_pid" 2>/dev/null || true

	# --- the store itself: a mismatch with state.db is refused in one line -----------------
	local store=$WS/checkpoints.git
	git --git-dir "$store" update-ref refs/arborinth/checkpoints/1 \
		"$(git --git-dir "$store" rev-parse refs/arborinth/checkpoints/2)"
	expect_status 1 "rewind to a checkpoint whose ref was changed" -- \
		timeout 10 "$ARB" rewind w --to 1
	expect_one_line_error "a changed checkpoint"
	expect_match "checkpoint 1 of w is commit .* but .* in state.db; refusing it" "$ERR" \
		"the refusal names the checkpoint"
	expect_status 0 "git fsck in the origin at the end" -- git -C "$T/repo" fsck --no-progress
	expect_eq "main" "$(ls "$T/repo/.git/refs/heads")" "the origin's branches at the end"
	"$ARB" workspace delete w --force >/dev/null
}

if [ "${1:-}" = --inner ]; then
	attacks
	finish
	exit 0
fi

attacks
# Again as an ordinary user (the same script, copied where the user can read it).
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	U=$(mktemp -d /var/tmp/arb-ckpt-user.XXXXXX)
	cp "$ARB" "$U/arborinth"
	cp "$0" "$(dirname "$0")/lib.sh" "$U/"
	chown -R "$user" "$U"
	expect_status 0 "the attacks as $user" -- runuser -u "$user" -- env HOME="/home/$user" \
		TMPDIR="$U" ARB="$U/arborinth" ARB_SRC="$ARB_SRC" bash "$U/ckpt_attack.sh" --inner
	printf '%s\n%s\n' "$OUT" "$ERR" | grep -E "FAIL|checks" || true
	rm -rf "$U"
fi
finish
