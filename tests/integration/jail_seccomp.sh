#!/usr/bin/env bash
# The seccomp filter, capabilities and namespaces, probed from inside a real box. Every probe
# also runs where it must succeed (on the host, as the test's user), so none passes because
# the probe itself is broken. EPERM/ENOSYS are the filter's answers: the kernel alone would
# say something else (ENOTTY, EIO, EFAULT, ...), so they show the filter is what refused.
. "$(dirname "$0")/jail_lib.sh"
jail_setup
P=/tmp/probe
H="$ARB_SRC/tests/integration/jail_helper.py"
root=false
[ "$(id -u)" = 0 ] && root=true

# probe_pair WANT_INSIDE WHAT ARGS...: the probe in the box says WANT_INSIDE; on the host, ok.
probe_pair() {
	local want=$1 what=$2
	shift 2
	expect_status 1 "box: $what" -- box -- $P "$@"
	expect_eq "$want" "$OUT" "box: $what"
	expect_status 0 "control (host): $what" -- "$PROBE" "$@"
	expect_eq "ok" "$OUT" "control (host): $what"
}

# --- terminal injection, on a real controlling pty -----------------------------------------
# pty_probe ARGS...: runs ARGV on a new pty; OUT: its output (echo of injected input included).
pty_probe() { OUT=$("$PY" "$H" pty 10 "" -- "$@" 2>&1) || true; }
compat=false
[ "$("$PROBE" compat32)" = ok ] && compat=true
for mode in plain high 32; do
	case $mode in
	plain) args=(tiocsti) ;;
	high) args=(tiocsti high) ;;
	32) $compat || continue; args=(tiocsti32) ;;
	esac
	pty_probe "$ARB" shell w -- $P "${args[@]}"
	expect_match "^EPERM" "$OUT" "box: TIOCSTI ($mode) on the controlling pty"
	expect_match "\[exit 1\]" "$OUT" "box: TIOCSTI ($mode) probe ran"
	pty_probe "$PROBE" "${args[@]}"
	expect_match "#ok" "$OUT" "control (host): TIOCSTI ($mode) injects '#'"
done
pty_probe "$ARB" shell w -- $P tioclinux
expect_match "^EPERM" "$OUT" "box: TIOCLINUX"
pty_probe "$PROBE" tioclinux
expect_match "^(ENOTTY|EINVAL)" "$OUT" "control (host): TIOCLINUX reaches the kernel (no console here)"
# x32: where the kernel has it, the filter covers it; where it has not, it is ENOSYS anyway.
expect_status 1 "box: TIOCSTI (x32)" -- box -- $P tiocsti-x32
expect_match "^(EPERM|ENOSYS)$" "$OUT" "box: TIOCSTI through x32"
# A terminal still works for everything else in the box.
pty_probe "$ARB" shell w -- sh -c 'stty size >/dev/null && tty -s && echo tty-ok'
expect_match "tty-ok" "$OUT" "box: the pty is a working terminal"

# --- io_uring, ptrace, process_vm_*, keyrings, userfaultfd, bpf ----------------------------
probe_pair ENOSYS "io_uring_setup" io_uring
$compat && probe_pair ENOSYS "io_uring_setup (32-bit ABI)" io_uring 32
sleep 300 &
victim=$!
probe_pair EPERM "ptrace a host pid" ptrace "$victim"
$compat && probe_pair EPERM "ptrace a host pid (32-bit ABI)" ptrace "$victim" 32
probe_pair EPERM "process_vm_readv a host pid" vmread "$victim"
expect_status 1 "box: ptrace pid 1" -- box -- $P ptrace 1
expect_eq "EPERM" "$OUT" "box: ptrace pid 1 (box-init)"
expect_status 1 "box: process_vm_readv pid 1" -- box -- $P vmread 1
expect_eq "EPERM" "$OUT" "box: process_vm_readv pid 1"
kill "$victim"
probe_pair EPERM "keyctl" keyctl
probe_pair EPERM "userfaultfd" userfaultfd
$root && probe_pair EPERM "bpf" bpf
$root && probe_pair EPERM "setns" setns

# --- mount, umount, new namespaces ---------------------------------------------------------
mkdir -p "$T/mnt"
if $root; then
	probe_pair EPERM "mount" mount "$T/mnt"
	expect_status 0 "control (host): umount" -- "$PROBE" umount "$T/mnt"
	expect_status 1 "box: umount /tmp" -- box -- $P umount /tmp
	expect_eq "EPERM" "$OUT" "box: umount"
	$compat && probe_pair EPERM "mount (32-bit ABI)" mount "$T/mnt" 32
	$compat && umount "$T/mnt" 2>/dev/null || true
fi
probe_pair EPERM "unshare(CLONE_NEWUSER)" unshare-user
$compat && probe_pair EPERM "unshare(CLONE_NEWUSER) (32-bit ABI)" unshare-user 32
probe_pair EPERM "clone(CLONE_NEWUSER)" clone-newuser
expect_status 1 "box: unshare -U" -- box -- unshare -U true
expect_status 0 "control (host): unshare -U" -- unshare -U true
expect_status 32 "box: mount(8) fails" -- box -- mount -t tmpfs none /tmp
# Threads still start (clone3 is ENOSYS, libc falls back to clone without namespace flags).
expect_status 0 "box: threads" -- box -- python3 -c 'import threading; t = threading.Thread(target=print, args=("thread-ok",)); t.start(); t.join()'
expect_eq "thread-ok" "$OUT" "box: threads work"

# --- capabilities and no_new_privs ---------------------------------------------------------
expect_status 0 "box: status" -- box -- grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
expect_eq "$(printf 'CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2')" \
	"$OUT" "box: no capabilities at all, no_new_privs, a seccomp filter"
expect_status 0 "box: box-init too" -- box -- grep -E '^(CapEff|NoNewPrivs):' /proc/1/status
expect_eq "$(printf 'CapEff:\t0000000000000000\nNoNewPrivs:\t1')" "$OUT" "box: pid 1 has none either"
if $root; then
	expect_match "^CapEff:\s+0*[1-9a-f]" "$(grep ^CapEff: /proc/self/status)" "control (host): root has capabilities"
	expect_match "^NoNewPrivs:\s+0$" "$(grep ^NoNewPrivs: /proc/self/status)" "control (host): no_new_privs off"
	expect_status 0 "box: uid" -- box -- id -u
	expect_eq "0" "$OUT" "box: root stays uid 0, powerless"
fi
expect_status 0 "box: setuid binaries gain nothing" -- box -- sh -c 'su -c true root 2>/dev/null; grep ^CapEff: /proc/self/status'
expect_eq "$(printf 'CapEff:\t0000000000000000')" "$OUT" "box: still no capabilities"

finish
