/* lib/checkpoint.c: checkpoints and rewind (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "core/core.h"

static void copy_out(struct arb_checkpoint *out, const struct core_ckpt *c)
{
	*out = (struct arb_checkpoint){.seq = c->seq, .time_ns = c->time_ns, .session = c->session};
	snprintf(out->commit, sizeof(out->commit), "%s", c->commit);
	snprintf(out->tree, sizeof(out->tree), "%s", c->tree);
	out->hashed = c->hashed;
	out->reused = c->reused;
	snprintf(out->kind, sizeof(out->kind), "%s", c->kind);
	snprintf(out->message, sizeof(out->message), "%s", c->message ? c->message : "");
}

static int ws_open(arb_project *p, const char *name, struct core_ws **ws)
{
	int rc = core_ws_get(p->core, name, ws);

	return rc == -ENOENT || rc == -EINVAL ? lib_input_err(rc) : rc;
}

int arb_checkpoint_create(struct arb_checkpoint *out, arb_project *p, const char *ws_name,
			  const char *message)
{
	struct core_ckpt_opts o = {.message = message};
	struct core_ckpt c = {0};
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	if (message && (strchr(message, '\n') || strlen(message) > CORE_CKPT_MESSAGE_MAX))
		return lib_input_err(
		    util_err(-EINVAL, "-m: one line of at most %d bytes", CORE_CKPT_MESSAGE_MAX));
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = core_ws_checkpoint(p->core, ws, &o, &c);
	if (rc == 0 && out)
		copy_out(out, &c);
	core_ckpt_clear(&c);
	core_ws_free(ws);
	return rc;
}

int arb_checkpoint_list(struct arb_checkpoint **out, size_t *n, arb_project *p, const char *ws_name)
{
	struct core_ckpt *v = NULL;
	struct core_ws *ws = NULL;
	size_t count = 0;
	int rc;

	lib_err_reset();
	*out = NULL;
	*n = 0;
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = core_ws_checkpoints(p->core, ws, &v, &count);
	if (rc == 0 && !(*out = calloc(count + 1, sizeof(**out))))
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < count; i++)
		copy_out(&(*out)[i], &v[i]);
	if (rc == 0)
		*n = count;
	core_ckpts_free(v, count);
	core_ws_free(ws);
	return rc;
}

int arb_checkpoint_of_session(struct arb_checkpoint *out, arb_project *p, const char *ws_name,
			      int64_t session, const char *kind)
{
	struct core_ckpt c = {0};
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	if (!kind || (strcmp(kind, "start") && strcmp(kind, "end")))
		return lib_input_err(
		    util_err(-EINVAL, "a session's checkpoint is its start or end"));
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0 && (rc = core_ws_session_ckpt(p->core, ws, session, kind, &c)) == -ENOENT)
		rc = lib_input_err(rc);
	if (rc == 0)
		copy_out(out, &c);
	core_ckpt_clear(&c);
	core_ws_free(ws);
	return rc;
}

/* to, or the start of session before, as a tree of ws. */
static int target_tree(arb_project *p, const struct core_ws *ws, const char *to, int64_t before,
		       git_oid *tree)
{
	struct core_ckpt c = {0};
	int rc;

	if (!to == !before)
		return lib_input_err(
		    util_err(-EINVAL, "give exactly one of a checkpoint and a session"));
	if (to) {
		rc = core_ws_tree(p->core, ws, to, tree);
		return rc < 0 && rc != -ENOMEM ? lib_input_err(rc) : rc;
	}
	if (before < 0)
		return lib_input_err(
		    util_err(-EINVAL, "session %lld is not a session number", (long long)before));
	rc = core_ws_session_ckpt(p->core, ws, before, "start", &c);
	if (rc == -ENOENT)
		rc = lib_input_err(rc);
	if (rc == 0 && git_oid_fromstr(tree, c.tree) < 0)
		rc = util_err(-EIO, "bad checkpoint tree %s", c.tree);
	core_ckpt_clear(&c);
	return rc;
}

/* One audit row for the rewind (path: what it went back to). */
static void record_rewind(arb_project *p, const struct core_ws *ws, const char *what)
{
	struct audit_log *log = NULL;
	struct audit_event ev = {
	    .time_ns = util_now_ns(), .kind = "fs", .op = "rewind", .path = what, .size = -1};
	char *db = util_path_join(core_project_state_dir(p->core), "state.db");

	if (!db || audit_log_open(&log, db, ws->id, ws->name) < 0 || audit_log_append(log, &ev) < 0)
		fprintf(stderr, "arborinth: warning: the rewind could not be recorded in the audit "
				"log\n");
	if (log)
		audit_log_close(log);
	free(db);
}

int arb_rewind(struct arb_checkpoint *undo, arb_project *p, const char *ws_name, const char *to,
	       int64_t before_session)
{
	struct core_ckpt c = {0};
	struct core_ws *ws = NULL;
	git_oid tree;
	char what[128];
	int rc;

	lib_err_reset();
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = target_tree(p, ws, to, before_session, &tree);
	if (rc == 0)
		rc = core_ws_rewind(p->core, ws, &tree, &c);
	if (rc == 0) {
		if (to)
			snprintf(what, sizeof(what), "%s (undo: --to %u)", to, c.seq);
		else
			snprintf(what, sizeof(what), "before session %lld (undo: --to %u)",
				 (long long)before_session, c.seq);
		record_rewind(p, ws, what);
		if (undo)
			copy_out(undo, &c);
	}
	core_ckpt_clear(&c);
	core_ws_free(ws);
	return rc;
}

int arb_restore(arb_project *p, const char *ws_name, const char *to, int64_t before_session,
		const char *const *paths, size_t n)
{
	struct core_ws *ws = NULL;
	git_oid tree;
	int rc;

	lib_err_reset();
	if (!n)
		return lib_input_err(util_err(-EINVAL, "no path to restore"));
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = target_tree(p, ws, to, before_session, &tree);
	if (rc == 0 && (rc = core_ws_restore(p->core, ws, &tree, paths, n)) == -ENOENT) {
		char *path = strdup(util_err_msg()); /* the path core named */
		char at[64];

		if (to)
			snprintf(at, sizeof(at), "checkpoint %s", to);
		else
			snprintf(at, sizeof(at), "the state before session %lld",
				 (long long)before_session);
		rc = lib_input_err(util_err(-ENOENT,
					    "restore: '%s' is neither in %s nor in %s's view now: "
					    "nothing restored",
					    path ? path : "?", at, ws_name));
		free(path);
	} else if (rc == -EINVAL) {
		rc = lib_input_err(rc);
	}
	core_ws_free(ws);
	return rc;
}
