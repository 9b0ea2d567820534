/*
 * proxy/reapi_token.c: the reapi backend's token from token-command= (Bazel's credential
 * helper protocol), run on the host by arborinth_proxy only (the launcher links
 * reapi_conf.c, not this).
 */
#include "proxy/reapi_internal.h"

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

#define TOKEN_OUT_MAX (64 * 1024)
#define TOKEN_TTL_S   300 /* a helper's answer without "expires" is used this long */

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
