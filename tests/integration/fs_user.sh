#!/usr/bin/env bash
# The view as an ordinary user (fusermount3, /dev/fuse mode 0666): the operations test and a
# jailed shell run as a non-root user.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ "$(id -u)" = 0 ] || skip "needs root to switch to an ordinary user"
command -v runuser >/dev/null || skip "no runuser"
user=arbtest
id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
chmod 0666 /dev/fuse
[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid"
chmod 0755 "$T"
U="$T/user"
mkdir "$U"
# The build tree may sit where the user cannot reach (under /root, say): copy what runs.
cp "$ARB" "$U/arborinth"
cp "$ARB_SRC"/tests/integration/fs_ops.py "$ARB_SRC"/tests/integration/fslib.py \
	"$ARB_SRC"/tests/lib/arbtest.py "$U/"
chown -R "$user" "$U"
ARB="$U/arborinth"
as_user() { runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U" ARB="$ARB" ARB_SRC="$ARB_SRC" "$@"; }
expect_status 0 "fs_ops as $user" -- as_user python3 "$U/fs_ops.py"
printf '%s\n' "$OUT" | tail -1

# A jailed shell over the view, as the user.
as_user bash -c "cd '$U' && mkdir r && cd r && git init -q && git config user.email a@b &&
	git config user.name a && echo hi > f && git add f && git commit -qm init"
expect_status 0 "create as $user" -- as_user "$ARB" --workdir "$U/r" workspace create u
expect_status 0 "shell as $user" -- as_user "$ARB" --workdir "$U/r" shell u -- sh -c 'id -un; echo x >> f; cat f'
expect_eq "$(printf '%s\nhi\nx' "$user")" "$OUT" "jailed shell as $user sees and writes the view"
expect_eq "$user" "$(stat -c %U "$U/r/.git/arborinth/workspaces/u/layer/f")" "upper file owned by the user"
expect_status 0 "delete as $user" -- as_user "$ARB" --workdir "$U/r" workspace delete u --force

# Passthrough needs CAP_SYS_ADMIN: asked for by an ordinary user, the view says why it
# writes through its daemon instead, and works.
expect_status 0 "create --io passthrough as $user" -- \
	as_user "$ARB" --workdir "$U/r" workspace create pt --io passthrough
expect_status 0 "info as $user" -- as_user "$ARB" --workdir "$U/r" workspace info pt
expect_match "io: +daemon \(passthrough unavailable: no CAP_SYS_ADMIN\)" "$OUT" \
	"an ordinary user's view falls back to the daemon"
expect_status 0 "write as $user" -- as_user sh -c "echo new > '$U/r/.git/arborinth/workspaces/pt/workdir/n' &&
	cat '$U/r/.git/arborinth/workspaces/pt/workdir/n'"
expect_eq "new" "$OUT" "and writes through it"
expect_status 0 "delete as $user" -- as_user "$ARB" --workdir "$U/r" workspace delete pt --force

finish
