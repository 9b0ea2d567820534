/* util/buf.c: a growable byte string, always NUL-terminated (the parsers' string values). */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int util_buf_put(struct util_buf *b, const void *data, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char *s;

		while (cap < b->n + n + 1)
			cap *= 2;
		s = realloc(b->s, cap);
		if (!s)
			return util_err(-ENOMEM, "out of memory");
		b->s = s;
		b->cap = cap;
	}
	memcpy(b->s + b->n, data, n);
	b->n += n;
	b->s[b->n] = '\0';
	return 0;
}

int util_buf_put_utf8(struct util_buf *b, unsigned long cp)
{
	unsigned char u[4];
	size_t n;

	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -EINVAL;
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | (cp >> 6));
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | (cp >> 12));
		u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | (cp >> 18));
		u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return util_buf_put(b, u, n);
}
