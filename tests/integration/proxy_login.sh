#!/usr/bin/env bash
# Logins through the proxy on the host: Claude Code and Codex login files kept on the host,
# placeholders in the box's copy, refreshes on the host (written back with the file's mode),
# the box's refreshes answered by the proxy, every login error, and 8 proxies racing for one
# single-use refresh token (tests/proxy/login_test.py).
. "$(dirname "$0")/lib.sh"

HARNESS="$ARB_BUILD/tests/proxy_harness"
[ -x "$HARNESS" ] || { fail "proxy_harness not built at $HARNESS"; finish; }
if python3 "$ARB_SRC/tests/proxy/login_test.py" "$HARNESS" "$T"; then pass; else fail "login_test.py"; fi
finish
