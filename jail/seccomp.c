/*
 * jail/seccomp.c: the box's seccomp filter: one rule table, built into BPF with libseccomp
 * when arborinth is built (seccomp_build.c, run by jail_seccomp_gen; a box start no longer
 * spends ~0.5 ms compiling it) and handed to bwrap from the copy compiled in. Default allow;
 * the table denies what lets a workload escape or reach the host: terminal injection,
 * io_uring, ptrace, BPF, keyrings, module loading, the mount API and new namespaces. Covers
 * the native ABI and, on x86-64, the 32-bit (x86) and x32 compat ABIs; a call through any
 * other ABI kills the process.
 */
#include "jail/jail_internal.h"

#include <errno.h>
#include <linux/sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define ANY -1, 0, 0, NULL
/*
 * ioctl request numbers and clone flags are read by the kernel as 32-bit values while
 * libseccomp compares 64 bits: mask to the low 32 bits so that TIOCSTI with high bits set
 * (CVE-2019-10063) still matches.
 */
#define IOCTL(req)   1, 0xffffffffu, req, #req
#define NSFLAG(flag) 0, flag, flag, #flag

static const struct jail_seccomp_rule rules[] = {
    {"ioctl", EPERM, IOCTL(TIOCSTI), "injects input into the terminal"},
    {"ioctl", EPERM, IOCTL(TIOCLINUX), "injects console input (selection paste)"},
    {"io_uring_setup", ENOSYS, ANY, "io_uring acts without the syscalls this filter sees"},
    {"io_uring_enter", ENOSYS, ANY, "io_uring"},
    {"io_uring_register", ENOSYS, ANY, "io_uring"},
    {"ptrace", EPERM, ANY, "reads and controls other processes"},
    {"process_vm_readv", EPERM, ANY, "reads other processes' memory"},
    {"process_vm_writev", EPERM, ANY, "writes other processes' memory"},
    {"bpf", EPERM, ANY, "loads BPF programs"},
    {"perf_event_open", EPERM, ANY, "kernel profiling, side channels"},
    {"userfaultfd", EPERM, ANY, "stalls the kernel for exploit races"},
    {"keyctl", EPERM, ANY, "kernel keyrings hold credentials"},
    {"add_key", EPERM, ANY, "kernel keyrings"},
    {"request_key", EPERM, ANY, "kernel keyrings"},
    {"kexec_load", EPERM, ANY, "loads a new kernel"},
    {"kexec_file_load", EPERM, ANY, "loads a new kernel"},
    {"init_module", EPERM, ANY, "loads kernel modules"},
    {"finit_module", EPERM, ANY, "loads kernel modules"},
    {"delete_module", EPERM, ANY, "unloads kernel modules"},
    {"mount", EPERM, ANY, "mount API"},
    {"umount", EPERM, ANY, "mount API (x86 only)"},
    {"umount2", EPERM, ANY, "mount API"},
    {"pivot_root", EPERM, ANY, "mount API"},
    {"open_tree", EPERM, ANY, "mount API"},
    {"move_mount", EPERM, ANY, "mount API"},
    {"fsopen", EPERM, ANY, "mount API"},
    {"fsconfig", EPERM, ANY, "mount API"},
    {"fsmount", EPERM, ANY, "mount API"},
    {"fspick", EPERM, ANY, "mount API"},
    {"mount_setattr", EPERM, ANY, "mount API"},
    {"setns", EPERM, ANY, "joins other namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWUSER), "new namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWNS), "new namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWPID), "new namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWNET), "new namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWUTS), "new namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWIPC), "new namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWCGROUP), "new namespaces"},
    {"unshare", EPERM, NSFLAG(CLONE_NEWTIME), "new namespaces"},
    {"clone", EPERM, NSFLAG(CLONE_NEWUSER), "new namespaces"},
    {"clone", EPERM, NSFLAG(CLONE_NEWNS), "new namespaces"},
    {"clone", EPERM, NSFLAG(CLONE_NEWPID), "new namespaces"},
    {"clone", EPERM, NSFLAG(CLONE_NEWNET), "new namespaces"},
    {"clone", EPERM, NSFLAG(CLONE_NEWUTS), "new namespaces"},
    {"clone", EPERM, NSFLAG(CLONE_NEWIPC), "new namespaces"},
    {"clone", EPERM, NSFLAG(CLONE_NEWCGROUP), "new namespaces"},
    /* Its flags sit in memory a filter cannot read: ENOSYS makes libc fall back to clone. */
    {"clone3", ENOSYS, ANY, "flags unreadable by seccomp; libc falls back to clone"},
};

const struct jail_seccomp_rule *jail_seccomp_rules(size_t *n)
{
	*n = ARB_ARRAY_LEN(rules);
	return rules;
}

#if defined(__x86_64__)
static const char *const arch_names[] = {"x86_64", "x86", "x32", NULL};
#else
static const char *const arch_names[] = {"native", NULL};
#endif

const char *const *jail_seccomp_arches(void)
{
	return arch_names;
}

int jail_seccomp_export(int *fd)
{
	size_t len;
	const unsigned char *bpf = jail_seccomp_bpf(&len);
	int mfd = memfd_create("arborinth-seccomp", MFD_CLOEXEC);
	int rc = 0;

	*fd = -1;
	if (mfd < 0)
		return util_err(-errno, "seccomp: memfd_create: %s", strerror(errno));
	if (write(mfd, bpf, len) != (ssize_t)len)
		rc = util_err(errno ? -errno : -EIO, "seccomp: cannot write the filter: %s",
			      strerror(errno ? errno : EIO));
	else if (lseek(mfd, 0, SEEK_SET) < 0)
		rc = util_err(-errno, "seccomp: %s", strerror(errno));
	if (rc < 0) {
		close(mfd);
		return rc;
	}
	*fd = mfd;
	return 0;
}
