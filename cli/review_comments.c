/*
 * cli/review_comments.c: review comments on a workspace's lines, kept host-side in the
 * project's state folder (review/ID.json, ID the workspace's id, so a new workspace of the
 * same name starts with none), which no box sees; and the one message they make for the
 * agent. A comment quotes the box's own text (path, hunk): the message escapes control
 * characters (util_quote_text), so printing it cannot drive a terminal.
 */
#include "cli/review.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

/* Removed with the workspace, and by gc when left (core/ws_review.c knows the name). */
static char *comments_path(arb_project *p, arb_workspace *ws, int make_dir)
{
	char *dir = util_asprintf("%s/review", arb_project_state_dir(p));
	char *path = NULL;

	if (!dir)
		return NULL;
	if (!make_dir || mkdir(dir, 0700) == 0 || errno == EEXIST)
		path = util_asprintf("%s/%s.json", dir, arb_workspace_id(ws));
	free(dir);
	return path;
}

/* The whole file: {"next": N, "comments": [...]}; a missing file is an empty one. */
static int load_all(json_t **out, arb_project *p, arb_workspace *ws)
{
	char *path = comments_path(p, ws, 0);
	json_error_t e;
	json_t *all;

	*out = NULL;
	if (!path)
		return util_err(-ENOMEM, "out of memory");
	all = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
	if (!all && access(path, F_OK) == 0) {
		free(path);
		return util_err(-EIO, "review: cannot read the comments of %s",
				arb_workspace_name(ws));
	}
	free(path);
	if (!all)
		all = json_pack("{s:i,s:[]}", "next", 1, "comments");
	if (!all || !json_is_array(json_object_get(all, "comments"))) {
		json_decref(all);
		return util_err(-EIO, "review: the comments file of %s is damaged",
				arb_workspace_name(ws));
	}
	*out = all;
	return 0;
}

static int save_all(arb_project *p, arb_workspace *ws, json_t *all)
{
	char *path = comments_path(p, ws, 1), *tmp = path ? util_asprintf("%s.tmp", path) : NULL;
	int rc = 0;

	if (!tmp)
		rc = util_err(-ENOMEM, "out of memory");
	else if (json_dump_file(all, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0)
		rc = util_err(-EIO, "review: cannot write %s", path);
	if (rc && tmp)
		unlink(tmp);
	free(tmp);
	free(path);
	return rc;
}

int review_comments_load(json_t **out, arb_project *p, arb_workspace *ws)
{
	json_t *all;
	int rc = load_all(&all, p, ws);

	*out = NULL;
	if (rc == 0) {
		*out = json_incref(json_object_get(all, "comments"));
		json_decref(all);
	}
	return rc;
}

static int str_ok(json_t *c, const char *key, size_t max, int need)
{
	json_t *v = json_object_get(c, key);

	if (!v)
		return !need;
	return json_is_string(v) && json_string_length(v) <= max &&
	       (!need || json_string_length(v) > 0);
}

static int int_ok(json_t *c, const char *key)
{
	json_t *v = json_object_get(c, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) < 1000000000;
}

int review_comment_add(arb_project *p, arb_workspace *ws, json_t *c)
{
	const char *side = json_string_value(json_object_get(c, "side"));
	json_t *all = NULL, *keep = NULL;
	json_int_t id;
	int rc;

	if (!json_is_object(c) || !str_ok(c, "path", 4096, 1) || !str_ok(c, "text", 16384, 1) ||
	    !str_ok(c, "hunk", 65536, 0) || !str_ok(c, "from", 256, 0) ||
	    !str_ok(c, "to", 256, 0) || !int_ok(c, "line_start") || !int_ok(c, "line_end") ||
	    !side || (strcmp(side, "old") != 0 && strcmp(side, "new") != 0))
		return util_err(-EINVAL, "review: a comment needs path, line_start, line_end, side "
					 "(old or new) and text");
	rc = load_all(&all, p, ws);
	if (rc < 0)
		return rc;
	id = json_integer_value(json_object_get(all, "next"));
	keep = json_pack("{s:I,s:O,s:O,s:O,s:O,s:O}", "id", id, "path", json_object_get(c, "path"),
			 "line_start", json_object_get(c, "line_start"), "line_end",
			 json_object_get(c, "line_end"), "side", json_object_get(c, "side"), "text",
			 json_object_get(c, "text"));
	if (keep) {
		json_object_set(keep, "hunk", json_object_get(c, "hunk") ?: json_string(""));
		if (json_object_get(c, "from"))
			json_object_set(keep, "from", json_object_get(c, "from"));
		if (json_object_get(c, "to"))
			json_object_set(keep, "to", json_object_get(c, "to"));
	}
	if (!keep || json_array_append_new(json_object_get(all, "comments"), keep) != 0 ||
	    json_object_set_new(all, "next", json_integer(id + 1)) != 0)
		rc = util_err(-ENOMEM, "out of memory");
	else
		rc = save_all(p, ws, all);
	if (rc == 0)
		json_object_set_new(c, "id", json_integer(id));
	json_decref(all);
	return rc;
}

int review_comment_del(arb_project *p, arb_workspace *ws, json_int_t id)
{
	json_t *all = NULL, *list, *c;
	size_t i;
	int rc = load_all(&all, p, ws);

	if (rc < 0)
		return rc;
	list = json_object_get(all, "comments");
	rc = util_err(-ENOENT, "review: no comment %lld on %s", (long long)id,
		      arb_workspace_name(ws));
	json_array_foreach(list, i, c)
	{
		if (json_integer_value(json_object_get(c, "id")) == id) {
			json_array_remove(list, i);
			rc = save_all(p, ws, all);
			break;
		}
	}
	json_decref(all);
	return rc;
}

int review_comments_clear(arb_project *p, arb_workspace *ws)
{
	json_t *all = NULL;
	int rc = load_all(&all, p, ws);

	if (rc == 0 && json_array_size(json_object_get(all, "comments")))
		rc = json_array_clear(json_object_get(all, "comments")) ? -ENOMEM
									: save_all(p, ws, all);
	json_decref(all);
	return rc;
}
