/*
 * proxy/sockio.c: socket helpers shared by the proxy and the in-box relay. Kept apart so the
 * relay (linked into box-init) does not pull in the proxy's HTTP and TLS libraries.
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

int proxy_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -(n < 0 ? errno : EPIPE);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int proxy_sockaddr(const char *path, struct sockaddr_un *sa, socklen_t *len, int *dirfd)
{
	const char *slash;
	char *dir;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	*dirfd = -1;
	if (strlen(path) < sizeof(sa->sun_path)) {
		memcpy(sa->sun_path, path, strlen(path) + 1);
	} else {
		/* Too long for sun_path: reach it through our fd of its directory. */
		slash = strrchr(path, '/');
		if (!slash || strlen(slash) > 64)
			return util_err(-ENAMETOOLONG, "socket path too long: %s", path);
		dir = strndup(path, (size_t)(slash - path) + 1);
		*dirfd = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		free(dir);
		if (*dirfd < 0)
			return util_err(-errno, "cannot open the directory of %s: %s", path,
					strerror(errno));
		snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d%s", *dirfd, slash);
	}
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa->sun_path) + 1);
	return 0;
}

int proxy_listen_loopback(uint16_t port, int *fd_out, uint16_t *bound)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, rc;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return util_err(-errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		rc = util_err(-errno, "cannot listen on 127.0.0.1:%u: %s", port, strerror(errno));
		close(fd);
		return rc;
	}
	*fd_out = fd;
	if (bound)
		*bound = ntohs(sa.sin_port);
	return 0;
}
