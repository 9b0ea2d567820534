/*
 * cli/review_message.c: the review comments of a workspace as the one message the agent gets
 * as its next prompt (`arborinth review send`, the launchers' --review): for each comment the
 * file, the lines, the quoted hunk and the comment. Box-written text in it (paths, hunks) has
 * its control characters escaped (util_quote_text).
 */
#include "cli/review.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Appends printf-style text; a failure leaves *bad set. */
static void ARB_PRINTF(3, 4) putf(struct util_buf *b, int *bad, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0 || util_buf_put(b, s, (size_t)n) < 0)
		*bad = 1;
	if (n >= 0)
		free(s);
}

static void put_escaped(struct util_buf *b, int *bad, const char *s, const char *prefix)
{
	const char *p = s;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		char *line = nl ? strndup(p, (size_t)(nl - p)) : strdup(p);
		char *safe = line ? util_quote_text(line) : NULL;

		putf(b, bad, "%s%s\n", prefix, safe ? safe : "");
		free(safe);
		free(line);
		p = nl ? nl + 1 : NULL;
	}
}

char *review_message(const char *ws_name, json_t *comments)
{
	struct util_buf b = {0};
	json_t *c;
	size_t i;
	int bad = 0;

	if (!json_array_size(comments))
		return NULL;
	putf(&b, &bad,
	     "Review comments on your work in workspace %s (%zu). Please address each "
	     "one:\n",
	     ws_name, json_array_size(comments));
	json_array_foreach(comments, i, c)
	{
		char *path = util_quote(json_string_value(json_object_get(c, "path")));
		json_int_t a = json_integer_value(json_object_get(c, "line_start"));
		json_int_t z = json_integer_value(json_object_get(c, "line_end"));
		const char *side = json_string_value(json_object_get(c, "side"));
		const char *hunk = json_string_value(json_object_get(c, "hunk"));

		putf(&b, &bad, "\n%zu. %s, line%s %lld", i + 1, path ? path : "?",
		     a == z ? "" : "s", (long long)a);
		if (z != a)
			putf(&b, &bad, "-%lld", (long long)z);
		putf(&b, &bad, " (%s)\n",
		     side && !strcmp(side, "old") ? "before the change" : "after the change");
		if (hunk && *hunk)
			put_escaped(&b, &bad, hunk, "   > ");
		put_escaped(&b, &bad, json_string_value(json_object_get(c, "text")), "   ");
		free(path);
	}
	if (bad) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

json_t *review_message_json(const char *ws_name, json_t *comments)
{
	char *text = review_message(ws_name, comments);
	json_t *out = json_pack("{s:o,s:O,s:o}", "workspace", util_json_bytes(ws_name), "comments",
				comments, "message", text ? json_string(text) : json_null());

	free(text);
	return out;
}

int review_message_for(char **out, arb_project *p, const char *name)
{
	arb_workspace *ws = NULL;
	json_t *list = NULL;
	int rc = arb_workspace_get(&ws, p, name);

	*out = NULL;
	if (rc < 0)
		return util_err(rc, "%s", arb_error_last());
	rc = review_comments_load(&list, p, ws);
	if (rc == 0 && !(*out = review_message(name, list)))
		rc = util_err(-ENOENT, "review: workspace %s has no review comments", name);
	json_decref(list);
	arb_workspace_free(ws);
	return rc;
}
