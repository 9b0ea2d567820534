/*
 * jail/budget.c: what a box may hold of the counts the kernel keeps per user, so that a box
 * cannot exhaust its user: processes (RLIMIT_NPROC) and inotify instances
 * (fs.inotify.max_user_instances). Every box gets a budget below the user's own limit,
 * leaving a quarter of it to the user (--pids N and --inotify N set it instead).
 *
 * Processes. Since Linux 5.14 the kernel counts a user's processes per user namespace and
 * uid, each level of nested namespaces adding to its parent's count, and checks a fork at
 * every level: against the forker's RLIMIT_NPROC in its own namespace and, above, against
 * the RLIMIT_NPROC each namespace's creator had when making it. The child that execs bwrap
 * sets RLIMIT_NPROC (soft and hard) to the budget before any namespace is made, so every
 * namespace of the box records it: a fork in the box fails once the user's count on the
 * host (all its processes, in boxes or not) reaches the budget, and the user's own shell,
 * checked against the user's limit, keeps the rest. The box cannot raise it (no
 * CAP_SYS_RESOURCE on the host), nor escape it by nesting namespaces (bwrap's
 * --disable-userns, and each level is checked). It does not bind root (the kernel exempts
 * uid 0): root's box gets a cgroup pids.max instead, where the pids controller is usable
 * (cgroup.c).
 *
 * Inotify. Instances are counted the same way, per user namespace and uid, each level
 * checked against its namespace's max_inotify_instances (/proc/sys/user/), which only a
 * process with CAP_SYS_RESOURCE in that namespace may set. The box gets a user namespace of
 * its own above bwrap's, with max_inotify_instances at the budget: the whole box then holds
 * at most the budget, and nothing in it has the capability to raise it. A user's child makes
 * it itself (its own ids mapped to themselves) before the overlays' namespace, which nests
 * below. Root's box keeps every id (a map only a process outside the namespace may write):
 * a helper process makes the namespace before the launch (jail_budget_prepare), root
 * writes its maps, the helper its limit, root keeps it by a descriptor and the helper exits;
 * the child joins it after the overlays (which need the host's namespace for their trusted
 * xattrs).
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* RLIMIT_NPROC's budget when the user has no limit. */
#define NPROC_UNLIMITED_BUDGET 1024

/* The number in a /proc file, or -1. */
static int64_t proc_number(const char *path)
{
	char *text = NULL, *end = NULL;
	size_t len;
	long long v = -1;

	if (util_read_file(path, &text, &len) == 0)
		v = strtoll(text, &end, 10);
	if (end == text || v < 0)
		v = -1;
	free(text);
	return v;
}

/* A limit less the quarter the user keeps (at least one for the box). */
static int64_t below(int64_t limit)
{
	int64_t keep = limit / 4 > 0 ? limit / 4 : 1;

	return limit - keep > 0 ? limit - keep : 1;
}

static int64_t min_known(int64_t a, int64_t b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/*
 * Root's map: every id our own namespace maps, to itself ("0 0 4294967295" on a host; the
 * ranges a container gives us in one). Falls back to root alone when the list is too long.
 */
static void identity_map(const char *self, char *out, size_t size)
{
	char *text = NULL, *save = NULL;
	size_t len = 0, used = 0;

	out[0] = '\0';
	if (util_read_file(self, &text, &len) == 0)
		for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			unsigned long long in, n;
			int w;

			if (sscanf(l, "%llu %*u %llu", &in, &n) != 2)
				continue;
			w = snprintf(out + used, size - used, "%llu %llu %llu\n", in, in, n);
			if (w < 0 || (size_t)w >= size - used) {
				used = 0;
				break;
			}
			used += (size_t)w;
		}
	free(text);
	if (used == 0)
		snprintf(out, size, "0 0 1");
}

int jail_budget_resolve(const struct jail_box *b, struct jail_budget *out)
{
	struct rlimit rl;
	int64_t kmax;

	*out = (struct jail_budget){.root = geteuid() == 0, .ns_fd = -1};
	if (getrlimit(RLIMIT_NPROC, &rl) < 0)
		return util_err(-errno, "cannot read RLIMIT_NPROC: %s", strerror(errno));
	/* What the kernel itself allows bounds what an unlimited user may take. */
	kmax = min_known(proc_number("/proc/sys/kernel/pid_max"),
			 proc_number("/proc/sys/kernel/threads-max"));
	out->user_nproc = rl.rlim_cur == RLIM_INFINITY ? -1 : min_known((int64_t)rl.rlim_cur, kmax);
	out->nproc = out->user_nproc < 0 ? NPROC_UNLIMITED_BUDGET : below(out->user_nproc);
	/* --pids N: the box's own processes (box-init's hook); more for all when above. */
	if (b->limits.pids && !b->pids_default) {
		out->box_nproc = b->limits.pids;
		if (out->box_nproc > out->nproc)
			out->nproc = out->box_nproc;
	}
	/* Above the hard limit setrlimit() fails without CAP_SYS_RESOURCE: the hard limit it is. */
	if (rl.rlim_max != RLIM_INFINITY && out->nproc > (int64_t)rl.rlim_max)
		out->nproc = (int64_t)rl.rlim_max;
	/* Both the host's per-user limit and our own namespace's (when we run in one). */
	out->user_inotify = min_known(proc_number("/proc/sys/fs/inotify/max_user_instances"),
				      proc_number("/proc/sys/user/max_inotify_instances"));
	out->inotify = out->user_inotify > 0 ? below(out->user_inotify) : 0;
	if (b->limits.inotify) {
		out->inotify = b->limits.inotify;
		out->inotify_given = true;
	}
	if (out->root) {
		identity_map("/proc/self/uid_map", out->uid_map, sizeof(out->uid_map));
		identity_map("/proc/self/gid_map", out->gid_map, sizeof(out->gid_map));
	} else {
		snprintf(out->uid_map, sizeof(out->uid_map), "%u %u 1", (unsigned)geteuid(),
			 (unsigned)geteuid());
		snprintf(out->gid_map, sizeof(out->gid_map), "%u %u 1", (unsigned)getegid(),
			 (unsigned)getegid());
	}
	snprintf(out->inotify_text, sizeof(out->inotify_text), "%lld", (long long)out->inotify);
	return 0;
}

static void die(const char *what)
{
	fprintf(stderr, "arborinth: the box's budget: %s: %s\n", what, strerror(errno));
	_exit(JAIL_EXIT_SETUP);
}

static void write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

/* The namespace's limit, from inside it (CAP_SYS_RESOURCE there). */
static void set_inotify(const struct jail_budget *bud)
{
	write_proc("/proc/sys/user/max_inotify_instances", bud->inotify_text);
}

/*
 * The helper: its own user namespace, then the limit once root wrote the maps; it exits as
 * soon as root holds the namespace by a descriptor (a copy of our memory, the environment
 * with its keys included, should not outlive that).
 */
static void helper_main(const struct jail_budget *bud, int up, int down)
{
	static const int quiet[] = {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGUSR1, SIGUSR2};
	char byte = 'u';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (size_t i = 0; i < ARB_ARRAY_LEN(quiet); i++)
		signal(quiet[i], SIG_IGN);
	if (unshare(CLONE_NEWUSER) < 0)
		die("cannot make a user namespace");
	if (write(up, &byte, 1) != 1 || read(down, &byte, 1) != 1)
		_exit(JAIL_EXIT_SETUP);
	set_inotify(bud);
	byte = 'i';
	if (write(up, &byte, 1) != 1)
		_exit(JAIL_EXIT_SETUP);
	while (read(down, &byte, 1) > 0) /* until root opened the namespace */
		;
	_exit(0);
}

struct helper_args {
	const struct jail_budget *bud;
	int fds[4]; /* up (read, write), down (read, write) */
};

/*
 * Everything but stdio and the helper's two pipe ends closed: it never execs, and a copy of
 * another thread's helper pipe (threads may each launch a box) would keep that helper from
 * ever seeing its end, and both waiting for each other.
 */
static void close_others(int a, int b)
{
	unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);

	if (lo > 3)
		syscall(SYS_close_range, 3U, lo - 1, 0U);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0U);
	syscall(SYS_close_range, hi + 1, ~0U, 0U);
}

static int helper_entry(void *arg)
{
	const struct helper_args *a = arg;

	close_others(a->fds[1], a->fds[2]);
	helper_main(a->bud, a->fds[1], a->fds[2]);
	return 0;
}

#define HELPER_STACK (64 * 1024)

/*
 * The helper shares our memory (as jail/run.c's spawn: no copy of our page tables, most of
 * what a fork would cost a box) and runs on a stack of its own, making only system calls
 * while we wait for its words. AddressSanitizer builds fork (it does not know that stack).
 */
static pid_t helper_start(struct helper_args *a, char **stack)
{
#ifdef ARB_ASAN
	pid_t pid = fork();

	*stack = NULL;
	if (pid == 0)
		_exit(helper_entry(a));
	return pid;
#else
	pid_t pid;
	int e;

	*stack = mmap(NULL, HELPER_STACK, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (*stack == MAP_FAILED) {
		*stack = NULL;
		return -1;
	}
	pid = clone(helper_entry, *stack + HELPER_STACK, CLONE_VM | SIGCHLD, a);
	e = errno;
	if (pid < 0) {
		munmap(*stack, HELPER_STACK);
		*stack = NULL;
	}
	errno = e;
	return pid;
#endif
}

static int write_map(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		rc = util_err(-errno, "the box's budget: cannot write %s: %s", path,
			      strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Root's side of the helper: the maps, the word to go on, the namespace. */
static int helper_talk(struct jail_budget *bud, pid_t pid, int up, int down)
{
	char byte = 0, path[64];
	int rc = 0, fd;

	if (read(up, &byte, 1) != 1 || byte != 'u')
		rc = util_err(-ECHILD, "the box's budget: its user namespace failed");
	rc = rc ?: write_map(pid, "uid_map", bud->uid_map);
	rc = rc ?: write_map(pid, "gid_map", bud->gid_map);
	if (rc == 0 && (write(down, "m", 1) != 1 || read(up, &byte, 1) != 1 || byte != 'i'))
		rc = util_err(-ECHILD, "the box's budget: cannot set its inotify limit");
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	fd = rc == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (rc == 0 && fd < 0)
		rc =
		    util_err(-errno, "the box's budget: cannot open %s: %s", path, strerror(errno));
	/* Above the child's fixed descriptors, which its dup2()s would overwrite. */
	if (fd >= 0 && (bud->ns_fd = fcntl(fd, F_DUPFD_CLOEXEC, 10)) < 0)
		rc = util_err(-errno, "the box's budget: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

int jail_budget_prepare(struct jail_budget *bud)
{
	int up[2] = {-1, -1}, down[2] = {-1, -1}, rc = 0;
	char *stack = NULL;
	pid_t pid = -1;

	bud->ns_fd = -1;
	if (!bud->root || bud->inotify <= 0)
		return 0;
	if (pipe2(up, O_CLOEXEC) < 0 || pipe2(down, O_CLOEXEC) < 0) {
		rc = util_err(-errno, "cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	pid = helper_start(&(struct helper_args){bud, {up[0], up[1], down[0], down[1]}}, &stack);
	if (pid < 0) {
		rc = util_err(-errno, "cannot start a process: %s", strerror(errno));
		goto out;
	}
	close(up[1]), up[1] = -1;
	close(down[0]), down[0] = -1;
	rc = helper_talk(bud, pid, up[0], down[1]);
out:
	for (int i = 0; i < 2; i++) {
		if (up[i] >= 0)
			close(up[i]);
		if (down[i] >= 0)
			close(down[i]);
	}
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (stack)
		munmap(stack, HELPER_STACK);
	if (rc < 0)
		jail_budget_release(bud);
	return rc;
}

void jail_budget_release(struct jail_budget *bud)
{
	if (bud->ns_fd >= 0)
		close(bud->ns_fd);
	bud->ns_fd = -1;
}

int jail_budget_keep_fd(const struct jail_budget *bud)
{
	if (bud->ns_fd < 0)
		return JAIL_FD_USERNS;
	if (dup2(bud->ns_fd, JAIL_FD_USERNS) < 0)
		die("cannot keep the box's user namespace");
	return JAIL_FD_USERNS + 1;
}

void jail_budget_enter(const struct jail_budget *bud, bool after_overlays)
{
	struct rlimit rl = {.rlim_cur = (rlim_t)bud->nproc, .rlim_max = (rlim_t)bud->nproc};

	if (!after_overlays && bud->nproc > 0 && setrlimit(RLIMIT_NPROC, &rl) < 0)
		die("cannot set RLIMIT_NPROC");
	if (bud->inotify <= 0 || after_overlays != bud->root)
		return;
	if (bud->root) {
		if (setns(JAIL_FD_USERNS, CLONE_NEWUSER) < 0)
			die("cannot join the box's user namespace");
		close(JAIL_FD_USERNS);
		return;
	}
	/* After RLIMIT_NPROC: the namespace records it as its creator's. */
	if (unshare(CLONE_NEWUSER) < 0)
		die("cannot make a user namespace");
	write_proc("/proc/self/setgroups", "deny");
	write_proc("/proc/self/uid_map", bud->uid_map);
	write_proc("/proc/self/gid_map", bud->gid_map);
	set_inotify(bud);
}

void jail_budget_explain(FILE *f, const struct jail_box *b)
{
	struct jail_budget bud;

	if (jail_budget_resolve(b, &bud) < 0)
		return;
	fprintf(f, "  budget     processes %lld of all the user's (RLIMIT_NPROC: ",
		(long long)bud.nproc);
	if (bud.box_nproc && bud.box_nproc == bud.nproc)
		fprintf(f, "--pids, above the default");
	else if (bud.user_nproc < 0)
		fprintf(f, "the user has no limit: %d", NPROC_UNLIMITED_BUDGET);
	else
		fprintf(f,
			"%lld, the user's limit or the kernel's pid_max if lower, less a quarter",
			(long long)bud.user_nproc);
	fprintf(f, "%s%s)", bud.root ? "; root is not bound by it" : "",
		jail_cgroups_pids(b) ? "; and pids.max of the box's cgroup" : "");
	if (bud.box_nproc)
		fprintf(f, ", %lld of the box's own (--pids: RLIMIT_NPROC from box-init)",
			(long long)bud.box_nproc);
	if (bud.inotify > 0 && bud.inotify_given)
		fprintf(f, ", inotify instances %lld (--inotify)", (long long)bud.inotify);
	else if (bud.inotify > 0)
		fprintf(f, ", inotify instances %lld (the user's limit %lld less a quarter)",
			(long long)bud.inotify, (long long)bud.user_inotify);
	fputc('\n', f);
}
