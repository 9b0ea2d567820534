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
expect_match '^MISSING +/dev/fuse +cannot open /dev/fuse: No such file' "$OUT" \
	"/dev/fuse missing in the box"
expect_match '^ok +fusermount3|^(ok|MISSING) +fusermount3 +/' "$OUT" \
	"uid 0 of a user namespace is not taken for root"
if grep -q 'not needed: root mounts the view itself' <<<"$OUT"; then
	fail "root of a user namespace is not the host's root"
else pass; fi

# A view that cannot come up says so and points at doctor.
expect_status 1 "create without /dev/fuse" -- bwrap --bind / / --dev /dev --proc /proc \
	--chdir "$T/r" "$ARB" workspace create nofuse
expect_match "arborinth doctor" "$ERR" "the mount failure points at doctor"
expect_one_line_error "create without /dev/fuse"

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
	expect_match '^missing +project file system +.* is on a FUSE file system' "$OUT" \
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
fi
finish
