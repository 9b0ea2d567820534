#!/usr/bin/env bash
# The vertex backend attacked from a real box (tests/proxy/vertex_attack.py): paths, Google
# system parameters, the minted token echoed back, a slow reader of an endless event stream.
export TMPDIR=${ARB_JAIL_TMPDIR:-/var/tmp} # the box has its own /tmp
. "$(dirname "$0")/lib.sh"
. "$ARB_SRC/tests/lib/box_py.sh"

box_py_require
box_py_run vertex_attack.py
finish
