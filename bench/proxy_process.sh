#!/usr/bin/env bash
# bench/proxy_process.sh: what the credential proxy as its own program (arborinth_proxy) costs:
# box start with a backend (`shell w --backend anthropic=... -- true`, hyperfine medians) and
# the median latency of a request from the box through box-init's relay and the proxy to a
# local fake upstream (GET /v1/models on one keep-alive connection, python3's http.client in
# the box), for this build and, with ARB_BASE=OTHER-ARBORINTH, that one on the same repository.
#
#   ARB=build/cli/arborinth [ARB_BASE=/path/to/old/arborinth] bench/proxy_process.sh [RUNS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ARB=$(realpath "${ARB:-$HERE/../build/cli/arborinth}")
RUNS=${1:-60}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
T=$(mktemp -d /var/tmp/arb-proxyproc.XXXXXX)
UP=
cleanup() {
	[ -n "$UP" ] && kill "$UP" 2>/dev/null
	for a in "$ARB" ${ARB_BASE:+"$ARB_BASE"}; do
		"$a" --workdir "$T/repo" workspace delete w --force >/dev/null 2>&1 || true
	done
	rm -rf "$T"
}
trap cleanup EXIT
git init -q "$T/repo"
echo x >"$T/repo/f"
git -C "$T/repo" add -A
git -C "$T/repo" -c user.name=bench -c user.email=bench@localhost commit -qm base
"$ARB" --workdir "$T/repo" workspace create w >/dev/null
python3 "$HERE/../tests/proxy/fake_upstream.py" --log "$T/up.log" >"$T/up.port" &
UP=$!
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
PORT=$(head -1 "$T/up.port")
export ANTHROPIC_API_KEY=sk-bench-key
BACKEND="anthropic=http://127.0.0.1:$PORT"
cd "$T/repo"

names=() cmds=()
for a in "$ARB" ${ARB_BASE:+"$ARB_BASE"}; do
	names+=("$a")
	cmds+=("$a shell w --backend $BACKEND -- true")
done
# Rounds of hyperfine over both binaries in turn (the machine's load drifts: each round sees
# both under the same conditions); the median of all runs and the minimum.
ROUNDS=${ARB_BENCH_ROUNDS:-5}
echo "## box start with a backend ($ROUNDS rounds of $RUNS runs each, hyperfine -N)"
for r in $(seq "$ROUNDS"); do
	hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$T/start.$r.json" "${cmds[@]}" >/dev/null
done
python3 - "$T"/start.*.json <<'PY'
import json, statistics, sys
times, cpu = {}, {}
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        times.setdefault(r["command"].split()[0], []).extend(r["times"])
        cpu.setdefault(r["command"].split()[0], []).append(r["user"] + r["system"])
for cmd, t in times.items():
    print("| %s | median %.2f ms | min %.2f ms | CPU (user+sys, all processes) %.2f ms | %d runs |"
          % (cmd, statistics.median(t) * 1e3, min(t) * 1e3, statistics.median(cpu[cmd]) * 1e3, len(t)))
PY

CLIENT='import http.client, os, statistics, time
u = os.environ["ANTHROPIC_BASE_URL"].split("//")[1]
h, p = u.split(":")
c = http.client.HTTPConnection(h, int(p.split("/")[0]))
k = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
ts = []
for i in range(600):
    t = time.perf_counter()
    c.request("GET", "/v1/models", headers=k)
    r = c.getresponse(); r.read()
    ts.append(time.perf_counter() - t)
    assert r.status == 200, r.status
ts = ts[100:]
print("%.1f" % (statistics.median(ts) * 1e6))'
echo "## request latency from the box (median of 500 keep-alive GETs, 3 boxes each)"
for a in "$ARB" ${ARB_BASE:+"$ARB_BASE"}; do
	v=()
	for _ in 1 2 3; do v+=("$("$a" shell w --backend "$BACKEND" -- python3 -c "$CLIENT")"); done
	echo "| $a | ${v[*]} us |"
done
d=$(ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" python3 -c "$CLIENT")
echo "| straight to the upstream (no box, no proxy) | $d us |"
