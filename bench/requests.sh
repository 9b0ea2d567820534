#!/usr/bin/env bash
# bench/requests.sh: how many FUSE requests the view's daemon reads per operation, counted with
# `strace -c -f -p DAEMON` (one read(2) of /dev/fuse per request, one writev(2) or splice per
# reply), for: the small-file storm (bench/storm.c: create, rewrite, delete), a 64 MiB `dd`
# into a new file, the same into an existing file, and a warm `git status`. Run for the view
# as created by default (the daemon writes every file) and remounted with `--io passthrough`,
# both with requests over /dev/fuse and, where root may switch FUSE over io_uring on, over
# io_uring (there one io_uring_enter(2) answers a request and fetches the next; FORGETs still
# come as reads of /dev/fuse).
#
#   sudo ARB=build/cli/arborinth bench/requests.sh [NFILES]    (default 1000)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ARB=$(realpath "${ARB:-$HERE/../build/cli/arborinth}")
NFILES=${1:-1000}
command -v strace >/dev/null || {
	echo "requests.sh: needs strace (apt-get install strace)" >&2
	exit 2
}
T=$(mktemp -d /var/tmp/arb-requests.XXXXXX)
STRACE=
cleanup() {
	[ -n "$STRACE" ] && kill "$STRACE" 2>/dev/null
	"$ARB" --workdir "$T/repo" workspace delete rq --force >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
git init -q "$T/repo"
mkdir -p "$T/repo/src"
for i in $(seq 200); do echo "file $i" >"$T/repo/src/f$i.c"; done
git -C "$T/repo" add -A
git -C "$T/repo" -c user.name=bench -c user.email=bench@localhost commit -qm base
cc -O2 -o "$T/storm" "$HERE/storm.c"
WS="$T/repo/.git/arborinth/workspaces/rq"
V="$WS/workdir"

# Runs "$@" while strace counts the daemon's system calls; prints "reads writes".
count() {
	local pid out="$T/strace.out"
	pid=$(cat "$WS/run/daemon.pid")
	strace -c -f -qq -p "$pid" -o "$out" &
	STRACE=$!
	sleep 0.5
	"$@" >/dev/null
	sleep 0.3
	kill -INT "$STRACE"
	wait "$STRACE" 2>/dev/null || true
	STRACE=
	awk '$NF == "read" { r = $4 } $NF == "writev" { w = $4 } $NF == "splice" { s = $4 }
	     $NF == "io_uring_enter" { u = $4 }
	     END { printf "%d %d\n", r + u, w + s + u }' "$out"
}

row() { # LABEL PER COMMAND...
	local label=$1 per=$2 r w
	shift 2
	read -r r w < <(count "$@")
	printf '| %s | %s | %d | %.1f | %d |\n' "$label" "$mode" "$r" "$(echo "$r / $per" | bc -l)" "$w"
}

suite() {
	row "storm, $NFILES files (per file)" "$NFILES" "$T/storm" "$V" "$NFILES" 10
	rm -f "$V/seq.bin"
	row "dd 64 MiB bs=1M into a new file (per MiB)" 64 \
		dd if=/dev/zero of="$V/seq.bin" bs=1M count=64 status=none
	row "dd 64 MiB bs=1M over that file (per MiB)" 64 \
		dd if=/dev/zero of="$V/seq.bin" bs=1M count=64 conv=notrunc status=none
	rm -f "$V/seq.bin"
	git -C "$V" status --porcelain >/dev/null
	row "git status, warm (per run)" 1 git -C "$V" status --porcelain
}

URING=/sys/module/fuse/parameters/enable_uring
URING_OLD=$(cat "$URING" 2>/dev/null || true)
uring() { # 0|1: the switch for the next mount; none: put it back
	[ -w "$URING" ] || return 0
	case "$1" in
	none) if [ "$URING_OLD" = Y ]; then echo 1 >"$URING"; else echo 0 >"$URING"; fi ;;
	*) echo "$1" >"$URING" ;;
	esac
}
trap 'uring none; cleanup' EXIT
# mount_as IO URING: (re)mounts the view with that I/O path and transport; sets $mode.
mount_as() {
	"$ARB" --workdir "$T/repo" workspace unmount rq >/dev/null 2>&1 || true
	uring "$2"
	"$ARB" --workdir "$T/repo" workspace mount rq --io "$1" >/dev/null
	stat "$V" >/dev/null
	uring none
	mode=daemon
	[ -e "$WS/run/io" ] && mode=$(cat "$WS/run/io") && mode=${mode%% *}
	[ -e "$WS/run/transport" ] && mode="$mode, $(cut -d' ' -f1 "$WS/run/transport")"
}

echo "| operation | path | requests read | per unit | replies |"
echo "| --- | --- | --- | --- | --- |"
"$ARB" --workdir "$T/repo" workspace create rq >/dev/null
mount_as daemon 0
suite
[ -e "$WS/run/io" ] || exit 0 # a binary from before the I/O path choice
mount_as passthrough 0
suite
[ -w "$URING" ] || exit 0
mount_as daemon 1
suite
mount_as passthrough 1
suite
