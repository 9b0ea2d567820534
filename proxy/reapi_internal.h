/*
 * proxy/reapi_internal.h: the reapi backend (remote builds over HTTP/2 cleartext): its
 * configuration, token source and checks (reapi_conf.c) and the HTTP/2 bridge (reapi.c).
 */
#ifndef ARB_PROXY_REAPI_INTERNAL_H
#define ARB_PROXY_REAPI_INTERNAL_H

#include <time.h>

#include "proxy/proxy_internal.h"

#define PROXY_REAPI_PORT 8717 /* in-box port of the reapi backend */

struct proxy_reapi {
	char *host;	     /* upstream host (IPv6 without brackets) */
	uint16_t port;	     /* upstream port */
	char *authority;     /* host:port, the :authority the upstream receives */
	char *instance;	     /* instance=: the only instance name the box may use; NULL: any */
	char *token_command; /* token-command=: Bazel's credential helper protocol */
	bool tls;	     /* grpcs://: TLS with ALPN h2 to the upstream, verified */
	void *ssl_ctx;	     /* SSL_CTX for it, made by proxy_reapi_preflight */
	void (*ssl_free)(void *ctx); /* set with ssl_ctx (reapi.c): the launcher links no TLS */
	pthread_mutex_t lock;
	char *cached; /* the helper's token (host memory only) */
	time_t expires;
};

/* reapi=TARGET: sets up b (port, url, the reapi part). -EINVAL with a message. */
int proxy_reapi_init(struct proxy_backend *b, const char *target) ARB_MUST_CHECK;
void proxy_reapi_free(struct proxy_reapi *r);
/* 1 when key is a reapi option (then *rc is the result), else 0. */
int proxy_reapi_set(struct proxy_backend *b, const char *key, const char *v, int *rc);
/*
 * Before the box starts: the upstream accepts a TCP connection and token-command= gives a
 * token. -EHOSTUNREACH or -EKEYREJECTED with a message naming the thing.
 */
int proxy_reapi_preflight(struct proxy_backend *b) ARB_MUST_CHECK;
/* True when the token comes from token-command= (no static credential to load). */
bool proxy_reapi_uses_command(const struct proxy_backend *b);
/* The bearer token for one stream (malloc'd; clear and free it). -errno with a message. */
int proxy_reapi_token(struct proxy_backend *b, char **out) ARB_MUST_CHECK;
/* Index in the allow-list of the gRPC method path, or -1. */
int proxy_reapi_method(const char *path);
/* The instance check's state on one stream's request bytes (reapi_scan.c). */
struct proxy_reapi_scan {
	bool off;	 /* nothing to check on this method (or no instance=) */
	bool ready;	 /* the first message named an allowed instance: open the upstream */
	bool bytestream; /* field 1 is a resource name "{instance}/blobs|uploads/..." */
	bool in_msg;	 /* inside a message's body ... */
	bool seen1;	 /* ... which had a field 1 */
	uint32_t left;	 /* bytes left in that body */
	uint64_t skip;	 /* bytes left of a field that is not checked */
	unsigned msgs;	 /* messages fully checked */
};

void proxy_reapi_scan_init(struct proxy_reapi_scan *sc, const struct proxy_reapi *r,
			   const char *path);
/*
 * Checks the request bytes p[0..n) that follow the ones already checked (complete: the
 * request ended there). *ok: how many of them may go upstream now (the rest are kept and
 * given again with what follows). 0, or -EPERM: a field 1 names another instance, a message
 * is compressed, malformed or past its length.
 */
int proxy_reapi_scan(struct proxy_reapi_scan *sc, const struct proxy_reapi *r,
		     const unsigned char *p, size_t n, bool complete, size_t *ok);
/* True when the connection's first bytes (in c->in) are HTTP/2's preface; reads until sure. */
bool proxy_reapi_sniff(struct proxy_conn *c);
/* Serves the HTTP/2 connection c until it ends. */
void proxy_reapi_serve(struct proxy_conn *c);

#endif
