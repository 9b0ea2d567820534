/* lib/home.c: bringing a workspace's work into the origin: merge and apply (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>

#include "core/core.h"

static int ws_open(arb_project *p, const char *name, struct core_ws **ws)
{
	int rc = core_ws_get(p->core, name, ws);

	return rc == -ENOENT || rc == -EINVAL ? lib_input_err(rc) : rc;
}

int arb_merge(struct arb_merge *out, arb_project *p, const char *ws_name)
{
	return arb_merge_ext(out, p, ws_name, 0);
}

int arb_merge_ext(struct arb_merge *out, arb_project *p, const char *ws_name, unsigned flags)
{
	struct core_merge m = {0};
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	*out = (struct arb_merge){0};
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = core_ws_merge(p->core, ws, flags & ARB_HOME_CHECK ? CORE_HOME_CHECK : 0, &m);
	if (rc == 0) {
		out->kind = m.kind == CORE_MERGE_UP_TO_DATE	? ARB_MERGE_UP_TO_DATE
			    : m.kind == CORE_MERGE_FAST_FORWARD ? ARB_MERGE_FAST_FORWARD
								: ARB_MERGE_COMMIT;
		snprintf(out->branch, sizeof(out->branch), "%s", m.branch);
		snprintf(out->commit, sizeof(out->commit), "%s", m.commit);
	}
	core_ws_free(ws);
	return rc;
}

int arb_apply(size_t *files, arb_project *p, const char *ws_name)
{
	return arb_apply_ext(files, p, ws_name, 0);
}

int arb_apply_ext(size_t *files, arb_project *p, const char *ws_name, unsigned flags)
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	*files = 0;
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc =
		    core_ws_apply(p->core, ws, flags & ARB_HOME_CHECK ? CORE_HOME_CHECK : 0, files);
	core_ws_free(ws);
	return rc;
}

int arb_export(char commit[41], size_t *objects, arb_project *p, const char *ws_name)
{
	struct core_ws *ws = NULL;
	git_oid tip;
	int rc;

	lib_err_reset();
	commit[0] = '\0';
	*objects = 0;
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = core_ws_export(p->core, ws, &tip, objects);
	if (rc == 0)
		git_oid_tostr(commit, 41, &tip);
	core_ws_free(ws);
	return rc;
}
