/*
 * agents/mcp.c: the host client's local (stdio) MCP servers, started inside the box.
 *
 * The launcher reads the MCP servers the host's client declares (Claude Code: ~/.claude.json
 * user scope and the origin project's local scope; Codex: mcp_servers of config.toml;
 * OpenCode: mcp of its merged config) and hands the box's client those local ones a bind
 * file's mcp = [...] names (server name, command as written, its full path, or "*"). The
 * client then starts them in the box, where they inherit the box's filesystem, its cleared
 * environment and its network namespace. Never passed: remote servers (they and their auth
 * state stay on the host), disabled ones, the env values of a declaration (a host config's
 * env often holds a token; set what a server needs in a bind file's env), and servers whose
 * command lives where the box cannot see it (under the real $HOME without a bind, /tmp,
 * /run). The launcher says which it passed and which it withheld, and why.
 */
#include "agents/agents_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binds/binds.h"
#include "core/core.h"

struct mcp_decl {
	const char *name;
	const char *command; /* NULL for a remote server */
	json_t *args;	     /* borrowed strings: array */
	json_t *env;	     /* borrowed object (values never used) or NULL */
	json_t *decl;	     /* borrowed: the whole declaration */
	bool remote, disabled;
	const char *source; /* the host file that declares it */
	char *full;	    /* owned: the command's full path on the host, or NULL */
};

/* ---- reading the host's declarations ------------------------------------------------ */

struct mcp_list {
	struct mcp_decl *v;
	size_t n;
	json_t *keep; /* what the borrowed members live in */
};

static int list_add(struct mcp_list *ls, const struct mcp_decl *d)
{
	struct mcp_decl *v;

	for (size_t i = 0; i < ls->n; i++)
		if (!strcmp(ls->v[i].name, d->name)) {
			ls->v[i] = *d; /* a narrower scope wins, as in the clients */
			return 0;
		}
	v = realloc(ls->v, (ls->n + 1) * sizeof(*v));
	if (!v)
		return util_err(-ENOMEM, "out of memory");
	ls->v = v;
	ls->v[ls->n++] = *d;
	return 0;
}

/* A copy of s that lives as long as the list (NULL: out of memory). */
static const char *keep_string(struct mcp_list *ls, const char *s)
{
	json_t *j = s ? json_string(s) : NULL;

	if (!j || json_array_append_new(ls->keep, j) < 0)
		return NULL;
	return json_string_value(j);
}

/* Claude Code's mcpServers object: stdio (type absent or "stdio") or remote (http, sse, ws). */
static int claude_servers(struct mcp_list *ls, json_t *servers, const char *source)
{
	const char *name;
	json_t *s;
	int rc = 0;

	json_object_foreach(servers, name, s)
	{
		const char *type = json_string_value(json_object_get(s, "type"));
		struct mcp_decl d = {.name = name, .source = source, .decl = s};

		if (!json_is_object(s))
			continue;
		d.command = json_string_value(json_object_get(s, "command"));
		d.remote = (type && strcmp(type, "stdio")) || !d.command;
		if (d.remote)
			d.command = NULL;
		d.args = json_object_get(s, "args");
		d.env = json_object_get(s, "env");
		if ((rc = list_add(ls, &d)) < 0)
			break;
	}
	return rc;
}

static int claude_decls(const struct launch *l, struct mcp_list *ls, const char *project)
{
	const char *dir = getenv("CLAUDE_CONFIG_DIR");
	char *path = dir && dir[0] == '/' ? util_path_join(dir, ".claude.json")
					  : util_path_join(l->host_home, ".claude.json");
	json_t *root = path ? json_load_file(path, 0, NULL) : NULL;
	int rc = path ? 0 : util_err(-ENOMEM, "out of memory");

	json_t *local =
	    project ? json_object_get(json_object_get(root, "projects"), project) : NULL;
	const char *src = keep_string(ls, path);

	if (rc == 0 && root && src && json_array_append(ls->keep, root) == 0) {
		rc = claude_servers(ls, json_object_get(root, "mcpServers"), src);
		if (rc == 0)
			rc = claude_servers(ls, json_object_get(local, "mcpServers"), src);
	}
	json_decref(root);
	free(path);
	return rc;
}

static int codex_decls(const struct launch *l, struct mcp_list *ls)
{
	const char *dir = getenv("CODEX_HOME");
	char *path = dir && dir[0] == '/' ? util_path_join(dir, "config.toml")
					  : util_asprintf("%s/.codex/config.toml", l->host_home);
	char *text = NULL;
	size_t len = 0;
	json_t *root = NULL, *servers, *s;
	const char *name, *src;
	int rc;

	if (!path)
		return util_err(-ENOMEM, "out of memory");
	if (util_read_file(path, &text, &len) < 0) {
		free(path);
		return 0; /* no config: no servers */
	}
	rc = util_toml_parse(path, text, len, &root);
	explicit_bzero(text, len);
	free(text);
	if (rc < 0) {
		free(path);
		return rc == -ENOMEM
			   ? rc
			   : util_err(rc, "codex: cannot read its MCP servers: %s", util_err_msg());
	}
	json_array_append_new(ls->keep, root);
	src = keep_string(ls, path);
	free(path);
	if (!src)
		return util_err(-ENOMEM, "out of memory");
	servers = json_object_get(root, "mcp_servers");
	json_object_foreach(servers, name, s)
	{
		struct mcp_decl d = {.name = name, .source = src, .decl = s};

		if (!json_is_object(s))
			continue;
		d.command = json_string_value(json_object_get(s, "command"));
		d.remote = !d.command;
		d.disabled = json_is_false(json_object_get(s, "enabled"));
		d.args = json_object_get(s, "args");
		d.env = json_object_get(s, "env");
		if ((rc = list_add(ls, &d)) < 0)
			return rc;
	}
	return 0;
}

/* OpenCode: {type: "local", command: [CMD, ARGS...], environment} or {type: "remote", url}. */
static int opencode_decls(const struct launch *l, struct mcp_list *ls)
{
	char *source = NULL;
	json_t *root = launch_opencode_host_config(l, &source), *s;
	const char *name, *src;
	int rc = 0;

	if (!root)
		return util_err(-ENOMEM, "out of memory");
	json_array_append_new(ls->keep, root);
	src = keep_string(ls, source ? source : "OpenCode's config");
	free(source);
	if (!src)
		return util_err(-ENOMEM, "out of memory");
	json_object_foreach(json_object_get(root, "mcp"), name, s)
	{
		const char *type = json_string_value(json_object_get(s, "type"));
		json_t *cmd = json_object_get(s, "command");
		struct mcp_decl d = {.name = name, .source = src, .decl = s};

		if (!json_is_object(s))
			continue;
		d.remote = !type || strcmp(type, "local") || !json_is_array(cmd) ||
			   !json_is_string(json_array_get(cmd, 0));
		if (!d.remote) {
			d.command = json_string_value(json_array_get(cmd, 0));
			d.args = cmd; /* from index 1 */
		}
		d.disabled = json_is_false(json_object_get(s, "enabled"));
		d.env = json_object_get(s, "environment");
		if ((rc = list_add(ls, &d)) < 0)
			break;
	}
	return rc;
}

/* ---- choosing ---------------------------------------------------------------------------- */

/* "~" and "~/..." against the host's home (caller frees); other strings copied. */
static char *expand_home(const struct launch *l, const char *s)
{
	if (!strcmp(s, "~"))
		return strdup(l->host_home);
	if (util_str_has_prefix(s, "~/"))
		return util_path_join(l->host_home, s + 2);
	return strdup(s);
}

/* The command's full path on the host (caller frees), or NULL when it is not found. */
static char *command_path(const struct launch *l, const char *cmd)
{
	char *p = expand_home(l, cmd), *real;

	if (!p || p[0] == '/') {
		real = p ? realpath(p, NULL) : NULL;
		if (real) {
			free(p);
			return real;
		}
		return p;
	}
	free(p);
	return strchr(cmd, '/') ? NULL : util_which(cmd);
}

static bool selected(const struct launch *l, const struct binds_mcp *sel, size_t n,
		     const struct mcp_decl *d, const char *full)
{
	for (size_t i = 0; i < n; i++) {
		char *x;
		bool hit;

		if (!strcmp(sel[i].select, "*") || !strcmp(sel[i].select, d->name) ||
		    !strcmp(sel[i].select, d->command))
			return true;
		x = expand_home(l, sel[i].select);
		hit = x && x[0] == '/' && full && !strcmp(x, full);
		free(x);
		if (hit)
			return true;
	}
	return false;
}

/*
 * Where a host path is hidden in the box: NULL when the box sees it (the host's read-only
 * root, a bind, the client's own mount), else the hiding place, for the message.
 */
static const char *hidden_in_box(const struct launch *l, const struct binds_set *bs,
				 const char *path)
{
	static const char *const scratch[] = {"/tmp", "/run", "/dev", "/proc"};
	size_t n;
	const struct binds_mount *m = binds_set_mounts(bs, &n);

	for (size_t i = 0; i < n; i++)
		if (m[i].kind != BINDS_TMPFS && util_path_under(path, m[i].path))
			return NULL;
	for (size_t i = 0; i < l->n_mounts; i++) {
		/* --mount ro|rw|overlay:SRC[:DEST], seen when bound at its own path. */
		const char *spec = l->mounts[i], *src = strchr(spec, ':');
		char *s = src ? strdup(src + 1) : NULL, *dest = s ? strchr(s, ':') : NULL;
		bool in;

		if (dest)
			*dest = '\0';
		in = s && (!dest || !strcmp(dest + 1, s)) && !util_str_has_prefix(spec, "tmpfs:") &&
		     util_path_under(path, s);
		free(s);
		if (in)
			return NULL;
	}
	if (l->mount_root && util_path_under(path, l->mount_root))
		return NULL;
	if (util_path_under(path, l->host_home))
		return "$HOME";
	for (size_t i = 0; i < ARB_ARRAY_LEN(scratch); i++)
		if (util_path_under(path, scratch[i]))
			return scratch[i];
	return NULL;
}

/* A note line (owned by l->mcp_notes). */
static int note(struct launch *l, const char *fmt, ...) ARB_PRINTF(2, 3);

static int note(struct launch *l, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL, **v;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	v = s ? realloc(l->mcp_notes, (l->n_mcp_notes + 2) * sizeof(*v)) : NULL;
	if (!v) {
		free(s);
		return util_err(-ENOMEM, "out of memory");
	}
	l->mcp_notes = v;
	v[l->n_mcp_notes++] = s;
	v[l->n_mcp_notes] = NULL;
	return 0;
}

/* Codex takes -c mcp_servers.NAME=...: NAME must be a bare TOML key. */
static bool bare_name(const char *s)
{
	return *s &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
		   strlen(s);
}

/* Why d is withheld (a static or formatted reason into buf), or NULL: passed. */
static const char *withheld(const struct launch *l, const struct binds_set *bs,
			    const struct binds_mcp *sel, size_t n_sel, const struct mcp_decl *d,
			    const char *full, char *buf, size_t size)
{
	const char *hide;

	if (d->remote)
		return "remote: it and its login stay on the host";
	if (d->disabled)
		return "disabled in the host's config";
	if (!selected(l, sel, n_sel, d, full))
		return "not named in a bind file's mcp = [...]";
	if (!strcmp(l->client->name, "codex") && !bare_name(d->name))
		return "its name is not one Codex takes on its command line";
	if (full && full[0] == '/' && (hide = hidden_in_box(l, bs, full))) {
		snprintf(buf, size,
			 "its command %s is under %s, which the box does not show: add it to a "
			 "bind file's ro = [...]",
			 full, hide);
		return buf;
	}
	if (!full && (d->command[0] == '/' || strchr(d->command, '/'))) {
		snprintf(buf, size, "its command %s does not exist", d->command);
		return buf;
	}
	/* An argument naming a host path the box hides (the script of `python3 SCRIPT`). */
	for (size_t i = 0; i < json_array_size(d->args); i++) {
		const char *a = json_string_value(json_array_get(d->args, i));
		char *p =
		    a && (a[0] == '/' || util_str_has_prefix(a, "~/")) ? expand_home(l, a) : NULL;

		hide = p && access(p, F_OK) == 0 ? hidden_in_box(l, bs, p) : NULL;
		if (hide)
			snprintf(buf, size,
				 "its argument %s is under %s, which the box does not show: add it "
				 "to a bind file's ro = [...]",
				 p, hide);
		free(p);
		if (hide)
			return buf;
	}
	return NULL;
}

/* The args of d as a new array of strings (OpenCode's command array loses its first). */
static json_t *args_of(const struct launch *l, const struct mcp_decl *d)
{
	json_t *out = json_array();
	size_t from = !strcmp(l->client->name, "opencode") ? 1 : 0;

	for (size_t i = from; out && i < json_array_size(d->args); i++) {
		json_t *a = json_array_get(d->args, i);

		if (json_is_string(a))
			json_array_append(out, a);
	}
	return out;
}

/* A TOML basic string for s (caller frees). */
static char *toml_quote(const char *s)
{
	json_t *j = json_string(s);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;

	json_decref(j);
	return out; /* JSON's escapes with ASCII output are also TOML's */
}

/* A JSON value as a TOML inline value (caller frees; NULL: out of memory or null). */
static char *toml_inline(json_t *v)
{
	const char *k;
	size_t i;
	json_t *x;
	char *out = NULL, *next, *item;
	bool obj = json_is_object(v);

	switch (json_typeof(v)) {
	case JSON_STRING:
		return toml_quote(json_string_value(v));
	case JSON_INTEGER:
		return util_asprintf("%lld", (long long)json_integer_value(v));
	case JSON_REAL:
		return util_asprintf("%.17g", json_real_value(v));
	case JSON_TRUE:
		return strdup("true");
	case JSON_FALSE:
		return strdup("false");
	case JSON_ARRAY:
	case JSON_OBJECT:
		break;
	default:
		return NULL;
	}
	out = strdup("");
	if (obj) {
		json_object_foreach(v, k, x)
		{
			char *key = bare_name(k) ? strdup(k) : toml_quote(k);

			item = key ? toml_inline(x) : NULL;
			next = item && out
				   ? util_asprintf("%s%s%s=%s", out, *out ? "," : "", key, item)
				   : NULL;
			free(key);
			free(item);
			free(out);
			if (!(out = next))
				return NULL;
		}
	} else {
		json_array_foreach(v, i, x)
		{
			item = toml_inline(x);
			next =
			    item && out ? util_asprintf("%s%s%s", out, i ? "," : "", item) : NULL;
			free(item);
			free(out);
			if (!(out = next))
				return NULL;
		}
	}
	next = util_asprintf(obj ? "{%s}" : "[%s]", out);
	free(out);
	return next;
}

/*
 * Codex settings of a server that are carried into the box: how long to wait, which tools,
 * and the approvals the user chose. Not env, env_vars, cwd, or anything of a remote server.
 */
static const char *const codex_keys[] = {
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "default_tools_approval_mode",
    "tools",
    "supports_parallel_tool_calls",
    "required",
};

/* -c mcp_servers.NAME={command="...",args=[...],...} for Codex. */
static int codex_server_arg(struct launch *l, const char *command, const struct mcp_decl *d,
			    json_t *args)
{
	json_t *t = json_pack("{s:s, s:O}", "command", command, "args", args);
	char *text = NULL, *kv = NULL;
	int rc;

	for (size_t i = 0; t && i < ARB_ARRAY_LEN(codex_keys); i++) {
		json_t *v = json_object_get(d->decl, codex_keys[i]);

		if (v)
			json_object_set(t, codex_keys[i], v);
	}
	text = t ? toml_inline(t) : NULL;
	kv = text ? util_asprintf("mcp_servers.%s=%s", d->name, text) : NULL;
	rc = kv ? launch_fixed_arg(l, "-c") : util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = launch_fixed_arg(l, kv);
	free(kv);
	free(text);
	json_decref(t);
	return rc;
}

int launch_mcp(struct launch *l)
{
	struct mcp_list ls = {.keep = json_array()};
	struct binds_set *bs = NULL;
	const struct binds_mcp *sel;
	json_t *box = json_object();
	size_t n_sel;
	int rc = ls.keep && box ? binds_set_new(&bs) : util_err(-ENOMEM, "out of memory");
	const char *client = l->client->name;

	for (size_t i = 0; i < l->n_binds && rc == 0; i++)
		if ((rc = binds_file_load(bs, l->binds[i], l->host_home)) < 0)
			rc = lib_input_err(util_err(rc, "--binds %s", util_err_msg()));
	if (rc < 0)
		goto out;
	sel = binds_set_mcp(bs, &n_sel);
	if (!strcmp(client, "claude")) {
		/* Local scope: ~/.claude.json's entry for the origin checkout. */
		rc = claude_decls(l, &ls, arb_project_root(l->project));
	} else if (!strcmp(client, "codex")) {
		rc = codex_decls(l, &ls);
	} else {
		rc = opencode_decls(l, &ls);
	}
	/* Each command's full path, once: the choice and the check of the mcp entries use it. */
	for (size_t i = 0; i < ls.n && rc == 0; i++)
		ls.v[i].full = ls.v[i].command ? command_path(l, ls.v[i].command) : NULL;
	for (size_t i = 0; i < ls.n && rc == 0; i++) {
		const struct mcp_decl *d = &ls.v[i];
		const char *full = d->full;
		char buf[PATH_MAX + 200];
		const char *why = withheld(l, bs, sel, n_sel, d, full, buf, sizeof(buf));
		json_t *args = why ? NULL : args_of(l, d);
		/* As written, but with "~/" expanded (no client expands it; $HOME is the same). */
		char *cmd = why ? NULL : expand_home(l, d->command);
		const char *env_name;
		json_t *env_val;
		char *env_list = NULL;

		json_object_foreach(d->env, env_name, env_val)
		{
			char *next = util_asprintf("%s%s%s", env_list ? env_list : "",
						   env_list ? ", " : "", env_name);

			free(env_list);
			env_list = next;
		}
		if (why) {
			rc = note(l, "withheld %s (%s): %s", d->name, d->source, why);
		} else if (!args || !cmd) {
			rc = util_err(-ENOMEM, "out of memory");
		} else {
			rc =
			    note(l, "in the box: %s (%s): %s%s%s%s", d->name, d->source, d->command,
				 env_list ? "; its env (" : "", env_list ? env_list : "",
				 env_list ? ") is not passed: set it in a bind file's env" : "");
			if (rc == 0 && !strcmp(client, "codex"))
				rc = codex_server_arg(l, cmd, d, args);
			else if (rc == 0 && !strcmp(client, "claude"))
				rc = json_object_set_new(box, d->name,
							 json_pack("{s:s, s:s, s:O, s:{}}", "type",
								   "stdio", "command", cmd, "args",
								   args, "env"));
			else if (rc == 0) {
				json_t *argv = json_pack("[s]", cmd);

				json_array_extend(argv, args);
				json_t *o = json_pack("{s:s, s:o, s:b}", "type", "local", "command",
						      argv, "enabled", 1);
				json_t *tmo = json_object_get(d->decl, "timeout");

				if (o && json_is_integer(tmo))
					json_object_set(o, "timeout", tmo);
				rc = json_object_set_new(box, d->name, o);
			}
			if (rc < 0)
				rc = util_err(-ENOMEM, "out of memory");
		}
		json_decref(args);
		free(cmd);
		free(env_list);
	}
	for (size_t i = 0; i < n_sel && rc == 0; i++) {
		bool used = !strcmp(sel[i].select, "*");

		for (size_t j = 0; j < ls.n && !used; j++)
			used = ls.v[j].command && selected(l, &sel[i], 1, &ls.v[j], ls.v[j].full);
		if (!used)
			rc =
			    note(l, "%s: mcp entry '%s' names no local MCP server of the host's %s",
				 sel[i].origin, sel[i].select, l->client->title);
	}
	if (rc == 0 && json_object_size(box) && !strcmp(client, "claude")) {
		json_t *cfg = json_pack("{s:O}", "mcpServers", box);
		char *text = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;

		rc =
		    text ? launch_fixed_arg(l, "--mcp-config") : util_err(-ENOMEM, "out of memory");
		if (rc == 0)
			rc = launch_fixed_arg(l, text);
		free(text);
		json_decref(cfg);
	} else if (rc == 0 && json_object_size(box)) {
		l->mcp_box = json_incref(box);
	}
out:
	json_decref(box);
	binds_set_free(bs);
	for (size_t i = 0; i < ls.n; i++)
		free(ls.v[i].full);
	free(ls.v);
	json_decref(ls.keep);
	return rc;
}
