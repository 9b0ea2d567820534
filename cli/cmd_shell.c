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

#include "audit/audit.h"
#include "core/core.h"
#include "jail/jail.h"
#include "proxy/proxy.h"

const char cmd_shell_usage[] =
    "usage: arborinth shell NAME [OPTIONS] [--] [CMD ARGS...]\n"
    "\n"
    "Runs CMD (default: $SHELL, else bash, else sh) in the workspace, starting in its\n"
    "workdir, with stdio inherited. Exits with CMD's status (128+N when killed by signal N;\n"
    "125 when the box could not be started). Options go before CMD; CMD starts at the first\n"
    "word after NAME that is not an option, or after --.\n"
    "\n"
    "  --jail bubblewrap|none  bubblewrap (default): a box with every namespace unshared, no\n"
    "                          capabilities, a seccomp filter, the host read-only, the\n"
    "                          workdir read-write, the workspace's tmp, cache and home in\n"
    "                          place of the host's, $HOME, /run and the origin hidden, and an\n"
    "                          environment rebuilt from an allowlist.\n"
    "                          none: on the host, with no isolation at all\n"
    "  --mount SPEC            add a mount in the box (repeatable, applied after the\n"
    "                          defaults): TYPE:dest or TYPE:source:dest with TYPE one of\n"
    "                          ro, rw, tmpfs, dev, proc; ro/rw without a source bind dest\n"
    "                          itself; paths absolute. It may replace a convenience default\n"
    "                          at the same destination (tmpfs:/tmp: an ephemeral /tmp), never\n"
    "                          a guard ($HOME, /run, the origin and its .arborinth/)\n"
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
    "                          (limits: a cgroup of the box's own, cgroup v1 as root)\n"
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
    {0},
};

struct shell_opts {
	const char *jail;
	bool net, explain, no_tool_managers;
	const char **mounts, **envs, **backends; /* borrowed from argv */
	size_t n_mounts, n_envs, n_backends;
	const char *key_file;
	int64_t timeout_ms; /* 0: none */
	struct jail_limits limits;
	const char **allow_hosts; /* borrowed from argv */
	size_t n_allow_hosts;
	const char **grants, **binds; /* borrowed from argv */
	size_t n_grants, n_binds;
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

/* Parses options in argv[0..argc); *name_at: index of NAME. */
static int parse_options(struct cli_global *g, int argc, char **argv, struct shell_opts *o,
			 int *name_at)
{
	int status = CLI_ERR, c;

	optind = 0;
	while ((c = cli_getopt(g, &shell_cmd, argc, argv, "", shell_opts, &status)) != -1) {
		switch (c) {
		case -2:
			return status;
		case 'J':
			o->jail = optarg;
			break;
		case 'm':
			o->mounts[o->n_mounts++] = optarg;
			break;
		case 'e':
			o->envs[o->n_envs++] = optarg;
			break;
		case 'n':
			o->net = true;
			break;
		case 'x':
			o->explain = true;
			break;
		case 'b':
			o->backends[o->n_backends++] = optarg;
			break;
		case 'k':
			o->key_file = optarg;
			break;
		case 'H':
			o->allow_hosts[o->n_allow_hosts++] = optarg;
			break;
		case 'g':
			o->grants[o->n_grants++] = optarg;
			break;
		case 'B':
			o->binds[o->n_binds++] = optarg;
			break;
		case 'T':
			o->no_tool_managers = true;
			break;
		case 't':
		case 'M':
		case 'C':
		case 'P':
			if (cli_shell_limit_parse(c == 't'   ? "timeout"
						  : c == 'M' ? "memory"
						  : c == 'C' ? "cpus"
							     : "pids",
						  optarg, &o->limits, &o->timeout_ms) < 0)
				return cli_usage_error("shell", "%s", util_err_msg());
			break;
		}
	}
	if (strcmp(o->jail, "bubblewrap") && strcmp(o->jail, "none"))
		return cli_usage_error("shell", "unknown jail '%s' (available: bubblewrap, none)",
				       o->jail);
	if (!strcmp(o->jail, "none") &&
	    (o->n_mounts || o->n_envs || o->net || o->n_backends || o->n_grants || o->n_binds ||
	     o->no_tool_managers || o->timeout_ms || o->limits.memory || o->limits.cpu_milli ||
	     o->limits.pids))
		return cli_usage_error("shell",
				       "--mount, --env, --net, --backend, --grant, --binds, "
				       "--no-tool-managers and the limits need --jail bubblewrap "
				       "(--jail none runs on the host as it is)");
	if (o->key_file && o->n_backends != 1)
		return cli_usage_error("shell", "--api-key-file needs exactly one --backend");
	if (o->net && o->n_allow_hosts)
		return cli_usage_error("shell", "--allow-host is for boxes without --net (with "
						"--net the box reaches every host itself)");
	if (!strcmp(o->jail, "none") && o->n_allow_hosts)
		return cli_usage_error("shell", "--allow-host needs --jail bubblewrap (--jail none "
						"runs on the host as it is)");
	for (size_t i = 0; i < o->n_allow_hosts; i++) {
		char *host = NULL;
		uint16_t port;

		if (proxy_allow_host_parse(o->allow_hosts[i], &host, &port) < 0)
			return cli_usage_error("shell", "--allow-host: %s", util_err_msg());
		free(host);
	}
	if (optind >= argc)
		return cli_usage_error("shell", "missing workspace NAME");
	*name_at = optind;
	return -1;
}

/*
 * Every session is a diff between two checkpoints (`arborinth log`, `diff --session`,
 * `rewind --before-session`). A checkpoint that fails is a warning: the session runs anyway.
 */
static void session_checkpoint(struct core_project *p, const struct core_ws *ws,
			       const struct audit_session *s, const char *kind)
{
	struct core_ckpt_opts o = {.message = kind[0] == 's' ? "session start" : "session end",
				   .kind = kind,
				   .session = s ? audit_session_id(s) : 0};
	struct core_ckpt c = {0};

	if (core_ws_checkpoint(p, ws, &o, &c) < 0)
		fprintf(stderr, "arborinth: warning: no %s checkpoint for this session: %s\n", kind,
			util_err_msg());
	core_ckpt_clear(&c);
}

/* Builds the box for ws from the options; *out: jail_box_free(). */
static int make_box(struct core_project *p, const struct core_ws *ws, const struct shell_opts *o,
		    struct proxy *px, char **cmd, const struct cli_box_extra *extra,
		    struct jail_box **out)
{
	struct jail_box_config cfg = {
	    .ws_name = ws->name,
	    .ws_root = ws->root,
	    .workdir = ws->workdir,
	    .tmp = ws->tmp,
	    .cache = ws->cache,
	    .home = ws->home,
	    .origin_root = core_project_root(p),
	    .origin_objects = core_project_objects_dir(p),
	    .state_dir = core_project_state_dir(p),
	    .net = o->net,
	    .no_tool_managers = o->no_tool_managers,
	};
	struct jail_box *b = NULL;
	int status = CLI_OK;

	if (jail_box_new(&b, &cfg) < 0)
		return cli_fail_lib();
	/* A launcher's defaults, then grants and bind files, then --mount and --env win. */
	if (extra && extra->apply(extra->ctx, b, px) < 0)
		status = cli_fail_lib();
	if (status == CLI_OK)
		status = cli_binds_apply(b, o->grants, o->n_grants, o->binds, o->n_binds);
	for (size_t i = 0; i < o->n_mounts && status == CLI_OK; i++)
		if (jail_box_add_mount(b, o->mounts[i]) < 0)
			status = cli_usage_error("shell", "%s", util_err_msg());
	for (size_t i = 0; i < o->n_envs && status == CLI_OK; i++)
		if (jail_box_add_env(b, o->envs[i]) < 0)
			status = cli_usage_error("shell", "%s", util_err_msg());
	/* After --env: the placeholders win over a host variable of the same name. */
	if (status == CLI_OK && px &&
	    cli_proxy_box_setup(
		px, b, ws, (o->net ? CLI_PROXY_TCP : 0) | (o->explain ? CLI_PROXY_DRY : 0)) < 0)
		status = cli_fail_lib();
	if (status == CLI_OK &&
	    (jail_box_set_timeout(b, o->timeout_ms) < 0 || jail_box_set_limits(b, &o->limits) < 0 ||
	     jail_box_set_command(b, cmd) < 0 || jail_box_finish(b) < 0))
		status = cli_fail_lib();
	if (status != CLI_OK) {
		jail_box_free(b);
		return status;
	}
	*out = b;
	return CLI_OK;
}

static int run_box(struct core_project *p, const struct core_ws *ws, const struct shell_opts *o,
		   char **cmd, const struct cli_box_extra *extra)
{
	struct audit_session *session = NULL;
	struct jail_box *b = NULL;
	struct proxy *px = NULL;
	struct cli_net_audit *net = NULL;
	struct cli_proxy_opts po = {.backends = o->backends,
				    .n_backends = o->n_backends,
				    .key_file = o->key_file,
				    .login = extra ? extra->login : NULL,
				    .allow_hosts = o->allow_hosts,
				    .n_allow_hosts = o->n_allow_hosts,
				    .listen = !o->explain,
				    .tcp = o->net,
				    .tcp_fd = extra ? extra->tcp_fd : -1,
				    .tcp_tls_fd = extra ? extra->tcp_tls_fd : -1,
				    .tcp_backend = extra ? extra->tcp_backend : NULL};
	char *text = NULL;
	int status, exit_status = 0;

	/* The proxy first: the box's environment holds its placeholders. */
	if (cli_proxy_start(&px, &net, p, ws, &po) < 0)
		return cli_fail_lib();
	status = make_box(p, ws, o, px, cmd, extra, &b);
	if (status != CLI_OK) {
		cli_proxy_stop(px, net);
		return status;
	}
	if (o->explain) {
		if (jail_box_explain(b, &text) < 0)
			status = cli_fail_lib();
		else
			fputs(text, stdout);
		free(text);
		jail_box_free(b);
		cli_proxy_stop(px, net);
		return status;
	}
	fflush(stdout);
	if (cli_audit_session_begin(&session, p, ws, "bubblewrap", cmd) < 0) {
		status = cli_fail_lib();
	} else {
		/* The proxy's records belong to this session from the box's first request. */
		cli_proxy_set_session(net, session);
		struct jail_run_stats stats = {0};
		int rc;

		session_checkpoint(p, ws, session, "start");
		rc = jail_box_run(b, &exit_status, &stats);
		cli_shell_limit_report(&o->limits, &stats);
		cli_shell_limit_audit(session, &o->limits, o->timeout_ms, rc == -ETIME, &stats);
		if (rc == -ETIME)
			status = cli_fail(JAIL_EXIT_TIMEOUT, "--timeout: %s", util_err_msg());
		else if (rc < 0)
			status = cli_fail(JAIL_EXIT_SETUP, "%s", util_err_msg());
		else
			status = exit_status;
		session_checkpoint(p, ws, session, "end");
	}
	cli_audit_session_end(ws, session, status);
	jail_box_free(b);
	cli_proxy_stop(px, net);
	return status;
}

static int run_none(struct core_project *p, const struct core_ws *ws, const struct shell_opts *o,
		    char **cmd)
{
	struct audit_session *session = NULL;
	int exit_status = 0, status;

	if (o->explain) {
		printf("== inputs ==\n  workspace  %s (%s)\n  jail       none: runs on the host "
		       "with no isolation; the host's files, network and environment are all "
		       "visible\n  directory  %s\n",
		       ws->name, ws->root, ws->workdir);
		return CLI_OK;
	}
	fflush(stdout);
	if (cli_audit_session_begin(&session, p, ws, "none", cmd) < 0) {
		status = cli_fail_lib();
	} else {
		session_checkpoint(p, ws, session, "start");
		status = jail_none_run(ws->workdir, cmd, &exit_status) < 0 ? cli_fail_lib()
									   : exit_status;
		session_checkpoint(p, ws, session, "end");
	}
	cli_audit_session_end(ws, session, status);
	return status;
}

int cmd_shell(struct cli_global *g, int argc, char **argv)
{
	return cli_shell_run(g, argc, argv, NULL);
}

int cli_shell_run(struct cli_global *g, int argc, char **argv, const struct cli_box_extra *extra)
{
	struct shell_opts o = {.jail = "bubblewrap"};
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	char *shell_argv[2] = {NULL, NULL};
	int cmd_at = command_index(argc, argv), name_at = 0;
	int status;
	char **cmd;

	o.mounts = calloc((size_t)argc + 1, sizeof(*o.mounts));
	o.envs = calloc((size_t)argc + 1, sizeof(*o.envs));
	o.backends = calloc((size_t)argc + 1, sizeof(*o.backends));
	o.allow_hosts = calloc((size_t)argc + 1, sizeof(*o.allow_hosts));
	o.grants = calloc((size_t)argc + 1, sizeof(*o.grants));
	o.binds = calloc((size_t)argc + 1, sizeof(*o.binds));
	if (!o.mounts || !o.envs || !o.backends || !o.grants || !o.binds || !o.allow_hosts) {
		status = cli_fail(CLI_ERR, "out of memory");
		goto out;
	}
	cmd = argv + cmd_at + (cmd_at < argc && !strcmp(argv[cmd_at], "--"));
	status = parse_options(g, cmd_at, argv, &o, &name_at);
	if (status != -1)
		goto out;
	if (core_project_open(&p, g->workdir) < 0 || core_ws_get(p, argv[name_at], &ws) < 0) {
		status = cli_fail_lib();
		goto out;
	}
	/* The view may be down (after a reboot, say): bring it up; --explain changes nothing. */
	if (!o.explain && core_ws_mount(p, ws, 0) < 0) {
		status = cli_fail_lib();
		goto out;
	}
	if (!*cmd) {
		shell_argv[0] = (char *)default_shell();
		cmd = shell_argv;
	}
	if (!strcmp(o.jail, "none"))
		status = run_none(p, ws, &o, cmd);
	else
		status = run_box(p, ws, &o, cmd, extra);
out:
	core_ws_free(ws);
	core_project_free(p);
	free(o.mounts);
	free(o.envs);
	free(o.backends);
	free(o.allow_hosts);
	free(o.grants);
	free(o.binds);
	return status;
}
