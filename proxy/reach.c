/*
 * proxy/reach.c: whether a backend's upstream can be reached at all, checked once at launch:
 * its host resolves and a TCP connection opens within a few seconds. A client whose upstream
 * cannot be reached retries for minutes before it says anything; this says why at once.
 * Skipped when the host's traffic goes through a proxy ($https_proxy, $all_proxy, ...: the
 * upstream's own name then need not resolve here).
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
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

/*
 * The host and port of url (http or https, no user part: proxy_url_check said so), without
 * libcurl: the launcher has none. host without an IPv6 literal's brackets. 0 or -EINVAL.
 */
static int url_host_port(const char *url, char *host, size_t hn, char *port, size_t pn)
{
	bool tls = !strncmp(url, "https://", 8);
	const char *a = tls ? url + 8 : !strncmp(url, "http://", 7) ? url + 7 : NULL;
	size_t len = a ? strcspn(a, "/") : 0, h;
	const char *colon;

	if (!a || len == 0)
		return -EINVAL;
	if (a[0] == '[') {
		const char *end = memchr(a, ']', len);

		if (!end)
			return -EINVAL;
		h = (size_t)(end - a - 1);
		colon = end + 1 < a + len && end[1] == ':' ? end + 1 : NULL;
		if (!colon && end + 1 != a + len)
			return -EINVAL;
		a++;
	} else {
		colon = memchr(a, ':', len);
		h = colon ? (size_t)(colon - a) : len;
	}
	if (h == 0 || h >= hn)
		return -EINVAL;
	memcpy(host, a, h);
	host[h] = '\0';
	if (colon) {
		size_t p = strcspn(colon + 1, "/");

		if (p == 0 || p >= pn || strspn(colon + 1, "0123456789") != p)
			return -EINVAL;
		memcpy(port, colon + 1, p);
		port[p] = '\0';
	} else {
		snprintf(port, pn, "%s", tls ? "443" : "80");
	}
	return 0;
}

int proxy_backend_reach(const struct proxy_backend *b)
{
	char host[256], port[8];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int rc = 0, gai;

	if (through_proxy())
		goto out;
	if (url_host_port(b->url, host, sizeof(host), port, sizeof(port)) < 0) {
		rc = util_err(-EINVAL, "backend %s: '%s' is not a URL", b->name, b->url);
		goto out;
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
	return rc;
}
