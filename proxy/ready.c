/*
 * proxy/ready.c: arborinth_proxy's answer on its ready pipe, the only owner of its form: one
 * line of JSON with what the box needs (ports, placeholders, the box's login files, the TLS
 * CA), or {"errno": N, "error": "..."} when it could not start. Never a credential. Each
 * backend's box variables come in the answer (the proxy's backends compute them,
 * proxy/answer.c); they are checked here when read, and put together into the box's
 * environment (proxy_ready_box_env) without knowing any kind of backend.
 */
#include "proxy/proxy.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *strs(char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *about_of(const struct proxy_ready_backend *b)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < b->n_about; i++)
		if (json_object_set_new(o, b->about[2 * i], json_string(b->about[2 * i + 1])) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

char *proxy_ready_format(const struct proxy_ready *r)
{
	json_t *o = json_object(), *bs = json_array(), *hosts = json_array();
	char *text = NULL;

	if (!o || !bs || !hosts)
		goto out;
	for (size_t i = 0; i < r->n_backends; i++) {
		const struct proxy_ready_backend *b = &r->backends[i];
		json_t *j =
		    json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:i}", "name", b->name,
			      "placeholder", b->placeholder, "key_source",
			      str_or_null(b->key_source), "login_path", str_or_null(b->login_path),
			      "login_box", str_or_null(b->login_box), "env", strs(b->env, b->n_env),
			      "key_var", str_or_null(b->key_var), "about", about_of(b), "port",
			      (int)b->port, "tls_port", (int)b->tls_port);

		if (!j || json_array_append_new(bs, j) < 0)
			goto out;
	}
	for (size_t i = 0; i < r->n_allow_hosts; i++)
		if (json_array_append_new(hosts, json_string(r->allow_hosts[i])) < 0)
			goto out;
	if (json_object_set(o, "backends", bs) < 0 ||
	    json_object_set(o, "allow_hosts", hosts) < 0 ||
	    json_object_set_new(o, "tls_ca", str_or_null(r->tls_ca)) < 0)
		goto out;
	text = json_dumps(o, JSON_COMPACT);
out:
	json_decref(hosts);
	json_decref(bs);
	json_decref(o);
	return text;
}

char *proxy_ready_format_error(int rc, const char *msg)
{
	json_t *o = json_pack("{s:i, s:s}", "errno", -rc, "error", msg ? msg : "");
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return text;
}

void proxy_ready_free(struct proxy_ready *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_backends; i++) {
		struct proxy_ready_backend *b = &r->backends[i];

		free(b->name);
		free(b->placeholder);
		free(b->key_source);
		free(b->login_path);
		free(b->login_box);
		free(b->key_var);
		for (size_t j = 0; j < b->n_env; j++)
			free(b->env[j]);
		free(b->env);
		for (size_t j = 0; j < 2 * b->n_about; j++)
			free(b->about[j]);
		free(b->about);
	}
	for (size_t i = 0; i < r->n_allow_hosts; i++)
		free(r->allow_hosts[i]);
	free(r->allow_hosts);
	free(r->backends);
	free(r->ports);
	free(r->tls_ca);
	free(r);
}

/* A copy of o[key] when it is a string; NULL when it is null or missing. *bad on other types. */
static char *get_str(json_t *o, const char *key, bool *bad)
{
	json_t *v = json_object_get(o, key);
	char *s;

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		*bad = true;
		return NULL;
	}
	s = strdup(json_string_value(v));
	if (!s)
		*bad = true;
	return s;
}

static uint16_t get_port(json_t *o, const char *key, bool *bad)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	if (!json_is_integer(json_object_get(o, key)) || v < 0 || v > 65535)
		*bad = true;
	return (uint16_t)v;
}

/*
 * A variable's name the box may get from the answer: [A-Za-z_][A-Za-z0-9_]* (env= may give a
 * lower-case prefix), at most 128 bytes, and none the box's own set-up owns (PATH, HOME,
 * LD_*): the proxy is ours, but its answer is read like any input.
 */
static bool var_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 128 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return !(n == 4 && !memcmp(s, "PATH", 4)) && !(n == 4 && !memcmp(s, "HOME", 4)) &&
	       !(n >= 3 && !memcmp(s, "LD_", 3));
}

/* A backend's name (it names the box's key file): 1-32 of a-z, 0-9, '-'. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n <= 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* A string of the answer for the box: no NUL, no line break, no other control character. */
static bool text_ok(json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (!s || n > PROXY_READY_VALUE_MAX || strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* j's "env" (NAME=VALUE strings) and "key_var" into b; false when one is not as above. */
static bool parse_env(struct proxy_ready_backend *b, json_t *j)
{
	json_t *env = json_object_get(j, "env"), *kv = json_object_get(j, "key_var");
	size_t n = json_array_size(env);

	if (!json_is_array(env) || n > PROXY_READY_ENV_MAX)
		return false;
	b->env = calloc(n + 1, sizeof(*b->env));
	if (!b->env)
		return false;
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(env, i);
		const char *s = json_string_value(v), *eq = s ? strchr(s, '=') : NULL;

		if (!text_ok(v) || !eq || !var_name_ok(s, (size_t)(eq - s)))
			return false;
		if (!(b->env[b->n_env] = strdup(s)))
			return false;
		b->n_env++;
	}
	if (!kv || json_is_null(kv))
		return true;
	/* NAME, and NAME_FILE with a key folder: both must be names the box may get. */
	if (!text_ok(kv) || !var_name_ok(json_string_value(kv), json_string_length(kv)) ||
	    json_string_length(kv) > 120)
		return false;
	b->key_var = strdup(json_string_value(kv));
	return b->key_var != NULL;
}

/* j's "about" (an object of strings, keys [a-z-]) into b. */
static bool parse_about(struct proxy_ready_backend *b, json_t *j)
{
	json_t *about = json_object_get(j, "about"), *v;
	const char *k;
	size_t n = json_object_size(about);

	if (!about || json_is_null(about))
		return true;
	if (!json_is_object(about) || n > PROXY_READY_ABOUT_MAX)
		return false;
	b->about = calloc(2 * n + 1, sizeof(*b->about));
	if (!b->about)
		return false;
	json_object_foreach(about, k, v)
	{
		if (!*k || strlen(k) > 32 ||
		    strspn(k, "abcdefghijklmnopqrstuvwxyz-") != strlen(k) || !text_ok(v))
			return false;
		b->about[2 * b->n_about] = strdup(k);
		b->about[2 * b->n_about + 1] = strdup(json_string_value(v));
		b->n_about++;
		if (!b->about[2 * b->n_about - 2] || !b->about[2 * b->n_about - 1])
			return false;
	}
	return true;
}

static int parse_ok(struct proxy_ready *r, json_t *o)
{
	json_t *bs = json_object_get(o, "backends"), *hosts = json_object_get(o, "allow_hosts");
	bool bad = !json_is_array(bs) || !json_is_array(hosts);
	size_t n = bad ? 0 : json_array_size(bs), nh = bad ? 0 : json_array_size(hosts);

	r->backends = calloc(n ? n : 1, sizeof(*r->backends));
	r->ports = calloc(n ? n : 1, sizeof(*r->ports));
	r->allow_hosts = calloc(nh ? nh : 1, sizeof(*r->allow_hosts));
	if (!r->backends || !r->ports || !r->allow_hosts)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; !bad && i < n; i++) {
		struct proxy_ready_backend *b = &r->backends[i];
		json_t *j = json_array_get(bs, i);

		r->n_backends++;
		b->name = get_str(j, "name", &bad);
		b->placeholder = get_str(j, "placeholder", &bad);
		b->key_source = get_str(j, "key_source", &bad);
		b->login_path = get_str(j, "login_path", &bad);
		b->login_box = get_str(j, "login_box", &bad);
		b->port = r->ports[i] = get_port(j, "port", &bad);
		b->tls_port = get_port(j, "tls_port", &bad);
		bad = bad || !b->name || !b->placeholder || !name_ok(b->name) || !parse_env(b, j) ||
		      !parse_about(b, j);
	}
	for (size_t i = 0; !bad && i < nh; i++) {
		const char *h = json_string_value(json_array_get(hosts, i));

		r->allow_hosts[i] = h ? strdup(h) : NULL;
		bad = !r->allow_hosts[i];
		r->n_allow_hosts += !bad;
	}
	r->tls_ca = get_str(o, "tls_ca", &bad);
	return bad ? util_err(-EPROTO, "the proxy's answer is malformed") : 0;
}

int proxy_ready_parse(struct proxy_ready **out, const char *text)
{
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	json_t *err = json_object_get(o, "error");
	struct proxy_ready *r = NULL;
	int rc;

	*out = NULL;
	if (!json_is_object(o)) {
		rc = util_err(-EPROTO, "the proxy's answer is malformed");
	} else if (err) {
		json_int_t e = json_integer_value(json_object_get(o, "errno"));

		rc = util_err(e > 0 && e < 4096 ? -(int)e : -EIO, "%s",
			      json_is_string(err) ? json_string_value(err) : "the proxy failed");
	} else {
		r = calloc(1, sizeof(*r));
		rc = r ? parse_ok(r, o) : util_err(-ENOMEM, "out of memory");
	}
	json_decref(o);
	if (rc < 0) {
		proxy_ready_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

const struct proxy_ready_backend *proxy_ready_backend(const struct proxy_ready *r, const char *name)
{
	for (size_t i = 0; r && i < r->n_backends; i++)
		if (!strcmp(r->backends[i].name, name))
			return &r->backends[i];
	return NULL;
}

int proxy_ready_box_env(const struct proxy_ready *r, const char *key_dir, char ***out)
{
	static const char *const proxy_vars[] = {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
						 "http_proxy"};
	size_t n = 7, k = 0;
	char **env;
	bool failed;

	for (size_t i = 0; i < r->n_backends; i++)
		n += r->backends[i].n_env + 1;
	env = calloc(n, sizeof(*env));
	failed = !env;
	for (size_t i = 0; !failed && r->n_allow_hosts && i < ARB_ARRAY_LEN(proxy_vars); i++)
		env[k++] =
		    util_asprintf("%s=http://127.0.0.1:%u", proxy_vars[i], PROXY_EGRESS_PORT);
	if (!failed && r->n_allow_hosts) {
		env[k++] = strdup("NO_PROXY=127.0.0.1");
		env[k++] = strdup("no_proxy=127.0.0.1");
	}
	for (size_t i = 0; !failed && i < r->n_backends; i++) {
		const struct proxy_ready_backend *b = &r->backends[i];

		/* The backend's own variables, then its placeholder's (a login's and a token
		 * the proxy adds per request have none). */
		for (size_t j = 0; j < b->n_env; j++)
			env[k++] = strdup(b->env[j]);
		if (b->key_var)
			env[k++] = key_dir ? util_asprintf("%s_FILE=%s/%s.key", b->key_var, key_dir,
							   b->name)
					   : util_asprintf("%s=%s", b->key_var, b->placeholder);
	}
	for (size_t i = 0; !failed && i < k; i++)
		failed = !env[i];
	if (failed) {
		for (size_t j = 0; env && j < k; j++)
			free(env[j]);
		free(env);
		return util_err(-ENOMEM, "out of memory");
	}
	*out = env;
	return 0;
}
