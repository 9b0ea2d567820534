/*
 * proxy/relay.c: the in-box relay. Listens on 127.0.0.1:PORT for each backend and copies
 * bytes between each accepted TCP connection and a new connection to the proxy's Unix
 * socket, one thread per direction (blocking I/O, no deadlock when both sides write at once),
 * passing half-closes through. It reads nothing and decides nothing: the policy is the
 * host's.
 */
#include "proxy/proxy_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct relay_pair {
	struct proxy_relay *r;
	int tcp, unix_fd;
	struct relay_pair *next, *prev;
};

struct proxy_relay {
	char *socket_path;
	int *lfds;
	size_t n;
	int wake[2];
	pthread_t thread;
	bool started;
	atomic_bool stopping;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n_pairs;
	struct relay_pair *pairs;
};

struct pump {
	int from, to;
};

static void *pump_main(void *arg)
{
	struct pump *pm = arg;
	char buf[PROXY_IO_BUF];

	for (;;) {
		ssize_t n = read(pm->from, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || proxy_send_all(pm->to, buf, (size_t)n) < 0)
			break;
	}
	/* Pass the end on; a failed side ends both directions. */
	shutdown(pm->to, SHUT_WR);
	shutdown(pm->from, SHUT_RD);
	return NULL;
}

static void *pair_main(void *arg)
{
	struct relay_pair *pp = arg;
	struct proxy_relay *r = pp->r;
	struct pump up = {pp->tcp, pp->unix_fd}, down = {pp->unix_fd, pp->tcp};
	pthread_t t;
	bool two = pthread_create(&t, NULL, pump_main, &down) == 0;

	pump_main(&up);
	if (two)
		pthread_join(t, NULL);
	else
		pump_main(&down);
	pthread_mutex_lock(&r->lock);
	if (pp->prev)
		pp->prev->next = pp->next;
	else
		r->pairs = pp->next;
	if (pp->next)
		pp->next->prev = pp->prev;
	close(pp->tcp);
	close(pp->unix_fd);
	r->n_pairs--;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	free(pp);
	return NULL;
}

static int connect_proxy(const char *path)
{
	struct sockaddr_un sa;
	socklen_t len;
	int dirfd = -1, fd = -1;

	if (proxy_sockaddr(path, &sa, &len, &dirfd) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, len) < 0) {
		close(fd);
		fd = -1;
	}
	if (dirfd >= 0)
		close(dirfd);
	return fd;
}

static void pair_start(struct proxy_relay *r, int tcp)
{
	struct relay_pair *pp = calloc(1, sizeof(*pp));
	int one = 1, ufd = connect_proxy(r->socket_path);
	pthread_attr_t attr;
	pthread_t t;

	if (!pp || ufd < 0)
		goto fail;
	setsockopt(tcp, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pp->r = r;
	pp->tcp = tcp;
	pp->unix_fd = ufd;
	pthread_mutex_lock(&r->lock);
	pp->next = r->pairs;
	if (r->pairs)
		r->pairs->prev = pp;
	r->pairs = pp;
	r->n_pairs++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, pair_main, pp) != 0) {
		r->pairs = pp->next;
		if (pp->next)
			pp->next->prev = NULL;
		r->n_pairs--;
		pthread_mutex_unlock(&r->lock);
		pthread_attr_destroy(&attr);
		goto fail;
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&r->lock);
	return;
fail:
	if (ufd >= 0)
		close(ufd);
	close(tcp);
	free(pp);
}

static void *accept_main(void *arg)
{
	struct proxy_relay *r = arg;
	struct pollfd *pfd = calloc(r->n + 1, sizeof(*pfd));

	if (!pfd)
		return NULL;
	for (size_t i = 0; i < r->n; i++)
		pfd[i] = (struct pollfd){.fd = r->lfds[i], .events = POLLIN};
	pfd[r->n] = (struct pollfd){.fd = r->wake[0], .events = POLLIN};
	while (!atomic_load(&r->stopping)) {
		if (poll(pfd, r->n + 1, -1) < 0 || pfd[r->n].revents)
			continue;
		for (size_t i = 0; i < r->n; i++) {
			int fd;

			if (!(pfd[i].revents & POLLIN))
				continue;
			fd = accept4(r->lfds[i], NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				pair_start(r, fd);
			else if (errno == EMFILE || errno == ENFILE)
				usleep(10000);
		}
	}
	free(pfd);
	return NULL;
}

int proxy_relay_start(struct proxy_relay **out, const char *socket_path, const uint16_t *ports,
		      size_t n)
{
	struct proxy_relay *r = calloc(1, sizeof(*r));
	int rc = -ENOMEM;

	*out = NULL;
	if (!r)
		return util_err(-ENOMEM, "out of memory");
	r->wake[0] = r->wake[1] = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->socket_path = strdup(socket_path);
	r->lfds = calloc(n ? n : 1, sizeof(*r->lfds));
	if (!r->socket_path || !r->lfds || pipe2(r->wake, O_CLOEXEC) < 0) {
		rc = util_err(-ENOMEM, "out of resources");
		goto fail;
	}
	for (; r->n < n; r->n++) {
		rc = proxy_listen_loopback(ports[r->n], &r->lfds[r->n], NULL);
		if (rc < 0)
			goto fail;
	}
	rc = -pthread_create(&r->thread, NULL, accept_main, r);
	if (rc < 0) {
		util_err(rc, "cannot start the relay thread: %s", strerror(-rc));
		goto fail;
	}
	r->started = true;
	*out = r;
	return 0;
fail:
	proxy_relay_free(r);
	return rc;
}

void proxy_relay_free(struct proxy_relay *r)
{
	if (!r)
		return;
	atomic_store(&r->stopping, true);
	if (r->started) {
		if (write(r->wake[1], "x", 1) < 0) {
			/* one byte into an empty pipe */
		}
		pthread_join(r->thread, NULL);
	}
	pthread_mutex_lock(&r->lock);
	for (struct relay_pair *pp = r->pairs; pp; pp = pp->next) {
		shutdown(pp->tcp, SHUT_RDWR);
		shutdown(pp->unix_fd, SHUT_RDWR);
	}
	while (r->n_pairs > 0)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < r->n; i++)
		close(r->lfds[i]);
	if (r->wake[0] >= 0)
		close(r->wake[0]);
	if (r->wake[1] >= 0)
		close(r->wake[1]);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r->lfds);
	free(r->socket_path);
	free(r);
}

int proxy_relay_arg_parse(const char *arg, uint16_t **ports, size_t *n, char **socket_path)
{
	const char *eq = strchr(arg, '=');
	uint16_t *out = NULL;
	size_t k = 0;
	const char *s = arg;

	*ports = NULL;
	*n = 0;
	*socket_path = NULL;
	if (!eq || eq == arg || eq[1] != '/')
		return util_err(-EINVAL, "relay '%s' is not PORT[,PORT...]=/SOCKET", arg);
	out = calloc((size_t)(eq - arg) / 2 + 1, sizeof(*out));
	if (!out)
		return util_err(-ENOMEM, "out of memory");
	while (s < eq) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v == 0 || v > 65535 || (end != eq && *end != ',') || *s == '+' ||
		    *s == '-' || *s == ' ') {
			free(out);
			return util_err(-EINVAL, "relay '%s': bad port list", arg);
		}
		out[k++] = (uint16_t)v;
		s = end == eq ? eq : end + 1;
	}
	*socket_path = strdup(eq + 1);
	if (!*socket_path) {
		free(out);
		return util_err(-ENOMEM, "out of memory");
	}
	*ports = out;
	*n = k;
	return 0;
}

char *proxy_relay_arg_format(const uint16_t *ports, size_t n, const char *socket_path)
{
	size_t cap = n * 6 + strlen(socket_path) + 2, off = 0;
	char *out = malloc(cap);

	for (size_t i = 0; out && i < n; i++)
		off += (size_t)snprintf(out + off, cap - off, "%s%u", i ? "," : "",
					(unsigned)ports[i]);
	if (out)
		snprintf(out + off, cap - off, "=%s", socket_path);
	return out;
}

int proxy_relay_hook_start(const char *arg, void **state)
{
	struct proxy_relay *r = NULL;
	uint16_t *ports = NULL;
	char *path = NULL;
	size_t n = 0;
	int rc;

	rc = proxy_relay_arg_parse(arg, &ports, &n, &path);
	if (rc == 0)
		rc = proxy_relay_start(&r, path, ports, n);
	free(ports);
	free(path);
	*state = r;
	return rc;
}

void proxy_relay_hook_stop(void *state)
{
	proxy_relay_free(state);
}
