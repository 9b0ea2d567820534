#!/usr/bin/env bash
# tests/run-all.sh: the whole test suite, from a fresh clone on Debian 12.
# Installs what it needs, checks formatting, builds the normal and the sanitizer
# (ASan+UBSan) builds, and runs every ctest in both. Exit status: 0 only if all pass.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Root's tests run parts as ordinary users, from this tree: they must be able to reach it.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 &&
	! runuser -u nobody -- test -r "$top/tests/run-all.sh"; then
	echo "tests/run-all.sh: ordinary users cannot read $top (the tests run parts as them): clone it where they can, e.g. in /srv or /opt, not /root" >&2
	exit 1
fi
bash scripts/deps.sh
# Non-root users need /dev/fuse (root does not).
if [ "$(id -u)" = 0 ] && [ -e /dev/fuse ]; then
	chmod 0666 /dev/fuse || true
fi
if [ "${CI:-}" = true ]; then
	export ARBORINTH_TEST_MUST_RUN=1
fi
# CI: the newest git (ws_origin_refs' fsmonitor check with git >= 2.55), built once from Debian
# sid's source into /var/cache/arborinth-git (scripts/newgit.sh), niced, while the checks and
# builds below run; waited for before the tests. A failure fails that test, not the run.
newgit=
if [ "${CI:-}" = true ]; then
	bash scripts/newgit.sh >/dev/null &
	newgit=$!
fi
# CI: the README's demo command on a fresh Debian 12 from a fresh clone, as an ordinary user
# and as root (tests/pkg/fresh.sh, ~3 min), niced, beside the checks and builds; waited for
# before the tests (its boxes and users would be seen by theirs). A failure fails the run.
fresh=
if [ "${CI:-}" = true ]; then
	fresh_log=$(mktemp /tmp/arborinth-fresh.XXXXXX.log)
	nice bash tests/pkg/fresh.sh >"$fresh_log" 2>&1 &
	fresh=$!
fi

echo "== format check"
git ls-files -z '*.c' '*.h' | xargs -0 clang-format --dry-run --Werror
echo "== layering check"
bash scripts/check-layers.sh
echo "== static analysis (cppcheck)"
git ls-files -z '*.c' ':!tests/' | xargs -0 cppcheck --quiet --enable=warning,portability \
	--inline-suppr --std=c11 -D_GNU_SOURCE -I. --error-exitcode=1

# FUSE over io_uring (fs/transport/uring.c) is switched on by root, machine-wide: the normal pass runs
# every test with views on /dev/fuse, the sanitizer pass with views on io_uring (where the
# kernel has it); fs_uring checks both side by side. The setting is put back at the end.
uring=/sys/module/fuse/parameters/enable_uring
uring_old=
if [ -w "$uring" ]; then
	uring_old=$(cat "$uring")
	trap 'if [ "$uring_old" = Y ]; then echo 1 >"$uring"; else echo 0 >"$uring"; fi' EXIT
	echo 0 >"$uring"
fi

jobs=$(nproc)
echo "== build (RelWithDebInfo)"
bash scripts/build.sh "$top/build"
if [ -n "$newgit" ]; then
	wait "$newgit" || echo "scripts/newgit.sh failed: ws_origin_refs will fail" >&2
fi
fresh_failed=
if [ -n "$fresh" ]; then
	wait "$fresh" || fresh_failed=1
	echo "== the README's demo on a fresh Debian 12 (tests/pkg/fresh.sh)"
	cat "$fresh_log"
	rm -f "$fresh_log"
fi
echo "== tests"
(cd build && ctest --output-on-failure -j "$jobs" "$@")

echo "== build (ASan+UBSan)"
bash scripts/build.sh "$top/build-asan" -DARB_SANITIZE=ON
echo "== tests under sanitizers${uring_old:+, views over io_uring}"
[ -z "$uring_old" ] || echo 1 >"$uring"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export LSAN_OPTIONS=suppressions=$top/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$jobs" "$@")
if [ -n "$fresh_failed" ]; then
	echo "== FAILED: the README's demo on a fresh Debian 12 (its log above)"
	exit 1
fi
echo "== all tests passed"
