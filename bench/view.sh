#!/usr/bin/env bash
# bench/view.sh: the workspace view at speed, side by side with the native checkout,
# fuse-overlayfs over that same checkout, `git clone --no-local` and `git worktree add`.
#
#   sudo ARB=build/cli/arborinth bench/view.sh [--quick] [--runs N] [--files N]
#                                              [--workspaces N] [--only LIST]
#
# LIST is a comma-separated subset of: create,read,write,write_ext4,build,scale (default:
# all); write_ext4 repeats the writes on a fresh journaled ext4 in a loop image.
# Every figure is the median of several hyperfine runs; the table gives each subject's
# median and its ratio to the baseline measured in the same run, because these machines are
# shared and noisy. Repositories are made with ../shared/bench/mkrepo.py and cached under
# $ARB_BENCH_DIR (default /var/tmp/arborinth-bench), so reruns skip that step. Nothing is
# installed: missing tools are named with the command that installs them. Every mount and
# workspace the script makes is removed on exit. Root is needed to drop the page cache.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(dirname "$HERE")
MKREPO=${MKREPO:-$SRC/../shared/bench/mkrepo.py}
WORK=${ARB_BENCH_DIR:-/var/tmp/arborinth-bench}
ARB=${ARB:-$SRC/build/cli/arborinth}
RUNS=5
FILES=50000
NWS=100
ONLY=create,read,write,write_ext4,build,scale
QUICK=0

usage() {
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--runs) RUNS=$2 && shift ;;
	--files) FILES=$2 && shift ;;
	--workspaces) NWS=$2 && shift ;;
	--only) ONLY=$2 && shift ;;
	-h | --help) usage 0 ;;
	*) echo "view.sh: unknown argument '$1'" >&2 && usage 2 ;;
	esac
	shift
done
if [ "$QUICK" = 1 ]; then
	RUNS=2
	FILES=2000
	NWS=5
fi

die() {
	echo "view.sh: $*" >&2
	exit 2
}

# Tools: say how to get them, never install them.
missing=()
for t in hyperfine fuse-overlayfs fusermount3 git python3 cc cmake ninja mkfs.ext4; do
	command -v "$t" >/dev/null || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
	pkgs=$(printf '%s\n' "${missing[@]}" | sed -e 's/^fusermount3$/fuse3/' -e 's/^cc$/gcc/' \
		-e 's/^ninja$/ninja-build/' -e 's/^mkfs.ext4$/e2fsprogs/' | sort -u | tr '\n' ' ')
	die "missing: ${missing[*]}; install with: apt-get install $pkgs"
fi
[ "$(id -u)" = 0 ] || die "run as root (cold-cache runs drop the page cache)"
[ -x "$ARB" ] || die "no arborinth binary at $ARB (set ARB=path/to/build/cli/arborinth)"
[ -r "$MKREPO" ] || die "no mkrepo.py at $MKREPO (set MKREPO=path/to/mkrepo.py)"
ARB=$(realpath "$ARB")

mkdir -p "$WORK/results" "$WORK/bin"
STAMP=$(date +%Y%m%d-%H%M%S)
OUT="$WORK/results/view-$STAMP"
mkdir -p "$OUT"
ROWS="$OUT/rows.md"
: >"$ROWS"

REPO="$WORK/repo-$FILES"      # origin of the views
NATIVE="$WORK/native-$FILES"  # a plain checkout of the same commit
OVL="$WORK/ovl-$FILES"        # fuse-overlayfs over $NATIVE
arb() { "$ARB" --workdir "$REPO" "$@"; }

# ---- cleanup: every mount and workspace made here goes away on exit ----
CREATED="$OUT/workspaces"
: >"$CREATED"
cleanup() {
	local rc=$?
	set +e
	if mountpoint -q "$OVL/mnt" 2>/dev/null; then
		fusermount3 -u "$OVL/mnt" || fusermount3 -u -z "$OVL/mnt"
	fi
	sort -u "$CREATED" | while read -r ws; do
		[ -n "$ws" ] && arb workspace delete "$ws" --force >/dev/null 2>&1
	done
	git -C "$NATIVE" worktree remove --force "$WORK/wt" >/dev/null 2>&1
	git -C "$NATIVE" worktree prune >/dev/null 2>&1
	rm -rf "$WORK/clone" "$WORK/wt" "$NATIVE/storm" "$NATIVE/seq.bin" "$OVL/upper" "$OVL/work"
	ext4_away
	exit $rc
}
trap 'uring_restore; cleanup' EXIT
trap 'exit 130' INT TERM

ws_create() { # NAME [create options]: a workspace of $REPO, removed on exit
	echo "$1" >>"$CREATED"
	arb workspace delete "$1" --force >/dev/null 2>&1 || true
	arb workspace create "$@" >/dev/null
}
ws_dir() { echo "$REPO/.git/arborinth/workspaces/$1"; }
# FUSE over io_uring is root's machine-wide switch, read when a view is mounted: ws_over
# 0|1 NAME [create options] makes a view on /dev/fuse (0) or io_uring (1). The switch is put
# back as it was on exit. Without the switch (older kernel) the io_uring subjects are left out.
URING=/sys/module/fuse/parameters/enable_uring
URING_OLD=$(cat "$URING" 2>/dev/null || true)
uring_restore() {
	[ -w "$URING" ] || return 0
	if [ "$URING_OLD" = Y ]; then echo 1 >"$URING"; else echo 0 >"$URING"; fi
}
ws_over() {
	local v=$1
	shift
	[ -w "$URING" ] && echo "$v" >"$URING"
	ws_create "$@"
	stat "$(ws_dir "$1")/workdir" >/dev/null # INIT: the daemon chooses now
	uring_restore
}

# ---- repositories (cached) ----
make_repos() {
	if [ ! -e "$REPO/.bench-ready" ]; then
		echo "# making $REPO ($FILES files; once)" >&2
		rm -rf "$REPO" "$NATIVE"
		python3 "$MKREPO" "$REPO" --files "$FILES" >/dev/null
		git -C "$REPO" repack -adq
		git -C "$REPO" config gc.auto 0
		touch "$REPO/.git/info/exclude" && echo "/.bench-ready" >>"$REPO/.git/info/exclude"
		touch "$REPO/.bench-ready"
	fi
	if [ ! -e "$NATIVE/.git/bench-ready" ]; then
		rm -rf "$NATIVE"
		git clone -q --no-local "$REPO" "$NATIVE"
		git -C "$NATIVE" config gc.auto 0
		touch "$NATIVE/.git/bench-ready"
	fi
	arb project info >/dev/null
}

# ---- measuring ----
DROP='sync; echo 3 > /proc/sys/vm/drop_caches'

# measure TITLE HYPERFINE-ARGS... : the first named command is the baseline. The runs are
# made in rounds of one run of every subject (--runs N: N rounds, --warmup only before the
# first round), so slow drifts of the machine's load hit all subjects alike; each figure is
# the median over the rounds.
measure() {
	local title=$1 base rounds=1 warm=0 i
	shift
	local args=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--runs) rounds=$2 && shift ;;
		--warmup) warm=$2 && shift ;;
		*) args+=("$1") ;;
		esac
		shift
	done
	base="$OUT/$(echo "$title" | tr -c 'a-zA-Z0-9' '_')"
	echo "# $title" >&2
	for i in $(seq 1 "$rounds"); do
		[ "$i" = 1 ] || warm=0
		hyperfine --style basic --runs 1 --warmup "$warm" --export-json "$base.$i.json" \
			"${args[@]}" >"$base.log" 2>&1 ||
			{ cat "$base.log" >&2; die "hyperfine failed for '$title'"; }
	done
	python3 - "$title" "$base".*.json >>"$ROWS" <<'EOF2'
import json, statistics, sys
runs = [json.load(open(f))["results"] for f in sys.argv[2:]]
names = [r["command"] for r in runs[0]]
med = [statistics.median(t for rnd in runs for t in rnd[i]["times"]) for i in range(len(names))]
cells = [f"{n} {m:.3f} s" + ("" if i == 0 else f" (**{m / med[0]:.2f}×**)")
         for i, (n, m) in enumerate(zip(names, med))]
print(f"| {sys.argv[1]} | " + " | ".join(cells) + " |")
EOF2
	tail -n 1 "$ROWS" >&2
}

note() { # a row of plain figures
	echo "| $1 | $2 |" >>"$ROWS"
	echo "| $1 | $2 |" >&2
}

# Disk that only this tree holds: blocks of directories and of files not linked elsewhere,
# not crossing into mounts.
own_kib() {
	python3 - "$@" <<'EOF'
import os, sys
total = 0
for top in sys.argv[1:]:
    dev = os.lstat(top).st_dev
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.lstat(os.path.join(root, d)).st_dev == dev]
        for name in dirs + files:
            st = os.lstat(os.path.join(root, name))
            if os.path.isdir(os.path.join(root, name)) or st.st_nlink == 1:
                total += st.st_blocks * 512
    total += os.lstat(top).st_blocks * 512
print(total // 1024)
EOF
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# Proportional set size: shared library pages divided among the processes mapping them.
pss_kib() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
ws_pid() { cat "$(ws_dir "$1")/run/daemon.pid"; }

# ---- the workloads ----
bench_create() {
	local view
	view=$(ws_dir bench-c)
	echo bench-c >>"$CREATED"
	measure "get a writable copy ($FILES files)" --runs "$RUNS" \
		-n "git clone --no-local" --prepare "rm -rf $WORK/clone" \
		"git clone -q --no-local $REPO $WORK/clone" \
		-n "git worktree add" \
		--prepare "git -C $NATIVE worktree remove --force $WORK/wt >/dev/null 2>&1; rm -rf $WORK/wt; git -C $NATIVE worktree prune" \
		"git -C $NATIVE worktree add -q --detach $WORK/wt" \
		-n "arborinth workspace create" \
		--prepare "$ARB --workdir $REPO workspace delete bench-c --force >/dev/null 2>&1 || true" \
		"$ARB --workdir $REPO workspace create bench-c"
	note "new disk ($FILES files)" "clone $(own_kib "$WORK/clone") KiB; worktree $(($(own_kib "$WORK/wt") + $(own_kib "$NATIVE/.git/worktrees"))) KiB; workspace $(own_kib "$view") KiB"
	if [ -d "$REPO/.git/arborinth/index-cache" ]; then
		note "shared index cache (per base commit, all its workspaces)" "$(du -sk "$REPO/.git/arborinth/index-cache" | cut -f1) KiB"
		measure "workspace create, index cache cold" --runs "$RUNS" \
			-n "git worktree add" \
			--prepare "git -C $NATIVE worktree remove --force $WORK/wt >/dev/null 2>&1; rm -rf $WORK/wt; git -C $NATIVE worktree prune" \
			"git -C $NATIVE worktree add -q --detach $WORK/wt" \
			-n "arborinth workspace create" \
			--prepare "$ARB --workdir $REPO workspace delete bench-c --force >/dev/null 2>&1; rm -rf $REPO/.git/arborinth/index-cache" \
			"$ARB --workdir $REPO workspace create bench-c"
	fi
	arb workspace delete bench-c --force >/dev/null
	git -C "$NATIVE" worktree remove --force "$WORK/wt" >/dev/null 2>&1 || true
	rm -rf "$WORK/clone" "$WORK/wt"
}

start_overlay() {
	if mountpoint -q "$OVL/mnt" 2>/dev/null; then fusermount3 -u "$OVL/mnt"; fi
	rm -rf "$OVL/upper" "$OVL/work"
	mkdir -p "$OVL/upper" "$OVL/work" "$OVL/mnt"
	fuse-overlayfs -o "lowerdir=$NATIVE,upperdir=$OVL/upper,workdir=$OVL/work" "$OVL/mnt"
}

read_cmd() { # WORK DIR
	case $1 in
	find) echo "find $2 -name .git -prune -o -print" ;;
	grep) echo "grep -r -c --exclude-dir=.git qqzzqq $2" ;;
	status) echo "git -C $2 status" ;;
	esac
}

bench_read() {
	local v u=() uv=
	ws_over 0 bench-r
	v="$(ws_dir bench-r)/workdir"
	if [ -w "$URING" ]; then
		ws_over 1 bench-ru
		uv="$(ws_dir bench-ru)/workdir"
		note "requests of the view, io_uring view" "$(cat "$(ws_dir bench-r)/run/transport"); $(cat "$(ws_dir bench-ru)/run/transport")"
	fi
	start_overlay
	# Each subject once before timing: the index refresh in fuse-overlayfs (inode numbers
	# change) and the blob cache of the view are one-time costs, measured apart below.
	git -C "$OVL/mnt" status >/dev/null
	local name
	for name in find grep status; do
		if [ $name = grep ]; then
			measure "grep -r, first read of the view (blob cache empty), cold" --runs "$RUNS" -i \
				--prepare "$DROP" -n native "$(read_cmd grep "$NATIVE")" \
				--prepare "rm -rf $REPO/.git/arborinth/blobs/*; $DROP" -n view "$(read_cmd grep "$v")"
		fi
		u=()
		[ -z "$uv" ] || u=(-n "view, io_uring" "$(read_cmd $name "$uv")")
		[ -z "$uv" ] || [ $name != status ] || git -C "$uv" status >/dev/null
		measure "$name, warm" --runs "$RUNS" --warmup 1 -i \
			-n native "$(read_cmd $name "$NATIVE")" \
			-n view "$(read_cmd $name "$v")" \
			-n fuse-overlayfs "$(read_cmd $name "$OVL/mnt")" "${u[@]}"
		# hyperfine takes one --prepare for all, or one per command
		local p=(--prepare "$DROP")
		[ -z "$uv" ] || u=(--prepare "$DROP" "${u[@]}")
		measure "$name, cold" --runs "$RUNS" -i \
			"${p[@]}" -n native "$(read_cmd $name "$NATIVE")" \
			"${p[@]}" -n view "$(read_cmd $name "$v")" \
			"${p[@]}" -n fuse-overlayfs "$(read_cmd $name "$OVL/mnt")" "${u[@]}"
	done
	# git status and the fsmonitor: the view as created (core.fsmonitor names the daemon's
	# hook; core.untrackedCache) against native with and without git's untracked cache (on a
	# copy of the native index), and the view with both off (--no-optional-locks: that run
	# leaves the view's index, and its fsmonitor token, as they were).
	cp "$NATIVE/.git/index" "$WORK/native-untracked.index"
	local nu="env GIT_INDEX_FILE=$WORK/native-untracked.index git -c core.untrackedCache=true"
	local off="git --no-optional-locks -c core.fsmonitor=false -c core.untrackedCache=false"
	git -C "$v" status >/dev/null
	$nu -C "$NATIVE" status >/dev/null
	measure "status, warm: fsmonitor and untracked cache" --runs "$RUNS" --warmup 1 \
		-n native "git -C $NATIVE status" \
		-n "native, untracked cache" "$nu -C $NATIVE status" \
		-n "view (fsmonitor)" "git -C $v status" \
		-n "view, fsmonitor off" "$off -C $v status"
	measure "status, cold: fsmonitor and untracked cache" --runs "$RUNS" --prepare "$DROP" \
		-n native "git -C $NATIVE status" \
		-n "native, untracked cache" "$nu -C $NATIVE status" \
		-n "view (fsmonitor)" "git -C $v status" \
		-n "view, fsmonitor off" "$off -C $v status"
	rm -f "$WORK/native-untracked.index"
	note "daemon RSS after the reads" "$(($(rss_kib "$(ws_pid bench-r)") / 1024)) MiB"
	fusermount3 -u "$OVL/mnt"
	arb workspace delete bench-r --force >/dev/null
	[ -z "$uv" ] || arb workspace delete bench-ru --force >/dev/null
}

# Remounts workspace $1 with its daemon started exactly as arborinth starts it, minus the
# audit (--db and the workspace id/name it records under): the audit's cost is the difference
# between the "view" and "view, audit off" subjects. Benchmark plumbing, not a product option.
remount_without_audit() {
	local pid exe args=() a skip=0
	pid=$(ws_pid "$1")
	exe=$(readlink "/proc/$pid/exe")
	while IFS= read -r -d '' a; do
		if [ "$skip" = 1 ]; then skip=0 && continue; fi
		case "$a" in
		--db | --ws-id | --ws-name | --ready-fd) skip=1 && continue ;;
		esac
		args+=("$a")
	done <"/proc/$pid/cmdline"
	arb workspace unmount "$1" >/dev/null
	setsid "$exe" "${args[@]:1}" </dev/null >>"$(ws_dir "$1")/run/fs.log" 2>&1 &
	for _ in $(seq 100); do
		mountpoint -q "$(ws_dir "$1")/workdir" && return 0
		sleep 0.1
	done
	die "could not remount $1 without the audit"
}

# The writes, in workspaces of $REPO against NATIVE_DIR; TAG ends each title. Subjects: the
# view as created by default (its daemon writes every file), the same without the audit, and
# a view created with `--io passthrough` (files it creates are written by the kernel), all
# three with requests over /dev/fuse; then, where the kernel has it, the default and the
# passthrough view with requests over io_uring.
write_suite() { # NATIVE_DIR TAG
	local nat=$1 tag=$2 v q pt u= pu= storm="$WORK/bin/storm" s=() d=() f=()
	cc -O2 -o "$storm" "$HERE/storm.c"
	ws_over 0 bench-w
	ws_over 0 bench-q
	ws_over 0 bench-p --io passthrough
	[ -w "$URING" ] && echo 0 >"$URING"
	remount_without_audit bench-q
	stat "$(ws_dir bench-q)/workdir" >/dev/null
	uring_restore
	v="$(ws_dir bench-w)/workdir"
	q="$(ws_dir bench-q)/workdir"
	pt="$(ws_dir bench-p)/workdir"
	note "I/O path of the passthrough view$tag" "$(cat "$(ws_dir bench-p)/run/io")"
	if [ -w "$URING" ]; then
		ws_over 1 bench-u
		ws_over 1 bench-pu --io passthrough
		u="$(ws_dir bench-u)/workdir"
		pu="$(ws_dir bench-pu)/workdir"
		note "requests: view; view, io_uring$tag" "$(cat "$(ws_dir bench-w)/run/transport"); $(cat "$(ws_dir bench-u)/run/transport")"
		s=(--prepare "rm -rf $u/storm" -n "view, io_uring" "$storm $u"
			--prepare "rm -rf $pu/storm" -n "view, passthrough + io_uring" "$storm $pu")
		d=(--prepare "rm -f $u/seq.bin; sync" -n "view, io_uring"
			"dd if=/dev/zero of=$u/seq.bin bs=1M count=1024 status=none"
			--prepare "rm -f $pu/seq.bin; sync" -n "view, passthrough + io_uring"
			"dd if=/dev/zero of=$pu/seq.bin bs=1M count=1024 status=none")
		f=(--prepare "rm -f $u/seq.bin; sync" -n "view, io_uring"
			"dd if=/dev/zero of=$u/seq.bin bs=1M count=1024 conv=fsync status=none")
	fi
	measure "small-file storm (10,000 files in 100 dirs: create, rewrite, delete)$tag" \
		--runs "$RUNS" --warmup 1 \
		--prepare "rm -rf $nat/storm" -n native "$storm $nat" \
		--prepare "rm -rf $v/storm" -n view "$storm $v" \
		--prepare "rm -rf $q/storm" -n "view, audit off" "$storm $q" \
		--prepare "rm -rf $pt/storm" -n "view, passthrough" "$storm $pt" "${s[@]}"
	measure "1 GiB sequential write (dd bs=1M)$tag" --runs "$RUNS" \
		--prepare "rm -f $nat/seq.bin; sync" -n native \
		"dd if=/dev/zero of=$nat/seq.bin bs=1M count=1024 status=none" \
		--prepare "rm -f $v/seq.bin; sync" -n view \
		"dd if=/dev/zero of=$v/seq.bin bs=1M count=1024 status=none" \
		--prepare "rm -f $q/seq.bin; sync" -n "view, audit off" \
		"dd if=/dev/zero of=$q/seq.bin bs=1M count=1024 status=none" \
		--prepare "rm -f $pt/seq.bin; sync" -n "view, passthrough" \
		"dd if=/dev/zero of=$pt/seq.bin bs=1M count=1024 status=none" "${d[@]}"
	measure "1 GiB sequential write + fsync (dd conv=fsync)$tag" --runs "$RUNS" \
		--prepare "rm -f $nat/seq.bin; sync" -n native \
		"dd if=/dev/zero of=$nat/seq.bin bs=1M count=1024 conv=fsync status=none" \
		--prepare "rm -f $v/seq.bin; sync" -n view \
		"dd if=/dev/zero of=$v/seq.bin bs=1M count=1024 conv=fsync status=none" \
		--prepare "rm -f $pt/seq.bin; sync" -n "view, passthrough" \
		"dd if=/dev/zero of=$pt/seq.bin bs=1M count=1024 conv=fsync status=none" "${f[@]}"
	rm -rf "$nat/storm" "$nat/seq.bin" "$v/seq.bin" "$q/seq.bin" "$pt/seq.bin"
	for w in bench-w bench-q bench-p ${u:+bench-u bench-pu}; do
		arb workspace delete "$w" --force >/dev/null
	done
}

bench_write() {
	write_suite "$NATIVE" ""
}

# The same writes on a fresh ext4 made with mkfs.ext4's defaults (with a journal) in a loop
# image, holding both the native directory and the workspaces (of a clone of $REPO that
# shares its objects). The machine's own file system may differ: without a journal, ext4
# skips inodes freed in the last minute when it allocates, so a storm pays for the storms
# run before it, by placement.
EXT4="$WORK/ext4"
bench_write_ext4() {
	local REPO="$EXT4/repo"
	mkdir -p "$EXT4"
	truncate -s 8G "$WORK/ext4.img"
	mkfs.ext4 -q -F "$WORK/ext4.img"
	mount -o loop "$WORK/ext4.img" "$EXT4"
	git clone -q --shared --no-checkout "$WORK/repo-$FILES" "$REPO"
	git -C "$REPO" config gc.auto 0
	mkdir "$EXT4/native"
	write_suite "$EXT4/native" " (fresh journaled ext4)"
	ext4_away
}
ext4_away() {
	if mountpoint -q "$EXT4" 2>/dev/null; then
		for ws in bench-w bench-q bench-p bench-u bench-pu; do
			"$ARB" --workdir "$EXT4/repo" workspace delete "$ws" --force >/dev/null 2>&1 || true
		done
		umount "$EXT4" || umount -l "$EXT4"
	fi
	rm -f "$WORK/ext4.img"
	rmdir "$EXT4" 2>/dev/null || true
}

build_cmd() { # DIR TARGET
	echo "sh -c 'cmake -S $1 -B $1/_build -G Ninja >/dev/null && ninja -C $1/_build -j2 $2 >/dev/null'"
}

# A real C build: arborinth itself (its sources at the commit under test), in a view of a
# repository holding them vs a plain checkout of the same commit.
bench_build() {
	local bsrc="$WORK/build-src" bnat="$WORK/build-native" v head target=cli/arborinth
	local runs=$RUNS
	[ "$QUICK" = 1 ] && target=util/libarb_util.a
	[ "$runs" -gt 3 ] && runs=3
	head=$(git -C "$SRC" rev-parse HEAD)
	if [ "$(git -C "$bsrc" rev-parse HEAD 2>/dev/null)" != "$head" ]; then
		rm -rf "$bsrc" "$bnat"
		git clone -q --no-local "$SRC" "$bsrc"
		git -C "$bsrc" checkout -q --detach "$head"
	fi
	[ -d "$bnat" ] || git clone -q --no-local "$bsrc" "$bnat"
	git -C "$bnat" checkout -q --detach "$head"
	echo bench-b >>"$CREATED"
	"$ARB" --workdir "$bsrc" workspace delete bench-b --force >/dev/null 2>&1 || true
	"$ARB" --workdir "$bsrc" workspace create bench-b >/dev/null
	v="$bsrc/.git/arborinth/workspaces/bench-b/workdir"
	measure "C build (arborinth: cmake + ninja -j2 $target)" --runs "$runs" \
		--prepare "rm -rf $bnat/_build" -n native "$(build_cmd "$bnat" $target)" \
		--prepare "rm -rf $v/_build" -n view "$(build_cmd "$v" $target)"
	rm -rf "$v/_build" "$bnat/_build"
	"$ARB" --workdir "$bsrc" workspace delete bench-b --force >/dev/null
}

med_max() { # KiB values -> "median MiB / max MiB"
	printf '%s\n' "$@" | python3 -c "import sys,statistics as s; v=[int(x) for x in sys.stdin]; print(f'{s.median(v)/1024:.1f} MiB / {max(v)/1024:.1f} MiB')"
}

bench_scale() {
	local t0 t1 i pids=() idle=() after=() pss_idle=() pss_after=() par_v="" par_n=""
	for i in $(seq 1 "$NWS"); do arb workspace delete "bench-s$i" --force >/dev/null 2>&1 || true; done
	sync
	t0=$(date +%s.%N)
	for i in $(seq 1 "$NWS"); do
		echo "bench-s$i" >>"$CREATED"
		arb workspace create "bench-s$i" >/dev/null
	done
	t1=$(date +%s.%N)
	note "$NWS workspaces created and mounted, one after another" "$(python3 -c "print(f'{$t1 - $t0:.2f} s total, {($t1 - $t0) / $NWS:.3f} s each')")"
	note "disk of the $NWS workspaces (own blocks)" "$(own_kib "$REPO/.git/arborinth/workspaces") KiB"
	sleep 1
	for i in $(seq 1 "$NWS"); do
		pids+=("$(ws_pid "bench-s$i")")
		idle+=("$(rss_kib "${pids[-1]}")")
		pss_idle+=("$(pss_kib "${pids[-1]}")")
	done
	for i in $(seq 1 "$NWS"); do
		git -C "$(ws_dir "bench-s$i")/workdir" status >/dev/null
		after+=("$(rss_kib "${pids[$((i - 1))]}")")
		pss_after+=("$(pss_kib "${pids[$((i - 1))]}")")
	done
	note "daemon RSS idle (median / max of $NWS)" "$(med_max "${idle[@]}")"
	note "daemon PSS idle (median / max)" "$(med_max "${pss_idle[@]}")"
	note "daemon RSS after one git status (median / max)" "$(med_max "${after[@]}")"
	note "daemon PSS after one git status (median / max)" "$(med_max "${pss_after[@]}")"
	for i in $(seq 1 8); do
		par_v+="git -C $(ws_dir "bench-s$i")/workdir --no-optional-locks status >/dev/null & "
		par_n+="git -C $NATIVE --no-optional-locks status >/dev/null & "
	done
	measure "8 concurrent git status (8 views vs 8 on the native checkout)" --runs "$RUNS" \
		--warmup 1 -n native "bash -c '${par_n} wait'" -n views "bash -c '${par_v} wait'"
	for i in $(seq 1 "$NWS"); do arb workspace delete "bench-s$i" --force >/dev/null; done
}

make_repos
{
	echo "## view.sh $STAMP: $FILES files, $RUNS runs, arborinth $(git -C "$SRC" rev-parse --short HEAD)"
	echo
	echo "| work | baseline | compared (ratio to the baseline) | |"
	echo "| --- | --- | --- | --- |"
} >"$OUT/head.md"
IFS=, read -r -a parts <<<"$ONLY"
for part in "${parts[@]}"; do
	case "$part" in
	create | read | write | write_ext4 | build | scale) "bench_$part" ;;
	*) die "unknown part '$part' (create,read,write,write_ext4,build,scale)" ;;
	esac
done
cat "$OUT/head.md" "$ROWS" >"$OUT/results.md"
echo
cat "$OUT/results.md"
echo
echo "results: $OUT/results.md"
