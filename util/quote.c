/*
 * util/quote.c: box-chosen text (file names, argv, messages, ref names) on its way out of the
 * program. For people, as git shows a path with core.quotePath=false: unchanged when nothing
 * in it can move the cursor, break a line or hide bytes, else in double quotes with C escapes
 * (\n, \t, \", \\, \033 in octal) and every invalid UTF-8 byte in octal, so a name can never
 * print a row of its own or rewrite one on the reader's screen. Valid non-ASCII UTF-8 stays as
 * it is, except the code points that are controls too (C1 controls, bidirectional overrides,
 * line and paragraph separators): their bytes are written in octal. For programs, as JSON that
 * keeps every byte: a string, or {"hex": "..."} when the bytes are not UTF-8.
 */
#include "util/util.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s[0..n) and its code point; 0 when not valid. */
static size_t utf8_one(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[k] & 0x3f);
	}
	if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Code points a terminal acts on or that reorder or break what is around them. */
static bool cp_is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/*
 * Where s[0..n) needs an escape: *len bytes of it (1 for an invalid byte) are escaped when
 * the result is true, else copied.
 */
static bool needs_escape(const unsigned char *s, size_t n, bool quotes, size_t *len)
{
	uint32_t cp = 0;

	*len = utf8_one(s, n, &cp);
	if (*len == 0) {
		*len = 1;
		return true;
	}
	return cp_is_control(cp) || (quotes && (cp == '"' || cp == '\\'));
}

bool util_quote_needed(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;

	for (size_t i = 0; i < n; i += len)
		if (needs_escape(u + i, n - i, true, &len))
			return true;
	return false;
}

/* The escape of one byte: \n and the like, or three octal digits. */
static int put_escape(struct util_buf *b, unsigned char c, bool shell)
{
	static const char letters[] = "\a\b\t\n\v\f\r\"\\'";
	static const char names[] = "abtnvfr\"\\'";
	const char *hit = c ? strchr(letters, c) : NULL;
	char esc[5];

	if (hit && (shell || c != '\'')) {
		esc[0] = '\\';
		esc[1] = names[hit - letters];
		return util_buf_put(b, esc, 2);
	}
	esc[0] = '\\';
	esc[1] = (char)('0' + (c >> 6));
	esc[2] = (char)('0' + ((c >> 3) & 7));
	esc[3] = (char)('0' + (c & 7));
	return util_buf_put(b, esc, 4);
}

/* Every byte of s[0..n) into b, escaped where needed (quotes: '"' and '\\' too). */
static int put_escaped(struct util_buf *b, const char *s, size_t n, bool quotes, bool shell)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i += len) {
		if (shell && u[i] == '\'') {
			len = 1;
			rc = put_escape(b, u[i], true);
		} else if (needs_escape(u + i, n - i, quotes, &len)) {
			for (size_t k = 0; rc == 0 && k < len; k++)
				rc = put_escape(b, u[i + k], shell);
		} else {
			rc = util_buf_put(b, u + i, len);
		}
	}
	return rc;
}

/* b's string, or NULL (and b freed) when rc says a put failed. */
static char *finish(struct util_buf *b, int rc)
{
	if (rc == 0 && !b->s)
		rc = util_buf_put(b, "", 0);
	if (rc < 0) {
		free(b->s);
		return NULL;
	}
	return b->s;
}

char *util_quoten(const char *s, size_t n)
{
	struct util_buf b = {0};
	int rc;

	if (!util_quote_needed(s, n))
		return finish(&b, util_buf_put(&b, s, n));
	rc = util_buf_put(&b, "\"", 1);
	if (rc == 0)
		rc = put_escaped(&b, s, n, true, false);
	if (rc == 0)
		rc = util_buf_put(&b, "\"", 1);
	return finish(&b, rc);
}

char *util_quote(const char *s)
{
	return util_quoten(s, strlen(s));
}

char *util_quote_text(const char *s)
{
	struct util_buf b = {0};

	return finish(&b, put_escaped(&b, s, strlen(s), false, false));
}

char *util_quote_shell(const char *s)
{
	size_t n = strlen(s), len;
	struct util_buf b = {0};
	int rc;

	for (size_t i = 0; i < n; i += len)
		if (needs_escape((const unsigned char *)s + i, n - i, false, &len))
			goto escape;
	return util_shell_quote(s);
escape:
	rc = util_buf_put(&b, "$'", 2);
	if (rc == 0)
		rc = put_escaped(&b, s, n, true, true);
	if (rc == 0)
		rc = util_buf_put(&b, "'", 1);
	return finish(&b, rc);
}

/* The byte the escape after a backslash at q[0..] stands for; *len: its length; -1: none. */
static int unescape_one(const char *q, size_t *len)
{
	static const char names[] = "abtnvfr\"\\";
	static const char letters[] = "\a\b\t\n\v\f\r\"\\";
	const char *hit = *q ? strchr(names, *q) : NULL;
	int v = 0;

	if (hit) {
		*len = 1;
		return (unsigned char)letters[hit - names];
	}
	for (int k = 0; k < 3; k++) {
		if (q[k] < '0' || q[k] > '7')
			return -1;
		v = v * 8 + (q[k] - '0');
	}
	*len = 3;
	return v <= 0377 ? v : -1;
}

int util_unquote(const char *q, char **out, size_t *n)
{
	struct util_buf b = {0};
	size_t i = 1, len;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (*q != '"') {
		i = strlen(q); /* not quoted: the text itself */
		rc = util_buf_put(&b, q, i);
		goto out;
	}
	while (rc == 0 && q[i] != '"') {
		int c = (unsigned char)q[i];

		len = 1;
		if (c == '\0') {
			rc = -EINVAL;
			break;
		}
		if (c == '\\') {
			c = unescape_one(q + i + 1, &len);
			len++;
		}
		rc = c < 0 ? -EINVAL : util_buf_put(&b, &(char){(char)c}, 1);
		i += len;
	}
	/* Exactly one quoted string: nothing after the closing quote. */
	if (rc == 0 && q[i + 1] != '\0')
		rc = -EINVAL;
out:
	if (!(*out = finish(&b, rc)))
		return rc < 0 ? rc : -ENOMEM;
	*n = b.n;
	return 0;
}

json_t *util_json_bytes(const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = s ? strlen(s) : 0;
	json_t *j;
	char *hex;

	if (!s)
		return json_null();
	if (util_utf8_valid(s, n))
		return json_stringn(s, n);
	hex = malloc(2 * n + 1);
	if (!hex)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[(unsigned char)s[i] >> 4];
		hex[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	hex[2 * n] = '\0';
	j = json_pack("{s:s}", "hex", hex);
	free(hex);
	return j;
}
