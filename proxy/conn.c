/*
 * proxy/conn.c: one connection from the box: read a request head, run the policy, refuse or
 * forward, record, and go on while the connection stays alive. Refusals end the connection
 * (the body of a refused request is never read).
 */
#include "proxy/proxy_internal.h"
#include "proxy/reapi_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void json_escape(char *out, size_t size, const char *s)
{
	size_t o = 0;

	for (; *s && o + 7 < size; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			o += (size_t)snprintf(out + o, size - o, "\\u%04x", ch);
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o] = '\0';
}

int proxy_send_error(int fd, int status, const char *reason)
{
	char esc[512], body[768], head[256];
	int bl, hl;

	json_escape(esc, sizeof(esc), reason);
	/* The shape of the model APIs' own errors, so clients show the message. */
	bl = snprintf(body, sizeof(body),
		      "{\"type\":\"error\",\"error\":{\"type\":\"arborinth_proxy_refused\","
		      "\"message\":\"arborinth proxy: %s\"}}\n",
		      esc);
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
		      "Content-Length: %d\r\nConnection: close\r\n\r\n",
		      status, http_status_str((enum http_status)status), bl);
	if (proxy_send_all(fd, head, (size_t)hl) < 0)
		return -EPIPE;
	return proxy_send_all(fd, body, (size_t)bl);
}

/* Reads more bytes into c->in. >0 bytes, 0 end of stream, <0 timeout or error. */
static ssize_t conn_fill(struct proxy_conn *c, int timeout_ms)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	ssize_t n;
	int prc;

	if (c->in_len == 0)
		c->in_off = 0;
	if (c->in_off + c->in_len == sizeof(c->in)) {
		memmove(c->in, c->in + c->in_off, c->in_len);
		c->in_off = 0;
	}
	do {
		prc = poll(&pfd, 1, timeout_ms);
	} while (prc < 0 && errno == EINTR);
	if (prc == 0)
		return -ETIMEDOUT;
	if (prc < 0)
		return -errno;
	do {
		n = recv(c->fd, c->in + c->in_off + c->in_len,
			 sizeof(c->in) - c->in_off - c->in_len, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		c->eof = true;
	c->in_len += (size_t)n;
	return n;
}

ssize_t proxy_conn_read_body(struct proxy_conn *c, struct proxy_req *r, char *buf, size_t cap)
{
	r->body_dst = buf;
	r->body_cap = cap;
	r->body_len = 0;
	while (r->body_len == 0 && !r->message_done) {
		ssize_t used;

		if (c->in_len == 0) {
			ssize_t n = c->eof ? 0 : conn_fill(c, PROXY_RECV_MS);

			if (n <= 0) {
				r->body_dst = NULL;
				return n == 0 ? -EPIPE : n;
			}
		}
		/* Body bytes never outnumber input bytes, so this cannot overflow buf. */
		used = proxy_req_feed(r, c->in + c->in_off, c->in_len < cap ? c->in_len : cap);
		if (used < 0) {
			r->body_dst = NULL;
			return -EBADMSG;
		}
		c->in_off += (size_t)used;
		c->in_len -= (size_t)used;
	}
	r->body_dst = NULL;
	return (ssize_t)r->body_len;
}

int proxy_conn_read_head(struct proxy_conn *c, struct proxy_req *r, bool first)
{
	bool started = c->in_len > 0;

	for (;;) {
		ssize_t used;

		if (c->in_len == 0) {
			ssize_t n =
			    c->eof ? 0
				   : conn_fill(c, started || first ? PROXY_RECV_MS : PROXY_IDLE_MS);

			if (n <= 0)
				return 1;
			started = true;
		}
		used = proxy_req_feed(r, c->in + c->in_off, c->in_len);
		if (used < 0)
			return 0;
		c->in_off += (size_t)used;
		c->in_len -= (size_t)used;
		if (r->headers_done)
			return 0;
	}
}

void proxy_record_emit(struct proxy *p, struct proxy_record *rec)
{
	char *path = NULL, *host = NULL;

	if (!p->observer)
		return;
	path = strdup(rec->path ? rec->path : "");
	host = rec->host ? strdup(rec->host) : NULL;
	if (!path || (rec->host && !host)) {
		/* Cannot redact: record the request without its path and host. */
		rec->path = "";
		rec->host = NULL;
	} else {
		for (size_t i = 0; i < p->n_backends; i++) {
			const struct proxy_backend *b = p->backends[i];

			if (b->credential && *b->credential) {
				proxy_redact_buf(b->credential, NULL, path, strlen(path));
				if (host)
					proxy_redact_buf(b->credential, NULL, host, strlen(host));
			}
			proxy_redact_buf(b->placeholder, NULL, path, strlen(path));
			if (host)
				proxy_redact_buf(b->placeholder, NULL, host, strlen(host));
		}
		rec->path = path;
		rec->host = host;
	}
	p->observer(p->observer_ctx, rec);
	free(path);
	free(host);
}

static void record(struct proxy *p, const struct proxy_req *r, const struct proxy_verdict *v,
		   int64_t t0, int status, const struct proxy_fwd_result *res, const char *reason)
{
	struct proxy_record rec = {0};

	if (!p->observer)
		return;
	rec.time_ns = t0;
	rec.backend = v->backend ? v->backend->name : NULL;
	rec.method = r->target ? http_method_str((enum http_method)r->parser.method) : "";
	rec.path = v->path;
	rec.status = status;
	rec.bytes_up = res ? res->bytes_up : 0;
	rec.bytes_down = res ? res->bytes_down : 0;
	rec.duration_ns = util_now_ns() - t0;
	rec.allowed = res != NULL;
	rec.reason = reason;
	proxy_record_emit(p, &rec);
}

#define LOCAL_BODY_MAX (16 * 1024)

/* A login refresh from the box: read the (small) body and answer with placeholders. */
static void answer_local(struct proxy_conn *c, struct proxy_req *r, const struct proxy_verdict *v,
			 struct proxy_fwd_result *res)
{
	char *body = malloc(LOCAL_BODY_MAX + 1), *json = NULL, head[256];
	size_t len = 0;
	ssize_t n = 1;
	int status = 0, hl;

	res->status = 0;
	res->reason = "box closed the connection";
	if (proxy_req_header(r, "expect", NULL) &&
	    proxy_send_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
		goto out;
	while (body && n > 0 && len < LOCAL_BODY_MAX) {
		n = proxy_conn_read_body(c, r, body + len, LOCAL_BODY_MAX - len);
		len += n > 0 ? (size_t)n : 0;
	}
	if (!body || n < 0 || !r->message_done) {
		if (body && (n == -EBADMSG || len >= LOCAL_BODY_MAX))
			res->status =
			    proxy_send_error(c->fd, 400, "malformed request body") == 0 ? 400 : 0;
		goto out;
	}
	res->bytes_up = (int64_t)len;
	if (proxy_login_box_answer(v->backend, body, len, &status, &json) < 0)
		goto out;
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
		      "%zu\r\nCache-Control: no-store\r\n\r\n",
		      status, http_status_str((enum http_status)status), strlen(json));
	if (proxy_send_all(c->fd, head, (size_t)hl) == 0 &&
	    proxy_send_all(c->fd, json, strlen(json)) == 0) {
		res->status = status;
		res->bytes_down = (int64_t)strlen(json);
		res->reason = status == 200 ? v->reason : "refused: not this box's refresh token";
		res->keep_alive = r->keep_alive;
	}
out:
	free(json);
	free(body);
}

void proxy_conn_serve(struct proxy *p, int fd)
{
	struct proxy_conn *c = calloc(1, sizeof(*c));
	struct proxy_req *r = malloc(sizeof(*r));
	struct proxy_verdict *v = malloc(sizeof(*v));
	struct timeval tv = {.tv_sec = PROXY_SEND_MS / 1000};
	bool first = true;

	if (!c || !r || !v)
		goto out;
	c->p = p;
	c->fd = fd;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* HTTP/2 with prior knowledge: the reapi backend's gRPC (reapi.c). */
	if (proxy_reapi_sniff(c)) {
		proxy_reapi_serve(c);
		goto out;
	}
	while (!atomic_load(&p->stopping)) {
		struct proxy_fwd_result res = {0};
		int64_t t0;

		proxy_req_init(r);
		if (proxy_conn_read_head(c, r, first) != 0)
			break;
		first = false;
		t0 = util_now_ns();
		proxy_policy_check(r, p->backends, p->n_backends, v);
		/* Vertex clients send no credential; only the box's own relay may do that. */
		if (v->status == 0 && v->backend && v->backend->vertex && p->tcp_listening &&
		    !proxy_req_header(r, "authorization", NULL)) {
			v->status = 401;
			v->reason = "a Vertex request on the host's loopback needs the box's "
				    "placeholder";
		}
		if (v->status != 0) {
			int sent = proxy_send_error(fd, v->status, v->reason);

			record(p, r, v, t0, sent == 0 ? v->status : 0, NULL, v->reason);
			break;
		}
		if (v->local) {
			answer_local(c, r, v, &res);
			record(p, r, v, t0, res.status, &res, res.reason);
			if (!res.keep_alive)
				break;
			continue;
		}
		/* A request without a body is complete now: the parser consumes its last LF,
		 * so a pipelined or keep-alive next request starts clean. */
		if (!r->chunked && r->content_length == 0) {
			char none[1];

			if (proxy_conn_read_body(c, r, none, sizeof(none)) != 0)
				break;
		} else if (proxy_req_header(r, "expect", NULL) &&
			   proxy_send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) {
			break;
		}
		proxy_upstream_forward(c, r, v, &res);
		record(p, r, v, t0, res.status, &res, res.reason);
		if (!res.keep_alive)
			break;
	}
out:
	proxy_upstream_conn_done(c);
	free(v);
	free(r);
	free(c);
}
