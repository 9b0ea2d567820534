#!/usr/bin/env bash
# The reapi backend attacked from a real box (tests/proxy/reapi_attack.py): the instance check,
# header smuggling, floods, the token echoed back by the upstream, a box that never reads.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user, pid and network namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
/usr/bin/python3 -c 'import grpc' 2>/dev/null || skip "python3-grpcio is not installed"
if /usr/bin/python3 "$ARB_SRC/tests/proxy/reapi_attack.py" "$ARB" "$T"; then pass; else fail "reapi_attack.py"; fi

# The same as an ordinary user, when root can switch to one that reaches the build tree.
user=arbtest
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null &&
	{ id "$user" >/dev/null 2>&1 || useradd -m "$user" 2>/dev/null; } &&
	runuser -u "$user" -- test -x "$ARB" -a -r "$ARB_SRC/tests/proxy/reapi_attack.py"; then
	U="$T/user"
	mkdir "$U" && chmod 0755 "$T" && chown "$user" "$U"
	if runuser -u "$user" -- env HOME="$(getent passwd "$user" | cut -d: -f6)" TMPDIR="$U" \
		/usr/bin/python3 "$ARB_SRC/tests/proxy/reapi_attack.py" "$ARB" "$U/t"; then
		pass
	else
		fail "reapi_attack.py as $user"
	fi
fi
finish
