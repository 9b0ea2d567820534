/*
 * binds/toml.c: a strict parser for the subset of TOML that bind files use (binds.h):
 * comments, bare or quoted keys, basic and literal single-line strings, arrays of strings
 * across lines, one inline table or [env] table of strings. Anything else is an error with
 * the line and column (1-based; columns count characters, not bytes) where it starts.
 */
#include "binds/binds_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lexer {
	const char *name;
	const unsigned char *p, *end;
	unsigned line, col;
	struct binds_doc *doc;
	/* Where each root key was first set (line 0: not yet), and the env names seen. */
	unsigned seen_line[BINDS_KEY_ENV + 1], seen_col[BINDS_KEY_ENV + 1];
	bool in_env_table;
};

static const char *const key_names[] = {
    [BINDS_KEY_RO] = "ro",	 [BINDS_KEY_RW] = "rw",
    [BINDS_KEY_TMPFS] = "tmpfs", [BINDS_KEY_OVERLAY] = "overlay",
    [BINDS_KEY_PATH] = "path",	 [BINDS_KEY_INCLUDE] = "include",
    [BINDS_KEY_MCP] = "mcp",	 [BINDS_KEY_BACKENDS] = "backends",
    [BINDS_KEY_ENV] = "env",
};

const char *binds_key_name(enum binds_key k)
{
	return key_names[k];
}

void binds_doc_clear(struct binds_doc *doc)
{
	for (size_t i = 0; i < doc->n; i++) {
		free(doc->v[i].name);
		free(doc->v[i].value);
	}
	free(doc->v);
	*doc = (struct binds_doc){0};
}

static int fail_at(const struct lexer *lx, unsigned line, unsigned col, const char *fmt, ...)
    ARB_PRINTF(4, 5);

static int fail_at(const struct lexer *lx, unsigned line, unsigned col, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return util_err(-EINVAL, "%s:%u:%u: %s", lx->name, line, col, msg);
}

#define FAIL(lx, ...) fail_at(lx, (lx)->line, (lx)->col, __VA_ARGS__)

static bool at_end(const struct lexer *lx)
{
	return lx->p >= lx->end;
}

static int peek(const struct lexer *lx)
{
	return at_end(lx) ? -1 : *lx->p;
}

/* Advances over one byte; columns advance on the first byte of each character. */
static void advance(struct lexer *lx)
{
	if ((*lx->p & 0xc0) != 0x80)
		lx->col++;
	lx->p++;
}

/* Length of the valid UTF-8 sequence at p (no overlongs, surrogates or > U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t n, left = (size_t)(end - p);
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Checks the character at the cursor: valid UTF-8, no control character but tab. */
static int check_char(struct lexer *lx, const char *where)
{
	int c = peek(lx);

	if (c == 0)
		return FAIL(lx, "NUL byte in %s", where);
	if ((c < 0x20 && c != '\t') || c == 0x7f)
		return FAIL(lx, "control character 0x%02x in %s", c, where);
	if (c >= 0x80 && !utf8_len(lx->p, lx->end))
		return FAIL(lx, "invalid UTF-8 in %s", where);
	return 0;
}

/* Moves over one whole character already checked. */
static void advance_char(struct lexer *lx)
{
	size_t n = utf8_len(lx->p, lx->end);

	for (size_t i = 0; i < (n ? n : 1); i++)
		advance(lx);
}

static void skip_ws(struct lexer *lx)
{
	while (peek(lx) == ' ' || peek(lx) == '\t')
		advance(lx);
}

/* A comment up to (not including) the end of the line. */
static int skip_comment(struct lexer *lx)
{
	if (peek(lx) != '#')
		return 0;
	advance(lx);
	while (!at_end(lx) && peek(lx) != '\n') {
		if (peek(lx) == '\r' && lx->p + 1 < lx->end && lx->p[1] == '\n')
			break;
		int rc = check_char(lx, "a comment");

		if (rc < 0)
			return rc;
		advance_char(lx);
	}
	return 0;
}

/* At a newline (LF or CRLF): consumes it and returns true. */
static bool take_newline(struct lexer *lx)
{
	if (peek(lx) == '\n') {
		lx->p++;
	} else if (peek(lx) == '\r' && lx->p + 1 < lx->end && lx->p[1] == '\n') {
		lx->p += 2;
	} else {
		return false;
	}
	lx->line++;
	lx->col = 1;
	return true;
}

/* Whitespace, comments and newlines (inside arrays). */
static int skip_ws_nl(struct lexer *lx)
{
	for (;;) {
		int rc;

		skip_ws(lx);
		rc = skip_comment(lx);
		if (rc < 0)
			return rc;
		if (!take_newline(lx))
			return 0;
	}
}

/* After a value or table header: only whitespace and a comment until the end of line. */
static int end_of_line(struct lexer *lx)
{
	int rc;

	skip_ws(lx);
	rc = skip_comment(lx);
	if (rc < 0)
		return rc;
	if (at_end(lx) || take_newline(lx))
		return 0;
	if (peek(lx) == '\r')
		return FAIL(lx, "carriage return without a line feed");
	return FAIL(lx, "expected the end of the line, found '%c'", peek(lx));
}

/* ---- strings ---------------------------------------------------------------------------- */

/* \uXXXX or \UXXXXXXXX after the backslash and letter; the cursor is on the first digit. */
static int unicode_escape(struct lexer *lx, unsigned digits, unsigned line, unsigned col,
			  struct util_buf *b)
{
	unsigned long cp = 0;

	for (unsigned i = 0; i < digits; i++) {
		int c = peek(lx);
		unsigned v;

		if (c >= '0' && c <= '9')
			v = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = (unsigned)(c - 'A' + 10);
		else
			return fail_at(lx, line, col, "escape needs %u hexadecimal digits", digits);
		cp = cp * 16 + v;
		advance(lx);
	}
	if (cp == 0)
		return fail_at(lx, line, col, "NUL (\\u0000) is not allowed in a string");
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return fail_at(lx, line, col, "escape is not a Unicode scalar value");
	return util_buf_put_utf8(b, cp);
}

static int basic_escape(struct lexer *lx, struct util_buf *b)
{
	unsigned line = lx->line, col = lx->col;
	int c;

	advance(lx); /* the backslash */
	c = peek(lx);
	switch (c) {
	case 'b':
		advance(lx);
		return util_buf_put(b, "\b", 1);
	case 't':
		advance(lx);
		return util_buf_put(b, "\t", 1);
	case 'n':
		advance(lx);
		return util_buf_put(b, "\n", 1);
	case 'f':
		advance(lx);
		return util_buf_put(b, "\f", 1);
	case 'r':
		advance(lx);
		return util_buf_put(b, "\r", 1);
	case '"':
		advance(lx);
		return util_buf_put(b, "\"", 1);
	case '\\':
		advance(lx);
		return util_buf_put(b, "\\", 1);
	case 'u':
	case 'U':
		advance(lx);
		return unicode_escape(lx, c == 'u' ? 4 : 8, line, col, b);
	default:
		return fail_at(lx, line, col, "unknown escape sequence in a string");
	}
}

/* A basic or literal string; the cursor is on its opening quote. *out: caller frees. */
static int parse_string(struct lexer *lx, char **out)
{
	unsigned line = lx->line, col = lx->col;
	int quote = peek(lx), rc = 0;
	struct util_buf b = {0};

	*out = NULL;
	if (lx->end - lx->p >= 3 && lx->p[1] == quote && lx->p[2] == quote)
		return FAIL(lx, "multi-line strings are not supported in bind files");
	advance(lx);
	rc = util_buf_put(&b, "", 0);
	while (rc == 0) {
		int c = peek(lx);

		if (c == quote) {
			advance(lx);
			*out = b.s;
			return 0;
		}
		if (c == -1 || c == '\n' || c == '\r') {
			rc = fail_at(lx, line, col, "unterminated string");
			break;
		}
		if (c == '\\' && quote == '"') {
			rc = basic_escape(lx, &b);
			continue;
		}
		rc = check_char(lx, "a string");
		if (rc == 0) {
			size_t n = utf8_len(lx->p, lx->end);

			rc = util_buf_put(&b, lx->p, n);
			advance_char(lx);
		}
	}
	free(b.s);
	return rc;
}

/* ---- keys and values -------------------------------------------------------------------- */

static bool bare_key_char(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* A bare or quoted key; dotted keys are refused. *out: caller frees. */
static int parse_key(struct lexer *lx, char **out)
{
	const unsigned char *start = lx->p;
	int rc;

	*out = NULL;
	if (peek(lx) == '"' || peek(lx) == '\'') {
		rc = parse_string(lx, out);
	} else {
		while (bare_key_char(peek(lx)))
			advance(lx);
		if (lx->p == start)
			return peek(lx) == -1 ? FAIL(lx, "expected a key")
					      : FAIL(lx, "expected a key, found '%c'", peek(lx));
		*out = strndup((const char *)start, (size_t)(lx->p - start));
		rc = *out ? 0 : util_err(-ENOMEM, "out of memory");
	}
	if (rc == 0) {
		const unsigned char *save = lx->p;
		unsigned col = lx->col;

		skip_ws(lx);
		if (peek(lx) == '.') {
			rc = FAIL(lx, "dotted keys are not supported in bind files");
			free(*out);
			*out = NULL;
		} else {
			lx->p = save;
			lx->col = col;
		}
	}
	return rc;
}

static int add_item(struct lexer *lx, enum binds_key key, const char *name, char *value,
		    unsigned line, unsigned col)
{
	struct binds_doc *d = lx->doc;
	struct binds_item *v = realloc(d->v, (d->n + 1) * sizeof(*v));
	char *n = name ? strdup(name) : NULL;

	if (!v || (name && !n)) {
		if (v)
			d->v = v;
		free(n);
		free(value);
		return util_err(-ENOMEM, "out of memory");
	}
	d->v = v;
	v[d->n++] = (struct binds_item){key, n, value, line, col};
	return 0;
}

/* Explains what kind of value starts at the cursor when it is not what the key takes. */
static int wrong_value(struct lexer *lx, const char *key, const char *want)
{
	int c = peek(lx);
	const char *found = c == -1 || c == '\n' || c == '\r' || c == '#' ? "nothing"
			    : c == '"' || c == '\''			  ? "a string"
			    : c == '['					  ? "an array"
			    : c == '{'					  ? "a table"
			    : c == 't' || c == 'f'			  ? "a boolean"
			    : (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'i' || c == 'n'
				? "a number or date"
				: "an unsupported value";

	return FAIL(lx, "'%s' takes %s, found %s", key, want, found);
}

/* An array of strings for root key `key`; the cursor is on '['. */
static int parse_array(struct lexer *lx, enum binds_key key)
{
	int rc;

	advance(lx);
	for (;;) {
		unsigned line, col;
		char *s;

		rc = skip_ws_nl(lx);
		if (rc < 0)
			return rc;
		if (peek(lx) == ']') {
			advance(lx);
			return 0;
		}
		line = lx->line, col = lx->col;
		if (peek(lx) != '"' && peek(lx) != '\'')
			return at_end(lx) ? FAIL(lx, "unterminated array (missing ']')")
					  : wrong_value(lx, key_names[key], "strings only");
		rc = parse_string(lx, &s);
		if (rc == 0)
			rc = add_item(lx, key, NULL, s, line, col);
		if (rc == 0)
			rc = skip_ws_nl(lx);
		if (rc < 0)
			return rc;
		if (peek(lx) == ',') {
			advance(lx);
		} else if (peek(lx) != ']') {
			return at_end(lx) ? FAIL(lx, "unterminated array (missing ']')")
					  : FAIL(lx, "expected ',' or ']' in an array, found '%c'",
						 peek(lx));
		}
	}
}

static bool env_seen(const struct lexer *lx, const char *name, unsigned *line, unsigned *col)
{
	for (size_t i = 0; i < lx->doc->n; i++) {
		const struct binds_item *it = &lx->doc->v[i];

		if (it->key == BINDS_KEY_ENV && !strcmp(it->name, name)) {
			*line = it->line, *col = it->col;
			return true;
		}
	}
	return false;
}

static bool env_name_valid(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* One NAME = "value" of the env table; the cursor is on NAME. */
static int parse_env_pair(struct lexer *lx)
{
	unsigned kline = lx->line, kcol = lx->col, line, col;
	char *name = NULL, *value = NULL;
	int rc = parse_key(lx, &name);

	if (rc < 0)
		return rc;
	if (!env_name_valid(name)) {
		rc = fail_at(lx, kline, kcol,
			     "'%s' is not a valid environment variable name "
			     "([A-Za-z_][A-Za-z0-9_]*)",
			     name);
		goto out;
	}
	if (env_seen(lx, name, &line, &col)) {
		rc = fail_at(lx, kline, kcol, "env variable '%s' set twice (first at %u:%u)", name,
			     line, col);
		goto out;
	}
	skip_ws(lx);
	if (peek(lx) != '=') {
		rc = FAIL(lx, "expected '=' after the key");
		goto out;
	}
	advance(lx);
	skip_ws(lx);
	line = lx->line, col = lx->col;
	if (peek(lx) != '"' && peek(lx) != '\'') {
		rc = wrong_value(lx, name, "a string");
		goto out;
	}
	rc = parse_string(lx, &value);
	if (rc == 0)
		rc = add_item(lx, BINDS_KEY_ENV, name, value, line, col);
out:
	free(name);
	return rc;
}

/* env = { A = "x", B = "y" } on one line; the cursor is on '{'. */
static int parse_inline_table(struct lexer *lx)
{
	int rc;

	advance(lx);
	skip_ws(lx);
	if (peek(lx) == '}') {
		advance(lx);
		return 0;
	}
	for (;;) {
		if (at_end(lx) || peek(lx) == '\n' || peek(lx) == '\r')
			return FAIL(lx, "an inline table must close with '}' on the same line");
		rc = parse_env_pair(lx);
		if (rc < 0)
			return rc;
		skip_ws(lx);
		if (peek(lx) == '}') {
			advance(lx);
			return 0;
		}
		if (peek(lx) != ',')
			return at_end(lx) || peek(lx) == '\n' || peek(lx) == '\r'
				   ? FAIL(lx,
					  "an inline table must close with '}' on the same line")
				   : FAIL(lx, "expected ',' or '}' in an inline table, found '%c'",
					  peek(lx));
		advance(lx);
		skip_ws(lx);
		if (peek(lx) == '}')
			return FAIL(lx, "trailing comma in an inline table");
	}
}

static int lookup_key(const char *k, enum binds_key *out)
{
	for (int i = 0; i <= BINDS_KEY_ENV; i++)
		if (!strcmp(k, key_names[i])) {
			*out = (enum binds_key)i;
			return 0;
		}
	return -1;
}

/* A root-level key = value; the cursor is on the key. */
static int parse_root_pair(struct lexer *lx)
{
	unsigned kline = lx->line, kcol = lx->col;
	enum binds_key key;
	char *name = NULL;
	int rc = parse_key(lx, &name);

	if (rc < 0)
		return rc;
	if (lookup_key(name, &key) < 0) {
		rc = fail_at(lx, kline, kcol,
			     "unknown key '%s' (bind files know ro, rw, overlay, tmpfs, path, env, "
			     "mcp, backends, include)",
			     name);
		free(name);
		return rc;
	}
	free(name);
	if (lx->seen_line[key])
		return fail_at(lx, kline, kcol, "duplicate key '%s' (first at %u:%u)",
			       key_names[key], lx->seen_line[key], lx->seen_col[key]);
	lx->seen_line[key] = kline, lx->seen_col[key] = kcol;
	skip_ws(lx);
	if (peek(lx) != '=')
		return FAIL(lx, "expected '=' after the key");
	advance(lx);
	skip_ws(lx);
	if (key == BINDS_KEY_ENV)
		return peek(lx) == '{' ? parse_inline_table(lx)
				       : wrong_value(lx, "env", "a table of strings");
	return peek(lx) == '[' ? parse_array(lx, key)
			       : wrong_value(lx, key_names[key], "an array of strings");
}

/* [env]; the cursor is on '['. */
static int parse_table_header(struct lexer *lx)
{
	unsigned line = lx->line, col = lx->col;
	char *name = NULL;
	int rc;

	advance(lx);
	if (peek(lx) == '[')
		return fail_at(lx, line, col, "arrays of tables are not supported in bind files");
	skip_ws(lx);
	rc = parse_key(lx, &name);
	if (rc < 0)
		return rc;
	if (strcmp(name, "env")) {
		rc =
		    fail_at(lx, line, col, "unknown table [%s] (bind files know only [env])", name);
		free(name);
		return rc;
	}
	free(name);
	if (lx->seen_line[BINDS_KEY_ENV])
		return fail_at(lx, line, col, "env defined twice (first at %u:%u)",
			       lx->seen_line[BINDS_KEY_ENV], lx->seen_col[BINDS_KEY_ENV]);
	lx->seen_line[BINDS_KEY_ENV] = line, lx->seen_col[BINDS_KEY_ENV] = col;
	skip_ws(lx);
	if (peek(lx) != ']')
		return FAIL(lx, "expected ']' to close the table header");
	advance(lx);
	lx->in_env_table = true;
	return 0;
}

int binds_toml_parse(const char *name, const char *text, size_t len, struct binds_doc *doc)
{
	struct lexer lx = {
	    .name = name,
	    .p = (const unsigned char *)text,
	    .end = (const unsigned char *)text + len,
	    .line = 1,
	    .col = 1,
	    .doc = doc,
	};
	int rc = 0;

	*doc = (struct binds_doc){0};
	/* A UTF-8 byte order mark is allowed at the very start. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		lx.p += 3;
	while (rc == 0 && !at_end(&lx)) {
		skip_ws(&lx);
		if (peek(&lx) == '[')
			rc = parse_table_header(&lx);
		else if (peek(&lx) != '#' && peek(&lx) != '\n' && peek(&lx) != '\r' && !at_end(&lx))
			rc = lx.in_env_table ? parse_env_pair(&lx) : parse_root_pair(&lx);
		if (rc == 0)
			rc = end_of_line(&lx);
	}
	if (rc < 0)
		binds_doc_clear(doc);
	return rc;
}
