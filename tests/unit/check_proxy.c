/* tests/unit/check_proxy.c: the proxy's parts: backends, request parsing, policy, redaction,
 * relay arguments, and whole connections served over socketpairs (hostile corpus, fuzz). */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/login_internal.h"
#include "proxy/proxy_internal.h"
#include "proxy/vertex.h"

/* ---- backends ---- */

/* The vertex backend: its options, its errors, and the paths its policy lets through. */
START_TEST(vertex_backend)
{
	const char *base = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/";
	const char *ok[] = {"claude-x:rawPredict", "claude-sonnet-4-5@20250929:streamRawPredict",
			    "count-tokens:rawPredict"};
	const char *bad[] = {"claude-x:predict",    "claude-x:rawPredict/..",
			     "a/b:rawPredict",	    "a%2Fb:rawPredict",
			     ":rawPredict",	    "claude-x",
			     "claude-x:rawPredictx"};
	struct proxy_backend *b = NULL;
	char path[256];

	ck_assert_int_eq(proxy_backend_parse(&b, "vertex,project=p1,region=us-east5"), 0);
	ck_assert_str_eq(b->url, "https://us-east5-aiplatform.googleapis.com");
	ck_assert_uint_eq(b->port, PROXY_VERTEX_PORT);
	for (size_t i = 0; i < ARB_ARRAY_LEN(ok); i++) {
		snprintf(path, sizeof(path), "%s%s", base, ok[i]);
		ck_assert_msg(proxy_vertex_path_ok(b->vertex, "POST", path), "%s", path);
		ck_assert(!proxy_vertex_path_ok(b->vertex, "GET", path));
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		snprintf(path, sizeof(path), "%s%s", base, bad[i]);
		ck_assert_msg(!proxy_vertex_path_ok(b->vertex, "POST", path), "%s", path);
	}
	ck_assert(!proxy_vertex_path_ok(
	    b->vertex, "POST",
	    "/v1/projects/p2/locations/us-east5/publishers/anthropic/models/m:rawPredict"));
	ck_assert(!proxy_vertex_path_ok(
	    b->vertex, "POST",
	    "/v1/projects/p1/locations/europe-west1/publishers/anthropic/models/m:rawPredict"));
	ck_assert(!proxy_vertex_path_ok(
	    b->vertex, "POST",
	    "/v1/projects/p1/locations/us-east5/publishers/google/models/m:rawPredict"));
	proxy_backend_free(b);
	ck_assert_int_eq(proxy_backend_parse(&b, "vertex,project=p1,region=global"), 0);
	ck_assert_str_eq(b->url, "https://aiplatform.googleapis.com");
	proxy_backend_free(b);
	ck_assert_int_eq(proxy_backend_parse(&b, "vertex,region=us-east5"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "no project"));
	ck_assert_int_eq(proxy_backend_parse(&b, "vertex,project=p1"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "no region"));
	ck_assert_int_eq(proxy_backend_parse(&b, "vertex,project=p/../x,region=r"), -EINVAL);
	ck_assert_int_eq(proxy_backend_parse(&b, "anthropic,project=p1"), -EINVAL);
}
END_TEST

START_TEST(backend_builtins)
{
	struct proxy_backend *b = NULL;

	ck_assert_int_eq(proxy_backend_parse(&b, "anthropic"), 0);
	ck_assert_str_eq(proxy_backend_name(b), "anthropic");
	ck_assert_int_eq(proxy_backend_port(b), 8713);
	ck_assert_str_eq(b->url, "https://api.anthropic.com");
	ck_assert_str_eq(b->key_env, "ANTHROPIC_API_KEY");
	ck_assert_int_eq(b->n_rules, 3);
	proxy_backend_free(b);
	ck_assert_int_eq(proxy_backend_parse(&b, "anthropic=http://127.0.0.1:8080/"), 0);
	ck_assert_str_eq(b->url, "http://127.0.0.1:8080");
	proxy_backend_free(b);
	ck_assert_int_eq(proxy_backend_parse(&b, "openai"), 0);
	ck_assert_str_eq(b->base_path, "/v1");
	ck_assert_int_eq(b->auth, PROXY_AUTH_BEARER);
	proxy_backend_free(b);
	ck_assert_int_eq(proxy_backend_parse(&b, "anthropic,port=9000,allow=GET:/x"), 0);
	ck_assert_int_eq(b->port, 9000);
	ck_assert_int_eq(b->n_rules, 1);
	proxy_backend_free(b);
	proxy_backend_free(NULL);
}
END_TEST

START_TEST(backend_custom)
{
	struct proxy_backend *b = NULL;

	ck_assert_int_eq(proxy_backend_parse(&b, "my-llm=https://llm.example/api,port=9100,"
						 "allow=POST:/v1/chat*,auth=header:api-key"),
			 0);
	ck_assert_str_eq(b->env_prefix, "MY_LLM");
	ck_assert_str_eq(b->key_env, "MY_LLM_API_KEY");
	ck_assert_str_eq(b->auth_header, "api-key");
	ck_assert(b->rules[0].prefix);
	ck_assert_str_eq(b->rules[0].path, "/v1/chat");
	proxy_backend_free(b);
}
END_TEST

START_TEST(backend_errors)
{
	static const char *const bad[] = {
	    "",
	    "Anthropic",
	    "x y",
	    "custom",
	    "custom=http://h",
	    "custom=http://h,port=1",
	    "custom=ftp://h,port=1,allow=GET:/x",
	    "anthropic=http://u:p@h",
	    "anthropic=http://h/?q=1",
	    "anthropic=http://h/#f",
	    "anthropic=not a url",
	    "anthropic,port=0",
	    "anthropic,port=65536",
	    "anthropic,port=12x",
	    "anthropic,frob=1",
	    "anthropic,url=http://h",
	    "anthropic,allow=get:/x",
	    "anthropic,allow=GET:x",
	    "anthropic,allow=GET:/a/../b",
	    "anthropic,allow=GET:/a*b",
	    "anthropic,allow=GET",
	    "anthropic,auth=basic",
	    "anthropic,auth=header:",
	    "anthropic,auth=header:a b",
	    "anthropic,key-env=1X",
	    "anthropic,key-env=A-B",
	    "anthropic,env=LD",
	    "anthropic,env=LD_AUDIT",
	    "anthropic,idle-timeout=0",
	    "anthropic,base-path=v1",
	    "anthropic,noequals",
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		struct proxy_backend *b = (void *)1;

		ck_assert_msg(proxy_backend_parse(&b, bad[i]) == -EINVAL, "accepted '%s'", bad[i]);
		ck_assert_ptr_null(b);
		ck_assert(strlen(util_err_msg()) > 0);
	}
}
END_TEST

START_TEST(rule_matching)
{
	struct proxy_rule exact = {"POST", "/v1/messages", false};
	struct proxy_rule pre = {"GET", "/v1/models", true};
	struct proxy_rule below = {"GET", "/v1/responses/", true};

	ck_assert(proxy_path_matches(&exact, "POST", "/v1/messages"));
	ck_assert(!proxy_path_matches(&exact, "GET", "/v1/messages"));
	ck_assert(!proxy_path_matches(&exact, "POST", "/v1/messages/x"));
	ck_assert(proxy_path_matches(&exact, NULL, "/v1/messages"));
	ck_assert(proxy_path_matches(&pre, "GET", "/v1/models"));
	ck_assert(proxy_path_matches(&pre, "GET", "/v1/models/abc"));
	ck_assert(!proxy_path_matches(&pre, "GET", "/v1/modelsx"));
	ck_assert(!proxy_path_matches(&pre, "GET", "/v1/mode"));
	ck_assert(proxy_path_matches(&below, "GET", "/v1/responses/r1"));
	ck_assert(!proxy_path_matches(&below, "GET", "/v1/responses"));
}
END_TEST

/* ---- request parsing ---- */

static const char req_simple[] = "POST /v1/messages?beta=true HTTP/1.1\r\n"
				 "Host: 127.0.0.1:8713\r\n"
				 "x-api-key: PH\r\n"
				 "Empty:\r\n"
				 "Content-Length: 5\r\n"
				 "\r\n"
				 "hello"
				 "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";

/* Feeds raw in steps of `step` bytes; returns bytes consumed for the head. */
static size_t feed_head(struct proxy_req *r, const char *raw, size_t len, size_t step)
{
	size_t off = 0;

	while (!r->headers_done && off < len) {
		size_t n = len - off < step ? len - off : step;
		ssize_t used = proxy_req_feed(r, raw + off, n);

		ck_assert_int_ge(used, 0);
		off += (size_t)used;
		if ((size_t)used < n && !r->headers_done)
			ck_abort_msg("parser stopped early");
	}
	return off;
}

START_TEST(parse_any_split)
{
	static struct proxy_req r;
	size_t len = strlen(req_simple);

	for (size_t step = 1; step <= len; step++) {
		char body[16];
		size_t off, got = 0;

		proxy_req_init(&r);
		off = feed_head(&r, req_simple, len, step);
		ck_assert(r.headers_done);
		ck_assert_str_eq(r.target, "/v1/messages?beta=true");
		ck_assert_int_eq(r.n_hdrs, 4);
		ck_assert_str_eq(proxy_req_header(&r, "HOST", NULL), "127.0.0.1:8713");
		ck_assert_str_eq(proxy_req_header(&r, "x-api-key", NULL), "PH");
		ck_assert_str_eq(proxy_req_header(&r, "empty", NULL), "");
		ck_assert(r.has_cl && r.content_length == 5 && r.keep_alive);
		/* Body in pieces no larger than the caller's buffer; the pipelined request stays.
		 */
		while (!r.message_done) {
			size_t cap = 2, n = len - off < step ? len - off : step;
			ssize_t used;

			r.body_dst = body + got;
			r.body_cap = cap;
			r.body_len = 0;
			used = proxy_req_feed(&r, req_simple + off, n < cap ? n : cap);
			ck_assert_int_ge(used, 0);
			off += (size_t)used;
			got += r.body_len;
		}
		ck_assert_int_eq(got, 5);
		ck_assert(memcmp(body, "hello", 5) == 0);
		ck_assert(util_str_has_prefix(req_simple + off, "GET /v1/models"));
	}
}
END_TEST

static void parse_all(struct proxy_req *r, const char *raw)
{
	proxy_req_init(r);
	(void)proxy_req_feed(r, raw, strlen(raw));
}

struct expect {
	const char *raw;
	int status;
	const char *reason;
};

START_TEST(parse_refusals)
{
	static struct proxy_req r;
	static const struct expect cases[] = {
	    {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
	     "conflicting Content-Length and Transfer-Encoding"},
	    {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", 400,
	     "conflicting Content-Length and Transfer-Encoding"},
	    {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
	     "more than one Content-Length"},
	    {"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400, "invalid Content-Length"},
	    {"FROB / HTTP/1.1\r\n\r\n", 405, "method not allowed"},
	    {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400,
	     "malformed request: invalid header name"},
	    {"GET / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 400,
	     "malformed request: invalid header name"},
	    {"GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400, "malformed request"},
	    {"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400, "malformed request"},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(cases); i++) {
		parse_all(&r, cases[i].raw);
		ck_assert_msg(r.bad, "case %zu parsed", i);
		ck_assert_int_eq(r.bad_status, cases[i].status);
		ck_assert_msg(util_str_has_prefix(r.bad, cases[i].reason), "case %zu: %s", i,
			      r.bad);
	}
}
END_TEST

START_TEST(parse_limits)
{
	static struct proxy_req r;
	char *big = malloc(PROXY_HEAD_MAX + 1000);
	int n = snprintf(big, 100, "GET / HTTP/1.1\r\nX: ");

	memset(big + n, 'a', PROXY_HEAD_MAX);
	strcpy(big + n + PROXY_HEAD_MAX, "\r\n\r\n");
	parse_all(&r, big);
	ck_assert_int_eq(r.bad_status, 431);
	free(big);
	big = malloc(PROXY_HEADERS_MAX * 10 + 100);
	n = sprintf(big, "GET / HTTP/1.1\r\n");
	for (int i = 0; i <= PROXY_HEADERS_MAX; i++)
		n += sprintf(big + n, "X%d: v\r\n", i);
	strcpy(big + n, "\r\n");
	parse_all(&r, big);
	ck_assert_int_eq(r.bad_status, 431);
	ck_assert_str_eq(r.bad, "too many request headers");
	free(big);
}
END_TEST

/* ---- policy ---- */

static struct proxy_backend *test_backend(void)
{
	struct proxy_backend *b = NULL;

	ck_assert_int_eq(proxy_backend_parse(&b, "anthropic=http://127.0.0.1:1,port=8713"), 0);
	b->credential = strdup("sk-ant-api03-REAL");
	strcpy(b->placeholder, "arb-anthropic-placeholder-00");
	return b;
}

START_TEST(policy_verdicts)
{
	static struct proxy_req r;
	static struct proxy_verdict v;
	struct proxy_backend *b = test_backend();
	static const struct expect cases[] = {
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n"
	     "x-api-key: arb-anthropic-placeholder-00\r\n\r\n",
	     0, "allowed"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: localhost:8713\r\n"
	     "authorization: bearer arb-anthropic-placeholder-00\r\n\r\n",
	     0, "allowed"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n"
	     "x-api-key: sk-ant-api03-REAL\r\n\r\n",
	     401, "credential header does not hold this box's placeholder"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", 401,
	     "missing credential header"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8714\r\nx-api-key: x\r\n\r\n", 404,
	     "unknown backend"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713x\r\n\r\n", 421,
	     "Host does not match the box's relay address"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:\r\n\r\n", 421,
	     "Host does not match the box's relay address"},
	    {"GET /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", 405,
	     "method not allowed for this path"},
	    {"POST /v2/x HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", 403,
	     "path not allowed for this backend"},
	    {"POST /v1/models/%2E%2E/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", 400,
	     "request path is not canonical"},
	    {"POST /v1/models/.. HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", 400,
	     "request path is not canonical"},
	    {"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", 405, "CONNECT is not allowed"},
	    {"POST http://127.0.0.1:8713/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", 400,
	     "absolute-form request targets are not allowed"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\nExpect: x\r\n\r\n", 417,
	     "unsupported Expect"},
	    {"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\nUpgrade: h2c\r\n\r\n", 400,
	     "protocol upgrades are not allowed"},
	    {"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:8713\r\nConnection: Upgrade\r\n"
	     "Upgrade: websocket\r\n\r\n",
	     426, "WebSocket is not supported by the proxy; use HTTP"},
	    {"POST /v1/messages HTTP/1.0\r\nHost: 127.0.0.1:8713\r\nTransfer-Encoding: chunked\r\n"
	     "\r\n",
	     400, "Transfer-Encoding in an HTTP/1.0 request"},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(cases); i++) {
		parse_all(&r, cases[i].raw);
		proxy_policy_check(&r, &b, 1, &v);
		ck_assert_msg(v.status == cases[i].status, "case %zu: status %d", i, v.status);
		ck_assert_str_eq(v.reason, cases[i].reason);
		ck_assert(!strstr(v.reason, "REAL"));
	}
	/* Nothing parsed yet: denied, not allowed. */
	proxy_req_init(&r);
	proxy_policy_check(&r, &b, 1, &v);
	ck_assert_int_eq(v.status, 500);
	proxy_backend_free(b);
}
END_TEST

START_TEST(hop_by_hop)
{
	static struct proxy_req r;

	parse_all(&r, "GET / HTTP/1.1\r\nConnection: close, X-Secret-Hop\r\nX-Secret-Hop: 1\r\n"
		      "X-Keep: 1\r\nProxy-Authorization: x\r\nX-Forwarded-For: y\r\n\r\n");
	ck_assert(proxy_header_is_dropped(&r, "x-secret-hop"));
	ck_assert(proxy_header_is_dropped(&r, "Connection"));
	ck_assert(proxy_header_is_dropped(&r, "Proxy-Authorization"));
	ck_assert(proxy_header_is_dropped(&r, "x-forwarded-for"));
	ck_assert(proxy_header_is_dropped(&r, "Host"));
	ck_assert(proxy_header_is_dropped(&r, "x-api-key"));
	ck_assert(!proxy_header_is_dropped(&r, "X-Keep"));
	ck_assert(!proxy_header_is_dropped(&r, "anthropic-version"));
}
END_TEST

/* ---- redaction ---- */

struct sink {
	char buf[4096];
	size_t len;
};

static int sink_emit(void *ctx, const char *d, size_t n)
{
	struct sink *s = ctx;

	memcpy(s->buf + s->len, d, n);
	s->len += n;
	return 0;
}

/* With repl NULL the secret becomes '*'s; with a replacement of its length, that. */
START_TEST(redact_every_split)
{
	const char *secret = "sk-SECRET-123";
	const char *in = "a sk-SECRET-123 b sk-SEC sk-sk-SECRET-123sk-SECRET-12";
	const char *want[2] = {"a ************* b sk-SEC sk-*************sk-SECRET-12",
			       "a acct-PH-00000 b sk-SEC sk-acct-PH-00000sk-SECRET-12"};
	const char *repl = _i ? "acct-PH-00000" : NULL;
	size_t n = strlen(in);

	for (size_t cut1 = 0; cut1 <= n; cut1++)
		for (size_t cut2 = cut1; cut2 <= n; cut2++) {
			struct proxy_redact rd;
			struct sink s = {.len = 0};

			proxy_redact_init(&rd, secret, repl);
			ck_assert_int_eq(proxy_redact_feed(&rd, in, cut1, false, sink_emit, &s), 0);
			ck_assert_int_eq(
			    proxy_redact_feed(&rd, in + cut1, cut2 - cut1, false, sink_emit, &s),
			    0);
			ck_assert_int_eq(
			    proxy_redact_feed(&rd, in + cut2, n - cut2, false, sink_emit, &s), 0);
			ck_assert_int_eq(proxy_redact_feed(&rd, NULL, 0, true, sink_emit, &s), 0);
			ck_assert_int_eq(s.len, n);
			ck_assert(memcmp(s.buf, want[_i], n) == 0);
			proxy_redact_free(&rd);
		}
}
END_TEST

START_TEST(redact_does_not_delay_events)
{
	struct proxy_redact rd;
	struct sink s = {.len = 0};
	const char *ev = "event: x\ndata: {\"a\":1}\n\n";
	char hdr[] = "x-echo: bad key sk-SECRET-123!";

	proxy_redact_init(&rd, "sk-SECRET-123", NULL);
	ck_assert_int_eq(proxy_redact_feed(&rd, ev, strlen(ev), false, sink_emit, &s), 0);
	ck_assert_int_eq(s.len, strlen(ev)); /* all of it, at once */
	/* Only a possible start of the secret is held back. */
	ck_assert_int_eq(proxy_redact_feed(&rd, "data: sk-SE", 11, false, sink_emit, &s), 0);
	ck_assert_int_eq(s.len, strlen(ev) + 6);
	proxy_redact_free(&rd);
	proxy_redact_buf("sk-SECRET-123", NULL, hdr, strlen(hdr));
	ck_assert_str_eq(hdr, "x-echo: bad key *************!");
	/* A replacement of another length is not used: '*'s instead. */
	proxy_redact_buf("*************", "short", hdr, strlen(hdr));
	ck_assert_str_eq(hdr, "x-echo: bad key *************!");
	proxy_redact_buf("bad key", "BAD-KEY", hdr, strlen(hdr));
	ck_assert_str_eq(hdr, "x-echo: BAD-KEY *************!");
}
END_TEST

/* ---- relay argument ---- */

START_TEST(relay_args)
{
	uint16_t *ports = NULL;
	size_t n = 0;
	char *path = NULL;
	static const char *const bad[] = {"",	  "=/s",      "8713",	"8713=",   "8713=rel",
					  "0=/s", "70000=/s", "87a=/s", "1,,2=/s", "-1=/s"};

	ck_assert_int_eq(proxy_relay_arg_parse("8713,8714=/run/p.sock", &ports, &n, &path), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(ports[0], 8713);
	ck_assert_int_eq(ports[1], 8714);
	ck_assert_str_eq(path, "/run/p.sock");
	free(ports);
	free(path);
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++)
		ck_assert_msg(proxy_relay_arg_parse(bad[i], &ports, &n, &path) == -EINVAL,
			      "accepted '%s'", bad[i]);
}
END_TEST

/* ---- whole connections over socketpairs ---- */

static struct proxy *test_proxy(void)
{
	struct proxy_config cfg = {0};
	struct proxy *p = NULL;

	cfg.backends = calloc(1, sizeof(*cfg.backends));
	/* Upstream port 1 on loopback: nothing listens, so allowed requests end in 502. */
	ck_assert_int_eq(
	    proxy_backend_parse(&cfg.backends[0],
				"anthropic=http://127.0.0.1:1,port=8713,connect-timeout=2"),
	    0);
	cfg.n_backends = 1;
	setenv("ANTHROPIC_API_KEY", "sk-ant-api03-UNITKEY", 1);
	ck_assert_int_eq(proxy_new(&p, &cfg), 0);
	return p;
}

struct writer {
	int fd;
	const char *data;
	size_t len;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	(void)proxy_send_all(w->fd, w->data, w->len);
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* Serves one connection carrying `in` with fn; returns what the proxy answered (caller frees). */
static char *serve_with(void (*fn)(struct proxy *, int), struct proxy *p, const char *in,
			size_t len, size_t *out_len)
{
	int sv[2];
	struct writer w;
	pthread_t t;
	char *out = NULL;
	size_t n = 0, cap = 0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	w = (struct writer){sv[1], in, len};
	ck_assert_int_eq(pthread_create(&t, NULL, writer_main, &w), 0);
	fn(p, sv[0]);
	close(sv[0]);
	pthread_join(t, NULL);
	for (;;) {
		ssize_t k;

		if (n + 4096 > cap) {
			cap = cap * 2 + 8192;
			out = realloc(out, cap);
		}
		k = read(sv[1], out + n, cap - n - 1);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	out[n] = '\0';
	close(sv[1]);
	*out_len = n;
	return out;
}

static char *serve(struct proxy *p, const char *in, size_t len, size_t *out_len)
{
	return serve_with(proxy_conn_serve, p, in, len, out_len);
}

START_TEST(serve_refusal_and_upstream_down)
{
	struct proxy *p = test_proxy();
	const char *ph = proxy_placeholder(p, "anthropic");
	char *req = util_asprintf("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n"
				  "x-api-key: %s\r\nContent-Length: 2\r\n\r\n{}",
				  ph);
	size_t n;
	char *out = serve(p, "GET /x HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", 41, &n);

	ck_assert(util_str_has_prefix(out, "HTTP/1.1 403 Forbidden\r\n"));
	ck_assert(
	    strstr(out, "\"message\":\"arborinth proxy: path not allowed for this backend\""));
	ck_assert(strstr(out, "Connection: close"));
	free(out);
	out = serve(p, req, strlen(req), &n);
	ck_assert_msg(util_str_has_prefix(out, "HTTP/1.1 502 "), "%s", out);
	ck_assert(strstr(out, "upstream refused the connection"));
	ck_assert(!strstr(out, "UNITKEY"));
	free(out);
	free(req);
	proxy_free(p);
}
END_TEST

static const char *const corpus[] = {
    "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\nx-api-key: PH\r\n"
    "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\nx-api-key: PH\r\n"
    "Content-Length: 5\r\n\r\nhello",
    "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:8713\r\nAuthorization: Bearer PH\r\n\r\n"
    "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n",
    "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:8713\r\nContent-Length: 3\r\n"
    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "CONNECT 127.0.0.1:8713 HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n",
    "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    "GET / HTTP/1.1\r\n\r\n",
};

START_TEST(serve_hostile_corpus)
{
	struct proxy *p = test_proxy();

	for (size_t i = 0; i < ARB_ARRAY_LEN(corpus); i++) {
		size_t n;
		char *out = serve(p, corpus[i], strlen(corpus[i]), &n);

		ck_assert_msg(n == 0 || util_str_has_prefix(out, "HTTP/1.1 4") ||
				  util_str_has_prefix(out, "HTTP/1.1 5"),
			      "corpus %zu: %s", i, out);
		ck_assert(!strstr(out, "UNITKEY"));
		free(out);
	}
	proxy_free(p);
}
END_TEST

/* Deterministic mutation fuzzing of the request path: bit flips, cuts, splices, repeats. */
START_TEST(serve_fuzz)
{
	struct proxy *p = test_proxy();
	unsigned seed = 12345;
	char buf[8192];

	for (int it = 0; it < 1500; it++) {
		const char *base = corpus[rand_r(&seed) % ARB_ARRAY_LEN(corpus)];
		size_t len = strlen(base), n;
		char *out;

		memcpy(buf, base, len);
		for (int m = rand_r(&seed) % 6; m >= 0; m--) {
			size_t pos = len ? (size_t)rand_r(&seed) % len : 0;

			switch (rand_r(&seed) % 5) {
			case 0:
				buf[pos] ^= (char)(1 << (rand_r(&seed) % 8));
				break;
			case 1:
				len = pos;
				break;
			case 2:
				buf[pos] = "\r\n:; \t\0\x7f"
					   "0f-"[rand_r(&seed) % 12];
				break;
			case 3:
				if (len + 64 < sizeof(buf)) {
					memmove(buf + pos + 32, buf + pos, len - pos);
					memset(buf + pos, 'A' + rand_r(&seed) % 26, 32);
					len += 32;
				}
				break;
			default:
				if (2 * len < sizeof(buf)) {
					memcpy(buf + len, buf, len);
					len *= 2;
				}
				break;
			}
		}
		out = serve(p, buf, len, &n);
		ck_assert(n == 0 || util_str_has_prefix(out, "HTTP/1.1 "));
		ck_assert(!strstr(out, "UNITKEY"));
		free(out);
	}
	proxy_free(p);
}
END_TEST

/* ---- --allow-host: parsing, the CONNECT proxy's refusals, records ---- */

START_TEST(allow_host_parse)
{
	static const struct {
		const char *spec, *host;
		unsigned port;
	} good[] = {
	    {"pypi.org", "pypi.org", 443},
	    {"Registry.NPMjs.org:8443", "registry.npmjs.org", 8443},
	    {"127.0.0.1:5000", "127.0.0.1", 5000},
	    {"[::1]", "::1", 443},
	    {"[2001:db8::1]:80", "2001:db8::1", 80},
	    {"a_b-c.example", "a_b-c.example", 443},
	};
	static const char *const bad[] = {
	    "",	   ":443", "host:",  "host:0",	  "host:65536", "host:12a",
	    "::1", "[::1", "[::1]x", "[zz::1]:1", "bad host",	"a..b",
	    ".a",  "-a",   "a/b",    "a:1:2",	  "h\n",	"h:+1",
	};
	char *host = NULL;
	uint16_t port = 0;

	for (size_t i = 0; i < ARB_ARRAY_LEN(good); i++) {
		ck_assert_msg(proxy_allow_host_parse(good[i].spec, &host, &port) == 0, "%s: %s",
			      good[i].spec, util_err_msg());
		ck_assert_str_eq(host, good[i].host);
		ck_assert_uint_eq(port, good[i].port);
		free(host);
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		ck_assert_msg(proxy_allow_host_parse(bad[i], &host, &port) == -EINVAL, "%s",
			      bad[i]);
		ck_assert_ptr_null(host);
		ck_assert(strlen(util_err_msg()) > 0);
	}
}
END_TEST

/* Records handed to the observer, copied (the strings are borrowed). */
struct seen {
	pthread_mutex_t lock;
	int n;
	char path[256], host[256], reason[256], method[16];
	int status;
	bool allowed, egress;
	uint16_t port;
};

static void observe(void *ctx, const struct proxy_record *rec)
{
	struct seen *s = ctx;

	pthread_mutex_lock(&s->lock);
	s->n++;
	snprintf(s->path, sizeof(s->path), "%s", rec->path ? rec->path : "(null)");
	snprintf(s->host, sizeof(s->host), "%s", rec->host ? rec->host : "(null)");
	snprintf(s->reason, sizeof(s->reason), "%s", rec->reason ? rec->reason : "(null)");
	snprintf(s->method, sizeof(s->method), "%s", rec->method ? rec->method : "(null)");
	s->status = rec->status;
	s->allowed = rec->allowed;
	s->egress = rec->egress;
	s->port = rec->port;
	pthread_mutex_unlock(&s->lock);
}

/* A proxy with one backend and allowed hosts (no listener: connections are served directly). */
static struct proxy *egress_proxy(struct seen *s)
{
	/* Both resolve on this machine (nothing listens there): no lookup leaves it. */
	static const char *const allow[] = {"LocalHost:1", "127.0.0.9"};
	struct proxy_config cfg = {.allow_hosts = allow, .n_allow_hosts = 2};
	struct proxy *p = NULL;

	cfg.backends = calloc(1, sizeof(*cfg.backends));
	ck_assert_int_eq(
	    proxy_backend_parse(&cfg.backends[0], "anthropic=http://127.0.0.1:1,port=8713"), 0);
	cfg.n_backends = 1;
	cfg.observer = s ? observe : NULL;
	cfg.observer_ctx = s;
	setenv("ANTHROPIC_API_KEY", "sk-ant-api03-UNITKEY", 1);
	ck_assert_int_eq(proxy_new(&p, &cfg), 0);
	return p;
}

static char *egress_serve(struct proxy *p, const char *in, size_t *out_len)
{
	return serve_with(proxy_egress_serve, p, in, strlen(in), out_len);
}

START_TEST(egress_refusals_and_records)
{
	struct seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct proxy *p = egress_proxy(&s);
	const char *ph = proxy_placeholder(p, "anthropic");
	size_t n, np = 0;
	const char *const *names = proxy_allowed_hosts(p, &np);
	char *req, *out;

	ck_assert_uint_eq(np, 2);
	ck_assert_str_eq(names[0], "localhost:1");
	ck_assert_str_eq(names[1], "127.0.0.9:443");
	/* Another host: 403 with the reason; recorded as refused with host and port. */
	out = egress_serve(p, "CONNECT other.example:443 HTTP/1.1\r\n\r\n", &n);
	ck_assert_msg(util_str_has_prefix(out, "HTTP/1.1 403 Forbidden\r\n"), "%s", out);
	ck_assert(strstr(out, "arborinth proxy: host other.example is not an allowed host"));
	ck_assert_int_eq(s.n, 1);
	ck_assert(s.egress && !s.allowed && s.status == 403 && s.port == 443);
	ck_assert_str_eq(s.host, "other.example");
	ck_assert_str_eq(s.method, "CONNECT");
	free(out);
	/* Allowed host, nothing listening: allowed by the policy, 502 with the reason. */
	out = egress_serve(p, "CONNECT LOCALHOST:1 HTTP/1.1\r\n\r\n", &n);
	ck_assert_msg(util_str_has_prefix(out, "HTTP/1.1 502 "), "%s", out);
	ck_assert(strstr(out, "cannot connect to localhost:1"));
	ck_assert(s.n == 2 && s.allowed && s.status == 502);
	free(out);
	/* The placeholder as a host name is redacted from the record, not from the answer. */
	req = util_asprintf("CONNECT %s:443 HTTP/1.1\r\n\r\n", ph);
	out = serve_with(proxy_egress_serve, p, req, strlen(req), &n);
	ck_assert(util_str_has_prefix(out, "HTTP/1.1 403 "));
	ck_assert_int_eq(s.n, 3);
	ck_assert(!strstr(s.host, ph) && strspn(s.host, "*") == strlen(ph));
	free(out);
	free(req);
	/* ... and from a backend request's path. */
	req = util_asprintf("GET /v1/%s HTTP/1.1\r\nHost: 127.0.0.1:8713\r\n\r\n", ph);
	out = serve(p, req, strlen(req), &n);
	ck_assert(util_str_has_prefix(out, "HTTP/1.1 403 "));
	ck_assert_int_eq(s.n, 4);
	ck_assert(!s.egress && !strstr(s.path, ph) && strspn(s.path + 4, "*") == strlen(ph));
	free(out);
	free(req);
	proxy_free(p);
}
END_TEST

static const char *const egress_corpus[] = {
    "CONNECT 127.0.0.9:443 HTTP/1.1\r\nHost: 127.0.0.9:443\r\n\r\n",
    "CONNECT localhost:1 HTTP/1.1\r\n\r\n",
    "GET http://localhost:1/ HTTP/1.1\r\nHost: localhost:1\r\n\r\n",
    "CONNECT [::1]:443 HTTP/1.0\r\n\r\n",
    "CONNECT localhost:1 HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd",
};

/* Mutations of CONNECT requests: every answer is an HTTP status line (or nothing). */
START_TEST(egress_fuzz)
{
	struct proxy *p = egress_proxy(NULL);
	unsigned seed = 4242;
	char buf[4096];

	for (int it = 0; it < 1500; it++) {
		const char *base = egress_corpus[rand_r(&seed) % ARB_ARRAY_LEN(egress_corpus)];
		size_t len = strlen(base), n;
		char *out;

		memcpy(buf, base, len);
		for (int m = rand_r(&seed) % 4; m >= 0; m--) {
			size_t pos = len ? (size_t)rand_r(&seed) % len : 0;

			switch (rand_r(&seed) % 3) {
			case 0:
				buf[pos] ^= (char)(1 << (rand_r(&seed) % 8));
				break;
			case 1:
				len = pos;
				break;
			default:
				buf[pos] = "\r\n:[]@ \t\0\x7f"
					   "0f-"[rand_r(&seed) % 14];
				break;
			}
		}
		out = serve_with(proxy_egress_serve, p, buf, len, &n);
		ck_assert_msg(n == 0 || util_str_has_prefix(out, "HTTP/1.1 "), "%.*s", (int)n, out);
		free(out);
	}
	proxy_free(p);
}
END_TEST

START_TEST(proxy_config_errors)
{
	struct proxy_config cfg = {0};
	struct proxy_backend *b[2] = {NULL, NULL};
	struct proxy *p = NULL;

	cfg.backends = b;
	ck_assert_int_eq(proxy_new(&p, &cfg), -EINVAL);
	ck_assert_int_eq(proxy_backend_parse(&b[0], "anthropic"), 0);
	ck_assert_int_eq(proxy_backend_parse(&b[1], "openai,port=8713"), 0);
	cfg.n_backends = 2;
	ck_assert_int_eq(proxy_new(&p, &cfg), -EINVAL);
	ck_assert(strstr(util_err_msg(), "share port"));
	cfg.n_backends = 1;
	unsetenv("ANTHROPIC_API_KEY");
	ck_assert_int_eq(proxy_new(&p, &cfg), -ENOKEY);
	ck_assert(strstr(util_err_msg(), "ANTHROPIC_API_KEY"));
	setenv("ANTHROPIC_API_KEY", "has space", 1);
	ck_assert_int_eq(proxy_new(&p, &cfg), -ENOKEY);
	ck_assert(!strstr(util_err_msg(), "has space"));
	ck_assert_int_eq(proxy_backend_set(b[0], "key-file", "/nonexistent/key"), 0);
	ck_assert_int_eq(proxy_new(&p, &cfg), -ENOKEY);
	ck_assert_ptr_null(b[0]->credential);
	proxy_backend_free(b[0]);
	proxy_backend_free(b[1]);
}
END_TEST

/* key-json=FILE#/POINTER: a key inside a JSON or JSONC file, found by a JSON pointer. */
START_TEST(key_json)
{
	char dir[] = "/tmp/arb-keyjson-XXXXXX", path[64], spec[160];
	static const char text[] = "// OpenCode's login store, with comments\n"
				   "{\"a/b\": {\"key\": \"sk-slash\"}, /* block */\n"
				   " \"t~x\": {\"key\": \"sk-tilde\",},\n"
				   " \"n\": {\"key\": 5}, \"sp\": {\"key\": \"has space\"}}\n";
	static const char *const good[][2] = {{"/a~1b/key", "sk-slash"}, {"/t~0x/key", "sk-tilde"}};
	static const char *const bad[][2] = {{"/nope/key", "holds no key at /nope/key"},
					     {"/n/key", "holds no key at /n/key"},
					     {"/sp/key", "must be 1-1024 printable"}};
	struct proxy_backend *b = NULL;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/auth.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	for (size_t i = 0; i < ARB_ARRAY_LEN(good); i++) {
		snprintf(spec, sizeof(spec), "anthropic,key-json=%s#%s", path, good[i][0]);
		ck_assert_int_eq(proxy_backend_parse(&b, spec), 0);
		ck_assert_int_eq(proxy_backend_load_credential(b), 0);
		ck_assert_str_eq(b->credential, good[i][1]);
		proxy_backend_free(b);
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		snprintf(spec, sizeof(spec), "anthropic,key-json=%s#%s", path, bad[i][0]);
		ck_assert_int_eq(proxy_backend_parse(&b, spec), 0);
		ck_assert_int_eq(proxy_backend_load_credential(b), -ENOKEY);
		ck_assert_msg(strstr(util_err_msg(), bad[i][1]), "%s", util_err_msg());
		ck_assert(!strstr(util_err_msg(), "has space"));
		ck_assert_ptr_null(b->credential);
		proxy_backend_free(b);
	}
	/* A missing file names the file; a specification without a pointer is refused. */
	snprintf(spec, sizeof(spec), "anthropic,key-json=%s/none.json#/a", dir);
	ck_assert_int_eq(proxy_backend_parse(&b, spec), 0);
	ck_assert_int_eq(proxy_backend_load_credential(b), -ENOKEY);
	ck_assert(strstr(util_err_msg(), "none.json"));
	proxy_backend_free(b);
	ck_assert_int_eq(proxy_backend_parse(&b, "anthropic,key-json=/x/auth.json"), -EINVAL);
	ck_assert(strstr(util_err_msg(), "FILE#/json/pointer"));
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* ---- logins ---- */

START_TEST(login_jwt_roundtrip)
{
	json_t *c = json_pack("{s:s, s:I, s:{s:s}}", "email", "a@b", "exp", (json_int_t)42,
			      "https://api.openai.com/auth", "chatgpt_account_id", "acct");
	char *jwt = login_jwt_make(c), *bad[] = {"", "a", "a.b", "a.!!!.c", "a.bnVsbA.c"};
	json_t *back;

	ck_assert_ptr_nonnull(jwt);
	ck_assert(util_str_has_prefix(jwt, "eyJ"));
	back = login_jwt_claims(jwt);
	ck_assert_ptr_nonnull(back);
	ck_assert(json_equal(c, back));
	/* Not three dot-separated parts, not base64url, not a JSON object ("null"). */
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++)
		ck_assert_ptr_null(login_jwt_claims(bad[i]));
	json_decref(back);
	json_decref(c);
	free(jwt);
}
END_TEST

/* A Claude Code login file in a temporary file; caller unlinks path. */
static void write_login(char *path, const char *text)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

START_TEST(login_box_file_and_answer)
{
	char path[] = "/tmp/arb-login-XXXXXX", *text = NULL, *json = NULL;
	const char *backends_ph;
	struct proxy_backend *b = NULL;
	struct proxy_login *l = NULL;
	struct proxy_config cfg = {0};
	struct proxy *p = NULL;
	int status = 0;

	write_login(path, "{\"claudeAiOauth\":{\"accessToken\":\"sk-ant-oat01-REAL\","
			  "\"refreshToken\":\"sk-ant-ort01-REAL\",\"expiresAt\":99999999999999,"
			  "\"scopes\":[\"user:inference\"],\"subscriptionType\":\"pro\"}}");
	ck_assert_int_eq(proxy_login_open(&l, PROXY_LOGIN_CLAUDE, path, NULL, NULL), 0);
	ck_assert_str_eq(proxy_login_path(l), path);
	ck_assert_int_eq(proxy_backend_parse(&b, "anthropic"), 0);
	proxy_backend_set_login(b, l);
	cfg.backends = calloc(1, sizeof(*cfg.backends));
	cfg.backends[0] = b;
	cfg.n_backends = 1;
	ck_assert_int_eq(proxy_new(&p, &cfg), 0);
	backends_ph = proxy_placeholder(p, "anthropic");
	ck_assert_int_eq(proxy_login_box_file(p, "anthropic", &text), 0);
	ck_assert_ptr_null(strstr(text, "REAL"));
	ck_assert_ptr_nonnull(strstr(text, backends_ph));
	ck_assert_ptr_nonnull(strstr(text, "\"subscriptionType\":\"pro\""));
	ck_assert_int_eq(proxy_login_box_file(p, "openai", &json), -ENOENT);
	/* The box's refresh: its own placeholder (JSON or form) gets placeholders back. */
	ck_assert_int_eq(
	    proxy_login_box_answer(b, "{\"refresh_token\":\"nope\"}", 24, &status, &json), 0);
	ck_assert_int_eq(status, 400);
	free(json);
	{
		char *form =
		    util_asprintf("grant_type=refresh_token&refresh_token=%s&x=1", l->ph_refresh);

		ck_assert_int_eq(proxy_login_box_answer(b, form, strlen(form), &status, &json), 0);
		ck_assert_int_eq(status, 200);
		ck_assert_ptr_nonnull(strstr(json, backends_ph));
		ck_assert_ptr_null(strstr(json, "REAL"));
		free(form);
	}
	free(json);
	free(text);
	proxy_free(p);
	unlink(path);
}
END_TEST

START_TEST(login_open_errors)
{
	char path[] = "/tmp/arb-login-XXXXXX";
	struct proxy_login *l = NULL;

	ck_assert_int_eq(proxy_login_open(&l, PROXY_LOGIN_CLAUDE, "/nonexistent/x", NULL, NULL),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "claude auth login"));
	write_login(path, "{\"tokens\":{\"access_token\":\"x\",\"id_token\":\"not-a-jwt\"}}");
	ck_assert_int_eq(proxy_login_open(&l, PROXY_LOGIN_CODEX, path, NULL, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "id_token is not a JWT"));
	ck_assert_int_eq(proxy_login_open(&l, PROXY_LOGIN_CLAUDE, path, NULL, NULL), -EINVAL);
	ck_assert_int_eq(
	    proxy_login_open(&l, PROXY_LOGIN_CLAUDE, path, "http://example.com/t", NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "must be https"));
	ck_assert_ptr_null(l);
	unlink(path);
}
END_TEST

/*
 * The URL check (proxy/url_lite.c, no libcurl: the proxy opens libcurl only for the first
 * request) against libcurl's parser: whatever it takes, libcurl takes too, with the same
 * scheme, host and port; what libcurl refuses it refuses (so it fails before the box starts).
 */
START_TEST(url_check_against_curl)
{
	static const char *const urls[] = {
	    "http://h",
	    "https://api.anthropic.com",
	    "http://127.0.0.1:8080",
	    "http://h:1/a/b",
	    "https://h/v1/",
	    "http://[::1]:9/x",
	    "http://[fe80::1]",
	    "http://a-b.c_d~e:65535",
	    "http://h:65536",
	    "http://h:0",
	    "http://h:",
	    "http://h:12x",
	    "http://h:+1",
	    "http://a b",
	    "http://h/a b",
	    "http://h/a\\b",
	    "http://h\\.evil/",
	    "http://[zz]",
	    "http://[::1",
	    "http://[]",
	    "http://h]",
	    "http://%41",
	    "http://h/%zz",
	    "http://h/\x01",
	    "http://h/\xc3\xa9",
	    "http://\xc3\xa9",
	    "http://h:1:2",
	    "http://h/\"",
	    "http://h/{x}",
	    "http://[::1]x",
	    "http://h\t",
	    "http:///x",
	    "ftp://h",
	    "http:/h",
	    "HTTP://h",
	    "http://u@h",
	    "http://h?x",
	    "http://h#f",
	    "http://h,x",
	    "http://h:08080",
	};
	static const char *const good[] = {"http://h", "https://api.anthropic.com",
					   "http://127.0.0.1:8080", "http://[::1]:9/x"};
	size_t n_ok = 0;

	for (size_t i = 0; i < ARB_ARRAY_LEN(urls); i++) {
		const char *u = urls[i];
		bool lite = proxy_url_check("t", u) == 0;
		CURLU *cu = curl_url();
		char *scheme = NULL, *host = NULL, *port = NULL;
		bool curl_ok =
		    cu && curl_url_set(cu, CURLUPART_URL, u, 0) == CURLUE_OK &&
		    curl_url_get(cu, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
		    curl_url_get(cu, CURLUPART_HOST, &host, 0) == CURLUE_OK && *host &&
		    curl_url_get(cu, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK;

		if (lite) {
			const char *h = strstr(u, "://") + 3;
			size_t hl = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/");
			const char *pp = h[hl] == ':' ? h + hl + 1 : NULL;
			char want_port[8];

			snprintf(want_port, sizeof(want_port), "%.*s",
				 pp ? (int)strcspn(pp, "/") : 0, pp ? pp : "");
			if (!pp)
				snprintf(want_port, sizeof(want_port), "%s",
					 !strncmp(u, "https", 5) ? "443" : "80");
			ck_assert_msg(curl_ok, "url_lite takes '%s', libcurl does not", u);
			ck_assert_msg(strlen(host) == hl && !strncmp(host, h, hl),
				      "'%s': host %s for libcurl", u, host);
			ck_assert_msg(strtol(port, NULL, 10) == strtol(want_port, NULL, 10),
				      "'%s': port %s for libcurl, %s here", u, port, want_port);
			ck_assert(!strcmp(scheme, "http") || !strcmp(scheme, "https"));
			n_ok++;
		}
		curl_free(scheme);
		curl_free(host);
		curl_free(port);
		curl_url_cleanup(cu);
	}
	/* Control: the usual URLs are taken (the comparison above is not empty). */
	for (size_t i = 0; i < ARB_ARRAY_LEN(good); i++)
		ck_assert_msg(proxy_url_check("t", good[i]) == 0, "refused '%s'", good[i]);
	ck_assert_uint_ge(n_ok, 8);
	/* What libcurl refuses, refused here with the backend's name. */
	ck_assert_int_eq(proxy_url_check("x", "http://h:65536"), -EINVAL);
	ck_assert(strstr(util_err_msg(), "backend x"));
	ck_assert_int_eq(proxy_url_check("x", "http://a b"), -EINVAL);
	ck_assert_int_eq(proxy_url_check("x", "http://[zz]"), -EINVAL);
}
END_TEST

static Suite *proxy_suite(void)
{
	Suite *s = suite_create("proxy");
	TCase *tc;

	tc = tcase_create("backends");
	tcase_add_test(tc, backend_builtins);
	tcase_add_test(tc, vertex_backend);
	tcase_add_test(tc, backend_custom);
	tcase_add_test(tc, backend_errors);
	tcase_add_test(tc, rule_matching);
	tcase_add_test(tc, relay_args);
	tcase_add_test(tc, proxy_config_errors);
	tcase_add_test(tc, key_json);
	tcase_add_test(tc, allow_host_parse);
	tcase_add_test(tc, url_check_against_curl);
	suite_add_tcase(s, tc);
	tc = tcase_create("parse");
	tcase_add_test(tc, parse_any_split);
	tcase_add_test(tc, parse_refusals);
	tcase_add_test(tc, parse_limits);
	suite_add_tcase(s, tc);
	tc = tcase_create("policy");
	tcase_add_test(tc, policy_verdicts);
	tcase_add_test(tc, hop_by_hop);
	suite_add_tcase(s, tc);
	tc = tcase_create("redact");
	tcase_add_loop_test(tc, redact_every_split, 0, 2);
	tcase_add_test(tc, redact_does_not_delay_events);
	suite_add_tcase(s, tc);
	tc = tcase_create("login");
	tcase_add_test(tc, login_jwt_roundtrip);
	tcase_add_test(tc, login_box_file_and_answer);
	tcase_add_test(tc, login_open_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("serve");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, serve_refusal_and_upstream_down);
	tcase_add_test(tc, serve_hostile_corpus);
	tcase_add_test(tc, serve_fuzz);
	tcase_add_test(tc, egress_refusals_and_records);
	tcase_add_test(tc, egress_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proxy_suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
