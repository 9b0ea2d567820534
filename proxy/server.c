/*
 * proxy/server.c: the proxy's lifecycle: credentials and placeholders, the Unix socket, the
 * accept thread, one thread per connection, and shutdown that aborts what is in flight.
 */
#include "proxy/proxy_internal.h"

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
	bool egress; /* a connection to the --allow-host proxy */
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

	if (cl->egress)
		proxy_egress_serve(p, cl->fd);
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

static void client_start(struct proxy *p, int fd, bool egress)
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
	cl->egress = egress;
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
	size_t n = 3 + p->n_tcp;
	struct pollfd *pfd = calloc(n, sizeof(*pfd));

	if (!pfd)
		return NULL;
	/* Negative fds (no such listener) are ignored by poll. */
	pfd[0] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = p->egress_fd, .events = POLLIN};
	pfd[2] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
	for (size_t i = 0; i < p->n_tcp; i++)
		pfd[3 + i] = (struct pollfd){.fd = p->tcp_fds[i], .events = POLLIN};
	while (!atomic_load(&p->stopping)) {
		if (poll(pfd, (nfds_t)n, -1) < 0 || pfd[0].revents)
			continue;
		for (size_t i = 1; i < n; i++) {
			int fd;

			if (!(pfd[i].revents & POLLIN))
				continue;
			fd = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				client_start(p, fd, i == 1);
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

/* proxy_config.tcp: a listener on the host's loopback per backend, whose port it takes. */
static int listen_tcp(struct proxy *p, const struct proxy_config *cfg)
{
	p->tcp_fds = malloc((cfg->n_backends ? cfg->n_backends : 1) * sizeof(*p->tcp_fds));
	if (!p->tcp_fds)
		return util_err(-ENOMEM, "out of memory");
	while (p->n_tcp < cfg->n_backends) {
		size_t i = p->n_tcp;
		int fd = cfg->tcp_fds ? cfg->tcp_fds[i] : -1, rc;
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);

		if (fd < 0 && (rc = proxy_listen_loopback(0, &fd, NULL)) < 0)
			return rc;
		p->tcp_fds[p->n_tcp++] = fd; /* closed by proxy_free from here on */
		if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sin_family != AF_INET)
			return util_err(-EINVAL, "backend %s: not a loopback TCP listener",
					cfg->backends[i]->name);
		cfg->backends[i]->port = ntohs(sa.sin_port);
		p->ports[i] = cfg->backends[i]->port;
	}
	return 0;
}

static int check_config(const struct proxy_config *cfg)
{
	if ((cfg->n_backends == 0 || !cfg->backends) && cfg->n_allow_hosts == 0)
		return util_err(-EINVAL, "no backend configured");
	for (size_t i = 0; i < cfg->n_backends; i++) {
		if (cfg->n_allow_hosts && cfg->backends[i]->port == PROXY_EGRESS_PORT)
			return util_err(-EINVAL,
					"backend %s uses port %u, the --allow-host proxy's port",
					cfg->backends[i]->name, PROXY_EGRESS_PORT);
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(cfg->backends[i]->name, cfg->backends[j]->name))
				return util_err(-EINVAL, "backend %s given twice",
						cfg->backends[i]->name);
			if (cfg->backends[i]->port == cfg->backends[j]->port)
				return util_err(-EINVAL, "backends %s and %s share port %u",
						cfg->backends[j]->name, cfg->backends[i]->name,
						cfg->backends[i]->port);
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

int proxy_new(struct proxy **out, const struct proxy_config *cfg)
{
	struct proxy *p = NULL;
	int rc;

	*out = NULL;
	rc = check_config(cfg);
	rc = rc ?: proxy_upstream_global_init();
	p = rc == 0 ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		/* The given listeners are the proxy's even when it does not start. */
		for (size_t i = 0; cfg->tcp && cfg->tcp_fds && i < cfg->n_backends; i++)
			if (cfg->tcp_fds[i] >= 0)
				close(cfg->tcp_fds[i]);
		return rc < 0 ? rc : util_err(-ENOMEM, "out of memory");
	}
	p->listen_fd = p->egress_fd = p->wake[0] = p->wake[1] = -1;
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
		     : b->auth == PROXY_AUTH_NONE ? 0
						  : proxy_backend_load_credential(b);
		rc = rc ?: proxy_placeholder_make(b->placeholder, sizeof(b->placeholder), b->name);
		if (rc < 0)
			goto fail;
		p->ports[i] = b->port;
	}
	if (cfg->tcp) {
		rc = listen_tcp(p, cfg);
		if (rc < 0)
			goto fail;
	}
	if (cfg->socket_path || cfg->tcp || (cfg->n_allow_hosts && cfg->egress_socket_path)) {
		if (pipe2(p->wake, O_CLOEXEC) < 0) {
			rc = util_err(-errno, "out of resources");
			goto fail;
		}
		if (cfg->socket_path) {
			p->socket_path = strdup(cfg->socket_path);
			rc = p->socket_path ? listen_on(&p->listen_fd, cfg->socket_path)
					    : util_err(-ENOMEM, "out of memory");
		}
		if (rc == 0 && cfg->n_allow_hosts && cfg->egress_socket_path) {
			p->egress_socket_path = strdup(cfg->egress_socket_path);
			rc = p->egress_socket_path
				 ? listen_on(&p->egress_fd, cfg->egress_socket_path)
				 : util_err(-ENOMEM, "out of memory");
		}
		if (rc < 0)
			goto fail;
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
	for (size_t i = 0; i < cfg->n_backends; i++) {
		proxy_secret_free(&cfg->backends[i]->credential);
		if (cfg->tcp && cfg->tcp_fds && i >= p->n_tcp && cfg->tcp_fds[i] >= 0)
			close(cfg->tcp_fds[i]);
	}
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
	if (proxy_sockaddr(path, &sa, &len, &dirfd) == 0)
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
	unlisten(p->listen_fd, p->socket_path);
	for (size_t i = 0; i < p->n_tcp; i++)
		close(p->tcp_fds[i]);
	free(p->tcp_fds);
	unlisten(p->egress_fd, p->egress_socket_path);
	for (size_t i = 0; p->allow && i < p->n_allow; i++)
		free(p->allow[i].host);
	for (size_t i = 0; p->allow_names && p->allow_names[i]; i++)
		free(p->allow_names[i]);
	free(p->allow);
	free(p->allow_names);
	free(p->egress_socket_path);
	if (p->wake[0] >= 0)
		close(p->wake[0]);
	if (p->wake[1] >= 0)
		close(p->wake[1]);
	proxy_upstream_share_free(p);
	for (size_t i = 0; i < p->n_backends; i++)
		proxy_backend_free(p->backends[i]);
	free(p->backends);
	free(p->ports);
	free(p->socket_path);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

int proxy_box_env(const struct proxy *p, const char *key_dir, char ***out)
{
	static const char *const proxy_vars[] = {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
						 "http_proxy"};
	char **env = calloc(2 * p->n_backends + 7, sizeof(*env));
	size_t k = 0;

	if (!env)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; p->n_allow && i < ARB_ARRAY_LEN(proxy_vars); i++)
		env[k++] =
		    util_asprintf("%s=http://127.0.0.1:%u", proxy_vars[i], PROXY_EGRESS_PORT);
	if (p->n_allow) {
		env[k++] = strdup("NO_PROXY=127.0.0.1");
		env[k++] = strdup("no_proxy=127.0.0.1");
	}
	for (size_t i = 0; i < k; i++)
		if (!env[i]) {
			for (size_t j = 0; j < k; j++)
				free(env[j]);
			free(env);
			return util_err(-ENOMEM, "out of memory");
		}
	for (size_t i = 0; i < p->n_backends; i++) {
		const struct proxy_backend *b = p->backends[i];
		bool failed;

		env[k++] = util_asprintf("%s_BASE_URL=http://127.0.0.1:%u%s", b->env_prefix,
					 b->port, b->base_path ? b->base_path : "");
		failed = !env[k - 1];
		/* A login's placeholders live in the box's login file: a key variable would make
		 * the client prefer an API key. */
		if (!b->login) {
			env[k++] =
			    key_dir ? util_asprintf("%s_API_KEY_FILE=%s/%s.key", b->env_prefix,
						    key_dir, b->name)
				    : util_asprintf("%s_API_KEY=%s", b->env_prefix, b->placeholder);
			failed = failed || !env[k - 1];
		}
		if (failed) {
			for (size_t j = 0; j < k; j++)
				free(env[j]);
			free(env);
			return util_err(-ENOMEM, "out of memory");
		}
	}
	*out = env;
	return 0;
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
