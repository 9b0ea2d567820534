# tests/pkg/common.sh: sourced by the package tests. pkg_debs builds (or reuses) the .debs;
# pkg_installed DIR makes DIR/root, a fresh Debian 12 system (a cached mmdebstrap tarball with
# the packages' dependencies) with the four packages installed by dpkg and an ordinary user
# 'demo' (uid 1000). Needs root.
pkg_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# What the packages need at run time (their Depends), and gcc for the demo's "agent".
PKG_RUNTIME=(bubblewrap fuse3 git python3 gcc libc6-dev libcurl4 libfuse3-3 libgit2-1.5
	libhttp-parser2.9 libjansson4 libnettle8 libsqlite3-0 libssl3 liburing2 zlib1g)

# pkg_skip REASON: exit 77 (ctest: skipped), or fail where everything must run (CI).
pkg_skip() {
	if [ "${ARBORINTH_TEST_MUST_RUN:-}" = 1 ]; then
		echo "FAIL: cannot run here: $1 (ARBORINTH_TEST_MUST_RUN=1)" >&2
		exit 1
	fi
	echo "SKIP: $1" >&2
	exit 77
}

pkg_need() {
	[ "$(id -u)" = 0 ] || pkg_skip "needs root (mmdebstrap, chroot, dpkg)"
	local p missing=()
	for p in "$@"; do
		command -v "$p" >/dev/null || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] || pkg_skip "missing ${missing[*]} (scripts/deps.sh installs them)"
}

pkg_debs() { # OUT
	bash "$pkg_top/tests/pkg/debs.sh" "$pkg_top" "$1"
}

pkg_installed() { # DEBS DIR
	local debs=$1 dir=$2 tar
	tar=$(bash "$pkg_top/tests/pkg/rootfs.sh" bookworm run "${PKG_RUNTIME[@]}")
	mkdir -p "$dir/root"
	tar -xpf "$tar" -C "$dir/root"
	mkdir -p "$dir/root/tmp/debs"
	cp "$debs"/arborinth_*.deb "$debs"/libarborinth0_*.deb "$debs"/libarborinth-dev_*.deb \
		"$debs"/python3-arborinth_*.deb "$dir/root/tmp/debs/"
	# dpkg alone: every dependency must already be there, or this fails (no network use).
	chroot "$dir/root" sh -c 'dpkg -i /tmp/debs/*.deb >/dev/null && rm -rf /tmp/debs'
	chroot "$dir/root" useradd -m -u 1000 -s /bin/bash demo
	# A booted Debian has /etc/mtab (systemd-tmpfiles makes it); an mmdebstrap system does
	# not, and fusermount3 cannot unmount without it ("failed to open /etc/mtab").
	ln -sfn ../proc/self/mounts "$dir/root/etc/mtab"
}

# pkg_enter ROOT CMD...: runs CMD as root in ROOT, in a private mount and pid namespace (every
# process started there, view daemons too, ends with it) with its own /proc, the host's /dev
# (for /dev/fuse) and /sys, a fresh /tmp (a tmpfs; PKG_TMP=disk: ROOT's own, as on Debian 12).
# pivot_root, not chroot: the kernel refuses new user namespaces (every box's) to a chrooted
# process.
pkg_enter() {
	local root=$1
	shift
	tmp=${PKG_TMP:-} unshare --mount --pid --fork --propagation private bash -c '
		set -e
		root=$1
		shift
		mount --bind "$root" "$root"
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		mount --rbind /sys "$root/sys"
		[ "$tmp" = disk ] || mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
		cd "$root"
		pivot_root . .
		umount -l .
		cd /
		# Nothing of the caller beyond stdio: a descriptor ctest left open would otherwise
		# reach the tests inside (check_jail dup2s onto fd 9 and reads a pipe it made).
		for fd in $(ls /proc/$$/fd); do
			[ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null || true
		done
		exec "$@"' _ "$root" "$@"
}
