/*
 * cli/cmd_shell.c: `arborinth shell NAME [OPTIONS] [--] [CMD ARGS...]`: a command or a shell
 * in a workspace, in a bubblewrap box (default) or on the host (--jail none).
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/arborinth.h"

const char cmd_shell_usage[] =
    "usage: arborinth shell NAME [OPTIONS] [--] [CMD ARGS...]\n"
    "\n"
    "Runs CMD (default: $SHELL, else bash, else sh) in the workspace, starting in its\n"
    "workdir, with stdio inherited. Exits with CMD's status (128+N when killed by signal N;\n"
    "125 when the box could not be started). Options go before CMD; CMD starts at the first\n"
    "word after NAME that is not an option, or after --.\n"
    "\n"
    "  --jail bubblewrap|none  bubblewrap (default): a box with every namespace unshared, no\n"
    "                          capabilities, a seccomp filter, of the host only its system\n"
    "                          folders read-only (credentials and host sockets masked), the\n"
    "                          workdir read-write, the workspace's tmp, cache and home in\n"
    "                          place of the host's, $HOME, /run and the origin hidden, and an\n"
    "                          environment rebuilt from an allowlist.\n"
    "                          none: on the host, with no isolation at all\n"
    "  --mount SPEC            add a mount in the box (repeatable, applied after the\n"
    "                          defaults): TYPE:dest or TYPE:source:dest with TYPE one of\n"
    "                          ro, rw, tmpfs, dev, proc; ro/rw without a source bind dest\n"
    "                          itself; paths absolute. It may replace a convenience default\n"
    "                          at the same destination (tmpfs:/tmp: an ephemeral /tmp), never\n"
    "                          a guard ($HOME, /run, the origin and its .git/arborinth/)\n"
    "  --env NAME[=VALUE]      pass a variable into the box (NAME alone: its host value)\n"
    "  --net                   share the host's network (default: none, only loopback);\n"
    "                          host abstract unix sockets become reachable too\n"
    "  --backend NAME[=URL][,OPT=VALUE...]\n"
    "                          let the box call model API NAME (anthropic, openai, or one\n"
    "                          defined with options) through the credential proxy: the box\n"
    "                          gets NAME_BASE_URL (a relay on 127.0.0.1) and NAME_API_KEY=a\n"
    "                          random placeholder; the real key ($ANTHROPIC_API_KEY,\n"
    "                          $OPENAI_API_KEY, key-env= or key-file=) stays on the host\n"
    "                          (repeatable; see README \"Credential proxy\"). With --net\n"
    "                          the proxy listens on the host's 127.0.0.1 at a port of its\n"
    "                          own per session, and the placeholder, which every request\n"
    "                          must carry, is in the file NAME_API_KEY_FILE names instead\n"
    "  --api-key-file FILE     the credential of the one --backend, read from FILE\n"
    "  --allow-host HOST[:PORT]\n"
    "                          give the box an HTTP proxy (HTTPS_PROXY, HTTP_PROXY on\n"
    "                          127.0.0.1) that opens CONNECT tunnels to HOST:PORT (default\n"
    "                          443) only, resolved and connected from the host; anything\n"
    "                          else is refused with the reason (repeatable; each request\n"
    "                          is in 'arborinth audit NAME --kind net')\n"
    "  --grant NAME            a toolchain bundle of mounts, PATH entries and variables\n"
    "                          (repeatable; 'arborinth grant list' shows them)\n"
    "  --binds FILE            a bind file (TOML: ro, rw, tmpfs, path, env, include;\n"
    "                          repeatable, applied after the grants, so a file wins; see\n"
    "                          README \"Bind files and grants\")\n"
    "  --timeout DURATION      stop the box after DURATION (30s, 10m, 2h, 1d): SIGTERM to\n"
    "                          CMD, SIGKILL to every process of the box 2 s later; exits\n"
    "                          124\n"
    "  --memory SIZE           at most SIZE (512M, 2G) of memory and swap for the whole box;\n"
    "                          beyond it the kernel's OOM killer ends a process of the box\n"
    "  --cpus N                at most N CPUs' worth of time (0.5, 2)\n"
    "  --pids N                at most N processes and threads at once; further forks fail\n"
    "                          (limits: a cgroup of the box's own, cgroup v1 as root; and\n"
    "                          RLIMIT_NPROC). Default: the user's process limit less a\n"
    "                          quarter, which the user keeps (1024 when it has none)\n"
    "  --inotify N             at most N inotify instances for the whole box. Default: the\n"
    "                          user's fs.inotify.max_user_instances less a quarter\n"
    "  --no-tool-managers      mount only the PATH entries under $HOME, not what their tool\n"
    "                          managers need (pyenv's versions, rustup's toolchains, an nvm\n"
    "                          node's lib, a script's interpreter, ...; see --explain)\n"
    "  --explain               print the resolved box (inputs, mounts, environment,\n"
    "                          seccomp rules, the exact bwrap argv) and run nothing\n";

static const struct cli_cmd shell_cmd = {"shell", NULL, cmd_shell, NULL, cmd_shell_usage};

static const struct option shell_opts[] = {
    {"jail", required_argument, NULL, 'J'},
    {"mount", required_argument, NULL, 'm'},
    {"env", required_argument, NULL, 'e'},
    {"net", no_argument, NULL, 'n'},
    {"explain", no_argument, NULL, 'x'},
    {"backend", required_argument, NULL, 'b'},
    {"api-key-file", required_argument, NULL, 'k'},
    {"allow-host", required_argument, NULL, 'H'},
    {"grant", required_argument, NULL, 'g'},
    {"binds", required_argument, NULL, 'B'},
    {"no-tool-managers", no_argument, NULL, 'T'},
    {"timeout", required_argument, NULL, 't'},
    {"memory", required_argument, NULL, 'M'},
    {"cpus", required_argument, NULL, 'C'},
    {"pids", required_argument, NULL, 'P'},
    {"inotify", required_argument, NULL, 'I'},
    {0},
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
	bool explain;
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
		else
			o->v[o->n].opt = c, o->v[o->n++].arg = optarg;
	}
	if (optind >= argc)
		return cli_usage_error("shell", "missing workspace NAME");
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
	status = cli_box_go(b, cmd, o.explain, "shell");
out:
	arb_box_free(b);
	arb_project_free(p);
	free(o.v);
	return status;
}
