#!/usr/bin/env bash
# tests/pkg/image.sh BUILD: an OCI image made from the Debian packages (the same fresh Debian
# 12 system as install.sh, a tarball imported with 'podman import', no registry) and the demo
# run in it under rootful podman, the shape of a Kubernetes pod with hostUsers: false:
#   --uidmap/--gidmap    the container in its own user namespace (root in it is host uid
#                        100000, the demo user host uid 101000)
#   --cap-add SYS_ADMIN  in the bounding set only (with podman's DAC_OVERRIDE), for
#                        the setuid fusermount3: mount(2) and umount2(2) of a FUSE view, on a
#                        mount point in the user's 0700 home; capabilities over the
#                        container's own user namespace, not the host's
#   setpriv              arborinth runs as an ordinary user (1000) with no capabilities
#                        (podman would make an added capability ambient for --user 1000,
#                        and bwrap refuses to run with capabilities it did not get by setuid)
#   --device /dev/fuse   the FUSE device (a device plugin on a cluster)
#   seccomp profile      scripts/seccomp-profile.py: clone/unshare/mount/pivot_root/setns for
#                        bwrap and mount for fusermount3; CONTROL: with them denied (Docker's
#                        and containerd's default without CAP_SYS_ADMIN) no view mounts
#   unmask=/proc/*       /proc without podman's masks (procMount: Unmasked): bwrap mounts a
#                        new /proc, which the kernel refuses while parts of the old are hidden
# The container is not --privileged.
set -euo pipefail
source "$(dirname "$0")/common.sh"
pkg_need mmdebstrap dpkg-buildpackage podman
[ -e /dev/fuse ] || pkg_skip "no /dev/fuse"
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/arborinth-pkg-image.XXXXXX)
img=localhost/arborinth-pkg-test:$$
cleanup() {
	[ -n "${ARBORINTH_PKG_KEEP:-}" ] || podman rmi -f "$img" >/dev/null 2>&1 || true
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
start=$(date +%s)
pkg_debs "$build/pkg/debs"
pkg_installed "$build/pkg/debs" "$work"
cp "$pkg_top/scripts/demo.sh" "$work/root/home/demo/demo.sh"
chroot "$work/root" chown demo:demo /home/demo/demo.sh
tar -C "$work/root" --numeric-owner -cf - . |
	podman import --change 'USER=1000' --change 'WORKDIR=/home/demo' \
		--change 'ENV=HOME=/home/demo' - "$img" >/dev/null
rm -rf --one-file-system "$work/root"
echo "image.sh: image $img made in $(($(date +%s) - start)) s"
base=/usr/share/containers/seccomp.json
python3 "$pkg_top/scripts/seccomp-profile.py" "$base" >"$work/seccomp.json"
python3 "$pkg_top/scripts/seccomp-profile.py" "$base" --deny >"$work/seccomp-deny.json"
run() { # SECCOMP CMD...
	local prof=$1
	shift
	podman --runtime runc run --rm --network none --ulimit nofile=4096:4096 \
		--ulimit nproc=4096:4096 --cap-add SYS_ADMIN --uidmap 0:100000:65536 --gidmap 0:100000:65536 \
		--user 0:0 --device /dev/fuse --security-opt seccomp="$prof" \
		--security-opt 'unmask=/proc/*' --security-opt no-new-privileges=false "$img" \
		setpriv --reuid=1000 --regid=1000 --init-groups --inh-caps=-all --ambient-caps=-all \
		--bounding-set=-all,+sys_admin,+dac_override "$@"
}
# CONTROL: with these calls denied as by Docker's and containerd's defaults, fusermount3's
# mount(2) is refused (setuid root does not help: the filter applies to every process in the
# container), so not even the view comes up.
run "$work/seccomp-deny.json" bash -c 'cd && mkdir r && cd r && git init -q &&
	git -c user.name=u -c user.email=u@e commit -q --allow-empty -m x &&
	arborinth workspace create w >/dev/null && echo VIEW-OK' >"$work/deny.out" 2>&1 || true
if grep -q VIEW-OK "$work/deny.out" || ! grep -q "mount failed: Operation not permitted" "$work/deny.out"; then
	cat "$work/deny.out"
	echo "FAIL: the control: the view should fail with mount(2) denied" >&2
	exit 1
fi
echo "ok (control): with the calls denied: $(head -1 "$work/deny.out")"
t0=$(date +%s)
run "$work/seccomp.json" bash -c 'echo "in the container: $(id -un) uid $(id -u), uid_map $(xargs </proc/self/uid_map), $(grep -E "^Cap(Eff|Bnd)" /proc/self/status | xargs)"
	ARBORINTH=arborinth bash demo.sh' >"$work/demo.out" 2>&1 || {
	cat "$work/demo.out"
	echo "FAIL: the demo in the container" >&2
	exit 1
}
for want in "hello from the box" "network: none" "agent: improve greeting" "audit of 'demo': ok"; do
	grep -q "$want" "$work/demo.out" || {
		cat "$work/demo.out"
		echo "FAIL: the demo's output lacks '$want'" >&2
		exit 1
	}
done
head -1 "$work/demo.out"
echo "ok: the demo ran in the container in $(($(date +%s) - t0)) s; all done in $(($(date +%s) - start)) s"
