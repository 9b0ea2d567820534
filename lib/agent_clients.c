/*
 * lib/agent_clients.c: what each agent client needs in its box. Every client gets its
 * base URL pointed at the in-box relay and the box's placeholder as its key (from the
 * proxy), its config and state under the workspace's home ($HOME in the box, so sessions
 * persist per workspace), update checks and telemetry off, and the host's model choice
 * imported when the user gave none. Host credential files are never read nor mounted: only
 * settings files that hold no secrets are read, and only the model is taken from them.
 */
#include "lib/agent_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jail/jail.h"
#include "proxy/proxy.h"

bool launch_model_ok(const char *m)
{
	return m && *m && strlen(m) < 200 &&
	       strspn(m,
		      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@[]") ==
		   strlen(m);
}

char *launch_json_file_string(const char *path, const char *key)
{
	json_t *root = json_load_file(path, JSON_ALLOW_NUL, NULL);
	const char *v = root ? json_string_value(json_object_get(root, key)) : NULL;
	char *out = v && launch_model_ok(v) ? strdup(v) : NULL;

	json_decref(root);
	return out;
}

int launch_set_model(struct launch *l, char *model)
{
	free(l->model_import);
	l->model_import = model;
	return 0;
}

/*
 * Makes sure $HOME/SUB exists in the box (bwrap --dir, in the workspace's home, so it
 * persists); the jail refuses to start when the box planted a symlink on that path.
 * Sets *dir (caller frees) to its path.
 */
static int home_dir(struct jail_box *b, const char *sub, const char *client, char **dir)
{
	char *why = util_asprintf("%s's config and state, in the workspace's home", client);
	int rc;

	*dir = util_path_join(jail_box_home(b), sub);
	rc = *dir && why ? jail_box_add_default_mount(b, JAIL_MOUNT_DIR, NULL, *dir, why)
			 : util_err(-ENOMEM, "out of memory");
	free(why);
	return rc;
}

/* ---- Claude Code ------------------------------------------------------------------------ */

/*
 * --net with a key: no key variable in the box; Claude Code reads the session's token from
 * the key file through an apiKeyHelper given on its command line (the path only).
 */
static int claude_key_helper(struct launch *l)
{
	char *file = launch_key_file(l), *q = file ? util_shell_quote(file) : NULL, *cmd, *text;
	json_t *j;
	int rc;

	cmd = q ? util_asprintf("cat %s", q) : NULL;
	j = cmd ? json_pack("{s:s}", "apiKeyHelper", cmd) : NULL;
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	rc = text ? launch_fixed_arg(l, "--settings") : util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = launch_fixed_arg(l, text);
	free(text);
	json_decref(j);
	free(cmd);
	free(q);
	free(file);
	return rc;
}

static int claude_prepare(struct launch *l)
{
	const char *env = getenv("ANTHROPIC_MODEL");
	char *settings;

	if (l->net && l->auth != LAUNCH_AUTH_LOGIN && !l->vertex && claude_key_helper(l) < 0)
		return -ENOMEM;

	if (l->model)
		return launch_model_ok(l->model)
			   ? launch_set_model(l, strdup(l->model))
			   : util_err(-EINVAL, "claude: bad --model '%s'", l->model);
	if (env && launch_model_ok(env))
		return launch_set_model(l, strdup(env));
	/* ~/.claude/settings.json holds preferences; the credentials are in another file. */
	settings = util_asprintf("%s/.claude/settings.json", l->host_home);
	if (!settings)
		return util_err(-ENOMEM, "out of memory");
	launch_set_model(l, launch_json_file_string(settings, "model"));
	free(settings);
	return 0;
}

/* Claude Code remembers an approved API key by its last 20 characters. */
#define CLAUDE_KEY_TAIL 20

/*
 * The box's .claude.json (Claude Code's own state, in CLAUDE_CONFIG_DIR): onboarding done, the
 * host's theme when it has one, and with a key in the environment this session's placeholder
 * approved (else the client asks whether to use "a custom API key" and defaults to No).
 * Nothing else of the host's file (it names the account).
 */
static int claude_box_config(const struct launch *l, const char *ph)
{
	const char *dir = getenv("CLAUDE_CONFIG_DIR");
	char *host = dir && dir[0] == '/' ? util_path_join(dir, ".claude.json")
					  : util_path_join(l->host_home, ".claude.json");
	json_t *h = host ? json_load_file(host, 0, NULL) : NULL;
	const char *theme = json_string_value(json_object_get(h, "theme"));
	json_t *add = json_pack("{s:b}", "hasCompletedOnboarding", 1);
	int rc;

	if (add && theme && launch_model_ok(theme))
		json_object_set_new(add, "theme", json_string(theme));
	if (add && ph && strlen(ph) > CLAUDE_KEY_TAIL)
		json_object_set_new(add, "customApiKeyResponses",
				    json_pack("{s:[s], s:[]}", "approved",
					      ph + strlen(ph) - CLAUDE_KEY_TAIL, "rejected"));
	rc = add ? launch_box_json_merge(l, ".claude", ".claude.json", add)
		 : util_err(-ENOMEM, "out of memory");
	json_decref(add);
	json_decref(h);
	free(host);
	return rc;
}

static int claude_box(struct launch *l, struct jail_box *b, struct proxy *px)
{
	char *dir = NULL;
	int rc = home_dir(b, ".claude", "Claude Code", &dir);

	if (rc == 0)
		rc = lib_box_env(b, "CLAUDE_CONFIG_DIR", dir);
	if (rc == 0)
		rc = lib_box_env(b, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
	if (rc == 0)
		rc = lib_box_env(b, "DISABLE_AUTOUPDATER", "1");
	if (rc == 0)
		rc = lib_box_env(b, "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL", "1");
	if (rc == 0)
		rc = lib_box_env(b, "DISABLE_TELEMETRY", "1");
	if (rc == 0)
		rc = lib_box_env(b, "DISABLE_ERROR_REPORTING", "1");
	if (rc == 0 && l->model_import)
		rc = lib_box_env(b, "ANTHROPIC_MODEL", l->model_import);
	if (rc == 0 && l->vertex)
		rc = launch_vertex_claude_env(l, b);
	/* A subscription login: the box's own credentials file, with placeholders. */
	if (rc == 0 && l->auth == LAUNCH_AUTH_LOGIN && px && !l->explain)
		rc = launch_write_box_login(l, px, ".claude", ".credentials.json");
	/* First-run screens: the box cannot pass their check of api.anthropic.com. */
	if (rc == 0 && !l->explain)
		rc = claude_box_config(l, l->auth == LAUNCH_AUTH_KEY && !l->net && !l->vertex && px
					      ? proxy_placeholder(px, l->backend)
					      : NULL);
	free(dir);
	return rc;
}

/* $CLAUDE_CONFIG_DIR/.credentials.json, else ~/.claude/.credentials.json. */
static char *claude_login_file(const struct launch *l)
{
	const char *dir = getenv("CLAUDE_CONFIG_DIR");

	return dir && dir[0] == '/' ? util_path_join(dir, ".credentials.json")
				    : util_asprintf("%s/.claude/.credentials.json", l->host_home);
}

/* ---- Codex ------------------------------------------------------------------------------ */

/* The in-box port of the ChatGPT backend over TLS (the plain one is 8715). */
#define CODEX_TLS_PORT 8716

/*
 * `KEY = "VALUE"` at the top level of a Codex config.toml (before any table), for the
 * non-secret KEY; NULL when absent or not a plain string.
 */
static char *toml_top_string(const char *path, const char *key)
{
	char *text = NULL, *out = NULL;
	size_t len = 0, klen = strlen(key);

	if (util_read_file(path, &text, &len) < 0)
		return NULL;
	for (char *line = text, *next; line && !out; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t");
		if (*line == '[')
			break;
		if (strncmp(line, key, klen))
			continue;
		char *p = line + klen;

		p += strspn(p, " \t");
		if (*p++ != '=')
			continue;
		p += strspn(p, " \t");
		if (*p != '"')
			continue;
		char *end = strchr(p + 1, '"');

		if (!end)
			continue;
		*end = '\0';
		if (launch_model_ok(p + 1))
			out = strdup(p + 1);
	}
	free(text);
	return out;
}

/* $CODEX_HOME/NAME, else ~/.codex/NAME (caller frees). */
static char *codex_host_file(const struct launch *l, const char *name)
{
	const char *dir = getenv("CODEX_HOME");

	return dir && dir[0] == '/' ? util_path_join(dir, name)
				    : util_asprintf("%s/.codex/%s", l->host_home, name);
}

/* `-c KEY=VALUE` (kv owned, NULL when it could not be made): overrides Codex's config. */
static int codex_config(struct launch *l, char *kv)
{
	int rc = kv ? launch_fixed_arg(l, "-c") : util_err(-ENOMEM, "out of memory");

	if (rc == 0)
		rc = launch_fixed_arg(l, kv);
	free(kv);
	return rc;
}

static int codex_prepare(struct launch *l)
{
	char *config = codex_host_file(l, "config.toml"), *effort = NULL;
	struct proxy_backend *pb = NULL;
	bool login = l->auth == LAUNCH_AUTH_LOGIN;
	unsigned port = 0;
	uint16_t tls_port = 0;
	int rc = 0;

	if (!config)
		return util_err(-ENOMEM, "out of memory");
	if (l->model && !launch_model_ok(l->model))
		rc = util_err(-EINVAL, "codex: bad --model '%s'", l->model);
	else
		launch_set_model(l, l->model ? strdup(l->model) : toml_top_string(config, "model"));
	effort = toml_top_string(config, "model_reasoning_effort");
	if (rc == 0)
		rc = proxy_backend_parse(&pb, l->backend);
	if (rc == 0)
		port = l->tcp_port ? l->tcp_port : proxy_backend_port(pb);
	proxy_backend_free(pb);
	/*
	 * With a ChatGPT login Codex calls its ChatGPT backend (workspace routing, usage) over
	 * https only: the proxy serves that backend over TLS too, with a CA of its own that
	 * Codex trusts (CODEX_CA_CERTIFICATE), at the relay's next port or, with --net, a
	 * listener of this session.
	 */
	if (rc == 0 && login) {
		char tp[8];

		tls_port = CODEX_TLS_PORT;
		if (l->net && (rc = proxy_listen_loopback(0, &l->tcp_tls_fd, &tls_port)) < 0)
			goto out;
		snprintf(tp, sizeof(tp), "%u", tls_port);
		rc = launch_backend_opt(l, "tls-port", tp);
	}
	/*
	 * Codex ignores OPENAI_BASE_URL, and its built-in provider opens a WebSocket first,
	 * which the proxy refuses: a provider of our own, at the relay (the backend's port; the
	 * launcher never overrides it), over plain HTTP streaming, keyed by OPENAI_API_KEY. With
	 * a ChatGPT login: the same provider at the relay's copy of ChatGPT's backend,
	 * authenticated by the login (auth.json in CODEX_HOME, placeholders only), and ChatGPT's
	 * own calls (workspace routing, usage) at the relay too.
	 */
	if (rc == 0)
		rc = codex_config(
		    l,
		    login ? util_asprintf("model_providers.arborinth={name=\"arborinth credential "
					  "proxy\",base_url=\"http://127.0.0.1:%u/backend-api/"
					  "codex\",wire_api=\"responses\",requires_openai_auth="
					  "true,supports_websockets=false}",
					  port)
			  : util_asprintf("model_providers.arborinth={name=\"arborinth credential "
					  "proxy\",base_url=\"http://127.0.0.1:%u/v1\",%s,wire_api="
					  "\"responses\",supports_websockets=false}",
					  port,
					  l->net ? "requires_openai_auth=true"
						 : "env_key=\"OPENAI_API_KEY\""));
	if (rc == 0)
		rc = codex_config(l, strdup("model_provider=\"arborinth\""));
	if (rc == 0 && login)
		rc = codex_config(l, util_asprintf("chatgpt_base_url=\"https://127.0.0.1:%u/"
						   "backend-api/\"",
						   tls_port));
	if (rc == 0)
		rc = codex_config(l, strdup("check_for_update_on_startup=false"));
	/* ChatGPT's apps (connectors) come from its MCP directory, which the policy refuses. */
	if (rc == 0 && login)
		rc = codex_config(l, strdup("features.apps=false"));
	/* Values are TOML strings. */
	if (rc == 0 && l->model_import)
		rc = codex_config(l, util_asprintf("model=\"%s\"", l->model_import));
	if (rc == 0 && effort)
		rc = codex_config(l, util_asprintf("model_reasoning_effort=\"%s\"", effort));
out:
	free(effort);
	free(config);
	return rc;
}

static int codex_box(struct launch *l, struct jail_box *b, struct proxy *px)
{
	const char *ph = px ? proxy_placeholder(px, l->backend) : NULL;
	char *dir = NULL;
	int rc = home_dir(b, ".codex", "Codex", &dir);

	if (rc == 0)
		rc = lib_box_env(b, "CODEX_HOME", dir);
	if (rc == 0 && l->auth == LAUNCH_AUTH_LOGIN) {
		/* The login's placeholders in auth.json; its refreshes answered by the proxy. */
		size_t n = 0;
		const uint16_t *ports = px ? proxy_ports(px, &n) : NULL;
		char *url = util_asprintf("http://127.0.0.1:%u/oauth/token", n ? ports[0] : 0);

		rc = url ? lib_box_env(b, "CODEX_REFRESH_TOKEN_URL_OVERRIDE", url)
			 : util_err(-ENOMEM, "out of memory");
		free(url);
		/* The proxy's CA, for the ChatGPT backend over TLS (lib_proxy_box_setup). */
		url = lib_proxy_ca_file(jail_box_home(b));
		rc = rc
			 ?: url ? lib_box_env(b, "CODEX_CA_CERTIFICATE", url)
				: util_err(-ENOMEM, "out of memory");
		free(url);
		if (rc == 0 && px && !l->explain)
			rc = launch_write_box_login(l, px, ".codex", "auth.json");
	} else if (rc == 0 && ph && l->net) {
		/* --net: the session's token in the box's auth.json, as an API-key login. */
		json_t *j = json_pack("{s:s, s:s}", "auth_mode", "apikey", "OPENAI_API_KEY", ph);
		char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;

		rc = !text	  ? util_err(-ENOMEM, "out of memory")
		     : l->explain ? 0
				  : lib_home_write(l->ws_home, ".codex", "auth.json", text);
		if (text)
			explicit_bzero(text, strlen(text));
		free(text);
		json_decref(j);
	} else if (rc == 0 && ph) {
		/* `codex exec` reads CODEX_API_KEY; the proxy sets OPENAI_API_KEY. */
		rc = lib_box_env(b, "CODEX_API_KEY", ph);
	}
	free(dir);
	return rc;
}

static char *codex_login_file(const struct launch *l)
{
	return codex_host_file(l, "auth.json");
}

/* ---- the table -------------------------------------------------------------------------- */

const struct launch_client launch_claude = {
    .name = "claude",
    .title = "Claude Code",
    .program = "claude",
    .install = "npm install -g @anthropic-ai/claude-code",
    .backend = "anthropic",
    .prepare = claude_prepare,
    .box = claude_box,
    .login_kind = PROXY_LOGIN_CLAUDE,
    .login_backend = "anthropic",
    .login_file = claude_login_file,
    .login_cmd = "run 'claude auth login' (or /login inside claude) on the host",
};
const struct launch_client launch_codex = {
    .name = "codex",
    .title = "Codex",
    .program = "codex",
    .install = "npm install -g @openai/codex",
    .backend = "openai",
    .prepare = codex_prepare,
    .box = codex_box,
    .login_kind = PROXY_LOGIN_CODEX,
    .login_backend = "chatgpt",
    .login_file = codex_login_file,
    .login_cmd = "run 'codex login' on the host",
};
