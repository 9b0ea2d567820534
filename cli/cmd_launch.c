/*
 * cli/cmd_launch.c: `arborinth claude|codex|opencode NAME [OPTIONS] [-- CLIENT ARGS...]`.
 * Creates workspace NAME when missing, finds the client on the host, and runs it in a box
 * (an arb_box, as `shell` does) with the backend it needs on the credential proxy, the
 * client bound read-only at its host path, and the client's variables (the client's own
 * file, cli/cmd_launch_clients.c, says which; added through lib_box_set_extra).
 */
#include "cli/cmd_launch.h"
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/core.h"
#include "jail/jail.h"
#include "proxy/proxy.h"

enum {
	LAUNCH_OPT_TIMEOUT = 1000, /* the limits, in the order of launch.limits[] */
	LAUNCH_OPT_MEMORY,
	LAUNCH_OPT_CPUS,
	LAUNCH_OPT_PIDS,
	LAUNCH_OPT_NO_TOOLS,
};
static const char *const limit_names[] = {"timeout", "memory", "cpus", "pids"};

static const struct option launch_opts[] = {
    {"rev", required_argument, NULL, 'r'},
    {"client", required_argument, NULL, 'c'},
    {"grant", required_argument, NULL, 'g'},
    {"binds", required_argument, NULL, 'B'},
    {"mount", required_argument, NULL, 'm'},
    {"env", required_argument, NULL, 'e'},
    {"net", no_argument, NULL, 'n'},
    {"explain", no_argument, NULL, 'x'},
    {"upstream", required_argument, NULL, 'u'},
    {"api-key-file", required_argument, NULL, 'k'},
    {"model", required_argument, NULL, 'M'},
    {"provider", required_argument, NULL, 'P'},
    {"auth", required_argument, NULL, 'A'},
    {"token-url", required_argument, NULL, 'T'},
    {"no-upstream-auth", no_argument, NULL, 'N'},
    /* Passed on to the box as `shell` takes them (checked here, so errors name the client). */
    {"timeout", required_argument, NULL, LAUNCH_OPT_TIMEOUT},
    {"memory", required_argument, NULL, LAUNCH_OPT_MEMORY},
    {"cpus", required_argument, NULL, LAUNCH_OPT_CPUS},
    {"pids", required_argument, NULL, LAUNCH_OPT_PIDS},
    {"no-tool-managers", no_argument, NULL, LAUNCH_OPT_NO_TOOLS},
    {0},
};

int launch_fixed_arg(struct launch *l, const char *arg)
{
	char **v = realloc(l->fixed_args, (l->n_fixed + 2) * sizeof(*v));

	if (!v)
		return util_err(-ENOMEM, "out of memory");
	l->fixed_args = v;
	v[l->n_fixed] = strdup(arg);
	if (!v[l->n_fixed])
		return util_err(-ENOMEM, "out of memory");
	v[++l->n_fixed] = NULL;
	return 0;
}

int launch_write_box_login(const struct launch *l, struct proxy *px, const char *sub,
			   const char *name)
{
	char *text = NULL;
	int rc = l->ws_home ? proxy_login_box_file(px, l->backend, &text)
			    : util_err(-EINVAL, "no workspace home");

	rc = rc ?: lib_home_write(l->ws_home, sub, name, text);
	free(text);
	return rc;
}

int launch_box_json_merge(const struct launch *l, const char *sub, const char *name, json_t *add)
{
	json_t *root = NULL;
	char *text = NULL;
	int dir = -1, fd = -1,
	    rc = l->ws_home ? lib_home_dir_open(l->ws_home, sub, &dir)
			    : util_err(-EINVAL, "no workspace home");

	if (rc < 0)
		return rc;
	/* What the box wrote is data only: a link or anything unreadable starts afresh. */
	fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0) {
		struct stat st;

		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1 << 24))
			root = json_loadfd(fd, 0, NULL);
		close(fd);
	}
	if (!json_is_object(root)) {
		json_decref(root);
		root = json_object();
	}
	if (!root || json_object_update(root, add) < 0 ||
	    !(text = json_dumps(root, JSON_INDENT(2))))
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = util_write_file_at(dir, name, text, strlen(text), 0600, (uid_t)-1, 0);
	free(text);
	json_decref(root);
	close(dir);
	return rc;
}

static void launch_clear(struct launch *l)
{
	free(l->grants);
	free(l->binds);
	free(l->mounts);
	free(l->envs);
	free(l->exe);
	free(l->mount_root);
	free(l->host_home);
	free(l->model_import);
	free(l->login_path);
	free(l->ws_home);
	free(l->key_env);
	free(l->backend_own);
	free(l->backend_opts);
	free(l->key_source);
	free(l->key_hint);
	free(l->upstream_own);
	json_decref(l->client_conf);
	json_decref(l->mcp_box);
	for (size_t i = 0; i < l->n_mcp_notes; i++)
		free(l->mcp_notes[i]);
	free(l->mcp_notes);
	if (l->tcp_fd >= 0)
		close(l->tcp_fd);
	if (l->tcp_tls_fd >= 0)
		close(l->tcp_tls_fd);
	for (size_t i = 0; i < l->n_fixed; i++)
		free(l->fixed_args[i]);
	free(l->fixed_args);
}

static int parse(struct cli_global *g, const struct cli_cmd *cmd, int argc, char **argv,
		 struct launch *l)
{
	int dd = argc, c, status = CLI_USAGE;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	l->client_args = argv + (dd < argc ? dd + 1 : argc);
	l->n_client_args = dd < argc ? argc - dd - 1 : 0;
	l->grants = calloc((size_t)argc + 1, sizeof(char *));
	l->binds = calloc((size_t)argc + 1, sizeof(char *));
	l->mounts = calloc((size_t)argc + 1, sizeof(char *));
	l->envs = calloc((size_t)argc + 1, sizeof(char *));
	if (!l->grants || !l->binds || !l->mounts || !l->envs)
		return cli_fail(CLI_ERR, "out of memory");
	optind = 0;
	while ((c = cli_getopt(g, cmd, dd, argv, "", launch_opts, &status)) != -1) {
		switch (c) {
		case -2:
			return status;
		case 'r':
			l->rev = optarg;
			break;
		case 'c':
			l->client_path = optarg;
			break;
		case 'g':
			l->grants[l->n_grants++] = optarg;
			break;
		case 'B':
			l->binds[l->n_binds++] = optarg;
			break;
		case 'm':
			l->mounts[l->n_mounts++] = optarg;
			break;
		case 'e':
			l->envs[l->n_envs++] = optarg;
			break;
		case 'n':
			l->net = true;
			break;
		case LAUNCH_OPT_TIMEOUT:
		case LAUNCH_OPT_MEMORY:
		case LAUNCH_OPT_CPUS:
		case LAUNCH_OPT_PIDS: {
			struct jail_limits lim = {0};
			int64_t timeout_ms = 0;

			if (lib_limit_parse(limit_names[c - LAUNCH_OPT_TIMEOUT], optarg, &lim,
					    &timeout_ms) < 0)
				return cli_usage_error(cmd->name, "%s", util_err_msg());
			l->limits[c - LAUNCH_OPT_TIMEOUT] = optarg;
			break;
		}
		case LAUNCH_OPT_NO_TOOLS:
			l->no_tool_managers = true;
			break;
		case 'x':
			l->explain = true;
			break;
		case 'u':
			l->upstream = optarg;
			break;
		case 'k':
			l->key_file = optarg;
			break;
		case 'M':
			l->model = optarg;
			break;
		case 'P':
			l->provider = optarg;
			break;
		case 'A':
			if (l->auth_opt && strcmp(l->auth_opt, optarg))
				return cli_usage_error(
				    cmd->name, "--auth %s conflicts with --%s", optarg,
				    strcmp(l->auth_opt, "none") ? "auth" : "no-upstream-auth");
			l->auth_opt = optarg;
			break;
		case 'T':
			l->token_url = optarg;
			break;
		case 'N':
			if (l->auth_opt && strcmp(l->auth_opt, "none"))
				return cli_usage_error(
				    cmd->name, "--no-upstream-auth is --auth none, not --auth %s",
				    l->auth_opt);
			l->auth_opt = "none";
			break;
		}
	}
	if (optind >= dd)
		return cli_usage_error(cmd->name, "missing workspace NAME");
	if (optind + 1 < dd)
		return cli_usage_error(cmd->name,
				       "unexpected argument '%s' (client arguments go after --)",
				       argv[optind + 1]);
	l->name = argv[optind];
	if (l->model && !*l->model)
		return cli_usage_error(cmd->name, "--model needs a model name");
	l->backend = l->client->backend;
	if (l->provider && !l->client->resolve)
		return cli_usage_error(cmd->name, "--provider is only for opencode");
	if (l->upstream && !util_str_has_prefix(l->upstream, "http://") &&
	    !util_str_has_prefix(l->upstream, "https://"))
		return cli_usage_error(cmd->name, "--upstream '%s' is not an http(s) URL",
				       l->upstream);
	if (l->auth_opt && strcmp(l->auth_opt, "login") && strcmp(l->auth_opt, "api-key") &&
	    strcmp(l->auth_opt, "none"))
		return cli_usage_error(cmd->name, "--auth '%s' is not login, api-key or none",
				       l->auth_opt);
	if (l->auth_opt && !strcmp(l->auth_opt, "login") && l->client->login_kind < 0)
		return cli_usage_error(cmd->name, "%s has no host login to use; give an API key",
				       l->client->title);
	if (l->auth_opt && strcmp(l->auth_opt, "api-key") && l->key_file)
		return cli_usage_error(cmd->name, "--api-key-file goes with --auth api-key");
	if (l->token_url && !util_str_has_prefix(l->token_url, "http://") &&
	    !util_str_has_prefix(l->token_url, "https://"))
		return cli_usage_error(cmd->name, "--token-url '%s' is not an http(s) URL",
				       l->token_url);
	if (l->upstream && strchr(l->upstream, ','))
		return cli_usage_error(cmd->name, "--upstream '%s' must not contain ','",
				       l->upstream);
	return -1;
}

/* The client's real path: --client, else `program` on the host PATH. */
static int find_client(struct launch *l)
{
	const struct launch_client *c = l->client;
	char real[PATH_MAX];

	if (l->client_path) {
		if (access(l->client_path, X_OK) < 0 || !realpath(l->client_path, real))
			return cli_fail(CLI_ERR, "%s: --client %s is not an executable file (%s)",
					c->name, l->client_path, strerror(errno));
	} else {
		char *found = util_which(c->program);

		if (found && !realpath(found, real)) {
			free(found);
			found = NULL;
		}
		if (!found)
			return cli_fail(CLI_ERR,
					"%s: %s ('%s') is not on PATH; install it (%s) or give "
					"--client PATH",
					c->name, c->title, c->program, c->install);
		free(found);
	}
	l->exe = strdup(real);
	return l->exe ? CLI_OK : cli_fail(CLI_ERR, "out of memory");
}

/*
 * What to bind read-only so the client runs in the box: nothing under /usr (the host's
 * read-only root already shows it); inside an npm tree the node_modules folder holding it
 * (its package and its platform package next to it); else the file itself.
 */
static int client_mount_root(struct launch *l)
{
	char *nm;

	if (util_str_has_prefix(l->exe, "/usr/"))
		return CLI_OK;
	nm = strstr(l->exe, "/node_modules/");
	l->mount_root =
	    nm ? strndup(l->exe, (size_t)(nm - l->exe) + strlen("/node_modules")) : strdup(l->exe);
	return l->mount_root ? CLI_OK : cli_fail(CLI_ERR, "out of memory");
}

static int host_home(struct launch *l)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (!h || h[0] != '/') {
		pw = getpwuid(getuid());
		h = pw ? pw->pw_dir : NULL;
	}
	if (!h || h[0] != '/')
		return cli_fail(CLI_ERR, "%s: no absolute $HOME", l->client->name);
	l->host_home = strdup(h);
	return l->host_home ? CLI_OK : cli_fail(CLI_ERR, "out of memory");
}

/*
 * The backend specification the launch uses (caller frees): its name, --upstream, what the
 * client's resolve added, the credential's kind, and with --net its port.
 */
char *launch_backend_spec(const struct launch *l)
{
	const char *auth = l->auth == LAUNCH_AUTH_NONE ? ",auth=none" : "";
	const char *opts = l->backend_opts ? l->backend_opts : "";
	char port[16] = "";

	if (l->tcp_port)
		snprintf(port, sizeof(port), ",port=%u", l->tcp_port);
	return l->upstream ? util_asprintf("%s=%s%s%s%s", l->backend, l->upstream, opts, auth, port)
			   : util_asprintf("%s%s%s%s", l->backend, opts, auth, port);
}

int launch_backend_opt(struct launch *l, const char *key, const char *value)
{
	char *more;

	if (strchr(value, ','))
		return util_err(-EINVAL, "%s: %s '%s' must not contain ','", l->client->name, key,
				value);
	more = util_asprintf("%s,%s=%s", l->backend_opts ? l->backend_opts : "", key, value);
	if (!more)
		return util_err(-ENOMEM, "out of memory");
	free(l->backend_opts);
	l->backend_opts = more;
	return 0;
}

char *launch_key_file(const struct launch *l)
{
	return lib_proxy_key_file(l->host_home, l->backend);
}

/*
 * Chooses the credential: --auth, else a key when one is given (--api-key-file or the
 * backend's variable), else the host's login when the client has one and the host file
 * exists, else a key (whose absence check_backend reports).
 */
static int choose_auth(struct launch *l)
{
	const struct launch_client *c = l->client;
	struct proxy_backend *pb = NULL;
	char *spec = launch_backend_spec(l);
	const char *env;
	bool key_given;
	int rc = spec ? proxy_backend_parse(&pb, spec) : util_err(-ENOMEM, "out of memory");

	free(spec);
	if (rc < 0)
		return cli_fail(CLI_ERR, "%s: %s", c->name, util_err_msg());
	l->key_env = strdup(proxy_backend_key_env(pb));
	proxy_backend_free(pb);
	if (!l->key_env)
		return cli_fail(CLI_ERR, "out of memory");
	env = getenv(l->key_env);
	key_given = l->key_file || (env && *env) || l->key_source;
	if (c->login_kind >= 0 && !(l->login_path = c->login_file(l)))
		return cli_fail(CLI_ERR, "out of memory");
	if (l->auth_opt)
		l->auth = !strcmp(l->auth_opt, "login")	 ? LAUNCH_AUTH_LOGIN
			  : !strcmp(l->auth_opt, "none") ? LAUNCH_AUTH_NONE
							 : LAUNCH_AUTH_KEY;
	else if (!key_given && l->login_path && access(l->login_path, F_OK) == 0)
		l->auth = LAUNCH_AUTH_LOGIN;
	else if (!key_given && l->login_path)
		return cli_fail(CLI_ERR,
				"%s: no credential: no API key ($%s or --api-key-file) and no %s "
				"login at %s; %s, or give a key",
				c->name, l->key_env, c->title, l->login_path, c->login_cmd);
	if (l->auth == LAUNCH_AUTH_KEY && !key_given && l->key_hint)
		return cli_fail(CLI_ERR,
				"%s: no credential for %s: no API key ($%s or --api-key-file)%s; "
				"--no-upstream-auth for a server that needs none",
				c->name, l->backend, l->key_env, l->key_hint);
	if (l->auth == LAUNCH_AUTH_LOGIN) {
		l->backend = c->login_backend;
		l->login = (struct lib_proxy_login){c->login_backend, c->login_kind, l->login_path,
						    l->token_url};
	}
	return CLI_OK;
}

/* What --explain says of the credential (never a secret). */
static void explain_auth(const struct launch *l)
{
	if (l->auth == LAUNCH_AUTH_LOGIN)
		printf("credential: %s login from %s (refreshed on the host; the box gets "
		       "placeholders only)\n",
		       l->client->title, l->login_path);
	else if (l->auth == LAUNCH_AUTH_NONE)
		printf("credential: none (--auth none: the upstream gets no credential)\n");
	else if (l->key_file)
		printf("credential: API key from %s (--api-key-file)\n", l->key_file);
	else if (l->key_source)
		printf("credential: API key from %s\n", l->key_source);
	else
		printf("credential: API key from the host's $%s\n", l->key_env);
}

/*
 * Checks the backend and the host credential before anything is created: a proxy without a
 * listener reads the key or the login (refreshing an expired one), and is freed at once.
 */
static int check_backend(const struct launch *l)
{
	char *spec = launch_backend_spec(l);
	const char *specs[1] = {spec};
	struct lib_proxy_opts po = {.backends = specs,
				    .n_backends = 1,
				    .key_file = l->key_file,
				    .login = l->auth == LAUNCH_AUTH_LOGIN ? &l->login : NULL};
	struct lib_net_audit *a = NULL;
	struct proxy *px = NULL;
	int rc =
	    spec ? lib_proxy_start(&px, &a, NULL, NULL, &po) : util_err(-ENOMEM, "out of memory");

	lib_proxy_stop(px, a);
	free(spec);
	return rc < 0 ? cli_fail(CLI_ERR, "%s: %s", l->client->name, util_err_msg()) : CLI_OK;
}

/* Creates NAME at --rev (default HEAD) when missing; with --rev, an existing one must match. */
static int ensure_workspace(struct cli_global *g, struct launch *l)
{
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	git_oid oid;
	char hex[GIT_OID_HEXSZ + 1];
	int rc, status = CLI_OK;

	if (core_project_open(&p, g->workdir) < 0)
		return cli_fail_lib();
	rc = core_ws_get(p, l->name, &ws);
	if (rc == -ENOENT) {
		if (l->explain)
			status =
			    cli_fail(CLI_ERR,
				     "workspace '%s' does not exist; --explain creates nothing "
				     "(run without --explain to create it, or 'arborinth "
				     "workspace create %s')",
				     l->name, l->name);
		else if (core_ws_create(p, l->name, l->rev, &ws) < 0)
			status = cli_fail_lib();
	} else if (rc < 0) {
		status = cli_fail_lib();
	} else if (l->rev) {
		if (core_rev_resolve(p, l->rev, &oid) < 0) {
			status = cli_fail_lib();
		} else {
			git_oid_tostr(hex, sizeof(hex), &oid);
			if (strcmp(hex, ws->base_commit))
				status =
				    cli_fail(CLI_ERR,
					     "workspace '%s' exists at %.12s, not at --rev %s "
					     "(%.12s); --rev only chooses the base of a new one",
					     l->name, ws->base_commit, l->rev, hex);
		}
	}
	if (status == CLI_OK && ws && !(l->ws_home = strdup(ws->home)))
		status = cli_fail(CLI_ERR, "out of memory");
	core_ws_free(ws);
	core_project_free(p);
	return status;
}

static int apply_extra(void *ctx, struct jail_box *b, struct proxy *px)
{
	struct launch *l = ctx;
	char *why;
	int rc = 0;

	if (l->mount_root) {
		why = util_asprintf("the %s client (%s), read-only at its host path",
				    l->client->title, l->exe);
		rc = why ? jail_box_add_extra_mount(b, JAIL_MOUNT_RO, l->mount_root, why)
			 : util_err(-ENOMEM, "out of memory");
		free(why);
		if (rc < 0)
			return util_err(rc, "%s: cannot show the client %s in the box: %s",
					l->client->name, l->mount_root, util_err_msg());
	}
	return l->client->box(l, b, px);
}

/*
 * The launch as a box: its backend, then what `shell` would take from --grant, --binds,
 * --mount, --env, --net, the limits and --no-tool-managers, and the client's part (extra).
 */
static int launch_box(const struct launch *l, arb_project *p, const struct lib_box_extra *extra,
		      arb_box **out)
{
	char *backend = launch_backend_spec(l);
	arb_box *b = NULL;
	int rc = backend ? arb_box_new(&b, p, l->name) : util_err(-ENOMEM, "out of memory");

	if (rc == 0)
		rc = arb_box_add_backend(b, backend);
	for (size_t i = 0; rc == 0 && i < l->n_grants; i++)
		rc = arb_box_add_grant(b, l->grants[i]);
	for (size_t i = 0; rc == 0 && i < l->n_binds; i++)
		rc = arb_box_add_binds_file(b, l->binds[i]);
	for (size_t i = 0; rc == 0 && i < l->n_mounts; i++)
		rc = arb_box_add_mount(b, l->mounts[i]);
	for (size_t i = 0; rc == 0 && i < l->n_envs; i++)
		rc = arb_box_add_env(b, l->envs[i]);
	if (rc == 0 && l->net)
		rc = arb_box_set_network(b, 1);
	for (size_t i = 0; rc == 0 && i < ARB_ARRAY_LEN(limit_names); i++)
		if (l->limits[i])
			rc = arb_box_set_limit(b, limit_names[i], l->limits[i]);
	if (rc == 0 && l->no_tool_managers)
		rc = arb_box_set_no_tool_managers(b, 1);
	if (rc == 0 && l->key_file)
		rc = arb_box_set_api_key_file(b, l->key_file);
	free(backend);
	if (rc < 0) {
		arb_box_free(b);
		return rc;
	}
	lib_box_set_extra(b, extra);
	*out = b;
	return 0;
}

/* The client's argv: EXE FIXED... USER... (caller frees the array, not the strings). */
static char **client_argv(const struct launch *l)
{
	char **v = calloc(2 + l->n_fixed + (size_t)l->n_client_args, sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	v[n++] = l->exe;
	for (size_t i = 0; i < l->n_fixed; i++)
		v[n++] = l->fixed_args[i];
	for (int i = 0; i < l->n_client_args; i++)
		v[n++] = l->client_args[i];
	return v;
}

int launch_run(const struct launch_client *c, int argc, char **argv, void *global)
{
	struct cli_global *g = global;
	struct cli_cmd cmd = {c->name, NULL, NULL, NULL, c->usage, NULL};
	struct launch l = {.client = c, .tcp_fd = -1, .tcp_tls_fd = -1};
	struct lib_box_extra extra = {apply_extra, &l, NULL, -1, -1, NULL};
	arb_project *p = NULL;
	arb_box *box = NULL;
	char **argv_box = NULL;
	int status;

	status = parse(g, &cmd, argc, argv, &l);
	if (status != -1)
		goto out;
	if (core_ws_name_check(l.name) < 0) {
		status = cli_usage_error(c->name, "%s", util_err_msg());
		goto out;
	}
	/* --net: the proxy's port on the host's loopback is known before the client's config. */
	if (l.net && proxy_listen_loopback(0, &l.tcp_fd, &l.tcp_port) < 0)
		status = cli_fail_lib();
	else
		status = find_client(&l);
	if (status == CLI_OK)
		status = client_mount_root(&l);
	if (status == CLI_OK)
		status = host_home(&l);
	if (status == CLI_OK && c->resolve && c->resolve(&l) < 0)
		status = cli_fail_lib();
	if (status == CLI_OK)
		status = choose_auth(&l);
	if (status == CLI_OK && c->prepare(&l) < 0)
		status = cli_fail_lib();
	if (status == CLI_OK && launch_mcp(&l, g->workdir) < 0)
		status = cli_fail(CLI_USAGE, "%s: %s", c->name, util_err_msg());
	if (status == CLI_OK)
		status = check_backend(&l);
	if (status == CLI_OK && l.auth == LAUNCH_AUTH_LOGIN)
		extra.login = &l.login;
	extra.tcp_fd = l.tcp_fd;
	extra.tcp_tls_fd = l.tcp_tls_fd;
	extra.tcp_backend = l.backend;
	if (status == CLI_OK)
		status = ensure_workspace(g, &l);
	if (status != CLI_OK)
		goto out;
	if (!(argv_box = client_argv(&l))) {
		status = cli_fail(CLI_ERR, "out of memory");
		goto out;
	}
	if (arb_project_open(&p, g->workdir) < 0) {
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
		goto out;
	}
	if (launch_box(&l, p, &extra, &box) < 0) {
		status = cli_box_fail(c->name);
		goto out;
	}
	if (l.explain)
		explain_auth(&l);
	for (size_t i = 0; i < l.n_mcp_notes; i++)
		fprintf(l.explain ? stdout : stderr, "%smcp: %s\n",
			l.explain ? "" : "arborinth: ", l.mcp_notes[i]);
	status = cli_box_go(box, argv_box, l.explain, c->name);
out:
	arb_box_free(box);
	arb_project_free(p);
	free(argv_box);
	launch_clear(&l);
	return status;
}
