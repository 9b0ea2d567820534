#!/usr/bin/env bash
# Remote builds over h2c (the reapi backend) end to end: a real box's grpcio client against a
# fake REAPI server (python3-grpcio) through the relay and the proxy's HTTP/2 bridge.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"
. "$ARB_SRC/tests/lib/box_py.sh"

box_py_require
/usr/bin/python3 -c 'import grpc' 2>/dev/null || skip "python3-grpcio is not installed"
box_py_run reapi_test.py
finish
