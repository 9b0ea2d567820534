/* proxy/backend.c: backend definitions: the built-ins, specification parsing, rules. */
#include "proxy/proxy_internal.h"
#include "proxy/reapi_internal.h"
#include "proxy/vertex.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct builtin {
	const char *name, *url, *key_env, *env_prefix, *base_path;
	uint16_t port;
	enum proxy_auth auth;
	const char *rules[8]; /* "METHOD PATH[*]" */
};

static const struct builtin builtins[] = {
    {"anthropic",
     "https://api.anthropic.com",
     "ANTHROPIC_API_KEY",
     "ANTHROPIC",
     "",
     8713,
     PROXY_AUTH_AUTO_ANTHROPIC,
     {"POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models*"}},
    {"openai",
     "https://api.openai.com",
     "OPENAI_API_KEY",
     "OPENAI",
     "/v1",
     8714,
     PROXY_AUTH_BEARER,
     {"POST /v1/responses*", "GET /v1/responses/*", "POST /v1/chat/completions",
      "GET /v1/models*"}},
    /* ChatGPT's backend for Codex with a ChatGPT login (the token comes from the login). */
    {"chatgpt",
     "https://chatgpt.com",
     "CHATGPT_ACCESS_TOKEN",
     "CHATGPT",
     "/backend-api",
     8715,
     PROXY_AUTH_BEARER,
     {"POST /backend-api/codex/responses*", "GET /backend-api/codex/models*",
      "GET /backend-api/wham/accounts/check", "GET /backend-api/wham/settings/user",
      "GET /backend-api/wham/usage", "GET /backend-api/wham/rate-limit-reset-credits"}},
};

void proxy_backend_free(struct proxy_backend *b)
{
	if (!b)
		return;
	if (b->login)
		b->login_free(b->login);
	proxy_reapi_free(b->reapi);
	proxy_vertex_free(b->vertex);
	for (size_t i = 0; i < b->n_rules; i++)
		free(b->rules[i].path);
	proxy_secret_free(&b->credential);
	free(b->name);
	free(b->url);
	free(b->auth_header);
	free(b->key_env);
	free(b->key_file);
	free(b->key_json);
	free(b->env_prefix);
	free(b->base_path);
	free(b->ca_file);
	explicit_bzero(b->placeholder, sizeof(b->placeholder));
	free(b);
}

const char *proxy_backend_name(const struct proxy_backend *b)
{
	return b->name;
}

uint16_t proxy_backend_port(const struct proxy_backend *b)
{
	return b->port;
}

const char *proxy_backend_key_env(const struct proxy_backend *b)
{
	return b->key_env;
}

const char *proxy_backend_key_source(const struct proxy_backend *b)
{
	if (b->vertex)
		return proxy_vertex_adc(b->vertex);
	return b->key_file ? b->key_file : b->key_json;
}

static int set_str(char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s)
		return util_err(-ENOMEM, "out of memory");
	free(*dst);
	*dst = s;
	return 0;
}

static bool name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32 || !islower((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool env_name_valid(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* "METHOD /path" or "METHOD /path*"; METHOD is upper-case letters. */
static int rule_add(struct proxy_backend *b, const char *spec, char sep)
{
	const char *p = strchr(spec, sep);
	struct proxy_rule *r;
	size_t ml, pl;

	if (b->n_rules >= PROXY_RULES_MAX)
		return util_err(-EINVAL, "backend %s: too many allow rules", b->name);
	if (!p || p == spec || (size_t)(p - spec) >= sizeof(r->method))
		return util_err(-EINVAL, "backend %s: allow rule '%s' is not METHOD%c/PATH",
				b->name, spec, sep);
	ml = (size_t)(p - spec);
	for (size_t i = 0; i < ml; i++)
		if (!isupper((unsigned char)spec[i]))
			return util_err(-EINVAL, "backend %s: bad method in allow rule '%s'",
					b->name, spec);
	p++;
	pl = strlen(p);
	if (p[0] != '/' || strstr(p, "..") || strpbrk(p, "?#% \\") ||
	    (pl > 1 && strchr(p, '*') && strchr(p, '*') != p + pl - 1))
		return util_err(-EINVAL, "backend %s: bad path in allow rule '%s'", b->name, spec);
	r = &b->rules[b->n_rules];
	memcpy(r->method, spec, ml);
	r->method[ml] = '\0';
	r->prefix = p[pl - 1] == '*';
	r->path = strndup(p, r->prefix ? pl - 1 : pl);
	if (!r->path)
		return util_err(-ENOMEM, "out of memory");
	b->n_rules++;
	return 0;
}

/* http(s)://host[:port][/path], checked by proxy_url_check. Stored without a trailing '/'. */
static int set_url(struct proxy_backend *b, const char *url)
{
	int rc = proxy_url_check(b->name, url);
	size_t n;

	rc = rc ?: set_str(&b->url, url);
	if (rc == 0) {
		n = strlen(b->url);
		while (n > 0 && b->url[n - 1] == '/')
			b->url[--n] = '\0';
	}
	return rc;
}

static int parse_long(const char *v, long min, long max, long *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < min || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

int proxy_backend_set(struct proxy_backend *b, const char *key, const char *v)
{
	long n;
	int rc, vrc = b->vertex ? proxy_vertex_set(b->vertex, key, v) : 1;

	if (b->reapi && proxy_reapi_set(b, key, v, &rc))
		return rc;
	if (b->reapi && (!strcmp(key, "allow") || !strcmp(key, "url") || !strcmp(key, "auth") ||
			 !strcmp(key, "tls-port") || !strcmp(key, "base-path")))
		return util_err(-EINVAL, "backend reapi: %s= does not apply", key);
	if (vrc <= 0)
		return vrc;
	if (!strcmp(key, "port") || !strcmp(key, "tls-port")) {
		if (parse_long(v, 1, 65535, &n) < 0)
			return util_err(-EINVAL, "backend %s: %s '%s' is not 1..65535", b->name,
					key, v);
		*(!strcmp(key, "port") ? &b->port : &b->tls_port) = (uint16_t)n;
	} else if (!strcmp(key, "allow")) {
		if (b->builtin) {
			/* The first allow= on a built-in replaces its defaults. */
			for (size_t i = 0; i < b->n_rules; i++)
				free(b->rules[i].path);
			b->n_rules = 0;
			b->builtin = false;
		}
		return rule_add(b, v, ':');
	} else if (!strcmp(key, "auth")) {
		if (!strcmp(v, "bearer")) {
			b->auth = PROXY_AUTH_BEARER;
		} else if (!strcmp(v, "none")) {
			b->auth = PROXY_AUTH_NONE;
		} else if (!strcmp(v, "x-api-key") || util_str_has_prefix(v, "header:")) {
			const char *h = strchr(v, ':') ? v + 7 : v;

			for (const char *s = h; *s; s++)
				if (!isalnum((unsigned char)*s) && *s != '-')
					h = "";
			if (!*h)
				return util_err(-EINVAL, "backend %s: bad auth header in '%s'",
						b->name, v);
			b->auth = PROXY_AUTH_HEADER;
			return set_str(&b->auth_header, h);
		} else {
			return util_err(
			    -EINVAL,
			    "backend %s: auth must be x-api-key, bearer, header:NAME or none",
			    b->name);
		}
	} else if (!strcmp(key, "key-env") || !strcmp(key, "env")) {
		if (!env_name_valid(v))
			return util_err(-EINVAL, "backend %s: '%s' is not a variable name", b->name,
					v);
		/* The box's variables are PREFIX_...: never the dynamic loader's. */
		if (!strcmp(key, "env") && (!strcmp(v, "LD") || util_str_has_prefix(v, "LD_")))
			return util_err(-EINVAL, "backend %s: env=%s would name LD_ variables",
					b->name, v);
		return set_str(!strcmp(key, "env") ? &b->env_prefix : &b->key_env, v);
	} else if (!strcmp(key, "key-file") || !strcmp(key, "ca-file")) {
		if (!*v)
			return util_err(-EINVAL, "backend %s: %s needs a path", b->name, key);
		return set_str(!strcmp(key, "ca-file") ? &b->ca_file : &b->key_file, v);
	} else if (!strcmp(key, "key-json")) {
		const char *hash = strrchr(v, '#');

		if (!hash || hash == v || hash[1] != '/')
			return util_err(-EINVAL,
					"backend %s: key-json needs FILE#/json/pointer, not '%s'",
					b->name, v);
		return set_str(&b->key_json, v);
	} else if (!strcmp(key, "base-path")) {
		if ((*v && *v != '/') || strpbrk(v, "?#% \\") || strstr(v, ".."))
			return util_err(-EINVAL, "backend %s: bad base-path '%s'", b->name, v);
		return set_str(&b->base_path, v);
	} else if (!strcmp(key, "connect-timeout") || !strcmp(key, "idle-timeout")) {
		if (parse_long(v, 1, 86400, &n) < 0)
			return util_err(-EINVAL, "backend %s: %s '%s' is not 1..86400 seconds",
					b->name, key, v);
		*(!strcmp(key, "connect-timeout") ? &b->connect_timeout_s : &b->idle_timeout_s) = n;
	} else if (!strcmp(key, "url")) {
		return set_url(b, v);
	} else {
		return util_err(-EINVAL, "backend %s: unknown option '%s'", b->name, key);
	}
	return 0;
}

static int init_builtin(struct proxy_backend *b, const struct builtin *d)
{
	int rc = 0;

	b->port = d->port;
	b->auth = d->auth;
	rc = set_str(&b->url, d->url);
	rc = rc ?: set_str(&b->key_env, d->key_env);
	rc = rc ?: set_str(&b->env_prefix, d->env_prefix);
	rc = rc ?: set_str(&b->base_path, d->base_path);
	for (size_t i = 0; rc == 0 && i < ARB_ARRAY_LEN(d->rules) && d->rules[i]; i++)
		rc = rule_add(b, d->rules[i], ' ');
	b->builtin = true;
	return rc;
}

static int init_custom(struct proxy_backend *b)
{
	char *up = util_asprintf("%s", b->name);
	int rc;

	if (!up)
		return util_err(-ENOMEM, "out of memory");
	for (char *s = up; *s; s++)
		*s = *s == '-' ? '_' : (char)toupper((unsigned char)*s);
	b->auth = PROXY_AUTH_BEARER;
	rc = set_str(&b->env_prefix, up);
	free(up);
	if (rc == 0) {
		b->key_env = util_asprintf("%s_API_KEY", b->env_prefix);
		rc = b->key_env ? 0 : util_err(-ENOMEM, "out of memory");
	}
	return rc ?: set_str(&b->base_path, "");
}

/* vertex: Vertex AI's Anthropic models, with a token minted from the host's ADC (vertex.c);
 * the policy checks the path against the project and region (the rule below is a floor). */
static int init_vertex(struct proxy_backend *b)
{
	int rc = proxy_vertex_new(&b->vertex);

	b->port = PROXY_VERTEX_PORT;
	b->auth = PROXY_AUTH_BEARER;
	rc = rc ?: set_str(&b->env_prefix, "ANTHROPIC_VERTEX");
	rc = rc ?: set_str(&b->base_path, "/v1");
	return rc ?: rule_add(b, "POST /v1/projects/*", ' ');
}

static const struct builtin *builtin_find(const char *name)
{
	for (size_t i = 0; i < ARB_ARRAY_LEN(builtins); i++)
		if (!strcmp(builtins[i].name, name))
			return &builtins[i];
	return NULL;
}

static int parse_options(struct proxy_backend *b, char *opts)
{
	char *save = NULL;
	int rc = 0;

	for (char *o = strtok_r(opts, ",", &save); o && rc == 0; o = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(o, '=');

		if (!eq)
			return util_err(-EINVAL, "backend %s: option '%s' is not KEY=VALUE",
					b->name, o);
		*eq = '\0';
		if (!strcmp(o, "url"))
			return util_err(-EINVAL, "backend %s: give the URL as NAME=URL", b->name);
		rc = proxy_backend_set(b, o, eq + 1);
	}
	return rc;
}

int proxy_backend_parse(struct proxy_backend **out, const char *spec)
{
	struct proxy_backend *b = calloc(1, sizeof(*b));
	char *copy = strdup(spec), *comma, *eq, *opts = NULL;
	const struct builtin *d;
	int rc = -ENOMEM;

	*out = NULL;
	if (!b || !copy) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	b->connect_timeout_s = 10;
	b->idle_timeout_s = 300;
	comma = strchr(copy, ',');
	if (comma) {
		*comma = '\0';
		opts = comma + 1;
	}
	eq = strchr(copy, '=');
	if (eq)
		*eq = '\0';
	if (!name_valid(copy)) {
		rc = util_err(-EINVAL, "backend name '%s' must be 1-32 of a-z, 0-9, '-'", copy);
		goto out;
	}
	rc = set_str(&b->name, copy);
	if (rc < 0)
		goto out;
	d = builtin_find(copy);
	rc = !strcmp(copy, "vertex") ? init_vertex(b) : d ? init_builtin(b, d) : init_custom(b);
	if (rc == 0 && !strcmp(copy, "reapi")) /* remote builds over h2c (reapi_conf.c) */
		rc = proxy_reapi_init(b, eq ? eq + 1 : NULL);
	else if (rc == 0 && eq)
		rc = set_url(b, eq + 1);
	if (rc == 0 && opts)
		rc = parse_options(b, opts);
	if (rc == 0 && b->vertex)
		rc = proxy_vertex_finish(b->vertex, &b->url, b->ca_file);
	if (rc < 0)
		goto out;
	if (!b->url) {
		rc = util_err(-EINVAL,
			      "backend %s is not built in: give it as %s=URL,port=N,allow=...",
			      b->name, b->name);
	} else if (!b->port) {
		rc = util_err(-EINVAL, "backend %s needs port=N", b->name);
	} else if (b->n_rules == 0 && !b->reapi) {
		rc = util_err(-EINVAL, "backend %s needs at least one allow=METHOD:PATH", b->name);
	}
out:
	free(copy);
	if (rc < 0) {
		proxy_backend_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

bool proxy_path_matches(const struct proxy_rule *rule, const char *method, const char *path)
{
	size_t n = strlen(rule->path);

	if (method && strcmp(rule->method, method) != 0)
		return false;
	if (!rule->prefix)
		return strcmp(rule->path, path) == 0;
	if (strncmp(rule->path, path, n) != 0)
		return false;
	/* A prefix matches at a segment boundary: /v1/models matches /v1/models/x, not
	 * /v1/modelsx. A rule ending in '/' matches only below it. */
	return path[n] == '\0' || path[n] == '/' || (n > 0 && rule->path[n - 1] == '/');
}

struct proxy_backend *proxy_backend_by_port(struct proxy_backend *const *b, size_t n, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (b[i]->port == port || (b[i]->tls_port && b[i]->tls_port == port))
			return b[i];
	return NULL;
}

uint16_t proxy_backend_tls_port(const struct proxy_backend *b)
{
	return b->tls_port;
}

void proxy_secret_free(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

struct proxy_login *proxy_backend_login(const struct proxy_backend *b)
{
	return b->login;
}

int proxy_backend_auth_header(const struct proxy_backend *b, const char *cred, const char **name,
			      char **value)
{
	bool bearer = b->auth == PROXY_AUTH_BEARER || b->login;

	/* Anthropic OAuth tokens (sk-ant-oat...) go in Authorization, API keys in x-api-key. */
	if (b->auth == PROXY_AUTH_AUTO_ANTHROPIC && !b->login)
		bearer = util_str_has_prefix(cred, "sk-ant-oat");
	if (bearer) {
		*name = "Authorization";
		*value = util_asprintf("Bearer %s", cred);
	} else {
		*name = b->auth == PROXY_AUTH_HEADER ? b->auth_header : "x-api-key";
		*value = strdup(cred);
	}
	return *value ? 0 : util_err(-ENOMEM, "out of memory");
}
