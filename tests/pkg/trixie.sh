#!/usr/bin/env bash
# tests/pkg/trixie.sh: the source builds and passes its unit tests (ctest -L unit) on a fresh
# Debian 13 system (mmdebstrap, cached) that has the Build-Depends of debian/control, as root
# there (pkg_enter: own mount and pid namespace, pivot_root). Prints how long each step took.
set -euo pipefail
source "$(dirname "$0")/common.sh"
pkg_need mmdebstrap unshare pivot_root
# debian/control's Build-Depends (without debhelper), plus a compiler and what the unit tests
# start (git, bwrap, fusermount3).
deps=$(sed -n '/^Build-Depends:/,/^[A-Z][a-zA-Z-]*:/p' "$pkg_top/debian/control" | sed '$d' |
	sed 's/^Build-Depends://' | tr ',' '\n' | sed 's/(.*)//; s/^ *//; s/ *$//' |
	grep -v -e '^$' -e '^debhelper')
start=$(date +%s)
# shellcheck disable=SC2086
tar=$(bash "$pkg_top/tests/pkg/rootfs.sh" trixie build build-essential $deps git bubblewrap fuse3)
work=$(mktemp -d /tmp/arborinth-pkg-trixie.XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
mkdir "$work/root"
tar -xpf "$tar" -C "$work/root"
ln -sfn ../proc/self/mounts "$work/root/etc/mtab"
mkdir "$work/root/src"
(cd "$pkg_top" && git ls-files -co --exclude-standard -z | tar --null -cf - -T - 2>/dev/null) |
	tar -xf - -C "$work/root/src"
echo "trixie.sh: system ready in $(($(date +%s) - start)) s ($(grep PRETTY "$work/root/etc/os-release"))"
pkg_enter "$work/root" bash -c '
	set -e
	t0=$(date +%s)
	cmake -S /src -B /build -G Ninja >/tmp/cmake.log 2>&1 || { cat /tmp/cmake.log; exit 1; }
	nice ninja -C /build >/tmp/ninja.log 2>&1 || { tail -50 /tmp/ninja.log; exit 1; }
	t1=$(date +%s)
	echo "trixie.sh: built with $(cc --version | head -1) in $((t1 - t0)) s"
	cd /build && ctest -L unit --output-on-failure
	echo "trixie.sh: unit tests passed in $(($(date +%s) - t1)) s"'
echo "trixie.sh: all done in $(($(date +%s) - start)) s"
