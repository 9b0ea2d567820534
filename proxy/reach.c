/*
 * proxy/reach.c: whether a backend's upstream can be reached at all, checked once at launch:
 * its host resolves and a TCP connection opens within a few seconds. A client whose upstream
 * cannot be reached retries for minutes before it says anything; this says why at once.
 * Skipped when the host's traffic goes through a proxy ($https_proxy, $all_proxy, ...: the
 * upstream's own name then need not resolve here).
 */
#include "proxy/proxy_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REACH_TIMEOUT_MS 3000

static bool through_proxy(void)
{
	static const char *const vars[] = {"https_proxy", "HTTPS_PROXY", "http_proxy",
					   "HTTP_PROXY",  "all_proxy",	 "ALL_PROXY"};

	for (size_t i = 0; i < ARB_ARRAY_LEN(vars); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return true;
	}
	return false;
}

/* One address: 0 when a connection opens within ms, else -errno. */
static int try_connect(const struct addrinfo *ai, int ms)
{
	int fd =
	    socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int err = 0, rc;

	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		close(fd);
		return 0;
	}
	if (errno != EINPROGRESS) {
		err = -errno;
		close(fd);
		return err;
	}
	pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
	do
		rc = poll(&pfd, 1, ms);
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		err = -ETIMEDOUT;
	else if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = -errno;
	else
		err = -err;
	close(fd);
	return err;
}

int proxy_backend_reach(const struct proxy_backend *b)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = 0, gai;

	if (through_proxy())
		goto out;
	if (!u || curl_url_set(u, CURLUPART_URL, b->url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		rc = util_err(-EINVAL, "backend %s: '%s' is not a URL", b->name, b->url);
		goto out;
	}
	/* "[::1]" as curl gives it, without the brackets. */
	if (host[0] == '[' && strlen(host) > 2 && host[strlen(host) - 1] == ']') {
		size_t n = strlen(host);

		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	gai = getaddrinfo(host, port, &hints, &res);
	if (gai != 0) {
		rc = util_err(-EHOSTUNREACH,
			      "%s does not resolve (%s): the client would retry for minutes; check "
			      "the network or --upstream",
			      host, gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
		goto out;
	}
	rc = -EHOSTUNREACH;
	for (const struct addrinfo *ai = res; ai && rc < 0; ai = ai->ai_next)
		rc = try_connect(ai, REACH_TIMEOUT_MS);
	if (rc < 0)
		rc = util_err(rc,
			      "%s port %s cannot be reached (%s): the client would retry for "
			      "minutes; check the network or --upstream",
			      host, port, strerror(-rc));
out:
	if (res)
		freeaddrinfo(res);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}
