/*
 * lib/box_proxy.c: a box's backends and allowed hosts (`shell --backend`, `--allow-host`):
 * the credential proxy (and the CONNECT proxy for allowed hosts) for one box. The proxy is its
 * own program, arborinth_proxy (proxy_proc_start), for as long as the box runs: it reads the
 * credentials, this process never does. The box gets the proxy's socket directory read-only,
 * relay hooks for box-init, the backends' base URLs and placeholders and the HTTP(S)_PROXY
 * variables, all from the proxy's answer. Every request the proxy sees becomes a "net" row in
 * state.db (the program writes it), linked to the box's session (told by
 * lib_proxy_set_session).
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
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

/* arborinth_proxy: beside the helpers the library found, else beside this program. */
static char *proxy_exe(void)
{
	const char *dir = lib_helper_dir();
	char self[PATH_MAX], *slash;

	if (dir)
		return util_path_join(dir, PROXY_PROGRAM);
	if (!realpath("/proc/self/exe", self) || !(slash = strrchr(self, '/')))
		return NULL;
	*slash = '\0';
	return util_path_join(self, PROXY_PROGRAM);
}

void lib_proxy_set_session(struct proxy_proc *px, const struct audit_session *s)
{
	if (px && s && proxy_proc_session(px, audit_session_id(s)) < 0)
		fprintf(stderr, "arborinth: warning: %s\n", util_err_msg());
}

int lib_proxy_wait(struct proxy_proc *px)
{
	return px ? proxy_proc_wait(px) : 0;
}

int lib_proxy_confirm(struct proxy_proc *px)
{
	return px ? proxy_proc_confirm(px) : 0;
}

void lib_proxy_end(struct proxy_proc *px)
{
	proxy_proc_end(px);
}

void lib_proxy_stop(struct proxy_proc *px)
{
	/* The program finishes its requests and writes out its rows before it exits. */
	proxy_proc_stop(px);
}

const char *lib_proxy_placeholder(const struct proxy_proc *px, const char *name)
{
	const struct proxy_ready_backend *b = proxy_ready_backend(proxy_proc_ready(px), name);

	return b ? b->placeholder : NULL;
}

const uint16_t *lib_proxy_ports(const struct proxy_proc *px, size_t *n)
{
	const struct proxy_ready *r = proxy_proc_ready(px);

	*n = r ? r->n_backends : 0;
	return r ? r->ports : NULL;
}

/* The launcher's listeners (--net) for its backend, -1 for the others. */
static int tcp_listeners(const struct lib_proxy_opts *o, int **fds, int **tls_fds)
{
	size_t n = o->n_backends;

	*fds = malloc((n + 1) * sizeof(**fds));
	*tls_fds = malloc((n + 1) * sizeof(**tls_fds));
	if (!*fds || !*tls_fds)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct proxy_backend *b = NULL;
		bool given = false;
		int rc = o->tcp_backend ? proxy_backend_parse(&b, o->backends[i]) : 0;

		if (rc < 0)
			return rc;
		given = b && !strcmp(proxy_backend_name(b), o->tcp_backend);
		proxy_backend_free(b);
		(*fds)[i] = given ? o->tcp_fd : -1;
		(*tls_fds)[i] = given ? o->tcp_tls_fd : -1;
	}
	return 0;
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

int lib_proxy_start(struct proxy_proc **out, struct core_project *p, const struct core_ws *ws,
		    const struct lib_proxy_opts *o)
{
	struct proxy_args a = {0};
	char *dir = NULL, *sock = NULL, *esock = NULL, *tsock = NULL, *db = NULL, *exe = NULL;
	size_t n = o->n_backends;
	int rc = 0, *tcp_fds = NULL, *tls_fds = NULL;

	*out = NULL;
	if (n == 0 && o->n_allow_hosts == 0)
		return 0;
	/* The key file is the first backend's (the one --backend, or the launcher's). */
	if (o->key_file && n == 0)
		return util_err(-EINVAL, "--api-key-file needs a --backend");
	/* Checked before anything starts, so a bad one is a usage error with nothing left. */
	for (size_t i = 0; i < o->n_allow_hosts; i++) {
		char *host = NULL;
		uint16_t port;

		rc = proxy_allow_host_parse(o->allow_hosts[i], &host, &port);
		free(host);
		if (rc < 0)
			return rc;
	}
	/* The specifications, parsed here too: a bad one is the caller's input error. */
	for (size_t i = 0; i < n; i++) {
		struct proxy_backend *b = NULL;

		rc = proxy_backend_parse(&b, o->backends[i]);
		proxy_backend_free(b);
		if (rc < 0)
			return rc;
	}
	a.backends = o->backends;
	a.n_backends = n;
	a.key_file = o->key_file;
	if (o->login) {
		a.login_backend = o->login->backend;
		a.login_kind = o->login->kind;
		a.login_path = o->login->path;
		a.login_token_url = o->login->token_url;
	}
	a.allow_hosts = o->allow_hosts;
	a.n_allow_hosts = o->n_allow_hosts;
	if (o->tcp) {
		/* The box shares the host's network: listeners on its loopback (the launcher's
		 * given for its backend, the proxy makes the others). */
		a.tcp = true;
		rc = tcp_listeners(o, &tcp_fds, &tls_fds);
		a.tcp_fds = tcp_fds;
		a.tcp_tls_fds = tls_fds;
		if (rc < 0)
			goto out;
	}
	if (o->listen && p && ws) {
		dir = util_path_join(ws->run, "proxy");
		sock = dir ? util_path_join(dir, "proxy.sock") : NULL;
		esock = dir ? util_path_join(dir, "egress.sock") : NULL;
		tsock = dir ? util_path_join(dir, "tls.sock") : NULL;
		db = util_path_join(core_project_state_dir(p), "state.db");
		rc = sock && esock && tsock && db ? util_mkdir_p(dir, 0700)
						  : util_err(-ENOMEM, "out of memory");
		if (rc < 0)
			goto out;
		a.serve = true;
		a.socket_path = n && !o->tcp ? sock : NULL;
		a.egress_socket_path = o->n_allow_hosts ? esock : NULL;
		a.tls_socket_path = tsock;
		a.audit_db = db;
		a.ws_id = ws->id;
		a.ws_name = ws->name;
	}
	exe = proxy_exe();
	if (!exe)
		rc = util_err(-ENOMEM, "out of memory");
	else if (o->spawn_only)
		rc = proxy_proc_spawn(out, exe, &a);
	else
		rc = proxy_proc_start(out, exe, &a);
out:
	free(exe);
	free(tcp_fds);
	free(tls_fds);
	free(db);
	free(tsock);
	free(esock);
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
static int box_setup_tcp(const struct proxy_ready *r, struct jail_box *b, const struct core_ws *ws,
			 bool dry, char **key_dir)
{
	int rc = 0;

	*key_dir = util_path_join(jail_box_home(b), BOX_KEY_SUB);
	if (!*key_dir)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && !dry && i < r->n_backends; i++) {
		const struct proxy_ready_backend *rb = &r->backends[i];
		char *file;

		/* A login's placeholders are in its login file. Every other backend's is in
		 * NAME.key, announced in NAME_FILE when it has a key variable; a client may read
		 * it without one (OpenCode's Vertex provider: agents/opencode_vertex.c). */
		if (rb->login_box || rb->login_path)
			continue;
		file = util_asprintf("%s.key", rb->name);

		rc = file ? lib_home_write(ws->home, BOX_KEY_SUB, file, rb->placeholder)
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
static int box_setup_relay(const struct proxy_ready *r, struct jail_box *b,
			   const struct core_ws *ws)
{
	char *dir = util_path_join(ws->run, "proxy"), *what = NULL;
	size_t n = r->n_backends, n_tls = 0, n_allow = r->n_allow_hosts;
	const uint16_t *ports = r->ports;
	char *const *allowed = r->allow_hosts;
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
		if ((tls[n_tls] = r->backends[i].tls_port))
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

int lib_proxy_box_setup(struct proxy_proc *px, struct jail_box *b, const struct core_ws *ws,
			unsigned flags)
{
	const struct proxy_ready *r = proxy_proc_ready(px);
	char **env = NULL, *key_dir = NULL;
	int rc = flags & LIB_PROXY_TCP ? box_setup_tcp(r, b, ws, flags & LIB_PROXY_DRY, &key_dir)
				       : box_setup_relay(r, b, ws);
	char *ca = r->tls_ca ? lib_proxy_ca_file(jail_box_home(b)) : NULL;

	/* TLS toward the box: the CA certificate (public) for the client to trust. */
	if (rc == 0 && r->tls_ca && !ca)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0 && ca && !(flags & LIB_PROXY_DRY))
		rc = lib_home_write(ws->home, BOX_KEY_SUB, "ca.pem", r->tls_ca);
	if (rc == 0 && ca)
		rc = lib_box_env(b, "ARBORINTH_PROXY_CA_FILE", ca);
	free(ca);

	if (rc == 0)
		rc = proxy_ready_box_env(r, key_dir, &env);
	for (char **e = env; e && *e; e++) {
		if (rc == 0)
			rc = jail_box_add_env(b, *e);
		free(*e);
	}
	free(env);
	free(key_dir);
	return rc;
}

/* "NAME, NAME, KEY (a placeholder)": the variables backend rb gives the box; with key
 * files (--net) the key's is KEY_FILE. */
static char *var_names(const struct proxy_ready_backend *rb, bool key_files)
{
	char *s = strdup(""), *more;

	for (size_t i = 0; s && i < rb->n_env; i++) {
		more = util_asprintf("%s%s%.*s", s, *s ? ", " : "", (int)strcspn(rb->env[i], "="),
				     rb->env[i]);
		free(s);
		s = more;
	}
	if (s && rb->key_var) {
		more = util_asprintf("%s%s%s%s (a placeholder%s)", s, *s ? ", " : "", rb->key_var,
				     key_files ? "_FILE" : "", key_files ? "'s file" : "");
		free(s);
		s = more;
	}
	return s;
}

/* One line: origin, what the backend reaches (its facts), the box's variables. */
static char *explain_line(const struct proxy_ready_backend *rb, const char *origin, bool key_files)
{
	char *facts = strdup(""), *vars = var_names(rb, key_files), *line = NULL;

	for (size_t i = 0; facts && i < rb->n_about; i++) {
		char *more = util_asprintf("%s%s%s %s", facts, *facts ? ", " : "", rb->about[2 * i],
					   rb->about[2 * i + 1]);

		free(facts);
		facts = more;
	}
	if (facts && vars)
		line = util_asprintf("%s (%s): %s; in the box 127.0.0.1:%u, gets %s", rb->name,
				     origin, facts, rb->port, *vars ? vars : "no variable");
	free(facts);
	free(vars);
	return line;
}

/* The same for --explain --json: name, origin, port, facts, variables, key variable. */
static json_t *explain_json(const struct proxy_ready_backend *rb, const char *origin)
{
	json_t *about = json_object(), *env = json_array();

	for (size_t i = 0; about && i < rb->n_about; i++)
		json_object_set_new(about, rb->about[2 * i], json_string(rb->about[2 * i + 1]));
	for (size_t i = 0; env && i < rb->n_env; i++)
		json_array_append_new(env, json_string(rb->env[i]));
	return json_pack("{s:s, s:s, s:i, s:o, s:o, s:o}", "name", rb->name, "origin", origin,
			 "port", (int)rb->port, "about", about, "env", env, "key_var",
			 rb->key_var ? json_string(rb->key_var) : json_null());
}

int lib_proxy_explain(struct proxy_proc *px, struct jail_box *b, unsigned flags,
		      char *const *origins, char *const *notes, size_t n_notes, char **json)
{
	const struct proxy_ready *r = proxy_proc_ready(px);
	json_t *arr = json_array();
	int rc = arr ? 0 : util_err(-ENOMEM, "out of memory");

	for (size_t i = 0; rc == 0 && r && i < r->n_backends; i++) {
		const char *origin = origins ? origins[i] : "--backend";
		char *line = explain_line(&r->backends[i], origin, flags & LIB_PROXY_TCP);

		rc = line ? jail_box_add_input(b, "backend", line)
			  : util_err(-ENOMEM, "out of memory");
		free(line);
		if (rc == 0 &&
		    json_array_append_new(arr, explain_json(&r->backends[i], origin)) < 0)
			rc = util_err(-ENOMEM, "out of memory");
	}
	if (rc == 0 && !(*json = json_dumps(arr, JSON_COMPACT)))
		rc = util_err(-ENOMEM, "out of memory");
	json_decref(arr);
	for (size_t i = 0; rc == 0 && i < n_notes; i++)
		rc = jail_box_add_input(b, "backend", notes[i]);
	return rc;
}
