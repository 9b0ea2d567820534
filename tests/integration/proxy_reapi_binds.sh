#!/usr/bin/env bash
# Backends from bind files (backends = [...]): the reapi backend from a bind file used by a
# real box, precedence, --explain (text and JSON), errors, box-writable files refused.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"
. "$ARB_SRC/tests/lib/box_py.sh"

box_py_require
/usr/bin/python3 -c 'import grpc' 2>/dev/null || skip "python3-grpcio is not installed"
box_py_run reapi_binds_test.py
finish
