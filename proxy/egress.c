/*
 * proxy/egress.c: the --allow-host proxy. Each connection from the box carries one request:
 * CONNECT HOST:PORT to an allowed host opens a tunnel (the host side resolves the name and
 * connects; bytes then pass both ways untouched, TLS included, until both sides end); anything
 * else is refused with an HTTP error whose JSON body states the reason. Plain-HTTP requests
 * (absolute-form GET http://...) are refused too, even to allowed hosts: only tunnels leave.
 * Every request is recorded once, when it ends.
 */
#include "proxy/proxy_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define HOST_MAX 253

/* ---- policy ------------------------------------------------------------------------------- */

struct egress_verdict {
	int status; /* 0: allowed */
	const char *reason;
	char reason_buf[HOST_MAX + 96];
	char host[HOST_MAX + 1]; /* "" when unreadable */
	uint16_t port;
};

static void deny(struct egress_verdict *v, int status, const char *reason)
{
	v->status = status;
	v->reason = reason;
}

/* Host and port of an authority-form (CONNECT) or absolute-form target, when readable. */
static bool target_authority(const char *t, bool connect, struct egress_verdict *v)
{
	struct http_parser_url u;
	char port[8];

	http_parser_url_init(&u);
	if (http_parser_parse_url(t, strlen(t), connect, &u) != 0 ||
	    !(u.field_set & (1 << UF_HOST)))
		return false;
	if (u.field_data[UF_HOST].len == 0 || u.field_data[UF_HOST].len > HOST_MAX)
		return false;
	memcpy(v->host, t + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len);
	v->host[u.field_data[UF_HOST].len] = '\0';
	for (char *s = v->host; *s; s++)
		*s = (char)tolower((unsigned char)*s);
	v->port = 0;
	if (u.field_set & (1 << UF_PORT)) {
		snprintf(port, sizeof(port), "%.*s", (int)u.field_data[UF_PORT].len,
			 t + u.field_data[UF_PORT].off);
		if (proxy_port_parse(port, &v->port) < 0)
			return false;
	} else if (!connect) {
		v->port = 80;
	}
	return true;
}

/* Fails closed: the verdict starts as an internal error and only the end allows. */
static void egress_check(const struct proxy *p, const struct proxy_req *r, struct egress_verdict *v)
{
	bool host_known = false;

	v->status = 500;
	v->reason = "internal error";
	v->host[0] = '\0';
	v->port = 0;
	if (r->bad) {
		deny(v, r->bad_status, r->bad);
		return;
	}
	if (!r->headers_done || !r->target)
		return;
	if (r->parser.method != HTTP_CONNECT) {
		(void)target_authority(r->target, false, v);
		deny(v, 405,
		     "only CONNECT tunnels to allowed hosts are forwarded (plain HTTP is refused)");
		return;
	}
	if (r->parser.http_major != 1 || r->parser.http_minor > 1) {
		deny(v, 505, "HTTP version not supported");
		return;
	}
	if (!target_authority(r->target, true, v) || v->port == 0) {
		v->host[0] = '\0';
		v->port = 0;
		deny(v, 400, "CONNECT target is not HOST:PORT");
		return;
	}
	for (size_t i = 0; i < p->n_allow; i++) {
		if (strcmp(p->allow[i].host, v->host) != 0)
			continue;
		host_known = true;
		if (p->allow[i].port == v->port) {
			v->status = 0;
			v->reason = "allowed";
			return;
		}
	}
	snprintf(v->reason_buf, sizeof(v->reason_buf),
		 host_known ? "port %2$u of host %1$s is not allowed"
			    : "host %1$s is not an allowed host",
		 v->host, v->port);
	deny(v, 403, v->reason_buf);
}

/* ---- connecting ---------------------------------------------------------------------------- */

/*
 * Waits for fd to become writable; the box hanging up (both directions: a half-close is
 * passed on later, in the tunnel) or the proxy stopping ends the wait.
 */
static int wait_connected(struct proxy *p, int fd, int box_fd)
{
	struct pollfd pfd[3] = {{.fd = fd, .events = POLLOUT},
				{.fd = box_fd, .events = 0},
				{.fd = p->wake[0], .events = POLLIN}};
	int err = 0, prc;
	socklen_t len = sizeof(err);

	do {
		prc = poll(pfd, 3, PROXY_TUNNEL_CONNECT_MS);
	} while (prc < 0 && errno == EINTR);
	if (prc == 0)
		return -ETIMEDOUT;
	if (prc < 0)
		return -errno;
	if (!pfd[0].revents && (pfd[2].revents || pfd[1].revents))
		return -ECANCELED;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	return -err;
}

/* Resolves v->host on the host and connects to the first address that answers. */
static int egress_connect(struct proxy *p, int box_fd, struct egress_verdict *v, int *out)
{
	/* No AI_ADDRCONFIG: a host with only loopback must still resolve "localhost". */
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV},
			*res = NULL;
	char port[8];
	int rc = -EHOSTUNREACH, grc;

	snprintf(port, sizeof(port), "%u", v->port);
	grc = getaddrinfo(v->host, port, &hints, &res);
	if (grc != 0) {
		snprintf(v->reason_buf, sizeof(v->reason_buf), "cannot resolve host %s", v->host);
		deny(v, 502, v->reason_buf);
		return -EHOSTUNREACH;
	}
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (fd < 0) {
			rc = -errno;
			continue;
		}
		rc = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : -errno;
		if (rc == -EINPROGRESS)
			rc = wait_connected(p, fd, box_fd);
		if (rc == 0) {
			int one = 1;

			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			*out = fd;
			break;
		}
		close(fd);
		if (rc == -ECANCELED)
			break;
	}
	freeaddrinfo(res);
	if (rc == 0)
		return 0;
	if (rc == -ETIMEDOUT) {
		snprintf(v->reason_buf, sizeof(v->reason_buf), "timed out connecting to %s:%u",
			 v->host, v->port);
		deny(v, 504, v->reason_buf);
	} else if (rc == -ECANCELED) {
		deny(v, 0, "box closed the connection");
	} else {
		snprintf(v->reason_buf, sizeof(v->reason_buf), "cannot connect to %s:%u: %s",
			 v->host, v->port, strerror(-rc));
		deny(v, 502, v->reason_buf);
	}
	return rc;
}

/* ---- the tunnel ---------------------------------------------------------------------------- */

/* One direction: bytes read from `from`, not yet written to `to`. */
struct flow {
	int from, to;
	char buf[PROXY_IO_BUF];
	size_t off, len;
	bool eof;  /* `from` ended */
	bool shut; /* the end was passed on (shutdown of `to` for writing) */
	int64_t bytes;
};

/* Moves what it can without blocking. 0, or a negative errno that ends the tunnel; *bad is
 * then the descriptor that failed. */
static int flow_step(struct flow *f, int *bad)
{
	for (;;) {
		if (f->len > 0) {
			ssize_t n = send(f->to, f->buf + f->off, f->len, MSG_NOSIGNAL);

			if (n < 0 && errno != EAGAIN && errno != EINTR)
				*bad = f->to;
			if (n < 0)
				return errno == EAGAIN || errno == EINTR ? 0 : -errno;
			f->off += (size_t)n;
			f->len -= (size_t)n;
			f->bytes += n;
			if (f->len > 0)
				return 0;
		}
		if (f->eof) {
			if (!f->shut)
				shutdown(f->to, SHUT_WR);
			f->shut = true;
			return 0;
		}
		{
			ssize_t n = recv(f->from, f->buf, sizeof(f->buf), 0);

			if (n < 0 && errno != EAGAIN && errno != EINTR)
				*bad = f->from;
			if (n < 0)
				return errno == EAGAIN || errno == EINTR ? 0 : -errno;
			f->off = 0;
			f->len = (size_t)n;
			f->eof = n == 0;
		}
	}
}

/*
 * After the tunnel stopped: notices an end its source had already sent but the loop had not
 * read yet (it sits behind at most a little data nobody will receive any more).
 */
static void flow_notice_end(struct flow *f)
{
	char sink[4096];

	for (int i = 0; i < 64 && !f->eof; i++) {
		ssize_t n = recv(f->from, sink, sizeof(sink), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		f->eof = n == 0;
	}
}

static short flow_wants(const struct flow *f, int fd)
{
	short ev = 0;

	if (fd == f->from && f->len == 0 && !f->eof)
		ev |= POLLIN;
	if (fd == f->to && f->len > 0)
		ev |= POLLOUT;
	return ev;
}

/*
 * Why a tunnel that did not end in two clean ends ended. Once either side has closed, the
 * connection is being taken down: a reset then (a TLS close_notify arriving at a peer that
 * already closed, a box that exited with bytes unread, the proxy stopping because the box is
 * gone) is how many endpoints finish, and the tunnel did its job. A reset before either end is
 * a failure, named by the side that sent it; so is any other error.
 */
static const char *tunnel_end(struct flow *fu, struct flow *fd, int rc, int bad, int box,
			      const char *reason)
{
	/* Not from a descriptor that failed: its error is spent, and it would read as an end. */
	if (fu->from != bad)
		flow_notice_end(fu);
	if (fd->from != bad)
		flow_notice_end(fd);
	if ((fu->eof || fd->eof) && (rc == 0 || rc == -ECONNRESET || rc == -EPIPE))
		return "allowed";
	if (rc == -ECONNRESET || rc == -EPIPE)
		return bad == box ? "connection reset by the box"
				  : "connection reset by the upstream";
	if (rc < 0)
		return "tunnel I/O error";
	return reason;
}

/*
 * Copies between box and upstream until both directions ended, one failed, the tunnel was
 * idle for PROXY_TUNNEL_IDLE_MS or the proxy stops. Starts with what the box sent after its
 * request head (pre[0..npre)). Returns the reason it ended ("allowed": it ended as a
 * connection ends).
 */
static const char *tunnel(struct proxy *p, int box, int up, const char *pre, size_t npre,
			  int64_t *bytes_up, int64_t *bytes_down)
{
	struct flow *fu = calloc(1, sizeof(*fu)), *fd = calloc(1, sizeof(*fd));
	const char *reason = "allowed";
	int rc = 0, bad = -1;
	bool idle = false;

	if (!fu || !fd) {
		reason = "internal error";
		goto out;
	}
	*fu = (struct flow){.from = box, .to = up};
	*fd = (struct flow){.from = up, .to = box};
	fcntl(box, F_SETFL, fcntl(box, F_GETFL) | O_NONBLOCK);
	memcpy(fu->buf, pre, npre);
	fu->len = npre;
	for (;;) {
		struct pollfd pfd[3] = {
		    {.fd = box}, {.fd = up}, {.fd = p->wake[0], .events = POLLIN}};
		int prc;

		rc = flow_step(fu, &bad);
		rc = rc ?: flow_step(fd, &bad);
		if (rc < 0 || (fu->shut && fd->shut))
			break;
		pfd[0].events = flow_wants(fu, box) | flow_wants(fd, box);
		pfd[1].events = flow_wants(fu, up) | flow_wants(fd, up);
		/* Nothing wanted from an fd: leave it out, so a hang-up there cannot spin. */
		for (int i = 0; i < 2; i++)
			if (!pfd[i].events)
				pfd[i].fd = -1;
		do {
			prc = poll(pfd, 3, PROXY_TUNNEL_IDLE_MS);
		} while (prc < 0 && errno == EINTR);
		idle = prc == 0;
		if (idle) {
			reason = "tunnel idle for too long";
			break;
		}
		if (prc < 0 || pfd[2].revents) {
			reason = "proxy stopped";
			break;
		}
	}
	if (!(fu->shut && fd->shut) && !idle)
		reason = tunnel_end(fu, fd, rc, bad, box, reason);
out:
	*bytes_up = fu ? fu->bytes : 0;
	*bytes_down = fd ? fd->bytes : 0;
	free(fu);
	free(fd);
	return reason;
}

/* ---- a connection ---------------------------------------------------------------------- */

void proxy_egress_serve(struct proxy *p, int fd)
{
	struct proxy_conn *c = calloc(1, sizeof(*c));
	struct proxy_req *r = malloc(sizeof(*r));
	struct egress_verdict *v = calloc(1, sizeof(*v));
	struct timeval tv = {.tv_sec = PROXY_SEND_MS / 1000};
	struct proxy_record rec = {.egress = true};
	int up = -1;
	char none[1];

	if (!c || !r || !v)
		goto out;
	c->p = p;
	c->fd = fd;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	proxy_req_init(r);
	if (proxy_conn_read_head(c, r, true) != 0)
		goto out;
	rec.time_ns = util_now_ns();
	egress_check(p, r, v);
	/* CONNECT has no body: this consumes the head's last LF, so what follows is tunnel. */
	if (v->status == 0 && proxy_conn_read_body(c, r, none, sizeof(none)) != 0)
		deny(v, 400, "malformed request");
	/* Allowed: passed the policy (the upstream may still be unreachable). */
	rec.allowed = v->status == 0;
	if (rec.allowed && egress_connect(p, fd, v, &up) == 0) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		if (proxy_send_all(fd, ok, sizeof(ok) - 1) == 0) {
			rec.status = 200;
			rec.reason = tunnel(p, fd, up, c->in + c->in_off, c->in_len, &rec.bytes_up,
					    &rec.bytes_down);
		} else {
			rec.reason = "box closed the connection";
		}
	} else {
		rec.reason = v->reason;
		if (v->status && proxy_send_error(fd, v->status, v->reason) == 0)
			rec.status = v->status;
	}
	rec.method = r->target ? http_method_str((enum http_method)r->parser.method) : "";
	rec.path = "";
	rec.host = v->host[0] ? v->host : NULL;
	rec.port = v->port;
	rec.duration_ns = util_now_ns() - rec.time_ns;
	proxy_record_emit(p, &rec);
out:
	if (up >= 0)
		close(up);
	free(v);
	free(r);
	free(c);
}
