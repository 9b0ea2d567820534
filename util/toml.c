/*
 * util/toml.c: a TOML 1.0 document read into a JSON object (jansson), for configuration files
 * other programs own (Codex's config.toml). Tables and arrays of tables become objects and
 * arrays, strings strings, integers and floats numbers, booleans booleans, and dates, times,
 * inf and nan (which JSON lacks) the string as written. Keys may be bare, quoted or dotted. Being a
 * reader of other programs' files, it is lenient where TOML 1.1 relaxed the rules (newlines and a
 * trailing comma in inline tables, \e and \xHH escapes) and strict where a wrong answer could
 * follow (a key defined twice, a table over a value). No C TOML library is packaged for Debian 12.
 */
#include "util/util.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOML_MAX_DEPTH 64

struct tp {
	const char *name;
	const char *p, *end;
	unsigned line;
	const char *line_start;
	json_t *root, *cur; /* the document and the table the last header opened */
	int depth;
};

static int fail(const struct tp *t, const char *fmt, ...) ARB_PRINTF(2, 3);

static int fail(const struct tp *t, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return util_err(-EINVAL, "%s:%u:%zu: %s", t->name, t->line,
			(size_t)(t->p - t->line_start) + 1, msg);
}

/* The code point cp as UTF-8 into b; not a Unicode scalar value is a syntax error. */
static int sb_codepoint(struct tp *t, struct util_buf *b, unsigned long cp)
{
	int rc = util_buf_put_utf8(b, cp);

	return rc == -EINVAL ? fail(t, "escape is not a Unicode scalar value") : rc;
}

static bool at(const struct tp *t, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(t->end - t->p) >= n && memcmp(t->p, s, n) == 0;
}

static void newline_seen(struct tp *t)
{
	t->line++;
	t->line_start = t->p;
}

static void skip_ws(struct tp *t)
{
	while (t->p < t->end && (*t->p == ' ' || *t->p == '\t'))
		t->p++;
}

/* A comment runs to the end of its line; control characters other than tab are refused. */
static int skip_comment(struct tp *t)
{
	if (t->p >= t->end || *t->p != '#')
		return 0;
	for (; t->p < t->end && *t->p != '\n'; t->p++)
		if (((unsigned char)*t->p < 0x20 && *t->p != '\t' && *t->p != '\r') ||
		    *t->p == 0x7F)
			return fail(t, "control character in a comment");
	return 0;
}

static bool take_newline(struct tp *t)
{
	if (at(t, "\r\n"))
		t->p++;
	if (t->p < t->end && *t->p == '\n') {
		t->p++;
		newline_seen(t);
		return true;
	}
	return false;
}

/* Whitespace, comments and newlines (inside arrays and, leniently, inline tables). */
static int skip_ws_nl(struct tp *t)
{
	for (;;) {
		skip_ws(t);
		if (skip_comment(t) < 0)
			return -EINVAL;
		if (!take_newline(t))
			return 0;
	}
}

/* After a key/value pair or a header: only a comment, then a newline or the end. */
static int end_of_line(struct tp *t)
{
	skip_ws(t);
	if (skip_comment(t) < 0)
		return -EINVAL;
	if (t->p >= t->end || take_newline(t))
		return 0;
	return fail(t, "expected the end of the line");
}

static int hex_escape(struct tp *t, struct util_buf *b, int digits)
{
	unsigned long cp = 0;

	for (int i = 0; i < digits; i++, t->p++) {
		char c = t->p < t->end ? *t->p : 0;
		int v = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (v < 0)
			return fail(t, "bad hexadecimal digit in an escape");
		cp = cp * 16 + (unsigned long)v;
	}
	return sb_codepoint(t, b, cp);
}

static int escape(struct tp *t, struct util_buf *b)
{
	char c;

	if (++t->p >= t->end)
		return fail(t, "unterminated string");
	c = *t->p++;
	switch (c) {
	case 'b':
		return util_buf_put(b, "\b", 1);
	case 't':
		return util_buf_put(b, "\t", 1);
	case 'n':
		return util_buf_put(b, "\n", 1);
	case 'f':
		return util_buf_put(b, "\f", 1);
	case 'r':
		return util_buf_put(b, "\r", 1);
	case 'e':
		return util_buf_put(b, "\x1b", 1);
	case '"':
		return util_buf_put(b, "\"", 1);
	case '\\':
		return util_buf_put(b, "\\", 1);
	case 'x':
		return hex_escape(t, b, 2);
	case 'u':
		return hex_escape(t, b, 4);
	case 'U':
		return hex_escape(t, b, 8);
	default:
		t->p--;
		return fail(t, "unknown escape \\%c", c);
	}
}

/* The byte at t->p may go into a string as it is (tab and, in multi-line, newlines aside). */
static bool plain_char(char c)
{
	return !((unsigned char)c < 0x20 || c == 0x7F);
}

/*
 * A string of any of the four kinds at t->p, into *out (owned). Its bytes are checked to be
 * UTF-8 by the caller's json_stringn.
 */
static int parse_string(struct tp *t, struct util_buf *b)
{
	bool literal = *t->p == '\'';
	const char *q = literal ? "'" : "\"";
	bool multi = at(t, literal ? "'''" : "\"\"\"");
	int rc;

	b->n = 0;
	if ((rc = util_buf_put(b, "", 0)) < 0)
		return rc;
	t->p += multi ? 3 : 1;
	if (multi)
		take_newline(t); /* a newline right after the opening is trimmed */
	for (;;) {
		if (t->p >= t->end)
			return fail(t, "unterminated string");
		if (multi && at(t, literal ? "'''" : "\"\"\"")) {
			/* Up to two quotes may end the content right before the closing three. */
			int extra = 0;

			while (extra < 2 && t->p + 3 + extra < t->end && t->p[3 + extra] == *q)
				extra++;
			if ((rc = util_buf_put(b, t->p, (size_t)extra)) < 0)
				return rc;
			t->p += 3 + extra;
			return 0;
		}
		if (!multi && *t->p == *q) {
			t->p++;
			return 0;
		}
		if (!literal && *t->p == '\\') {
			const char *s = t->p + 1;

			/* A line-ending backslash trims the newline and the whitespace after. */
			while (multi && s < t->end && (*s == ' ' || *s == '\t'))
				s++;
			if (multi && s < t->end &&
			    (*s == '\n' || (*s == '\r' && s + 1 < t->end && s[1] == '\n'))) {
				t->p = s;
				while (t->p < t->end) {
					skip_ws(t);
					if (!take_newline(t))
						break;
				}
				continue;
			}
			if ((rc = escape(t, b)) < 0)
				return rc;
			continue;
		}
		if (multi && (*t->p == '\n' || at(t, "\r\n"))) {
			rc = util_buf_put(b, "\n", 1);
			take_newline(t);
			if (rc < 0)
				return rc;
			continue;
		}
		if (!plain_char(*t->p) && *t->p != '\t')
			return fail(t, "control character in a string");
		if ((rc = util_buf_put(b, t->p, 1)) < 0)
			return rc;
		t->p++;
	}
}

static bool bare_key_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* One key part (bare or quoted) into b. */
static int parse_key_part(struct tp *t, struct util_buf *b)
{
	const char *s = t->p;
	int rc;

	if (t->p < t->end && (*t->p == '"' || *t->p == '\'')) {
		if (at(t, "\"\"\"") || at(t, "'''"))
			return fail(t, "a multi-line string cannot be a key");
		if ((rc = parse_string(t, b)) < 0)
			return rc;
		if (strlen(b->s) != b->n || !util_utf8_valid(b->s, b->n))
			return fail(t, "key is not valid UTF-8 or holds a NUL");
		return 0;
	}
	while (t->p < t->end && bare_key_char(*t->p))
		t->p++;
	if (t->p == s)
		return fail(t, "expected a key");
	b->n = 0;
	return util_buf_put(b, s, (size_t)(t->p - s));
}

/*
 * A dotted key: walks (creating tables) from *tbl through all but the last part, which is
 * left in last. `header` relaxes the rule that walked-through tables be plain tables: a
 * header may pass through an array of tables (its last element).
 */
static int parse_key(struct tp *t, json_t **tbl, struct util_buf *last, bool header)
{
	int rc;

	for (;;) {
		skip_ws(t);
		if ((rc = parse_key_part(t, last)) < 0)
			return rc;
		skip_ws(t);
		if (t->p >= t->end || *t->p != '.')
			return 0;
		t->p++;
		json_t *next = json_object_get(*tbl, last->s);

		if (!next) {
			next = json_object();
			if (!next || json_object_set_new(*tbl, last->s, next) < 0)
				return util_err(-ENOMEM, "out of memory");
		} else if (header && json_is_array(next) && json_array_size(next) &&
			   json_is_object(json_array_get(next, json_array_size(next) - 1))) {
			next = json_array_get(next, json_array_size(next) - 1);
		} else if (!json_is_object(next)) {
			return fail(t, "key '%s' is already a value, not a table", last->s);
		}
		*tbl = next;
	}
}

static int parse_value(struct tp *t, json_t **out);

static int parse_array(struct tp *t, json_t **out)
{
	json_t *a = json_array();
	int rc = a ? 0 : util_err(-ENOMEM, "out of memory");

	t->p++; /* [ */
	while (rc == 0) {
		json_t *v = NULL;

		if ((rc = skip_ws_nl(t)) < 0)
			break;
		if (t->p < t->end && *t->p == ']') {
			t->p++;
			*out = a;
			return 0;
		}
		if ((rc = parse_value(t, &v)) < 0)
			break;
		if (json_array_append_new(a, v) < 0) {
			rc = util_err(-ENOMEM, "out of memory");
			break;
		}
		if ((rc = skip_ws_nl(t)) < 0)
			break;
		if (t->p < t->end && *t->p == ',')
			t->p++;
		else if (t->p >= t->end || *t->p != ']')
			rc = fail(t, "expected ',' or ']' in an array");
	}
	json_decref(a);
	return rc;
}

static int set_value(struct tp *t, json_t *tbl, const char *key, json_t *v)
{
	if (json_object_get(tbl, key)) {
		json_decref(v);
		return fail(t, "key '%s' is defined twice", key);
	}
	if (json_object_set_new(tbl, key, v) < 0)
		return util_err(-ENOMEM, "out of memory");
	return 0;
}

/* key = value at t->p, into table tbl. */
static int parse_pair(struct tp *t, json_t *tbl)
{
	struct util_buf key = {0};
	json_t *v = NULL;
	int rc = parse_key(t, &tbl, &key, false);

	if (rc < 0)
		goto out;
	skip_ws(t);
	if (t->p >= t->end || *t->p != '=') {
		rc = fail(t, "expected '=' after key '%s'", key.s);
		goto out;
	}
	t->p++;
	skip_ws(t);
	if ((rc = parse_value(t, &v)) < 0)
		goto out;
	rc = set_value(t, tbl, key.s, v);
out:
	free(key.s);
	return rc;
}

static int parse_inline_table(struct tp *t, json_t **out)
{
	json_t *o = json_object();
	int rc = o ? 0 : util_err(-ENOMEM, "out of memory");

	t->p++; /* { */
	while (rc == 0) {
		if ((rc = skip_ws_nl(t)) < 0)
			break;
		if (t->p < t->end && *t->p == '}') {
			t->p++;
			*out = o;
			return 0;
		}
		if ((rc = parse_pair(t, o)) < 0)
			break;
		if ((rc = skip_ws_nl(t)) < 0)
			break;
		if (t->p < t->end && *t->p == ',')
			t->p++;
		else if (t->p >= t->end || *t->p != '}')
			rc = fail(t, "expected ',' or '}' in an inline table");
	}
	json_decref(o);
	return rc;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Integers (decimal, 0x, 0o, 0b, with '_' between digits), floats, inf and nan. */
static int number(struct tp *t, const char *s, size_t n, json_t **out)
{
	char buf[128], *end;
	size_t k = 0;
	int base = 10;
	bool flt = false;

	if (n >= sizeof(buf))
		return fail(t, "number too long");
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '_') {
			if (i == 0 || i + 1 == n || !bare_key_char(s[i - 1]) || s[i - 1] == '_' ||
			    s[i + 1] == '_')
				return fail(t, "misplaced '_' in a number");
			continue;
		}
		buf[k++] = s[i];
	}
	buf[k] = '\0';
	const char *d = buf + (buf[0] == '+' || buf[0] == '-');

	/* JSON has no infinity or NaN (jansson refuses them): they stay text, as written. */
	if (!strcmp(d, "inf") || !strcmp(d, "nan")) {
		*out = json_string(buf);
		return *out ? 0 : util_err(-ENOMEM, "out of memory");
	}
	if (d[0] == '0' && (d[1] == 'x' || d[1] == 'o' || d[1] == 'b')) {
		if (d != buf)
			return fail(t, "a sign before a %s number",
				    d[1] == 'x' ? "hex" : "prefixed");
		base = d[1] == 'x' ? 16 : d[1] == 'o' ? 8 : 2;
		d += 2;
	} else {
		flt = strpbrk(d, ".eE") != NULL;
		if (!is_digit(d[0]) || (d[0] == '0' && is_digit(d[1])))
			return fail(t, "bad number '%.*s'", (int)n, s);
	}
	if (!*d || *d == '+' || *d == '-')
		return fail(t, "bad number '%.*s'", (int)n, s);
	errno = 0;
	if (flt) {
		double v = strtod(buf, &end);

		*out = *end || errno ? NULL : json_real(v);
	} else {
		long long v = strtoll(base == 10 ? buf : d, &end, base);

		*out = *end || errno ? NULL : json_integer(v);
	}
	return *out ? 0 : fail(t, "bad number '%.*s'", (int)n, s);
}

/* A date, a time or both (YYYY-MM-DD, HH:MM:SS, a 'T' or a space between): kept as text. */
static bool date_like(const char *s, size_t n)
{
	return (n >= 10 && is_digit(s[0]) && is_digit(s[3]) && s[4] == '-' && s[7] == '-') ||
	       (n >= 5 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':');
}

/* A bare value: a boolean, a number, a date or a time. */
static int bare_value(struct tp *t, json_t **out)
{
	const char *s = t->p;
	size_t n;

	while (t->p < t->end && (bare_key_char(*t->p) || strchr("+.:", *t->p)))
		t->p++;
	n = (size_t)(t->p - s);
	/* "1979-05-27 07:32:00": a space between a date and a time. */
	if (n == 10 && date_like(s, n) && t->p + 2 < t->end && *t->p == ' ' && is_digit(t->p[1])) {
		for (t->p++; t->p < t->end && (bare_key_char(*t->p) || strchr("+.:", *t->p));)
			t->p++;
		n = (size_t)(t->p - s);
	}
	if (n == 0)
		return fail(t, "expected a value");
	if (n == 4 && !memcmp(s, "true", 4))
		*out = json_true();
	else if (n == 5 && !memcmp(s, "false", 5))
		*out = json_false();
	else if (date_like(s, n))
		*out = json_stringn(s, n);
	else
		return number(t, s, n, out);
	return *out ? 0 : util_err(-ENOMEM, "out of memory");
}

static int parse_value(struct tp *t, json_t **out)
{
	struct util_buf b = {0};
	int rc;

	if (t->p >= t->end || *t->p == '\n' || *t->p == '#')
		return fail(t, "expected a value");
	if (++t->depth > TOML_MAX_DEPTH) {
		t->depth--;
		return fail(t, "values nested too deep");
	}
	switch (*t->p) {
	case '"':
	case '\'':
		rc = parse_string(t, &b);
		if (rc == 0) {
			*out = json_stringn(b.s, b.n);
			rc = *out ? 0 : fail(t, "string is not valid UTF-8");
		}
		free(b.s);
		break;
	case '[':
		rc = parse_array(t, out);
		break;
	case '{':
		rc = parse_inline_table(t, out);
		break;
	default:
		rc = bare_value(t, out);
	}
	t->depth--;
	return rc;
}

/* [a.b] or [[a.b]] at t->p: makes t->cur the table it names. */
static int parse_header(struct tp *t)
{
	bool array = at(t, "[[");
	json_t *tbl = t->root, *v;
	struct util_buf key = {0};
	int rc;

	t->p += array ? 2 : 1;
	if ((rc = parse_key(t, &tbl, &key, true)) < 0)
		goto out;
	skip_ws(t);
	if (!at(t, array ? "]]" : "]")) {
		rc = fail(t, "expected '%s' to close the table header", array ? "]]" : "]");
		goto out;
	}
	t->p += array ? 2 : 1;
	v = json_object_get(tbl, key.s);
	if (array) {
		json_t *o = json_object();

		if (!v) {
			v = json_array();
			if (!v || json_object_set_new(tbl, key.s, v) < 0)
				v = NULL;
		} else if (!json_is_array(v)) {
			v = NULL;
			rc = fail(t, "key '%s' is already a value, not an array of tables", key.s);
		}
		if (rc == 0 && (!o || !v || json_array_append(v, o) < 0))
			rc = util_err(-ENOMEM, "out of memory");
		t->cur = o;
		json_decref(o);
	} else if (!v) {
		v = json_object();
		rc = v && json_object_set_new(tbl, key.s, v) == 0
			 ? 0
			 : util_err(-ENOMEM, "out of memory");
		t->cur = v;
	} else if (json_is_object(v)) {
		t->cur = v; /* defined implicitly by a dotted header before, or again */
	} else {
		rc = fail(t, "key '%s' is already a value, not a table", key.s);
	}
	if (rc == 0)
		rc = end_of_line(t);
out:
	free(key.s);
	return rc;
}

int util_toml_parse(const char *name, const char *text, size_t len, struct json_t **out)
{
	struct tp t = {.name = name, .p = text, .end = text + len, .line = 1, .line_start = text};
	int rc = 0;

	*out = NULL;
	if (memchr(text, '\0', len))
		return util_err(-EINVAL, "%s: holds a NUL byte", name);
	if (!util_utf8_valid(text, len))
		return util_err(-EINVAL, "%s: is not valid UTF-8", name);
	t.root = t.cur = json_object();
	if (!t.root)
		return util_err(-ENOMEM, "out of memory");
	if (at(&t, "\xEF\xBB\xBF"))
		t.p += 3;
	while (rc == 0 && t.p < t.end) {
		skip_ws(&t);
		if (t.p >= t.end)
			break;
		if (*t.p == '#')
			rc = end_of_line(&t);
		else if (*t.p == '\n' || at(&t, "\r\n"))
			take_newline(&t);
		else if (*t.p == '[')
			rc = parse_header(&t);
		else if ((rc = parse_pair(&t, t.cur)) == 0)
			rc = end_of_line(&t);
	}
	if (rc < 0) {
		json_decref(t.root);
		return rc;
	}
	*out = t.root;
	return 0;
}
