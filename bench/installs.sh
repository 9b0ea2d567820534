#!/usr/bin/env bash
# bench/installs.sh: what agents do to a workspace that is the small-file storm in real life,
# side by side with a native clone on the same fresh journaled ext4 (a loop image):
#   - `npm ci` of a project (eslint, typescript, webpack, @babel/core, lodash: ~150 packages,
#     ~7,200 files) from npm's cache, offline, scripts off: unpacking and linking only;
#   - `git checkout` of a branch that adds those ~7,200 files, from a branch without them
#     (the views as configured, with parallel checkout, and the default view with one worker).
# Subjects: native, the view as created by default with requests over /dev/fuse, and, where
# root may switch FUSE over io_uring on, the same view over io_uring. Medians of hyperfine
# runs and their ratios to native in the same run, as Markdown rows.
#
#   ARB=build/cli/arborinth bench/installs.sh [--runs N] [--busy N]
#
# (as root; default 5 runs). --busy N keeps N CPU-bound loops running during the measurements,
# a machine that is also building something: how each subject holds up when CPUs are shared.
#
# The first run fills npm's cache from the registry ($ARB_BENCH_DIR/npm-cache, default under
# /var/tmp/arborinth-bench); later runs need no network. Everything mounted or made here is
# removed on exit, and the io_uring switch is put back as it was.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ARB=$(realpath "${ARB:-$HERE/../build/cli/arborinth}")
WORK=${ARB_BENCH_DIR:-/var/tmp/arborinth-bench}
RUNS=5
BUSY=0
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2 && shift ;;
	--busy) BUSY=$2 && shift ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
	*) echo "installs.sh: unknown argument '$1'" >&2 && exit 2 ;;
	esac
	shift
done
die() {
	echo "installs.sh: $*" >&2
	exit 2
}
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs wants a positive number, not '$RUNS'"
[[ "$BUSY" =~ ^[0-9]+$ ]] || die "--busy wants a number, not '$BUSY'"
for t in hyperfine npm git mkfs.ext4 python3; do
	command -v "$t" >/dev/null || die "missing $t (apt-get install hyperfine npm git e2fsprogs python3)"
done
[ "$(id -u)" = 0 ] || die "run as root (it mounts a loop image)"
[ -x "$ARB" ] || die "no arborinth binary at $ARB (set ARB=path/to/build/cli/arborinth)"

CACHE="$WORK/npm-cache"
T=$(mktemp -d /var/tmp/arb-installs.XXXXXX)
E="$T/ext4"
URING=/sys/module/fuse/parameters/enable_uring
URING_OLD=$(cat "$URING" 2>/dev/null || true)
uring_set() { [ -w "$URING" ] && echo "$1" >"$URING" || true; }
HOGS=()
cleanup() {
	set +e
	[ ${#HOGS[@]} -eq 0 ] || kill "${HOGS[@]}" 2>/dev/null
	if [ -w "$URING" ]; then
		if [ "$URING_OLD" = Y ]; then echo 1 >"$URING"; else echo 0 >"$URING"; fi
	fi
	for ws in inst-d inst-u; do
		"$ARB" --workdir "$E/repo" workspace delete "$ws" --force >/dev/null 2>&1
	done
	mountpoint -q "$E" && { umount "$E" || umount -l "$E"; }
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$WORK" "$E"

# The project, its lock file and npm's cache (network only the first time).
P="$T/project"
mkdir -p "$P"
cat >"$P/package.json" <<'EOF'
{
  "name": "arb-bench-install",
  "version": "1.0.0",
  "private": true,
  "dependencies": {
    "@babel/core": "7.24.5",
    "eslint": "8.57.0",
    "lodash": "4.17.21",
    "typescript": "5.4.5",
    "webpack": "5.91.0"
  }
}
EOF
NPM=(npm --cache "$CACHE" --no-audit --no-fund --ignore-scripts --loglevel=error)
if [ -f "$WORK/npm-lock.json" ]; then
	cp "$WORK/npm-lock.json" "$P/package-lock.json"
else
	(cd "$P" && "${NPM[@]}" install --package-lock-only >/dev/null) ||
		die "npm could not resolve the project (is the registry reachable?)"
	cp "$P/package-lock.json" "$WORK/npm-lock.json"
fi
(cd "$P" && "${NPM[@]}" ci --prefer-offline >/dev/null) || die "npm ci failed filling the cache"
nfiles=$(find "$P/node_modules" -type f | wc -l)

# A fresh journaled ext4 holding the origin, its workspaces and a native clone.
truncate -s 8G "$T/ext4.img"
mkfs.ext4 -q -F "$T/ext4.img"
mount -o loop "$T/ext4.img" "$E"
git init -q -b main "$E/repo"
cp "$P/package.json" "$P/package-lock.json" "$E/repo/"
g() { git -C "$1" -c user.name=bench -c user.email=bench@localhost "${@:2}"; }
g "$E/repo" add -A
g "$E/repo" commit -qm project
g "$E/repo" checkout -qb deps
cp -a "$P/node_modules" "$E/repo/"
g "$E/repo" add -A -f node_modules
g "$E/repo" commit -qm "vendored node_modules"
g "$E/repo" checkout -q main
git -C "$E/repo" config gc.auto 0
git clone -q --no-local "$E/repo" "$E/native"
git -C "$E/native" checkout -q main
git -C "$E/native" config gc.auto 0

uring_set 0
"$ARB" --workdir "$E/repo" workspace create inst-d >/dev/null
stat "$E/repo/.git/arborinth/workspaces/inst-d/workdir" >/dev/null
VD="$E/repo/.git/arborinth/workspaces/inst-d/workdir"
VU=
if [ -w "$URING" ]; then
	uring_set 1
	"$ARB" --workdir "$E/repo" workspace create inst-u >/dev/null
	stat "$E/repo/.git/arborinth/workspaces/inst-u/workdir" >/dev/null # INIT: chosen now
	uring_set 0
	VU="$E/repo/.git/arborinth/workspaces/inst-u/workdir"
	grep -q '^io_uring' "$E/repo/.git/arborinth/workspaces/inst-u/run/transport" || VU=
fi
for v in "$VD" ${VU:+"$VU"}; do
	git -C "$v" config gc.auto 0
done

# measure TITLE hyperfine-args...: one Markdown row, medians and ratios to the first subject.
measure() {
	local title=$1 json="$T/run.json"
	shift
	hyperfine -N --runs "$RUNS" --warmup 1 --export-json "$json" "$@" >/dev/null 2>&1 ||
		die "hyperfine failed on: $title"
	python3 - "$title" "$json" <<'EOF'
import json, sys
title, path = sys.argv[1], sys.argv[2]
res = json.load(open(path))["results"]
base = res[0]["median"]
cells = [f"{r['command']} {r['median']:.3f} s" + ("" if i == 0 else f" (**{r['median'] / base:.2f}×**)")
         for i, r in enumerate(res)]
print(f"| {title} | " + " | ".join(cells) + " |")
EOF
}

npm_ci() { echo "sh -c 'cd $1 && ${NPM[*]} ci --offline >/dev/null'"; }
subjects() { # MAKE-COMMAND PREPARE-COMMAND: native, view, view over io_uring
	local mk=$1 prep=$2 out=() n d
	for n in native view "view, io_uring"; do
		case "$n" in
		native) d="$E/native" ;;
		view) d="$VD" ;;
		*) [ -n "$VU" ] || continue && d="$VU" ;;
		esac
		out+=(--prepare "${prep//DIR/$d}" -n "$n" "${mk//DIR/$d}")
	done
	printf '%s\0' "${out[@]}"
}
for _ in $(seq "$BUSY"); do
	sh -c 'while :; do :; done' &
	HOGS+=($!)
done
mapfile -d '' args < <(subjects "$(npm_ci DIR)" "sh -c 'rm -rf DIR/node_modules; sync'")
echo "# $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $nfiles files, $RUNS runs, $BUSY busy loops"
measure "npm ci, offline ($nfiles files)" "${args[@]}"
# By commit: a workspace's repository has its own branch, not the origin's.
deps=$(git -C "$E/repo" rev-parse deps)
main=$(git -C "$E/repo" rev-parse main)
mapfile -d '' args < <(subjects "git -C DIR checkout -q $deps" \
	"sh -c 'git -C DIR checkout -q -f $main && git -C DIR clean -qfdx && sync'")
# The views' git config asks for parallel checkout (checkout.workers, core/gitdir.c); the
# native clone has git's default, one at a time. The last subject is the view with one worker.
args+=(--prepare "sh -c 'git -C $VD checkout -q -f $main && git -C $VD clean -qfdx && sync'"
	-n "view, checkout.workers=1" "git -C $VD -c checkout.workers=1 checkout -q $deps")
measure "git checkout adding $nfiles files" "${args[@]}"
