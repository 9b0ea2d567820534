/*
 * jail/run.c: launching a finished box. bwrap gets the seccomp BPF, an info pipe (box-init's
 * host pid, for signal forwarding), a ready pipe (box-init's word that the command started,
 * and later that it ended and nothing of the box runs any more) and a go socket (the host's
 * word that it may start) on fixed descriptors, and nothing else of ours; it dies with us. Overlays
 * are mounted in the child's own mount namespace just before it execs bwrap (overlay.c), around
 * them the child takes the box's budget of its user's processes and inotify instances
 * (budget.c).
 *
 * The caller's gate (the session's audit record and start checkpoint) runs while bwrap
 * builds the box, on the other core when there is one: box-init starts the command only once
 * the gate said go, so nothing of the command runs before them.
 *
 * Threads of one process may each run a box at once (the library's callers): each run has a
 * slot of its own that the signal handlers read (forwarding goes to every box still running)
 * and a POSIX timer of its own for --timeout, aimed at the thread that waits for the box.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/*
 * The boxes this process runs (several threads may each run one): all the signal handlers can
 * reach. A thread claims a slot (used), fills it, and clears it before giving it back; the
 * handlers read only slots in use. gen tells a slot's runs apart for a late timer signal.
 */
#define RUNS_MAX 64
struct run {
	int used; /* __atomic */
	volatile sig_atomic_t bwrap_pid, init_pid, timed_out, box_over, gen;
	timer_t timer; /* --timeout: a timer of this run's own, aimed at its thread */
	bool has_timer;
	int info_fd; /* bwrap's --info-fd until jail_box_init_pid() read it, else -1 */
};
static struct run runs[RUNS_MAX];
/* The calling thread's run, for the gate and done (jail_box_init_pid). */
static __thread struct run *current;

/* The handlers are ours while any run is: installed by the first, restored by the last. */
static pthread_mutex_t handlers_lock = PTHREAD_MUTEX_INITIALIZER;
static int handlers_users;

/* How long the command gets after SIGTERM before the whole box is killed. */
#define TIMEOUT_GRACE_MS 2000

static const int forwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT};
static struct sigaction handlers_old[ARB_ARRAY_LEN(forwarded)], alarm_old;

static bool in_use(const struct run *r)
{
	return __atomic_load_n(&r->used, __ATOMIC_ACQUIRE) != 0;
}

static void forward(int sig, siginfo_t *si, void *uctx)
{
	size_t n = 0, over = 0;

	(void)uctx;
	for (size_t i = 0; i < RUNS_MAX; i++) {
		if (in_use(&runs[i])) {
			n++;
			over += runs[i].box_over != 0;
		}
	}
	/*
	 * Every command is over: nothing is left to forward to, and what runs now (the end
	 * checkpoints) must not outlive the user's wish to stop it. As if no handler were here.
	 */
	if (n && over == n &&
	    (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	/* The terminal sends SIGINT/SIGQUIT to the box's processes itself. */
	if ((sig == SIGINT || sig == SIGQUIT) && si->si_code != SI_USER && si->si_code != SI_QUEUE)
		return;
	for (size_t i = 0; i < RUNS_MAX; i++) {
		struct run *r = &runs[i];

		if (!in_use(r) || r->box_over)
			continue;
		if (r->init_pid > 0)
			kill(r->init_pid, sig);
		else if (r->bwrap_pid > 0)
			kill(r->bwrap_pid, SIGKILL); /* nothing runs yet: stop the setup */
	}
}

static void arm(struct run *r, int64_t ms)
{
	struct itimerspec it = {.it_value = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000}};

	if (r->has_timer)
		timer_settime(r->timer, 0, &it, NULL);
}

/* --timeout: SIGTERM to the command through box-init, then SIGKILL to the box. */
static void on_alarm(int sig, siginfo_t *si, void *uctx)
{
	struct run *r;
	int v;

	(void)sig;
	(void)uctx;
	if (si->si_code != SI_TIMER)
		return; /* not one of our timers */
	v = si->si_value.sival_int;
	if (v < 0)
		return;
	r = &runs[v % RUNS_MAX];
	if (!in_use(r) || r->gen != v / RUNS_MAX || r->box_over || r->bwrap_pid <= 0)
		return; /* a run that is over */
	if (!r->timed_out && r->init_pid > 0) {
		r->timed_out = 1;
		kill(r->init_pid, SIGTERM);
		arm(r, TIMEOUT_GRACE_MS);
		return;
	}
	r->timed_out = 2;
	/* box-init is pid 1 of the box's pid namespace: all of the box dies with it. */
	if (r->init_pid > 0)
		kill(r->init_pid, SIGKILL);
	if (r->bwrap_pid > 0)
		kill(r->bwrap_pid, SIGKILL);
}

/* The disk guard's way to stop the box (diskguard.c), as --timeout's kill. */
static void stop_box(void *ctx)
{
	struct run *r = ctx;

	if (r->init_pid > 0)
		kill(r->init_pid, SIGKILL);
	if (r->bwrap_pid > 0)
		kill(r->bwrap_pid, SIGKILL);
}

static void handlers_take(void)
{
	struct sigaction sa = {.sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART};
	/* No SA_RESTART: the waits see it. */
	struct sigaction alarm_sa = {.sa_sigaction = on_alarm, .sa_flags = SA_SIGINFO};

	pthread_mutex_lock(&handlers_lock);
	if (handlers_users++ == 0) {
		sigemptyset(&sa.sa_mask);
		for (size_t i = 0; i < ARB_ARRAY_LEN(forwarded); i++)
			sigaddset(&sa.sa_mask, forwarded[i]);
		sigemptyset(&alarm_sa.sa_mask);
		for (size_t i = 0; i < ARB_ARRAY_LEN(forwarded); i++)
			sigaction(forwarded[i], &sa, &handlers_old[i]);
		sigaction(SIGALRM, &alarm_sa, &alarm_old);
	}
	pthread_mutex_unlock(&handlers_lock);
}

static void handlers_give(void)
{
	pthread_mutex_lock(&handlers_lock);
	if (--handlers_users == 0) {
		sigaction(SIGALRM, &alarm_old, NULL);
		for (size_t i = 0; i < ARB_ARRAY_LEN(forwarded); i++)
			sigaction(forwarded[i], &handlers_old[i], NULL);
	}
	pthread_mutex_unlock(&handlers_lock);
}

/* A free slot for this thread's run, with its timer when it has a timeout; NULL: none. */
static struct run *run_claim(int64_t timeout_ms)
{
	for (size_t i = 0; i < RUNS_MAX; i++) {
		struct run *r = &runs[i];
		int free_slot = 0;

		if (!__atomic_compare_exchange_n(&r->used, &free_slot, 1, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		r->gen = (r->gen + 1) % (INT32_MAX / RUNS_MAX);
		r->info_fd = -1;
		r->has_timer = false;
		if (timeout_ms) {
			struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID,
					      .sigev_signo = SIGALRM,
					      .sigev_value.sival_int = r->gen * RUNS_MAX + (int)i};

			ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
			if (timer_create(CLOCK_MONOTONIC, &ev, &r->timer) < 0) {
				int e = errno;

				__atomic_store_n(&r->used, 0, __ATOMIC_RELEASE);
				util_err(-e, "cannot create the box's timer: %s", strerror(e));
				return NULL;
			}
			r->has_timer = true;
		}
		current = r;
		return r;
	}
	util_err(-EAGAIN, "jail: more than %d boxes at once in one process", RUNS_MAX);
	return NULL;
}

static void run_release(struct run *r)
{
	if (r->has_timer)
		timer_delete(r->timer);
	r->has_timer = false;
	r->bwrap_pid = r->init_pid = r->timed_out = r->box_over = 0;
	r->info_fd = -1;
	current = NULL;
	__atomic_store_n(&r->used, 0, __ATOMIC_RELEASE);
}

static int ensure_dirs(const struct jail_box *b)
{
	const char *dirs[] = {b->tmp, b->cache_src, b->home_src};

	for (size_t i = 0; i < ARB_ARRAY_LEN(dirs); i++) {
		int rc = util_mkdir_p(dirs[i], 0755);

		if (rc < 0)
			return util_err(rc, "cannot create %s: %s", dirs[i], strerror(-rc));
	}
	return 0;
}

/* In the child: fds to their fixed numbers, everything else closed, then exec bwrap. */
static void child_exec(const struct jail_box *b, const struct jail_cgroups *cg,
		       const struct jail_overlays *ovl, const struct jail_budget *bud, pid_t parent,
		       int64_t fsize, int seccomp_fd, int info_fd, int ready_fd, int go_fd)
{
	int want[] = {JAIL_FD_SECCOMP, JAIL_FD_INFO, JAIL_FD_READY, JAIL_FD_GO};
	int have[] = {seccomp_fd, info_fd, ready_fd, go_fd};
	struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};
	sigset_t none;
	int keep;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(JAIL_EXIT_SETUP);
	if (jail_stdio_apply(b->stdio) < 0)
		_exit(JAIL_EXIT_SETUP);
	/* Above the fixed numbers first, so that no dup2() overwrites a source. */
	for (size_t i = 0; i < ARB_ARRAY_LEN(have); i++) {
		have[i] = fcntl(have[i], F_DUPFD, 10);
		if (have[i] < 0)
			_exit(JAIL_EXIT_SETUP);
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(have); i++)
		if (dup2(have[i], want[i]) < 0)
			_exit(JAIL_EXIT_SETUP);
	keep = jail_budget_keep_fd(bud);
	if (syscall(SYS_close_range, keep, ~0U, 0) < 0)
		for (int fd = keep; fd < 1024; fd++)
			close(fd);
	/*
	 * bwrap itself ignores what we forward to box-init: SIGINT from the terminal or SIGHUP
	 * sent to our process group must not kill it (and with it, abruptly, the box).
	 */
	for (size_t i = 0; i < ARB_ARRAY_LEN(forwarded); i++)
		sigaction(forwarded[i], &ign, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (fsize > 0) /* the disk guard's cap on one file (diskguard.c) */
		setrlimit(RLIMIT_FSIZE, &(struct rlimit){(rlim_t)fsize, (rlim_t)fsize});
	jail_cgroups_enter(cg);
	jail_budget_enter(bud, false);
	jail_overlays_enter(ovl);
	jail_budget_enter(bud, true);
	execve(b->argv.v[0], b->argv.v, b->env.v);
	fprintf(stderr, "arborinth: cannot run %s: %s\n", b->argv.v[0], strerror(errno));
	_exit(JAIL_EXIT_SETUP);
}

struct child_args {
	const struct jail_box *b;
	const struct jail_cgroups *cg;
	const struct jail_overlays *ovl;
	const struct jail_budget *bud;
	pid_t parent;
	int64_t fsize;
	int fds[4]; /* seccomp, info, ready, go */
};

static int child_main(void *arg)
{
	const struct child_args *a = arg;

	child_exec(a->b, a->cg, a->ovl, a->bud, a->parent, a->fsize, a->fds[0], a->fds[1],
		   a->fds[2], a->fds[3]);
	return JAIL_EXIT_SETUP; /* not reached */
}

/*
 * The child that execs bwrap. It shares our memory until then and we wait for its exec
 * (CLONE_VM | CLONE_VFORK, as posix_spawn does): no copy of our page tables, and none of the
 * copy-on-write faults a fork costs us afterwards while the gate runs (about 0.3 ms a box).
 * It runs on a stack of its own, allocates nothing, and its fds and signal dispositions are
 * its own. AddressSanitizer builds fork (it does not know that stack). -1 with errno.
 */
static pid_t spawn(struct child_args *a)
{
#ifdef ARB_ASAN
	pid_t pid = fork();

	if (pid == 0)
		_exit(child_main(a));
	return pid;
#else
	const size_t size = 256 * 1024;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pid_t pid;
	int e;

	if (stack == MAP_FAILED)
		return -1;
	pid = clone(child_main, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
	e = errno;
	munmap(stack, size);
	errno = e;
	return pid;
#endif
}

/* Reads bwrap's --info-fd JSON until EOF; returns the sandbox's pid 1 on the host, or 0. */
static pid_t read_child_pid(int fd)
{
	char buf[1024];
	size_t len = 0;
	const char *p;
	ssize_t n;

	for (;;) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	p = strstr(buf, "\"child-pid\"");
	if (!p || !(p = strchr(p, ':')))
		return 0;
	return (pid_t)strtol(p + 1, NULL, 10);
}

/*
 * box-init's words on the ready pipe (non-blocking): '1' once the command started, then 'd'
 * and its exit status once it exited and nothing else of the box runs. Waits until the 'd'
 * (returns 2, *status set), or the end of the pipe (1: the command started, 0: it never
 * did). A timeout (SIGALRM) does not stop the wait: it stops the box, which ends the pipe.
 */
static int box_words(int fd, int *status)
{
	char buf[3];
	size_t len = 0;

	while (len < sizeof(buf)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (len == 0 || buf[0] != '1')
		return 0;
	if (len < sizeof(buf) || buf[1] != 'd')
		return 1;
	*status = (unsigned char)buf[2];
	return 2;
}

/* The gate's verdict to box-init: one byte for go; closing without it stops the box. */
static int open_gate(int go_fd, int (*gate)(void *ctx), void *ctx)
{
	int rc = gate ? gate(ctx) : 0;

	/* No SIGPIPE when the box is gone already: the wait below tells what happened. */
	if (rc == 0)
		while (send(go_fd, "1", 1, MSG_NOSIGNAL) < 0 && errno == EINTR)
			;
	close(go_fd);
	return rc;
}

pid_t jail_box_init_pid(void)
{
	struct run *r = current;

	if (!r)
		return 0;
	if (r->info_fd >= 0) {
		r->init_pid = read_child_pid(r->info_fd);
		r->info_fd = -1;
	}
	return r->init_pid;
}

int jail_box_run(const struct jail_box *b, int (*gate)(void *ctx),
		 void (*done)(void *ctx, int status), void *ctx, int *exit_status,
		 struct jail_run_stats *stats)
{
	sigset_t block, mask;
	int seccomp_fd = -1, info[2] = {-1, -1}, ready[2] = {-1, -1}, go[2] = {-1, -1};
	struct jail_overlays ovl = {0};
	struct jail_cgroups cg = {0};
	struct jail_budget bud = {.ns_fd = -1};
	struct jail_diskguard guard = {.running = false};
	struct run *r = NULL;
	pid_t parent = getpid(), pid;
	siginfo_t si;
	int64_t fsize;
	int rc, gate_rc, guard_rc, status = 0, said, done_status = 0;

	if (!b->finished)
		return util_err(-EINVAL, "jail: run needs a finished box");
	rc = ensure_dirs(b);
	if (rc == 0)
		rc = jail_overlays_plan(b, &ovl);
	if (rc == 0)
		rc = jail_budget_resolve(b, &bud);
	if (rc == 0)
		rc = jail_budget_prepare(&bud);
	if (rc == 0)
		rc = jail_cgroups_create(b, &cg);
	if (rc == 0)
		rc = jail_seccomp_export(&seccomp_fd);
	if (rc < 0)
		goto out;
	fsize = jail_diskguard_fsize(b); /* after ensure_dirs() */
	if (pipe2(info, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0) {
		rc = util_err(-errno, "cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	fcntl(ready[0], F_SETFL, O_NONBLOCK);
	if (!(r = run_claim(b->timeout_ms))) {
		rc = -EAGAIN;
		goto out;
	}
	/* Blocked (in this thread) until bwrap_pid is set: no signal between fork and that. */
	sigemptyset(&block);
	for (size_t i = 0; i < ARB_ARRAY_LEN(forwarded); i++)
		sigaddset(&block, forwarded[i]);
	pthread_sigmask(SIG_BLOCK, &block, &mask);
	handlers_take();
	pid = spawn(&(struct child_args){
	    b, &cg, &ovl, &bud, parent, fsize, {seccomp_fd, info[1], ready[1], go[1]}});
	if (pid < 0) {
		rc = util_err(-errno, "cannot start bwrap: %s", strerror(errno));
		handlers_give();
		pthread_sigmask(SIG_SETMASK, &mask, NULL);
		goto out;
	}
	r->bwrap_pid = pid;
	guard_rc = jail_diskguard_start(&guard, b, stop_box, r);
	if (guard_rc < 0)
		stop_box(r); /* no box without its guard */
	if (b->timeout_ms)
		arm(r, b->timeout_ms);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	close(info[1]);
	close(ready[1]);
	close(go[1]);
	info[1] = ready[1] = go[1] = -1;
	r->info_fd = info[0]; /* the gate may ask for init_pid (jail_box_init_pid) */
	gate_rc = open_gate(go[0], gate, ctx);
	go[0] = -1;
	(void)jail_box_init_pid();
	said = box_words(ready[0], &done_status);
	jail_diskguard_stop(&guard); /* the box is down, or nothing of it writes any more */
	if (said == 2 && done && !guard.tripped) {
		r->box_over = 1; /* the command is over: no timeout may stop the box now */
		arm(r, 0);
		if (stats) /* nothing of the box runs: the counters are final */
			jail_cgroups_stats(&cg, stats);
		done(ctx, done_status);
	}
	/* Reaped only once no handler can signal it any more (its pid is then free again). */
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	arm(r, 0);
	r->bwrap_pid = r->init_pid = 0; /* nothing of the box is left to signal */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	handlers_give();
	/* A gate that found no box (-ECHILD: bwrap named no pid 1) leaves the word to bwrap's. */
	if (gate_rc < 0 && (gate_rc != -ECHILD || said)) {
		rc = gate_rc; /* its message stands; box-init ran nothing */
		*exit_status = JAIL_EXIT_SETUP;
	} else if (guard_rc < 0) {
		rc = guard_rc;
		*exit_status = JAIL_EXIT_SETUP;
	} else if (guard.tripped) {
		*exit_status = JAIL_EXIT_DISK;
		rc = jail_diskguard_error(&guard);
	} else if (r->timed_out) {
		*exit_status = JAIL_EXIT_TIMEOUT;
		rc = util_err(-ETIME,
			      "the box ran out of time after %lld.%03lld s and was stopped%s",
			      (long long)(b->timeout_ms / 1000), (long long)(b->timeout_ms % 1000),
			      r->timed_out == 2 ? " (killed)" : "");
	} else if (!said) /* box-init never said the command started */
		rc = util_err(-ECHILD, "the box could not be started (bwrap %s %d)",
			      WIFSIGNALED(status) ? "killed by signal" : "exited with status",
			      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	else
		*exit_status = util_wait_status_to_exit(status);
out:
	jail_diskguard_stop(&guard);
	if (r)
		run_release(r);
	if (stats)
		jail_cgroups_stats(&cg, stats);
	jail_cgroups_clear(&cg);
	jail_overlays_clear(&ovl);
	jail_budget_release(&bud);
	if (seccomp_fd >= 0)
		close(seccomp_fd);
	for (int i = 0; i < 2; i++) {
		if (info[i] >= 0)
			close(info[i]);
		if (ready[i] >= 0)
			close(ready[i]);
		if (go[i] >= 0)
			close(go[i]);
	}
	return rc;
}
