/*
 * audit/runs.c: one row per run of a workspace's view daemon (audit_runs), so the next run
 * knows whether the last one ended cleanly and, if not, from when changes may be missing
 * from the audit (crash reconciliation; the contract is in audit.h).
 */
#include "audit/audit_internal.h"

#include <errno.h>
#include <unistd.h>

static int fail(sqlite3 *db)
{
	return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
}

int audit_runs_unclean_since(sqlite3 *db, int64_t ws_key, int64_t *since_ns)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*since_ns = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT min(max(start_ns, ifnull(synced_ns, 0) - ?2) - ?3) FROM "
			       "audit_runs WHERE ws = ?1 AND end_ns IS NULL",
			       -1, &st, NULL) != SQLITE_OK)
		return fail(db);
	sqlite3_bind_int64(st, 1, ws_key);
	sqlite3_bind_int64(st, 2, AUDIT_RUN_LAG_NS);
	sqlite3_bind_int64(st, 3, AUDIT_RUN_CLOCK_NS);
	rc = sqlite3_step(st) == SQLITE_ROW ? 0 : fail(db);
	if (rc == 0 && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
		*since_ns = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}

static int exec_run(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t c)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(db);
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	sqlite3_bind_int64(st, 3, c); /* SQLITE_RANGE when the statement has two: fine */
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : fail(db);
	sqlite3_finalize(st);
	return rc;
}

int audit_runs_begin(sqlite3 *db, int64_t ws_key, int64_t *run_id)
{
	int64_t now = util_now_ns();
	int rc;

	rc = audit_db_exec(db, "BEGIN IMMEDIATE");
	if (rc < 0)
		return rc;
	rc = exec_run(db,
		      "UPDATE audit_runs SET end_ns = ?2, clean = 0 WHERE ws = ?1 AND end_ns IS "
		      "NULL",
		      ws_key, now, 0);
	if (rc == 0)
		rc = exec_run(db, "INSERT INTO audit_runs (ws, pid, start_ns) VALUES (?, ?, ?)",
			      ws_key, getpid(), now);
	if (rc == 0) {
		*run_id = sqlite3_last_insert_rowid(db);
		rc = audit_db_exec(db, "COMMIT");
	}
	if (rc < 0)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int audit_runs_synced(sqlite3 *db, int64_t run_id, int64_t synced_ns, bool end)
{
	return exec_run(db,
			end ? "UPDATE audit_runs SET synced_ns = ?2, end_ns = ?3, clean = 1 "
			      "WHERE id = ?1"
			    : "UPDATE audit_runs SET synced_ns = ?2 WHERE id = ?1",
			run_id, synced_ns, util_now_ns());
}
