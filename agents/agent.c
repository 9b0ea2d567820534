/*
 * agents/agent.c: coding agents' clients in a box (arb_agent_*, arborinth.h): `arborinth
 * claude|codex|opencode` on the library. A launch finds the client on the host, chooses its
 * credential (a key or the host's login, checked before anything is created), imports the
 * host's settings and MCP servers (the client's own file says which: agents/claude.c,
 * agents/opencode.c, agents/mcp.c), creates the workspace when missing, and runs the
 * client in a box with the backend it needs on the credential proxy, bound read-only at its
 * host path.
 */
#include "agents/agents_internal.h"

#include <errno.h>
#include <fcntl.h>
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

static const char *const limit_names[] = {"timeout", "memory", "cpus", "pids", "inotify"};

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

int launch_write_box_login(const struct launch *l, struct proxy_proc *px, const char *sub,
			   const char *name)
{
	const struct proxy_ready_backend *rb =
	    proxy_ready_backend(proxy_proc_ready(px), l->backend);
	int rc = !l->ws_home		 ? util_err(-EINVAL, "no workspace home")
		 : !rb || !rb->login_box ? util_err(-ENOENT, "backend %s has no login", l->backend)
					 : 0;

	rc = rc ?: lib_home_write(l->ws_home, sub, name, rb->login_box);
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

/* The client's real path: --client, else `program` on the host PATH. */
static int find_client(struct launch *l)
{
	const struct launch_client *c = l->client;
	char real[PATH_MAX];

	if (l->client_path) {
		if (access(l->client_path, X_OK) < 0 || !realpath(l->client_path, real))
			return util_err(-ENOENT, "%s: --client %s is not an executable file (%s)",
					c->name, l->client_path, strerror(errno));
	} else {
		char *found = util_which(c->program);

		if (found && !realpath(found, real)) {
			free(found);
			found = NULL;
		}
		if (!found)
			return util_err(-ENOENT,
					"%s: %s ('%s') is not on PATH; install it (%s) or give "
					"--client PATH",
					c->name, c->title, c->program, c->install);
		free(found);
	}
	l->exe = strdup(real);
	return l->exe ? 0 : util_err(-ENOMEM, "out of memory");
}

/*
 * What to bind read-only so the client runs in the box: nothing under /usr (the box's
 * root shows it read-only); inside an npm tree the node_modules folder holding it
 * (its package and its platform package next to it); else the file itself.
 */
static int client_mount_root(struct launch *l)
{
	char *nm;

	if (util_str_has_prefix(l->exe, "/usr/"))
		return 0;
	nm = strstr(l->exe, "/node_modules/");
	l->mount_root =
	    nm ? strndup(l->exe, (size_t)(nm - l->exe) + strlen("/node_modules")) : strdup(l->exe);
	return l->mount_root ? 0 : util_err(-ENOMEM, "out of memory");
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
		return util_err(-EINVAL, "%s: no absolute $HOME", l->client->name);
	l->host_home = strdup(h);
	return l->host_home ? 0 : util_err(-ENOMEM, "out of memory");
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
	if (rc == 0 && l->vertex) { /* the token is minted from the host's ADC */
		proxy_backend_free(pb);
		l->auth = LAUNCH_AUTH_KEY;
		return 0;
	}
	if (rc < 0)
		return util_err(rc, "%s: %s", c->name, util_err_msg());
	l->key_env = strdup(proxy_backend_key_env(pb));
	proxy_backend_free(pb);
	if (!l->key_env)
		return util_err(-ENOMEM, "out of memory");
	env = getenv(l->key_env);
	key_given = l->key_file || (env && *env) || l->key_source;
	if (c->login_kind >= 0 && !(l->login_path = c->login_file(l)))
		return util_err(-ENOMEM, "out of memory");
	if (l->auth_opt)
		l->auth = !strcmp(l->auth_opt, "login")	 ? LAUNCH_AUTH_LOGIN
			  : !strcmp(l->auth_opt, "none") ? LAUNCH_AUTH_NONE
							 : LAUNCH_AUTH_KEY;
	else if (!key_given && l->login_path && access(l->login_path, F_OK) == 0)
		l->auth = LAUNCH_AUTH_LOGIN;
	else if (!key_given && l->login_path)
		return util_err(-ENOKEY,
				"%s: no credential: no API key ($%s or --api-key-file) and no %s "
				"login at %s; %s, or give a key",
				c->name, l->key_env, c->title, l->login_path, c->login_cmd);
	if (l->auth == LAUNCH_AUTH_KEY && !key_given && l->key_hint)
		return util_err(-ENOKEY,
				"%s: no credential for %s: no API key ($%s or --api-key-file)%s; "
				"--no-upstream-auth for a server that needs none",
				c->name, l->backend, l->key_env, l->key_hint);
	if (l->auth == LAUNCH_AUTH_LOGIN) {
		l->backend = c->login_backend;
		l->login = (struct lib_proxy_login){c->login_backend, c->login_kind, l->login_path,
						    l->token_url};
	}
	return 0;
}

/* What --explain says of the credential (never a secret). */
static char *credential_note(const struct launch *l)
{
	if (l->vertex)
		return util_asprintf("credential: Google access token minted on the host from %s "
				     "(the box gets none)",
				     getenv("GOOGLE_APPLICATION_CREDENTIALS")
					 ? getenv("GOOGLE_APPLICATION_CREDENTIALS")
					 : "~/.config/gcloud/application_default_credentials.json");
	if (l->auth == LAUNCH_AUTH_LOGIN)
		return util_asprintf("credential: %s login from %s (refreshed on the host; the box "
				     "gets placeholders only)",
				     l->client->title, l->login_path);
	if (l->auth == LAUNCH_AUTH_NONE)
		return strdup("credential: none (--auth none: the upstream gets no credential)");
	if (l->key_file)
		return util_asprintf("credential: API key from %s (--api-key-file)", l->key_file);
	if (l->key_source)
		return util_asprintf("credential: API key from %s", l->key_source);
	return util_asprintf("credential: API key from the host's $%s", l->key_env);
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
	struct proxy_proc *px = NULL;
	int rc = spec ? lib_proxy_start(&px, NULL, NULL, &po) : util_err(-ENOMEM, "out of memory");

	lib_proxy_stop(px);
	free(spec);
	return rc < 0 ? util_err(rc, "%s: %s", l->client->name, util_err_msg()) : 0;
}

/* A launch: an upstream that cannot be reached is said at once, before NAME is made. */
static int upstream_reach(const struct launch *l)
{
	char *spec = launch_backend_spec(l);
	int rc = spec ? lib_proxy_reach(spec) : util_err(-ENOMEM, "out of memory");

	free(spec);
	return rc < 0 ? util_err(rc, "%s: %s", l->client->name, util_err_msg()) : 0;
}

/*
 * Creates NAME at --rev (default HEAD) when missing; with --rev, an existing one must match.
 * The upstream is checked after that, before NAME is made.
 */
static int ensure_workspace(struct launch *l)
{
	struct core_project *p = l->project->core;
	struct core_ws *ws = NULL;
	git_oid oid;
	char hex[GIT_OID_HEXSZ + 1];
	bool made = false;
	int rc = core_ws_get(p, l->name, &ws);

	if (rc == -ENOENT && l->explain &&
	    (rc = core_rev_resolve(p, l->rev ? l->rev : "HEAD", &oid)) == 0) {
		git_oid_tostr(hex, sizeof(hex), &oid);
		rc = util_err(-ENOENT,
			      "'%s' does not exist yet: a launch creates it at %s (%.12s); "
			      "--explain creates nothing",
			      l->name, l->rev ? l->rev : "HEAD", hex);
	} else if (rc == -ENOENT && !l->explain && (rc = upstream_reach(l)) == 0) {
		rc = core_ws_create(p, l->name, l->rev, &ws);
		made = true;
	} else if (rc == 0 && l->rev && (rc = core_rev_resolve(p, l->rev, &oid)) == 0) {
		git_oid_tostr(hex, sizeof(hex), &oid);
		if (strcmp(hex, ws->base_commit))
			rc = util_err(
			    -EEXIST,
			    "workspace '%s' exists at %.12s, not at --rev %s (%.12s); --rev "
			    "only chooses the base of a new one",
			    l->name, ws->base_commit, l->rev, hex);
	}
	if (rc == 0 && ws && !made && !l->explain)
		rc = upstream_reach(l);
	if (rc == 0 && ws && !(l->ws_home = strdup(ws->home)))
		rc = util_err(-ENOMEM, "out of memory");
	core_ws_free(ws);
	return rc;
}

static int apply_extra(void *ctx, struct jail_box *b, struct proxy_proc *px)
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

/* ---- the public API ---------------------------------------------------------------------- */

struct arb_agent {
	struct launch l;
	struct lib_box_extra extra;
	arb_box *box;
	char **argv;  /* the client's: EXE FIXED... USER... (strings borrowed) */
	char **notes; /* credential and MCP lines, NULL-terminated */
	size_t n_notes;
	int64_t run_ns; /* when arb_agent_run started the client */
};

static const struct launch_client *const clients[] = {&launch_claude, &launch_codex,
						      &launch_opencode};

static void launch_clear(struct launch *l)
{
	free(l->grants);
	free(l->binds);
	free(l->mounts);
	free(l->envs);
	free(l->client_args);
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
	free(l->credential_note);
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
	for (size_t i = 0; i < l->n_owned; i++)
		free(l->owned[i]);
	free(l->owned);
}

/* A copy of value kept with the launch (NULL: out of memory). */
static const char *own(struct launch *l, const char *value)
{
	char **v = realloc(l->owned, (l->n_owned + 1) * sizeof(*v));

	if (!v)
		return NULL;
	l->owned = v;
	return (v[l->n_owned] = strdup(value)) ? v[l->n_owned++] : NULL;
}

/* Appends value (owned by the launch) to a NULL-terminated list. */
static int push(struct launch *l, const char ***list, size_t *n, const char *value)
{
	const char *copy = own(l, value);
	const char **v = copy ? realloc(*list, (*n + 2) * sizeof(*v)) : NULL;

	if (!v)
		return util_err(-ENOMEM, "out of memory");
	*list = v;
	v[(*n)++] = copy;
	v[*n] = NULL;
	return 0;
}

/* An input error: a message, marked as the caller's. */
#define BAD(...) lib_input_err(util_err(-EINVAL, __VA_ARGS__))

int arb_agent_new(arb_agent **out, arb_project *p, const char *client, const char *ws_name)
{
	const struct launch_client *c = NULL;
	arb_agent *a;

	lib_err_reset();
	*out = NULL;
	for (size_t i = 0; i < ARB_ARRAY_LEN(clients); i++)
		if (client && !strcmp(clients[i]->name, client))
			c = clients[i];
	if (!c)
		return BAD("unknown agent client '%s' (claude, codex or opencode)",
			   client ? client : "");
	if (core_ws_name_check(ws_name) < 0)
		return lib_input_err(-EINVAL);
	if (!(a = calloc(1, sizeof(*a))))
		return util_err(-ENOMEM, "out of memory");
	a->l = (struct launch){
	    .client = c, .tcp_fd = -1, .tcp_tls_fd = -1, .project = p, .backend = c->backend};
	if (!(a->l.name = own(&a->l, ws_name))) {
		arb_agent_free(a);
		return util_err(-ENOMEM, "out of memory");
	}
	*out = a;
	return 0;
}

void arb_agent_free(arb_agent *a)
{
	if (!a)
		return;
	arb_box_free(a->box);
	free(a->argv);
	for (size_t i = 0; i < a->n_notes; i++)
		free(a->notes[i]);
	free(a->notes);
	launch_clear(&a->l);
	free(a);
}

static int set_auth(struct launch *l, const char *value, bool flag)
{
	if (flag && l->auth_opt && strcmp(l->auth_opt, "none"))
		return BAD("--no-upstream-auth is --auth none, not --auth %s", l->auth_opt);
	if (!flag && l->auth_opt && strcmp(l->auth_opt, value))
		return BAD("--auth %s conflicts with --%s", value,
			   strcmp(l->auth_opt, "none") ? "auth" : "no-upstream-auth");
	if (!flag && strcmp(value, "login") && strcmp(value, "api-key") && strcmp(value, "none"))
		return BAD("--auth '%s' is not login, api-key or none", value);
	l->auth_opt = flag ? "none" : own(l, value);
	return l->auth_opt ? 0 : util_err(-ENOMEM, "out of memory");
}

static bool http_url(const char *s)
{
	return util_str_has_prefix(s, "http://") || util_str_has_prefix(s, "https://");
}

int arb_agent_set(arb_agent *a, const char *option, const char *value)
{
	struct launch *l = &a->l;
	const char **one = NULL;

	lib_err_reset();
	if (!strcmp(option, "vertex")) {
		if (value)
			return BAD("--vertex takes no value");
		if (strcmp(l->client->name, "claude") && strcmp(l->client->name, "opencode"))
			return BAD("--vertex is for claude and opencode");

		l->vertex = true;
		return 0;
	}
	if (!strcmp(option, "net") || !strcmp(option, "no-tool-managers") ||
	    !strcmp(option, "no-upstream-auth")) {
		if (value)
			return BAD("--%s takes no value", option);
		if (option[0] == 'n' && option[1] == 'e')
			l->net = true;
		else if (!strcmp(option, "no-tool-managers"))
			l->no_tool_managers = true;
		else
			return set_auth(l, NULL, true);
		return 0;
	}
	if (!value)
		return BAD("--%s needs a value", option);
	for (size_t i = 0; i < ARB_ARRAY_LEN(limit_names); i++)
		if (!strcmp(option, limit_names[i])) {
			struct jail_limits lim = {0};
			int64_t ms = 0;

			if (lib_limit_parse(option, value, &lim, &ms) < 0)
				return lib_input_err(-EINVAL);
			l->limits[i] = own(l, value);
			return l->limits[i] ? 0 : util_err(-ENOMEM, "out of memory");
		}
	if (!strcmp(option, "grant"))
		return push(l, &l->grants, &l->n_grants, value);
	if (!strcmp(option, "binds"))
		return push(l, &l->binds, &l->n_binds, value);
	if (!strcmp(option, "mount"))
		return push(l, &l->mounts, &l->n_mounts, value);
	if (!strcmp(option, "env"))
		return push(l, &l->envs, &l->n_envs, value);
	if (!strcmp(option, "auth"))
		return set_auth(l, value, false);
	if (!strcmp(option, "model") && !*value)
		return BAD("--model needs a model name");
	if (!strcmp(option, "provider") && !l->client->resolve)
		return BAD("--provider is only for opencode");
	if ((!strcmp(option, "upstream") || !strcmp(option, "token-url")) && !http_url(value))
		return BAD("--%s '%s' is not an http(s) URL", option, value);
	if (!strcmp(option, "upstream") && strchr(value, ','))
		return BAD("--upstream '%s' must not contain ','", value);
	one = !strcmp(option, "rev")		? &l->rev
	      : !strcmp(option, "client")	? &l->client_path
	      : !strcmp(option, "model")	? &l->model
	      : !strcmp(option, "upstream")	? &l->upstream
	      : !strcmp(option, "api-key-file") ? &l->key_file
	      : !strcmp(option, "token-url")	? &l->token_url
	      : !strcmp(option, "provider")	? &l->provider
						: NULL;
	if (!one)
		return BAD("unknown launcher option '--%s'", option);
	*one = own(l, value);
	return *one ? 0 : util_err(-ENOMEM, "out of memory");
}

int arb_agent_add_arg(arb_agent *a, const char *arg)
{
	struct launch *l = &a->l;
	const char *copy = own(l, arg);
	char **v =
	    copy ? realloc(l->client_args, ((size_t)l->n_client_args + 2) * sizeof(*v)) : NULL;

	lib_err_reset();
	if (!v)
		return util_err(-ENOMEM, "out of memory");
	l->client_args = v;
	v[l->n_client_args++] = (char *)copy;
	v[l->n_client_args] = NULL;
	return 0;
}

/* The rules between options. */
static int check_options(const struct launch *l)
{
	if (l->auth_opt && !strcmp(l->auth_opt, "login") && l->client->login_kind < 0)
		return BAD("%s has no host login to use; give an API key", l->client->title);
	if (l->auth_opt && strcmp(l->auth_opt, "api-key") && l->key_file)
		return BAD("--api-key-file goes with --auth api-key");
	if (l->vertex && l->net && strcmp(l->client->name, "opencode"))
		return BAD("--vertex does not go with --net (Claude Code sends Vertex no "
			   "credential, and the host's loopback is open to every process)");
	return 0;
}

/* The client's argv: EXE FIXED... USER... (strings borrowed from the launch). */
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

static int add_note(arb_agent *a, const char *prefix, const char *text)
{
	char **v = realloc(a->notes, (a->n_notes + 2) * sizeof(*v));

	if (!v)
		return util_err(-ENOMEM, "out of memory");
	a->notes = v;
	v[a->n_notes] = util_asprintf("%s%s", prefix, text);
	if (!v[a->n_notes])
		return util_err(-ENOMEM, "out of memory");
	v[++a->n_notes] = NULL;
	return 0;
}

int arb_agent_prepare(arb_agent *a, int explain)
{
	struct launch *l = &a->l;
	const struct launch_client *c = l->client;
	int rc;

	lib_err_reset();
	if (l->prepared)
		return lib_input_err(util_err(-EALREADY, "the launch is prepared already"));
	l->explain = explain != 0;
	rc = check_options(l);
	if (rc == 0 && l->vertex)
		rc = launch_vertex_resolve(l);
	/* --net: the proxy's port on the host's loopback is known before the client's config. */
	if (rc == 0 && l->net)
		rc = proxy_listen_loopback(0, &l->tcp_fd, &l->tcp_port);
	if (rc == 0)
		rc = find_client(l);
	/* --explain goes on without the client: it says so, and the box runs its bare name. */
	if (rc == -ENOENT && l->explain) {
		rc = add_note(a, "client: missing: ", util_err_msg());
		if (rc == 0 && !(l->exe = strdup(c->program)))
			rc = util_err(-ENOMEM, "out of memory");
	} else if (rc == 0) {
		rc = client_mount_root(l);
	}
	if (rc == 0)
		rc = host_home(l);
	if (rc == 0 && c->resolve)
		rc = c->resolve(l);
	if (rc == 0)
		rc = choose_auth(l);
	/* Nor without a credential: the box is shown as with --auth none, and it says so. */
	if (rc == -ENOKEY && l->explain) {
		rc = add_note(a, "credential: missing: ", util_err_msg());
		l->auth = LAUNCH_AUTH_NONE;
		l->missing_credential = true;
	}
	if (rc == 0)
		rc = c->prepare(l);
	if (rc == 0 && (rc = launch_mcp(l)) < 0 && rc != -ENOMEM)
		rc = lib_input_err(util_err(rc, "%s: %s", c->name, util_err_msg()));
	if (rc == 0)
		rc = check_backend(l);
	if (rc == 0)
		rc = ensure_workspace(l);
	/* Nor for a workspace that does not exist yet: shown as the launch would create it. */
	if (rc == -ENOENT && l->explain)
		rc = add_note(a, "workspace: ", util_err_msg());
	if (rc < 0)
		return rc;
	a->extra = (struct lib_box_extra){
	    apply_extra,   l,	      l->auth == LAUNCH_AUTH_LOGIN ? &l->login : NULL, l->tcp_fd,
	    l->tcp_tls_fd, l->backend};
	a->extra.plan = l->explain && !l->ws_home;
	a->extra.plan_rev = l->rev;
	if (!l->missing_credential && !(l->credential_note = credential_note(l)))
		return util_err(-ENOMEM, "out of memory");
	if (!(a->argv = client_argv(l)))
		return util_err(-ENOMEM, "out of memory");
	rc = l->credential_note ? add_note(a, "", l->credential_note) : 0;
	for (size_t i = 0; rc == 0 && i < l->n_mcp_notes; i++)
		rc = add_note(a, "mcp: ", l->mcp_notes[i]);
	if (rc == 0)
		rc = launch_box(l, l->project, &a->extra, &a->box);
	if (rc == 0)
		l->prepared = true;
	return rc;
}

const char *const *arb_agent_notes(const arb_agent *a, size_t *n)
{
	*n = a->n_notes;
	return (const char *const *)a->notes;
}

int arb_agent_explain(char **out, arb_agent *a)
{
	lib_err_reset();
	*out = NULL;
	if (!a->l.prepared)
		return lib_input_err(util_err(-EINVAL, "the launch is not prepared"));
	return arb_box_explain(out, a->box, a->argv);
}

int arb_agent_run(struct arb_run_result *res, arb_agent *a)
{
	lib_err_reset();
	*res = (struct arb_run_result){0};
	if (!a->l.prepared || a->l.explain)
		return lib_input_err(util_err(-EINVAL, "the launch is not prepared to run"));
	a->run_ns = util_now_ns();
	return arb_box_run(res, a->box, a->argv);
}

int arb_agent_resume_args(char **out, const arb_agent *a)
{
	*out = a->run_ns ? launch_resume_args(&a->l, a->run_ns) : NULL;
	return *out ? 1 : 0;
}
