/*
 * proxy/ready.c: arborinth_proxy's answer on its ready pipe, the only owner of its form: one
 * line of JSON with what the box needs (ports, placeholders, the box's login files, the TLS
 * CA), or {"errno": N, "error": "..."} when it could not start. Never a credential. The box's
 * environment is computed from it here too, for the proxy (proxy_box_env) and the launcher.
 */
#include "proxy/proxy.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
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
		    json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b, s:o, s:b, s:i, s:i}",
			      "name", b->name, "placeholder", b->placeholder, "env_prefix",
			      b->env_prefix, "base_path", str_or_null(b->base_path), "key_source",
			      str_or_null(b->key_source), "login_path", str_or_null(b->login_path),
			      "login_box", str_or_null(b->login_box), "reapi", b->reapi,
			      "reapi_instance", str_or_null(b->reapi_instance), "vertex", b->vertex,
			      "port", (int)b->port, "tls_port", (int)b->tls_port);

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
		free(b->env_prefix);
		free(b->base_path);
		free(b->key_source);
		free(b->login_path);
		free(b->reapi_instance);
		free(b->login_box);
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
		b->env_prefix = get_str(j, "env_prefix", &bad);
		b->base_path = get_str(j, "base_path", &bad);
		b->key_source = get_str(j, "key_source", &bad);
		b->login_path = get_str(j, "login_path", &bad);
		b->login_box = get_str(j, "login_box", &bad);
		b->reapi = json_is_true(json_object_get(j, "reapi"));
		b->reapi_instance = get_str(j, "reapi_instance", &bad);
		b->vertex = json_is_true(json_object_get(j, "vertex"));
		b->port = r->ports[i] = get_port(j, "port", &bad);
		b->tls_port = get_port(j, "tls_port", &bad);
		bad = bad || !b->name || !b->placeholder || !b->env_prefix;
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
	char **env = calloc(4 * r->n_backends + 7, sizeof(*env));
	size_t k = 0;
	bool failed = !env;

	for (size_t i = 0; !failed && r->n_allow_hosts && i < ARB_ARRAY_LEN(proxy_vars); i++)
		env[k++] =
		    util_asprintf("%s=http://127.0.0.1:%u", proxy_vars[i], PROXY_EGRESS_PORT);
	if (!failed && r->n_allow_hosts) {
		env[k++] = strdup("NO_PROXY=127.0.0.1");
		env[k++] = strdup("no_proxy=127.0.0.1");
	}
	for (size_t i = 0; !failed && i < r->n_backends; i++) {
		const struct proxy_ready_backend *b = &r->backends[i];
		const char *bp = b->base_path ? b->base_path : "";

		env[k++] =
		    util_asprintf("%s_BASE_URL=http://127.0.0.1:%u%s", b->env_prefix, b->port, bp);
		if (b->tls_port)
			env[k++] = util_asprintf("%s_TLS_BASE_URL=https://127.0.0.1:%u%s",
						 b->env_prefix, b->tls_port, bp);
		/* A login's placeholders live in the box's login file: a key variable would make
		 * the client prefer an API key. A reapi backend's gRPC clients get its address and
		 * instance, and no key at all (the proxy adds the token per stream). */
		if (b->reapi) {
			env[k++] =
			    util_asprintf("%s_REMOTE=grpc://127.0.0.1:%u", b->env_prefix, b->port);
			env[k++] = util_asprintf("%s_INSTANCE=%s", b->env_prefix,
						 b->reapi_instance ? b->reapi_instance : "");
		} else if (!b->login_path && !b->vertex)
			env[k++] =
			    key_dir ? util_asprintf("%s_API_KEY_FILE=%s/%s.key", b->env_prefix,
						    key_dir, b->name)
				    : util_asprintf("%s_API_KEY=%s", b->env_prefix, b->placeholder);
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
