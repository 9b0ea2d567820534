/* cli/cmd_shell.c: `arborinth shell NAME [--jail none] [-- CMD ARGS...]`. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "jail/jail.h"

const char cmd_shell_usage[] =
    "usage: arborinth shell NAME [--jail none] [-- CMD ARGS...]\n"
    "\n"
    "Runs CMD (default: $SHELL, else bash, else sh) in the workspace's workdir with\n"
    "stdio inherited, and exits with its status (128+N when killed by signal N).\n"
    "\n"
    "  --jail none   run on the host without isolation\n";

static const struct cli_cmd shell_cmd = {"shell", NULL, cmd_shell, NULL, cmd_shell_usage};

static bool executable_on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : "/usr/bin:/bin");
	bool found = false;

	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *full = util_path_join(d, name);

		found = full && access(full, X_OK) == 0;
		free(full);
	}
	free(dirs);
	return found;
}

static const char *default_shell(void)
{
	const char *sh = getenv("SHELL");

	if (sh && *sh && access(sh, X_OK) == 0)
		return sh;
	return executable_on_path("bash") ? "bash" : "sh";
}

int cmd_shell(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"jail", required_argument, NULL, 'J'}, {0}};
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	const char *jail = "none";
	char *shell_argv[2] = {NULL, NULL};
	char **cmd;
	int status = CLI_ERR, exit_status = 0;
	struct audit_session *session = NULL;
	int c;

	optind = 0;
	while ((c = cli_getopt(g, &shell_cmd, argc, argv, "", opts, &status)) != -1) {
		if (c == -2)
			return status;
		jail = optarg;
	}
	if (strcmp(jail, "none") != 0)
		return cli_usage_error("shell", "unknown jail '%s' (available: none)", jail);
	if (optind >= argc)
		return cli_usage_error("shell", "missing workspace NAME");
	if (core_project_open(&p, g->workdir) < 0 || core_ws_get(p, argv[optind], &ws) < 0) {
		status = cli_fail_lib();
		goto out;
	}
	cmd = argv + optind + 1;
	if (!*cmd) {
		shell_argv[0] = (char *)default_shell();
		cmd = shell_argv;
	}
	fflush(stdout);
	if (cli_audit_session_begin(&session, p, ws, jail, cmd) < 0) {
		status = cli_fail_lib();
		goto out;
	}
	if (jail_none_run(ws->workdir, cmd, &exit_status) < 0) {
		status = cli_fail_lib();
		goto out;
	}
	status = exit_status;
out:
	cli_audit_session_end(session, status);
	core_ws_free(ws);
	core_project_free(p);
	return status;
}
