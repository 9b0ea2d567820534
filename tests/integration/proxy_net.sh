#!/usr/bin/env bash
# The proxy's audit rows and the --allow-host CONNECT proxy, in real bubblewrap boxes: every
# request to the credential proxy (allowed and refused) is a "net" row of the box's session,
# with neither the key nor the placeholder in state.db; curl in a box reaches a local TLS
# server through a tunnel to an allowed host, another host is refused with the reason, each
# probe with its control, each tunnel a row.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user, pid and network namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
command -v openssl >/dev/null || skip "openssl command not installed"
command -v curl >/dev/null || skip "curl not installed (the client in the box)"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for the client in the box"
if python3 "$ARB_SRC/tests/proxy/net_test.py" "$ARB" "$T"; then pass; else fail "net_test.py"; fi
finish
