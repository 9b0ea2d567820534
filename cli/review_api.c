/*
 * cli/review_api.c: the review page's JSON API: the forest of workspaces, a diff (of the
 * workspace, of a session, between two states) as structured hunks, and the comments. Every
 * string from a workspace goes out as JSON (util_json_bytes); the page renders it as text.
 */
#include "cli/review.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/cli.h"

#define DIFF_MAX (64u << 20)

void review_error(struct review_reply *r, unsigned status, const char *msg)
{
	r->status = status;
	r->body = json_pack("{s:s}", "error", msg ? msg : "error");
	if (!r->body) /* not UTF-8: escaped */
		r->body = json_pack("{s:o}", "error", util_json_bytes(msg));
}

static void lib_error(struct review_reply *r)
{
	review_error(r, arb_error_is_input() ? 400 : 500, arb_error_last());
}

static void ok(struct review_reply *r, json_t *body)
{
	r->status = body ? 200 : 500;
	r->body = body ? body : json_pack("{s:s}", "error", "out of memory");
}

/* The query's or body's workspace name, checked; NULL with r filled when not one. */
static const char *ws_param(json_t *obj, const char *key, struct review_reply *r)
{
	const char *name = json_string_value(json_object_get(obj, key));

	if (!name)
		review_error(r, 400, "which workspace? (ws)");
	else if (arb_workspace_name_check(name) < 0)
		review_error(r, 400, arb_error_last());
	else
		return name;
	return NULL;
}

static json_t *forest_entry(struct review_ctx *c, arb_workspace *ws)
{
	const char *name = arb_workspace_name(ws);
	struct arb_diffstat st;
	char *from = NULL;
	json_t *list = NULL, *e;

	if (arb_workspace_forked_from(&from, c->p, name) < 0)
		from = NULL;
	e = json_pack("{s:s,s:s,s:s,s:s,s:I,s:b,s:o}", "name", name, "id", arb_workspace_id(ws),
		      "base", arb_workspace_base_commit(ws), "branch", arb_workspace_branch(ws),
		      "created_ns", (json_int_t)arb_workspace_created_ns(ws), "mounted",
		      arb_workspace_mounted(ws), "forked_from",
		      from ? json_string(from) : json_null());
	arb_free(from);
	if (e && arb_diffstat(&st, c->p, name, "base", "view") == 0)
		json_object_set_new(e, "diffstat",
				    json_pack("{s:I,s:I,s:I}", "files", (json_int_t)st.files,
					      "insertions", (json_int_t)st.insertions, "deletions",
					      (json_int_t)st.deletions));
	if (e && review_comments_load(&list, c->p, ws) == 0)
		json_object_set_new(e, "comments", json_integer((json_int_t)json_array_size(list)));
	json_decref(list);
	return e;
}

static void api_forest(struct review_ctx *c, struct review_reply *r)
{
	arb_workspace **v = NULL;
	json_t *list = json_array(), *sel = json_array();
	size_t n = 0;

	if (arb_workspace_list(&v, &n, c->p) < 0) {
		json_decref(list);
		json_decref(sel);
		lib_error(r);
		return;
	}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, forest_entry(c, v[i]));
	for (size_t i = 0; i < c->n; i++)
		json_array_append_new(sel, json_string(c->names[i]));
	arb_workspace_list_free(v, n);
	ok(r, json_pack("{s:o,s:o,s:s}", "workspaces", list, "selected", sel, "root",
			arb_project_root(c->p)));
}

/*
 * The diff from..to of workspace name (with other: from name's view to other's) into a
 * memory file, then parsed.
 */
static json_t *diff_json(arb_project *p, const char *name, const char *from, const char *to,
			 const char *other)
{
	int fd = memfd_create("arborinth-review-diff", MFD_CLOEXEC);
	char *text = MAP_FAILED;
	json_t *out = NULL;
	off_t size = 0;

	if (fd < 0)
		return NULL;
	if (other ? arb_diff_between(p, name, other, fd) < 0
		  : arb_diff(p, name, from, to, NULL, 0, ARB_DIFF_PATCH, fd) < 0)
		goto out;
	size = lseek(fd, 0, SEEK_END);
	if (size < 0 || (size_t)size > DIFF_MAX) {
		out = json_pack("{s:s}", "error", "the diff is too large to show");
		goto out;
	}
	if (size > 0)
		text = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	out = review_diff_parse(size > 0 && text != MAP_FAILED ? text : "",
				size > 0 && text != MAP_FAILED ? (size_t)size : 0);
	if (out && !other)
		json_object_set_new(out, "from", json_string(from));
	if (out && !other)
		json_object_set_new(out, "to", json_string(to));
out:
	if (text != MAP_FAILED)
		munmap(text, (size_t)size);
	close(fd);
	return out;
}

static void api_diff(struct review_ctx *c, json_t *q, struct review_reply *r)
{
	const char *name = ws_param(q, "ws", r);
	const char *from = json_string_value(json_object_get(q, "from"));
	const char *to = json_string_value(json_object_get(q, "to"));
	const char *session = json_string_value(json_object_get(q, "session"));
	const char *other = json_object_get(q, "other") ? ws_param(q, "other", r) : NULL;
	struct arb_checkpoint a, b;
	json_t *out;

	if (!name || (json_object_get(q, "other") && !other))
		return;
	if (other) {
		out = diff_json(c->p, name, NULL, NULL, other);
		if (!out)
			return lib_error(r);
		json_object_set_new(out, "from", json_string(name));
		json_object_set_new(out, "to", json_string(other));
		return ok(r, out);
	}
	if (session) {
		char *end;
		long long n = strtoll(session, &end, 10);

		if (*end || n <= 0)
			return review_error(r, 400, "session: not a session number");
		if (arb_checkpoint_of_session(&a, c->p, name, n, "start") < 0)
			return lib_error(r);
		from = a.tree;
		to = arb_checkpoint_of_session(&b, c->p, name, n, "end") == 0 ? b.tree : "view";
	}
	out = diff_json(c->p, name, from ? from : "base", to ? to : "view", NULL);
	if (!out)
		return lib_error(r);
	ok(r, out);
}

static void api_comments(struct review_ctx *c, int post, const char *path, json_t *q, json_t *body,
			 struct review_reply *r)
{
	const char *name = ws_param(post ? body : q, "ws", r);
	arb_workspace *ws = NULL;
	json_t *list = NULL;
	int rc = 0;

	if (!name)
		return;
	if (arb_workspace_get(&ws, c->p, name) < 0)
		return lib_error(r);
	if (post && !strcmp(path, "/api/comments"))
		rc = review_comment_add(c->p, ws, body);
	else if (post && !strcmp(path, "/api/comments/delete"))
		rc = review_comment_del(c->p, ws, json_integer_value(json_object_get(body, "id")));
	else if (post && !strcmp(path, "/api/comments/clear"))
		rc = review_comments_clear(c->p, ws);
	else if (post)
		rc = -ENOENT;
	if (rc == 0)
		rc = review_comments_load(&list, c->p, ws);
	if (rc == 0)
		ok(r, review_message_json(name, list));
	else
		review_error(r, rc == -EINVAL || rc == -ENOENT ? 400 : 500, util_err_msg());
	json_decref(list);
	arb_workspace_free(ws);
}

void review_api(struct review_ctx *c, int post, const char *path, json_t *q, json_t *body,
		struct review_reply *r)
{
	if (!post && !strcmp(path, "/api/forest"))
		api_forest(c, r);
	else if (!post && !strcmp(path, "/api/timeline"))
		review_timeline(c, ws_param(q, "ws", r), r);
	else if (!post && !strcmp(path, "/api/diff"))
		api_diff(c, q, r);
	else if (!post && !strcmp(path, "/api/compare"))
		review_compare(c, json_object_get(q, "ws"), r);
	else if (!strncmp(path, "/api/comments", 13))
		api_comments(c, post, path, q, body, r);
	else if (post && !strcmp(path, "/api/action"))
		review_act(c, body, r);
	else
		review_error(r, 404, "no such API");
}
