#!/usr/bin/env bash
# tests/integration/fs_racy.sh: git's "is it unchanged?" answers in a workspace, as root and as
# an ordinary user, under the timing that used to fool them.
# 1. A base committed with a date ahead of the clock (another machine's commit): the
#    prebuilt index was dated a second after the base, i.e. in the future, so a same-size
#    edit made in the base's second (sed -i) kept the base's size and mtime second and git
#    took the file as unchanged (core/gitdir.c core_index_not_racy). Deterministic: the edit
#    waits for the base's second.
# 2. `git update-index -q --refresh`, then `git diff-index --cached HEAD` and `git diff-index
#    HEAD` at once (what `git lfs status` runs): git before 2.43 read an unfilled stat for
#    paths the fsmonitor answered as unchanged and took some at random for directories:
#    every path showed as D in about one round in 30 (fs/fsmon.c's hook). Rounds for ~15 s.
# 3. Stat data after in-place writes, rename-over (sed -i, mv), copy-up, chmod and truncate,
#    compared with the same operations on a native directory (the control): size, mode,
#    links, type, and which of inode, mtime and ctime changed (base files are dated at the
#    commit, in whole seconds, by design; what the box writes has nanoseconds).
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v bwrap >/dev/null || skip "no bwrap"

RUNAS=()
U="$T"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && [ -u "$(command -v fusermount3)" ]; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || true
	if id "$user" >/dev/null 2>&1; then
		chmod 0666 /dev/fuse
		chmod 0755 "$T"
		U="$T/user"
		mkdir "$U"
		cp "$ARB" "$U/arborinth"
		chown -R "$user" "$U"
		RUNAS=(runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U")
	fi
fi
[ ${#RUNAS[@]} -gt 0 ] || echo "note: no ordinary user here: root only" >&2

# one WHO ARB DIR RUN...: the three parts, run through RUN (nothing, or runuser).
one() {
	local who=$1 arb=$2 d=$3
	shift 3
	local R=("$@")
	local r="$d/r" base bad rounds

	# 1. A base dated 2 s ahead; the edit lands in the base's second.
	"${R[@]}" bash -c "mkdir -p '$r' && cd '$r' && git init -q && git config user.email a@b &&
		git config user.name a && for i in 1 2 3; do echo 'line e \$i' > f\$i; done &&
		git add -A && git commit -qm init"
	base=$(($(date +%s) + 2))
	"${R[@]}" env GIT_COMMITTER_DATE="@$base +0000" git -C "$r" commit -q --allow-empty -m ahead
	expect_status 0 "$who: create" -- "${R[@]}" "$arb" --workdir "$r" workspace create w
	expect_status 0 "$who: sed -i in the base's second" -- "${R[@]}" "$arb" --workdir "$r" shell w -- \
		sh -c "while [ \$(date +%s) -lt $base ]; do sleep 0.05; done; sed -i s/e/x/ f1;
			[ \$(date +%s) = $base ] && echo in-second; git status --porcelain"
	expect_match "^in-second" "$OUT" "$who: the edit was made in the base's second"
	expect_match " M f1" "$OUT" "$who: git status sees the same-size edit"
	expect_status 0 "$who: git commit -a" -- "${R[@]}" "$arb" --workdir "$r" shell w -- \
		sh -c 'git commit -qam edit && git show --stat HEAD | grep -c "f1 "'
	expect_eq 1 "$OUT" "$who: git commit takes the edit"

	# 2. Refresh, then two diff-index at once, for ~15 s; every round must print nothing.
	expect_status 0 "$who: diff-index rounds" -- "${R[@]}" "$arb" --workdir "$r" shell w -- \
		bash -c 'bad=0 n=0 end=$((SECONDS + 15)); while [ $SECONDS -lt $end ]; do n=$((n + 1));
			git update-index -q --refresh; a=$(git diff-index -M --cached HEAD) &
			b=$(git diff-index -M HEAD); wait; c=$(git diff-index -M HEAD)
			[ -z "$b$c" ] || { bad=$((bad + 1)); echo "round $n: ${b:0:60}${c:0:60}" >&2; }
			done; echo "$bad $n"'
	read -r bad rounds <<<"$OUT"
	echo "$who: diff-index: $bad of $rounds rounds read the index wrong" >&2
	expect_eq 0 "$bad" "$who: git diff-index HEAD after a refresh ($rounds rounds)"

	# 3. Stat data after each operation: the view against a native directory.
	# shellcheck disable=SC2016
	local ops='st() { stat -c "%i %.9Y %.9Z" f2; }
		step() { sleep 0.02; "$@"; read -r i m c <<<"$(st)"
			echo "$* | $(stat -c "%s %a %h %F" f2) | $([ $i != $pi ] && echo ino)" \
				"$([ $m != $pm ] && echo mtime) $([ $c != $pc ] && echo ctime)"
			pi=$i pm=$m pc=$c; }
		read -r pi pm pc <<<"$(st)"
		step true; step sed -i s/e/x/ f2; step sh -c "echo y >> f2"; step chmod 600 f2
		step truncate -s 3 f2; step sh -c "printf abc > f2"; step sh -c "echo z > f4; mv f4 f2"
		case $(stat -c %.9Y f2) in *.000000000) echo "whole-second mtime" ;; esac
		step mv f3 f2'
	expect_status 0 "$who: operations in the view" -- "${R[@]}" "$arb" --workdir "$r" shell w -- \
		bash -c "$ops"
	local view=$OUT
	"${R[@]}" bash -c "mkdir -p '$d/native' && cd '$d/native' && for i in 2 3; do echo 'line e \$i' > f\$i; done"
	expect_status 0 "$who: operations on a native directory" -- "${R[@]}" bash -c "cd '$d/native' && $ops"
	expect_eq "$OUT" "$view" "$who: stat data after each operation, view vs native"
	expect_status 0 "$who: delete" -- "${R[@]}" "$arb" --workdir "$r" workspace delete w --force
}

one root "$ARB" "$T/root"
if [ ${#RUNAS[@]} -gt 0 ]; then
	one "$user" "$U/arborinth" "$U/u" "${RUNAS[@]}"
fi
finish
