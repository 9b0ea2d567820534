#!/usr/bin/env bash
# The reapi backend attacked from a real box (tests/proxy/reapi_attack.py): the instance check,
# header smuggling, floods, the token echoed back by the upstream, a box that never reads.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"
. "$ARB_SRC/tests/lib/box_py.sh"

box_py_require
/usr/bin/python3 -c 'import grpc' 2>/dev/null || skip "python3-grpcio is not installed"
box_py_run reapi_attack.py
finish
