/*
 * proxy/answer.c: each backend kind's own part of the proxy's answer (proxy_backend_answer):
 * the box's variables, the variable its placeholder goes in, and what --explain says of it.
 * A new kind of backend says here what its box gets; the launcher (lib/box_proxy.c) and the
 * answer's form (ready.c) know no kinds. Never a credential.
 */
#include "proxy/proxy_internal.h"
#include "proxy/reapi_internal.h"
#include "proxy/vertex.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends a formatted string to (*v, *n); -ENOMEM. */
static int ARB_PRINTF(3, 4) addf(char ***v, size_t *n, const char *fmt, ...)
{
	char **grown = realloc(*v, (*n + 2) * sizeof(**v)), *s = NULL;
	va_list ap;

	if (!grown)
		return util_err(-ENOMEM, "out of memory");
	*v = grown;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		return util_err(-ENOMEM, "out of memory");
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return 0;
}

static int fact(struct proxy_ready_backend *rb, const char *key, const char *value)
{
	size_t n = 2 * rb->n_about;
	int rc = addf(&rb->about, &n, "%s", key) ?: addf(&rb->about, &n, "%s", value);

	rb->n_about = n / 2;
	return rc;
}

/* Where the credential comes from: a kind and a host path or variable name, never a value. */
static int credential_fact(const struct proxy_backend *b, struct proxy_ready_backend *rb,
			   const char *key)
{
	char *s = b->login	? util_asprintf("login %s", proxy_login_path(b->login))
		  : b->key_file ? util_asprintf("file %s", b->key_file)
		  : b->key_json ? util_asprintf("key-json %s", b->key_json)
		  : b->auth == PROXY_AUTH_NONE ? strdup("none")
					       : util_asprintf("host variable $%s", b->key_env);
	int rc = s ? fact(rb, key, s) : util_err(-ENOMEM, "out of memory");

	free(s);
	return rc;
}

/* reapi: the gRPC address and the instance; the token is added per stream by the proxy. */
static int reapi_answer(const struct proxy_backend *b, uint16_t port,
			struct proxy_ready_backend *rb)
{
	const struct proxy_reapi *r = b->reapi;
	char *up = util_asprintf("%s://%s", r->tls ? "grpcs" : "grpc", r->authority);
	int rc = addf(&rb->env, &rb->n_env, "%s_REMOTE=grpc://127.0.0.1:%u", b->env_prefix, port)
		     ?: addf(&rb->env, &rb->n_env, "%s_INSTANCE=%s", b->env_prefix,
			     r->instance ? r->instance : "");

	rc = rc ?: up ? fact(rb, "upstream", up) : util_err(-ENOMEM, "out of memory");
	rc = rc ?: fact(rb, "instance", r->instance ? r->instance : "any (not checked)");
	if (rc == 0 && r->token_command)
		rc = fact(rb, "token", "token-command (run on the host)");
	else if (rc == 0)
		rc = credential_fact(b, rb, "token");
	free(up);
	return rc;
}

/* An HTTP/1.1 backend: its base URLs; a key variable unless a login or vertex mints one. */
static int http_answer(const struct proxy_backend *b, uint16_t port, struct proxy_ready_backend *rb)
{
	const char *bp = b->base_path ? b->base_path : "";
	int rc = addf(&rb->env, &rb->n_env, "%s_BASE_URL=http://127.0.0.1:%u%s", b->env_prefix,
		      port, bp);

	if (rc == 0 && b->tls_port)
		rc = addf(&rb->env, &rb->n_env, "%s_TLS_BASE_URL=https://127.0.0.1:%u%s",
			  b->env_prefix, b->tls_port, bp);
	if (rc == 0 && !b->login && !b->vertex &&
	    !(rb->key_var = util_asprintf("%s_API_KEY", b->env_prefix)))
		rc = util_err(-ENOMEM, "out of memory");
	rc = rc ?: fact(rb, "upstream", b->url);
	if (rc == 0 && b->vertex) {
		rc = fact(rb, "project", proxy_vertex_project(b->vertex))
			 ?: fact(rb, "region", proxy_vertex_region(b->vertex));
		rc = rc ?: fact(rb, "credential", "token minted on the host from ADC");
		rc = rc ?: fact(rb, "adc", proxy_vertex_adc(b->vertex));
	} else if (rc == 0) {
		rc = credential_fact(b, rb, "credential");
	}
	return rc;
}

int proxy_backend_answer(const struct proxy_backend *b, uint16_t port,
			 struct proxy_ready_backend *rb)
{
	int rc = b->reapi ? reapi_answer(b, port, rb) : http_answer(b, port, rb);

	if (rc == 0 && b->ca_file)
		rc = fact(rb, "ca-file", b->ca_file);
	return rc;
}
