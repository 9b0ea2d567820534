#!/usr/bin/env bash
# Deleting never loses work silently, gc reclaims what no workspace uses, and list --all
# shows every workspace of the user: real repositories, real views, real boxes; as root and
# (below) as an ordinary user. Each refusal has its control (the same step allowed).
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
command -v fusermount3 >/dev/null || skip "no fusermount3"

export XDG_STATE_HOME="$T/xdg"
R="$T/repo"
mkrepo "$R"
A() { "$ARB" --workdir "$R" "$@"; }
js() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wsdir() { A workspace info "$1" --json | js "d['$2']"; }

# ---- delete refuses to lose work; --force deletes --------------------------------------
expect_status 0 "create clean" -- A workspace create clean
expect_status 0 "a clean workspace deletes without --force" -- A workspace delete clean
expect_match "deleted workspace clean" "$OUT" "clean delete says so"

expect_status 0 "create w1" -- A workspace create w1
W1=$(wsdir w1 workdir)
printf 'work\n' >"$W1/new.txt"
printf 'changed\n' >>"$W1/README"
expect_status 1 "changes not in a commit: refused" -- A workspace delete w1
expect_eq "arborinth: w1 has 2 changed files not in a commit; use --force to delete anyway" "$ERR" \
	"refusal counts the changed files"
expect_one_line_error "changes refusal"
expect_eq "work" "$(cat "$W1/new.txt")" "refused delete: the view is as it was"
expect_status 0 "refused delete: workspace still listed" -- A workspace info w1

# A commit made in the box (a real box), not in the origin.
expect_status 0 "commit in the box" -- A shell w1 -- sh -c \
	'git add -A && git -c user.name=box -c user.email=box@example.com commit -qm "box work"'
expect_status 1 "commit not in the origin: refused" -- A workspace delete w1
expect_eq "arborinth: w1 has 1 commit not in the origin; use --force to delete anyway" "$ERR" \
	"refusal counts the commit"
printf 'more\n' >"$W1/more.txt"
expect_status 1 "both: refused" -- A workspace delete w1
expect_eq "arborinth: w1 has 1 commit not in the origin and 1 changed file not in a commit; use --force to delete anyway" \
	"$ERR" "refusal names both"
rm "$W1/more.txt"
# Fetched but not merged: the remote's refs go with the workspace, so still refused.
git -C "$R" fetch -q arborinth/w1
expect_status 1 "fetched, not merged: still refused" -- A workspace delete w1
# Control: merged into the origin's branch, the commit is safe and delete goes ahead.
expect_status 0 "merge into the origin" -- A merge w1
expect_status 0 "merged: deletes without --force" -- A workspace delete w1
expect_eq "box work" "$(git -C "$R" log -1 --format=%s)" "the work is in the origin"

# A commit on another branch of the box's, the view back on arborinth/NAME: still counted.
expect_status 0 "create br" -- A workspace create br
expect_status 0 "a commit on a side branch in the box" -- A shell br -- sh -c \
	'git checkout -qb side && echo s > s && git add s &&
	git -c user.name=box -c user.email=box@example.com commit -qm side &&
	git checkout -q arborinth/br'
expect_status 1 "side branch commit: refused" -- A workspace delete br
expect_eq "arborinth: br has 1 commit not in the origin; use --force to delete anyway" "$ERR" \
	"a side branch's commit counts"
# A gitdir the box made unreadable (a symlinked ref): refused, never followed; --force goes.
ln -s /etc/passwd "$(wsdir br workdir)/.git/refs/heads/evil"
expect_status 1 "hostile gitdir: refused" -- timeout 20 "$ARB" --workdir "$R" workspace delete br
expect_match "^arborinth: cannot tell whether br has work not in the origin \(.*evil.*symlink.*\); use --force to delete anyway$" \
	"$ERR" "the refusal names the planted ref"
expect_one_line_error "hostile gitdir refusal"
expect_status 0 "hostile gitdir: --force deletes" -- A workspace delete br --force

# --force deletes anyway.
expect_status 0 "create w2" -- A workspace create w2
printf 'x\n' >"$(wsdir w2 workdir)/lost.txt"
expect_status 1 "w2 refused" -- A workspace delete w2
expect_status 0 "--force deletes anyway" -- A workspace delete w2 --force
expect_status 1 "w2 gone" -- A workspace info w2
# What a box wrote into an overlay of a host folder is kept in the workspace: counted too.
mkdir -p "$T/data"
echo orig >"$T/data/f"
expect_status 0 "create ov" -- A workspace create ov
expect_status 0 "a box writes into an overlay" -- A shell ov --mount "overlay:$T/data:/mnt" -- \
	sh -c 'echo changed > /mnt/f && echo new > /mnt/g'
expect_eq "orig" "$(cat "$T/data/f")" "the host folder is unchanged"
expect_status 1 "overlay changes: refused" -- A workspace delete ov
expect_eq "arborinth: ov has 2 changes in overlays; use --force to delete anyway" "$ERR" \
	"refusal counts the overlay's changes"
expect_status 0 "overlay changes: --force deletes" -- A workspace delete ov --force
# Control: an overlay the box only read leaves nothing to lose.
expect_status 0 "create ov2" -- A workspace create ov2
expect_status 0 "a box reads an overlay" -- A shell ov2 --mount "overlay:$T/data:/mnt" -- cat /mnt/f
expect_status 0 "overlay only read: deletes without --force" -- A workspace delete ov2

# --purge keeps its meaning, and asks for --force the same way.
expect_status 0 "create w3" -- A workspace create w3
printf 'x\n' >"$(wsdir w3 workdir)/lost.txt"
expect_status 1 "purge refused with unsaved work" -- A workspace delete w3 --purge
expect_status 0 "purge --force" -- A workspace delete w3 --purge --force
expect_match "and its history" "$OUT" "purge says so"

# ---- a busy view: delete names the processes, changes nothing -----------------------------
expect_status 0 "create busy" -- A workspace create busy
B=$(wsdir busy workdir)
(cd "$B" && exec sleep 60) &
cwd_pid=$!
sleep 60 3<"$B/README" &
fd_pid=$!
sleep 0.3
expect_status 1 "busy view: refused" -- A workspace delete busy
expect_match "^arborinth: cannot delete busy: its view is busy: .*pid $cwd_pid \(sleep\)" "$ERR" \
	"names the process whose cwd is in the view"
expect_match "pid $fd_pid \(sleep\)" "$ERR" "names the process with a file open in it"
expect_one_line_error "busy refusal"
expect_eq "$(git -C "$R" show HEAD:README)" "$(cat "$B/README")" "refused: the view still reads"
expect_match "mounted: +yes" "$(A workspace info busy)" "refused: still mounted"
kill "$cwd_pid" "$fd_pid"
wait "$cwd_pid" "$fd_pid" 2>/dev/null || true
# A process in a mount namespace of its own (a private copy of the mount that umount cannot
# see): found through its mountinfo.
if unshare -m --propagation private true 2>/dev/null; then
	mkdir -p "$T/nsmnt"
	unshare -m --propagation private sh -c "mount --bind '$B' '$T/nsmnt' && cd '$T/nsmnt' && exec sleep 60" &
	ns_pid=$!
	for _ in $(seq 50); do [ "$(readlink /proc/$ns_pid/cwd 2>/dev/null)" = "$T/nsmnt" ] && break; sleep 0.1; done
	expect_status 1 "busy in another mount namespace: refused" -- A workspace delete busy
	expect_match "its view is busy: .*\(sleep\)" "$ERR" "names the process in the other namespace"
	kill "$ns_pid"
	wait "$ns_pid" 2>/dev/null || true
fi
# Control: nothing holds it any more.
expect_status 0 "no longer busy: deletes" -- A workspace delete busy

# ---- stale refs: create cleans them, so does gc ---------------------------------------
git -C "$R" update-ref refs/arborinth/s1 HEAD~1
git -C "$R" remote add arborinth/s1 "$T/nowhere"
expect_status 0 "create over a stale ref and remote" -- A workspace create s1
expect_eq "note: removed refs/arborinth/s1 and remote arborinth/s1, left by an earlier workspace of that name" \
	"$ERR" "create says what it removed"
expect_eq "$(git -C "$R" rev-parse HEAD)" "$(git -C "$R" rev-parse refs/arborinth/s1)" "the ref is the new workspace's"
expect_eq "$(wsdir s1 root)/export.git" "$(git -C "$R" config remote.arborinth/s1.url)" "the remote is the new workspace's"
# Control: a create with no stale ref says nothing.
expect_status 0 "create without stale refs" -- A workspace create s2
expect_eq "" "$ERR" "no note without stale refs"
git -C "$R" update-ref refs/arborinth/gone HEAD
git -C "$R" remote add arborinth/gone "$T/nowhere"
expect_status 0 "gc --dry-run" -- A gc --dry-run
expect_match "would remove ref of no workspace refs/arborinth/gone" "$OUT" "dry run names the stale ref"
expect_match "would remove remote of no workspace arborinth/gone" "$OUT" "dry run names the stale remote"
git -C "$R" rev-parse -q --verify refs/arborinth/gone >/dev/null && pass || fail "dry run removed the ref"
expect_status 0 "gc" -- A gc
git -C "$R" rev-parse -q --verify refs/arborinth/gone >/dev/null && fail "gc left the stale ref" || pass
git -C "$R" config remote.arborinth/gone.url >/dev/null && fail "gc left the stale remote" || pass
expect_eq "$(git -C "$R" rev-parse HEAD)" "$(git -C "$R" rev-parse refs/arborinth/s1)" "gc keeps a live workspace's ref"
A workspace delete s1 >/dev/null
A workspace delete s2 >/dev/null

# ---- what belongs to a workspace goes with it; gc reclaims what older versions left -------
SD=$(A project info --json | js "d['state_dir']")
wsid() { python3 -c "import sqlite3,sys; c=sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
print(c.execute('SELECT id FROM workspaces WHERE name=?', (sys.argv[2],)).fetchone()[0])" "$1/state.db" "$2"; }
expect_status 0 "create rv" -- A workspace create rv
expect_status 0 "create rk" -- A workspace create rk
RV=$(wsid "$SD" rv) RK=$(wsid "$SD" rk)
mkdir -p "$SD/review"
for id in "$RV" "$RK"; do echo '{"comments":[]}' >"$SD/review/$id.json"; done
expect_status 0 "delete rv" -- A workspace delete rv
[ -e "$SD/review/$RV.json" ] && fail "delete left rv's review comments" || pass
[ -e "$SD/review/$RK.json" ] && pass || fail "delete took another workspace's review comments"
# As a version before this one left them, and what is not gc's: a link, a foreign name.
dead=0123456789abcdef0123456789abcdef
echo '{}' >"$SD/review/$dead.json"
echo '{}' >"$SD/review/$dead.json.tmp"
echo secret >"$T/outside"
ln -s "$T/outside" "$SD/review/fedcba9876543210fedcba9876543210.json"
echo mine >"$SD/review/notes.txt"
mkdir -p "$SD/workspaces/.del-old.1/overlay/x/work/work" && echo w >"$SD/workspaces/.del-old.1/f"
chmod 0 "$SD/workspaces/.del-old.1/overlay/x/work/work"
snap() { (cd "$SD" && find review workspaces -maxdepth 2 -printf '%p %s %T@\n' | sort); }
before=$(snap)
expect_status 0 "gc --dry-run names the leftovers" -- A gc --dry-run
for f in "$dead.json" "$dead.json.tmp" fedcba9876543210fedcba9876543210.json; do
	expect_match "^would remove review comments of no workspace $SD/review/$f" "$OUT" "dry run: $f"
done
expect_match "^would remove leftover folder $SD/workspaces/.del-old.1" "$OUT" "dry run: .del-old.1"
if grep -q "$RK\|notes.txt" <<<"$OUT"; then fail "dry run would take a live workspace's or a foreign file: $OUT"; else pass; fi
expect_status 0 "gc --dry-run --json" -- A gc --dry-run --json
expect_eq "$dead.json $dead.json.tmp fedcba9876543210fedcba9876543210.json" \
	"$(printf '%s' "$OUT" | js "' '.join(sorted(i['path'].rsplit('/', 1)[1] for i in d['items'] if i['what'] == 'review comments of no workspace' and i['removed']))")" \
	"--json lists the same"
expect_eq "$before" "$(snap)" "the dry runs changed nothing"
# review/ made a link elsewhere: gc does not follow it.
mkdir "$T/elsewhere" && echo '{}' >"$T/elsewhere/$dead.json"
mv "$SD/review" "$SD/review.real" && ln -s "$T/elsewhere" "$SD/review"
expect_status 0 "gc with review/ a link" -- A gc
[ -e "$T/elsewhere/$dead.json" ] && pass || fail "gc followed review/, a link"
expect_match "^removed leftover folder $SD/workspaces/.del-old.1" "$OUT" "gc removed the old delete's folder"
rm "$SD/review" && mv "$SD/review.real" "$SD/review"
expect_status 0 "gc" -- A gc
[ -e "$SD/workspaces/.del-old.1" ] && fail "gc left .del-old.1" || pass
expect_eq "" "$(ls -A "$SD/workspaces" | grep '^\.' || true)" "no leftover in workspaces/"
# A leftover with a folder from outside mounted in it: gc stays on its own mount and says it
# could not; unmounted (the control), the leftover goes and the folder keeps its file.
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$T/precious" "$SD/workspaces/.del-mnt.1/m" && echo keep >"$T/precious/f"
	mount --bind "$T/precious" "$SD/workspaces/.del-mnt.1/m"
	expect_status 0 "gc with a mount in a leftover" -- A gc
	expect_match "^kept leftover that cannot be removed \(gc tries again\) $SD/workspaces/\.gc-\.del-mnt\.1\.[0-9]+" \
		"$OUT" "gc says what it could not remove"
	expect_eq keep "$(cat "$T/precious/f")" "nothing mounted into a leftover is emptied"
	left=$(printf '%s\n' "$OUT" | sed -n 's/^kept leftover that cannot be removed (gc tries again) \([^ ]*\).*/\1/p')
	expect_status 0 "gc again" -- A gc
	expect_match "^kept leftover that cannot be removed \(gc tries again\) $left( |$)" "$OUT" \
		"a leftover gc could not remove keeps its name (no longer with each try)"
	umount "$left/m"
	expect_status 0 "gc once unmounted" -- A gc
	expect_eq "" "$(ls -A "$SD/workspaces" | grep '^\.' || true)" "then the leftover goes"
	expect_eq keep "$(cat "$T/precious/f")" "and the folder that was mounted keeps its file"
fi
expect_eq "$RK.json notes.txt" "$(ls "$SD/review" | tr '\n' ' ' | sed 's/ $//')" \
	"gc kept the live workspace's comments and the foreign file, took the rest"
expect_eq "secret" "$(cat "$T/outside")" "the link's target is untouched"
# A linked worktree's workspace: its state dir is its own; the main checkout's gc leaves it.
git -C "$R" worktree add -q "$T/lw" 2>/dev/null
LW() { XDG_STATE_HOME="$T/xdg-lw" "$ARB" --workdir "$T/lw" "$@"; } # not in the list below
expect_status 0 "create in a linked worktree" -- LW workspace create lw
LSD=$(LW project info --json | js "d['state_dir']")
LID=$(wsid "$LSD" lw)
# One name, one workspace across checkouts: a create never takes over another's ref and remote.
expect_status 1 "the worktree cannot take the main checkout's name" -- LW workspace create rk
expect_match "^arborinth: workspace 'rk' already exists in another checkout of this repository" \
	"$ERR" "the refusal says why"
expect_one_line_error "name of another checkout"
expect_eq "$(wsdir rk root)/export.git" "$(git -C "$R" config remote.arborinth/rk.url)" \
	"rk's remote is still its own"
expect_status 1 "nor the main checkout the worktree's" -- A workspace create lw
expect_eq "$LSD/workspaces/lw/export.git" "$(git -C "$R" config remote.arborinth/lw.url)" \
	"lw's remote is still its own"
mkdir -p "$LSD/review" && echo '{}' >"$LSD/review/$LID.json"
expect_status 0 "gc in the main checkout" -- A gc
expect_status 0 "gc in the linked worktree" -- LW gc
[ -e "$LSD/review/$LID.json" ] && pass || fail "gc took a linked worktree's workspace's comments"
# They share refs/arborinth/ and the remotes: neither gc takes the other checkout's.
git -C "$R" rev-parse -q --verify refs/arborinth/lw >/dev/null && pass || fail "main's gc took lw's ref"
git -C "$R" config remote.arborinth/lw.url >/dev/null && pass || fail "main's gc took lw's remote"
git -C "$R" config remote.arborinth/rk.url >/dev/null && pass || fail "the worktree's gc took rk's remote"
expect_eq "$(git -C "$R" show HEAD:README)" "$(cat "$(LW workspace info lw --json | js "d['workdir']")/README")" \
	"the linked worktree's workspace reads after both gc"
expect_status 0 "delete the linked worktree's workspace" -- LW workspace delete lw
[ -e "$LSD/review/$LID.json" ] && fail "its delete left its comments" || pass
A workspace delete rk >/dev/null

# ---- gc reclaims bytes, never under a live view ---------------------------------------
STATE=$(A project info --json | js "d['state_dir']")
# More content, so that caches are measurable.
head -c 3000000 /dev/urandom | base64 >"$R/big.txt"
git -C "$R" add big.txt && git -C "$R" commit -qm big
expect_status 0 "create live" -- A workspace create live
expect_status 0 "create old at HEAD~2" -- A workspace create old --rev HEAD~2
L=$(wsdir live workdir)
O=$(wsdir old workdir)
cat "$L/big.txt" "$O/README" >/dev/null # fill the blob cache
view_hash() { (cd "$1" && git ls-files -z | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum); }
want=$(cd "$R" && git ls-files -z | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum)
expect_eq "$want" "$(view_hash "$L")" "live view reads every file before gc"
expect_status 0 "delete old" -- A workspace delete old
du0=$(du -sB1 "$STATE" | cut -f1)
expect_status 0 "gc --dry-run with a mounted view" -- A gc --dry-run
expect_match "kept blob cache \(a view is mounted" "$OUT" "the blob cache stays while a view reads it"
dry=$(printf '%s\n' "$OUT" | sed -n 's/^would reclaim \([0-9]*\) bytes.*/\1/p')
expect_eq "$du0" "$(du -sB1 "$STATE" | cut -f1)" "dry run changed nothing"
expect_status 0 "gc with a mounted view" -- A gc
got=$(printf '%s\n' "$OUT" | sed -n 's/^reclaimed \([0-9]*\) bytes.*/\1/p')
expect_eq "$dry" "$got" "gc reclaims what the dry run said"
expect_match "removed objects view .*/objects-view/$(git -C "$R" rev-parse HEAD~2)" "$OUT" \
	"the deleted workspace's objects view goes"
[ "$got" -gt 0 ] && pass || fail "gc reclaimed nothing ($got)"
du1=$(du -sB1 "$STATE" | cut -f1)
[ $((du0 - du1)) -ge $((got * 9 / 10)) ] && pass || fail "du dropped $((du0 - du1)), gc said $got"
expect_eq "$want" "$(view_hash "$L")" "the live view reads every file after gc"
expect_status 0 "shell in the live workspace after gc" -- A shell live -- sh -c 'wc -c < big.txt'
# Unmounted, the blob cache goes too; the view works again after a mount.
expect_status 0 "unmount live" -- A workspace unmount live
blobs=$(du -sB1 "$STATE/blobs" | cut -f1)
expect_status 0 "gc --dry-run with no view mounted" -- A gc --dry-run
dry=$(printf '%s\n' "$OUT" | sed -n 's/^would reclaim \([0-9]*\) bytes.*/\1/p')
expect_status 0 "gc with no view mounted" -- A gc
got=$(printf '%s\n' "$OUT" | sed -n 's/^reclaimed \([0-9]*\) bytes.*/\1/p')
expect_eq "$dry" "$got" "the blob cache: gc reclaims what the dry run said"
[ $((blobs - $(du -sB1 "$STATE/blobs" | cut -f1))) -ge $((got * 9 / 10)) ] && pass ||
	fail "du of blobs/ dropped less than gc said ($got)"
[ "$got" -ge 3000000 ] && pass || fail "blob cache not reclaimed ($got of $blobs)"
expect_match "removed blob cache" "$OUT" "names the blob cache"
[ "$(du -sB1 "$STATE/blobs" | cut -f1)" -lt 100000 ] && pass || fail "blobs/ still big"
expect_status 0 "mount live again" -- A workspace mount live
expect_eq "$want" "$(view_hash "$L")" "the view reads every file after its cache went"

# gc beside creates, a shell and deletes of other processes: each of them works, and every
# view reads every file.
for i in 1 2 3; do A gc >/dev/null 2>"$T/gc$i.err" & done
for i in 1 2 3; do A workspace create "c$i" >/dev/null 2>"$T/c$i.err" & done
A shell live -- sh -c 'cat big.txt >/dev/null' 2>"$T/sh.err" &
wait
for i in 1 2 3; do
	[ -s "$T/gc$i.err" ] && fail "concurrent gc $i: $(cat "$T/gc$i.err")" || pass
	[ -s "$T/c$i.err" ] && fail "create c$i beside gc: $(cat "$T/c$i.err")" || pass
	expect_eq "$want" "$(view_hash "$(wsdir "c$i" workdir)")" "c$i reads every file after concurrent gc"
done
[ -s "$T/sh.err" ] && fail "shell beside gc: $(cat "$T/sh.err")" || pass
for i in 1 2 3; do A workspace delete "c$i" >/dev/null & A gc >/dev/null & done
wait
expect_eq "$want" "$(view_hash "$L")" "the live view reads every file after concurrent deletes and gc"
expect_status 0 "list after the concurrent run" -- A workspace list
expect_eq "live" "$(printf '%s\n' "$OUT" | awk 'NR > 1 {print $1}' | tr '\n' ' ' | sed 's/ $//')" \
	"only the live workspace is left"

# --purge: the audit of deleted workspaces goes, a live one's stays.
expect_status 0 "deleted workspace's history is readable" -- A audit clean
expect_status 0 "gc --purge" -- A gc --purge
expect_match "removed audit history of deleted workspace clean" "$OUT" "purge names it"
expect_status 1 "deleted workspace's history purged" -- A audit clean
expect_status 0 "live workspace's history stays" -- A audit live

# ---- list --all across repositories ------------------------------------------------------
R2="$T/second"
mkrepo "$R2"
expect_status 0 "create in the second repository" -- "$ARB" --workdir "$R2" workspace create other
expect_status 0 "list --all (from anywhere)" -- "$ARB" --workdir "$T" workspace list --all
expect_match "^$R +live +[0-9a-f]{12} +yes +-" "$(printf '%s\n' "$OUT" | grep ' live ')" "first repository's row"
expect_match "^$R2 +other +[0-9a-f]{12} +yes +-" "$(printf '%s\n' "$OUT" | grep ' other ')" "second repository's row"
expect_status 0 "list --all --json" -- "$ARB" workspace list --all --json
expect_eq "$R live,$R2 other" "$(printf '%s' "$OUT" | js "','.join(w['project']+' '+w['name'] for w in d)")" \
	"--json rows name the project"
# Entries are checked on read: a state dir another user owns, a gone project.
reg="$XDG_STATE_HOME/arborinth/projects"
expect_eq 2 "$(grep -c . "$reg")" "each project registered once"
mkrepo "$T/foreign"
"$ARB" --workdir "$T/foreign" workspace create f >/dev/null
"$ARB" --workdir "$T/foreign" workspace unmount f >/dev/null
fstate=$("$ARB" --workdir "$T/foreign" project info --json | js "d['state_dir']")
chown -R 65534 "$fstate"
expect_status 0 "list --all skips a foreign-owned entry" -- "$ARB" workspace list --all
expect_match "other" "$OUT" "others still listed"
if grep -q "$T/foreign" <<<"$OUT"; then fail "a foreign-owned state dir was listed"; else pass; fi
chown -R 0 "$fstate"
expect_status 0 "control: owned again, listed" -- "$ARB" workspace list --all
expect_match "^$T/foreign +f " "$OUT" "foreign entry listed once owned"
rm -rf "$T/foreign"
expect_status 0 "list --all skips a gone project" -- "$ARB" workspace list --all
if grep -q "$T/foreign" <<<"$OUT"; then fail "a gone project was listed"; else pass; fi
expect_status 0 "gc drops gone projects from the list" -- A gc
expect_match "dropped 1 gone project" "$OUT" "gc says it dropped it"
expect_eq 2 "$(grep -c . "$reg")" "the list keeps the live ones"

# ---- as an ordinary user ----------------------------------------------------------------
. "$ARB_SRC/tests/lib/as_user.sh"
if user_begin; then
	as_user bash -c "cd '$U' && mkdir r && cd r && git init -q &&
		git config user.email a@b && git config user.name a && echo hi > f &&
		git add f && git commit -qm init"
	expect_status 0 "user: create" -- UA workspace create u
	UW=$(UA workspace info u --json | js "d['workdir']")
	as_user sh -c "echo x >> '$UW/f'"
	expect_status 1 "user: unsaved change refused" -- UA workspace delete u
	expect_match "u has 1 changed file not in a commit; use --force" "$ERR" "user: refusal"
	as_user sh -c "cd '$UW' && exec sleep 60" &
	upid=
	for _ in $(seq 50); do
		upid=$(pgrep -u "$user" -n -x sleep || true)
		[ -n "$upid" ] && [ "$(readlink /proc/$upid/cwd 2>/dev/null)" = "$UW" ] && break
		sleep 0.1
	done
	expect_status 1 "user: busy view refused" -- UA workspace delete u --force
	expect_match "its view is busy: pid $upid \(sleep\)" "$ERR" "user: names the process"
	kill "$upid"
	wait 2>/dev/null || true
	expect_status 0 "user: --force deletes" -- UA workspace delete u --force
	expect_status 0 "user: create v" -- UA workspace create v
	expect_status 0 "user: list --all" -- as_user "$U/arborinth" workspace list --all
	expect_match "^$U/r +v " "$OUT" "user: list --all lists the user's project"
	if grep -q "^$R " <<<"$OUT"; then fail "user: root's projects listed"; else pass; fi
	[ -f "$U/home/.local/state/arborinth/projects" ] && pass || fail "user: default registry path"
	expect_status 0 "user: unmount" -- UA workspace unmount v
	expect_status 0 "user: gc" -- UA gc
	expect_match "^reclaimed [1-9][0-9]* bytes" "$(printf '%s\n' "$OUT" | tail -1)" "user: gc reclaims"
	expect_status 0 "user: mount again" -- UA workspace mount v
	expect_eq "hi" "$(as_user cat "$(UA workspace info v --json | js "d['workdir']")/f")" "user: view reads after gc"
	expect_status 0 "user: clean delete" -- UA workspace delete v
	# An overlay a box wrote leaves a mode-0 work folder (the kernel's, in the box's user
	# namespace): delete removes it all the same, and gc what an older version left of one.
	as_user mkdir -p "$U/data"
	expect_status 0 "user: create ov" -- UA workspace create ov
	expect_status 0 "user: a box writes into an overlay" -- UA shell ov --mount "overlay:$U/data:/mnt" \
		-- sh -c 'echo y > /mnt/y'
	USD=$(UA project info --json | js "d['state_dir']")
	expect_status 0 "user: delete ov" -- UA workspace delete ov --force
	expect_eq "" "$(ls -A "$USD/workspaces")" "user: delete left nothing of ov"
	as_user sh -c "mkdir -p '$USD/workspaces/.del-old.9/overlay/x/work/work' &&
		chmod 0 '$USD/workspaces/.del-old.9/overlay/x/work/work'"
	expect_status 0 "user: gc --dry-run" -- UA gc --dry-run
	expect_match "would remove leftover folder $USD/workspaces/.del-old.9" "$OUT" "user: dry run names it"
	[ -d "$USD/workspaces/.del-old.9" ] && pass || fail "user: the dry run removed it"
	expect_status 0 "user: gc" -- UA gc
	expect_eq "" "$(ls -A "$USD/workspaces")" "user: gc removed the old delete's folder"
fi

finish
