#!/usr/bin/env bash
# bench/reapi.sh: the reapi backend's cost. A fake REAPI server (python3-grpcio) is called by
# the same grpcio client directly on the host and from a box through the relay and the
# proxy's HTTP/2 bridge: mean GetCapabilities round trip over 200 calls, and a 64 MiB
# ByteStream read (after its write). Run from the source tree after a build:
#   bash bench/reapi.sh [build]     (ARB=... to name the binary)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
ARB=${ARB:-$SRC/${1:-build}/cli/arborinth}
PY=/usr/bin/python3
T=$(mktemp -d /var/tmp/arb-reapi-bench.XXXXXX)
trap 'kill $FAKE 2>/dev/null || true; cd /; for m in $(awk -v t="$T" "\$5 ~ \"^\"t {print \$5}" /proc/self/mountinfo | sort -r); do fusermount3 -u -z "$m" 2>/dev/null || true; done; rm -rf "$T"' EXIT
$PY "$SRC/tests/proxy/reapi_fake.py" "$T/fake.log" "$T/port" &
FAKE=$!
for _ in $(seq 100); do [ -e "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
mkdir "$T/repo" && cd "$T/repo"
git init -q -b main && echo x >x && git add x && git -c user.email=b@b -c user.name=b commit -qm x
"$ARB" workspace create w >/dev/null
WS=$T/repo/.git/arborinth/workspaces/w
cp "$SRC/tests/proxy/reapi_client.py" "$SRC/tests/proxy/reapi_pb.py" "$WS/tmp/"
echo "bench-token" >"$T/token"
direct=$($PY "$SRC/tests/proxy/reapi_client.py" "127.0.0.1:$PORT" "" 64)
boxed=$("$ARB" shell w --backend "reapi=grpc://127.0.0.1:$PORT,token-file=$T/token" -- \
	$PY /tmp/reapi_client.py 127.0.0.1:8717 "" 64)
$PY - "$direct" "$boxed" <<'PYEOF'
import json, sys
d, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert d["big_ok"] and b["big_ok"], "64 MiB read not intact"
print("GetCapabilities mean: direct %.3f ms, through the proxy %.3f ms (+%.3f ms per call)"
      % (d["call_ms"], b["call_ms"], b["call_ms"] - d["call_ms"]))
print("64 MiB ByteStream read: direct %.3f s (%.0f MiB/s), through the proxy %.3f s (%.0f MiB/s)"
      % (d["big_read_s"], 64 / d["big_read_s"], b["big_read_s"], 64 / b["big_read_s"]))
PYEOF
