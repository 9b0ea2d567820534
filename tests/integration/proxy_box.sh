#!/usr/bin/env bash
# The credential proxy end to end: real bubblewrap boxes started by `arborinth shell
# --backend`, whose python3 (urllib), curl and node reach the fake upstream only through
# box-init's relay and the host proxy. The upstream sees the real key; the box's environment,
# processes and visible files never hold it (the same search finds the placeholder); events
# stream through one by one; TLS upstreams are verified; input errors are one line.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user, pid and network namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
command -v openssl >/dev/null || skip "openssl command not installed"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for the client in the box"
if python3 "$ARB_SRC/tests/proxy/box_test.py" "$ARB" "$T"; then pass; else fail "box_test.py"; fi
finish
