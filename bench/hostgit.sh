#!/usr/bin/env bash
# bench/hostgit.sh: what fs/hostgit.c costs: `git status` in a workspace's view, run on the
# host (no box running, and while a box runs, so that the daemon asks /proc who calls) and
# inside a box, with this build (ARB) and a base build (ARB_BASE, e.g. main's), side by side.
#
#   ARB=build/cli/arborinth ARB_BASE=/path/to/main/build/cli/arborinth \
#       bench/hostgit.sh [--files N] [--runs N]
#
# Each figure is the median of RUNS timed runs (after one warm-up) of `git status
# --porcelain` (in a box: 3 boxes of RUNS/3 runs each); the ratio is this build's median over
# the base's, measured in the same run, alternating, because these machines are shared and
# noisy. The repository (N files in folders of 100)
# and the workspaces live under a temporary folder that is removed on exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(dirname "$HERE")
ARB=${ARB:-$SRC/build/cli/arborinth}
ARB_BASE=${ARB_BASE:?ARB_BASE: the arborinth binary to compare with}
FILES=5000
RUNS=15
while [ $# -gt 0 ]; do
	case "$1" in
	--files) FILES=$2 && shift ;;
	--runs) RUNS=$2 && shift ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
	*) echo "hostgit.sh: unknown argument '$1'" >&2 && exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/var/tmp}/arb-hostgit.XXXXXX")
cleanup() {
	for r in "$W"/r-*; do
		[ -d "$r/.git/arborinth" ] || continue
		for ws in base this; do
			"$(cat "$r/.arb")" --workdir "$r" workspace delete "$ws" >/dev/null 2>&1 || true
		done
	done
	rm -rf "$W"
}
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

# The same loop inside a box (its start is not counted).
box_times() { # box_times ARB REPO WS
	"$1" --workdir "$2" shell "$3" -- sh -c 'git status --porcelain >/dev/null 2>&1
		for i in $(seq '"$RUNS"'); do t0=$(date +%s%N); git status --porcelain >/dev/null 2>&1
		t1=$(date +%s%N); echo $(((t1 - t0) / 1000)); done'
}

mkrepo() {
	local d=$1
	mkdir -p "$d"
	git -C "$d" init -q -b main
	for ((i = 0; i < FILES; i++)); do
		[ $((i % 100)) = 0 ] && mkdir -p "$d/d$((i / 100))"
		printf 'file %d\n' "$i" >"$d/d$((i / 100))/f$i.txt"
	done
	git -C "$d" add -A
	git -C "$d" -c user.name=b -c user.email=b@b commit -q -m files
}

# One timed `git status` on the host in $1, in microseconds.
once() {
	local t0 t1
	t0=$(date +%s%N)
	git -C "$1" status --porcelain >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}

# Both workspaces first; then every measurement alternates base and this, run by run, so that
# the machine's load drifts over both alike.
declare -A exe view
for which in base this; do
	exe[$which]=$ARB
	[ "$which" = base ] && exe[$which]=$ARB_BASE
	r=$W/r-$which
	mkrepo "$r"
	echo "${exe[$which]}" >"$r/.arb"
	"${exe[$which]}" --workdir "$r" workspace create "$which" >/dev/null
	view[$which]=$r/.git/arborinth/workspaces/$which/workdir
	echo "edited" >>"${view[$which]}/d0/f0.txt"
	git -C "${view[$which]}" status --porcelain >/dev/null 2>&1 # warm-up
done
for s in host host_boxed box; do
	: >"$W/$s.base"
	: >"$W/$s.this"
done
for _ in $(seq "$RUNS"); do
	for which in base this; do once "${view[$which]}" >>"$W/host.$which"; done
done
# While a box runs (listed with the daemon), the host's answers ask /proc who calls.
for which in base this; do
	"${exe[$which]}" --workdir "$W/r-$which" shell "$which" -- sleep 600 >/dev/null 2>&1 &
	eval "bg_$which=\$!"
done
sleep 1
for _ in $(seq "$RUNS"); do
	for which in base this; do once "${view[$which]}" >>"$W/host_boxed.$which"; done
done
kill "$bg_base" "$bg_this" 2>/dev/null || true # shell forwards SIGTERM to the box
wait "$bg_base" "$bg_this" 2>/dev/null || true
RUNS1=$RUNS
RUNS=$(((RUNS + 2) / 3))
for _ in 1 2 3; do
	for which in base this; do box_times "${exe[$which]}" "$W/r-$which" "$which" >>"$W/box.$which"; done
done
RUNS=$RUNS1
declare -A result
for s in host host_boxed box; do
	for which in base this; do result[$which,$s]=$(median <"$W/$s.$which"); done
done

printf 'git status --porcelain in a view of %d files, median of %d runs (microseconds)\n' \
	"$FILES" "$RUNS"
printf '%-28s %10s %10s %7s\n' subject base this ratio
for s in host host_boxed box; do
	b=${result[base,$s]} t=${result[this,$s]}
	printf '%-28s %10d %10d %7s\n' "$s" "$b" "$t" "$(awk -v b="$b" -v t="$t" 'BEGIN {printf "%.2f", t / b}')"
done
