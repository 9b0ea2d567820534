/* cli/main.c: entry point, global options and the top-level command table. */
#include "cli/cli.h"
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The global options (their help: docs/commands/arborinth.md); val: what run() does. */
enum { OPT_HELP, OPT_VERSION, OPT_WORKDIR, OPT_LIST, OPT_NO_PAGER };
static const struct {
	const char *lng, *shrt;
	int val;
} main_opts[] = {
    {"--help", "-h", OPT_HELP},		{"--version", "-V", OPT_VERSION},
    {"--workdir", "-C", OPT_WORKDIR},	{"--list-options", NULL, OPT_LIST},
    {"--no-pager", NULL, OPT_NO_PAGER}, {0},
};

const struct cli_cmd cli_commands[] = {
    {"help", NULL, cmd_help, "show help for a command", cmd_help_usage},
    {"project", NULL, cmd_project, "inspect the repository", cmd_project_usage, cmd_project_subs},
    {"workspace", NULL, cmd_workspace, "create, list, inspect and delete workspaces",
     cmd_workspace_usage, cmd_workspace_subs},
    {"shell", NULL, cmd_shell, "run a command or a shell in a workspace", cmd_shell_usage},
    {"audit", NULL, cmd_audit, "show what happened in a workspace", cmd_audit_usage},
    {"checkpoint", NULL, cmd_checkpoint, "record a workspace's view", cmd_checkpoint_usage},
    {"log", NULL, cmd_log, "list a workspace's sessions and checkpoints", cmd_log_usage},
    {"diff", NULL, cmd_diff, "show what changed in a workspace", cmd_diff_usage},
    {"rewind", NULL, cmd_rewind, "give a workspace an earlier state", cmd_rewind_usage},
    {"restore", NULL, cmd_restore, "give paths of a workspace an earlier state", cmd_restore_usage},
    {"merge", NULL, cmd_merge, "merge a workspace's branch into the origin's", cmd_merge_usage},
    {"apply", NULL, cmd_apply, "apply a workspace's changes to the origin's working tree",
     cmd_apply_usage},
    {"mcp", NULL, cmd_mcp, "serve the workspaces to an agent over MCP", cmd_mcp_usage},
    {"compare", NULL, cmd_compare, "compare workspaces against their common base",
     cmd_compare_usage},
    {"export", NULL, cmd_export, "copy a workspace's branch where `git fetch` reads it",
     cmd_export_usage},
    {"claude", NULL, cmd_claude, "run Claude Code in a workspace, jailed", cmd_claude_usage},
    {"codex", NULL, cmd_codex, "run Codex in a workspace, jailed", cmd_codex_usage},
    {"opencode", NULL, cmd_opencode, "run OpenCode in a workspace, jailed", cmd_opencode_usage},
    {"doctor", NULL, cmd_doctor, "check what this machine gives arborinth", cmd_doctor_usage},
    {"gc", NULL, cmd_gc, "reclaim the space no workspace uses", cmd_gc_usage},
    {"review", NULL, cmd_review, "review workspaces in a local web page", cmd_review_usage},
    {"grant", NULL, cmd_grant, "list the toolchain grants (--grant NAME)", cmd_grant_usage},
    /* Internal, not listed (no summary). */
    {"__fs-daemon", NULL, cmd_fs_daemon, NULL, cmd_fs_daemon_usage},
    {"__box-init", NULL, cmd_box_init, NULL, cmd_box_init_usage},
    {0},
};

static void print_main_help(FILE *f)
{
	char list[2048] = "";
	size_t off = 0;

	for (const struct cli_cmd *c = cli_commands; c->name; c++)
		if (c->summary)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "  %-12s %s\n",
						c->name, c->summary);
	fprintf(
	    f,
	    "%sCommands:\n%s\nAny other COMMAND runs the plugin arborinth-COMMAND from PATH, if "
	    "there is one.\n%s",
	    cli_main_usage_head, list, cli_main_usage_tail);
}

int cmd_help(struct cli_global *g, int argc, char **argv)
{
	const struct cli_cmd *c;

	if (g->list_options)
		return CLI_OK; /* no options */
	if (argc < 2) {
		print_main_help(stdout);
		return CLI_OK;
	}
	/* `help --help`: its own help */
	c = cli_cmd_find(cli_commands,
			 strcmp(argv[1], "--help") && strcmp(argv[1], "-h") ? argv[1] : "help");
	if (!c)
		return cli_fail(CLI_USAGE, "unknown command '%s' (see 'arborinth --help')",
				argv[1]);
	if (argc >= 3 && c->subs) {
		const struct cli_cmd *sub = cli_cmd_find(c->subs, argv[2]);

		if (!sub)
			return cli_fail(CLI_USAGE, "unknown sub-command '%s %s'", argv[1], argv[2]);
		c = sub;
	}
	cli_print_help(c);
	return CLI_OK;
}

static int run(int argc, char **argv)
{
	struct cli_global g = {.workdir = "."};
	const struct cli_cmd *c;
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		const char *a = argv[i];
		int o = 0;

		while (main_opts[o].lng && strcmp(a, main_opts[o].lng) != 0 &&
		       (!main_opts[o].shrt || strcmp(a, main_opts[o].shrt) != 0))
			o++;
		if (!main_opts[o].lng && !strncmp(a, "--workdir=", 10)) {
			g.workdir = a + 10;
			i++;
			continue;
		}
		if (!main_opts[o].lng)
			return cli_fail(CLI_USAGE, "unknown option '%s' (see 'arborinth --help')",
					a);
		switch (main_opts[o].val) {
		case OPT_HELP:
			print_main_help(stdout);
			return CLI_OK;
		case OPT_VERSION:
			printf("arborinth %s\n", ARB_VERSION);
			return CLI_OK;
		case OPT_LIST:
			g.list_options = true;
			i++;
			break;
		case OPT_NO_PAGER:
			g.no_pager = true;
			i++;
			break;
		default: /* OPT_WORKDIR */
			if (i + 1 >= argc)
				return cli_fail(CLI_USAGE, "option '%s' needs a value", a);
			g.workdir = argv[i + 1];
			i += 2;
		}
	}
	if (i >= argc && g.list_options) {
		for (int o = 0; main_opts[o].lng; o++)
			printf("%s\n%s%s", main_opts[o].lng,
			       main_opts[o].shrt ? main_opts[o].shrt : "",
			       main_opts[o].shrt ? "\n" : "");
		return CLI_OK;
	}
	if (i >= argc) {
		print_main_help(stderr);
		return CLI_USAGE;
	}
	c = cli_cmd_find(cli_commands, argv[i]);
	/* Not a built-in: a plugin, arborinth-NAME on PATH (built-ins always win). */
	if (!c && g.list_options)
		return cli_fail(CLI_USAGE, "unknown command '%s'", argv[i]);
	if (!c)
		return cli_plugin_run(argv[i], argc - i, argv + i);
	return c->fn(&g, argc - i, argv + i);
}

int main(int argc, char **argv)
{
	int status;

	lib_helpers_from_program();
	status = run(argc, argv);

	/* A full disk or a closed pipe on stdout is an error, not a silent success. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno != EPIPE)
			fprintf(stderr, "arborinth: cannot write output: %s\n", strerror(errno));
		status = status ? status : CLI_ERR;
	}
	cli_pager_finish();
	return status;
}
