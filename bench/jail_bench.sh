#!/usr/bin/env bash
# bench/jail_bench.sh [ARBORINTH] [RUNS]: what the box costs to start.
# ARB_BASE=OTHER-ARBORINTH adds that binary's shell rows to the same hyperfine run, on the same
# workspace (a build of main against a branch, say).
# `arborinth shell NAME -- true` (default jail: bubblewrap, seccomp, box-init, audit session)
# against a bare `bwrap --ro-bind / / true`; for reference `--jail none` (no box) and
# `arborinth --version` (loading the binary), and without the tool-manager mounts (the run's
# own PATH decides what they are: say which managers it had). hyperfine, medians; also the CPU time of each
# (perf stat task-clock, children included) when perf is installed. Prints Markdown tables
# (target, issue #15: at most 15 ms more than bare bwrap, median). ARB_BENCH_EXT4=1 and
# ARB_BENCH_ROUNDS=R: see below.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ARB=$(readlink -f "${1:-$top/build/cli/arborinth}")
RUNS=${2:-100}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
command -v bwrap >/dev/null || { echo "bwrap is needed (apt-get install bubblewrap)" >&2; exit 1; }
[ -x "$ARB" ] || { echo "no arborinth at $ARB (build first: scripts/build.sh)" >&2; exit 1; }

# Under /var/tmp: the box replaces /tmp, and the origin should sit where it usually does.
# ARB_BENCH_EXT4=1 (root): the repository on a fresh journaled ext4 in a loop image, as users'
# disks are (this machine's root ext4 has no journal, which changes what creating a file and
# fsync cost: every start writes checkpoints and audit rows).
dir=$(mktemp -d /var/tmp/arb-jail-bench.XXXXXX)
cleanup() {
	(cd "$dir/repo" 2>/dev/null && "$ARB" workspace delete bench --force >/dev/null 2>&1) || true
	# A delete that failed (a box still running when the script was stopped): every view
	# under $dir unmounted anyway, so that none is left to lengthen every later box's mounts.
	awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r |
		while read -r m; do fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" || true; done
	if mountpoint -q "$dir" 2>/dev/null; then umount "$dir" || umount -l "$dir"; fi
	rm -rf "$dir" "$dir.img"
}
trap cleanup EXIT
trap 'exit 1' INT TERM PIPE HUP
if [ "${ARB_BENCH_EXT4:-}" = 1 ]; then
	truncate -s 1G "$dir.img"
	mkfs.ext4 -q -F "$dir.img"
	mount -o loop "$dir.img" "$dir"
	echo "repository on a fresh journaled ext4 (loop image $dir.img)" >&2
fi
git init -q -b main "$dir/repo"
git -C "$dir/repo" -c user.email=b@example.com -c user.name=bench commit -q --allow-empty -m init
cd "$dir/repo"
"$ARB" workspace create bench >/dev/null

# The box's bwrap argv as --explain prints it (fd options dropped), to time its parts alone.
argv=$("$ARB" shell bench --explain -- true | sed -n '/^== bwrap argv/,$p' | tail -n +2 |
	sed 's/ \\$//; s/^    //' | tr '\n' ' ' | sed 's/--seccomp 3 --info-fd 4 //')
# box-init: bound at /run/arborinth/box-init, or run from its host path when the box shows it.
box_init=$(printf '%s\n' "$argv" | sed 's/.* -- \([^ ]*\) __box-init .*/\1/')
box_argv=${argv% -- "$box_init" __box-init*}

base=()
if [ -n "${ARB_BASE:-}" ]; then
	BASE=$(readlink -f "$ARB_BASE")
	base=(-n "arborinth shell -- true, ARB_BASE" "$BASE shell bench -- true"
		-n "arborinth shell --jail none -- true, ARB_BASE" "$BASE shell bench --jail none -- true")
fi

# ARB_BENCH_ROUNDS=R: R hyperfine runs over all the commands, RUNS/R runs each, their times
# pooled: on a machine whose speed drifts (a shared VM), every row sees the same drift.
ROUNDS=${ARB_BENCH_ROUNDS:-1}
for i in $(seq "$ROUNDS"); do
	hyperfine -N --warmup 5 --runs "$(((RUNS + ROUNDS - 1) / ROUNDS))" --export-json "$dir/h$i.json" \
		-n "bwrap --ro-bind / / true" "bwrap --ro-bind / / true" \
		"${base[@]}" \
		-n "arborinth shell -- true" "$ARB shell bench -- true" \
		-n "arborinth shell --no-tool-managers -- true" "$ARB shell bench --no-tool-managers -- true" \
		-n "arborinth shell --jail none -- true" "$ARB shell bench --jail none -- true" \
		-n "arborinth --version" "$ARB --version" \
		-n "bwrap, the box's options and mounts, true" "$box_argv -- /bin/true" \
		-n "the same, box-init then true" "$box_argv -- $box_init __box-init -- /bin/true" >&2
done

python3 - "$dir"/h*.json <<'PY'
import json, statistics, sys
r = None
for path in sys.argv[1:]:
    res = json.load(open(path))["results"]
    if r is None:
        r = res
    else:
        for x, y in zip(r, res):
            x["times"] += y["times"]
for x in r:
    x["median"] = statistics.median(x["times"])
    x["mean"] = statistics.mean(x["times"])
    x["stddev"] = statistics.stdev(x["times"]) if len(x["times"]) > 1 else 0.0
base = r[0]["median"]
print("| command | median | mean ± sd | added to bare bwrap | ratio |")
print("| --- | --- | --- | --- | --- |")
for x in r:
    print("| `%s` | %.1f ms | %.1f ± %.1f ms | %+.1f ms | %.2f |" % (
        x["command"], x["median"] * 1e3, x["mean"] * 1e3, x["stddev"] * 1e3,
        (x["median"] - base) * 1e3, x["median"] / base))
PY

if command -v perf >/dev/null 2>&1; then
	echo
	echo "| command | CPU time (task-clock, children included, mean of $RUNS) |"
	echo "| --- | --- |"
	cpu_base=()
	[ -n "${BASE:-}" ] && cpu_base=("$BASE shell bench -- true")
	for c in "bwrap --ro-bind / / true" "${cpu_base[@]}" "$ARB shell bench -- true" \
		"$ARB shell bench --no-tool-managers -- true" "$ARB shell bench --jail none -- true" \
		"$ARB --version" "$box_argv -- /bin/true" \
		"$box_argv -- $box_init __box-init -- /bin/true"; do
		ms=$(perf stat -r "$RUNS" -x, -e task-clock $c 2>&1 >/dev/null | tail -1 | cut -d, -f1)
		name=${c/#$box_argv/bwrap BOX-OPTIONS-AND-MOUNTS}
		[ -n "${BASE:-}" ] && [ "${c#"$BASE"}" != "$c" ] && name="arborinth${c#"$BASE"}, ARB_BASE"
		name=${name/#$ARB/arborinth}
		echo "| \`$name\` | $ms ms |"
	done
fi
