#!/usr/bin/env bash
# bench/box_start_proxy.sh: what a backend adds to a box's start, this build against another
# (ARB_BASE: the in-process proxy of main at 680b828, say) in one run. Each build gets a fresh
# one-commit repository and workspace of its own; a local fake upstream
# (tests/proxy/fake_upstream.py) serves the backend. Interleaved rounds of hyperfine -N over
# `shell w -- true` without a backend (the floor), with `--backend anthropic=http://...`
# (ANTHROPIC_API_KEY set), for each build: medians, minimums and CPU (user+sys of every
# process, hyperfine's), with the deltas and ratios printed at the end. Then PAIRED runs
# (default 100) of the same commands one after the other in a shuffled order each time, wall
# and CPU (wait4's rusage of the command and every process it waited for) of each: the
# median of the differences within each run is the steadier figure on a loaded machine.
#
#   ARB=build/cli/arborinth [ARB_BASE=/path/to/other/arborinth] bench/box_start_proxy.sh [RUNS] [ROUNDS] [PAIRED]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ARB=$(realpath "${ARB:-$HERE/../build/cli/arborinth}")
BASE=${ARB_BASE:+$(realpath "$ARB_BASE")}
RUNS=${1:-30}
ROUNDS=${2:-4}
PAIRED=${3:-100}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
T=$(mktemp -d /var/tmp/arb-boxstart.XXXXXX)
UP=
builds=(this)
declare -A bin=([this]=$ARB)
[ -n "$BASE" ] && builds+=(base) && bin[base]=$BASE
cleanup() {
	[ -n "$UP" ] && kill "$UP" 2>/dev/null
	for b in "${builds[@]}"; do
		"${bin[$b]}" --workdir "$T/$b/repo" workspace delete w --force >/dev/null 2>&1 || true
	done
	rm -rf "$T"
}
trap cleanup EXIT
for b in "${builds[@]}"; do
	git init -q "$T/$b/repo"
	echo x >"$T/$b/repo/f"
	git -C "$T/$b/repo" add -A
	git -C "$T/$b/repo" -c user.name=bench -c user.email=bench@localhost commit -qm base
	"${bin[$b]}" --workdir "$T/$b/repo" workspace create w >/dev/null
done
python3 "$HERE/../tests/proxy/fake_upstream.py" --log /dev/null >"$T/up.port" &
UP=$!
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
PORT=$(head -1 "$T/up.port")
export ANTHROPIC_API_KEY=sk-bench-key

names=() cmds=()
for b in "${builds[@]}"; do
	names+=("$b, no backend" "$b, with backend")
	cmds+=("${bin[$b]} --workdir $T/$b/repo shell w -- true"
		"${bin[$b]} --workdir $T/$b/repo shell w --backend anthropic=http://127.0.0.1:$PORT -- true")
done
echo "# box start: $ROUNDS rounds of $RUNS runs each, hyperfine -N; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
	args=()
	for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
	hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$T/start.$r.json" "${args[@]}" >/dev/null
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$T"/start.*.json <<'PY'
import json, statistics, sys
times, cpu = {}, {}
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
        cpu.setdefault(r["command"], []).append(r["user"] + r["system"])
med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
low = {k: min(v) * 1e3 for k, v in times.items()}
c = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
print("| command | wall median | wall min | CPU (user+sys, median of rounds) | runs |")
print("| --- | --- | --- | --- | --- |")
for k in times:
    print("| %s | %.2f ms | %.2f ms | %.2f ms | %d |" % (k, med[k], low[k], c[k], len(times[k])))
print()
for b in ("this", "base"):
    n, w = b + ", no backend", b + ", with backend"
    if n in med:
        print("%s: the backend adds %+.2f ms wall (%.3fx), %+.2f ms min, %+.2f ms CPU"
              % (b, med[w] - med[n], med[w] / med[n], low[w] - low[n], c[w] - c[n]))
if "base, with backend" in med:
    a, b = "this, with backend", "base, with backend"
    print("this against base, with backend: %+.2f ms wall (%.3fx), %+.2f ms min, %+.2f ms CPU"
          % (med[a] - med[b], med[a] / med[b], low[a] - low[b], c[a] - c[b]))
    a, b = "this, no backend", "base, no backend"
    print("this against base, no backend:   %+.2f ms wall (%.3fx), %+.2f ms min, %+.2f ms CPU"
          % (med[a] - med[b], med[a] / med[b], low[a] - low[b], c[a] - c[b]))
PY

# Paired: each run times every command once, in a shuffled order.
printf '%s\n' "${names[@]}" >"$T/names"
printf '%s\n' "${cmds[@]}" >"$T/cmds"
echo
echo "# paired: $PAIRED runs of each, shuffled order; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$T/names" "$T/cmds" "$PAIRED" <<'PY'
import os, random, statistics, sys, time
names = open(sys.argv[1]).read().splitlines()
cmds = [c.split() for c in open(sys.argv[2]).read().splitlines()]
runs = int(sys.argv[3])
wall = {n: [] for n in names}
cpu = {n: [] for n in names}
null = os.open(os.devnull, os.O_RDWR)
for i in range(runs + 3):
    order = list(range(len(cmds)))
    random.shuffle(order)
    for k in order:
        t = time.perf_counter()
        pid = os.posix_spawn(cmds[k][0], cmds[k], os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, null, 0),
                                           (os.POSIX_SPAWN_DUP2, null, 1)])
        _, status, ru = os.wait4(pid, 0)
        w = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit("%s failed" % names[k])
        if i >= 3:  # the first three: warm-up
            wall[names[k]].append(w * 1e3)
            cpu[names[k]].append((ru.ru_utime + ru.ru_stime) * 1e3)
print("| command | wall median | wall min | CPU median | runs |")
print("| --- | --- | --- | --- | --- |")
for n in names:
    print("| %s | %.2f ms | %.2f ms | %.2f ms | %d |" % (n, statistics.median(wall[n]),
                                                      min(wall[n]), statistics.median(cpu[n]), runs))
print()
def delta(a, b, what):
    dw = statistics.median(x - y for x, y in zip(wall[a], wall[b]))
    dc = statistics.median(x - y for x, y in zip(cpu[a], cpu[b]))
    r = statistics.median(x / y for x, y in zip(wall[a], wall[b]))
    print("%s %+.2f ms wall (%.3fx), %+.2f ms CPU (medians of the paired differences)"
          % (what, dw, r, dc))
for b in ("this", "base"):
    if b + ", no backend" in wall:
        delta(b + ", with backend", b + ", no backend", b + ": the backend adds")
if "base, with backend" in wall:
    delta("this, with backend", "base, with backend", "this against base, with backend:")
    delta("this, no backend", "base, no backend", "this against base, no backend:  ")
PY
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
