/* util/str.c: string helpers. */
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *util_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *out = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&out, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : out;
}

char *util_path_join(const char *a, const char *b)
{
	size_t la = strlen(a);

	if (la > 0 && a[la - 1] == '/')
		return util_asprintf("%s%s", a, b);
	return util_asprintf("%s/%s", a, b);
}

bool util_str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
bool util_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (i + n >= len)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

char *util_shell_quote(const char *s)
{
	size_t n = strlen(s), quotes = 0;
	char *out, *o;

	if (n && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			   "_-./:=,+@%") == n)
		return strdup(s);
	for (const char *c = s; *c; c++)
		quotes += *c == '\'';
	o = out = malloc(n + 3 * quotes + 3);
	if (!out)
		return NULL;
	*o++ = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *s;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}
