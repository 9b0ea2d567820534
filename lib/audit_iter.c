/* lib/audit_iter.c: a workspace's audit timeline as an iterator of rows (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "core/core.h"

struct arb_audit_iter {
	struct audit_query *q;
	struct arb_audit_row row;
};

/* A mounted view's pending writes first, so that the timeline is current (best effort). */
static void sync_live(arb_project *p, const char *ws_name)
{
	struct core_ws *ws = NULL;

	if (core_ws_get(p->core, ws_name, &ws) == 0 && core_ws_audit_sync(ws) < 0)
		util_err_clear(); /* what is recorded is still worth reading */
	core_ws_free(ws);
}

int arb_audit_open(arb_audit_iter **out, arb_project *p, const char *ws_name,
		   const struct arb_audit_filter *f)
{
	struct audit_filter af = {0};
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
	if (rc == 0 && !deleted_ns && !(f && f->no_sync))
		sync_live(p, ws_name);
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
		af.ops = f->ops;
		af.after_seq = f->after_seq;
		af.upto_seq = f->upto_seq;
	}
	if (rc == 0 && !(it = calloc(1, sizeof(*it))))
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = audit_query_new(&it->q, db, &af, f && f->by_seq);
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
	    .mode = r.mode,
	    .mtime_ns = r.mtime_ns,
	    .backend = r.backend,
	    .reason = r.reason,
	    .port = r.port,
	    .bytes_up = r.bytes_up,
	    .bytes_down = r.bytes_down,
	    .duration_ns = r.duration_ns,
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

/* ---- summary ----------------------------------------------------------------------------- */

struct arb_audit_summary {
	struct audit_summary *s;
	struct arb_audit_summary_entry *v; /* strings borrowed from s */
	size_t n;
};

int arb_audit_summary_open(arb_audit_summary **out, arb_project *p, const char *ws_name,
			   const struct arb_audit_filter *f)
{
	arb_audit_iter *it = NULL;
	arb_audit_summary *sum = NULL;
	struct audit_row r;
	int rc;

	*out = NULL;
	rc = arb_audit_open(&it, p, ws_name, f);
	if (rc < 0)
		return rc;
	lib_err_reset();
	if (!(sum = calloc(1, sizeof(*sum))) || audit_summary_new(&sum->s) < 0)
		rc = util_err(-ENOMEM, "out of memory");
	while (rc == 0 && (rc = audit_query_next(it->q, &r)) == 1)
		rc = audit_summary_add(sum->s, &r);
	arb_audit_free(it);
	if (rc == 0) {
		const struct audit_summary_entry *e;

		sum->n = audit_summary_entries(sum->s, &e);
		if (!(sum->v = calloc(sum->n + 1, sizeof(*sum->v))))
			rc = util_err(-ENOMEM, "out of memory");
		for (size_t i = 0; rc == 0 && i < sum->n; i++)
			sum->v[i] = (struct arb_audit_summary_entry){
			    e[i].path,	e[i].status,   e[i].renamed_to, e[i].ops,
			    e[i].bytes, e[i].first_ns, e[i].last_ns};
	}
	if (rc < 0) {
		arb_audit_summary_free(sum);
		return rc;
	}
	*out = sum;
	return 0;
}

size_t arb_audit_summary_entries(const arb_audit_summary *s,
				 const struct arb_audit_summary_entry **out)
{
	*out = s->v;
	return s->n;
}

void arb_audit_summary_free(arb_audit_summary *s)
{
	if (!s)
		return;
	audit_summary_free(s->s);
	free(s->v);
	free(s);
}

/* ---- the history, seqs, names and times --------------------------------------------------- */

/* The project's database and the history key of ws_name. */
static int resolve(arb_project *p, const char *ws_name, sqlite3 **db, int64_t *key,
		   int64_t *deleted_ns)
{
	int rc = core_project_db(p->core, false, db);

	if (rc == -ENOENT)
		return lib_input_err(util_err(-ENOENT, "no workspace named '%s'", ws_name));
	if (rc == 0 && (rc = audit_ws_resolve(*db, ws_name, key, deleted_ns)) == -ENOENT)
		rc = lib_input_err(rc);
	return rc;
}

int arb_audit_history(int64_t *deleted_ns, arb_project *p, const char *ws_name)
{
	sqlite3 *db = NULL;
	int64_t key;

	lib_err_reset();
	*deleted_ns = 0;
	return resolve(p, ws_name, &db, &key, deleted_ns);
}

int arb_audit_seq_max(int64_t *out, arb_project *p)
{
	sqlite3 *db = NULL;
	int rc;

	lib_err_reset();
	*out = 0;
	rc = core_project_db(p->core, false, &db);
	if (rc == -ENOENT)
		return 0;
	return rc < 0 ? rc : audit_seq_max(db, out);
}

int arb_audit_op_known(const char *op)
{
	return op && audit_op_known(op);
}

int arb_time_parse(int64_t *out_ns, const char *text)
{
	lib_err_reset();
	return lib_input_err(audit_time_parse(text, util_now_ns(), out_ns));
}

/* ---- the hash chain ---------------------------------------------------------------------- */

static void verify_out(struct arb_audit_verify *out, const struct audit_verify_result *r)
{
	*out = (struct arb_audit_verify){.ok = r->ok, .rows = r->rows, .broken_seq = r->broken_seq};
	snprintf(out->head, sizeof(out->head), "%s", r->head);
	snprintf(out->reason, sizeof(out->reason), "%s", r->reason);
	snprintf(out->workspace, sizeof(out->workspace), "%s", r->workspace);
}

int arb_audit_verify(struct arb_audit_verify *res, arb_project *p, const char *ws_name)
{
	struct audit_verify_result r = {0};
	sqlite3 *db = NULL;
	int64_t key = 0, deleted_ns = 0;
	int rc;

	lib_err_reset();
	rc = resolve(p, ws_name, &db, &key, &deleted_ns);
	if (rc == 0 && !deleted_ns)
		sync_live(p, ws_name);
	if (rc == 0)
		rc = audit_verify_db(db, key, &r);
	verify_out(res, &r);
	return rc;
}

int arb_audit_verify_bundle(struct arb_audit_verify *res, const char *path)
{
	struct audit_verify_result r = {0};
	int rc;

	lib_err_reset();
	rc = audit_verify_bundle(path, &r);
	verify_out(res, &r);
	return rc == -EINVAL || rc == -ENOENT ? lib_input_err(rc) : rc;
}

int arb_audit_export(struct arb_audit_verify *res, arb_project *p, const char *ws_name, int fd)
{
	struct audit_verify_result r = {0};
	sqlite3 *db = NULL;
	int64_t key = 0, deleted_ns = 0;
	FILE *f = NULL;
	int rc;

	lib_err_reset();
	rc = resolve(p, ws_name, &db, &key, &deleted_ns);
	if (rc == 0 && !deleted_ns)
		sync_live(p, ws_name);
	if (rc == 0)
		rc = lib_fd_stream(fd, "export", &f);
	if (rc == 0)
		rc = audit_export(db, key, ws_name, f, &r);
	if (f && fclose(f) != 0 && rc == 0)
		rc = util_err(-EIO, "export: cannot write the bundle");
	verify_out(res, &r);
	return rc;
}
