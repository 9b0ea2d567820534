/*
 * cli/review_timeline.c: a workspace's sessions as the review page's timeline, from the
 * audit (arb_audit_open): each session's command, jail, start, exit status and duration, the
 * files it wrote and the requests it made, and the checkpoints taken at its start and end.
 * Rows of no session (writes from outside a box) come as session 0.
 */
#include "cli/review.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define FILES_MAX    500 /* distinct paths listed per session */
#define REQUESTS_MAX 500

static json_t *session_get(json_t *by_id, int64_t id)
{
	char key[32];
	json_t *s;

	snprintf(key, sizeof(key), "%lld", (long long)id);
	s = json_object_get(by_id, key);
	if (!s) {
		s = json_pack("{s:I,s:n,s:n,s:n,s:n,s:n,s:{},s:I,s:[],s:I}", "id", (json_int_t)id,
			      "argv", "started_ns", "exit", "duration_ms", "jail", "files",
			      "writes", (json_int_t)0, "requests", "refused", (json_int_t)0);
		if (s)
			json_object_set_new(by_id, key, s);
	}
	return s;
}

static void add_row(json_t *by_id, const struct arb_audit_row *row)
{
	json_t *s = session_get(by_id, row->session), *files, *reqs;

	if (!s)
		return;
	if (!strcmp(row->kind, "exec") && !strcmp(row->op, "exec")) {
		json_object_set_new(s, "argv", cli_argv_json(row->argv_json));
		json_object_set_new(s, "started_ns", json_integer(row->time_ns));
		json_object_set_new(s, "jail", util_json_bytes(row->jail));
	} else if (!strcmp(row->kind, "exec") && !strcmp(row->op, "exit")) {
		json_int_t start = json_integer_value(json_object_get(s, "started_ns"));

		json_object_set_new(s, "exit", json_integer(row->result));
		if (start)
			json_object_set_new(s, "duration_ms",
					    json_integer((row->time_ns - start) / 1000000));
	} else if (!strcmp(row->kind, "fs") && row->path) {
		/* Keyed by the quoted path (always UTF-8), the bytes kept in the value. */
		char *key = util_quote(row->path);

		files = json_object_get(s, "files");
		json_object_set_new(
		    s, "writes",
		    json_integer(json_integer_value(json_object_get(s, "writes")) + 1));
		if (key && json_object_size(files) < FILES_MAX && !json_object_get(files, key))
			json_object_set_new(files, key, util_json_bytes(row->path));
		free(key);
	} else if (!strcmp(row->kind, "net")) {
		reqs = json_object_get(s, "requests");
		if (row->decision && strcmp(row->decision, "allowed") != 0)
			json_object_set_new(
			    s, "refused",
			    json_integer(json_integer_value(json_object_get(s, "refused")) + 1));
		if (json_array_size(reqs) < REQUESTS_MAX)
			json_array_append_new(reqs,
					      json_pack("{s:o,s:o,s:o,s:I,s:o,s:I}", "method",
							util_json_bytes(row->method), "host",
							util_json_bytes(row->host), "decision",
							util_json_bytes(row->decision), "status",
							(json_int_t)row->status, "reason",
							util_json_bytes(row->reason), "time_ns",
							(json_int_t)row->time_ns));
	}
}

/* files {quoted path: path} as the list of paths, in the order first written. */
static void files_to_list(json_t *s)
{
	json_t *files = json_object_get(s, "files"), *list = json_array(), *v;
	const char *key;

	json_object_foreach(files, key, v)
	{
		json_array_append(list, v);
	}
	json_object_set_new(s, "files", list);
}

static void add_checkpoints(struct review_ctx *c, const char *name, json_t *out)
{
	struct arb_checkpoint *v = NULL;
	json_t *list = json_array();
	size_t n = 0;

	if (arb_checkpoint_list(&v, &n, c->p, name) == 0)
		for (size_t i = 0; i < n; i++)
			json_array_append_new(
			    list,
			    json_pack("{s:I,s:s,s:s,s:I,s:I,s:o}", "seq", (json_int_t)v[i].seq,
				      "kind", v[i].kind, "tree", v[i].tree, "session",
				      (json_int_t)v[i].session, "time_ns", (json_int_t)v[i].time_ns,
				      "message", util_json_bytes(v[i].message)));
	arb_free(v);
	json_object_set_new(out, "checkpoints", list);
}

void review_timeline(struct review_ctx *c, const char *name, struct review_reply *r)
{
	struct arb_audit_filter f = {.by_seq = 1};
	const struct arb_audit_row *row;
	arb_audit_iter *it = NULL;
	json_t *by_id = json_object(), *list = json_array(), *out, *s;
	const char *key;
	int rc;

	if (!name)
		goto out;
	if (arb_audit_open(&it, c->p, name, &f) < 0) {
		review_error(r, arb_error_is_input() ? 400 : 500, arb_error_last());
		goto out;
	}
	while ((rc = arb_audit_next(it, &row)) == 1)
		add_row(by_id, row);
	if (rc < 0) {
		review_error(r, 500, arb_error_last());
		goto out;
	}
	json_object_foreach(by_id, key, s)
	{
		files_to_list(s);
		json_array_append(list, s);
	}
	out = json_pack("{s:s,s:O}", "workspace", name, "sessions", list);
	if (out)
		add_checkpoints(c, name, out);
	r->status = out ? 200 : 500;
	r->body = out;
out:
	arb_audit_free(it);
	json_decref(by_id);
	json_decref(list);
}
