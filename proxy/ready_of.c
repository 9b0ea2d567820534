/*
 * proxy/ready_of.c: a running proxy's answer to its launcher (struct proxy_ready), and the
 * box's environment made from it (proxy_box_env), so the proxy and its launcher say the same.
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int dup_or_null(char **dst, const char *s)
{
	*dst = s ? strdup(s) : NULL;
	return s && !*dst ? -ENOMEM : 0;
}

static int backend_of(const struct proxy *p, const struct proxy_backend *b, uint16_t port,
		      struct proxy_ready_backend *rb)
{
	int rc = dup_or_null(&rb->name, b->name) ?: dup_or_null(&rb->placeholder, b->placeholder)
		 ?: dup_or_null(&rb->key_source, proxy_backend_key_source(b));

	if (rc < 0)
		return util_err(rc, "out of memory");
	rb->port = port;
	rb->tls_port = b->tls_port;
	rc = proxy_backend_answer(b, port, rb);
	if (rc < 0 || !b->login)
		return rc;
	if (dup_or_null(&rb->login_path, proxy_login_path(b->login)) < 0)
		return util_err(-ENOMEM, "out of memory");
	return proxy_login_box_file(p, b->name, &rb->login_box);
}

int proxy_ready_of(struct proxy_ready **out, const struct proxy *p)
{
	struct proxy_ready *r = calloc(1, sizeof(*r));
	size_t n = p->n_backends;
	int rc = 0;

	*out = NULL;
	if (r) {
		r->backends = calloc(n ? n : 1, sizeof(*r->backends));
		r->ports = calloc(n ? n : 1, sizeof(*r->ports));
		r->allow_hosts = calloc(p->n_allow ? p->n_allow : 1, sizeof(char *));
	}
	if (!r || !r->backends || !r->ports || !r->allow_hosts)
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		r->n_backends++;
		/* The port the box comes to (with --net, the host's loopback listener's). */
		rc = backend_of(p, p->backends[i], p->ports[i], &r->backends[i]);
		r->ports[i] = p->ports[i];
	}
	for (size_t i = 0; rc == 0 && i < p->n_allow; i++) {
		r->allow_hosts[i] = strdup(p->allow_names[i]);
		rc = r->allow_hosts[i] ? (r->n_allow_hosts++, 0)
				       : util_err(-ENOMEM, "out of memory");
	}
	if (rc == 0 && proxy_tls_ca(p) && !(r->tls_ca = strdup(proxy_tls_ca(p))))
		rc = util_err(-ENOMEM, "out of memory");
	if (rc < 0) {
		proxy_ready_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int proxy_box_env(const struct proxy *p, const char *key_dir, char ***out)
{
	struct proxy_ready *r = NULL;
	int rc = proxy_ready_of(&r, p);

	rc = rc ?: proxy_ready_box_env(r, key_dir, out);
	proxy_ready_free(r);
	return rc;
}
