/*
 * cli/review_diff.c: a workspace's patch (arb_diff, libgit2's unified format) as structured
 * files and hunks for the review page, which renders them itself (as text, never markup).
 * Hunk bodies are counted from their headers, so a removed line "-- x" (shown "--- x") is
 * never taken for a file header. Paths libgit2 quoted are unquoted; what is not UTF-8 comes
 * as util_json_bytes values.
 */
#include "cli/review.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

struct parse {
	json_t *files, *file, *hunk;
	long old_left, new_left, o, n;
};

/* A header path: "a/x", "\"b/x\\ty\"" or /dev/null (null), its a/ or b/ cut. */
static json_t *path_json(const char *s, size_t len)
{
	char *raw = strndup(s, len), *plain = NULL;
	const char *p;
	size_t n = 0;
	json_t *v;

	if (!raw)
		return NULL;
	while (len && (raw[len - 1] == '\t' || raw[len - 1] == '\r'))
		raw[--len] = '\0';
	if (!strcmp(raw, "/dev/null")) {
		free(raw);
		return json_null();
	}
	if (raw[0] == '"' && util_unquote(raw, &plain, &n) == 0 && strlen(plain) == n)
		p = plain;
	else
		p = raw;
	if ((p[0] == 'a' || p[0] == 'b') && p[1] == '/')
		p += 2;
	v = util_json_bytes(p);
	free(plain);
	free(raw);
	return v;
}

static void file_set(struct parse *ps, const char *key, json_t *v)
{
	if (ps->file && v)
		json_object_set_new(ps->file, key, v);
	else
		json_decref(v);
}

static long num(const char **s)
{
	char *end;
	long v = strtol(*s, &end, 10);

	*s = end;
	return v < 0 ? 0 : v;
}

/* "@@ -a[,b] +c[,d] @@ ..." */
static int hunk_start(struct parse *ps, const char *l, size_t len)
{
	const char *s = l + 4;
	long a, b = 1, c, d = 1;

	if (!ps->file || strncmp(l, "@@ -", 4) != 0)
		return 0;
	a = num(&s);
	if (*s == ',')
		s++, b = num(&s);
	if (strncmp(s, " +", 2) != 0)
		return 0;
	s += 2;
	c = num(&s);
	if (*s == ',')
		s++, d = num(&s);
	ps->hunk = json_pack("{s:s%,s:I,s:I,s:[]}", "header", l, len, "old_start", (json_int_t)a,
			     "new_start", (json_int_t)c, "lines");
	if (!ps->hunk)
		return 0;
	json_array_append_new(json_object_get(ps->file, "hunks"), ps->hunk);
	ps->old_left = b, ps->new_left = d, ps->o = a, ps->n = c;
	return 1;
}

static void hunk_line(struct parse *ps, const char *l, size_t len)
{
	char t[2] = {l[0], 0}, *text = strndup(l + 1, len - 1);
	json_t *line;

	if (!text)
		return;
	line = json_pack(
	    "{s:s,s:o,s:o,s:o}", "t", t, "o", t[0] == '+' ? json_null() : json_integer(ps->o), "n",
	    t[0] == '-' ? json_null() : json_integer(ps->n), "s", util_json_bytes(text));
	free(text);
	if (t[0] != '+')
		ps->o++, ps->old_left--;
	if (t[0] != '-')
		ps->n++, ps->new_left--;
	if (line)
		json_array_append_new(json_object_get(ps->hunk, "lines"), line);
}

static void header_line(struct parse *ps, const char *l, size_t len)
{
	if (!strncmp(l, "diff --git ", 11)) {
		ps->hunk = NULL;
		ps->file = json_pack("{s:n,s:n,s:s,s:b,s:[]}", "old", "new", "status", "M",
				     "binary", 0, "hunks");
		if (ps->file)
			json_array_append_new(ps->files, ps->file);
	} else if (!strncmp(l, "new file mode", 13)) {
		file_set(ps, "status", json_string("A"));
	} else if (!strncmp(l, "deleted file mode", 17)) {
		file_set(ps, "status", json_string("D"));
	} else if (!strncmp(l, "rename from ", 12)) {
		file_set(ps, "status", json_string("R"));
		file_set(ps, "old", path_json(l + 12, len - 12));
	} else if (!strncmp(l, "rename to ", 10)) {
		file_set(ps, "new", path_json(l + 10, len - 10));
	} else if (!strncmp(l, "Binary files ", 13) || !strncmp(l, "GIT binary patch", 16)) {
		file_set(ps, "binary", json_true());
	} else if (!strncmp(l, "--- ", 4)) {
		file_set(ps, "old", path_json(l + 4, len - 4));
	} else if (!strncmp(l, "+++ ", 4)) {
		file_set(ps, "new", path_json(l + 4, len - 4));
	} else {
		hunk_start(ps, l, len);
	}
}

json_t *review_diff_parse(const char *patch, size_t n)
{
	struct parse ps = {.files = json_array()};
	const char *p = patch, *end = patch + n;

	if (!ps.files)
		return NULL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (ps.hunk && (ps.old_left > 0 || ps.new_left > 0) && len > 0 &&
		    (p[0] == ' ' || p[0] == '+' || p[0] == '-'))
			hunk_line(&ps, p, len);
		else if (ps.hunk && len > 0 && p[0] == '\\')
			; /* "\ No newline at end of file" */
		else
			header_line(&ps, p, len);
		p += len + 1;
	}
	return json_pack("{s:o}", "files", ps.files);
}
