#!/usr/bin/env bash
# scripts/deps.sh [--build]: installs the Debian 12 packages arborinth needs to build, test and
# run; --build: only those to build and run it (scripts/demo.sh). Does nothing when all are
# present; otherwise apt-get update + install, as root or through sudo.
set -euo pipefail

# To build (debian/control's Build-Depends) and run (bwrap, fusermount3, git; gcc and curl for
# the demo's "agent").
BUILD=(build-essential cmake ninja-build pkg-config git python3 libfuse3-dev fuse3 libgit2-dev
	libsqlite3-dev libseccomp-dev liburing-dev check libjansson-dev libmicrohttpd-dev
	libcurl4-openssl-dev libssl-dev nettle-dev zlib1g-dev libdeflate-dev libhttp-parser-dev
	libnghttp2-dev libsystemd-dev bubblewrap curl ca-certificates)
PKGS=(build-essential cmake ninja-build pkg-config git python3 clang-format cppcheck
      libfuse3-dev fuse3 libgit2-dev libmbedtls-dev libsqlite3-dev sqlite3 libseccomp-dev liburing-dev check
      libjansson-dev libmicrohttpd-dev libcurl4-openssl-dev libssl-dev nettle-dev zlib1g-dev libdeflate-dev libhttp-parser-dev libsystemd-dev bubblewrap libcap2-bin iproute2 procps psmisc
      util-linux attr tmux python3-venv python3-setuptools python3-pip groff-base zsh fish
      qemu-system-x86 busybox-static kmod cpio xz-utils zstd systemd
      nodejs clang) # qemu-system-x86 ... zstd: the VM lane (tests/vm: Debian's kernels under
                    # QEMU; systemd: its user manager in the guest); nodejs (and npm,
                    # below) for the real agent clients in e2e_real_clients; clang for the
                    # libFuzzer target
# tests/pkg (label pkg): the Debian packages (debhelper, dpkg-dev), fresh Debian 12 and 13
# systems (mmdebstrap), the image under podman (runc: crun refuses hosts with cgroups in
# hybrid mode; uidmap for --uidmap).
PKGS+=(debhelper dpkg-dev fakeroot mmdebstrap podman runc uidmap)
# tests/integration/ws_filesystems.sh: a repository on btrfs, xfs (loop images) and bindfs.
PKGS+=(btrfs-progs xfsprogs bindfs)
# tests/integration/fs_lfs.sh: git LFS files in the view, with a local LFS store.
PKGS+=(git-lfs)
# tests/integration/e2e_review.py: the review page in a real headless browser.
PKGS+=(chromium)
# The reapi backend (HTTP/2: libnghttp2); tests/integration/proxy_reapi.sh: a fake REAPI
# server and client (python3-grpcio) and Bazel as the real client (bazel-bootstrap).
PKGS+=(libnghttp2-dev python3-grpcio bazel-bootstrap)

# npm: Debian's own package (nodesource's nodejs, as on the CI machine, has it inside).
command -v npm >/dev/null || PKGS+=(npm)
if [ "${1:-}" = --build ]; then
	PKGS=("${BUILD[@]}")
else
	PKGS+=("${BUILD[@]}")
fi
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
SUDO=
if [ "$(id -u)" != 0 ]; then
	# An ordinary user installs through sudo (a cloud image's first user can; a netinst
	# system's user may not, or have no sudo): else one line saying what root must run.
	why=
	if ! command -v sudo >/dev/null; then
		why="no sudo here"
	elif ! [ -t 0 ] && ! sudo -n true 2>/dev/null; then
		why="sudo needs a password and there is no terminal"
	fi
	if [ -n "$why" ]; then
		echo "scripts/deps.sh: missing Debian packages ($why); as root run: apt-get install ${missing[*]}" >&2
		exit 1
	fi
	SUDO=sudo
	echo "scripts/deps.sh: installing Debian packages with sudo (apt-get)" >&2
fi
echo "installing: ${missing[*]}" >&2
# Through env: sudo does not pass the caller's environment on.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
