#!/usr/bin/env bash
# `shell --net --backend`: the proxy on the host's loopback at a port of the session's own,
# demanding the session's token, which the box reads from a private file (no key variable,
# nothing on a command line); requests without it are refused, from the box and the host.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user and pid namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for the client in the box"
if python3 "$ARB_SRC/tests/proxy/boxnet_test.py" "$ARB" "$T"; then pass; else fail "boxnet_test.py"; fi
finish
