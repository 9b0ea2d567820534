#!/usr/bin/env bash
# bench/objects_view.sh [ARBORINTH] [RUNS]: what the box's own object store costs
# (core/objects_view.c: the objects of the base's history, built at the first create of a base).
# `workspace create` the first time for a base (nothing cached: the shared index and, on a
# branch that has them, the objects view are built), a repeat create of the same base, and box
# start (`shell NAME -- true`), at 50,000 files (mkrepo.py's default shape, 3 commits, packed by
# `git gc` as a cloned repository is). ARB_BASE=OTHER-ARBORINTH times that binary the same way
# on a copy of the same repository (a build of main against a branch, say). hyperfine medians;
# prints a Markdown table. FILES (50000), MKREPO (../shared/bench/mkrepo.py), REPO (a cached
# repository to copy from; made once under /var/tmp).
#
# SIZE=1: instead, the store of a big, delta-heavy history: HREPO made once from the git
# directory GITSRC (git.git's, say: its packs hard-linked, master checked out), the first
# create of this binary (and ARB_BASE's) timed once with its peak memory (/usr/bin/time), the
# store's size, against the anchor: `git clone --no-local --bare --single-branch` of the same
# history (its pack's size and time). On git.git (81,966 commits of master, 2 CPUs under load
# 13-18), `SIZE=1 GITSRC=/work/.mirror/git+git/repo bash bench/objects_view.sh`: anchor clone
# 226 s, 304 MB; first create 49 s, peak RSS 532 MB, store 304 MB (1.00x the anchor); the
# walk it replaced (the same binary with a failing git first on PATH) 427 s, 1.35 GB, 4,936 MB.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ARB=$(readlink -f "${1:-$top/build/cli/arborinth}")
RUNS=${2:-5}
FILES=${FILES:-50000}
MKREPO=${MKREPO:-$top/../shared/bench/mkrepo.py}
REPO=${REPO:-/var/tmp/arb-bench-objects-view-$FILES}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)" >&2; exit 1; }
[ -x "$ARB" ] || { echo "no arborinth at $ARB (build first: scripts/build.sh)" >&2; exit 1; }

if [ "${SIZE:-}" = 1 ]; then
	: "${GITSRC:?SIZE=1 needs GITSRC=<a git directory with a big history>}"
	REPO=${HREPO:-/var/tmp/arb-bench-objects-view-history}
	if [ ! -d "$REPO/.git" ]; then
		git init -q -b master "$REPO"
		ln "$GITSRC"/objects/pack/*.pack "$GITSRC"/objects/pack/*.idx "$REPO/.git/objects/pack/"
		git -C "$REPO" update-ref refs/heads/master "$(git --git-dir="$GITSRC" rev-parse "${REV:-HEAD}")"
		git -C "$REPO" checkout -qf master
	fi
	sdir=$(mktemp -d /var/tmp/arb-objects-view-size.XXXXXX)
	trap 'for r in "$sdir"/*/; do (cd "$r" && "$ARB" workspace delete --force w >/dev/null 2>&1) || true; done; rm -rf "$sdir"' EXIT
	echo "| what | time | peak RSS | size |"
	echo "| --- | --- | --- | --- |"
	start=$(date +%s.%N)
	git clone -q --no-local --bare --single-branch --branch master "$REPO" "$sdir/anchor.git"
	echo "| anchor: git clone --no-local --bare --single-branch | $(echo "$(date +%s.%N) - $start" | bc) s | | $(du -sm "$sdir/anchor.git/objects" | cut -f1) MB |"
	for b in "this:$ARB" ${ARB_BASE:+"base:$(readlink -f "$ARB_BASE")"}; do
		name=${b%%:*} bin=${b#*:}
		cp -al "$REPO" "$sdir/$name"
		start=$(date +%s.%N)
		(cd "$sdir/$name" && /usr/bin/time -f %M -o "$sdir/$name.rss" "$bin" workspace create w >/dev/null)
		t=$(echo "$(date +%s.%N) - $start" | bc)
		echo "| $name: first create | $t s | $(($(cat "$sdir/$name.rss") / 1024)) MB | $(du -sm "$sdir/$name/.git/arborinth/objects-view" | cut -f1) MB |"
		(cd "$sdir/$name" && "$bin" workspace delete --force w >/dev/null 2>&1) || true
	done
	exit 0
fi
if [ ! -d "$REPO/.git" ]; then
	[ -r "$MKREPO" ] || { echo "no mkrepo.py at $MKREPO (set MKREPO=...)" >&2; exit 1; }
	echo "# making $REPO ($FILES files; once)" >&2
	python3 "$MKREPO" "$REPO" --files "$FILES" >/dev/null
	# mkrepo's commits may have started an automatic gc: let it end, then pack all.
	while [ -e "$REPO/.git/gc.pid" ]; do sleep 1; done
	git -C "$REPO" gc -q
fi
dir=$(mktemp -d /var/tmp/arb-objects-view-bench.XXXXXX)
cleanup() {
	for r in "$dir"/*/; do
		for w in b keep; do
			(cd "$r" 2>/dev/null && "${BIN[$r]:-$ARB}" workspace delete $w >/dev/null 2>&1) || true
		done
	done
	awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r |
		while read -r m; do fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" || true; done
	rm -rf "$dir"
}
declare -A BIN
trap cleanup EXIT
trap 'exit 1' INT TERM PIPE HUP

args=()
# rows NAME BINARY: the three measures of BINARY on a copy of the repository of its own.
rows() {
	local name=$1 bin=$2 r=$dir/$1
	cp -a "$REPO" "$r"
	BIN[$r/]=$bin
	# A workspace of the base that stays: a repeat create finds the shared index (and view).
	(cd "$r" && "$bin" workspace create keep >/dev/null)
	local fresh="cd $r && $bin workspace delete b >/dev/null 2>&1; rm -rf $r/.git/arborinth/index-cache $r/.git/arborinth/objects-view"
	args+=(--command-name "$name: create, first of its base" --prepare "$fresh"
		"cd $r && $bin workspace create b")
	args+=(--command-name "$name: create again, same base" --prepare "cd $r && $bin workspace delete b >/dev/null 2>&1 || true"
		"cd $r && $bin workspace create b")
}
rows this "$ARB"
[ -n "${ARB_BASE:-}" ] && rows base "$(readlink -f "$ARB_BASE")"
hyperfine --warmup 1 --runs "$RUNS" --export-json "$dir/create.json" "${args[@]}" >&2

# Box start: `shell keep -- true` of each, side by side.
shells=()
for r in "$dir"/*/; do
	shells+=(--command-name "$(basename "$r"): shell -- true" "cd $r && ${BIN[$r]} shell keep -- true")
done
hyperfine --warmup 3 --runs $((RUNS * 6)) --export-json "$dir/shell.json" "${shells[@]}" >&2
du -sh "$dir"/this/.git/arborinth/objects-view >&2

python3 - "$dir/create.json" "$dir/shell.json" <<'PY'
import json, sys
rows = []
for path in sys.argv[1:]:
    rows += json.load(open(path))["results"]
# Wall time (median) and CPU time (user + system, mean; children waited for included): on a
# shared machine the wall time is mostly waiting for a CPU, the CPU time is the work.
med = {x["command"]: (x["median"], x["user"] + x["system"]) for x in rows}
print("| command | median | ratio to base | CPU time | CPU ratio to base |")
print("| --- | --- | --- | --- | --- |")
for name, (m, cpu) in med.items():
    other = med.get(name.replace("this:", "base:", 1)) if name.startswith("this:") else None
    print("| %s | %.3f s | %s | %.3f s | %s |" % (name, m, "%.2f" % (m / other[0]) if other else "",
                                                 cpu, "%.2f" % (cpu / other[1]) if other else ""))
PY
