#!/usr/bin/env bash
# The state upgrade (core/state_move.c) against what boxes planted in the old layout's
# workspace git directories, where the upgrade rewrites objects/info/alternates: a symbolic
# link to a host file, a FIFO, a directory, a file too large to be ours, objects/info as a link
# to a host folder, and a directory at the name the rewrite writes through. The upgrade must
# finish in time, follow no link, write nothing outside, and keep every workspace's work; the
# control workspace's alternates is rewritten. As root and, run again by itself, as an
# ordinary user.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v bwrap >/dev/null || skip "no bwrap"
unset ARBORINTH_TEST_OLD_LAYOUT ARBORINTH_TEST_KILL

R=$T/r
a() { "$ARB" --workdir "$R" "$@"; }
mkrepo "$R"
OLD=$R/.arborinth/workspaces
NEW=$R/.git/arborinth/workspaces
victim=$T/victim
mkdir "$T/hostinfo"

export ARBORINTH_TEST_OLD_LAYOUT=1
for w in ctl link fifo dir big infolink tmpdir ro; do
	a workspace create "$w" >/dev/null
	a shell "$w" -- sh -c "echo work-$w > work" >/dev/null
done
expect_match "$OLD/ctl/origin-objects" "$(cat "$OLD/ctl/git/objects/info/alternates")" \
	"control: the old alternates names the old origin-objects"
# The host files the links point at hold the line the upgrade rewrites.
printf '%s\n' "$OLD/link/origin-objects" >"$victim"
printf '%s\n' "$OLD/infolink/origin-objects" >"$T/hostinfo/alternates"
cp "$victim" "$T/victim.before"
cp "$T/hostinfo/alternates" "$T/hostinfo.before"
info() { echo ".git/objects/info"; }
a shell link -- sh -c "rm $(info)/alternates && ln -s '$victim' $(info)/alternates" >/dev/null
a shell fifo -- sh -c "rm $(info)/alternates && mkfifo $(info)/alternates" >/dev/null
a shell dir -- sh -c "rm $(info)/alternates && mkdir $(info)/alternates && echo x > $(info)/alternates/x" >/dev/null
a shell big -- sh -c "{ cat $(info)/alternates; head -c 100000 /dev/zero | tr '\\0' a; } > $(info)/a.new && mv $(info)/a.new $(info)/alternates" >/dev/null
a shell infolink -- sh -c "rm -rf $(info) && ln -s '$T/hostinfo' $(info)" >/dev/null
a shell tmpdir -- sh -c "mkdir $(info)/alternates.arborinth-upgrade" >/dev/null
a shell ro -- sh -c "chmod 0555 $(info)" >/dev/null
[ -L "$OLD/link/git/objects/info/alternates" ] && [ -p "$OLD/fifo/git/objects/info/alternates" ] &&
	[ -d "$OLD/tmpdir/git/objects/info/alternates.arborinth-upgrade" ] && pass ||
	fail "the boxes planted their files in the old layout"
unset ARBORINTH_TEST_OLD_LAYOUT

start=$(date +%s)
expect_status 0 "the upgrade over planted files" -- timeout 60 "$ARB" --workdir "$R" workspace list
echo "upgrade: $(($(date +%s) - start)) s"
[ ! -e "$R/.arborinth" ] && [ ! -e "$R/.git/arborinth.upgrade" ] && pass || fail "the upgrade finished"
expect_eq "$NEW/ctl/origin-objects" "$(grep origin-objects "$NEW/ctl/git/objects/info/alternates")" \
	"control: the alternates line was rewritten"
expect_eq "$(cat "$T/victim.before")" "$(cat "$victim")" "a link's target (a host file) untouched"
expect_eq "$(cat "$T/hostinfo.before")" "$(cat "$T/hostinfo/alternates")" "objects/info as a link: the host folder's file untouched"
[ "$(ls "$T/hostinfo")" = alternates ] && pass || fail "nothing written in the host folder: $(ls "$T/hostinfo")"
[ -L "$NEW/link/git/objects/info/alternates" ] && [ -p "$NEW/fifo/git/objects/info/alternates" ] &&
	[ -f "$NEW/dir/git/objects/info/alternates/x" ] && pass || fail "the planted files moved as they were"
expect_match "$NEW/tmpdir/origin-objects" "$(cat "$NEW/tmpdir/git/objects/info/alternates")" \
	"a directory at the rewrite's temporary name does not stop the rewrite"
for w in ctl link fifo dir big infolink tmpdir ro; do
	expect_eq "work-$w" "$(cat "$NEW/$w/workdir/work" 2>&1)" "$w: the work is kept"
done
expect_eq 8 "$(a workspace list | awk 'NR > 1' | wc -l)" "every workspace listed"
expect_status 0 "a box after the upgrade" -- a shell ctl -- git log --oneline
expect_status 0 "audit after the upgrade" -- a audit ctl --verify

# --- as an ordinary user: this script again, run by the user --------------------------------
if [ "$(id -u)" = 0 ] && [ -z "${ARB_UA_INNER:-}" ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid"
	chmod 0755 "$T"
	U="$T/user"
	mkdir -p "$U"
	cp "$ARB" "$U/arborinth"
	cp "$ARB_SRC/tests/integration/ws_upgrade_attack.sh" "$ARB_SRC/tests/integration/lib.sh" "$U/"
	chown -R "$user" "$U"
	expect_status 0 "the whole test as $user" -- runuser -u "$user" -- env HOME="/home/$user" \
		TMPDIR="$U" ARB="$U/arborinth" ARB_SRC="$ARB_SRC" ARB_UA_INNER=1 bash "$U/ws_upgrade_attack.sh"
	printf '%s\n%s\n' "$OUT" "$ERR" | tail -20
fi
finish
