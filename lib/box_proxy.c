/*
 * lib/box_proxy.c: a box's backends and allowed hosts (`shell --backend`, `--allow-host`):
 * the credential proxy (and the CONNECT proxy for allowed hosts) for one box. The proxy runs in
 * this process (threads) for as long as the box does; the box gets the proxy's socket directory
 * read-only, relay hooks for box-init, the backends' base URLs and placeholders and the
 * HTTP(S)_PROXY variables. Every request the proxy sees becomes a "net" row in state.db, linked to
 * the box's session.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "core/core.h"
#include "jail/jail.h"
#include "proxy/proxy.h"

#define BOX_PROXY_DIR "/run/arborinth-proxy"
/* With --net: where each backend's key file (the session's token) is, under $HOME. */
#define BOX_KEY_SUB ".arborinth/proxy"

/* The observer's state: the recorder, and the session once it has begun. */
struct lib_net_audit {
	struct audit_log *log;
	atomic_llong session;
	atomic_bool warned;
};

/* Called from the proxy's connection threads; the record's strings are already redacted. */
static void net_observe(void *ctx, const struct proxy_record *rec)
{
	struct lib_net_audit *a = ctx;
	bool done =
	    rec->allowed && rec->status != 0 && rec->reason && !strcmp(rec->reason, "allowed");
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

	if (audit_log_append(a->log, &ev) < 0 && !atomic_exchange(&a->warned, true))
		fprintf(stderr, "arborinth: warning: a proxy request could not be recorded in the "
				"audit log\n");
}

static int net_audit_open(struct lib_net_audit **out, struct core_project *p,
			  const struct core_ws *ws)
{
	struct lib_net_audit *a = calloc(1, sizeof(*a));
	char *db = util_path_join(core_project_state_dir(p), "state.db");
	int rc = a && db ? 0 : util_err(-ENOMEM, "out of memory");

	if (rc == 0)
		rc = audit_log_open(&a->log, db, ws->id, ws->name);
	free(db);
	if (rc < 0) {
		free(a);
		return util_err(rc, "cannot open the audit log for the proxy: %s", util_err_msg());
	}
	*out = a;
	return 0;
}

void lib_proxy_set_session(struct lib_net_audit *a, const struct audit_session *s)
{
	if (a && s)
		atomic_store(&a->session, audit_session_id(s));
}

void lib_proxy_stop(struct proxy *px, struct lib_net_audit *a)
{
	/* The proxy first: its last records go to the log, which close writes out. */
	proxy_free(px);
	if (a)
		audit_log_close(a->log);
	free(a);
}

/* The launcher's login on its backend (which then holds no key). */
static int attach_login(struct proxy_backend **b, size_t n, const struct lib_proxy_login *lg)
{
	struct proxy_login *l = NULL;
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(proxy_backend_name(b[i]), lg->backend))
			continue;
		rc = proxy_login_open(&l, (enum proxy_login_kind)lg->kind, lg->path, lg->token_url,
				      NULL);
		if (rc == 0)
			proxy_backend_set_login(b[i], l);
		return rc;
	}
	return util_err(-EINVAL, "no backend %s for the login", lg->backend);
}

int lib_proxy_reach(const char *spec)
{
	struct proxy_backend *b = NULL;
	int rc = proxy_backend_parse(&b, spec);

	if (rc == 0)
		rc = proxy_backend_reach(b);
	proxy_backend_free(b);
	return rc;
}

int lib_proxy_start(struct proxy **out, struct lib_net_audit **audit, struct core_project *p,
		    const struct core_ws *ws, const struct lib_proxy_opts *o)
{
	struct proxy_config cfg = {0};
	char *dir = NULL, *sock = NULL, *esock = NULL, *tsock = NULL;
	struct lib_net_audit *a = NULL;
	size_t made = 0, n = o->n_backends;
	int rc = -ENOMEM, *tcp_fds = NULL, *tls_fds = NULL;

	*out = NULL;
	*audit = NULL;
	if (n == 0 && o->n_allow_hosts == 0)
		return 0;
	if (o->key_file && n != 1)
		return util_err(-EINVAL, "--api-key-file needs exactly one --backend (else give "
					 "key-file= in each)");
	/* Checked before anything starts, so a bad one is a usage error with nothing left. */
	for (size_t i = 0; i < o->n_allow_hosts; i++) {
		char *host = NULL;
		uint16_t port;

		rc = proxy_allow_host_parse(o->allow_hosts[i], &host, &port);
		free(host);
		if (rc < 0)
			return rc;
	}
	cfg.backends = calloc(n ? n : 1, sizeof(*cfg.backends));
	if (!cfg.backends)
		goto out;
	for (; made < n; made++) {
		rc = proxy_backend_parse(&cfg.backends[made], o->backends[made]);
		if (rc < 0)
			goto out;
	}
	if (o->key_file) {
		rc = proxy_backend_set(cfg.backends[0], "key-file", o->key_file);
		if (rc < 0)
			goto out;
	}
	cfg.n_backends = n;
	if (o->login) {
		rc = attach_login(cfg.backends, n, o->login);
		if (rc < 0)
			goto out;
	}
	cfg.allow_hosts = o->allow_hosts;
	cfg.n_allow_hosts = o->n_allow_hosts;
	if (o->tcp) {
		/* The box shares the host's network: listeners on its loopback (the launcher's
		 * given for its backend, the proxy makes the others). */
		cfg.tcp = true;
		cfg.tcp_fds = tcp_fds = malloc((n + 1) * sizeof(*tcp_fds));
		cfg.tcp_tls_fds = tls_fds = malloc((n + 1) * sizeof(*tls_fds));
		if (!tcp_fds || !tls_fds) {
			rc = util_err(-ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			bool given = o->tcp_backend &&
				     !strcmp(proxy_backend_name(cfg.backends[i]), o->tcp_backend);

			tcp_fds[i] = given ? o->tcp_fd : -1;
			tls_fds[i] = given ? o->tcp_tls_fd : -1;
		}
	}
	if (o->listen) {
		dir = util_path_join(ws->run, "proxy");
		sock = dir ? util_path_join(dir, "proxy.sock") : NULL;
		esock = dir ? util_path_join(dir, "egress.sock") : NULL;
		tsock = dir ? util_path_join(dir, "tls.sock") : NULL;
		rc = sock && esock && tsock ? util_mkdir_p(dir, 0700)
					    : util_err(-ENOMEM, "out of memory");
		rc = rc ?: net_audit_open(&a, p, ws);
		if (rc < 0)
			goto out;
		cfg.socket_path = n && !o->tcp ? sock : NULL;
		cfg.egress_socket_path = o->n_allow_hosts ? esock : NULL;
		cfg.tls_socket_path = tsock;
		cfg.observer = net_observe;
		cfg.observer_ctx = a;
	}
	rc = proxy_new(out, &cfg);
	if (rc == 0) {
		cfg.backends = NULL; /* the proxy owns them now */
		*audit = a;
		a = NULL;
	}
out:
	lib_proxy_stop(NULL, a);
	free(tcp_fds);
	free(tls_fds);
	free(tsock);
	free(esock);
	if (cfg.backends) {
		for (size_t i = 0; i < made; i++)
			proxy_backend_free(cfg.backends[i]);
		free(cfg.backends);
	}
	free(sock);
	free(dir);
	return rc;
}

char *lib_proxy_key_file(const char *home, const char *backend)
{
	return util_asprintf("%s/%s/%s.key", home, BOX_KEY_SUB, backend);
}

char *lib_proxy_ca_file(const char *home)
{
	return util_asprintf("%s/%s/ca.pem", home, BOX_KEY_SUB);
}

/*
 * --net: each backend's placeholder (the session's token) in a file of the box's home, the
 * box told where by NAME_API_KEY_FILE; nothing to mount, no relay.
 */
static int box_setup_tcp(struct proxy *px, struct jail_box *b, const struct core_ws *ws, bool dry,
			 char **key_dir)
{
	const struct proxy_backend *pb;
	int rc = 0;

	*key_dir = util_path_join(jail_box_home(b), BOX_KEY_SUB);
	if (!*key_dir)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && !dry && (pb = proxy_backend_at(px, i)); i++) {
		const char *name = proxy_backend_name(pb);
		char *file;

		if (proxy_backend_login(pb))
			continue; /* its placeholders are in the box's login file */
		file = util_asprintf("%s.key", name);

		rc = file ? lib_home_write(ws->home, BOX_KEY_SUB, file, proxy_placeholder(px, name))
			  : util_err(-ENOMEM, "out of memory");
		free(file);
	}
	return rc;
}

/* One relay hook: ports (n > 0) of the box's loopback to socket NAME in the socket folder. */
static int add_relay(struct jail_box *b, const uint16_t *ports, size_t n, const char *name)
{
	char *sock = util_asprintf("%s/%s", BOX_PROXY_DIR, name);
	char *arg = sock ? proxy_relay_arg_format(ports, n, sock) : NULL;
	int rc = arg ? jail_box_add_init_hook(b, PROXY_RELAY_HOOK, arg)
		     : util_err(-ENOMEM, "out of memory");

	free(arg);
	free(sock);
	return rc;
}

/* Without --net: the socket directory (read-only) and box-init's relays to it. */
static int box_setup_relay(struct proxy *px, struct jail_box *b, const struct core_ws *ws)
{
	char *dir = util_path_join(ws->run, "proxy"), *what = NULL;
	size_t n = 0, n_tls = 0, n_allow = 0;
	const uint16_t *ports = proxy_ports(px, &n);
	const char *const *allowed = proxy_allowed_hosts(px, &n_allow);
	uint16_t *tls = calloc(n + 1, sizeof(*tls));
	const uint16_t egress = PROXY_EGRESS_PORT;
	int rc = dir && tls ? 0 : util_err(-ENOMEM, "out of memory");

	/* What --explain says of the mount: which relays, and where tunnels may go. */
	what = util_asprintf("the proxy's socket%s (relayed to 127.0.0.1 by box-init)%s",
			     n && n_allow ? "s" : "", n_allow ? "; CONNECT tunnels only to" : "");
	for (size_t i = 0; what && i < n_allow; i++) {
		char *more = util_asprintf("%s %s", what, allowed[i]);

		free(what);
		what = more;
	}
	if (rc == 0 && !what)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = jail_box_add_default_mount(b, JAIL_MOUNT_RO, dir, BOX_PROXY_DIR, what);
	if (rc == 0 && n)
		rc = add_relay(b, ports, n, "proxy.sock");
	/* The backends' TLS ports, to the TLS socket. */
	for (size_t i = 0; rc == 0 && i < n; i++)
		if ((tls[n_tls] = proxy_backend_tls_port(proxy_backend_at(px, i))))
			n_tls++;
	if (rc == 0 && n_tls)
		rc = add_relay(b, tls, n_tls, "tls.sock");
	/* The same relay for the CONNECT proxy, to its own socket. */
	if (rc == 0 && n_allow)
		rc = add_relay(b, &egress, 1, "egress.sock");
	free(tls);
	free(what);
	free(dir);
	return rc;
}

int lib_proxy_box_setup(struct proxy *px, struct jail_box *b, const struct core_ws *ws,
			unsigned flags)
{
	char **env = NULL, *key_dir = NULL;
	int rc = flags & LIB_PROXY_TCP ? box_setup_tcp(px, b, ws, flags & LIB_PROXY_DRY, &key_dir)
				       : box_setup_relay(px, b, ws);
	char *ca = proxy_tls_ca(px) ? lib_proxy_ca_file(jail_box_home(b)) : NULL;

	/* TLS toward the box: the CA certificate (public) for the client to trust. */
	if (rc == 0 && proxy_tls_ca(px) && !ca)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0 && ca && !(flags & LIB_PROXY_DRY))
		rc = lib_home_write(ws->home, BOX_KEY_SUB, "ca.pem", proxy_tls_ca(px));
	if (rc == 0 && ca)
		rc = lib_box_env(b, "ARBORINTH_PROXY_CA_FILE", ca);
	free(ca);

	if (rc == 0)
		rc = proxy_box_env(px, key_dir, &env);
	for (char **e = env; e && *e; e++) {
		if (rc == 0)
			rc = jail_box_add_env(b, *e);
		free(*e);
	}
	free(env);
	free(key_dir);
	return rc;
}
