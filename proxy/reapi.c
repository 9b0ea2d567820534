/*
 * proxy/reapi.c: the HTTP/2 bridge for the reapi backend. The box speaks HTTP/2 cleartext
 * with prior knowledge (gRPC's insecure mode) to its relay; here an nghttp2 server session
 * reads its streams and an nghttp2 client session carries the allowed ones to the upstream
 * (h2c), each with the host's bearer token. Every stream is checked (:method, :path against
 * the allow-list, :authority, the instance name) and refused with a gRPC status in a
 * trailers-only response, never an HTTP error (clients retry those for tens of seconds).
 * Flow control is end to end: a side's window opens only when its bytes were taken by the
 * other side, so no stream buffers more than its window.
 */
#include "proxy/reapi_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define H2_PREFACE   "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_WINDOW    (4 * 1024 * 1024)
#define H2_HDRS_MAX  64
#define H2_HDR_BYTES (16 * 1024)
#define H2_STREAMS   100
/*
 * HTTP/2 connections a box may hold at once. Each may make the proxy hold its windows (16
 * MiB each way); a box's 256 connections would be 8 GiB. 16 serve 1600 concurrent streams.
 */
#define H2_BRIDGES   16
#define GRPC_DENIED  7
#define GRPC_UNAUTH  16
#define GRPC_UNAVAIL 14

struct bq {
	unsigned char *buf;
	size_t off, len, cap;
};

struct hdrs {
	char *name[H2_HDRS_MAX], *value[H2_HDRS_MAX];
	size_t n, bytes;
	bool overflow;
};

struct stream {
	struct bridge *br;
	int32_t down_id, up_id;
	struct hdrs req, resp, trl;
	struct bq up_q, down_q; /* box to upstream, upstream to box */
	bool up_eof, down_eof, checked, refused, resp_sent, down_closed, up_closed, up_open;
	bool have_trailers;
	struct proxy_reapi_scan scan; /* the instance check on the box's messages */
	size_t released;	      /* bytes at up_q's front the scan passed */
	char *token;		      /* the bearer sent upstream: redacted from all that returns */
	struct proxy_redact *rd;      /* ... from the response's messages */
	int64_t t0, bytes_up, bytes_down;
	int grpc_status;
	const char *reason;
	struct stream *next;
};

struct bridge {
	struct proxy_conn *c;
	struct proxy *p;
	struct proxy_backend *b; /* the reapi backend */
	nghttp2_session *down, *up;
	int up_fd;
	SSL *up_ssl; /* grpcs:// */
	bool up_failed;
	struct stream *streams;
};

static int bq_put(struct bq *q, const void *d, size_t n)
{
	if (q->off + q->len + n > q->cap) {
		if (q->off) {
			memmove(q->buf, q->buf + q->off, q->len);
			q->off = 0;
		}
		if (q->len + n > q->cap) {
			size_t cap = q->cap ? q->cap : 65536;
			unsigned char *nb;

			while (cap < q->len + n)
				cap *= 2;
			nb = realloc(q->buf, cap);
			if (!nb)
				return -ENOMEM;
			q->buf = nb;
			q->cap = cap;
		}
	}
	memcpy(q->buf + q->off + q->len, d, n);
	q->len += n;
	return 0;
}

static void hdrs_free(struct hdrs *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->name[i]);
		free(h->value[i]);
	}
	h->n = 0;
}

static void hdrs_add(struct hdrs *h, const uint8_t *n, size_t nl, const uint8_t *v, size_t vl)
{
	/* A box's head is kept in host memory per stream: bounded in count and bytes. */
	if (h->n >= H2_HDRS_MAX || h->bytes + nl + vl > H2_HDR_BYTES) {
		h->overflow = true;
		return;
	}
	h->bytes += nl + vl;
	h->name[h->n] = strndup((const char *)n, nl);
	h->value[h->n] = strndup((const char *)v, vl);
	if (!h->name[h->n] || !h->value[h->n]) {
		free(h->name[h->n]);
		free(h->value[h->n]);
		h->overflow = true;
		return;
	}
	h->n++;
}

static const char *hdrs_get(const struct hdrs *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->name[i], name))
			return h->value[i];
	return NULL;
}

static nghttp2_nv nv(const char *n, const char *v)
{
	nghttp2_nv x = {(uint8_t *)n, (uint8_t *)v, strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE};

	return x;
}

static void record(struct stream *s)
{
	struct proxy_record rec = {0};
	char reason[160];

	snprintf(reason, sizeof(reason), "%s: grpc-status %d", s->reason ? s->reason : "allowed",
		 s->grpc_status);
	rec.time_ns = s->t0;
	rec.backend = s->br->b ? s->br->b->name : NULL;
	rec.method = "POST";
	rec.path = hdrs_get(&s->req, ":path") ? hdrs_get(&s->req, ":path") : "";
	rec.status = s->resp_sent ? 200 : 0;
	rec.bytes_up = s->bytes_up;
	rec.bytes_down = s->bytes_down;
	rec.duration_ns = util_now_ns() - s->t0;
	rec.allowed = !s->refused;
	rec.reason = reason;
	proxy_record_emit(s->br->p, &rec);
}

static void stream_free(struct stream *s)
{
	struct stream **pp = &s->br->streams;

	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
	hdrs_free(&s->req);
	hdrs_free(&s->resp);
	hdrs_free(&s->trl);
	proxy_secret_free(&s->token);
	if (s->rd)
		proxy_redact_free(s->rd);
	free(s->rd);
	free(s->up_q.buf);
	free(s->down_q.buf);
	free(s);
}

/* Frees s once neither side refers to it any more. */
static void stream_maybe_free(struct stream *s)
{
	if (s->down_closed && (!s->up_open || s->up_closed))
		stream_free(s);
}

/* A trailers-only answer to the box: gRPC status code and message. */
static void refuse(struct stream *s, int code, const char *why)
{
	char codes[12], msg[200];
	nghttp2_nv h[4];

	if (s->resp_sent || s->down_closed)
		return;
	snprintf(codes, sizeof(codes), "%d", code);
	/* grpc-message is percent-encoded; the reasons here are plain ASCII without '%'. */
	snprintf(msg, sizeof(msg), "arborinth proxy: %s", why);
	h[0] = nv(":status", "200");
	h[1] = nv("content-type", "application/grpc");
	h[2] = nv("grpc-status", codes);
	h[3] = nv("grpc-message", msg);
	s->refused = code == GRPC_DENIED || code == GRPC_UNAUTH || s->refused;
	s->grpc_status = code;
	s->reason = why;
	s->resp_sent = nghttp2_submit_response(s->br->down, s->down_id, h, 4, NULL) == 0;
	if (s->up_open && !s->up_closed)
		nghttp2_submit_rst_stream(s->br->up, NGHTTP2_FLAG_NONE, s->up_id, NGHTTP2_CANCEL);
}

/* ---- data providers ------------------------------------------------------------------ */

/* Box bytes to the upstream; opening the box's window by what was taken. */
static ssize_t up_read(nghttp2_session *sess, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *ud)
{
	struct stream *s = src->ptr;
	size_t n = s->released < len ? s->released : len; /* only what the scan passed */

	(void)sess;
	(void)id;
	(void)ud;
	if (n) /* the queue may have no buffer yet */
		memcpy(buf, s->up_q.buf + s->up_q.off, n);
	s->up_q.off += n;
	s->up_q.len -= n;
	s->released -= n;
	if (n && !s->down_closed)
		nghttp2_session_consume(s->br->down, s->down_id, n);
	if (s->up_q.len == 0 && s->up_eof)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	else if (n == 0)
		return NGHTTP2_ERR_DEFERRED;
	return (ssize_t)n;
}

/* Upstream bytes to the box, then the upstream's trailers. */
static ssize_t down_read(nghttp2_session *sess, int32_t id, uint8_t *buf, size_t len,
			 uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	struct stream *s = src->ptr;
	size_t n = s->down_q.len < len ? s->down_q.len : len;

	(void)ud;
	if (n) /* the queue may have no buffer yet */
		memcpy(buf, s->down_q.buf + s->down_q.off, n);
	s->down_q.off += n;
	s->down_q.len -= n;
	s->bytes_down += (int64_t)n;
	if (n && s->up_open && !s->up_closed)
		nghttp2_session_consume(s->br->up, s->up_id, n);
	if (s->down_q.len == 0 && s->down_eof) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (s->have_trailers && s->trl.n) {
			nghttp2_nv h[H2_HDRS_MAX];

			for (size_t i = 0; i < s->trl.n; i++)
				h[i] = nv(s->trl.name[i], s->trl.value[i]);
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
			nghttp2_submit_trailer(sess, id, h, s->trl.n);
		}
	} else if (n == 0) {
		return NGHTTP2_ERR_DEFERRED;
	}
	return (ssize_t)n;
}

/* ---- the upstream connection ---------------------------------------------------------- */

static int tls_ctx(struct proxy_backend *b);
static int tls_connect(struct proxy_backend *b, int fd, SSL **out);

/* A connection to the upstream (blocking connect and TLS handshake, then non-blocking). */
static int tcp_connect(struct proxy_backend *b, int *out, SSL **ssl)
{
	struct proxy_reapi *r = b->reapi;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	char port[8];
	int fd = -1, one = 1;

	snprintf(port, sizeof(port), "%u", r->port);
	if (getaddrinfo(r->host, port, &hints, &ai) != 0)
		return -EHOSTUNREACH;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		struct timeval tv = {.tv_sec = b->connect_timeout_s};

		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return -EHOSTUNREACH;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (r->tls) {
		int rc = tls_ctx(b);

		rc = rc ?: tls_connect(b, fd, ssl);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	*out = fd;
	return 0;
}

/* How proxy_reapi_free frees ssl_ctx (reapi_conf.c links no TLS library). */
static void ssl_ctx_free(void *ctx)
{
	SSL_CTX_free(ctx);
}

/* The TLS context for grpcs://: the system's CAs or ca-file=, ALPN h2 only. */
static int tls_ctx(struct proxy_backend *b)
{
	static const unsigned char alpn[] = "\x02h2";
	SSL_CTX *ctx;

	if (b->reapi->ssl_ctx)
		return 0;
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return util_err(-ENOMEM, "backend reapi: cannot make a TLS context");
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if ((b->ca_file ? SSL_CTX_load_verify_locations(ctx, b->ca_file, NULL)
			: SSL_CTX_set_default_verify_paths(ctx)) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0) {
		SSL_CTX_free(ctx);
		return util_err(-EINVAL, "backend reapi: cannot load the CAs%s%s",
				b->ca_file ? " of " : "", b->ca_file ? b->ca_file : "");
	}
	b->reapi->ssl_ctx = ctx;
	b->reapi->ssl_free = ssl_ctx_free;
	return 0;
}

/* TLS on fd (still blocking, with its timeouts): verified name, h2 negotiated. */
static int tls_connect(struct proxy_backend *b, int fd, SSL **out)
{
	SSL *ssl = SSL_new(b->reapi->ssl_ctx);
	const unsigned char *proto = NULL;
	unsigned plen = 0;
	int rc = -EPROTO;

	if (!ssl || SSL_set_fd(ssl, fd) != 1 ||
	    SSL_set_tlsext_host_name(ssl, b->reapi->host) != 1 ||
	    SSL_set1_host(ssl, b->reapi->host) != 1)
		goto out;
	if (SSL_connect(ssl) != 1) {
		long v = SSL_get_verify_result(ssl);

		rc = util_err(-EPROTO, "backend reapi: TLS to %s failed: %s", b->reapi->authority,
			      v != X509_V_OK ? X509_verify_cert_error_string(v)
					     : "handshake refused");
		goto out;
	}
	SSL_get0_alpn_selected(ssl, &proto, &plen);
	if (plen != 2 || memcmp(proto, "h2", 2)) {
		rc = util_err(-EPROTO, "backend reapi: %s did not agree to HTTP/2 (ALPN h2)",
			      b->reapi->authority);
		goto out;
	}
	*out = ssl;
	ssl = NULL;
	rc = 0;
out:
	ERR_clear_error();
	SSL_free(ssl);
	return rc;
}

int proxy_reapi_preflight(struct proxy_backend *b)
{
	char *token = NULL;
	SSL *ssl = NULL;
	int fd = -1, rc = tcp_connect(b, &fd, &ssl);

	if (rc == -EHOSTUNREACH)
		return util_err(-EHOSTUNREACH, "backend reapi: cannot connect to %s",
				b->reapi->authority);
	if (rc < 0)
		return rc;
	SSL_free(ssl);
	close(fd);
	if (!b->reapi->token_command)
		return 0;
	rc = proxy_reapi_token(b, &token);
	proxy_secret_free(&token);
	return rc;
}

/* Opens s's upstream stream: the box's headers, the upstream's :authority, our token. */
static void up_open(struct stream *s)
{
	struct bridge *br = s->br;
	nghttp2_nv h[H2_HDRS_MAX + 2];
	nghttp2_data_provider dp = {.source.ptr = s, .read_callback = up_read};
	char *token = NULL, *auth = NULL;
	size_t n = 0;
	int32_t id;

	if (br->up_failed || (!br->up && br->up_fd < 0)) {
		refuse(s, GRPC_UNAVAIL, "upstream unreachable");
		return;
	}
	if (proxy_reapi_token(br->b, &token) < 0 || !token) {
		refuse(s, GRPC_UNAUTH, "no token from the host's token source");
		return;
	}
	auth = util_asprintf("Bearer %s", token);
	s->rd = calloc(1, sizeof(*s->rd));
	s->token = token; /* kept for the redaction of what the upstream answers */
	if (s->rd)
		proxy_redact_init(s->rd, token, NULL);
	if (!auth || !s->rd) {
		refuse(s, GRPC_UNAVAIL, "out of memory");
		return;
	}
	h[n++] = nv(":method", "POST");
	h[n++] = nv(":scheme", br->b->reapi->tls ? "https" : "http");
	h[n++] = nv(":authority", br->b->reapi->authority);
	h[n++] = nv(":path", hdrs_get(&s->req, ":path"));
	for (size_t i = 0; i < s->req.n && n < H2_HDRS_MAX; i++) {
		const char *k = s->req.name[i];

		/* The box's own credentials and hop-by-hop headers never go upstream. */
		if (k[0] == ':' || !strcmp(k, "authorization") || !strcmp(k, "cookie") ||
		    !strcmp(k, "connection") || !strcmp(k, "proxy-authorization") ||
		    util_str_has_prefix(k, "x-goog-") || !strcmp(k, "host"))
			continue; /* x-goog-*: a key, another quota project, IAM tokens, routing */
		h[n++] = nv(k, s->req.value[i]);
	}
	h[n++] = nv("authorization", auth);
	id = nghttp2_submit_request(br->up, NULL, h, n, &dp, s);
	explicit_bzero(auth, strlen(auth));
	free(auth);
	if (id < 0) {
		refuse(s, GRPC_UNAVAIL, "upstream refused a new stream");
		return;
	}
	s->up_id = id;
	s->up_open = true;
}

/*
 * The box's bytes not scanned yet are checked (instance=): only what passed may go upstream,
 * and the upstream stream is opened once the first message named an allowed instance.
 */
static void try_check(struct stream *s)
{
	size_t ok = 0;

	if (s->resp_sent || s->refused)
		return;
	if (proxy_reapi_scan(&s->scan, s->br->b->reapi, s->up_q.buf + s->up_q.off + s->released,
			     s->up_q.len - s->released, s->up_eof, &ok) < 0) {
		refuse(s, GRPC_DENIED, "instance name not allowed");
		return;
	}
	s->released += ok;
	if (!s->checked && s->scan.ready) {
		s->checked = true;
		up_open(s);
	} else if (s->up_open && !s->up_closed) {
		nghttp2_session_resume_data(s->br->up, s->up_id);
	}
}

/* A complete request head from the box: the policy. */
static void on_request(struct stream *s)
{
	struct proxy_reapi *r = s->br->b->reapi;
	const char *method = hdrs_get(&s->req, ":method"), *path = hdrs_get(&s->req, ":path");
	const char *authority = hdrs_get(&s->req, ":authority"),
		   *ct = hdrs_get(&s->req, "content-type");
	char local[32];

	snprintf(local, sizeof(local), "127.0.0.1:%u", s->br->b->port);
	if (s->req.overflow || !method || !path || !authority)
		refuse(s, GRPC_DENIED, "malformed request head");
	else if (strcmp(method, "POST") || !ct || !util_str_has_prefix(ct, "application/grpc"))
		refuse(s, GRPC_DENIED, "not a gRPC call");
	else if (strcmp(authority, r->authority) && strcmp(authority, r->host) &&
		 strcmp(authority, local) && strcmp(authority, "localhost") &&
		 strcmp(authority, "127.0.0.1"))
		refuse(s, GRPC_DENIED, "authority is not this backend's");
	else if (!strcmp(path, "/build.bazel.remote.execution.v2.ActionCache/UpdateActionResult"))
		refuse(s, GRPC_DENIED, "UpdateActionResult refused (cache poisoning)");
	else if (r->instance && !strcmp(path, "/google.longrunning.Operations/ListOperations"))
		refuse(s, GRPC_DENIED, "ListOperations refused with instance= (every instance's)");
	else if (proxy_reapi_method(path) < 0)
		refuse(s, GRPC_DENIED, "method not allowed");
	else
		proxy_reapi_scan_init(&s->scan, r, path), try_check(s);
}

/* ---- callbacks: the box's side ------------------------------------------------------ */

static ssize_t down_send(nghttp2_session *sess, const uint8_t *d, size_t n, int fl, void *ud)
{
	struct bridge *br = ud;
	ssize_t w = send(br->c->fd, d, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)sess;
	(void)fl;
	if (w < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK
							       : NGHTTP2_ERR_CALLBACK_FAILURE;
	return w;
}

static int down_begin_headers(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
	struct bridge *br = ud;
	struct stream *s;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->br = br;
	s->down_id = f->hd.stream_id;
	s->t0 = util_now_ns();
	s->grpc_status = -1;
	s->next = br->streams;
	br->streams = s;
	nghttp2_session_set_stream_user_data(sess, s->down_id, s);
	return 0;
}

static int down_header(nghttp2_session *sess, const nghttp2_frame *f, const uint8_t *n, size_t nl,
		       const uint8_t *v, size_t vl, uint8_t fl, void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);

	(void)fl;
	(void)ud;
	if (s && f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
		hdrs_add(&s->req, n, nl, v, vl);
	return 0;
}

static int down_frame(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);

	(void)ud;
	if (!s || (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA))
		return 0;
	if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
		s->up_eof = true;
	if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
		on_request(s);
	else if (s->up_eof)
		try_check(s);
	return 0;
}

static int down_data(nghttp2_session *sess, uint8_t fl, int32_t id, const uint8_t *d, size_t n,
		     void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, id);

	(void)fl;
	(void)ud;
	if (!s || s->resp_sent || s->refused) {
		nghttp2_session_consume(sess, id, n); /* refused: read and dropped */
		return 0;
	}
	s->bytes_up += (int64_t)n;
	if (bq_put(&s->up_q, d, n) < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	try_check(s);
	return 0;
}

static int down_close(nghttp2_session *sess, int32_t id, uint32_t err, void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, id);

	(void)ud;
	if (!s)
		return 0;
	if (err && !s->reason)
		s->reason = "box reset the stream";
	if (s->up_open && !s->up_closed && err)
		nghttp2_submit_rst_stream(s->br->up, NGHTTP2_FLAG_NONE, s->up_id, NGHTTP2_CANCEL);
	record(s);
	s->down_closed = true;
	nghttp2_session_set_stream_user_data(sess, id, NULL);
	stream_maybe_free(s);
	return 0;
}

/* ---- callbacks: the upstream's side ------------------------------------------------- */

static ssize_t up_send(nghttp2_session *sess, const uint8_t *d, size_t n, int fl, void *ud)
{
	struct bridge *br = ud;
	ssize_t w;

	(void)sess;
	(void)fl;
	if (br->up_ssl) {
		int k = SSL_write(br->up_ssl, d, (int)(n > INT32_MAX ? INT32_MAX : n));

		if (k > 0)
			return k;
		k = SSL_get_error(br->up_ssl, k);
		ERR_clear_error();
		return k == SSL_ERROR_WANT_WRITE || k == SSL_ERROR_WANT_READ
			   ? NGHTTP2_ERR_WOULDBLOCK
			   : NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	w = send(br->up_fd, d, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK
							       : NGHTTP2_ERR_CALLBACK_FAILURE;
	return w;
}

/* The redaction's output: toward the box. */
static int down_put(void *ud, const char *d, size_t n)
{
	struct stream *s = ud;

	return bq_put(&s->down_q, d, n);
}

/* The upstream's response ended: what the redaction held back goes to the box too. */
static void down_end(struct stream *s)
{
	if (!s->down_eof && s->rd && proxy_redact_feed(s->rd, NULL, 0, true, down_put, s) < 0)
		nghttp2_submit_rst_stream(s->br->down, NGHTTP2_FLAG_NONE, s->down_id,
					  NGHTTP2_INTERNAL_ERROR);
	s->down_eof = true;
}

/* A "-bin" header (base64, maybe unpadded) whose bytes hold the token. */
static bool bin_has(const uint8_t *n, size_t nl, const uint8_t *v, size_t vl, const char *token)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char *out;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	bool hit;

	if (nl < 4 || memcmp(n + nl - 4, "-bin", 4))
		return false;
	out = malloc(vl + 1);
	if (!out)
		return true; /* cannot look: dropped */
	for (size_t i = 0; i < vl; i++) {
		const char *c = v[i] ? strchr(b64, v[i]) : NULL;

		if (!c)
			continue; /* padding, or another alphabet's character */
		acc = acc << 6 | (uint32_t)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	hit = memmem(out, o, token, strlen(token)) != NULL;
	free(out);
	return hit;
}

static int up_header(nghttp2_session *sess, const nghttp2_frame *f, const uint8_t *n, size_t nl,
		     const uint8_t *v, size_t vl, uint8_t fl, void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
	struct hdrs *h;
	size_t k;

	(void)fl;
	(void)ud;
	if (!s || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (nl == 11 && !memcmp(n, "grpc-status", 11))
		s->grpc_status =
		    (int)(strtol((const char *)v, NULL, 10) & 0xffff); /* NUL-terminated */
	if (s->token && bin_has(n, nl, v, vl, s->token))
		return 0; /* a binary header holding the token: dropped */
	h = f->headers.cat == NGHTTP2_HCAT_HEADERS ? &s->trl : &s->resp;
	k = h->n;
	hdrs_add(h, n, nl, v, vl);
	if (h->n > k && s->token) /* an upstream that echoes the token: '*'s toward the box */
		proxy_redact_buf(s->token, NULL, h->value[k], vl);
	return 0;
}

static int up_frame(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
	bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;

	(void)ud;
	if (!s || s->down_closed)
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_RESPONSE &&
	    !s->resp_sent) {
		nghttp2_nv h[H2_HDRS_MAX];
		nghttp2_data_provider dp = {.source.ptr = s, .read_callback = down_read};
		size_t k = 0;

		for (size_t i = 0; i < s->resp.n; i++)
			h[k++] = nv(s->resp.name[i], s->resp.value[i]);
		s->resp_sent =
		    nghttp2_submit_response(s->br->down, s->down_id, h, k, end ? NULL : &dp) == 0;
		if (end)
			down_end(s);
	} else if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_HEADERS) {
		s->have_trailers = true;
		if (end)
			down_end(s);
		nghttp2_session_resume_data(s->br->down, s->down_id);
	} else if (f->hd.type == NGHTTP2_DATA && end) {
		down_end(s);
		nghttp2_session_resume_data(s->br->down, s->down_id);
	}
	return 0;
}

static int up_data(nghttp2_session *sess, uint8_t fl, int32_t id, const uint8_t *d, size_t n,
		   void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, id);

	(void)fl;
	(void)ud;
	if (!s || s->down_closed) {
		nghttp2_session_consume(sess, id, n);
		return 0;
	}
	if (proxy_redact_feed(s->rd, (const char *)d, n, false, down_put, s) < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	nghttp2_session_resume_data(s->br->down, s->down_id);
	return 0;
}

static int up_close(nghttp2_session *sess, int32_t id, uint32_t err, void *ud)
{
	struct stream *s = nghttp2_session_get_stream_user_data(sess, id);

	(void)ud;
	if (!s)
		return 0;
	s->up_closed = true;
	nghttp2_session_set_stream_user_data(sess, id, NULL);
	if (!s->down_closed) {
		if (!s->resp_sent)
			refuse(s, GRPC_UNAVAIL, "upstream closed the stream");
		else if (!s->down_eof && err)
			nghttp2_submit_rst_stream(s->br->down, NGHTTP2_FLAG_NONE, s->down_id, err);
		else if (!s->down_eof)
			down_end(s), nghttp2_session_resume_data(s->br->down, s->down_id);
	}
	stream_maybe_free(s);
	return 0;
}

/* ---- the connection ----------------------------------------------------------------- */

bool proxy_reapi_sniff(struct proxy_conn *c)
{
	const size_t pl = sizeof(H2_PREFACE) - 1;

	while (c->in_len < pl && !memcmp(c->in + c->in_off, H2_PREFACE, c->in_len)) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, PROXY_RECV_MS) <= 0)
			return false;
		n = recv(c->fd, c->in + c->in_off + c->in_len, pl - c->in_len, 0);
		if (n <= 0) {
			c->eof = n == 0;
			return false;
		}
		c->in_len += (size_t)n;
	}
	return c->in_len >= pl && !memcmp(c->in + c->in_off, H2_PREFACE, pl);
}

static int sessions_new(struct bridge *br)
{
	nghttp2_session_callbacks *cb = NULL;
	nghttp2_option *opt = NULL;
	nghttp2_settings_entry set[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_STREAMS},
					{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW}};
	int rc = -ENOMEM;

	if (nghttp2_session_callbacks_new(&cb) || nghttp2_option_new(&opt))
		goto out;
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_session_callbacks_set_send_callback(cb, down_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, down_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, down_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, down_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, down_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, down_close);
	if (nghttp2_session_server_new2(&br->down, cb, br, opt))
		goto out;
	nghttp2_submit_settings(br->down, NGHTTP2_FLAG_NONE, set, 2);
	nghttp2_session_set_local_window_size(br->down, NGHTTP2_FLAG_NONE, 0, 4 * H2_WINDOW);
	if (tcp_connect(br->b, &br->up_fd, &br->up_ssl) < 0) {
		br->up_failed = true;
		rc = 0;
		goto out;
	}
	nghttp2_session_callbacks_set_send_callback(cb, up_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, NULL);
	nghttp2_session_callbacks_set_on_header_callback(cb, up_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, up_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, up_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, up_close);
	if (nghttp2_session_client_new2(&br->up, cb, br, opt))
		goto out;
	nghttp2_submit_settings(br->up, NGHTTP2_FLAG_NONE, set + 1, 1);
	nghttp2_session_set_local_window_size(br->up, NGHTTP2_FLAG_NONE, 0, 4 * H2_WINDOW);
	rc = 0;
out:
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	return rc;
}

/* Reads what fd has into sess: 0 fine, -1 the connection ended or broke. */
static int pump_in(nghttp2_session *sess, int fd)
{
	uint8_t buf[65536];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0)
		return -1;
	return nghttp2_session_mem_recv(sess, buf, (size_t)n) < 0 ? -1 : 0;
}

/* The same through TLS: everything decrypted so far (SSL may hold more than the socket). */
static int pump_in_tls(nghttp2_session *sess, SSL *ssl)
{
	uint8_t buf[65536];

	for (;;) {
		int n = SSL_read(ssl, buf, sizeof(buf)), e;

		if (n > 0) {
			if (nghttp2_session_mem_recv(sess, buf, (size_t)n) < 0)
				return -1;
			continue;
		}
		e = SSL_get_error(ssl, n);
		ERR_clear_error();
		return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
	}
}

static struct proxy_backend *reapi_backend(struct proxy *p)
{
	for (size_t i = 0; i < p->n_backends; i++)
		if (p->backends[i]->reapi)
			return p->backends[i];
	return NULL;
}

void proxy_reapi_serve(struct proxy_conn *c)
{
	static atomic_int bridges; /* one proxy per box: this box's */
	struct bridge br = {.c = c, .p = c->p, .up_fd = -1};

	if (atomic_fetch_add(&bridges, 1) >= H2_BRIDGES) {
		struct proxy_record rec = {.time_ns = util_now_ns(),
					   .method = "PRI",
					   .path = "",
					   .reason =
					       "refused: too many HTTP/2 connections at once"};

		proxy_record_emit(c->p, &rec);
		atomic_fetch_sub(&bridges, 1);
		return;
	}
	br.b = reapi_backend(c->p);
	if (!br.b) { /* HTTP/2 to a proxy without the reapi backend: recorded, closed */
		struct proxy_record rec = {.time_ns = util_now_ns(),
					   .method = "PRI",
					   .path = "",
					   .reason = "refused: HTTP/2 without a reapi backend"};

		proxy_record_emit(c->p, &rec);
		goto out;
	}
	if (sessions_new(&br) < 0 || !br.down)
		goto out;
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	if (nghttp2_session_mem_recv(br.down, (uint8_t *)c->in + c->in_off, c->in_len) < 0)
		goto out;
	c->in_len = 0;
	while (!atomic_load(&c->p->stopping)) {
		bool up = br.up && !br.up_failed;
		struct pollfd pfd[2] = {{.fd = c->fd}, {.fd = up ? br.up_fd : -1}};

		if (nghttp2_session_send(br.down) != 0)
			break;
		if (up && nghttp2_session_send(br.up) != 0)
			break;
		if (!nghttp2_session_want_read(br.down) && !nghttp2_session_want_write(br.down))
			break;
		pfd[0].events =
		    (short)(POLLIN | (nghttp2_session_want_write(br.down) ? POLLOUT : 0));
		if (up)
			pfd[1].events =
			    (short)(POLLIN | (nghttp2_session_want_write(br.up) ? POLLOUT : 0));
		if (poll(pfd, 2, 1000) < 0 && errno != EINTR)
			break;
		if ((pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) && pump_in(br.down, c->fd) < 0)
			break;
		if (up && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    (br.up_ssl ? pump_in_tls(br.up, br.up_ssl) : pump_in(br.up, br.up_fd)) < 0) {
			/* The upstream went away: its streams end with UNAVAILABLE. */
			nghttp2_session_terminate_session(br.up, NGHTTP2_NO_ERROR);
			for (struct stream *s = br.streams; s; s = s->next)
				if (s->up_open && !s->up_closed) {
					s->up_closed = true;
					if (!s->resp_sent)
						refuse(s, GRPC_UNAVAIL, "upstream connection lost");
					else
						nghttp2_submit_rst_stream(
						    br.down, NGHTTP2_FLAG_NONE, s->down_id,
						    NGHTTP2_INTERNAL_ERROR);
				}
			br.up_failed = true;
		}
	}
out:
	/* Deleting the sessions closes no streams by callback: record and free what is left. */
	while (br.streams) {
		struct stream *s = br.streams;

		if (!s->down_closed) {
			if (!s->reason)
				s->reason = "connection ended";
			record(s);
		}
		stream_free(s);
	}
	nghttp2_session_del(br.down);
	nghttp2_session_del(br.up);
	SSL_free(br.up_ssl);
	if (br.up_fd >= 0)
		close(br.up_fd);
	atomic_fetch_sub(&bridges, 1);
}
