# tests/integration/lib.sh: shared helpers for integration scripts (sourced, bash).
# Each script gets a private temp dir; the exit hook unmounts every FUSE mount under it and
# kills the daemons it started, so a failing test leaves nothing behind.
set -euo pipefail

: "${ARB:?ARB must point at the arborinth binary}"
: "${ARB_SRC:?ARB_SRC must point at the source tree}"
T=$(mktemp -d "${TMPDIR:-/tmp}/arb-test.XXXXXX")
FAILS=0
CHECKS=0

arb_cleanup() {
	local rc=$?
	# Unmount deepest first.
	if [ -r /proc/self/mountinfo ]; then
		awk -v t="$T" '$5 ~ "^"t {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
	fi
	for pidf in $(find "$T" -name daemon.pid 2>/dev/null); do
		kill "$(cat "$pidf")" 2>/dev/null || true
	done
	# A sanitizer report from a view daemon (its stderr goes to run/fs.log) fails the test.
	if grep -rl "Sanitizer" --include=fs.log "$T" 2>/dev/null; then
		echo "FAIL: sanitizer report in a daemon log:" >&2
		grep -rh -A20 "Sanitizer" --include=fs.log "$T" >&2 || true
		rc=1
	fi
	if [ "${ARB_KEEP_TMP:-}" != 1 ]; then
		rm -rf "$T" 2>/dev/null || true
	else
		echo "kept $T" >&2
	fi
	exit $rc
}
trap arb_cleanup EXIT

# skip REASON: exit 77, or fail when the CI demands every test run.
skip() {
	if [ "${ARBORINTH_TEST_MUST_RUN:-}" = 1 ]; then
		echo "FAIL (skip not allowed): $*" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}

pass() { CHECKS=$((CHECKS + 1)); }
fail() {
	echo "FAIL: $*" >&2
	FAILS=$((FAILS + 1))
	CHECKS=$((CHECKS + 1))
}

# expect_eq WANT GOT WHAT
expect_eq() {
	if [ "$1" == "$2" ]; then pass; else fail "$3: expected [$1], got [$2]"; fi
}

# expect_match REGEX TEXT WHAT
# (A here-string, not a pipe: under pipefail, grep -q leaving early would fail the writer.)
expect_match() {
	if grep -Eq -- "$1" <<<"$2"; then pass; else fail "$3: [$2] does not match /$1/"; fi
}

# expect_status WANT WHAT -- CMD...: runs CMD, captures its stdout/stderr in OUT and ERR.
expect_status() {
	local want=$1 what=$2 got=0
	shift 3
	OUT=$("$@" 2>"$T/.stderr") || got=$?
	ERR=$(cat "$T/.stderr")
	if [ "$got" == "$want" ]; then pass; else fail "$what: exit $got (want $want); stderr: $ERR"; fi
}

# An error is one line on stderr that names the problem.
expect_one_line_error() {
	local n
	n=$(printf '%s\n' "$ERR" | grep -c . || true)
	if [ "$n" == 1 ]; then pass; else fail "$1: stderr should be one line, got: $ERR"; fi
}

# mkrepo DIR: a small repository with files, a subdirectory, an executable and a symlink.
mkrepo() {
	local d=$1
	mkdir -p "$d"
	git -C "$d" init -q -b main
	git -C "$d" config user.email t@example.com
	git -C "$d" config user.name tester
	printf 'hello\n' >"$d/README"
	mkdir -p "$d/src/lib"
	printf 'int main(void) { return 0; }\n' >"$d/src/main.c"
	printf 'lib\n' >"$d/src/lib/a.txt"
	printf '#!/bin/sh\necho run\n' >"$d/run.sh"
	chmod +x "$d/run.sh"
	ln -s README "$d/link"
	git -C "$d" add -A
	GIT_COMMITTER_DATE='2024-01-02T03:04:05Z' GIT_AUTHOR_DATE='2024-01-02T03:04:05Z' \
		git -C "$d" commit -q -m "first"
	printf 'second\n' >>"$d/README"
	git -C "$d" commit -q -am "second"
}

# tree_hash DIR: a digest of every path, mode and content under DIR (to show it is unchanged).
# In a git directory, arborinth's own state (.git/arborinth) is not counted.
tree_hash() {
	local skip=./.none
	case $1 in */.git) skip=./arborinth ;; esac
	(cd "$1" && find . -path "$skip" -prune -o -printf '%p %m %s %l\n' | LC_ALL=C sort &&
		find . -path "$skip" -prune -o -type f -print0 |
		LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

# alive PID: running and not a zombie (this machine's pid 1 may not reap orphans).
alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# wait_dead PID: up to 10 s for it to end.
wait_dead() {
	for _ in $(seq 100); do alive "$1" || return 0; sleep 0.1; done
	return 1
}

# ring_switches PID: voluntary context switches of a view daemon's io_uring threads (one per
# request or more): whether requests went over the ring (fs_uring.sh, audit_sync.sh).
ring_switches() {
	local t sum=0 n
	for t in /proc/"$1"/task/*; do
		[[ "$(cat "$t/comm")" == arb-ring* ]] || continue
		n=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")
		sum=$((sum + n))
	done
	echo "$sum"
}

finish() {
	if [ "$FAILS" -gt 0 ]; then
		echo "$FAILS of $CHECKS checks failed" >&2
		exit 1
	fi
	echo "all $CHECKS checks passed"
}
