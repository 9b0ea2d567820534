/*
 * proxy/redact.c: keeps the real credential out of what the box receives. An upstream that
 * echoes the key (in an error body, a header) has every occurrence replaced by '*' of the
 * same length, so Content-Length stays true; a login's account id is replaced the same way
 * by the box's placeholder for it, which has its length. Streaming: only a tail that could be the
 * start of the key is held back, so event streams are not delayed.
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void proxy_redact_init(struct proxy_redact *rd, const char *secret, const char *repl)
{
	memset(rd, 0, sizeof(*rd));
	rd->secret = secret;
	rd->len = secret ? strlen(secret) : 0;
	rd->repl = repl && strlen(repl) == rd->len ? repl : NULL;
	if (rd->len > sizeof(rd->held))
		rd->len = 0; /* cannot happen: credentials are checked at load */
}

void proxy_redact_free(struct proxy_redact *rd)
{
	if (rd->scratch)
		explicit_bzero(rd->scratch, rd->cap);
	free(rd->scratch);
	rd->scratch = NULL;
	rd->cap = 0;
}

static void redact_all(const char *secret, const char *repl, size_t len, char *buf, size_t n)
{
	char *p = buf, *end = buf + n;

	while (len && (size_t)(end - p) >= len) {
		char *hit = memmem(p, (size_t)(end - p), secret, len);

		if (!hit)
			break;
		if (repl)
			memcpy(hit, repl, len);
		else
			memset(hit, '*', len);
		p = hit + len;
	}
}

void proxy_redact_buf(const char *secret, const char *repl, char *buf, size_t n)
{
	size_t len = secret ? strlen(secret) : 0;

	redact_all(secret, repl && strlen(repl) == len ? repl : NULL, len, buf, n);
}

/* The longest proper prefix of the secret that ends buf[0..n). */
static size_t partial_tail(const struct proxy_redact *rd, const char *buf, size_t n)
{
	size_t k = rd->len - 1 < n ? rd->len - 1 : n;

	for (; k > 0; k--)
		if (buf[n - k] == rd->secret[0] && memcmp(buf + n - k, rd->secret, k) == 0)
			return k;
	return 0;
}

int proxy_redact_feed(struct proxy_redact *rd, const char *in, size_t n, bool final,
		      int (*emit)(void *ctx, const char *d, size_t n), void *ctx)
{
	size_t total = rd->n_held + n, keep;
	int rc;

	if (rd->len == 0)
		return n ? emit(ctx, in, n) : 0;
	if (total == 0)
		return 0;
	if (total > rd->cap) {
		char *s = realloc(rd->scratch, total);

		if (!s)
			return -ENOMEM;
		rd->scratch = s;
		rd->cap = total;
	}
	memcpy(rd->scratch, rd->held, rd->n_held);
	if (n)
		memcpy(rd->scratch + rd->n_held, in, n);
	redact_all(rd->secret, rd->repl, rd->len, rd->scratch, total);
	keep = final ? 0 : partial_tail(rd, rd->scratch, total);
	rc = total - keep ? emit(ctx, rd->scratch, total - keep) : 0;
	memcpy(rd->held, rd->scratch + total - keep, keep);
	rd->n_held = keep;
	return rc;
}
