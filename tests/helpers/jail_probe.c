/*
 * tests/helpers/jail_probe.c: one syscall per invocation, for the jail tests. Prints "ok" when
 * the call succeeded, else the errno name (EPERM, ENOSYS, ...), and exits 0 or 1. The tests
 * run each probe inside a box and, as a control, where it must succeed (outside, or granted).
 *
 *   jail_probe tiocsti [high]      ioctl(0, TIOCSTI) (high: request | 1 << 32)
 *   jail_probe tiocsti32           the same through the 32-bit ABI (int $0x80)
 *   jail_probe tiocsti-x32         the same through the x32 ABI
 *   jail_probe tioclinux           ioctl(0, TIOCLINUX, subcode 3: paste)
 *   jail_probe compat32            getpid through int $0x80 (is the 32-bit ABI there at all?)
 *   jail_probe io_uring [32]       io_uring_setup (32: through int $0x80)
 *   jail_probe ptrace PID [32]     PTRACE_ATTACH (then detach)
 *   jail_probe vmread PID          process_vm_readv of PID's first mapping
 *   jail_probe mount DIR [32]      mount a tmpfs on DIR
 *   jail_probe umount DIR          umount2(DIR)
 *   jail_probe unshare-user [32]   unshare(CLONE_NEWUSER)
 *   jail_probe clone-newuser       clone(CLONE_NEWUSER)
 *   jail_probe keyctl              keyctl(KEYCTL_GET_KEYRING_ID, session)
 *   jail_probe userfaultfd         userfaultfd(0)
 *   jail_probe bpf                 bpf(BPF_MAP_CREATE)
 *   jail_probe setns               setns(open(/proc/self/ns/net), 0)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int report(long rc)
{
	if (rc >= 0) {
		puts("ok");
		return 0;
	}
	puts(strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
	return 1;
}

/* i386 ABI from a 64-bit process: the kernel's compat table, audit arch x86. */
static long int80_5(long nr, long a, long b, long c, long d, long e)
{
#if defined(__x86_64__)
	long ret;

	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
			 : "memory", "r8", "r9", "r10", "r11");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
#else
	(void)nr, (void)a, (void)b, (void)c, (void)d, (void)e;
	errno = ENOSYS;
	return -1;
#endif
}

static long int80(long nr, long a, long b, long c)
{
	return int80_5(nr, a, b, c, 0, 0);
}

/* A buffer below 4 GiB, so a 32-bit syscall can point at it. */
static char *low_buf(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

static long first_mapping(pid_t pid)
{
	char path[64];
	unsigned long start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%lx", &start) != 1)
		start = 0;
	if (f)
		fclose(f);
	return (long)start;
}

static int do_ptrace(pid_t pid, bool compat)
{
	long rc = compat ? int80(26, PTRACE_ATTACH, pid, 0) : ptrace(PTRACE_ATTACH, pid, 0, 0);

	if (rc == 0) {
		waitpid(pid, NULL, __WALL);
		ptrace(PTRACE_DETACH, pid, 0, 0);
	}
	return report(rc);
}

static int do_vmread(pid_t pid)
{
	char buf[8];
	long addr = first_mapping(pid);
	struct iovec local = {buf, sizeof(buf)}, remote = {(void *)(addr ? addr : 0x10000), 8};

	return report(process_vm_readv(pid, &local, 1, &remote, 1, 0));
}

static int do_clone_newuser(void)
{
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return report(pid);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : "";
	bool compat = (argc > 2 && !strcmp(argv[argc - 1], "32"));
	char *low;

	if (!strcmp(what, "tiocsti")) {
		unsigned long req = TIOCSTI | (!strcmp(arg, "high") ? 1UL << 32 : 0);
		char c = '#';

		return report(syscall(SYS_ioctl, 0, req, &c));
	}
	if (!strcmp(what, "tiocsti32")) {
		low = low_buf();
		low[0] = '#';
		return report(int80(54, 0, TIOCSTI, (long)low));
	}
	if (!strcmp(what, "tiocsti-x32")) {
		char c = '#';

		/* x32: its own ioctl number (514) with the x32 bit. */
		return report(syscall(0x40000000 | 514, 0, TIOCSTI, &c));
	}
	if (!strcmp(what, "tioclinux")) {
		char sub = 3;

		return report(ioctl(0, TIOCLINUX, &sub));
	}
	if (!strcmp(what, "compat32"))
		return report(int80(20, 0, 0, 0));
	if (!strcmp(what, "io_uring")) {
		struct io_uring_params p;
		long fd;

		memset(&p, 0, sizeof(p));
		if (!strcmp(arg, "32")) {
			low = low_buf();
			fd = int80(425, 1, (long)low, 0);
		} else {
			fd = syscall(SYS_io_uring_setup, 1, &p);
		}
		return report(fd);
	}
	if (!strcmp(what, "ptrace") && argc > 2)
		return do_ptrace(atoi(arg), compat);
	if (!strcmp(what, "vmread") && argc > 2)
		return do_vmread(atoi(arg));
	if (!strcmp(what, "mount") && argc > 2) {
		if (compat) {
			low = low_buf();
			strcpy(low, "none");
			strcpy(low + 16, arg);
			strcpy(low + 1024, "tmpfs");
			return report(int80(21, (long)low, (long)(low + 16), (long)(low + 1024)));
		}
		return report(mount("none", arg, "tmpfs", 0, NULL));
	}
	if (!strcmp(what, "umount") && argc > 2)
		return report(umount2(arg, 0));
	if (!strcmp(what, "unshare-user"))
		return report(compat ? int80(310, CLONE_NEWUSER, 0, 0) : unshare(CLONE_NEWUSER));
	if (!strcmp(what, "clone-newuser"))
		return do_clone_newuser();
	if (!strcmp(what, "keyctl"))
		return report(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
	if (!strcmp(what, "userfaultfd"))
		return report(syscall(SYS_userfaultfd, 0));
	if (!strcmp(what, "bpf")) {
		union bpf_attr attr;

		memset(&attr, 0, sizeof(attr));
		attr.map_type = BPF_MAP_TYPE_ARRAY;
		attr.key_size = 4;
		attr.value_size = 4;
		attr.max_entries = 1;
		return report(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
	}
	if (!strcmp(what, "setns")) {
		int fd = open("/proc/self/ns/net", O_RDONLY);

		return report(fd < 0 ? -1 : setns(fd, 0));
	}
	fprintf(stderr, "usage: see the comment at the top of jail_probe.c\n");
	return 2;
}
