#!/usr/bin/env bash
# tests/pkg/fresh.sh [--tests [CTEST ARGS...]]: the README's two top commands, taken from
# README.md itself, on a fresh Debian 12 from a fresh clone of this repository's HEAD commit.
# The system: mmdebstrap's "important" variant (what a netinst or cloud image has) with sudo
# (a cloud image's) and git (the newcomer's `apt-get install git`), cached under
# /var/cache/arborinth-pkg; an ordinary user 'newcomer' (uid 1000, in group sudo without a
# password, as a cloud image's first user). Steps, each timed:
#  1. a user without sudo rights gets scripts/deps.sh's one line naming the packages;
#  2. newcomer runs the demo command in a clone in its home (packages through sudo, then the
#     build and the demo, as that user with a login shell's PATH, HOME and no locale);
#  3. root runs it in its own clone;
#  4. with --tests: root runs the test command: in /root it says in one line that the tests'
#     users cannot reach it; then in a clone in /srv (with CTEST ARGS, e.g. `-L unit`).
# The system runs as in tests/pkg/common.sh's pkg_enter (own mount and pid namespace,
# pivot_root, the host's /dev and /sys). Needs root and Debian's archive.
set -euo pipefail
source "$(dirname "$0")/common.sh"
pkg_need mmdebstrap unshare pivot_root git
tests=0
if [ "${1:-}" = --tests ]; then
	tests=1
	shift
fi
# The README's first sh block: its first line the demo, its second the tests.
cmds=$(awk '/^```sh$/ { on = 1; next } on && /^```$/ { exit } on' "$pkg_top/README.md" |
	sed 's/[[:space:]]*#.*$//' | grep -v '^$')
demo=$(sed -n 1p <<<"$cmds")
test_cmd=$(sed -n 2p <<<"$cmds")
if [ -z "$demo" ] || [ -z "$test_cmd" ]; then
	echo "fresh.sh: README.md has no two commands in its first sh block" >&2
	exit 1
fi
rev=$(git -C "$pkg_top" rev-parse HEAD)
start=$(date +%s)
step=$start
took() {
	local now
	now=$(date +%s)
	echo "fresh.sh: $1 in $((now - step)) s"
	step=$now
}
tar=$(ARBORINTH_PKG_VARIANT=important bash "$pkg_top/tests/pkg/rootfs.sh" bookworm fresh git sudo)
work=$(mktemp -d /var/tmp/arborinth-fresh.XXXXXX)
# The logs of the last run stay in /var/tmp/arborinth-fresh-logs.
logs=/var/tmp/arborinth-fresh-logs
trap 'rm -rf "$logs"; mkdir -p "$logs"; cp "$work"/*.log "$logs/" 2>/dev/null; rm -rf --one-file-system "$work"' EXIT
root=$work/root
mkdir "$root"
tar -xpf "$tar" -C "$root"
# What booting would make: /etc/mtab (systemd-tmpfiles; fusermount3 needs it).
ln -sfn ../proc/self/mounts "$root/etc/mtab"
# What the installer writes: this host's name (the system shares its UTS namespace) on
# 127.0.1.1 in /etc/hosts (else sudo says "unable to resolve host").
hostname >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' \
	"$(hostname)" >"$root/etc/hosts"
# Downloaded packages are kept between runs (hard links; apt still resolves and installs).
debs=${ARBORINTH_PKG_CACHE:-/var/cache/arborinth-pkg}/fresh-debs
mkdir -p "$debs"
find "$debs" -name '*.deb' -exec cp -l {} "$root/var/cache/apt/archives/" \;
chroot "$root" useradd -m -u 1000 -s /bin/bash -G sudo newcomer
chroot "$root" useradd -m -u 1001 -s /bin/bash nosudo
echo 'newcomer ALL=(ALL) NOPASSWD:ALL' >"$root/etc/sudoers.d/newcomer"
chmod 0440 "$root/etc/sudoers.d/newcomer"
for home in /home/newcomer /root; do
	git clone -q --no-checkout "$pkg_top" "$root$home/arborinth"
	git -C "$root$home/arborinth" checkout -q --detach "$rev"
done
chroot "$root" chown -R newcomer:newcomer /home/newcomer/arborinth
echo "fresh.sh: $(grep PRETTY "$root/etc/os-release"), commit ${rev:0:12}: demo '$demo', tests '$test_cmd'"
took "system ready"

# As in a login: runuser -l clears the environment and starts a login shell (PATH from
# /etc/profile: no /usr/sbin for a user); no XDG_RUNTIME_DIR (no logind), no LANG.
# The host's switch of FUSE over io_uring is made read-only: run-all.sh would flip it for
# the whole (shared) machine.
as() { # USER CMD
	PKG_TMP=disk pkg_enter "$root" bash -c 'p=/sys/module/fuse/parameters
		[ ! -d $p ] || mount --bind -o ro $p $p
		exec runuser -l "$1" -c "$2"' _ "$1" "$2" </dev/null
}

out=$(as nosudo 'bash /home/newcomer/arborinth/scripts/deps.sh --build' 2>&1) && {
	echo "FAIL: deps.sh succeeded for a user without sudo: $out"
	exit 1
}
grep -q '^scripts/deps.sh: missing Debian packages.*as root run: apt-get install .*libfuse3-dev' <<<"$out" || {
	echo "FAIL: deps.sh without sudo: $out"
	exit 1
}
echo "ok: a user without sudo: $(cut -c1-100 <<<"$out")..."

check_demo() { # WHO LOG
	local want
	for want in "hello from the box" "network: none" "agent: improve greeting" "audit of .demo.: ok"; do
		grep -q "$want" "$2" || {
			cat "$2"
			echo "FAIL: the demo as $1: its output lacks '$want'"
			exit 1
		}
	done
	echo "ok: the demo as $1"
}
as newcomer 'echo "env: PATH=$PATH HOME=$HOME LANG=${LANG-} XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR-}"
	id' >"$work/env-user.log" 2>&1
cat "$work/env-user.log"
as newcomer "cd ~/arborinth && $demo" >"$work/demo-user.log" 2>&1 || {
	cat "$work/demo-user.log"
	echo "FAIL: the demo as newcomer"
	exit 1
}
check_demo newcomer "$work/demo-user.log"
took "packages (sudo), build and demo as newcomer"
as root "cd ~/arborinth && $demo" >"$work/demo-root.log" 2>&1 || {
	cat "$work/demo-root.log"
	echo "FAIL: the demo as root"
	exit 1
}
check_demo root "$work/demo-root.log"
took "build and demo as root"

if [ "$tests" = 1 ]; then
	# In /root (0700) the tests' ordinary users cannot reach the tree: one line says so.
	out=$(as root "cd ~/arborinth && $test_cmd" 2>&1) && {
		echo "FAIL: the test command ran in /root/arborinth"
		exit 1
	}
	grep -q '^tests/run-all.sh: ordinary users cannot read /root/arborinth' <<<"$out" || {
		echo "FAIL: the test command in /root: $out"
		exit 1
	}
	echo "ok: the test command in /root/arborinth: $out"
	as root "git clone -q ~/arborinth /srv/arborinth"
	args=$(printf ' %q' "$@")
	if ! as root "cd /srv/arborinth && nice $test_cmd$args" >"$work/tests.log" 2>&1; then
		tail -150 "$work/tests.log"
		echo "FAIL: the test command as root ($test_cmd$args)"
		exit 1
	fi
	tail -5 "$work/tests.log"
	took "test command as root ($test_cmd$args)"
fi
# Kept: what apt could still download (autoclean drops the versions the archive replaced).
if compgen -G "$root/var/lib/apt/lists/*_Packages" >/dev/null; then
	chroot "$root" apt-get autoclean -qq
fi
rm -rf "$debs.new"
mkdir "$debs.new"
find "$root/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -exec cp -l {} "$debs.new/" \;
rm -rf "$debs"
mv "$debs.new" "$debs"
echo "fresh.sh: all done in $(($(date +%s) - start)) s"
