#!/usr/bin/env bash
# The credential proxy and relay on the host over real sockets: forwarding and the credential
# swap, streaming, big and chunked bodies, keep-alive, every policy refusal with its control,
# key redaction, TLS verification (right CA/host passes, wrong host or CA fails), upstream
# failures, 64 concurrent streams, client abort, hostile input, and the request records.
. "$(dirname "$0")/lib.sh"

HARNESS="$ARB_BUILD/tests/proxy_harness"
[ -x "$HARNESS" ] || { fail "proxy_harness not built at $HARNESS"; finish; }
command -v openssl >/dev/null || skip "openssl command not installed"
if python3 "$ARB_SRC/tests/proxy/host_test.py" "$HARNESS" "$T"; then pass; else fail "host_test.py"; fi
finish
