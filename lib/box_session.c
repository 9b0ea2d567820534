/*
 * lib/box_session.c: a box's session in the audit log, and the checkpoints at its start and
 * end, so every session is a diff between two checkpoints (`arborinth log`, `diff
 * --session`, `rewind --before-session`).
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "audit/audit.h"
#include "core/core.h"
#include "jail/jail.h"

int lib_session_begin(struct audit_session **out, struct core_project *p, const struct core_ws *ws,
		      const char *jail, char *const cmd[], pid_t box)
{
	char *db = util_path_join(core_project_state_dir(p), "state.db");
	int rc;

	*out = NULL;
	if (!db)
		return util_err(-ENOMEM, "out of memory");
	rc = audit_session_begin(out, db, ws->id, ws->name, jail, cmd);
	free(db);
	if (rc < 0)
		return util_err(rc, "cannot record the session in the audit log: %s",
				util_err_msg());
	/* Without it the box's writes could go to another session of this process: no run. */
	if (box > 0 && (rc = audit_session_set_box(*out, box)) < 0) {
		rc = util_err(rc, "cannot record the session's box in the audit log: %s",
			      util_err_msg());
		lib_session_end(ws, *out, JAIL_EXIT_SETUP);
		*out = NULL;
	}
	return rc;
}

void lib_session_end(const struct core_ws *ws, struct audit_session *s, int exit_status)
{
	/* The session's last writes may still be coalescing in the daemon: record them first. */
	if (s && core_ws_audit_sync(ws) < 0)
		fprintf(stderr, "arborinth: warning: %s\n", util_err_msg());
	if (s && audit_session_end(s, exit_status) < 0)
		fprintf(stderr, "arborinth: warning: cannot record the end of the session: %s\n",
			util_err_msg());
}

void lib_session_checkpoint(struct core_project *p, const struct core_ws *ws,
			    const struct audit_session *s, const char *kind)
{
	struct core_ckpt_opts o = {.message = kind[0] == 's' ? "session start" : "session end",
				   .kind = kind,
				   .session = s ? audit_session_id(s) : 0};
	struct core_ckpt c = {0};

	if (core_ws_checkpoint(p, ws, &o, &c) < 0)
		fprintf(stderr, "arborinth: warning: no %s checkpoint for this session: %s\n", kind,
			util_err_msg());
	core_ckpt_clear(&c);
	if (kind[0] == 'e')
		lib_session_export(p, ws);
}

void lib_session_export(struct core_project *p, const struct core_ws *ws)
{
	git_oid tip;

	/* What `git fetch arborinth/NAME` gets: the branch as this session left it, checked. */
	if (core_ws_export(p, ws, &tip, NULL) < 0)
		fprintf(stderr, "arborinth: warning: the branch was not exported: %s\n",
			util_err_msg());
}
