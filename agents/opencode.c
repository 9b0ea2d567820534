/*
 * agents/opencode.c: OpenCode in a box. The provider is Anthropic's, OpenAI's, or an
 * OpenAI-compatible one the host's OpenCode config defines (`npm: @ai-sdk/openai-compatible`
 * with `options.baseURL`), which becomes a backend of the proxy of its own. Its key is read
 * on the host only, from the first of: --api-key-file, the backend's variable, the host's
 * OpenCode login store (auth.json, `"type": "api"` entries), the provider's `options.apiKey`
 * (`{env:VAR}`, `{file:PATH}` or the key itself). From the host's config only the model, the
 * provider's base URL, its name and its models' names and limits are imported; the box gets
 * a config of its own (OPENCODE_CONFIG_CONTENT) whose key is the proxy's placeholder.
 * With --vertex the provider is google-vertex-anthropic (opencode_vertex.c).
 */
#include "agents/agents_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail.h"
#include "proxy/proxy.h"

/* The in-box port of a provider from the host's config (the built-ins use 8713, 8714). */
#define CUSTOM_PORT 8720
#define COMPAT_NPM  "@ai-sdk/openai-compatible"

/* XDG_<NAME>_HOME, else $HOME/DEFAULT, joined with "opencode/FILE" (caller frees). */
static char *xdg_file(const struct launch *l, const char *var, const char *def, const char *file)
{
	const char *x = getenv(var);

	return x && x[0] == '/' ? util_asprintf("%s/opencode/%s", x, file)
				: util_asprintf("%s/%s/opencode/%s", l->host_home, def, file);
}

/* A JSON or JSONC file as an object, or NULL (missing, unreadable, not an object). */
static json_t *load_jsonc(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	json_t *root;

	if (util_read_file(path, &text, &len) < 0)
		return NULL;
	util_jsonc_strip(text, len);
	root = json_loadb(text, len, 0, NULL);
	explicit_bzero(text, len); /* a config may hold a key */
	free(text);
	if (!json_is_object(root)) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/*
 * The host's OpenCode config, as OpenCode merges it: config.json, opencode.json and
 * opencode.jsonc of $XDG_CONFIG_HOME/opencode (default ~/.config/opencode), then the file
 * $OPENCODE_CONFIG. *key_file receives the last of them that gives provider ID an
 * options.apiKey (caller frees), for a key written into the config itself; *mcp_file (when
 * not NULL) the last that declares MCP servers.
 */
static json_t *host_config(const struct launch *l, const char *id, char **key_file, char **mcp_file)
{
	static const char *const names[] = {"config.json", "opencode.json", "opencode.jsonc"};
	const char *env = getenv("OPENCODE_CONFIG");
	json_t *merged = json_object();

	*key_file = NULL;
	for (size_t i = 0; merged && i <= ARB_ARRAY_LEN(names); i++) {
		char *path = i < ARB_ARRAY_LEN(names)
				 ? xdg_file(l, "XDG_CONFIG_HOME", ".config", names[i])
			     : env && env[0] == '/' ? strdup(env)
						    : NULL;
		json_t *one = path ? load_jsonc(path) : NULL;
		json_t *key = json_object_get(
		    json_object_get(json_object_get(json_object_get(one, "provider"), id),
				    "options"),
		    "apiKey");

		if (one && mcp_file && json_is_object(json_object_get(one, "mcp"))) {
			free(*mcp_file);
			*mcp_file = strdup(path);
		}
		if (one && json_is_string(key)) {
			free(*key_file);
			*key_file = path;
			path = NULL;
		}
		if (one)
			json_object_update_recursive(merged, one);
		json_decref(one);
		free(path);
	}
	return merged;
}

json_t *launch_opencode_host_config(const struct launch *l, char **source)
{
	char *key_file = NULL;
	json_t *cfg;

	*source = NULL;
	cfg = host_config(l, "", &key_file, source);
	free(key_file);
	return cfg;
}

/* "/provider/ID/..." as a JSON pointer: '~' and '/' in ID escaped (caller frees). */
static char *pointer_escape(const char *s)
{
	char *out = malloc(2 * strlen(s) + 1), *o = out;

	for (; out && *s; s++) {
		if (*s == '~' || *s == '/') {
			*o++ = '~';
			*o++ = *s == '~' ? '0' : '1';
		} else {
			*o++ = *s;
		}
	}
	if (out)
		*o = '\0';
	return out;
}

/* Where the key comes from when neither --api-key-file nor the backend's variable gives it. */
static int key_source(struct launch *l, const char *id, const json_t *prov, const char *cfg_file)
{
	char *auth = xdg_file(l, "XDG_DATA_HOME", ".local/share", "auth.json"), *esc = NULL;
	json_t *store = auth ? load_jsonc(auth) : NULL, *entry = json_object_get(store, id);
	const char *type = json_string_value(json_object_get(entry, "type"));
	const char *key =
	    json_string_value(json_object_get(json_object_get(prov, "options"), "apiKey"));
	char *opt = NULL;
	int rc = auth ? 0 : util_err(-ENOMEM, "out of memory");

	esc = pointer_escape(id);
	if (rc == 0 && !esc)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0 && type && !strcmp(type, "api") &&
	    json_is_string(json_object_get(entry, "key"))) {
		/* `opencode auth login` with an API key */
		opt = util_asprintf("%s#/%s/key", auth, esc);
		rc = opt ? launch_backend_opt(l, "key-json", opt)
			 : util_err(-ENOMEM, "out of memory");
		if (rc == 0 && !(l->key_source = util_asprintf("%s (%s)", auth, id)))
			rc = util_err(-ENOMEM, "out of memory");
	} else if (rc == 0 && key && util_str_has_prefix(key, "{env:")) {
		/* {env:VAR}: that variable of the host */
		opt = strndup(key + 5, strcspn(key + 5, "}"));
		rc = opt ? launch_backend_opt(l, "key-env", opt)
			 : util_err(-ENOMEM, "out of memory");
		if (rc == 0 && getenv(opt) && *getenv(opt))
			l->key_source =
			    util_asprintf("the host's $%s (options.apiKey of %s)", opt, id);
		else if (rc == 0)
			l->key_hint = util_asprintf(" (options.apiKey of %s) and no key for %s in "
						    "%s ('opencode auth login')",
						    id, id, auth);
		if (rc == 0 && !l->key_source && !l->key_hint)
			rc = util_err(-ENOMEM, "out of memory");
	} else if (rc == 0 && key && util_str_has_prefix(key, "{file:")) {
		/* {file:PATH}: ~ is the home, a relative path the config's folder */
		char *p = strndup(key + 6, strcspn(key + 6, "}")), *dir = NULL;

		if (p && p[0] == '~' && p[1] == '/')
			opt = util_path_join(l->host_home, p + 2);
		else if (p && p[0] != '/' && cfg_file && (dir = strdup(cfg_file)))
			opt = (*strrchr(dir, '/') = '\0', util_path_join(dir, p));
		else
			opt = p ? strdup(p) : NULL;
		free(dir);
		free(p);
		rc = opt ? launch_backend_opt(l, "key-file", opt)
			 : util_err(-ENOMEM, "out of memory");
		if (rc == 0 &&
		    !(l->key_source = util_asprintf("%s (options.apiKey of %s)", opt, id)))
			rc = util_err(-ENOMEM, "out of memory");
	} else if (rc == 0 && key && *key && cfg_file) {
		/* the key written into the config itself */
		opt = util_asprintf("%s#/provider/%s/options/apiKey", cfg_file, esc);
		rc = opt ? launch_backend_opt(l, "key-json", opt)
			 : util_err(-ENOMEM, "out of memory");
		if (rc == 0 &&
		    !(l->key_source = util_asprintf("%s (options.apiKey of %s)", cfg_file, id)))
			rc = util_err(-ENOMEM, "out of memory");
	} else if (rc == 0) {
		/* Nothing: the error says where a key was looked for. An OAuth or well-known
		 * login of OpenCode's has no key to swap in. */
		l->key_hint =
		    type ? util_asprintf(", and the %s entry of %s is an OpenCode '%s' login, "
					 "which the proxy cannot use; give a key",
					 id, auth, type)
			 : util_asprintf(", no key for %s in %s ('opencode auth login') and "
					 "no options.apiKey in the host's OpenCode config",
					 id, auth);
		if (!l->key_hint)
			rc = util_err(-ENOMEM, "out of memory");
	}
	free(opt);
	free(esc);
	json_decref(store);
	free(auth);
	return rc;
}

/* The backend's name for provider ID: lower-case letters, digits and '-' (caller frees). */
static char *backend_name(const char *id)
{
	char *n = util_asprintf("%.32s", id);

	for (char *s = n; s && *s; s++)
		*s = (*s >= 'A' && *s <= 'Z')				    ? (char)(*s - 'A' + 'a')
		     : (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ? *s
									    : '-';
	/* A name of a built-in backend would take the built-in's upstream and policy. */
	if (n && (!strcmp(n, "anthropic") || !strcmp(n, "openai") || !strcmp(n, "chatgpt"))) {
		char *p = util_asprintf("oc-%.29s", n);

		free(n);
		n = p;
	}
	return n;
}

/*
 * A provider of the host's config that speaks OpenAI's chat completions API: its own backend
 * (the base URL's origin upstream, its path as the base path, chat completions and models
 * allowed, Bearer), and the box's copy of the provider (name, the models' names and limits).
 */
static int custom_backend(struct launch *l, const char *id, const json_t *prov)
{
	const char *url =
	    json_string_value(json_object_get(json_object_get(prov, "options"), "baseURL"));
	const char *npm = json_string_value(json_object_get(prov, "npm"));
	const char *rest, *path;
	char *origin = NULL, *base = NULL, *rule = NULL, port[8];
	json_t *models = NULL, *m;
	const char *mid;
	int rc;

	if (!npm || strcmp(npm, COMPAT_NPM) || !url ||
	    (!util_str_has_prefix(url, "http://") && !util_str_has_prefix(url, "https://")))
		return util_err(
		    -EINVAL,
		    "opencode: provider '%s' is not anthropic, openai or an "
		    "OpenAI-compatible provider of the host's OpenCode config (\"npm\": "
		    "\"" COMPAT_NPM "\" with an http(s) options.baseURL)",
		    id);
	models = json_object();
	rest = strstr(url, "://") + 3;
	path = rest + strcspn(rest, "/?#");
	origin = strndup(url, (size_t)(path - url));
	base = strndup(path, strcspn(path, "?#"));
	for (size_t n = base ? strlen(base) : 0; n > 0 && base[n - 1] == '/'; n--)
		base[n - 1] = '\0';
	rc = origin && base && models ? 0 : util_err(-ENOMEM, "out of memory");
	if (rc == 0 && !(l->backend = l->backend_own = backend_name(id)))
		rc = util_err(-ENOMEM, "out of memory");
	snprintf(port, sizeof(port), "%d", CUSTOM_PORT);
	if (rc == 0 && !l->upstream) {
		l->upstream = l->upstream_own = origin;
		origin = NULL;
	}
	rc = rc ?: launch_backend_opt(l, "port", port);
	rc = rc ?: launch_backend_opt(l, "base-path", base);
	rc = rc ?: launch_backend_opt(l, "auth", "bearer");
	if (rc == 0 && !(rule = util_asprintf("POST:%s/chat/completions", base)))
		rc = util_err(-ENOMEM, "out of memory");
	rc = rc ?: launch_backend_opt(l, "allow", rule);
	free(rule);
	rule = util_asprintf("GET:%s/models*", base);
	if (rc == 0)
		rc = rule ? launch_backend_opt(l, "allow", rule)
			  : util_err(-ENOMEM, "out of memory");
	/* Only names and limits of the models: nothing else of the host's provider. */
	json_object_foreach((json_t *)json_object_get(prov, "models"), mid, m)
	{
		json_t *one = json_object(), *lim = json_object_get(m, "limit");
		const char *name = json_string_value(json_object_get(m, "name"));

		if (!one || !launch_model_ok(mid)) {
			json_decref(one);
			continue;
		}
		if (name)
			json_object_set_new(one, "name", json_string(name));
		if (json_is_object(lim)) {
			json_t *keep = json_object();

			if (json_is_integer(json_object_get(lim, "context")))
				json_object_set(keep, "context", json_object_get(lim, "context"));
			if (json_is_integer(json_object_get(lim, "output")))
				json_object_set(keep, "output", json_object_get(lim, "output"));
			json_object_set_new(one, "limit", keep);
		}
		json_object_set_new(models, mid, one);
	}
	if (rc == 0) {
		const char *title = json_string_value(json_object_get(prov, "name"));

		l->client_conf = json_pack("{s:s, s:s, s:s, s:O}", "id", id, "name",
					   title ? title : id, "base", base, "models", models);
		if (!l->client_conf)
			rc = util_err(-ENOMEM, "out of memory");
	}
	free(rule);
	json_decref(models);
	free(base);
	free(origin);
	return rc;
}

static const char *default_model(const char *backend)
{
	return !strcmp(backend, "openai") ? "openai/gpt-5" : "anthropic/claude-sonnet-4-5";
}

static int opencode_resolve(struct launch *l)
{
	char *cfg_file = NULL, *host_model = NULL, *pid = NULL;
	const char *id = l->provider, *hm;
	json_t *cfg, *prov;
	int rc = 0;

	if (l->model && !launch_model_ok(l->model))
		return util_err(-EINVAL, "opencode: bad --model '%s'", l->model);
	if (l->vertex) /* the proxy's vertex backend (launch_vertex_resolve) */
		return launch_opencode_vertex_resolve(l);
	/* The provider: --provider, else --model's, else the host's model's, else anthropic. */
	cfg = host_config(l, "", &cfg_file, NULL);
	hm = json_string_value(json_object_get(cfg, "model"));
	host_model = hm && launch_model_ok(hm) ? strdup(hm) : NULL;
	json_decref(cfg);
	free(cfg_file);
	cfg_file = NULL;
	if (!id && l->model && strchr(l->model, '/'))
		id = l->model; /* up to its '/' */
	else if (!id && host_model && strchr(host_model, '/'))
		id = host_model;
	pid = id ? strndup(id, strcspn(id, "/")) : strdup("anthropic");
	if (!pid || !*pid) {
		rc = util_err(pid ? -EINVAL : -ENOMEM, "opencode: no provider in '%s'", id);
		goto out;
	}
	cfg = host_config(l, pid, &cfg_file, NULL);
	prov = json_object_get(json_object_get(cfg, "provider"), pid);
	if (!strcmp(pid, "anthropic") || !strcmp(pid, "openai"))
		l->backend = !strcmp(pid, "anthropic") ? "anthropic" : "openai";
	else
		rc = custom_backend(l, pid, prov);
	/* The key, where the variable and --api-key-file do not give it. */
	if (rc == 0 && !l->key_file) {
		struct proxy_backend *pb = NULL;
		char *spec = launch_backend_spec(l);
		const char *var;

		rc = spec ? proxy_backend_parse(&pb, spec) : util_err(-ENOMEM, "out of memory");
		var = rc == 0 ? getenv(proxy_backend_key_env(pb)) : NULL;
		if (rc == 0 && !(var && *var))
			rc = key_source(l, pid, prov, cfg_file);
		proxy_backend_free(pb);
		free(spec);
	}
	/* The model: --model (PROVIDER/MODEL or a model of the provider), else the host's
	 * when it is this provider's, else the provider's first or a default. */
	if (rc == 0) {
		size_t plen = strlen(pid);
		void *it = json_object_iter(json_object_get(prov, "models"));
		const char *first = it ? json_object_iter_key(it) : NULL;

		if (l->model)
			launch_set_model(l, strchr(l->model, '/')
						? strdup(l->model)
						: util_asprintf("%s/%s", pid, l->model));
		else if (host_model && !strncmp(host_model, pid, plen) && host_model[plen] == '/')
			launch_set_model(l, strdup(host_model));
		else if (first && launch_model_ok(first))
			launch_set_model(l, util_asprintf("%s/%s", pid, first));
		else if (l->client_conf)
			rc = util_err(-EINVAL,
				      "opencode: provider '%s' lists no model; give --model", pid);
		else
			launch_set_model(l, strdup(default_model(l->backend)));
		if (rc == 0 && !l->model_import)
			rc = util_err(-ENOMEM, "out of memory");
		if (rc == 0 &&
		    (strncmp(l->model_import, pid, plen) || l->model_import[plen] != '/'))
			rc = util_err(-EINVAL, "opencode: --model '%s' is not of provider '%s'",
				      l->model_import, pid);
	}
	json_decref(cfg);
	free(cfg_file);
out:
	free(pid);
	free(host_model);
	return rc;
}

static int opencode_prepare(struct launch *l)
{
	(void)l;
	return 0;
}

/* The box's provider: the relay's URL and the key (placeholder, or with --net its file). */
static json_t *box_provider(const struct launch *l, const char *url, const char *key)
{
	if (!l->client_conf)
		return json_pack("{s:{s:s, s:s}, s:{s:{}}}", "options", "baseURL", url, "apiKey",
				 key, "models", strchr(l->model_import, '/') + 1);
	json_t *models = json_deep_copy(json_object_get(l->client_conf, "models"));
	const char *m = strchr(l->model_import, '/') + 1;

	/* The model listed too, so one the host's config lacks is still accepted. */
	if (models && !json_object_get(models, m))
		json_object_set_new(models, m, json_object());
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "npm", COMPAT_NPM, "name",
			 json_string_value(json_object_get(l->client_conf, "name")), "options",
			 "baseURL", url, "apiKey", key, "models", models);
}

static int opencode_box(struct launch *l, struct jail_box *b, struct proxy_proc *px)
{
	const char *ph = px ? lib_proxy_placeholder(px, l->backend) : NULL;
	const char *base =
	    l->client_conf ? json_string_value(json_object_get(l->client_conf, "base")) : "/v1";
	const char *id = l->vertex	  ? launch_opencode_vertex_id()
			 : l->client_conf ? json_string_value(json_object_get(l->client_conf, "id"))
					  : l->backend;
	size_t n = 0;
	const uint16_t *ports = px ? lib_proxy_ports(px, &n) : NULL;
	char *url = n ? util_asprintf("http://127.0.0.1:%u%s", ports[0], base) : NULL;
	char *text = NULL, *key = NULL;
	json_t *cfg = NULL, *prov;
	int rc = 0;

	if (!ph || !url) {
		free(url);
		return util_err(-EINVAL, "opencode: no %s backend on the proxy", l->backend);
	}
	/* --net: no key in the environment; OpenCode reads the session's token from the file. */
	if (l->net) {
		char *file = launch_key_file(l);

		key = file ? util_asprintf("{file:%s}", file) : NULL;
		free(file);
		if (!key) {
			free(url);
			return util_err(-ENOMEM, "out of memory");
		}
	}
	prov = l->vertex ? launch_opencode_vertex_provider(l, url, key ? key : ph)
			 : box_provider(l, url, key ? key : ph);
	cfg = prov ? json_pack("{s:s, s:b, s:s, s:s, s:{s:o}}", "$schema",
			       "https://opencode.ai/config.json", "autoupdate", 0, "share",
			       "disabled", "model", l->model_import, "provider", id, prov)
		   : NULL;
	/* The host's local MCP servers the bind files name (launch_mcp). */
	if (cfg && l->mcp_box && json_object_set(cfg, "mcp", l->mcp_box) < 0) {
		json_decref(cfg);
		cfg = NULL;
	}
	text = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
	rc = text ? lib_box_env(b, "OPENCODE_CONFIG_CONTENT", text)
		  : util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = lib_box_env(b, "OPENCODE_DISABLE_AUTOUPDATE", "1");
	if (rc == 0)
		rc = lib_box_env(b, "OPENCODE_DISABLE_MODELS_FETCH", "1");
	if (rc == 0)
		rc = lib_box_env(b, "OPENCODE_DISABLE_DEFAULT_PLUGINS", "1");
	if (rc == 0)
		rc = lib_box_env(b, "OPENCODE_DISABLE_LSP_DOWNLOAD", "1");
	if (rc == 0)
		rc = lib_box_env(b, "OPENCODE_DISABLE_SHARE", "1");
	free(text);
	json_decref(cfg);
	free(key);
	free(url);
	return rc;
}

const struct launch_client launch_opencode = {
    .name = "opencode",
    .title = "OpenCode",
    .program = "opencode",
    .install = "npm install -g opencode-ai",
    .backend = "anthropic",
    .resolve = opencode_resolve,
    .prepare = opencode_prepare,
    .box = opencode_box,
    .login_kind = -1,
};
