/*
 * util/argv_json.c: a session's argv as the audit keeps it (a JSON array of strings written
 * with every byte of each argument, so not always UTF-8: jansson would refuse it) back into
 * its words, every byte kept.
 */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int hex4(const char *s, unsigned long *cp)
{
	char *end;
	char h[5];

	memcpy(h, s, 4);
	h[4] = '\0';
	*cp = strtoul(h, &end, 16);
	return *end || strspn(h, "0123456789abcdefABCDEF") != 4 ? -EINVAL : 0;
}

/* One string at *p (just past its opening quote) into b; *p ends past the closing quote. */
static int read_string(const char **p, struct util_buf *b)
{
	static const char names[] = "\"\\/bfnrt", letters[] = "\"\\/\b\f\n\r\t";
	const char *s = *p;
	int rc = 0;

	while (rc == 0 && *s && *s != '"') {
		const char *hit;
		unsigned long cp;

		if (*s != '\\') {
			rc = util_buf_put(b, s++, 1); /* any byte, UTF-8 or not */
		} else if (s[1] && (hit = strchr(names, s[1]))) {
			rc = util_buf_put(b, &letters[hit - names], 1);
			s += 2;
		} else if (s[1] == 'u' && strlen(s) >= 6 && hex4(s + 2, &cp) == 0) {
			rc = util_buf_put_utf8(b, cp);
			s += 6;
		} else {
			rc = -EINVAL;
		}
	}
	if (rc == 0 && *s != '"')
		rc = -EINVAL;
	if (rc == 0 && !b->s)
		rc = util_buf_put(b, "", 0);
	*p = s + 1;
	return rc;
}

char **util_argv_words(const char *argv_json)
{
	const char *p = argv_json;
	char **v = NULL;
	size_t n = 0;
	int rc = 0;

	if (!p || *p++ != '[')
		return NULL;
	while (rc == 0 && *p == '"') {
		struct util_buf b = {0};
		char **x = realloc(v, (n + 2) * sizeof(*v));

		p++;
		rc = x ? read_string(&p, &b) : -ENOMEM;
		if (x)
			v = x;
		if (rc == 0) {
			v[n++] = b.s;
			v[n] = NULL;
			p += *p == ',';
		} else {
			free(b.s);
		}
	}
	if (rc == 0 && strcmp(p, "]") != 0)
		rc = -EINVAL;
	if (rc < 0 || !v) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return rc < 0 ? NULL : calloc(1, sizeof(char *));
	}
	return v;
}

void util_words_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}
