/* jail/none.c: the `none` backend: the command runs on the host, in the workdir. */
#include "jail/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

int jail_stdio_apply(const int stdio[3])
{
	int moved[3];

	if (!stdio)
		return 0;
	/* Above 2 first, so that no dup2() overwrites a source that is another's target. */
	for (int i = 0; i < 3; i++) {
		moved[i] = stdio[i] >= 0 ? fcntl(stdio[i], F_DUPFD_CLOEXEC, 3) : -1;
		if (stdio[i] >= 0 && moved[i] < 0)
			return -errno;
	}
	for (int i = 0; i < 3; i++)
		if (moved[i] >= 0 && (dup2(moved[i], i) < 0 || close(moved[i]) < 0))
			return -errno;
	return 0;
}

int jail_none_run(const char *cwd, char *const argv[], const int stdio[3], int *exit_status)
{
	/*
	 * The terminal already sends SIGINT/SIGQUIT to the child's process group (ours), so
	 * those are ignored here, as system() does; signals aimed at us alone are forwarded.
	 */
	static const int fwd[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
	struct sigaction sa = {.sa_handler = forward_signal}, old[ARB_ARRAY_LEN(fwd)];
	struct sigaction ign = {.sa_handler = SIG_IGN};
	int status = 0;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return util_err(-errno, "cannot fork: %s", strerror(errno));
	if (pid == 0) {
		if (jail_stdio_apply(stdio) < 0)
			_exit(127);
		if (chdir(cwd) < 0) {
			fprintf(stderr, "arborinth: cannot enter %s: %s\n", cwd, strerror(errno));
			_exit(127);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "arborinth: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < ARB_ARRAY_LEN(fwd); i++)
		sigaction(fwd[i], i < 2 ? &sa : &ign, &old[i]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	for (size_t i = 0; i < ARB_ARRAY_LEN(fwd); i++)
		sigaction(fwd[i], &old[i], NULL);
	*exit_status = util_wait_status_to_exit(status);
	return 0;
}
