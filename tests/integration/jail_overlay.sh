#!/usr/bin/env bash
# Overlay mounts (--mount overlay:SRC:DEST, a bind file's overlay = [...]): the box sees SRC
# and changes it; the changes land in the workspace (NAME/overlay/.../upper), persist across
# runs of that workspace only, and the host's SRC never changes. Errors and guards as for
# binds; --explain shows the overlay; the host's mount table never shows it. Then the same as
# an ordinary user (a user namespace of its own for the mount).
. "$(dirname "$0")/jail_lib.sh"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || skip "the kernel has no overlayfs"
jail_setup
D=$T/data
mkdir -p "$D/sub" "$D/keep"
printf 'orig\n' >"$D/f"
printf 'sub\n' >"$D/sub/s"
printf 'keep\n' >"$D/keep/k"
before=$(tree_hash "$D")

# --- the box changes SRC; the host's copy never changes -------------------------------------
expect_status 0 "overlay: write, create, delete" -- box --mount "overlay:$D:/mnt" -- sh -c \
	'cat /mnt/f && echo changed >/mnt/f && echo new >/mnt/g && rm -r /mnt/sub && mkdir /mnt/d && ls /mnt | tr "\n" " "'
expect_eq "orig
d f g keep " "$OUT" "the box sees SRC and its own changes"
expect_eq "$before" "$(tree_hash "$D")" "the host's SRC is unchanged"
UP=$(echo "$WS"/overlay/%2Fmnt.*/upper)
expect_eq "changed" "$(cat "$UP/f")" "the change is in the workspace's upper dir"
[ -c "$UP/sub" ] && pass || fail "the deletion is a whiteout in the upper dir"
expect_status 0 "overlay: changes persist in the workspace" -- box --mount "overlay:$D:/mnt" -- sh -c 'cat /mnt/f /mnt/g; ls /mnt | tr "\n" " "'
expect_eq "changed
new
d f g keep " "$OUT" "a second run sees the first run's changes"
expect_status 0 "overlay: another workspace starts from SRC" -- "$ARB" shell w2 --mount "overlay:$D:/mnt" -- cat /mnt/f
expect_eq "orig" "$OUT" "w2 does not see w's changes"
mkdir -p "$T/data2" && printf 'other\n' >"$T/data2/f"
expect_status 0 "overlay: another source at the same destination" -- box --mount "overlay:$T/data2:/mnt" -- sh -c 'cat /mnt/f; ls /mnt | tr "\n" " "'
expect_eq "other
f " "$OUT" "another source starts from itself, not from the first one's changes"
# Control: a read-only bind of the same source cannot be written.
expect_status 2 "control: ro bind is read-only" -- box --mount "ro:$D:/mnt" -- sh -c 'echo x >/mnt/f'
expect_match "Read-only file system" "$ERR" "control: ro bind refuses the write"
# Host changes to files the box did not touch show through; the host never sees a mount.
printf 'host-added\n' >"$D/keep/k2"
expect_status 0 "overlay: the host's later files show" -- box --mount "overlay:$D:/mnt" -- sh -c \
	'cat /mnt/keep/k2; grep -c overlay /proc/self/mountinfo >/dev/null && echo mounted'
expect_eq "host-added
mounted" "$OUT" "lower changes show through"
rm "$D/keep/k2"
if grep -q " overlay " /proc/self/mountinfo && grep -q "$WS/overlay" /proc/self/mountinfo; then
	fail "an overlay is left in the host's mount table"
else pass; fi

# overlay:DEST overlays DEST itself.
mkdir -p "$T/same" && printf 'same\n' >"$T/same/x"
expect_status 0 "overlay:DEST" -- box --mount "overlay:$T/same" -- sh -c "echo more >>'$T/same/x'; cat '$T/same/x'"
expect_eq "same
more" "$OUT" "overlay of the destination itself"
expect_eq "same" "$(cat "$T/same/x")" "overlay:DEST leaves the host's file alone"

# --- errors and guards, one line each ------------------------------------------------------
ov_error() { # WANT-STATUS SPEC REGEX
	expect_status "$1" "--mount '$2'" -- box --mount "$2" -- true
	expect_match "$3" "$ERR" "--mount '$2' message"
	expect_one_line_error "--mount '$2'"
}
ov_error 2 "overlay:/nonexistent-$$:/mnt" "source '/nonexistent-$$' does not exist"
ov_error 2 "overlay:$D:$HOME/x" "destination $HOME/x is at or below the guard at $HOME"
ov_error 2 "overlay:$T:/mnt" "source $T would expose"
ov_error 2 "overlay:/" "/ already has a default mount"
ov_error 1 "overlay:$D/f:/mnt" "overlay at /mnt: source $D/f is not a directory"
mkdir -p "$T/a,b"
ov_error 1 "overlay:$T/a,b:/mnt" "overlayfs cannot take a path with ','"

# --- bind files ----------------------------------------------------------------------------
mkdir -p "$HOME/proj-data"
printf 'home-data\n' >"$HOME/proj-data/h"
printf 'overlay = ["~/proj-data"]\n' >"$T/ov.toml"
expect_status 0 "bind file overlay" -- box --binds "$T/ov.toml" -- sh -c "echo box >>~/proj-data/h; cat ~/proj-data/h"
expect_eq "home-data
box" "$OUT" "a bind file's overlay under \$HOME is writable in the box"
expect_eq "home-data" "$(cat "$HOME/proj-data/h")" "the host's file is unchanged"
printf 'overlay = ["~/.ssh"]\n' >"$T/ssh.toml"
expect_status 2 "bind file overlay of a credential path" -- box --binds "$T/ssh.toml" -- true
expect_match "would expose host credentials" "$ERR" "credential overlay refused"
expect_one_line_error "bind file overlay of a credential path"
printf 'overlay = [1]\n' >"$T/bad.toml"
expect_status 2 "bind file overlay not a string" -- box --binds "$T/bad.toml" -- true
expect_match "bad.toml:1:" "$ERR" "bad overlay value located"

# --- --explain -----------------------------------------------------------------------------
expect_status 0 "explain overlay" -- box --explain --mount "overlay:$D:/mnt" -- true
expect_match "/mnt  overlay $D, writes in $UP  \[user\] --mount 'overlay:$D:/mnt'" "$OUT" "explain: the overlay and its upper dir"
expect_match "kernel overlayfs mounted on the workspace's merged folder" "$OUT" "explain: how"
expect_match "--bind $WS/overlay/%2Fmnt\.[0-9a-f]{16}/merged /mnt" "$OUT" "explain: bwrap binds the merged folder"

# --- as an ordinary user: a user namespace of its own for the mount ------------------------
user=arbtest
if [ "$(id -u)" != 0 ] || ! command -v runuser >/dev/null || [ ! -u "$(command -v fusermount3)" ]; then
	echo "SKIP (part): the ordinary-user overlay needs root to switch users, runuser and a setuid fusermount3" >&2
else
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	chmod 0755 "$T"
	U=$T/user
	mkdir "$U"
	cp "$ARB" "$U/arborinth"
	chown -R "$user" "$U"
	as_user() { runuser -u "$user" -- env HOME="/home/$user" TMPDIR="$U" PATH=/usr/bin:/bin "$@"; }
	as_user bash -c "cd '$U' && mkdir r d && echo user-orig >d/f && cd r && git init -q &&
		git config user.email a@b && git config user.name a && echo hi >f && git add f &&
		git commit -qm init"
	expect_status 0 "create as $user" -- as_user "$U/arborinth" --workdir "$U/r" workspace create u
	expect_status 0 "overlay as $user" -- as_user "$U/arborinth" --workdir "$U/r" shell u --mount "overlay:$U/d:/mnt" -- sh -c 'id -un; echo user-changed >/mnt/f; cat /mnt/f'
	expect_eq "$user
user-changed" "$OUT" "an ordinary user's overlay"
	expect_eq "user-orig" "$(cat "$U/d/f")" "the user's source is unchanged"
	expect_eq "$user" "$(stat -c %U "$(echo "$U"/r/.git/arborinth/workspaces/u/overlay/%2Fmnt.*/upper/f)")" "upper file owned by the user"
	expect_status 0 "delete as $user" -- as_user "$U/arborinth" --workdir "$U/r" workspace delete u --force
fi
finish
