/*
 * proxy/reqparse.c: request heads and bodies from the box, parsed by http-parser (strict
 * mode). Header names and values are collected into a fixed arena; anything that does not fit
 * is refused (431), never truncated. The parser pauses when the head and when the message is
 * complete, so body bytes and a pipelined next request stay in the connection's buffer.
 *
 * Debian builds http-parser with HTTP_PARSER_STRICT=0, which lets "Name :" and spaces in names
 * through; header names are therefore checked here to be RFC 9110 tokens and values to hold
 * no control characters but HTAB, so "Transfer-Encoding :" can never reach the upstream.
 */
#include "proxy/proxy_internal.h"

#include <string.h>
#include <strings.h>

static struct proxy_req *req_of(http_parser *hp)
{
	return hp->data;
}

static int req_bad(struct proxy_req *r, int status, const char *reason)
{
	if (!r->bad) {
		r->bad = reason;
		r->bad_status = status;
	}
	return -1;
}

/* Ends the piece being collected (NUL already written after it). */
static void piece_end(struct proxy_req *r)
{
	r->arena_len++;
}

static int piece_append(struct proxy_req *r, const char *at, size_t len, size_t limit)
{
	if (r->arena_len + len + 1 > limit)
		return -1;
	memcpy(r->arena + r->arena_len, at, len);
	r->arena_len += len;
	r->arena[r->arena_len] = '\0';
	return 0;
}

static int on_url(http_parser *hp, const char *at, size_t len)
{
	struct proxy_req *r = req_of(hp);

	if (r->last_cb != 1)
		r->target = r->arena + r->arena_len;
	r->last_cb = 1;
	if ((size_t)(r->arena + r->arena_len - r->target) + len > PROXY_TARGET_MAX ||
	    piece_append(r, at, len, PROXY_HEAD_MAX) < 0)
		return req_bad(r, 414, "request target too long");
	return 0;
}

static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
	struct proxy_req *r = req_of(hp);

	for (size_t i = 0; i < len; i++)
		if (!is_tchar((unsigned char)at[i]))
			return req_bad(r, 400, "malformed request: invalid header name");

	if (r->last_cb != 2) {
		if (r->last_cb != 0)
			piece_end(r);
		if (r->n_hdrs >= PROXY_HEADERS_MAX)
			return req_bad(r, 431, "too many request headers");
		r->hdrs[r->n_hdrs].name = r->arena + r->arena_len;
		r->hdrs[r->n_hdrs].value = "";
		r->n_hdrs++;
	}
	r->last_cb = 2;
	if (piece_append(r, at, len, PROXY_HEAD_MAX) < 0)
		return req_bad(r, 431, "request headers too large");
	return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
	struct proxy_req *r = req_of(hp);

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)at[i] < 0x20 && at[i] != '\t') || at[i] == 0x7f)
			return req_bad(r, 400, "malformed request: invalid header value");

	if (r->last_cb != 3) {
		if (r->last_cb != 2)
			return req_bad(r, 400, "malformed request: header value without a name");
		piece_end(r);
		r->hdrs[r->n_hdrs - 1].value = r->arena + r->arena_len;
		r->arena[r->arena_len] = '\0';
	}
	r->last_cb = 3;
	if (piece_append(r, at, len, PROXY_HEAD_MAX) < 0)
		return req_bad(r, 431, "request headers too large");
	return 0;
}

static int on_headers_complete(http_parser *hp)
{
	struct proxy_req *r = req_of(hp);

	if (r->last_cb != 0)
		piece_end(r);
	r->last_cb = 4;
	r->headers_done = true;
	r->keep_alive = http_should_keep_alive(hp) != 0;
	r->chunked = (hp->flags & F_CHUNKED) != 0;
	r->has_cl = (hp->flags & F_CONTENTLENGTH) != 0;
	r->content_length = r->has_cl ? hp->content_length : 0;
	http_parser_pause(hp, 1);
	return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
	struct proxy_req *r = req_of(hp);

	/* req_feed_body never feeds more bytes than fit; this guards the invariant. */
	if (!r->body_dst || len > r->body_cap - r->body_len)
		return req_bad(r, 500, "internal error");
	memcpy(r->body_dst + r->body_len, at, len);
	r->body_len += len;
	return 0;
}

static int on_message_complete(http_parser *hp)
{
	struct proxy_req *r = req_of(hp);

	r->message_done = true;
	http_parser_pause(hp, 1);
	return 0;
}

void proxy_req_init(struct proxy_req *r)
{
	memset(r, 0, offsetof(struct proxy_req, arena));
	r->arena[0] = '\0';
	http_parser_init(&r->parser, HTTP_REQUEST);
	r->parser.data = r;
	http_parser_settings_init(&r->settings);
	r->settings.on_url = on_url;
	r->settings.on_header_field = on_header_field;
	r->settings.on_header_value = on_header_value;
	r->settings.on_headers_complete = on_headers_complete;
	r->settings.on_body = on_body;
	r->settings.on_message_complete = on_message_complete;
}

static void req_parse_error(struct proxy_req *r)
{
	enum http_errno e = HTTP_PARSER_ERRNO(&r->parser);
	int n_cl = 0, n_te = 0;

	if (r->bad)
		return;
	proxy_req_header(r, "content-length", &n_cl);
	proxy_req_header(r, "transfer-encoding", &n_te);
	switch (e) {
	case HPE_HEADER_OVERFLOW:
		req_bad(r, 431, "request headers too large");
		break;
	case HPE_UNEXPECTED_CONTENT_LENGTH:
		req_bad(r, 400,
			n_te ? "conflicting Content-Length and Transfer-Encoding"
			     : "more than one Content-Length");
		break;
	case HPE_INVALID_TRANSFER_ENCODING:
		req_bad(r, 501, "unsupported Transfer-Encoding");
		break;
	case HPE_INVALID_CONTENT_LENGTH:
		req_bad(r, 400,
			n_cl > 1 ? "more than one Content-Length" : "invalid Content-Length");
		break;
	case HPE_INVALID_METHOD:
		req_bad(r, 405, "method not allowed");
		break;
	case HPE_INVALID_VERSION:
		req_bad(r, 505, "HTTP version not supported");
		break;
	case HPE_INVALID_CHUNK_SIZE:
		req_bad(r, 400, "malformed chunked body");
		break;
	default:
		req_bad(r, 400, "malformed request");
		break;
	}
}

ssize_t proxy_req_feed(struct proxy_req *r, const char *buf, size_t len)
{
	bool was_done = r->headers_done;
	size_t used;

	if (r->bad)
		return -1;
	if (HTTP_PARSER_ERRNO(&r->parser) == HPE_PAUSED)
		http_parser_pause(&r->parser, 0);
	if (r->message_done || len == 0)
		return 0;
	used = http_parser_execute(&r->parser, &r->settings, buf, len);
	if (!was_done) {
		r->head_bytes += used;
		if (r->head_bytes > PROXY_HEAD_MAX)
			return req_bad(r, 431, "request headers too large");
	}
	if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK &&
	    HTTP_PARSER_ERRNO(&r->parser) != HPE_PAUSED) {
		req_parse_error(r);
		return -1;
	}
	/* An upgrade (or CONNECT) stops the parser after the head; the policy refuses it. */
	return (ssize_t)used;
}

const char *proxy_req_header(const struct proxy_req *r, const char *name, int *count)
{
	const char *found = NULL;
	int n = 0;

	for (size_t i = 0; i < r->n_hdrs; i++) {
		if (strcasecmp(r->hdrs[i].name, name) == 0) {
			if (!found)
				found = r->hdrs[i].value;
			n++;
		}
	}
	if (count)
		*count = n;
	return found;
}
