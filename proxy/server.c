/*
 * proxy/server.c: the proxy's lifecycle: credentials and placeholders, the Unix socket, the
 * accept thread, one thread per connection, and shutdown that aborts what is in flight.
 */
#include "proxy/proxy_internal.h"
#include "proxy/reapi_internal.h"
#include "proxy/vertex.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct proxy_client {
	struct proxy *p;
	int fd;
	enum proxy_listen_kind kind; /* what the connection came to */
	pthread_t thread;
	struct proxy_client *next, *prev;
};

static void client_unlink(struct proxy *p, struct proxy_client *cl)
{
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		p->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
}

static void *client_main(void *arg)
{
	struct proxy_client *cl = arg;
	struct proxy *p = cl->p;

	if (cl->kind == PROXY_LISTEN_EGRESS)
		proxy_egress_serve(p, cl->fd);
	else if (cl->kind == PROXY_LISTEN_TLS)
		proxy_tls_serve(p, cl->fd);
	else
		proxy_conn_serve(p, cl->fd);
	pthread_mutex_lock(&p->lock);
	client_unlink(p, cl);
	close(cl->fd); /* under the lock: proxy_free never shuts down a reused fd number */
	p->n_conns--;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	free(cl);
	return NULL;
}

static void client_start(struct proxy *p, int fd, enum proxy_listen_kind kind)
{
	struct proxy_client *cl = calloc(1, sizeof(*cl));
	pthread_attr_t attr;
	int rc;

	pthread_mutex_lock(&p->lock);
	if (!cl || p->n_conns >= p->max_conns) {
		pthread_mutex_unlock(&p->lock);
		free(cl);
		(void)proxy_send_error(fd, 503, "too many connections");
		close(fd);
		return;
	}
	cl->p = p;
	cl->fd = fd;
	cl->kind = kind;
	cl->next = p->clients;
	if (p->clients)
		p->clients->prev = cl;
	p->clients = cl;
	p->n_conns++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 512 * 1024);
	rc = pthread_create(&cl->thread, &attr, client_main, cl);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		client_unlink(p, cl);
		p->n_conns--;
		pthread_mutex_unlock(&p->lock);
		(void)proxy_send_error(fd, 503, "too many connections");
		close(fd);
		free(cl);
		return;
	}
	pthread_mutex_unlock(&p->lock);
}

static void *accept_main(void *arg)
{
	struct proxy *p = arg;
	size_t n = 1 + p->n_ls;
	struct pollfd *pfd = calloc(n, sizeof(*pfd));

	if (!pfd)
		return NULL;
	pfd[0] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
	for (size_t i = 0; i < p->n_ls; i++)
		pfd[1 + i] = (struct pollfd){.fd = p->ls[i].fd, .events = POLLIN};
	while (!atomic_load(&p->stopping)) {
		if (poll(pfd, (nfds_t)n, -1) < 0 || pfd[0].revents)
			continue;
		for (size_t i = 1; i < n; i++) {
			int fd;

			if (!(pfd[i].revents & POLLIN))
				continue;
			fd = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				client_start(p, fd, p->ls[i - 1].kind);
			else if (errno == EMFILE || errno == ENFILE)
				usleep(10000);
		}
	}
	free(pfd);
	return NULL;
}

static int listen_on(int *out, const char *path)
{
	struct sockaddr_un sa;
	socklen_t len;
	int dirfd = -1, fd = -1, rc;

	rc = proxy_sockaddr(path, &sa, &len, &dirfd);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = util_err(-errno, "socket: %s", strerror(errno));
		goto out;
	}
	/* A live socket means another proxy serves this box; a stale one is replaced. */
	if (connect(fd, (struct sockaddr *)&sa, len) == 0) {
		rc = util_err(-EADDRINUSE, "a proxy already listens on %s", path);
		goto out;
	}
	close(fd);
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0) {
		rc = util_err(-errno, "cannot bind %s: %s", path, strerror(errno));
		goto out;
	}
	/* Owner only, before listen: until then nobody can connect. */
	if (chmod(sa.sun_path, 0600) < 0 || listen(fd, 128) < 0) {
		rc = util_err(-errno, "cannot listen on %s: %s", path, strerror(errno));
		unlink(sa.sun_path);
		goto out;
	}
	*out = fd;
	fd = -1;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

/* Adds a listener (fd owned from here on; path: a Unix socket to remove at the end). */
static void add_listener(struct proxy *p, int fd, enum proxy_listen_kind kind, char *path)
{
	p->ls[p->n_ls++] = (struct proxy_listener){.fd = fd, .kind = kind, .path = path};
}

static int unix_listener(struct proxy *p, const char *path, enum proxy_listen_kind kind)
{
	char *copy = strdup(path);
	int fd = -1, rc = copy ? listen_on(&fd, path) : util_err(-ENOMEM, "out of memory");

	if (rc < 0) {
		free(copy);
		return rc;
	}
	add_listener(p, fd, kind, copy);
	return 0;
}

/* proxy_config.tcp: a copy of the given listener, or a new one; *port becomes its port. */
static int tcp_listener(struct proxy *p, int given, enum proxy_listen_kind kind, uint16_t *port,
			const char *name)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = -1, rc;

	if (given >= 0 && (fd = fcntl(given, F_DUPFD_CLOEXEC, 0)) < 0)
		return util_err(-errno, "backend %s: cannot use its listener: %s", name,
				strerror(errno));
	if (fd < 0 && (rc = proxy_listen_loopback(0, &fd, NULL)) < 0)
		return rc;
	p->tcp_listening = true;
	add_listener(p, fd, kind, NULL);
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sin_family != AF_INET)
		return util_err(-EINVAL, "backend %s: not a loopback TCP listener", name);
	*port = ntohs(sa.sin_port);
	return 0;
}

/* Every listener the configuration asks for, and TLS when a backend serves it. */
static int listen_all(struct proxy *p, const struct proxy_config *cfg)
{
	bool tls = false;
	int rc = 0;

	p->ls = calloc(3 + 2 * cfg->n_backends, sizeof(*p->ls));
	if (!p->ls)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < cfg->n_backends; i++)
		tls = tls || cfg->backends[i]->tls_port;
	if (tls && (rc = proxy_tls_init(p)) < 0)
		return rc;
	if (tls && !cfg->tcp && cfg->socket_path && !cfg->tls_socket_path)
		return util_err(-EINVAL, "a backend serves TLS but the proxy has no TLS socket");
	for (size_t i = 0; cfg->tcp && rc == 0 && i < cfg->n_backends; i++) {
		struct proxy_backend *b = cfg->backends[i];

		rc = tcp_listener(p, cfg->tcp_fds ? cfg->tcp_fds[i] : -1, PROXY_LISTEN_HTTP,
				  &b->port, b->name);
		p->ports[i] = b->port;
		if (rc == 0 && b->tls_port)
			rc = tcp_listener(p, cfg->tcp_tls_fds ? cfg->tcp_tls_fds[i] : -1,
					  PROXY_LISTEN_TLS, &b->tls_port, b->name);
	}
	if (rc == 0 && !cfg->tcp && cfg->socket_path && cfg->n_backends)
		rc = unix_listener(p, cfg->socket_path, PROXY_LISTEN_HTTP);
	if (rc == 0 && !cfg->tcp && cfg->socket_path && tls)
		rc = unix_listener(p, cfg->tls_socket_path, PROXY_LISTEN_TLS);
	if (rc == 0 && cfg->n_allow_hosts && cfg->egress_socket_path)
		rc = unix_listener(p, cfg->egress_socket_path, PROXY_LISTEN_EGRESS);
	return rc;
}

/* Whether backend b uses port (as its port or its TLS port). */
static bool uses_port(const struct proxy_backend *b, uint16_t port)
{
	return b->port == port || (b->tls_port && b->tls_port == port);
}

static int check_config(const struct proxy_config *cfg)
{
	if ((cfg->n_backends == 0 || !cfg->backends) && cfg->n_allow_hosts == 0)
		return util_err(-EINVAL, "no backend configured");
	for (size_t i = 0; i < cfg->n_backends; i++) {
		const struct proxy_backend *b = cfg->backends[i];

		if (cfg->n_allow_hosts && uses_port(b, PROXY_EGRESS_PORT))
			return util_err(-EINVAL,
					"backend %s uses port %u, the --allow-host proxy's port",
					b->name, PROXY_EGRESS_PORT);
		if (b->tls_port == b->port)
			return util_err(-EINVAL, "backend %s: tls-port must differ from port",
					b->name);
		for (size_t j = 0; j < i; j++) {
			const struct proxy_backend *o = cfg->backends[j];

			if (!strcmp(b->name, o->name))
				return util_err(-EINVAL, "backend %s given twice", b->name);
			if (uses_port(o, b->port) || (b->tls_port && uses_port(o, b->tls_port)))
				return util_err(-EINVAL, "backends %s and %s share port %u",
						o->name, b->name,
						uses_port(o, b->port) ? b->port : b->tls_port);
		}
	}
	return 0;
}

/* Parses the --allow-host list into p (duplicates kept once). */
static int load_allow(struct proxy *p, const struct proxy_config *cfg)
{
	size_t n = cfg->n_allow_hosts;

	p->allow = calloc(n ? n : 1, sizeof(*p->allow));
	p->allow_names = calloc(n + 1, sizeof(*p->allow_names));
	if (!p->allow || !p->allow_names)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct proxy_allow a;
		bool dup = false;
		int rc = proxy_allow_host_parse(cfg->allow_hosts[i], &a.host, &a.port);

		if (rc < 0)
			return rc;
		for (size_t j = 0; j < p->n_allow && !dup; j++)
			dup = !strcmp(p->allow[j].host, a.host) && p->allow[j].port == a.port;
		if (dup) {
			free(a.host);
			continue;
		}
		p->allow_names[p->n_allow] =
		    util_asprintf(strchr(a.host, ':') ? "[%s]:%u" : "%s:%u", a.host, a.port);
		p->allow[p->n_allow++] = a;
		if (!p->allow_names[p->n_allow - 1])
			return util_err(-ENOMEM, "out of memory");
	}
	return 0;
}

/* The vertex backend mints its first token before the box starts: a bad ADC file fails here. */
static int vertex_check(struct proxy_backend *b)
{
	char *tok = NULL;
	int rc = proxy_vertex_current(b->vertex, &tok);

	proxy_secret_free(&tok);
	return rc;
}

int proxy_new(struct proxy **out, const struct proxy_config *cfg)
{
	struct proxy *p = NULL;
	int rc;

	*out = NULL;
	rc = check_config(cfg);
	rc = rc ?: proxy_upstream_global_init();
	if (rc < 0)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p)
		return util_err(-ENOMEM, "out of memory");
	p->wake[0] = p->wake[1] = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->observer = cfg->observer;
	p->observer_ctx = cfg->observer_ctx;
	p->max_conns = cfg->max_conns ? cfg->max_conns : 256;
	p->ports = calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof(*p->ports));
	if (!p->ports) {
		rc = util_err(-ENOMEM, "out of memory");
		goto fail;
	}
	rc = proxy_upstream_share_new(p);
	rc = rc ?: load_allow(p, cfg);
	if (rc < 0)
		goto fail;
	for (size_t i = 0; i < cfg->n_backends; i++) {
		struct proxy_backend *b = cfg->backends[i];

		/* A login is checked (and refreshed when it has expired) before the box starts. */
		rc = b->login			  ? proxy_login_ensure(b->login)
		     : b->vertex		  ? vertex_check(b)
		     : b->auth == PROXY_AUTH_NONE ? 0
						  : proxy_backend_load_credential(b);
		rc = rc ?: proxy_placeholder_make(b->placeholder, sizeof(b->placeholder), b->name);
		if (rc < 0)
			goto fail;
		p->ports[i] = b->port;
	}
	rc = listen_all(p, cfg);
	if (rc < 0)
		goto fail;
	if (p->n_ls) {
		if (pipe2(p->wake, O_CLOEXEC) < 0) {
			rc = util_err(-errno, "out of resources");
			goto fail;
		}
		rc = -pthread_create(&p->accept_thread, NULL, accept_main, p);
		if (rc < 0) {
			util_err(rc, "cannot start the proxy thread: %s", strerror(-rc));
			goto fail;
		}
		p->accept_started = true;
	}
	p->backends = cfg->backends;
	p->n_backends = cfg->n_backends;
	*out = p;
	return 0;
fail:
	/* The backends stay with the caller, without what this call loaded into them. */
	for (size_t i = 0; i < cfg->n_backends; i++)
		proxy_secret_free(&cfg->backends[i]->credential);
	proxy_free(p);
	return rc;
}

static void unlisten(int fd, const char *path)
{
	struct sockaddr_un sa;
	socklen_t len;
	int dirfd = -1;

	if (fd < 0)
		return;
	if (path && proxy_sockaddr(path, &sa, &len, &dirfd) == 0)
		unlink(sa.sun_path);
	if (dirfd >= 0)
		close(dirfd);
	close(fd);
}

void proxy_free(struct proxy *p)
{
	if (!p)
		return;
	atomic_store(&p->stopping, true);
	if (p->accept_started) {
		if (write(p->wake[1], "x", 1) < 0) {
			/* the pipe cannot be full: one byte, written once */
		}
		pthread_join(p->accept_thread, NULL);
	}
	pthread_mutex_lock(&p->lock);
	for (struct proxy_client *cl = p->clients; cl; cl = cl->next)
		shutdown(cl->fd, SHUT_RDWR);
	while (p->n_conns > 0)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < p->n_ls; i++) {
		unlisten(p->ls[i].fd, p->ls[i].path);
		free(p->ls[i].path);
	}
	free(p->ls);
	proxy_tls_free(p);
	for (size_t i = 0; p->allow && i < p->n_allow; i++)
		free(p->allow[i].host);
	for (size_t i = 0; p->allow_names && p->allow_names[i]; i++)
		free(p->allow_names[i]);
	free(p->allow);
	free(p->allow_names);
	if (p->wake[0] >= 0)
		close(p->wake[0]);
	if (p->wake[1] >= 0)
		close(p->wake[1]);
	proxy_upstream_share_free(p);
	for (size_t i = 0; i < p->n_backends; i++)
		proxy_backend_free(p->backends[i]);
	free(p->backends);
	free(p->ports);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

const char *proxy_placeholder(const struct proxy *p, const char *name)
{
	for (size_t i = 0; i < p->n_backends; i++)
		if (!strcmp(p->backends[i]->name, name))
			return p->backends[i]->placeholder;
	return NULL;
}

const struct proxy_backend *proxy_backend_at(const struct proxy *p, size_t i)
{
	return i < p->n_backends ? p->backends[i] : NULL;
}

const char *const *proxy_allowed_hosts(const struct proxy *p, size_t *n)
{
	*n = p->n_allow;
	return (const char *const *)p->allow_names;
}

const uint16_t *proxy_ports(const struct proxy *p, size_t *n)
{
	*n = p->n_backends;
	return p->ports;
}

unsigned proxy_active_conns(struct proxy *p)
{
	unsigned n;

	pthread_mutex_lock(&p->lock);
	n = p->n_conns;
	pthread_mutex_unlock(&p->lock);
	return n;
}
