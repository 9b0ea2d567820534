/*
 * jail/init.c: box-init, pid 1 inside the box (`arborinth __box-init`). It starts the relay
 * hooks, runs the command as its child, forwards signals to it, reaps every orphan, and
 * once the command exited kills and reaps whatever is left in the box (what the kernel would
 * do when pid 1 exits), stops the hooks, tells the host the box is done (so the host's end
 * checkpoint runs while the kernel takes the box's namespaces down) and exits with the
 * command's status.
 */
#include "jail/jail.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Handled by box-init; reset to default in the command. SIGCHLD drives the reaping. */
static const int handled[] = {SIGCHLD, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT, SIGPIPE};

static void noop(int sig)
{
	(void)sig;
}

struct started {
	const struct jail_init_hook *hook;
	void *state;
};

static const struct jail_init_hook *hook_find(const struct jail_init_hook *t, const char *name)
{
	for (; t && t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

static void hooks_stop(struct started *s, size_t n)
{
	while (n-- > 0)
		if (s[n].hook->stop)
			s[n].hook->stop(s[n].state);
}

static int hooks_start(const struct jail_init_opts *o, struct started **out, size_t *n)
{
	size_t count = 0;
	struct started *s;

	*out = NULL;
	*n = 0;
	while (o->hook_names && o->hook_names[count])
		count++;
	s = calloc(count + 1, sizeof(*s));
	if (!s)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < count; i++) {
		const struct jail_init_hook *h = hook_find(o->hooks, o->hook_names[i]);
		int rc;

		if (!h) {
			rc = util_err(-EINVAL, "box-init: unknown hook '%s'", o->hook_names[i]);
		} else {
			s[*n].hook = h;
			rc = h->start(o->hook_args[i], &s[*n].state);
		}
		if (rc < 0) {
			hooks_stop(s, *n);
			free(s);
			*n = 0;
			return rc;
		}
		(*n)++;
	}
	*out = s;
	return 0;
}

/*
 * The host's word that the command may start: one byte on fd (then closed). Anything else
 * (end of file: the host failed to record the session, or died) means never.
 */
static int wait_go(int fd)
{
	char byte;
	ssize_t n;

	do
		n = read(fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n != 1)
		return util_err(-ECANCELED, "box-init: the host did not start the command");
	return 0;
}

/* The command: signals as a fresh process has them, no descriptor of ours beyond stdio. */
static void command_exec(char *const argv[], const sigset_t *mask)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};

	for (size_t i = 0; i < ARB_ARRAY_LEN(handled); i++)
		sigaction(handled[i], &dfl, NULL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	execvp(argv[0], argv);
	fprintf(stderr, "arborinth: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* Waits for signals until the command exits; returns its wait status. */
static int supervise(pid_t child, const sigset_t *set)
{
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(set, &si), st;
		pid_t p;

		if (sig < 0)
			continue;
		if (sig == SIGCHLD) {
			while ((p = waitpid(-1, &st, WNOHANG)) > 0)
				if (p == child)
					return st;
			continue;
		}
		/* From the terminal, SIGINT/SIGQUIT reached the command already. */
		if ((sig == SIGINT || sig == SIGQUIT) && si.si_code != SI_USER &&
		    si.si_code != SI_QUEUE)
			continue;
		if (sig != SIGPIPE)
			kill(child, sig);
	}
}

/*
 * Every other process of the box, killed and reaped: nothing of the box runs once this
 * returns. Only as pid 1 of the box's pid namespace: anywhere else kill(-1) would reach every
 * process the user may signal.
 */
static void reap_rest(void)
{
	if (getpid() != 1)
		return;
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

int jail_init_run(const struct jail_init_opts *o, int *exit_status)
{
	struct sigaction sa = {.sa_handler = noop};
	struct started *hooks = NULL;
	sigset_t set, old;
	size_t nhooks = 0;
	pid_t child;
	int rc;

	/*
	 * Blocked before any hook starts a thread, so every thread inherits the mask and only
	 * sigwaitinfo() below receives them. Handlers (not SIG_IGN/SIG_DFL) so that the kernel
	 * delivers them to a pid 1 at all.
	 */
	sigemptyset(&set);
	for (size_t i = 0; i < ARB_ARRAY_LEN(handled); i++)
		sigaddset(&set, handled[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARB_ARRAY_LEN(handled); i++)
		sigaction(handled[i], &sa, NULL);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	/*
	 * Not dumpable: the box's processes (same user, no capabilities) cannot open
	 * /proc/1/fd/N, so the ready pipe, whose 'd' starts the host's end of the session, is
	 * box-init's alone. The command gets a dumpable process again when it execs.
	 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	rc = hooks_start(o, &hooks, &nhooks);
	if (rc < 0)
		return rc;
	if (o->go_fd >= 0 && (rc = wait_go(o->go_fd)) < 0) {
		hooks_stop(hooks, nhooks);
		free(hooks);
		return rc;
	}
	child = fork();
	if (child == 0)
		command_exec(o->argv, &old);
	if (child < 0) {
		rc = util_err(-errno, "box-init: cannot fork: %s", strerror(errno));
		hooks_stop(hooks, nhooks);
		free(hooks);
		return rc;
	}
	if (o->ready_fd >= 0)
		(void)!write(o->ready_fd, "1", 1); /* closed on exec in the command */
	*exit_status = util_wait_status_to_exit(supervise(child, &set));
	reap_rest();
	hooks_stop(hooks, nhooks);
	free(hooks);
	if (o->ready_fd >= 0) {
		char done[2] = {'d', (char)*exit_status};

		(void)!write(o->ready_fd, done, sizeof(done));
		close(o->ready_fd);
	}
	return 0;
}
