#!/usr/bin/env bash
# `arborinth doctor`: each check found as it is on this machine, and found missing where it
# really is missing (a box with no user namespaces and no /dev/fuse, a PATH without bwrap, a
# repository on a FUSE view), as root and as an ordinary user; credentials are never printed.
. "$(dirname "$0")/lib.sh"
command -v bwrap >/dev/null || skip "no bwrap"
[ -e /dev/fuse ] || skip "no /dev/fuse"

mkrepo "$T/r"
names='bubblewrap user namespaces /dev/fuse fusermount3 allow_other limits FUSE passthrough'
names="$names FUSE over io_uring project file system claude codex opencode"

# This machine: everything required is there.
expect_status 0 "doctor" -- "$ARB" --workdir "$T/r" doctor
expect_match '^ok +bubblewrap +/.*bwrap \(bubblewrap [0-9]' "$OUT" "bwrap found with its version"
expect_match '^ok +user namespaces ' "$OUT" "a box was made"
expect_match '^ok +/dev/fuse ' "$OUT" "/dev/fuse opens"
expect_match "^ok +project file system +$T/r is on " "$OUT" "the repository's file system"
expect_status 0 "doctor --json" -- "$ARB" --workdir "$T/r" doctor --json
got=$(python3 -c 'import json,sys
v=json.load(sys.stdin)
assert all(set(c)=={"name","status","required","detail","fix"} for c in v), v
assert all(c["status"] in ("ok","degraded","missing") for c in v)
assert all((c["fix"] is None)==(c["status"]=="ok") for c in v)
print(" ".join(c["name"] for c in v))' <<<"$OUT")
expect_eq "$names" "$got" "--json lists every check"

# No bwrap on PATH: required and missing, exit 1, one line on stderr.
mkdir "$T/empty"
expect_status 1 "doctor without bwrap" -- env PATH="$T/empty" "$ARB" --workdir "$T/r" doctor
expect_match '^MISSING +bubblewrap +bwrap is not on PATH' "$OUT" "bwrap reported missing"
expect_match 'fix: install bubblewrap' "$OUT" "with its fix"
expect_one_line_error "doctor without bwrap"

# In a box with user namespaces off and no /dev/fuse: both found missing, for real.
expect_status 1 "doctor in a box without user namespaces or /dev/fuse" -- \
	bwrap --unshare-user --disable-userns --ro-bind / / --dev /dev --proc /proc \
	--bind "$T" "$T" "$ARB" --workdir "$T/r" doctor
expect_match '^MISSING +user namespaces +.*(namespace|max_user_namespaces)' "$OUT" \
	"user namespaces missing in the box"
expect_match '^MISSING +/dev/fuse +no /dev/fuse \(No such file' "$OUT" \
	"/dev/fuse missing in the box"
expect_match '^(ok|MISSING) +fusermount3 +(/|fusermount3 is)' "$OUT" \
	"uid 0 of a user namespace is not taken for root"
if grep -q 'not needed: root mounts the view itself' <<<"$OUT"; then
	fail "root of a user namespace is not the host's root"
else pass; fi

# What a create that failed must leave as it was: every file of the repository and its state
# (names; a mounted view's contents, SQLite's -wal and -shm files and the project cache that
# any command writes aside), refs, remotes, local config, the state's rows.
state_of() { # REPO
	(
		cd "$1"
		find . -path '*/workdir' -prune -o ! -name 'state.db-*' ! -name repo.cache -print |
			LC_ALL=C sort
		git for-each-ref
		git remote -v
		git config --local --list
		db=$(find . -path '*/workdir' -prune -o -name state.db -print | head -1)
		[ -z "$db" ] || sqlite3 "$db" 'SELECT count(*) FROM workspaces;
			SELECT count(*) FROM audit_workspaces; SELECT count(*) FROM audit_runs;'
	)
}
# fuse_fails WHAT CAUSE-REGEX REPO -- CMD...: create fails with one line naming the cause and
# pointing at doctor, and REPO is as it was.
fuse_fails() {
	local what=$1 cause=$2 repo=$3 before
	shift 4
	before=$(state_of "$repo")
	expect_status 1 "create $what" -- "$@"
	expect_match "$cause.*'arborinth doctor'" "$ERR" "create $what names the cause"
	expect_one_line_error "create $what"
	expect_eq "$before" "$(state_of "$repo")" "create $what leaves nothing behind"
}

# A view that cannot come up says so and points at doctor; a first create leaves no state.
fuse_fails "without /dev/fuse" "cannot mount views here: no /dev/fuse \\(No such file" "$T/r" -- \
	bwrap --bind / / --dev /dev --proc /proc --chdir "$T/r" "$ARB" workspace create nofuse
# Control: the same repository, FUSE there: created.
expect_status 0 "create with /dev/fuse" -- "$ARB" --workdir "$T/r" workspace create keep
if [ "$(id -u)" = 0 ]; then
	fuse_fails "with /dev/null at /dev/fuse" "no /dev/fuse \\(what is there is not FUSE's device" \
		"$T/r" -- unshare -m sh -c 'mount --bind /dev/null /dev/fuse && exec "$@"' sh \
		"$ARB" --workdir "$T/r" workspace create devnull
	# Root of a user namespace (no mount namespace of its own): the kernel refuses, and
	# fusermount3 is not setuid there. Nothing made, the audit of the attempt forgotten.
	fuse_fails "in a user namespace" "cannot mount the view: mount refused at .*fusermount3: mount failed" \
		"$T/r" -- unshare -U -r "$ARB" --workdir "$T/r" workspace create userns
fi
expect_status 0 "delete keep" -- "$ARB" --workdir "$T/r" workspace delete keep

# A client with a key: found, and the key never printed. Control: without the key, degraded.
mkdir "$T/bin"
printf '#!/bin/sh\nexit 0\n' >"$T/bin/claude"
chmod +x "$T/bin/claude"
key=sk-ant-doctor-secret-0123456789
expect_status 0 "doctor with claude and a key" -- env PATH="$T/bin:$PATH" HOME="$T/home" \
	ANTHROPIC_API_KEY=$key "$ARB" --workdir "$T/r" doctor
expect_match "^ok +claude +$T/bin/claude, with an API key in the environment" "$OUT" \
	"claude found with its credential"
if grep -q "$key" <<<"$OUT$ERR"; then fail "the key was printed"; else pass; fi
expect_status 0 "doctor with claude and no key" -- env -u ANTHROPIC_API_KEY \
	PATH="$T/bin:$PATH" HOME="$T/home" "$ARB" --workdir "$T/r" doctor
expect_match "^degraded +claude +$T/bin/claude, but no credential" "$OUT" \
	"claude without a credential is degraded"

# From inside a view, doctor looks at the view's origin (core/state_dir.c), not on FUSE.
expect_status 0 "create" -- "$ARB" --workdir "$T/r" workspace create ws
expect_status 0 "doctor in a view" -- "$ARB" --workdir "$T/r/.git/arborinth/workspaces/ws/workdir" doctor
if grep -q 'is on a FUSE file system' <<<"$OUT"; then fail "a view taken for its own repository"; else pass; fi
expect_status 0 "delete" -- "$ARB" --workdir "$T/r" workspace delete ws
# A repository that is on FUSE (bindfs, when installed): its file system is reported.
if command -v bindfs >/dev/null; then
	mkdir "$T/fuse"
	bindfs "$T/r" "$T/fuse"
	expect_status 0 "doctor on bindfs" -- "$ARB" --workdir "$T/fuse" doctor
	expect_match '^ok +project file system +.* is on a FUSE file system \(tested on bindfs' "$OUT" \
		"a repository on FUSE is reported"
	fusermount3 -u "$T/fuse"
fi

# As an ordinary user: fusermount3 must be setuid root, allow_other is read from fuse.conf.
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	user=arbtest
	id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null || skip "cannot create user $user"
	chmod 0666 /dev/fuse
	chmod 0755 "$T"
	U="$T/user"
	mkdir "$U"
	cp "$(dirname "$ARB")"/arborinth* "$(dirname "$ARB")"/*.so "$U/" 2>/dev/null || cp "$ARB" "$U/"
	chown -R "$user" "$U"
	expect_status 0 "doctor as $user" -- runuser -u "$user" -- env HOME="/home/$user" \
		"$U/arborinth" --workdir "$U" doctor
	expect_match '^ok +user namespaces ' "$OUT" "$user makes a box"
	expect_match "^ok +fusermount3 +/.*fusermount3, setuid root" "$OUT" "$user's fusermount3"
	expect_match '^(ok|degraded) +allow_other +user_allow_other is' "$OUT" "$user's allow_other"
	expect_match '^degraded +FUSE passthrough +.*(CAP_SYS_ADMIN|no FUSE passthrough)' "$OUT" \
		"$user has no passthrough"
	expect_match '^ok +project file system +not in a git repository' "$OUT" \
		"outside a repository nothing is checked"

	# Create as the user where FUSE is not usable: each cause named, nothing left behind.
	# Each runs in a mount namespace of its own, where root changed one thing first.
	as_u() { runuser -u "$user" -- env HOME="/home/$user" "$@"; }
	in_ns() { # SETUP -- CMD...: CMD as the user after SETUP (sh, as root) in a new mount ns
		local setup=$1
		shift 2
		unshare -m sh -c "$setup"' && exec runuser -u "$0" -- env HOME="/home/$0" "$@"' \
			"$user" "$@"
	}
	as_u sh -c "cd '$U' && git init -q ur && cd ur && echo hi > f && git add f &&
		git -c user.name=a -c user.email=a@b commit -qm init"
	expect_status 0 "create as $user" -- as_u "$U/arborinth" --workdir "$U/ur" workspace create keep
	# Control: a mount namespace of its own changes nothing by itself.
	expect_status 0 "create as $user in a mount namespace" -- in_ns true -- \
		"$U/arborinth" --workdir "$U/ur" workspace create ns
	expect_status 0 "delete ns" -- as_u "$U/arborinth" --workdir "$U/ur" workspace delete ns
	cp /usr/bin/fusermount3 "$T/fusermount3-plain" && chmod 0755 "$T/fusermount3-plain"
	mknod -m 0600 "$T/fuse-0600" c 10 229
	fuse_fails "as $user, /dev/fuse not for others" "cannot open /dev/fuse: Permission denied" \
		"$U/ur" -- in_ns "mount --bind '$T/fuse-0600' /dev/fuse" -- \
		"$U/arborinth" --workdir "$U/ur" workspace create denied
	fuse_fails "as $user, fusermount3 not setuid" "fusermount3 is not setuid root" "$U/ur" -- \
		in_ns "mount --bind '$T/fusermount3-plain' /usr/bin/fusermount3" -- \
		"$U/arborinth" --workdir "$U/ur" workspace create plain
	fuse_fails "as $user, fusermount3 on a nosuid mount" "fusermount3 is on a nosuid mount" \
		"$U/ur" -- in_ns "mount --bind /usr/bin/fusermount3 /usr/bin/fusermount3 &&
		mount -o remount,bind,nosuid /usr/bin/fusermount3" -- \
		"$U/arborinth" --workdir "$U/ur" workspace create nosuid
	fuse_fails "as $user in a user namespace" "cannot mount the view: mount refused at .*fusermount3: mount failed" \
		"$U/ur" -- as_u unshare -U -r "$U/arborinth" --workdir "$U/ur" workspace create userns
	# fusermount3 refuses: /etc/fuse.conf allows this user no more mounts.
	printf 'mount_max = 0\n' >"$T/fuse.conf"
	fuse_fails "as $user, mount_max reached" "mount refused at .*fusermount3: too many FUSE" \
		"$U/ur" -- in_ns "mount --bind '$T/fuse.conf' /etc/fuse.conf" -- \
		"$U/arborinth" --workdir "$U/ur" workspace create toomany
	expect_status 0 "delete keep as $user" -- as_u "$U/arborinth" --workdir "$U/ur" \
		workspace delete keep
fi
finish
