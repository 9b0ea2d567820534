/*
 * proxy_internal.h: types shared by the proxy's files (and its unit tests); not public.
 */
#ifndef ARB_PROXY_INTERNAL_H
#define ARB_PROXY_INTERNAL_H

#include <http_parser.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "proxy/proxy.h"

#define PROXY_HEAD_MAX	      (32 * 1024) /* request line + headers */
#define PROXY_HEADERS_MAX     100
#define PROXY_TARGET_MAX      8192
#define PROXY_RULES_MAX	      32
#define PROXY_IO_BUF	      (64 * 1024)
#define PROXY_IDLE_MS	      (120 * 1000) /* keep-alive wait for the next request */
#define PROXY_RECV_MS	      (60 * 1000)  /* wait for more of a request already started */
#define PROXY_SEND_MS	      (300 * 1000) /* a box that stops reading is dropped */
#define PROXY_PLACEHOLDER_LEN 96

enum proxy_auth {
	PROXY_AUTH_HEADER,
	PROXY_AUTH_BEARER,
	PROXY_AUTH_AUTO_ANTHROPIC,
	PROXY_AUTH_NONE
};

struct proxy_rule {
	char method[16];
	char *path;
	bool prefix;
};

struct proxy_backend {
	char *name;
	char *url; /* upstream base, without a trailing slash */
	uint16_t port;
	enum proxy_auth auth;
	char *auth_header; /* PROXY_AUTH_HEADER: the header the upstream reads ("x-api-key") */
	char *key_env, *key_file, *env_prefix, *base_path, *ca_file;
	char *key_json;	   /* key-json=FILE#/json/pointer */
	uint16_t tls_port; /* tls-port=N: the box may also come over TLS, on this port */
	long connect_timeout_s, idle_timeout_s;
	struct proxy_rule rules[PROXY_RULES_MAX];
	size_t n_rules;
	bool builtin;
	struct proxy_login *login;		   /* a login instead of a key, or NULL */
	void (*login_free)(struct proxy_login *l); /* set with login (proxy/login.c) */
	struct proxy_reapi *reapi;   /* the reapi backend (reapi_internal.h), or NULL */
	struct proxy_vertex *vertex; /* the vertex backend's token minter (vertex.c), or NULL */
	/* Filled by proxy_new(). */
	char *credential; /* the real key; host memory only (NULL with a login) */
	char placeholder[PROXY_PLACEHOLDER_LEN + 1];
};

struct proxy_hdr {
	const char *name, *value; /* NUL-terminated, in the request's arena */
};

/* One request head parsed by http-parser, and the state of its body. */
struct proxy_req {
	http_parser parser;
	http_parser_settings settings;
	size_t arena_len, head_bytes;
	const char *target;
	struct proxy_hdr hdrs[PROXY_HEADERS_MAX];
	size_t n_hdrs;
	int last_cb; /* 0 none, 1 url, 2 field, 3 value, 4 head done */
	bool headers_done, message_done;
	/* Set when the head is complete. */
	bool keep_alive, chunked, has_cl;
	uint64_t content_length;
	const char *bad; /* a refusal found during parsing (static string) */
	int bad_status;
	/* Body: on_body copies into body_dst, never more than body_cap (see proxy_req_feed). */
	char *body_dst;
	size_t body_cap, body_len;
	/* Last, so that init clears everything above it cheaply. */
	char arena[PROXY_HEAD_MAX + 2 * PROXY_HEADERS_MAX + 64];
};

/* Resets r for the next request on a connection. */
void proxy_req_init(struct proxy_req *r);
/*
 * Feeds bytes to the parser. Stops (pausing the parser) when the head or the message is
 * complete. Returns the bytes consumed, or -1 on a parse error (r->bad/bad_status set).
 */
ssize_t proxy_req_feed(struct proxy_req *r, const char *buf, size_t len);
/* Case-insensitive lookup; NULL when absent. *count (optional) receives the occurrences. */
const char *proxy_req_header(const struct proxy_req *r, const char *name, int *count);

/* ---- policy ----------------------------------------------------------------------------- */

struct proxy_verdict {
	int status; /* 0: allowed */
	const char *reason;
	struct proxy_backend *backend; /* matched backend (also on some refusals), else NULL */
	bool local;		       /* a login refresh the proxy answers itself */
	char path[PROXY_TARGET_MAX];   /* the target's path (no query), for records */
};

/* Compares a value the box sent with a secret-like string in time independent of where
 * they differ (placeholders, refresh placeholders). */
bool proxy_secret_equal(const char *a, const char *b);
/* Checks a parsed head against the backends. Pure: no I/O. Fails closed. */
void proxy_policy_check(const struct proxy_req *r, struct proxy_backend *const *backends, size_t n,
			struct proxy_verdict *v);
/* True when a request header must not be forwarded upstream as-is. */
bool proxy_header_is_dropped(const struct proxy_req *r, const char *name);
bool proxy_path_matches(const struct proxy_rule *rule, const char *method, const char *path);

/* ---- backends, credentials ---------------------------------------------------------------- */

struct proxy_backend *proxy_backend_by_port(struct proxy_backend *const *b, size_t n,
					    uint16_t port);
int proxy_backend_load_credential(struct proxy_backend *b) ARB_MUST_CHECK;
/* Clears and frees a secret string, and sets *s to NULL (NULL is fine). */
void proxy_secret_free(char **s);
/*
 * Opens dfd/name (O_NOFOLLOW, O_CLOEXEC added to flags; mode when it creates) and takes an
 * exclusive flock on it, re-opening while another process replaced the file by rename, for
 * at most wait_ms (-ETIMEDOUT). *out: the locked fd (closing it unlocks). Errors name
 * `shown` (the path for messages) and keep open's errno (-ENOENT: no such file). flock.c.
 */
int proxy_flock_open(int dfd, const char *name, const char *shown, int flags, mode_t mode,
		     int wait_ms, int *out) ARB_MUST_CHECK;
int proxy_placeholder_make(char *out, size_t size, const char *name) ARB_MUST_CHECK;
/* The header name and value the upstream receives credential cred in; value malloc'd. */
int proxy_backend_auth_header(const struct proxy_backend *b, const char *cred, const char **name,
			      char **value) ARB_MUST_CHECK;
/* The login's path the box's refresh requests use, or NULL; the header carrying the account. */
const char *proxy_login_local_path(const struct proxy_login *l);
const char *proxy_login_account_header(const struct proxy_login *l);
/* The box's placeholder for the login's account id (as long as the real one), or NULL. */
const char *proxy_login_ph_account(const struct proxy_login *l);
/* The answer to the box's refresh request body: 200 with placeholders for this box's own
 * refresh placeholder, else 400 invalid_grant. *json malloc'd. */
int proxy_login_box_answer(const struct proxy_backend *b, const char *body, size_t len, int *status,
			   char **json) ARB_MUST_CHECK;

/* ---- redaction ------------------------------------------------------------------------------ */

/*
 * Streaming redaction of one secret: every occurrence is replaced by as many '*' (so lengths
 * hold). Holds back only a tail that could start an occurrence, so a stream that never
 * nears the secret passes through undelayed.
 */
struct proxy_redact {
	const char *secret;
	const char *repl; /* what replaces it (as long as the secret), or NULL: '*'s */
	size_t len;
	char held[8192]; /* keys are at most 1024 bytes (cred.c), login tokens (JWTs) 8 KiB */
	size_t n_held;
	char *scratch; /* grows to the largest chunk seen */
	size_t cap;
};
/* secret: NULL or "" redacts nothing; repl: a string of the secret's length to put in its
 * place (the box's placeholder for an identifier), or NULL for '*'s. */
void proxy_redact_init(struct proxy_redact *rd, const char *secret, const char *repl);
void proxy_redact_free(struct proxy_redact *rd);
/*
 * Redacts in[0..n) and emits the output through emit(ctx, data, len) (possibly twice).
 * Returns emit's first nonzero result, -ENOMEM, else 0. With final, flushes what was held.
 */
int proxy_redact_feed(struct proxy_redact *rd, const char *in, size_t n, bool final,
		      int (*emit)(void *ctx, const char *d, size_t n), void *ctx);
/* In place, for header lines (repl as for proxy_redact_init). */
void proxy_redact_buf(const char *secret, const char *repl, char *buf, size_t n);

/* ---- connections, server ------------------------------------------------------------------ */

#define PROXY_TUNNEL_IDLE_MS	(600 * 1000) /* a tunnel with no byte either way is closed */
#define PROXY_TUNNEL_CONNECT_MS (15 * 1000)  /* per address tried */

/* One --allow-host entry. */
struct proxy_allow {
	char *host; /* lowercase; IPv6 without brackets */
	uint16_t port;
};

enum proxy_listen_kind {
	PROXY_LISTEN_HTTP,   /* requests from the box (through its relay, or on loopback) */
	PROXY_LISTEN_EGRESS, /* the --allow-host CONNECT proxy */
	PROXY_LISTEN_TLS,    /* requests from the box over TLS (tls.c) */
};

struct proxy_listener {
	int fd;
	enum proxy_listen_kind kind;
	char *path; /* a Unix socket's path (removed at the end), or NULL */
};

struct proxy {
	struct proxy_backend **backends;
	size_t n_backends;
	uint16_t *ports;
	struct proxy_listener *ls; /* where connections come from */
	size_t n_ls;
	/* Listening on the host's loopback: any local process may connect. */
	bool tcp_listening;
	void *tls_ctx;	  /* SSL_CTX, when a backend serves the box over TLS (tls.c) */
	char *tls_ca_pem; /* ... and the certificate of this proxy's CA */
	proxy_observer_fn observer;
	void *observer_ctx;
	unsigned max_conns;
	pthread_t accept_thread;
	bool accept_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n_conns;
	int wake[2]; /* self-pipe that stops the accept thread */
	void *share; /* libcurl share: upstream connections, DNS, TLS sessions */
	pthread_mutex_t share_locks[8];
	pthread_mutex_t share_made;   /* the share is made by the first request upstream */
	bool share_inited;	      /* the locks are */
	struct proxy_client *clients; /* connections being served, for shutdown */
	atomic_bool stopping;
	/* --allow-host: the CONNECT proxy's listener and its list. */
	struct proxy_allow *allow;
	char **allow_names; /* "host:port", NULL-terminated */
	size_t n_allow;
};

struct proxy_conn {
	struct proxy *p;
	int fd;
	void *easy; /* the libcurl handle, kept for upstream keep-alive */
	char in[PROXY_IO_BUF];
	size_t in_off, in_len;
	bool eof;
};

/*
 * TLS toward the box (tls.c): init makes this proxy's CA and server certificate and the
 * context; serve decrypts one connection into proxy_conn_serve until it ends (the caller
 * closes fd); free releases them. -EIO with a message.
 */
int proxy_tls_init(struct proxy *p) ARB_MUST_CHECK;
void proxy_tls_serve(struct proxy *p, int fd);
void proxy_tls_free(struct proxy *p);

/* Serves requests on fd until the connection ends; the caller closes fd. Server and tests. */
void proxy_conn_serve(struct proxy *p, int fd);
/* The same for a connection to the --allow-host proxy: one CONNECT tunnel (egress.c). */
void proxy_egress_serve(struct proxy *p, int fd);
/*
 * Reads the next request head into r: 0 when complete (or refused by the parser: r->bad),
 * 1 when the connection ended (or timed out) before a request.
 */
int proxy_conn_read_head(struct proxy_conn *c, struct proxy_req *r, bool first);
/*
 * Hands rec to p's observer (if any) after replacing, in a copy of rec->path and rec->host,
 * every occurrence of a backend's credential or placeholder by '*'.
 */
void proxy_record_emit(struct proxy *p, struct proxy_record *rec);
/*
 * The next piece of the request body into buf (at most cap bytes, at least 1 unless the body
 * is complete). Returns the count, 0 at the end of the body, -EBADMSG for a malformed body,
 * or another negative errno when the box went away or timed out.
 */
ssize_t proxy_conn_read_body(struct proxy_conn *c, struct proxy_req *r, char *buf, size_t cap);
/* Sends a refusal/error: status, JSON body with reason, Connection: close. */
int proxy_send_error(int fd, int status, const char *reason);
int proxy_send_all(int fd, const void *buf, size_t len);

/* Forwards one allowed request upstream and streams the answer back. */
struct proxy_fwd_result {
	int status; /* sent to the box; 0 if nothing could be sent */
	int64_t bytes_up, bytes_down;
	const char *reason;
	bool keep_alive; /* the connection may carry another request */
};
void proxy_upstream_forward(struct proxy_conn *c, struct proxy_req *r,
			    const struct proxy_verdict *v, struct proxy_fwd_result *res);
int proxy_upstream_global_init(void) ARB_MUST_CHECK;
/* The upstream connection cache shared by all of p's connections (thread-safe share). */
int proxy_upstream_share_new(struct proxy *p) ARB_MUST_CHECK;
void proxy_upstream_share_free(struct proxy *p);
/* Releases the connection's upstream handle (and its kept-alive upstream connection). */
void proxy_upstream_conn_done(struct proxy_conn *c);

/* Fills a sockaddr_un for path, via /proc/self/fd/DIR/NAME when path is too long; *dirfd is
 * -1 or a directory fd the caller closes after bind/connect. */
int proxy_sockaddr(const char *path, struct sockaddr_un *sa, socklen_t *len,
		   int *dirfd) ARB_MUST_CHECK;

/* A TCP port, 1..65535, in decimal digits only; -EINVAL (no message). */
int proxy_port_parse(const char *s, uint16_t *out);

/*
 * An upstream URL: http(s)://host[:port][/path], no userinfo, query or fragment; -EINVAL
 * with a message naming backend `name` (proxy/url_lite.c: a grammar libcurl reads the same
 * way, checked without libcurl in the launcher and the proxy).
 */
int proxy_url_check(const char *name, const char *url);

#endif
