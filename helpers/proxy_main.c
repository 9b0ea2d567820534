/*
 * helpers/proxy_main.c: `arborinth_proxy`, the credential proxy as a program of its own, one
 * per box. The launcher (lib/box_proxy.c through proxy_proc_start) gives it its configuration
 * on the command line (proxy_args_parse), and it alone reads the keys and logins (and
 * refreshes them), serves the box's requests, writes their "net" rows to state.db itself and
 * answers on the ready pipe (proxy_ready_format): what the box needs, or why it could not
 * start. The answer is its first line, written as soon as the proxy listens; the audit log
 * opens after it, while the launcher builds the box, and a failure to open it is a second
 * line the launcher reads before the box's command runs (proxy_proc_confirm). It stops at the end
 * of its control pipe (the launcher closed it, or died), or when the launcher dies
 * (PR_SET_PDEATHSIG, set by the launcher's child before exec).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "proxy/proxy.h"
#include "util/util.h"

/*
 * The audit rows' state: the recorder (once open: state 1; -1 it could not be), and the
 * session once the launcher says it.
 */
struct net_audit {
	struct audit_log *log;
	pthread_mutex_t lock;
	pthread_cond_t opened;
	int state;
	atomic_llong session;
	atomic_bool warned;
};

/* Called from the proxy's connection threads; the record's strings are already redacted. */
static void net_observe(void *ctx, const struct proxy_record *rec)
{
	struct net_audit *a = ctx;
	/* "allowed", or a stream's "allowed: grpc-status N" (reapi.c): the call completed; any
	 * other reason (the upstream unreachable, the stream reset) is a failure. */
	bool done = rec->allowed && rec->status != 0 && rec->reason &&
		    !strncmp(rec->reason, "allowed", 7) &&
		    (rec->reason[7] == '\0' || rec->reason[7] == ':');
	struct audit_event ev = {
	    .time_ns = rec->time_ns,
	    .kind = "net",
	    .op = rec->egress ? "tunnel" : "request",
	    .path = rec->egress ? NULL : rec->path,
	    .result = done ? 0 : 1,
	    .size = -1,
	    .session = atomic_load(&a->session),
	    .backend = rec->backend,
	    .method = rec->method,
	    .host = rec->host,
	    .port = rec->port,
	    .status = rec->status,
	    .bytes_up = rec->bytes_up,
	    .bytes_down = rec->bytes_down,
	    .duration_ns = rec->duration_ns,
	    .decision = rec->allowed ? "allowed" : "refused",
	    .reason = rec->reason ? rec->reason : "",
	};

	/* A request served while the log opens (none of the box's: it has not started yet). */
	pthread_mutex_lock(&a->lock);
	while (a->state == 0)
		pthread_cond_wait(&a->opened, &a->lock);
	pthread_mutex_unlock(&a->lock);
	if ((a->state < 0 || audit_log_append(a->log, &ev) < 0) &&
	    !atomic_exchange(&a->warned, true))
		fprintf(stderr, "arborinth: warning: a proxy request could not be recorded in the "
				"audit log\n");
}

/* The backends of a, with the key file and the login attached. */
static int make_backends(const struct proxy_args *a, struct proxy_backend **b)
{
	struct proxy_login *l = NULL;
	int rc = 0;
	size_t i;

	for (i = 0; rc == 0 && i < a->n_backends; i++)
		rc = proxy_backend_parse(&b[i], a->backends[i]);
	if (rc == 0 && a->key_file)
		rc = a->n_backends ? proxy_backend_set(b[0], "key-file", a->key_file)
				   : util_err(-EINVAL, "--key-file needs a backend");
	if (rc < 0 || !a->login_backend)
		return rc;
	for (i = 0; i < a->n_backends; i++)
		if (!strcmp(proxy_backend_name(b[i]), a->login_backend))
			break;
	if (i == a->n_backends)
		return util_err(-EINVAL, "no backend %s for the login", a->login_backend);
	rc = proxy_login_open(&l, (enum proxy_login_kind)a->login_kind, a->login_path,
			      a->login_token_url, NULL);
	if (rc == 0)
		proxy_backend_set_login(b[i], l);
	return rc;
}

/*
 * The keys this process took from its environment (the user's, inherited from the launcher),
 * wiped where they lie: /proc/PID/environ shows that memory, so no other process can read
 * them there, and nothing here reads them again (proxy_new loaded them).
 */
static void wipe_key_vars(struct proxy_backend *const *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *var = proxy_backend_key_env(b[i]);
		char *v = var ? getenv(var) : NULL;

		if (v) {
			explicit_bzero(v, strlen(v));
			unsetenv(var);
		}
	}
}

static int answer(int fd, const char *text)
{
	int rc = text ? util_write_all(fd, text, strlen(text)) : -ENOMEM;

	close(fd);
	return rc;
}

/* The answer's line, the pipe left open for what the audit log's opening says. */
static int answer_line(int fd, const char *text)
{
	int rc = text ? util_write_all(fd, text, strlen(text)) : -ENOMEM;

	return rc ?: util_write_all(fd, "\n", 1);
}

/* The audit log, opened once the launcher has its answer; its failure on the ready pipe. */
static int open_audit(struct net_audit *na, const struct proxy_args *a)
{
	int rc = audit_log_open(&na->log, a->audit_db, a->ws_id, a->ws_name);

	if (rc < 0)
		util_err(rc, "cannot open the audit log for the proxy: %s", util_err_msg());
	pthread_mutex_lock(&na->lock);
	na->state = rc < 0 ? -1 : 1;
	pthread_cond_broadcast(&na->opened);
	pthread_mutex_unlock(&na->lock);
	if (rc < 0) {
		char *text = proxy_ready_format_error(rc, util_err_msg());

		if (!text || util_write_all(a->ready_fd, text, strlen(text)) < 0)
			fprintf(stderr, "%s: %s\n", PROXY_PROGRAM, util_err_msg());
		free(text);
	}
	close(a->ready_fd);
	return rc;
}

/* Reads "session N" lines until the end of the control pipe. */
static void serve(int fd, struct net_audit *a)
{
	char buf[256];
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		len += (size_t)n;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			long long s;

			*nl = '\0';
			if (a && sscanf(buf, "session %lld", &s) == 1)
				atomic_store(&a->session, s);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0; /* no line that long is ours */
	}
}

int main(int argc, char **argv)
{
	struct proxy_args a;
	struct proxy_config cfg = {0};
	struct proxy_backend **b = NULL;
	struct net_audit *na = NULL;
	struct proxy_ready *r = NULL;
	struct proxy *p = NULL;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	/* The terminal's ^C and ^\ are the box's: the launcher stops this process. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	rc = proxy_args_parse(&a, argc, argv);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", PROXY_PROGRAM, util_err_msg());
		return 2;
	}
	b = calloc(a.n_backends + 1, sizeof(*b));
	rc = b ? make_backends(&a, b) : util_err(-ENOMEM, "out of memory");
	if (rc == 0 && a.audit_db && a.serve) {
		na = calloc(1, sizeof(*na));
		if (na) {
			pthread_mutex_init(&na->lock, NULL);
			pthread_cond_init(&na->opened, NULL);
		}
		rc = na ? 0 : util_err(-ENOMEM, "out of memory");
	}
	cfg.backends = b;
	cfg.n_backends = a.n_backends;
	cfg.allow_hosts = a.allow_hosts;
	cfg.n_allow_hosts = a.n_allow_hosts;
	cfg.tcp = a.tcp;
	cfg.tcp_fds = a.tcp_fds;
	cfg.tcp_tls_fds = a.tcp_tls_fds;
	if (a.serve) {
		cfg.socket_path = a.socket_path;
		cfg.egress_socket_path = a.egress_socket_path;
		cfg.tls_socket_path = a.tls_socket_path;
		cfg.observer = na ? net_observe : NULL;
		cfg.observer_ctx = na;
	}
	rc = rc ?: proxy_new(&p, &cfg);
	if (rc == 0 && p) {
		wipe_key_vars(b, a.n_backends);
		rc = proxy_ready_of(&r, p);
	}
	if (rc < 0) {
		char *text = proxy_ready_format_error(rc, util_err_msg());

		if (answer(a.ready_fd, text) < 0)
			fprintf(stderr, "%s: %s\n", PROXY_PROGRAM, util_err_msg());
		free(text);
	} else if (!na) {
		char *text = proxy_ready_format(r);

		if (answer(a.ready_fd, text) == 0 && a.serve)
			serve(a.control_fd, na);
		free(text);
	} else {
		char *text = proxy_ready_format(r);

		rc = answer_line(a.ready_fd, text);
		if (rc < 0)
			close(a.ready_fd);
		else if ((rc = open_audit(na, &a)) == 0)
			serve(a.control_fd, na);
		free(text);
	}
	if (!p) { /* else the proxy owns them */
		for (size_t i = 0; b && i < a.n_backends; i++)
			proxy_backend_free(b[i]);
		free(b);
	}
	/* A log that never opened: its waiters (net_observe) go on without it. */
	if (na) {
		pthread_mutex_lock(&na->lock);
		if (na->state == 0)
			na->state = -1;
		pthread_cond_broadcast(&na->opened);
		pthread_mutex_unlock(&na->lock);
	}
	/* The proxy first: its last rows go to the log, which close writes out. */
	proxy_free(p);
	if (na) {
		audit_log_close(na->log);
		pthread_mutex_destroy(&na->lock);
		pthread_cond_destroy(&na->opened);
	}
	free(na);
	proxy_ready_free(r);
	proxy_args_release(&a);
	return rc < 0 ? 1 : 0;
}
