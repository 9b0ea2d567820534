/*
 * cli/pager.c: colour and a pager for `diff` and `log`, as git does them. Colour: --color
 * (always, never, auto: when stdout is a terminal, $NO_COLOR is unset or empty and $TERM is not
 * "dumb"). Pager: when stdout is a terminal and --no-pager was not given, $ARBORINTH_PAGER,
 * else $PAGER, else `less -FRX` when less is on PATH; an empty one or "cat" is none. Both are
 * decided on the stdout the command was given, before the pager takes it over.
 */
#include "cli/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t pager_pid;

int cli_color_parse(const char *cmd, const char *when, enum cli_color *out)
{
	if (!when || !strcmp(when, "always"))
		*out = CLI_COLOR_ALWAYS;
	else if (!strcmp(when, "never"))
		*out = CLI_COLOR_NEVER;
	else if (!strcmp(when, "auto"))
		*out = CLI_COLOR_AUTO;
	else
		return cli_usage_error(cmd, "--color '%s' is not always, never or auto", when);
	return CLI_OK;
}

bool cli_color_use(enum cli_color c)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");

	if (c != CLI_COLOR_AUTO)
		return c == CLI_COLOR_ALWAYS;
	return isatty(STDOUT_FILENO) && (!no || !*no) && (!term || strcmp(term, "dumb") != 0);
}

/* The pager's command, or NULL for none. */
static const char *pager_cmd(void)
{
	const char *cmd = getenv("ARBORINTH_PAGER");
	char *less;

	if (!cmd)
		cmd = getenv("PAGER");
	if (cmd)
		return *cmd && strcmp(cmd, "cat") != 0 ? cmd : NULL;
	less = util_which("less");
	free(less);
	return less ? "less -FRX" : NULL;
}

void cli_pager_start(const struct cli_global *g)
{
	const char *cmd;
	int fds[2];
	pid_t pid;

	if (g->no_pager || pager_pid || !isatty(STDOUT_FILENO) || !(cmd = pager_cmd()))
		return;
	if (pipe(fds) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		dup2(fds[0], STDIN_FILENO);
		close(fds[0]);
		close(fds[1]);
		/* As git: less shows colours, quits on one screen, leaves the screen as it is. */
		setenv("LESS", "FRX", 0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	dup2(fds[1], STDOUT_FILENO);
	close(fds[0]);
	close(fds[1]);
	pager_pid = pid;
}

void cli_pager_finish(void)
{
	int st;

	if (!pager_pid)
		return;
	fflush(stdout);
	close(STDOUT_FILENO); /* the pager sees the end */
	while (waitpid(pager_pid, &st, 0) < 0 && errno == EINTR)
		;
	pager_pid = 0;
}
