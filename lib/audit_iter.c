/* lib/audit_iter.c: a workspace's audit timeline as an iterator of rows (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "audit/audit.h"
#include "core/core.h"

struct arb_audit_iter {
	struct audit_query *q;
	struct arb_audit_row row;
};

int arb_audit_open(arb_audit_iter **out, arb_project *p, const char *ws_name,
		   const struct arb_audit_filter *f)
{
	struct audit_filter af = {0};
	struct core_ws *ws = NULL;
	arb_audit_iter *it = NULL;
	sqlite3 *db = NULL;
	int64_t deleted_ns = 0;
	int rc;

	lib_err_reset();
	*out = NULL;
	rc = core_project_db(p->core, false, &db);
	if (rc == -ENOENT)
		return lib_input_err(util_err(-ENOENT, "no workspace named '%s'", ws_name));
	if (rc == 0 && (rc = audit_ws_resolve(db, ws_name, &af.ws_key, &deleted_ns)) == -ENOENT)
		return lib_input_err(rc);
	/* A mounted view's pending writes first, so that the timeline is current. */
	if (rc == 0 && !deleted_ns && core_ws_get(p->core, ws_name, &ws) == 0 &&
	    (rc = core_ws_audit_sync(ws)) < 0)
		rc = 0; /* what is recorded is still worth reading */
	core_ws_free(ws);
	if (rc == 0 && f) {
		af.since_ns = f->since_ns;
		af.until_ns = f->until_ns;
		af.path_glob = f->path_glob;
		af.kinds = (f->kinds & ARB_AUDIT_FS ? AUDIT_KIND_FS : 0) |
			   (f->kinds & ARB_AUDIT_EXEC ? AUDIT_KIND_EXEC : 0) |
			   (f->kinds & ARB_AUDIT_NET ? AUDIT_KIND_NET : 0);
		af.session = f->session;
		af.failed = f->failed != 0;
		af.all = f->all != 0;
	}
	if (rc == 0 && !(it = calloc(1, sizeof(*it))))
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = audit_query_new(&it->q, db, &af, false);
	if (rc < 0) {
		free(it);
		return rc;
	}
	*out = it;
	return 0;
}

int arb_audit_next(arb_audit_iter *it, const struct arb_audit_row **row)
{
	struct audit_row r;
	int rc;

	lib_err_reset();
	*row = NULL;
	rc = audit_query_next(it->q, &r);
	if (rc <= 0)
		return rc;
	it->row = (struct arb_audit_row){
	    .seq = r.seq,
	    .time_ns = r.time_ns,
	    .kind = r.kind,
	    .op = r.op,
	    .path = r.path,
	    .path2 = r.path2,
	    .result = r.result,
	    .pid = r.pid,
	    .comm = r.comm,
	    .exe = r.exe,
	    .session = r.session,
	    .size = r.size,
	    .count = r.count,
	    .off_lo = r.off_lo,
	    .off_hi = r.off_hi,
	    .argv_json = r.argv_json,
	    .method = r.method,
	    .host = r.host,
	    .decision = r.decision,
	    .status = r.status,
	    .jail = r.jail,
	};
	*row = &it->row;
	return 1;
}

void arb_audit_free(arb_audit_iter *it)
{
	if (!it)
		return;
	audit_query_free(it->q);
	free(it);
}
