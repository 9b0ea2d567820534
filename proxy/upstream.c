/*
 * proxy/upstream.c: forwards one allowed request with libcurl and streams the answer back.
 *
 * The request body is pulled from the box's connection piece by piece by libcurl's read
 * callback; the response is written to the box from the write callback as it arrives (re-
 * framed as chunked when the upstream gave no length), so nothing is buffered whole. TLS
 * peer and host name are verified (libcurl's defaults, set explicitly). The credential is
 * added here and redacted from everything that goes back. A box that hangs up aborts the
 * transfer (progress callback); so does proxy shutdown.
 */
#include "proxy/proxy_internal.h"
#include "proxy/vertex.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

struct fwd {
	struct proxy_conn *c;
	struct proxy_req *r;
	const struct proxy_backend *b;
	bool head_req, client_keep, client_11;
	/* Request body. */
	int64_t bytes_up;
	bool body_bad, client_gone, idle;
	/* Idle timeout: when bytes last moved either way. */
	curl_off_t last_dn, last_up;
	int64_t last_move_ns;
	/* Response. */
	int status;
	char head[PROXY_HEAD_MAX];
	size_t head_len;
	bool head_overflow, head_sent, no_body, chunked, close_after, has_cl;
	int64_t cl, bytes_down;
	struct proxy_redact rd, rd_account; /* the credential, then the login's account id */
	/* This request's credential (a login's token as it is now) and account; secrets. */
	char *cred, *account;
	const char *ph_account; /* the box's placeholder for the account id, or NULL */
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT, curl_once = PTHREAD_ONCE_INIT;
static bool curl_ok;

static void global_init(void)
{
	http_parser_set_max_header_size(PROXY_HEAD_MAX);
}

int proxy_upstream_global_init(void)
{
	pthread_once(&init_once, global_init);
	return 0;
}

static void curl_init(void)
{
	curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

/*
 * libcurl (and OpenSSL behind it) initialised on the first request upstream, not when the
 * proxy starts: arborinth_proxy opens them then (compat/proxy_lazy_libs.c), so a box starts
 * without them. (A login or Vertex token minted before the box starts initialises it in
 * curl_easy_init, which libcurl makes thread-safe.)
 */
static bool curl_ready(void)
{
	pthread_once(&curl_once, curl_init);
	return curl_ok;
}

static void share_lock(CURL *e, curl_lock_data data, curl_lock_access access, void *ud)
{
	struct proxy *p = ud;

	pthread_mutex_lock(&p->share_locks[(unsigned)data % ARB_ARRAY_LEN(p->share_locks)]);
}

static void share_unlock(CURL *e, curl_lock_data data, void *ud)
{
	struct proxy *p = ud;

	pthread_mutex_unlock(&p->share_locks[(unsigned)data % ARB_ARRAY_LEN(p->share_locks)]);
}

/* The share itself is made by the first request (share_get): libcurl is not open before. */
int proxy_upstream_share_new(struct proxy *p)
{
	for (size_t i = 0; i < ARB_ARRAY_LEN(p->share_locks); i++)
		pthread_mutex_init(&p->share_locks[i], NULL);
	pthread_mutex_init(&p->share_made, NULL);
	p->share_inited = true;
	return 0;
}

/* p's share, made on the first call; NULL without one (then each request connects anew). */
static CURLSH *share_get(struct proxy *p)
{
	CURLSH *sh;

	if (!p->share_inited)
		return NULL;
	pthread_mutex_lock(&p->share_made);
	sh = p->share;
	if (!sh && (sh = curl_share_init())) {
		curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, share_lock);
		curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, share_unlock);
		curl_share_setopt(sh, CURLSHOPT_USERDATA, p);
		curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
		curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
		curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
		p->share = sh;
	}
	pthread_mutex_unlock(&p->share_made);
	return sh;
}

void proxy_upstream_share_free(struct proxy *p)
{
	if (!p->share_inited)
		return;
	if (p->share)
		curl_share_cleanup(p->share);
	p->share = NULL;
	for (size_t i = 0; i < ARB_ARRAY_LEN(p->share_locks); i++)
		pthread_mutex_destroy(&p->share_locks[i]);
	pthread_mutex_destroy(&p->share_made);
	p->share_inited = false;
}

void proxy_upstream_conn_done(struct proxy_conn *c)
{
	if (c && c->easy) {
		curl_easy_cleanup(c->easy);
		c->easy = NULL;
	}
}

static size_t read_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct fwd *f = ud;
	ssize_t n = proxy_conn_read_body(f->c, f->r, buf, size * nitems);

	if (n == -EBADMSG) {
		f->body_bad = true;
		return CURL_READFUNC_ABORT;
	}
	if (n < 0) {
		f->client_gone = true;
		return CURL_READFUNC_ABORT;
	}
	f->bytes_up += n;
	return (size_t)n;
}

static int send_head(struct fwd *f)
{
	char line[128];
	struct iovec iov[3];
	int n;

	n = snprintf(line, sizeof(line), "HTTP/1.1 %d %s\r\n", f->status,
		     http_status_str((enum http_status)f->status));
	f->no_body = f->head_req || f->status == 204 || f->status == 304;
	if (f->no_body) {
		/* A HEAD answer may carry the length of what GET would send. */
	} else if (f->has_cl) {
		f->head_len +=
		    (size_t)snprintf(f->head + f->head_len, sizeof(f->head) - f->head_len,
				     "Content-Length: %lld\r\n", (long long)f->cl);
	} else if (f->client_11) {
		f->chunked = true;
		memcpy(f->head + f->head_len, "Transfer-Encoding: chunked\r\n", 28);
		f->head_len += 28;
	} else {
		f->close_after = true;
	}
	if (f->close_after || !f->client_keep) {
		memcpy(f->head + f->head_len, "Connection: close\r\n", 19);
		f->head_len += 19;
	} else if (!f->client_11) {
		memcpy(f->head + f->head_len, "Connection: keep-alive\r\n", 24);
		f->head_len += 24;
	}
	iov[0] = (struct iovec){line, (size_t)n};
	iov[1] = (struct iovec){f->head, f->head_len};
	iov[2] = (struct iovec){"\r\n", 2};
	f->head_sent = true;
	for (size_t i = 0; i < 3; i++)
		if (proxy_send_all(f->c->fd, iov[i].iov_base, iov[i].iov_len) < 0)
			return -EPIPE;
	return 0;
}

/* Response headers hop-by-hop or re-framed here; alt-svc would point the box elsewhere. */
static bool resp_header_dropped(const char *name, size_t n)
{
	static const char *const dropped[] = {
	    "connection", "keep-alive", "proxy-connection",   "transfer-encoding", "te",
	    "trailer",	  "upgrade",	"proxy-authenticate", "content-length",	   "alt-svc"};

	for (size_t i = 0; i < ARB_ARRAY_LEN(dropped); i++)
		if (strlen(dropped[i]) == n && strncasecmp(name, dropped[i], n) == 0)
			return true;
	return false;
}

static void header_line(struct fwd *f, char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);
	size_t nl;

	if (!colon || line[0] == ' ' || line[0] == '\t')
		return; /* obsolete line folding or junk: dropped */
	nl = (size_t)(colon - line);
	if (nl == 14 && strncasecmp(line, "content-length", 14) == 0) {
		char num[32];
		size_t vl = len - nl - 1;
		const char *v = colon + 1;
		char *end;

		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		if (vl == 0 || vl >= sizeof(num))
			return;
		memcpy(num, v, vl);
		num[vl] = '\0';
		f->cl = strtoll(num, &end, 10);
		f->has_cl = end != num && *end == '\0' && f->cl >= 0;
		return;
	}
	if (resp_header_dropped(line, nl))
		return;
	if (f->head_len + len + 2 + 64 > sizeof(f->head)) {
		f->head_overflow = true;
		return;
	}
	proxy_redact_buf(f->cred, NULL, line, len);
	if (f->account)
		proxy_redact_buf(f->account, f->ph_account, line, len);
	memcpy(f->head + f->head_len, line, len);
	memcpy(f->head + f->head_len + len, "\r\n", 2);
	f->head_len += len + 2;
}

static size_t header_cb(char *data, size_t size, size_t nitems, void *ud)
{
	struct fwd *f = ud;
	size_t len = size * nitems, n = len;
	char line[8192];

	if (f->head_sent)
		return len; /* trailers: not forwarded */
	while (n && (data[n - 1] == '\n' || data[n - 1] == '\r'))
		n--;
	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		const char *sp = memchr(data, ' ', n);

		f->status = sp ? (int)strtol(sp + 1, NULL, 10) : 0;
		f->head_len = 0;
		f->has_cl = false;
		return len;
	}
	if (n == 0) {
		if (f->status >= 100 && f->status < 200)
			return len; /* interim response: wait for the final one */
		if (f->status < 200 || f->status > 599 || f->head_overflow)
			return 0; /* fails the transfer: 502 */
		/*
		 * A login's token the upstream refused is marked before the box sees the 401:
		 * its next request may come as soon as it has the answer, and must refresh.
		 */
		if (f->status == 401 && f->b->login)
			proxy_login_refused(f->b->login, f->cred);
		if (f->status == 401 && f->b->vertex)
			proxy_vertex_refused(f->b->vertex, f->cred);
		return send_head(f) == 0 ? len : 0;
	}
	if (n < sizeof(line)) {
		memcpy(line, data, n);
		header_line(f, line, n);
	} else {
		f->head_overflow = true;
	}
	return len;
}

static int emit_body(void *ctx, const char *d, size_t n)
{
	struct fwd *f = ctx;
	char sz[24];
	int rc;

	if (f->chunked) {
		int sl = snprintf(sz, sizeof(sz), "%zx\r\n", n);

		rc = proxy_send_all(f->c->fd, sz, (size_t)sl);
		rc = rc ?: proxy_send_all(f->c->fd, d, n);
		rc = rc ?: proxy_send_all(f->c->fd, "\r\n", 2);
	} else {
		rc = proxy_send_all(f->c->fd, d, n);
	}
	if (rc == 0)
		f->bytes_down += (int64_t)n;
	return rc;
}

/* The credential's redaction feeds the account's, which feeds the box. */
static int emit_redacted(void *ud, const char *d, size_t n)
{
	struct fwd *f = ud;

	return proxy_redact_feed(&f->rd_account, d, n, false, emit_body, f);
}

/* Flushes both redactions at the end of the body. */
static int redact_flush(struct fwd *f)
{
	return proxy_redact_feed(&f->rd, NULL, 0, true, emit_redacted, f)
		   ?: proxy_redact_feed(&f->rd_account, NULL, 0, true, emit_body, f);
}

static size_t write_cb(char *data, size_t size, size_t nitems, void *ud)
{
	struct fwd *f = ud;
	size_t len = size * nitems;

	if (!f->head_sent || f->no_body)
		return f->head_sent ? len : 0;
	if (proxy_redact_feed(&f->rd, data, len, false, emit_redacted, f) != 0) {
		f->client_gone = true;
		return 0;
	}
	return len;
}

/* Every byte of a response with a known length has been sent to the box. */
static bool response_delivered(const struct fwd *f)
{
	return f->head_sent && (f->no_body || (f->has_cl && f->bytes_down == f->cl));
}

/*
 * Aborts when the proxy stops, when the box has hung up after sending its request, or when no
 * byte has moved either way for idle_timeout_s (libcurl calls this at least once a second).
 */
static int progress_cb(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct fwd *f = ud;
	struct pollfd pfd = {.fd = f->c->fd, .events = POLLRDHUP};
	int64_t now = util_now_ns();

	if (atomic_load(&f->c->p->stopping))
		return 1;
	/* A box that hangs up after the whole response reached it is done, not gone. */
	if (f->r->message_done && !response_delivered(f) && poll(&pfd, 1, 0) == 1 &&
	    (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		f->client_gone = true;
		return 1;
	}
	if (dn != f->last_dn || un != f->last_up || f->last_move_ns == 0) {
		f->last_dn = dn;
		f->last_up = un;
		f->last_move_ns = now;
	} else if (now - f->last_move_ns >= f->b->idle_timeout_s * 1000000000LL) {
		f->idle = true;
		return 1;
	}
	return 0;
}

/* Appends line (owned; cleared, as it may hold a credential, and freed) to *l. -ENOMEM. */
static int header_add(struct curl_slist **l, char *line)
{
	struct curl_slist *t = line ? curl_slist_append(*l, line) : NULL;

	proxy_secret_free(&line);
	if (!t)
		return -ENOMEM;
	*l = t;
	return 0;
}

static int build_headers(struct fwd *f, struct curl_slist **out)
{
	const struct proxy_req *r = f->r;
	struct curl_slist *l = NULL, *t;
	const char *an, *acct = proxy_login_account_header(f->b->login);
	char *av = NULL;
	int rc = 0;

	for (size_t i = 0; i < r->n_hdrs && rc == 0; i++) {
		const char *n = r->hdrs[i].name, *v = r->hdrs[i].value;

		/* Vertex: no x-goog-* of the box's (another quota project, a key, IAM). */
		if (proxy_header_is_dropped(r, n) ||
		    (f->b->auth_header && strcasecmp(n, f->b->auth_header) == 0) ||
		    (acct && strcasecmp(n, acct) == 0) ||
		    (f->b->vertex && strncasecmp(n, "x-goog-", 7) == 0))
			continue;
		/* "Name;" is how libcurl sends a header with an empty value. */
		rc = header_add(&l, *v ? util_asprintf("%s: %s", n, v) : util_asprintf("%s;", n));
	}
	/* No Expect handshake upstream, no compression we could not redact, no defaults. */
	const char *fixed[] = {"Expect:", "Accept-Encoding: identity",
			       proxy_req_header(r, "accept", NULL) ? NULL : "Accept:",
			       proxy_req_header(r, "content-type", NULL) ? NULL : "Content-Type:"};
	for (size_t i = 0; i < ARB_ARRAY_LEN(fixed) && rc == 0; i++) {
		if (!fixed[i])
			continue;
		t = curl_slist_append(l, fixed[i]);
		rc = t ? 0 : -ENOMEM;
		l = t ? t : l;
	}
	/* The login's account, in place of the box's placeholder for it. */
	if (rc == 0 && acct && f->account)
		rc = header_add(&l, util_asprintf("%s: %s", acct, f->account));
	if (rc == 0 && f->b->auth != PROXY_AUTH_NONE)
		rc = proxy_backend_auth_header(f->b, f->cred, &an, &av);
	if (rc == 0 && av)
		rc = header_add(&l, util_asprintf("%s: %s", an, av));
	proxy_secret_free(&av);
	*out = l;
	return rc;
}

static void set_method(CURL *e, struct fwd *f, const char *method)
{
	const struct proxy_req *r = f->r;
	bool body = r->chunked || (r->has_cl && r->content_length > 0);

	if (f->head_req) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (body || (r->has_cl && strcmp(method, "GET") != 0)) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 r->chunked ? (curl_off_t)-1 : (curl_off_t)r->content_length);
		if (!body)
			curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		if (strcmp(method, "GET") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	}
}

static void fail_reason(CURLcode cc, struct proxy_fwd_result *res)
{
	res->status = 502;
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		res->reason = "upstream refused the connection";
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		res->reason = "upstream host could not be resolved";
		break;
	case CURLE_OPERATION_TIMEDOUT:
		res->status = 504;
		res->reason = "upstream timed out";
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
		res->reason = "upstream TLS certificate verification failed";
		break;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
		res->reason = "upstream TLS handshake failed";
		break;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	/*
	 * A kept-alive connection the upstream closed before answering: curl would send the
	 * request again on a new one, but the body already streamed from the box cannot be
	 * rewound.
	 */
	case CURLE_SEND_FAIL_REWIND:
		res->reason = "upstream closed the connection";
		break;
	case CURLE_WRITE_ERROR:
		res->reason = "upstream sent an invalid response";
		break;
	default:
		res->reason = "upstream request failed";
		break;
	}
}

static void finish(struct fwd *f, CURLcode cc, struct proxy_fwd_result *res)
{
	int fd = f->c->fd;

	res->keep_alive = false;
	if (f->client_gone && response_delivered(f)) {
		res->status = f->status;
		res->reason = "allowed";
	} else if (f->client_gone) {
		res->status = f->head_sent ? f->status : 0;
		res->reason = "box closed the connection";
	} else if (f->head_sent) {
		res->status = f->status;
		res->reason = "allowed";
		if (cc != CURLE_OK) {
			/* Mid-stream failure: end without the terminator so the box sees it. */
			res->reason = f->idle ? "upstream timed out mid-response"
					      : "upstream transfer failed mid-response";
		} else if (redact_flush(f) != 0 ||
			   (f->chunked && proxy_send_all(fd, "0\r\n\r\n", 5) != 0)) {
			res->reason = "box closed the connection";
		} else {
			res->keep_alive = f->client_keep && !f->close_after && f->r->message_done &&
					  (!f->has_cl || f->no_body || f->bytes_down == f->cl);
		}
	} else if (f->body_bad) {
		res->status = proxy_send_error(fd, 400, "malformed request body") == 0 ? 400 : 0;
		res->reason = "malformed request body";
	} else {
		fail_reason(f->idle	     ? CURLE_OPERATION_TIMEDOUT
			    : cc == CURLE_OK ? CURLE_WRITE_ERROR
					     : cc,
			    res);
		if (proxy_send_error(fd, res->status, res->reason) != 0)
			res->status = 0;
	}
	res->bytes_up = f->bytes_up;
	res->bytes_down = f->bytes_down;
}

void proxy_upstream_forward(struct proxy_conn *c, struct proxy_req *r,
			    const struct proxy_verdict *v, struct proxy_fwd_result *res)
{
	const char *method = http_method_str((enum http_method)r->parser.method);
	struct fwd *f = calloc(1, sizeof(*f));
	struct curl_slist *hdrs = NULL;
	char *url = NULL;
	CURLcode cc = CURLE_OUT_OF_MEMORY;
	CURLSH *sh;
	CURL *e;
	int lrc;

	memset(res, 0, sizeof(*res));
	if (!c->easy && curl_ready())
		c->easy = curl_easy_init();
	e = c->easy;
	if (!f || !e)
		goto out;
	curl_easy_reset(e);
	f->c = c;
	f->r = r;
	f->b = v->backend;
	f->head_req = strcmp(method, "HEAD") == 0;
	f->client_keep = r->keep_alive;
	f->client_11 = r->parser.http_minor >= 1;
	if (f->b->login && (lrc = proxy_login_current(f->b->login, &f->cred, &f->account)) < 0) {
		/* The message names the file and the fix; it holds no secret. */
		res->status = proxy_send_error(c->fd, 401, util_err_msg()) == 0 ? 401 : 0;
		res->reason = lrc == -EKEYREJECTED
				  ? "refused: the upstream refused the login's freshly refreshed "
				    "token; not refreshed again"
				  : "the host's login could not be refreshed";
		cc = CURLE_OK;
		goto out;
	}
	if (f->b->vertex && proxy_vertex_current(f->b->vertex, &f->cred) < 0) {
		res->status = proxy_send_error(c->fd, 401, util_err_msg()) == 0 ? 401 : 0;
		res->reason = "the host's Vertex token could not be minted";
		cc = CURLE_OK;
		goto out;
	}
	if (!f->b->login && !f->b->vertex)
		f->cred = strdup(f->b->credential ? f->b->credential : "");
	if (!f->cred)
		goto out;
	proxy_redact_init(&f->rd, f->cred, NULL);
	/* The box knows its login's account by the placeholder only (same length). */
	f->ph_account = f->account ? proxy_login_ph_account(f->b->login) : NULL;
	proxy_redact_init(&f->rd_account, f->ph_account ? f->account : NULL, f->ph_account);
	url = util_asprintf("%s%s", f->b->url, r->target);
	if (!url || build_headers(f, &hdrs) < 0)
		goto out;
	curl_easy_setopt(e, CURLOPT_URL, url);
	if ((sh = share_get(c->p)))
		curl_easy_setopt(e, CURLOPT_SHARE, sh);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (f->b->ca_file) {
		curl_easy_setopt(e, CURLOPT_CAINFO, f->b->ca_file);
		curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	}
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, f->b->connect_timeout_s);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 128L * 1024);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(e, CURLOPT_READFUNCTION, read_cb);
	curl_easy_setopt(e, CURLOPT_READDATA, f);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, progress_cb);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, f);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	set_method(e, f, method);
	cc = curl_easy_perform(e);
	/* The header list holds the credential; libcurl keeps only a pointer to it. */
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
	finish(f, cc, res);
out:
	if (cc == CURLE_OUT_OF_MEMORY && !res->reason) {
		res->status = proxy_send_error(c->fd, 500, "internal error") == 0 ? 500 : 0;
		res->reason = "internal error";
	}
	for (struct curl_slist *s = hdrs; s; s = s->next)
		explicit_bzero(s->data, strlen(s->data));
	curl_slist_free_all(hdrs);
	free(url);
	if (f) {
		proxy_redact_free(&f->rd);
		proxy_redact_free(&f->rd_account);
		proxy_secret_free(&f->cred);
		proxy_secret_free(&f->account);
	}
	free(f);
}
