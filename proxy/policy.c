/*
 * proxy/policy.c: the request policy. Every check must pass for a request to be forwarded;
 * the verdict starts as a denial and only the last line turns it into an allowance, so a
 * check that is skipped or fails internally denies. Reasons name the rule, never internal
 * names and never a credential.
 */
#include "proxy/proxy_internal.h"
#include "proxy/vertex.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool deny(struct proxy_verdict *v, int status, const char *reason)
{
	v->status = status;
	v->reason = reason;
	return false;
}

bool proxy_secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/* Origin-form only; the path must be canonical so prefix rules mean what they say. */
static bool check_target(const struct proxy_req *r, struct proxy_verdict *v)
{
	const char *t = r->target, *q;
	size_t plen;

	if (!t || !*t)
		return deny(v, 400, "malformed request");
	if (t[0] != '/')
		return deny(v, 400,
			    t[0] == '*' ? "asterisk-form request targets are not allowed"
					: "absolute-form request targets are not allowed");
	q = strchr(t, '?');
	plen = q ? (size_t)(q - t) : strlen(t);
	if (plen >= sizeof(v->path))
		return deny(v, 414, "request target too long");
	memcpy(v->path, t, plen);
	v->path[plen] = '\0';
	for (const char *s = t; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '\\' ||
		    *s == '#')
			return deny(v, 400, "request path is not canonical");
	if (strstr(v->path, "//") || strstr(v->path, "/./") || strstr(v->path, "/../") ||
	    (plen >= 2 && !strcmp(v->path + plen - 2, "/.")) ||
	    (plen >= 3 && !strcmp(v->path + plen - 3, "/..")) || strcasestr(v->path, "%2e") ||
	    strcasestr(v->path, "%2f") || strcasestr(v->path, "%5c") || strstr(v->path, "%00") ||
	    strchr(v->path, ';'))
		return deny(v, 400, "request path is not canonical");
	return true;
}

/* Host must be the in-box relay address of a backend: 127.0.0.1:PORT or localhost:PORT. */
static bool check_host(const struct proxy_req *r, struct proxy_backend *const *b, size_t n,
		       struct proxy_verdict *v)
{
	int count = 0;
	const char *h = proxy_req_header(r, "host", &count), *port;
	unsigned long p = 0;

	if (count == 0)
		return deny(v, 400, "missing Host header");
	if (count > 1)
		return deny(v, 400, "more than one Host header");
	if (util_str_has_prefix(h, "127.0.0.1:"))
		port = h + 10;
	else if (strncasecmp(h, "localhost:", 10) == 0)
		port = h + 10;
	else
		return deny(v, 421, "Host does not match the box's relay address");
	if (!*port || strlen(port) > 5)
		return deny(v, 421, "Host does not match the box's relay address");
	for (const char *s = port; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return deny(v, 421, "Host does not match the box's relay address");
		p = p * 10 + (unsigned long)(*s - '0');
	}
	v->backend = p <= 65535 ? proxy_backend_by_port(b, n, (uint16_t)p) : NULL;
	if (!v->backend)
		return deny(v, 404, "unknown backend");
	return true;
}

static bool check_framing(const struct proxy_req *r, struct proxy_verdict *v)
{
	int n_te = 0, n_cl = 0, n_exp = 0;
	const char *te = proxy_req_header(r, "transfer-encoding", &n_te);
	const char *exp = proxy_req_header(r, "expect", &n_exp);

	proxy_req_header(r, "content-length", &n_cl);
	if (n_te && n_cl)
		return deny(v, 400, "conflicting Content-Length and Transfer-Encoding");
	if (n_cl > 1)
		return deny(v, 400, "more than one Content-Length");
	if (n_te > 1 || (te && strcasecmp(te, "chunked") != 0))
		return deny(v, 501, "unsupported Transfer-Encoding");
	if (n_exp > 1 || (exp && strcasecmp(exp, "100-continue") != 0))
		return deny(v, 417, "unsupported Expect");
	if (n_te && r->parser.http_minor == 0)
		return deny(v, 400, "Transfer-Encoding in an HTTP/1.0 request");
	return true;
}

static bool check_rules(const struct proxy_backend *b, const char *method, struct proxy_verdict *v)
{
	bool path_known = false;

	for (size_t i = 0; i < b->n_rules; i++) {
		if (proxy_path_matches(&b->rules[i], method, v->path))
			return true;
		if (proxy_path_matches(&b->rules[i], NULL, v->path))
			path_known = true;
	}
	return path_known ? deny(v, 405, "method not allowed for this path")
			  : deny(v, 403, "path not allowed for this backend");
}

/*
 * Every credential header the box sends must hold exactly this box's placeholder:
 * x-api-key-style headers the bare placeholder, Authorization "Bearer <placeholder>".
 */
static bool check_credential(const struct proxy_req *r, const struct proxy_backend *b,
			     struct proxy_verdict *v)
{
	const char *key_hdr = b->auth == PROXY_AUTH_HEADER ? b->auth_header
			      : b->auth == PROXY_AUTH_AUTO_ANTHROPIC || b->auth == PROXY_AUTH_NONE
				  ? "x-api-key"
				  : NULL;
	int n_auth = 0, n_key = 0;
	const char *auth = proxy_req_header(r, "authorization", &n_auth);
	const char *key = key_hdr ? proxy_req_header(r, key_hdr, &n_key) : NULL;

	/* Vertex clients told to skip Google auth send none; the relay is the box's own. */
	if (n_auth + n_key == 0 && b->vertex)
		return true;
	if (n_auth + n_key == 0)
		return deny(v, 401, "missing credential header");
	if (n_auth > 1 || n_key > 1)
		return deny(v, 401, "more than one credential header");
	if (key && !proxy_secret_equal(key, b->placeholder))
		return deny(v, 401, "credential header does not hold this box's placeholder");
	if (auth &&
	    (strncasecmp(auth, "Bearer ", 7) != 0 || !proxy_secret_equal(auth + 7, b->placeholder)))
		return deny(v, 401, "credential header does not hold this box's placeholder");
	return true;
}

void proxy_policy_check(const struct proxy_req *r, struct proxy_backend *const *backends, size_t n,
			struct proxy_verdict *v)
{
	const char *method, *local, *upgrade;

	v->status = 500;
	v->reason = "internal error";
	v->local = false;
	v->backend = NULL;
	v->path[0] = '\0';
	if (r->bad) {
		if (r->target && r->target[0] == '/')
			snprintf(v->path, sizeof(v->path), "%.*s", (int)strcspn(r->target, "?"),
				 r->target);
		deny(v, r->bad_status, r->bad);
		return;
	}
	if (!r->headers_done)
		return;
	method = http_method_str((enum http_method)r->parser.method);
	if (r->parser.method == HTTP_CONNECT) {
		deny(v, 405, "CONNECT is not allowed");
		return;
	}
	if (r->parser.http_major != 1 || r->parser.http_minor > 1) {
		deny(v, 505, "HTTP version not supported");
		return;
	}
	if (!check_target(r, v))
		return;
	upgrade = proxy_req_header(r, "upgrade", NULL);
	if (r->parser.upgrade || upgrade) {
		/* 426: a client that tries a WebSocket first (Codex) falls back to HTTP. */
		if (upgrade && strcasestr(upgrade, "websocket"))
			deny(v, 426, "WebSocket is not supported by the proxy; use HTTP");
		else
			deny(v, 400, "protocol upgrades are not allowed");
		return;
	}
	if (!check_host(r, backends, n, v) || !check_framing(r, v))
		return;
	/* A login's refresh from the box: answered by the proxy, never forwarded. */
	local = proxy_login_local_path(v->backend->login);
	if (local && !strcmp(v->path, local)) {
		if (strcmp(method, "POST") != 0) {
			deny(v, 405, "method not allowed for this path");
			return;
		}
		v->local = true;
		v->status = 0;
		v->reason = "answered by the proxy (login refresh)";
		return;
	}
	if (!check_rules(v->backend, method, v) || !check_credential(r, v->backend, v))
		return;
	if (v->backend->vertex && !proxy_vertex_path_ok(v->backend->vertex, method, v->path)) {
		deny(v, 403, "not a Vertex anthropic rawPredict of this project and region");
		return;
	}
	/* Google's system parameters ($userProject, key, ...) would ride on the host's token. */
	if (v->backend->vertex && strchr(r->target, '?')) {
		deny(v, 403, "a query is not allowed on Vertex rawPredict");
		return;
	}
	v->status = 0;
	v->reason = "allowed";
}

/* Connection-specific or replaced headers; also whatever the Connection header lists. */
bool proxy_header_is_dropped(const struct proxy_req *r, const char *name)
{
	static const char *const dropped[] = {
	    "connection",
	    "keep-alive",
	    "proxy-connection",
	    "proxy-authorization",
	    "proxy-authenticate",
	    "te",
	    "trailer",
	    "transfer-encoding",
	    "upgrade",
	    "host",
	    "content-length",
	    "expect",
	    "accept-encoding",
	    "authorization",
	    "x-api-key",
	    "forwarded",
	    "via",
	    "http2-settings",
	};
	const char *conn = proxy_req_header(r, "connection", NULL);

	for (size_t i = 0; i < ARB_ARRAY_LEN(dropped); i++)
		if (strcasecmp(name, dropped[i]) == 0)
			return true;
	if (strncasecmp(name, "x-forwarded-", 12) == 0 || strncasecmp(name, "proxy-", 6) == 0)
		return true;
	/* Each Connection header token names a hop-by-hop header. */
	for (size_t i = 0; conn && i < r->n_hdrs; i++) {
		const char *s;
		size_t nl = strlen(name);

		if (strcasecmp(r->hdrs[i].name, "connection") != 0)
			continue;
		s = r->hdrs[i].value;
		while (*s) {
			size_t tl;

			s += strspn(s, " \t,");
			tl = strcspn(s, " \t,");
			if (tl == nl && strncasecmp(s, name, nl) == 0)
				return true;
			s += tl;
		}
	}
	return false;
}
