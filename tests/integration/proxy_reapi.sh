#!/usr/bin/env bash
# Remote builds over h2c (the reapi backend) end to end: a real box's grpcio client against a
# fake REAPI server (python3-grpcio) through the relay and the proxy's HTTP/2 bridge.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"

command -v bwrap >/dev/null 2>&1 || skip "bwrap is not installed"
bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / true 2>/dev/null ||
	skip "bwrap cannot create user, pid and network namespaces here"
[ -e /dev/fuse ] || skip "no /dev/fuse for the workspace view"
/usr/bin/python3 -c 'import grpc' 2>/dev/null || skip "python3-grpcio is not installed"
if /usr/bin/python3 "$ARB_SRC/tests/proxy/reapi_test.py" "$ARB" "$T"; then pass; else fail "reapi_test.py"; fi
finish
