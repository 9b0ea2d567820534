#!/usr/bin/env bash
# bench/lfs_read.sh: reading a git LFS file through the view (fs/lfs_view.c) against reading
# the same object natively from the origin's .git/lfs/objects.
#
#   ARB=build/cli/arborinth bench/lfs_read.sh [--mb N] [--runs N]
#
# A repository with one N MB (default 100) LFS file (git-lfs, local store only) and a
# workspace of it. Timed: `cat FILE >/dev/null`. "first" is the view's first read after the
# workspace is mounted (its page cache for the file empty; the object itself in the host's
# page cache, as for the native read); "warm" the median of RUNS later reads (the kernel keeps
# the view's page cache). Ratios are the view's time over the native median. The anchor: the
# same for a file of the same size committed without LFS (a plain blob, read from the blob
# cache). Also the time of `workspace create`, which checks the object's sha256 once.
# Removed on exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(dirname "$HERE")
ARB=${ARB:-$SRC/build/cli/arborinth}
MB=100
RUNS=7
while [ $# -gt 0 ]; do
	case "$1" in
	--mb) MB=$2 && shift ;;
	--runs) RUNS=$2 && shift ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
	*) echo "lfs_read.sh: unknown argument '$1'" >&2 && exit 2 ;;
	esac
	shift
done
command -v git-lfs >/dev/null || { echo "lfs_read.sh: needs git-lfs" >&2 && exit 2; }
W=$(mktemp -d "${TMPDIR:-/var/tmp}/arb-lfsread.XXXXXX")
cleanup() {
	"$ARB" --workdir "$W/r" workspace delete b >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT

now() { date +%s.%N; }
secs() { # CMD...: its wall time in seconds
	local t0
	t0=$(now)
	"$@"
	echo "$(now) - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
readall() { cat "$1" >/dev/null; }

r="$W/r"
mkdir -p "$r"
git -C "$r" init -q -b main
git -C "$r" config user.email b@example.com
git -C "$r" config user.name bench
git -C "$r" lfs install --local >/dev/null
git -C "$r" lfs track '*.bin' >/dev/null
head -c $((MB * 1024 * 1024)) /dev/urandom >"$r/big.bin"
head -c $((MB * 1024 * 1024)) /dev/urandom >"$r/plain.dat"
git -C "$r" add -A
git -C "$r" commit -q -m big
oid=$(git -C "$r" cat-file -p HEAD:big.bin | sed -n 's/^oid sha256://p')
obj="$r/.git/lfs/objects/${oid:0:2}/${oid:2:2}/$oid"

create_ws() { "$ARB" --workdir "$r" workspace create b --json >"$W/ws.json"; }
create=$(secs create_ws)
V=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["workdir"])' <"$W/ws.json")
cmp "$V/big.bin" "$obj" >/dev/null # the content is right; this read also warms the object
cmp "$V/plain.dat" "$r/plain.dat" >/dev/null # and fills the blob cache for the anchor
report() { # NAME VIEWFILE NATIVEFILE
	local first native warm
	"$ARB" --workdir "$r" workspace unmount b >/dev/null
	"$ARB" --workdir "$r" workspace mount b >/dev/null
	readall "$3"
	first=$(secs readall "$2")
	native=$(for _ in $(seq "$RUNS"); do secs readall "$3"; done | median)
	warm=$(for _ in $(seq "$RUNS"); do secs readall "$2"; done | median)
	printf '%s, %d MB: native %.4f s (%.0f MB/s); view first read %.4f s (%.0f MB/s, %.2fx native); view warm %.4f s (%.2fx native)\n' \
		"$1" "$MB" "$native" "$(echo "$MB / $native" | bc -l)" "$first" \
		"$(echo "$MB / $first" | bc -l)" "$(echo "$first / $native" | bc -l)" "$warm" \
		"$(echo "$warm / $native" | bc -l)"
}
report "LFS file" "$V/big.bin" "$obj"
report "anchor: plain blob" "$V/plain.dat" "$r/plain.dat"
printf 'create (checks the LFS object sha256 once): %.3f s\n' "$create"
