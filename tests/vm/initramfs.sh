#!/usr/bin/env bash
# tests/vm/initramfs.sh KDIR OUT: a small initramfs for the kernel unpacked in KDIR (kernel.sh):
# busybox, the modules a 9p root, an overlay and FUSE need (with their dependencies, in load
# order, uncompressed: busybox's insmod reads plain .ko), and tests/vm/init as /init.
set -euo pipefail
kdir=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
shopt -s nullglob
mods=("$kdir"/root/lib/modules/* "$kdir"/root/usr/lib/modules/*)
[ ${#mods[@]} -gt 0 ] || { echo "initramfs.sh: no modules in $kdir" >&2; exit 1; }
moddir=${mods[0]}
busybox=$(command -v busybox)
if ldd "$busybox" >/dev/null 2>&1; then
	echo "initramfs.sh: $busybox is not static (install busybox-static)" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,sbin,mnt,newroot,proc,sys,dev,modules}
cp "$busybox" "$work/bin/busybox"
for a in sh mount umount insmod mkdir switch_root cat echo sleep poweroff ls; do
	ln -s busybox "$work/bin/$a"
done

# name -> file, the module's dependencies first; a module built into the kernel has no file.
declare -A seen=()
n=0
add() {
	local name=${1//-/_} f dep
	[ -z "${seen[$name]:-}" ] || return 0
	seen[$name]=1
	f=$(find "$moddir/kernel" -name "$name.ko*" -o -name "${name//_/-}.ko*" | head -1)
	if [ -z "$f" ]; then
		grep -Eq "/(${name}|${name//_/-})\.ko" "$moddir/modules.builtin" ||
			{ echo "initramfs.sh: module $name not found" >&2; exit 1; }
		return 0
	fi
	for dep in $(modinfo -F depends "$f" | tr ',' ' '); do add "$dep"; done
	n=$((n + 1))
	case $f in
	*.xz) xz -dc "$f" ;;
	*.zst) zstd -qdc "$f" ;;
	*.gz) gzip -dc "$f" ;;
	*) cat "$f" ;;
	esac >"$work/modules/$(printf %02d $n)-$name.ko"
}
for m in virtio_pci 9pnet_virtio 9p overlay fuse; do add "$m"; done
cp "$here/init" "$work/init"
chmod +x "$work/init"
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
