/*
 * cli/cmd_shell.c: `arborinth shell NAME [OPTIONS] [--] [CMD ARGS...]`: a command or a shell
 * in a workspace, in a bubblewrap box (default) or on the host (--jail none).
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/arborinth.h"

static const struct cli_cmd shell_cmd = {"shell", NULL, cmd_shell, NULL, cmd_shell_usage};

static const struct option shell_opts[] = {
    {"jail", required_argument, NULL, 'J'},	  {"mount", required_argument, NULL, 'm'},
    {"env", required_argument, NULL, 'e'},	  {"net", no_argument, NULL, 'n'},
    {"explain", no_argument, NULL, 'x'},	  {"json", no_argument, NULL, 'j'},
    {"backend", required_argument, NULL, 'b'},	  {"api-key-file", required_argument, NULL, 'k'},
    {"allow-host", required_argument, NULL, 'H'}, {"grant", required_argument, NULL, 'g'},
    {"binds", required_argument, NULL, 'B'},	  {"no-tool-managers", no_argument, NULL, 'T'},
    {"timeout", required_argument, NULL, 't'},	  {"memory", required_argument, NULL, 'M'},
    {"cpus", required_argument, NULL, 'C'},	  {"pids", required_argument, NULL, 'P'},
    {"inotify", required_argument, NULL, 'I'},	  {0},
};

static bool option_takes_value(const char *arg)
{
	if (strchr(arg, '='))
		return false;
	if (!strcmp(arg, "--workdir"))
		return true;
	for (const struct option *o = shell_opts; o->name; o++)
		if (o->has_arg == required_argument && !strcmp(arg + 2, o->name))
			return true;
	return false;
}

/* Where CMD starts: after NAME, the first word that is not an option, or "--"; else argc. */
static int command_index(int argc, char **argv)
{
	bool have_name = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			return i;
		if (a[0] == '-' && a[1]) {
			if (util_str_has_prefix(a, "--") && option_takes_value(a))
				i++;
			continue;
		}
		if (have_name)
			return i;
		have_name = true;
	}
	return argc;
}

static const char *default_shell(void)
{
	const char *sh = getenv("SHELL");

	if (sh && *sh && access(sh, X_OK) == 0)
		return sh;
	char *bash = util_which("bash");

	free(bash);
	return bash ? "bash" : "sh";
}

/*
 * Parses options in argv[0..argc) into box b (which knows NAME only later: it is made after
 * the parse, so the options go into a scratch list first). *name_at: index of NAME.
 */
struct shell_opts {
	const char *jail;
	bool explain, json;
	struct {
		int opt;
		const char *arg;
	} * v;
	size_t n;
};

static int parse_options(struct cli_global *g, int argc, char **argv, struct shell_opts *o,
			 int *name_at)
{
	int status = CLI_ERR, c;

	optind = 0;
	while ((c = cli_getopt(g, &shell_cmd, argc, argv, "", shell_opts, &status)) != -1) {
		if (c == -2)
			return status;
		if (c == 'J')
			o->jail = optarg;
		else if (c == 'x')
			o->explain = true;
		else if (c == 'j')
			o->json = true;
		else
			o->v[o->n].opt = c, o->v[o->n++].arg = optarg;
	}
	if (optind >= argc)
		return cli_usage_error("shell", "missing workspace NAME");
	if (o->json && !o->explain)
		return cli_usage_error("shell", "--json goes with --explain");
	*name_at = optind;
	return -1;
}

/* The parsed options on box b, in the order given. -errno as the library says. */
static int apply_options(arb_box *b, const struct shell_opts *o)
{
	static const char *const limits[] = {
	    ['t'] = "timeout", ['M'] = "memory", ['C'] = "cpus", ['P'] = "pids", ['I'] = "inotify"};
	int rc = arb_box_set_jail(b, o->jail);

	for (size_t i = 0; rc == 0 && i < o->n; i++) {
		const char *a = o->v[i].arg;

		switch (o->v[i].opt) {
		case 'm':
			rc = arb_box_add_mount(b, a);
			break;
		case 'e':
			rc = arb_box_add_env(b, a);
			break;
		case 'n':
			rc = arb_box_set_network(b, 1);
			break;
		case 'b':
			rc = arb_box_add_backend(b, a);
			break;
		case 'k':
			rc = arb_box_set_api_key_file(b, a);
			break;
		case 'H':
			rc = arb_box_allow_host(b, a);
			break;
		case 'g':
			rc = arb_box_add_grant(b, a);
			break;
		case 'B':
			rc = arb_box_add_binds_file(b, a);
			break;
		case 'T':
			rc = arb_box_set_no_tool_managers(b, 1);
			break;
		default:
			rc = arb_box_set_limit(b, limits[o->v[i].opt], a);
		}
	}
	return rc;
}

/* After a box ran: a line on stderr for each limit it reached. */
static void limit_report(const struct arb_run_result *r)
{
	if (r->oom_kills)
		fprintf(stderr,
			"arborinth: --memory: the box reached its limit of %lld MiB; the kernel "
			"ended %lld of its processes\n",
			(long long)(r->memory_limit >> 20), (long long)r->oom_kills);
	if (r->forks_refused)
		fprintf(stderr,
			"arborinth: --pids: the box reached its limit of %lld processes; %lld "
			"forks were refused\n",
			(long long)r->pids_limit, (long long)r->forks_refused);
}

int cli_box_fail(const char *cmd)
{
	return arb_error_is_input() ? cli_usage_error(cmd, "%s", arb_error_last())
				    : cli_fail(CLI_ERR, "%s", arb_error_last());
}

static int lib_fail(void)
{
	return cli_box_fail("shell");
}

/* The exit status of a run, with its one line on stderr when it did not end normally. */
static int run_status(int rc, const struct arb_run_result *res, const char *name)
{
	limit_report(res);
	if (rc < 0 && res->session)
		return cli_fail(res->exit_status, "%s", arb_error_last());
	if (rc < 0)
		return cli_box_fail(name);
	if (res->timed_out)
		return cli_fail(res->exit_status, "--timeout: %s", arb_error_last());
	return res->exit_status;
}

int cli_agent_go(arb_agent *a, const char *name)
{
	struct arb_run_result res;
	int rc = arb_agent_run(&res, a);

	return run_status(rc, &res, name);
}

int cli_box_go(arb_box *b, char **cmd, bool explain, const char *name)
{
	struct arb_run_result res;
	char *text = NULL;
	int rc;

	if (explain) {
		if (arb_box_explain(&text, b, cmd) < 0)
			return cli_box_fail(name);
		fputs(text, stdout);
		arb_free(text);
		return CLI_OK;
	}
	rc = arb_box_run(&res, b, cmd);
	return run_status(rc, &res, name);
}

/* --explain --json: the proxy's backends and the box's text. */
static int explain_json(arb_box *b, char **cmd, const char *ws)
{
	char *text = NULL;
	json_t *o;

	if (arb_box_explain(&text, b, cmd) < 0)
		return cli_box_fail("shell");
	o = json_pack("{s:s, s:s, s:o, s:o}", "command", "shell", "workspace", ws, "backends",
		      cli_json_backends(arb_box_explain_backends(b)), "box", util_json_bytes(text));
	arb_free(text);
	return cli_json_print(o);
}

int cmd_shell(struct cli_global *g, int argc, char **argv)
{
	struct shell_opts o = {.jail = "bubblewrap"};
	arb_project *p = NULL;
	arb_box *b = NULL;
	char *shell_argv[2] = {NULL, NULL};
	int cmd_at = command_index(argc, argv), name_at = 0;
	int status;
	char **cmd;

	o.v = calloc((size_t)argc + 1, sizeof(*o.v));
	if (!o.v)
		return cli_fail(CLI_ERR, "out of memory");
	cmd = argv + cmd_at + (cmd_at < argc && !strcmp(argv[cmd_at], "--"));
	status = parse_options(g, cmd_at, argv, &o, &name_at);
	if (status != -1)
		goto out;
	if (arb_project_open(&p, g->workdir) < 0) {
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
		goto out;
	}
	if (arb_box_new(&b, p, argv[name_at]) < 0 || apply_options(b, &o) < 0) {
		status = lib_fail();
		goto out;
	}
	if (!*cmd) {
		shell_argv[0] = (char *)default_shell();
		cmd = shell_argv;
	}
	status =
	    o.json ? explain_json(b, cmd, argv[name_at]) : cli_box_go(b, cmd, o.explain, "shell");
out:
	arb_box_free(b);
	arb_project_free(p);
	free(o.v);
	return status;
}
