/*
 * proxy/reapi_conf.c: the reapi backend's configuration (reapi=HOST[:PORT], instance=,
 * token-file=, token-command=) and the per-stream checks (the method allow-list and the
 * instance check in reapi_scan.c). No TLS and no token here: the launcher links
 * it (the token: reapi_token.c; the bridge and its TLS: reapi.c, arborinth_proxy only).
 */
#include "proxy/reapi_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

static const char *const allowed[] = {
    "/build.bazel.remote.execution.v2.Capabilities/GetCapabilities",
    "/build.bazel.remote.execution.v2.ActionCache/GetActionResult",
    "/build.bazel.remote.execution.v2.ContentAddressableStorage/FindMissingBlobs",
    "/build.bazel.remote.execution.v2.ContentAddressableStorage/BatchUpdateBlobs",
    "/build.bazel.remote.execution.v2.ContentAddressableStorage/BatchReadBlobs",
    "/build.bazel.remote.execution.v2.ContentAddressableStorage/GetTree",
    "/google.bytestream.ByteStream/Read",
    "/google.bytestream.ByteStream/Write",
    "/google.bytestream.ByteStream/QueryWriteStatus",
    "/build.bazel.remote.execution.v2.Execution/Execute",
    "/build.bazel.remote.execution.v2.Execution/WaitExecution",
    "/google.longrunning.Operations/GetOperation",
    "/google.longrunning.Operations/ListOperations",
    "/google.longrunning.Operations/CancelOperation",
    "/google.longrunning.Operations/DeleteOperation",
    "/google.longrunning.Operations/WaitOperation",
};

void proxy_reapi_free(struct proxy_reapi *r)
{
	if (!r)
		return;
	free(r->host);
	free(r->authority);
	free(r->instance);
	free(r->token_command);
	proxy_secret_free(&r->cached);
	if (r->ssl_ctx && r->ssl_free)
		r->ssl_free(r->ssl_ctx);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* grpcs://HOST[:PORT] or HOST[:PORT] or [V6]:PORT (TLS, 443), grpc://HOST[:PORT] (h2c, 80). */
int proxy_reapi_init(struct proxy_backend *b, const char *target)
{
	struct proxy_reapi *r = calloc(1, sizeof(*r));
	const char *h = target, *colon;
	long port = 443;
	int rc = 0;

	if (!r)
		return util_err(-ENOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	b->reapi = r;
	b->port = PROXY_REAPI_PORT;
	b->auth = PROXY_AUTH_BEARER;
	if (!target || !*target)
		return util_err(-EINVAL, "backend reapi needs the endpoint: reapi=HOST[:PORT]");
	r->tls = true; /* as Bazel: without a scheme, TLS */
	if (util_str_has_prefix(h, "grpcs://")) {
		h += 8;
	} else if (util_str_has_prefix(h, "grpc://")) {
		r->tls = false;
		h += 7;
		port = 80;
	}
	colon = strrchr(h, ':');
	if (h[0] == '[') {
		const char *end = strchr(h, ']');

		if (!end || (end[1] && end[1] != ':'))
			return util_err(-EINVAL, "backend reapi: bad endpoint '%s'", target);
		r->host = strndup(h + 1, (size_t)(end - h - 1));
		colon = end[1] ? end + 1 : NULL;
	} else {
		r->host = colon ? strndup(h, (size_t)(colon - h)) : strdup(h);
	}
	if (!r->host)
		return util_err(-ENOMEM, "out of memory");
	if (colon) {
		char *end;

		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || port < 1 || port > 65535)
			return util_err(-EINVAL, "backend reapi: bad port in '%s'", target);
	}
	if (!*r->host || strlen(r->host) > 253)
		return util_err(-EINVAL, "backend reapi: bad host in '%s'", target);
	for (const char *s = r->host; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(".-_:", *s))
			return util_err(-EINVAL, "backend reapi: bad host in '%s'", target);
	r->port = (uint16_t)port;
	r->authority = strchr(r->host, ':') ? util_asprintf("[%s]:%ld", r->host, port)
					    : util_asprintf("%s:%ld", r->host, port);
	b->url = util_asprintf("grpc://%s", r->authority ? r->authority : "");
	if (!r->authority || !b->url)
		rc = util_err(-ENOMEM, "out of memory");
	return rc;
}

/* 1: the option was the reapi backend's (*rc its result); 0: not one of its options. */
int proxy_reapi_set(struct proxy_backend *b, const char *key, const char *v, int *rc)
{
	struct proxy_reapi *r = b->reapi;
	char **dst;

	if (!strcmp(key, "instance")) {
		if (strlen(v) > 256 || strstr(v, "..") || strpbrk(v, " \\%?#")) {
			*rc = util_err(-EINVAL, "backend reapi: bad instance name '%s'", v);
			return 1;
		}
		dst = &r->instance;
	} else if (!strcmp(key, "token-command")) {
		if (!*v) {
			*rc = util_err(-EINVAL, "backend reapi: token-command needs a command");
			return 1;
		}
		dst = &r->token_command;
	} else if (!strcmp(key, "token-file")) {
		*rc = proxy_backend_set(b, "key-file", v);
		return 1;
	} else {
		return 0;
	}
	free(*dst);
	*dst = strdup(v);
	*rc = *dst ? 0 : util_err(-ENOMEM, "out of memory");
	return 1;
}

bool proxy_reapi_uses_command(const struct proxy_backend *b)
{
	return b->reapi && b->reapi->token_command;
}

int proxy_reapi_method(const char *path)
{
	for (size_t i = 0; i < ARB_ARRAY_LEN(allowed); i++)
		if (!strcmp(allowed[i], path))
			return (int)i;
	return -1;
}
