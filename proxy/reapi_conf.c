/*
 * proxy/reapi_conf.c: the reapi backend's configuration (reapi=HOST[:PORT], instance=,
 * token-file=, token-command=), its token source on the host, and the per-stream checks
 * (the method allow-list and the instance name in the first request message).
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
#include <openssl/ssl.h>

#define TOKEN_OUT_MAX (64 * 1024)
#define TOKEN_TTL_S   300 /* a helper's answer without "expires" is used this long */

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
	SSL_CTX_free(r->ssl_ctx);
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

int proxy_reapi_box_env(const struct proxy_backend *b, char **remote, char **instance)
{
	*remote = util_asprintf("%s_REMOTE=grpc://127.0.0.1:%u", b->env_prefix, b->port);
	*instance = util_asprintf("%s_INSTANCE=%s", b->env_prefix,
				  b->reapi->instance ? b->reapi->instance : "");
	return *remote && *instance ? 0 : -ENOMEM;
}

bool proxy_reapi_uses_command(const struct proxy_backend *b)
{
	return b->reapi && b->reapi->token_command;
}

/* Runs the credential helper (Bazel's protocol: {"uri": ...} on stdin, {"headers":
 * {"Authorization": ["Bearer T"]}, "expires": "RFC 3339"} on stdout). *out: "Bearer T". */
static int run_helper(struct proxy_reapi *r, char **out, time_t *expires)
{
	int in = -1, op[2] = {-1, -1}, rc = -EIO, status = 0;
	char *req = util_asprintf("{\"uri\":\"https://%s/\"}\n", r->host), *buf = NULL;
	size_t len = 0;
	json_t *root = NULL, *auth;
	pid_t pid;

	/* The request from a memory file: a helper that exits without reading it cannot
	 * raise SIGPIPE here. */
	in = req ? memfd_create("reapi-helper-request", MFD_CLOEXEC) : -1;
	if (in < 0 || write(in, req, strlen(req)) != (ssize_t)strlen(req) ||
	    lseek(in, 0, SEEK_SET) != 0 || pipe2(op, O_CLOEXEC) < 0) {
		rc = util_err(-errno ?: -ENOMEM, "backend reapi: cannot run token-command");
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		dup2(in, 0);
		dup2(op[1], 1);
		execl("/bin/sh", "sh", "-c", r->token_command, (char *)NULL);
		_exit(127);
	}
	close(op[1]);
	op[1] = -1;
	if (pid < 0) {
		rc = util_err(-errno, "backend reapi: cannot run token-command");
		goto out;
	}
	buf = malloc(TOKEN_OUT_MAX + 1);
	for (ssize_t n = 1; buf && n > 0 && len<TOKEN_OUT_MAX; len += n> 0 ? (size_t)n : 0)
		n = read(op[0], buf + len, TOKEN_OUT_MAX - len);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!buf || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rc = util_err(-EKEYREJECTED, "backend reapi: token-command failed");
		goto out;
	}
	root = json_loadb(buf, len, 0, NULL);
	auth =
	    json_array_get(json_object_get(json_object_get(root, "headers"), "Authorization"), 0);
	if (!json_is_string(auth) || !util_str_has_prefix(json_string_value(auth), "Bearer ")) {
		rc = util_err(-EKEYREJECTED,
			      "backend reapi: token-command gave no headers.Authorization Bearer");
		goto out;
	}
	*out = strdup(json_string_value(auth) + 7);
	*expires = time(NULL) + TOKEN_TTL_S;
	if (json_is_string(json_object_get(root, "expires"))) {
		struct tm tm = {0};

		if (strptime(json_string_value(json_object_get(root, "expires")),
			     "%Y-%m-%dT%H:%M:%S", &tm))
			*expires = timegm(&tm) - 30;
	}
	rc = *out ? 0 : -ENOMEM;
out:
	if (buf)
		explicit_bzero(buf, len);
	free(buf);
	free(req);
	json_decref(root);
	if (in >= 0)
		close(in);
	for (int i = 0; i < 2; i++)
		if (op[i] >= 0)
			close(op[i]);
	return rc;
}

int proxy_reapi_token(struct proxy_backend *b, char **out)
{
	struct proxy_reapi *r = b->reapi;
	int rc = 0;

	*out = NULL;
	if (!r->token_command) {
		*out = b->credential ? strdup(b->credential) : NULL;
		return *out ? 0 : -ENOKEY;
	}
	pthread_mutex_lock(&r->lock);
	if (!r->cached || time(NULL) >= r->expires) {
		proxy_secret_free(&r->cached);
		rc = run_helper(r, &r->cached, &r->expires);
	}
	if (rc == 0)
		*out = strdup(r->cached);
	pthread_mutex_unlock(&r->lock);
	return rc < 0 ? rc : *out ? 0 : -ENOMEM;
}

int proxy_reapi_method(const char *path)
{
	for (size_t i = 0; i < ARB_ARRAY_LEN(allowed); i++)
		if (!strcmp(allowed[i], path))
			return (int)i;
	return -1;
}

/* Reads a protobuf varint; 0 when incomplete or too long. */
static size_t varint(const unsigned char *p, size_t n, uint64_t *v)
{
	*v = 0;
	for (size_t i = 0; i < n && i < 10; i++) {
		*v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80))
			return i + 1;
	}
	return 0;
}

int proxy_reapi_check_instance(const struct proxy_reapi *r, const char *path,
			       const unsigned char *msg, size_t n, bool complete)
{
	bool bytestream = util_str_has_prefix(path, "/google.bytestream.");
	const char *inst = r->instance;
	size_t il = inst ? strlen(inst) : 0, off, vl;
	uint64_t mlen, tag, len;

	if (!inst || util_str_has_prefix(path, "/google.longrunning.") ||
	    strstr(path, "/WaitExecution"))
		return 0; /* nothing to check, or an operation name: not checked */
	if (n < 5)
		return complete ? -EPERM : -EAGAIN;
	if (msg[0] != 0)
		return -EPERM; /* a compressed message cannot be inspected */
	mlen = (uint64_t)msg[1] << 24 | (uint64_t)msg[2] << 16 | (uint64_t)msg[3] << 8 | msg[4];
	off = 5;
	if (n == off && mlen == 0)
		return bytestream || il ? -EPERM : 0;
	if (n == off)
		return complete ? -EPERM : -EAGAIN;
	vl = varint(msg + off, n - off, &tag);
	if (!vl)
		return complete || n - off >= 10 ? -EPERM : -EAGAIN;
	if (tag != 0x0a) /* field 1 absent: an empty instance name */
		return !bytestream && il == 0 ? 0 : -EPERM;
	off += vl;
	vl = varint(msg + off, n - off, &len);
	if (!vl)
		return complete || n - off >= 10 ? -EPERM : -EAGAIN;
	off += vl;
	if (len > 4096 || off + len > 5 + mlen)
		return -EPERM;
	if (n - off < len)
		return complete ? -EPERM : -EAGAIN;
	if (!bytestream)
		return len == il && !memcmp(msg + off, inst, il) ? 0 : -EPERM;
	/* ByteStream: "{instance}/blobs/..." or "{instance}/uploads/...", no ".." segment. */
	if (il) {
		if (len <= il || memcmp(msg + off, inst, il) || msg[off + il] != '/')
			return -EPERM;
		off += il + 1;
		len -= il + 1;
	}
	if (memmem(msg + off, len, "..", 2))
		return -EPERM;
	if ((len > 6 && !memcmp(msg + off, "blobs/", 6)) ||
	    (len > 8 && !memcmp(msg + off, "uploads/", 8)))
		return 0;
	return -EPERM;
}
