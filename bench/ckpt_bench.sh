#!/usr/bin/env bash
# bench/ckpt_bench.sh: checkpoints and rewind against the native routes to the same result.
#
#   ARB=build/cli/arborinth bench/ckpt_bench.sh [--runs N] [--files N] [--changed N]
#   ARB_BASE=other/build/cli/arborinth ...   also measures that binary, side by side
#
# A repository of --files files (default 50,000, made by ../shared/bench/mkrepo.py and cached
# under $ARB_BENCH_DIR, default /var/tmp/arborinth-bench), cloned onto a fresh journaled ext4
# in a loop image with a workspace of it and a native clone of it (root needed). Before every run the same --changed files (default 100) are changed again, in
# the view and in the clone, so each run records that many changed files. Subjects:
#   checkpoint        arborinth checkpoint (the view as a commit: base tree + upper layer)
#   stash create      git stash create in the clone (index refresh, tree of the changes)
#   add+write-tree    git add -A && git write-tree in the clone (all files, untracked too)
#   rewind            arborinth rewind --to base (checkpoint first, new layer, remount)
# Each figure is the median of hyperfine runs; the table gives ratios to `stash create`
# measured in the same run. Nothing is installed: missing tools are named.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(dirname "$HERE")
MKREPO=${MKREPO:-$SRC/../shared/bench/mkrepo.py}
WORK=${ARB_BENCH_DIR:-/var/tmp/arborinth-bench}
ARB=${ARB:-$SRC/build/cli/arborinth}
RUNS=10
FILES=50000
CHANGED=100

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2 && shift ;;
	--files) FILES=$2 && shift ;;
	--changed) CHANGED=$2 && shift ;;
	-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
	*) echo "ckpt_bench.sh: unknown argument '$1'" >&2 && exit 2 ;;
	esac
	shift
done
die() {
	echo "ckpt_bench.sh: $*" >&2
	exit 2
}
for t in hyperfine git python3; do
	command -v "$t" >/dev/null || die "missing: $t; install with: apt-get install $t"
done
[ -x "$ARB" ] || die "no arborinth binary at $ARB (set ARB=path/to/build/cli/arborinth)"
[ -r "$MKREPO" ] || die "no mkrepo.py at $MKREPO (set MKREPO=path/to/mkrepo.py)"
ARB=$(realpath "$ARB")
BASE_ARGS=()
if [ -n "${ARB_BASE:-}" ]; then
	[ -x "$ARB_BASE" ] || die "no arborinth binary at ARB_BASE=$ARB_BASE"
	ARB_BASE=$(realpath "$ARB_BASE")
fi

CACHE="$WORK/ckpt-repo-$FILES"
EXT4="$WORK/ckpt-ext4"
REPO="$EXT4/repo"
NATIVE="$EXT4/native"
OUT="$WORK/results/ckpt-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
arb() { "$ARB" --workdir "$REPO" "$@"; }
cleanup() {
	if mountpoint -q "$EXT4" 2>/dev/null; then
		arb workspace delete ck --force >/dev/null 2>&1 || true
		umount "$EXT4" || umount -l "$EXT4"
	fi
	rm -f "$WORK/ckpt-ext4.img"
	rmdir "$EXT4" 2>/dev/null || true
}
trap cleanup EXIT

if [ ! -e "$CACHE/.bench-ready" ]; then
	echo "# making $CACHE ($FILES files; once)" >&2
	rm -rf "$CACHE"
	python3 "$MKREPO" "$CACHE" --files "$FILES" >/dev/null
	git -C "$CACHE" repack -adq
	git -C "$CACHE" config gc.auto 0
	echo "/.bench-ready" >>"$CACHE/.git/info/exclude"
	touch "$CACHE/.bench-ready"
fi
# Everything that is written lives on a fresh journaled ext4 (mkfs.ext4's defaults) in a loop
# image: this machine's own ext4 has no journal and makes file creation pay for earlier ones.
[ "$(id -u)" = 0 ] || die "run as root (it mounts a loop image)"
command -v mkfs.ext4 >/dev/null || die "missing: mkfs.ext4; install with: apt-get install e2fsprogs"
cleanup
mkdir -p "$EXT4"
truncate -s 4G "$WORK/ckpt-ext4.img"
mkfs.ext4 -q -F "$WORK/ckpt-ext4.img"
mount -o loop "$WORK/ckpt-ext4.img" "$EXT4"
git clone -q --no-local "$CACHE" "$REPO"
git clone -q --no-local "$REPO" "$NATIVE"
git -C "$REPO" config gc.auto 0
git -C "$NATIVE" config gc.auto 0
arb workspace create ck >/dev/null
VIEW="$REPO/.git/arborinth/workspaces/ck/workdir"
# The same files on both sides: CHANGED tracked files spread evenly over the tree.
git -C "$NATIVE" ls-files >"$OUT/all"
awk -v n="$CHANGED" -v t="$(wc -l <"$OUT/all")" 'NR % int(t / n) == 0 && c++ < n' \
	"$OUT/all" >"$OUT/changed"
# TOUCH DIR LIST: one more line in each changed file (hyperfine's --prepare runs sh).
cat >"$OUT/touch.py" <<'EOF'
import sys, time
root, lst = sys.argv[1], sys.argv[2]
for rel in open(lst).read().split():
    with open(root + "/" + rel, "a") as f:
        f.write("change %f\n" % time.time())
EOF
TOUCH="python3 $OUT/touch.py"
if [ -n "${ARB_BASE:-}" ]; then
	BASE_ARGS=(-n "checkpoint (ARB_BASE)" --prepare "$TOUCH $VIEW $OUT/changed"
		"$ARB_BASE --workdir $REPO checkpoint ck >/dev/null"
		-n "rewind (ARB_BASE)" --prepare "$TOUCH $VIEW $OUT/changed"
		"$ARB_BASE --workdir $REPO rewind ck --to base >/dev/null")
fi
touch_all() { $TOUCH "$1" "$OUT/changed"; }
# Warm both sides (the view's lower reads, the clone's index).
git -C "$NATIVE" status --porcelain >/dev/null
touch_all "$VIEW"
arb checkpoint ck >/dev/null

hyperfine --style basic --runs "$RUNS" --warmup 1 --export-json "$OUT/ckpt.json" \
	-n "stash create" --prepare "$TOUCH $NATIVE $OUT/changed" "git -C $NATIVE stash create >/dev/null" \
	-n "add+write-tree" --prepare "$TOUCH $NATIVE $OUT/changed" \
	"git -C $NATIVE add -A && git -C $NATIVE write-tree >/dev/null" \
	-n checkpoint --prepare "$TOUCH $VIEW $OUT/changed" "$ARB --workdir $REPO checkpoint ck >/dev/null" \
	-n rewind --prepare "$TOUCH $VIEW $OUT/changed" \
	"$ARB --workdir $REPO rewind ck --to base >/dev/null" "${BASE_ARGS[@]}" >"$OUT/hyperfine.log" 2>&1 ||
	{ cat "$OUT/hyperfine.log" >&2; die "hyperfine failed"; }
git -C "$NATIVE" checkout -q -- . && git -C "$NATIVE" reset -q

python3 - "$OUT/ckpt.json" "$FILES" "$CHANGED" <<'EOF'
import json, statistics, sys
res = json.load(open(sys.argv[1]))["results"]
med = {r["command"]: statistics.median(r["times"]) for r in res}
base = med["stash create"]
print("%s files, %s changed per run; medians (ratio to `git stash create`)" % (sys.argv[2], sys.argv[3]))
print("| subject | median | ratio |")
print("| --- | --- | --- |")
for r in res:
    m = med[r["command"]]
    print("| %s | %.1f ms | %.2fx |" % (r["command"], m * 1000, m / base))
EOF
echo "# raw results in $OUT" >&2
