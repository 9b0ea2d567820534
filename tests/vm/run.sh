#!/usr/bin/env bash
# tests/vm/run.sh SUITE BUILD: boots Debian SUITE's kernel (bookworm: 6.1, trixie: 6.12) under
# QEMU (software emulation; ARB_VM_ACCEL=kvm to use KVM) with this machine's root shared read-only over
# 9p, and runs the smoke suite there as root and as an ordinary user (guest.sh). Exit 0 only
# when the guest printed ARB-VM-RESULT: PASS; a failing boot fails. The kernel and its
# initramfs are cached in $ARB_VM_CACHE (default /var/cache/arborinth-vm).
set -euo pipefail
suite=$1
build=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${ARB_VM_CACHE:-/var/cache/arborinth-vm}
skip() {
	if [ "${ARBORINTH_TEST_MUST_RUN:-}" = 1 ]; then
		echo "FAIL (skip not allowed): $*" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "the VM lane runs as root (it shares / over 9p)"
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"
command -v busybox >/dev/null || skip "no busybox (busybox-static)"
[ -x /lib/systemd/systemd ] || skip "no /lib/systemd/systemd (systemd: the guest's user manager)"
mkdir -p "$cache"
kdir=$(bash "$src/tests/vm/kernel.sh" "$suite" "$cache")
initrd=$kdir/initrd.gz
if [ ! -e "$initrd" ] || [ "$src/tests/vm/init" -nt "$initrd" ] ||
	[ "$src/tests/vm/initramfs.sh" -nt "$initrd" ]; then
	bash "$src/tests/vm/initramfs.sh" "$kdir" "$initrd.new"
	mv "$initrd.new" "$initrd"
fi
# Software emulation unless told otherwise: a /dev/kvm that opens is no promise that KVM runs
# a guest (on this project's CI machines it opens and the guest dies at its first AVX
# instruction). ARB_VM_ACCEL=kvm where KVM is known to work.
accel=${ARB_VM_ACCEL:-tcg}
log=$(mktemp "${TMPDIR:-/tmp}/arb-vm-$suite.XXXXXX")
trap 'rm -f "$log"' EXIT
start=$(date +%s)
timeout 600 qemu-system-x86_64 -accel "$accel" -m 2048 -smp 2 -nographic -no-reboot \
	-kernel "$kdir/vmlinuz" -initrd "$initrd" \
	-append "console=ttyS0 quiet panic=-1 arb.script=$src/tests/vm/guest.sh arb.build=$build arb.src=$src" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-nic none </dev/null >"$log" 2>&1 || true
took=$(($(date +%s) - start))
grep -E '^(ARB-VM|ok:|FAIL)' "$log" | tr -d '\r' || true
if grep -q 'ARB-VM-RESULT: PASS' "$log"; then
	echo "the smoke suite passed on $suite's kernel in ${took}s"
	exit 0
fi
echo "FAIL: the smoke suite did not pass on $suite's kernel (${took}s); the console's end:" >&2
tail -40 "$log" | tr -d '\r' >&2
exit 1
