/*
 * agents/claude.c: Claude Code in a box, and what the clients share (model names, the box's
 * home folders; agents/codex.c and opencode.c are the others). Every client gets its
 * base URL pointed at the in-box relay and the box's placeholder as its key (from the
 * proxy), its config and state under the workspace's home ($HOME in the box, so sessions
 * persist per workspace), update checks and telemetry off, and the host's model choice
 * imported when the user gave none. Host credential files are never read nor mounted: only
 * settings files that hold no secrets are read, and only the model is taken from them.
 */
#include "agents/agents_internal.h"

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
int launch_home_dir(struct jail_box *b, const char *sub, const char *client, char **dir)
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

static int claude_box(struct launch *l, struct jail_box *b, struct proxy_proc *px)
{
	char *dir = NULL;
	int rc = launch_home_dir(b, ".claude", "Claude Code", &dir);

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
					      ? lib_proxy_placeholder(px, l->backend)
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
