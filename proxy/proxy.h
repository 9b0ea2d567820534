/*
 * proxy: the credential proxy. Model calls leave the box, the credential never enters it.
 *
 * Host side: struct proxy listens on one Unix socket (bound read-only into the box), checks
 * every HTTP/1.1 request against its backend's policy (fail closed: refusals are HTTP errors
 * with a JSON body stating the reason), swaps the box's random placeholder for the real
 * credential (read on the host only), and streams the request and response bodies through
 * libcurl to the upstream over TLS with verification, without buffering whole bodies.
 *
 * In the box: struct proxy_relay listens on 127.0.0.1:PORT per backend and relays each TCP
 * connection to the proxy's Unix socket. The Host header names the backend by its port.
 *
 * Second egress (optional): an HTTP proxy for the box on its own Unix socket (relayed from
 * 127.0.0.1:PROXY_EGRESS_PORT) that opens CONNECT tunnels to allowed HOST:PORTs only. The host
 * side resolves the name and connects; everything else is refused with a reason.
 *
 * Libraries: http-parser (Debian libhttp-parser) parses requests from the box; libcurl
 * (OpenSSL) speaks to the upstream. No hand-written HTTP parser, no hand-written TLS.
 */
#ifndef ARB_PROXY_H
#define ARB_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/util.h"

/* ---- backends ------------------------------------------------------------------------ */

struct proxy_backend;

/*
 * Parses a backend specification:
 *   NAME                     a built-in backend (anthropic, openai) with its defaults
 *   NAME=URL                 a built-in backend pointed at another upstream
 *   NAME=URL,KEY=VALUE,...   options; a name that is not built in defines a new backend,
 *                            which needs a URL, port= and at least one allow=
 * Options: port=N (in-box port), allow=METHOD:PATH (exact) or METHOD:PATH* (prefix at a
 * segment boundary; repeatable; replaces a built-in's list), auth=x-api-key|bearer|
 * header:NAME (how the upstream gets the credential), key-env=VAR, key-file=FILE,
 * key-json=FILE#/POINTER (the string at that JSON pointer of a JSON or JSONC file),
 * tls-port=N (the box may also come over TLS on in-box port N, with a certificate of a CA
 * the proxy makes for itself: proxy_tls_ca),
 * env=PREFIX (box gets PREFIX_BASE_URL, PREFIX_API_KEY), base-path=/v1 (appended to the
 * box's base URL), ca-file=FILE (trust these CAs for the upstream instead of the system's),
 * connect-timeout=SECONDS, idle-timeout=SECONDS (no upstream byte for that long: 504).
 * -EINVAL with a message naming the problem. Caller frees with proxy_backend_free().
 */
int proxy_backend_parse(struct proxy_backend **out, const char *spec) ARB_MUST_CHECK;
void proxy_backend_free(struct proxy_backend *b);
/* Sets one option (as in the specification) on a parsed backend: key-file, ca-file, ... */
int proxy_backend_set(struct proxy_backend *b, const char *key, const char *value) ARB_MUST_CHECK;
/* Borrowed, valid while b lives. */
const char *proxy_backend_name(const struct proxy_backend *b);
uint16_t proxy_backend_port(const struct proxy_backend *b);
/* The host variable the key is read from (unless key-file= is set); borrowed. */
const char *proxy_backend_key_env(const struct proxy_backend *b);
/* The host file the key is read from: key-file=, or key-json= (FILE#/pointer); NULL. Borrowed. */
const char *proxy_backend_key_source(const struct proxy_backend *b);
/*
 * Whether b's upstream can be reached (proxy/reach.c): its host resolves and a TCP connection
 * opens within 3 s (not checked when $https_proxy or the like sends traffic through a proxy).
 * 0, or -EHOSTUNREACH, -ECONNREFUSED, -ETIMEDOUT... with one line saying which.
 */
int proxy_backend_reach(const struct proxy_backend *b) ARB_MUST_CHECK;
/*
 * The folders where one user's proxies share the tokens they mint (proxy/token_dir.c):
 * $XDG_RUNTIME_DIR/arborinth/tokens and $XDG_STATE_HOME/arborinth/tokens (default
 * ~/.local/state/arborinth/tokens), each NULL when its variables are unset or relative. A
 * box must see neither. Caller frees both. -ENOMEM.
 */
int proxy_token_dirs(char **runtime, char **state) ARB_MUST_CHECK;

/* ---- logins (OAuth tokens kept on the host) -------------------------------------------- */

/* Refresh when the access token has less than this left. */
#define PROXY_LOGIN_MARGIN_MS (5 * 60 * 1000)

enum proxy_login_kind {
	PROXY_LOGIN_CLAUDE, /* Claude Code: .credentials.json, {"claudeAiOauth": {...}} */
	PROXY_LOGIN_CODEX,  /* Codex with a ChatGPT login: auth.json, {"tokens": {...}} */
};

struct proxy;
struct proxy_login;

/*
 * Opens the host's login file at path and checks it holds a login. Errors name the file and
 * the command that makes a login: -ENOENT missing, -EACCES (or another errno) unreadable,
 * -EINVAL malformed. token_url: where refreshes go (NULL: the client's own endpoint; https,
 * or http to loopback); ca_file: CAs to trust for it (NULL: the system's). The file is read
 * again whenever it changes, so the host's own client may refresh it too. Caller frees with
 * proxy_login_free(), or hands it to a backend (proxy_backend_set_login).
 */
int proxy_login_open(struct proxy_login **out, enum proxy_login_kind kind, const char *path,
		     const char *token_url, const char *ca_file) ARB_MUST_CHECK;
void proxy_login_free(struct proxy_login *l);
/*
 * Makes sure the access token has PROXY_LOGIN_MARGIN_MS left, refreshing it on the host when
 * not: under an exclusive lock on the file shared by every process (another one's refresh is
 * taken instead of making a second), with the new tokens written back atomically with the
 * file's mode and owner. -EKEYEXPIRED (refused, or no refresh token), -EKEYREJECTED (the
 * upstream refused a token refreshed less than 10 min ago: not refreshed again) or
 * -EHOSTUNREACH with a message naming the file and the fix. Thread-safe.
 */
int proxy_login_ensure(struct proxy_login *l) ARB_MUST_CHECK;
/* Current access token (and account id, when account is not NULL and the login has one), fresh
 * as by proxy_login_ensure. Caller frees both (secrets: clear them). Thread-safe. */
int proxy_login_current(struct proxy_login *l, char **access, char **account) ARB_MUST_CHECK;
/*
 * The upstream refused access: the next use refreshes (unless the file changed meanwhile, or
 * was written less than 10 min ago: then the next use fails with -EKEYREJECTED).
 */
void proxy_login_refused(struct proxy_login *l, const char *access);
/* Refreshes this process made (for tests). */
unsigned proxy_login_refreshes(struct proxy_login *l);
/* Borrowed: the host file (symlinks resolved). */
const char *proxy_login_path(const struct proxy_login *l);
/*
 * The backend sends l's access token upstream (Authorization: Bearer, and the account
 * header where the login has one) instead of a key, and answers the box's refresh requests
 * itself. b owns l from then on.
 */
void proxy_backend_set_login(struct proxy_backend *b, struct proxy_login *l);
/* Borrowed: b's login, or NULL. */
struct proxy_login *proxy_backend_login(const struct proxy_backend *b);
/*
 * The box's own login file for backend `name`: the host file's non-secret fields, and this
 * proxy's placeholders for every token, valid for a year. Caller frees *out.
 */
int proxy_login_box_file(const struct proxy *p, const char *backend, char **out) ARB_MUST_CHECK;

/* ---- allowed hosts (--allow-host) ----------------------------------------------------- */

/* The in-box port of the --allow-host proxy (HTTPS_PROXY=http://127.0.0.1:PORT). */
#define PROXY_EGRESS_PORT 8712

/*
 * Parses "HOST[:PORT]" (PORT defaults to 443): a DNS name (letters, digits, '-', '.', '_';
 * stored lowercase), an IPv4 address or a bracketed IPv6 address ("[::1]:8443").
 * *host receives a malloc'd copy (IPv6 without brackets). -EINVAL with a message.
 */
int proxy_allow_host_parse(const char *spec, char **host, uint16_t *port) ARB_MUST_CHECK;

/* ---- audit records ------------------------------------------------------------------- */

/*
 * One finished request, refused or forwarded. Never a body, never a credential: the proxy
 * replaces every occurrence of a backend's credential or placeholder in path and host by '*'.
 */
struct proxy_record {
	int64_t time_ns;     /* CLOCK_REALTIME when the request head was complete */
	const char *backend; /* NULL when no backend matched */
	const char *method;  /* "" when the request line was unreadable */
	const char *path;    /* the target's path, without the query; "" when unreadable */
	int status;	     /* status sent to the box; 0 when the connection broke first */
	int64_t bytes_up;    /* request body bytes forwarded */
	int64_t bytes_down;  /* response body bytes sent to the box */
	int64_t duration_ns;
	bool allowed;	    /* passed the policy and was forwarded */
	const char *reason; /* "allowed", a policy reason, or what went wrong upstream */
	/*
	 * egress: the request came to the --allow-host proxy (backend NULL); host and port are
	 * the requested tunnel's (NULL/0 when unreadable), path is "", and bytes count the
	 * tunnel's stream in each direction.
	 */
	bool egress;
	const char *host;
	uint16_t port;
};

/* Called once per request from connection threads; must be thread-safe. Strings borrowed. */
typedef void (*proxy_observer_fn)(void *ctx, const struct proxy_record *rec);

/* ---- host-side proxy ----------------------------------------------------------------- */

struct proxy;

struct proxy_config {
	const char *socket_path;	 /* created (mode 0600); NULL: no listener */
	struct proxy_backend **backends; /* ownership moves to the proxy on success */
	size_t n_backends;		 /* names and ports distinct; >= 1 unless allow hosts */
	/*
	 * --allow-host: "HOST[:PORT]" specifications (copied); with egress_socket_path the
	 * CONNECT proxy listens there (mode 0600). Both or neither.
	 */
	const char *const *allow_hosts;
	size_t n_allow_hosts;
	const char *egress_socket_path;
	proxy_observer_fn observer; /* optional */
	void *observer_ctx;
	unsigned max_conns; /* 0: 256 */
	/*
	 * tcp (for boxes that share the host's network): instead of the Unix socket, listen on
	 * 127.0.0.1 of the host, one port per backend, which becomes the backend's port (the
	 * Host header still names the backend by it). tcp_fds: per backend, a listener made by
	 * proxy_listen_loopback (its port then is the backend's), or -1 for a new one on a port
	 * the kernel chooses; may be NULL; tcp_tls_fds the same for backends' TLS ports. The
	 * caller keeps the given fds (the proxy listens on copies).
	 */
	bool tcp;
	const int *tcp_fds, *tcp_tls_fds;
	/* Where the box's TLS connections come (relayed), when a backend has tls-port=. */
	const char *tls_socket_path;
};

/*
 * Reads each backend's credential (key-file, else its environment variable) on the host,
 * makes a random placeholder per backend, binds the socket and starts the accept thread.
 * -ENOKEY when a credential is missing or empty, -EADDRINUSE, -EINVAL (message says which).
 * On failure the backends still belong to the caller. Caller frees with proxy_free().
 */
int proxy_new(struct proxy **out, const struct proxy_config *cfg) ARB_MUST_CHECK;
/* Stops listening, aborts open connections and their upstream transfers, waits, frees. */
void proxy_free(struct proxy *p);

/*
 * The box's environment for the backends, each backend's own (proxy_backend_answer): an
 * HTTP backend PREFIX_BASE_URL=http://127.0.0.1:PORT (plus its base path; with tls-port=
 * also PREFIX_TLS_BASE_URL=https://127.0.0.1:TLSPORT...) and PREFIX_API_KEY=<placeholder>,
 * or, with key_dir, PREFIX_API_KEY_FILE=key_dir/NAME.key (the caller writes
 * proxy_placeholder() there); a login's backend no key variable (its placeholders are in the
 * box's login file); reapi PREFIX_REMOTE and PREFIX_INSTANCE; vertex its base URL. With allowed
 * hosts also HTTPS_PROXY, HTTP_PROXY, https_proxy, http_proxy =
 * http://127.0.0.1:PROXY_EGRESS_PORT and NO_PROXY, no_proxy = 127.0.0.1 (the relays;
 * "localhost" is proxied, so an allowed host "localhost" means the host's). NULL-terminated
 * "K=V" strings; caller frees each and the array. Never contains a credential.
 */
int proxy_box_env(const struct proxy *p, const char *key_dir, char ***out) ARB_MUST_CHECK;
/* The placeholder of backend `name`; borrowed, NULL when there is no such backend. */
const char *proxy_placeholder(const struct proxy *p, const char *name);
/* The PEM certificate of the CA this proxy made for TLS toward the box, or NULL when no
 * backend has tls-port=. Not a secret. Borrowed. */
const char *proxy_tls_ca(const struct proxy *p);
/* Backend b's in-box TLS port, or 0. */
uint16_t proxy_backend_tls_port(const struct proxy_backend *b);
/* Backend i (in configuration order) of the proxy, or NULL past the last. Borrowed. */
const struct proxy_backend *proxy_backend_at(const struct proxy *p, size_t i);
/* The in-box ports, in backend order; *n receives the count. Borrowed. */
const uint16_t *proxy_ports(const struct proxy *p, size_t *n);
/* The allowed hosts as "host:port" (IPv6 bracketed), in order; *n receives the count. */
const char *const *proxy_allowed_hosts(const struct proxy *p, size_t *n);
/* Number of connections being served right now (for tests). Thread-safe. */
unsigned proxy_active_conns(struct proxy *p);

/*
 * Listens on 127.0.0.1:port (0: a port the kernel chooses, stored in *bound when not NULL),
 * close-on-exec. For proxy_config.tcp_fds and the relay. -errno with a message.
 */
int proxy_listen_loopback(uint16_t port, int *fd, uint16_t *bound) ARB_MUST_CHECK;

/* ---- in-box relay -------------------------------------------------------------------- */

struct proxy_relay;

/*
 * Listens on 127.0.0.1:ports[i] for each i (bound before returning, so a command started
 * afterwards can connect at once) and relays each accepted connection, in both directions,
 * to the Unix socket at socket_path, from threads of this process. Caller stops it with
 * proxy_relay_free().
 */
int proxy_relay_start(struct proxy_relay **out, const char *socket_path, const uint16_t *ports,
		      size_t n) ARB_MUST_CHECK;
void proxy_relay_free(struct proxy_relay *r);

/*
 * Parses a relay argument "PORT[,PORT...]=SOCKET" (the form box-init receives) into ports
 * (caller frees) and a socket path (caller frees).
 */
int proxy_relay_arg_parse(const char *arg, uint16_t **ports, size_t *n,
			  char **socket_path) ARB_MUST_CHECK;
/* The other half: "PORT[,PORT...]=SOCKET" for n > 0 ports (caller frees; NULL: ENOMEM). */
char *proxy_relay_arg_format(const uint16_t *ports, size_t n, const char *socket_path);
/* The box-init hook that runs relays (jail_box_add_init_hook, box-init's hook table). */
#define PROXY_RELAY_HOOK "relay"

/*
 * The same as a box-init hook (struct jail_init_hook's start/stop): start parses arg
 * ("PORT[,PORT...]=SOCKET") and starts the relay into *state; stop frees it.
 */
int proxy_relay_hook_start(const char *arg, void **state) ARB_MUST_CHECK;
void proxy_relay_hook_stop(void *state);

/* ---- the proxy as its own program (arborinth_proxy) ----------------------------------- */

/*
 * arborinth_proxy holds every credential: the launcher (arborinth, libarborinth) starts it
 * per box with proxy_proc_start, never reads a key or a login itself and never loads libcurl
 * or a TLS library. Its command line is made and read by one pair of functions
 * (proxy_args_format / proxy_args_parse, proxy/args.c), its answer on the ready pipe by
 * another (proxy_ready_format / proxy_ready_parse, proxy/ready.c).
 */
#define PROXY_PROGRAM "arborinth_proxy"

/* The program's configuration: what its command line says. Strings and arrays borrowed. */
struct proxy_args {
	const char *const *backends; /* backend specifications (proxy_backend_parse) */
	size_t n_backends;
	const char *key_file; /* key-file= of the first backend, or NULL */
	/* A launcher's login on backend login_backend (proxy_login_open), or NULL. */
	const char *login_backend, *login_path, *login_token_url;
	int login_kind; /* enum proxy_login_kind */
	const char *const *allow_hosts;
	size_t n_allow_hosts;
	/* Listeners (proxy_config); with none of them and !tcp, or !serve: no listener. */
	const char *socket_path, *egress_socket_path, *tls_socket_path;
	bool tcp;
	const int *tcp_fds, *tcp_tls_fds; /* per backend, inherited; -1: the proxy's own */
	bool serve;			  /* false: check the credentials, answer, exit */
	/* The audit log the program writes its "net" rows to (state.db), or NULL. */
	const char *audit_db, *ws_id, *ws_name;
	int ready_fd;	/* the answer (proxy_ready_format), then closed */
	int control_fd; /* "session N" lines; end of file: stop */
};

/*
 * The program's argv (argv[0] = exe, NULL-terminated) for a; caller frees each and the array.
 * proxy_args_parse is the other half: *a's strings point into argv, its arrays are
 * allocated (proxy_args_release). -EINVAL with a message naming the bad argument.
 */
int proxy_args_format(const struct proxy_args *a, const char *exe, char ***argv) ARB_MUST_CHECK;
int proxy_args_parse(struct proxy_args *a, int argc, char **argv) ARB_MUST_CHECK;
void proxy_args_release(struct proxy_args *a);

/*
 * What a started proxy tells its launcher: everything the box needs, no credential. Each
 * backend computes its own box variables inside the proxy (proxy_backend_box_env); the
 * launcher applies them without knowing what kind of backend it has.
 */
#define PROXY_READY_ENV_MAX   16   /* variables per backend */
#define PROXY_READY_ABOUT_MAX 8	   /* facts per backend */
#define PROXY_READY_VALUE_MAX 4096 /* bytes of one variable or fact */
struct proxy_ready_backend {
	char *name, *placeholder;
	char *key_source; /* the host key file (hidden from the box), or NULL */
	char *login_path; /* the login's host file (symlinks resolved), or NULL */
	char *login_box;  /* the box's login file (proxy_login_box_file), or NULL */
	char **env;	  /* the box's variables, "NAME=VALUE" (NAME: [A-Za-z_][A-Za-z0-9_]*) */
	size_t n_env;
	/* The variable the placeholder goes in (NAME=placeholder, or with a key folder
	 * NAME_FILE=FOLDER/BACKEND.key), or NULL: no key in the box. */
	char *key_var;
	/* For --explain: "key", "value" pairs (about[2*i], about[2*i+1]): upstream, instance,
	 * credential source kind... Never a secret. */
	char **about;
	size_t n_about;
	uint16_t port, tls_port;
};
struct proxy_ready {
	struct proxy_ready_backend *backends;
	size_t n_backends;
	uint16_t *ports; /* the backends' ports, in order */
	char **allow_hosts;
	size_t n_allow_hosts;
	char *tls_ca; /* PEM, or NULL */
};

/* One line of JSON for r (caller frees; NULL: ENOMEM), or for a failure: rc and the message. */
char *proxy_ready_format(const struct proxy_ready *r);
char *proxy_ready_format_error(int rc, const char *msg);
/* Reads either: a failure comes back as its rc, with its message (util_err). */
int proxy_ready_parse(struct proxy_ready **out, const char *text) ARB_MUST_CHECK;
void proxy_ready_free(struct proxy_ready *r);
/* p's answer (the proxy's side). */
int proxy_ready_of(struct proxy_ready **out, const struct proxy *p) ARB_MUST_CHECK;
/*
 * Backend b's own part of the answer (proxy/backend.c, each kind's hook), for the in-box
 * ports port and tls_port: its box variables into rb->env and rb->key_var, and rb->about.
 */
int proxy_backend_answer(const struct proxy_backend *b, uint16_t port,
			 struct proxy_ready_backend *rb) ARB_MUST_CHECK;
/* As proxy_box_env, proxy_placeholder and proxy_backend_* for the proxy that answered r. */
int proxy_ready_box_env(const struct proxy_ready *r, const char *key_dir,
			char ***out) ARB_MUST_CHECK;
const struct proxy_ready_backend *proxy_ready_backend(const struct proxy_ready *r,
						      const char *name);

/* A running arborinth_proxy, the launcher's handle. */
struct proxy_proc;

/*
 * Starts exe (arborinth_proxy) with a (its ready_fd and control_fd are filled in), waits for
 * its answer and returns it in *out. The program dies with this process (PR_SET_PDEATHSIG,
 * and the end of its control pipe) and ignores the terminal's signals. Its failure is this
 * call's: its rc with its one-line message.
 */
int proxy_proc_start(struct proxy_proc **out, const char *exe,
		     const struct proxy_args *a) ARB_MUST_CHECK;
/*
 * The same in steps, so the launcher can work while the proxy starts: spawn starts it, wait
 * reads its answer (again: the same result; proxy_proc_ready is NULL until then), confirm
 * whether it could open its audit log, which it does after answering (a failure: the box's
 * command must not run).
 */
int proxy_proc_spawn(struct proxy_proc **out, const char *exe,
		     const struct proxy_args *a) ARB_MUST_CHECK;
int proxy_proc_wait(struct proxy_proc *pp) ARB_MUST_CHECK;
int proxy_proc_confirm(struct proxy_proc *pp) ARB_MUST_CHECK;
const struct proxy_ready *proxy_proc_ready(const struct proxy_proc *pp);
pid_t proxy_proc_pid(const struct proxy_proc *pp);
/* The session the program's audit rows belong to from now on. */
int proxy_proc_session(struct proxy_proc *pp, int64_t session) ARB_MUST_CHECK;
/*
 * Closes the control pipe (the program finishes its requests and rows) and waits. end only
 * closes it: the program exits while the launcher works on (the box is over), stop waits.
 */
void proxy_proc_end(struct proxy_proc *pp);
void proxy_proc_stop(struct proxy_proc *pp);

#endif
