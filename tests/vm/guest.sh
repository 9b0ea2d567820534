#!/bin/bash
# tests/vm/guest.sh: PID 1 of the test VM after switch_root (tests/vm/init). Mounts what a
# Debian machine has (proc, sys, cgroup v2, /dev/pts, a tmpfs for work), lays out cgroups the
# way systemd does for a logged-in user (a delegated user@UID.service), runs smoke.sh as root
# and as an ordinary user, refusal.sh, then scope.sh with a real systemd user manager, prints
# one ARB-VM-RESULT line and powers off.
# Kernel command line: arb.build=DIR (the build tree) arb.src=DIR (the source tree).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs -o mode=0755 run /run
mkdir -p /vmtmp && mount -t tmpfs -o mode=1777,size=1536m vmtmp /vmtmp
ip link set lo up 2>/dev/null || true
hostname arbvm
build= src=
for w in $(cat /proc/cmdline); do
	case $w in
	arb.build=*) build=${w#arb.build=} ;;
	arb.src=*) src=${w#arb.src=} ;;
	esac
done
result() {
	echo "ARB-VM-RESULT: $1 (kernel $(uname -r), $(cut -d' ' -f1 /proc/uptime) s after boot)"
	sync
	echo o >/proc/sysrq-trigger 2>/dev/null
	poweroff -f
}
trap 'result FAIL' ERR
set -u
echo "ARB-VM: kernel $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# What systemd gives a logged-in user: user.slice/user-UID.slice/user@UID.service, owned by the
# user, every controller enabled down to it, the user's processes in a leaf below it.
user=arbvm
useradd -m -s /bin/bash "$user" 2>/dev/null || true
uid=$(id -u "$user")
chmod 0666 /dev/fuse
cg=/sys/fs/cgroup
ctl="+memory +pids +cpu"
echo "$ctl" >$cg/cgroup.subtree_control
mkdir -p $cg/user.slice/user-$uid.slice/user@$uid.service/app.slice/smoke.scope
echo "$ctl" >$cg/user.slice/cgroup.subtree_control
echo "$ctl" >$cg/user.slice/user-$uid.slice/cgroup.subtree_control
echo "$ctl" >$cg/user.slice/user-$uid.slice/user@$uid.service/cgroup.subtree_control
chown -R "$user" $cg/user.slice/user-$uid.slice/user@$uid.service
# A login shell's session scope, as systemd makes it: root's, not delegated.
mkdir -p $cg/user.slice/user-$uid.slice/session-1.scope
# Root's own processes stay in the root cgroup, as on a host without systemd.

status=PASS
echo "ARB-VM: smoke as root"
if ! (cd /vmtmp && HOME=/root TMPDIR=/vmtmp bash "$src/tests/vm/smoke.sh" "$build" "$src" root); then
	status=FAIL
fi
echo "ARB-VM: smoke as $user"
mkdir -p /vmtmp/$user && chown "$user" /vmtmp/$user
if ! bash -c "echo \$\$ >$cg/user.slice/user-$uid.slice/user@$uid.service/app.slice/smoke.scope/cgroup.procs &&
	cd /vmtmp/$user && exec runuser -u $user -- env HOME=/home/$user TMPDIR=/vmtmp/$user \
	bash '$src/tests/vm/smoke.sh' '$build' '$src' user"; then
	status=FAIL
fi

# From a login session's scope (root's, not delegated) the limits are refused, in one line
# that says what is missing, and nothing runs; without limits the box works there.
echo "ARB-VM: refusal from a session scope as $user"
if ! bash -c "echo \$\$ >$cg/user.slice/user-$uid.slice/session-1.scope/cgroup.procs &&
	cd /vmtmp/$user && exec runuser -u $user -- env HOME=/home/$user TMPDIR=/vmtmp/$user \
	bash '$src/tests/vm/refusal.sh' '$build'"; then
	status=FAIL
fi
# A real systemd user manager (systemd --user, started as logind would, in user@UID.service
# with its runtime directory), and the user's shell in a cgroup whose parent it may not write:
# the limits go into a scope the manager delegates (scope.sh). On a systemd host the manager
# asks the system manager to move a process from a root-owned cgroup; this guest has no system
# manager, so the shell's cgroup is a root-owned one below user@UID.service, which the user
# manager may move processes out of itself.
echo "ARB-VM: a systemd user manager for $user ($(cut -d' ' -f1 /proc/uptime) s after boot)"
svc=$cg/user.slice/user-$uid.slice/user@$uid.service
mkdir -p /run/user/$uid /run/systemd/system $svc/init.scope $svc/login.slice/term.scope
chown "$user" /run/user/$uid $svc/init.scope $svc/init.scope/* && chmod 0700 /run/user/$uid
bash -c "echo \$\$ >$svc/init.scope/cgroup.procs && exec runuser -u $user -- env XDG_RUNTIME_DIR=/run/user/$uid \
	/lib/systemd/systemd --user" >/vmtmp/user-manager.log 2>&1 &
for _ in $(seq 150); do
	[ -S /run/user/$uid/systemd/private ] && break
	sleep 0.2
done
if ! bash -c "echo \$\$ >$svc/login.slice/term.scope/cgroup.procs &&
	cd /vmtmp/$user && exec runuser -u $user -- env HOME=/home/$user TMPDIR=/vmtmp/$user \
	XDG_RUNTIME_DIR=/run/user/$uid bash '$src/tests/vm/scope.sh' '$build' '$svc/app.slice'"; then
	tail -20 /vmtmp/user-manager.log
	status=FAIL
fi
if ! bash -c "echo \$\$ >$cg/user.slice/user-$uid.slice/session-1.scope/cgroup.procs &&
	cd /vmtmp/$user && exec runuser -u $user -- env HOME=/home/$user TMPDIR=/vmtmp/$user \
	XDG_RUNTIME_DIR=/run/user/$uid bash '$src/tests/vm/scope.sh' '$build' '$svc/app.slice' stuck"; then
	status=FAIL
fi
trap - ERR
result "$status"
