/*
 * audit/session.c: `arborinth shell` sessions, and workspace history rows (key, lookup by
 * name, purge).
 */
#include "audit/audit_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct audit_session {
	sqlite3 *db;
	struct audit_chain *chain;
	int64_t id, ws_key;
	pid_t leader;
};

static int db_fail(sqlite3 *db)
{
	return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
}

static int buf_add(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t ncap = (*cap ? *cap * 2 : 64) + n;
		char *nb = realloc(*buf, ncap);

		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

int audit_json_str(char **buf, size_t *len, size_t *cap, const char *s)
{
	int rc = buf_add(buf, len, cap, "\"", 1);

	for (const unsigned char *c = (const unsigned char *)s; rc == 0 && *c; c++) {
		char esc[8];

		if (*c == '"' || *c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", *c);
		else if (*c < 0x20)
			snprintf(esc, sizeof(esc), "\\u%04x", *c);
		else
			snprintf(esc, sizeof(esc), "%c", *c);
		rc = buf_add(buf, len, cap, esc, strlen(esc));
	}
	return rc == 0 ? buf_add(buf, len, cap, "\"", 1) : rc;
}

/* argv as a JSON array of strings. Caller frees. */
static int argv_json(char *const argv[], char **out)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = buf_add(&buf, &len, &cap, "[", 1);

	for (size_t i = 0; rc == 0 && argv && argv[i]; i++) {
		if (i > 0)
			rc = buf_add(&buf, &len, &cap, ",", 1);
		if (rc == 0)
			rc = audit_json_str(&buf, &len, &cap, argv[i]);
	}
	if (rc == 0)
		rc = buf_add(&buf, &len, &cap, "]", 1);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}

int audit_ws_key(sqlite3 *db, const char *ws_id, const char *ws_name, int64_t *key)
{
	sqlite3_stmt *st = NULL;
	int rc = -EIO;

	if (sqlite3_prepare_v2(db,
			       "INSERT OR IGNORE INTO audit_workspaces (id, name, created_ns) "
			       "VALUES (?1, ?2, ?3)",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db);
	sqlite3_bind_text(st, 1, ws_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, ws_name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, util_now_ns());
	if (sqlite3_step(st) != SQLITE_DONE)
		goto out;
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT key FROM audit_workspaces WHERE id = ?", -1, &st,
			       NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, ws_id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto out;
	*key = sqlite3_column_int64(st, 0);
	rc = 0;
out:
	if (rc < 0)
		db_fail(db);
	sqlite3_finalize(st);
	return rc;
}

int audit_ws_resolve(sqlite3 *db, const char *name, int64_t *key, int64_t *deleted_ns)
{
	sqlite3_stmt *st = NULL;
	int rc;

	/* The live workspace first, then the most recently deleted one. */
	if (sqlite3_prepare_v2(db,
			       "SELECT key, ifnull(deleted_ns, 0) FROM audit_workspaces "
			       "WHERE name = ? ORDER BY deleted_ns IS NOT NULL, deleted_ns DESC, "
			       "key DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*key = sqlite3_column_int64(st, 0);
		*deleted_ns = sqlite3_column_int64(st, 1);
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = util_err(-ENOENT, "no workspace named '%s'", name);
	} else {
		rc = db_fail(db);
	}
	sqlite3_finalize(st);
	return rc;
}

static int exec_bound(sqlite3 *db, const char *sql, const char *name, int64_t *changes)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_fail(db);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(db);
	else if (changes)
		*changes = sqlite3_changes64(db);
	sqlite3_finalize(st);
	return rc;
}

int audit_ws_purge(sqlite3 *db, const char *name, int64_t *removed)
{
	int64_t n = 0, rows = 0;
	int rc;

	rc = exec_bound(db,
			"DELETE FROM audit_events WHERE ws IN "
			"(SELECT key FROM audit_workspaces WHERE name = ?)",
			name, &n);
	if (rc == 0)
		rc = exec_bound(db,
				"DELETE FROM audit_sessions WHERE ws IN "
				"(SELECT key FROM audit_workspaces WHERE name = ?)",
				name, NULL);
	if (rc == 0)
		rc = exec_bound(db,
				"DELETE FROM audit_heads WHERE ws IN "
				"(SELECT key FROM audit_workspaces WHERE name = ?)",
				name, NULL);
	if (rc == 0)
		rc = exec_bound(db,
				"DELETE FROM audit_runs WHERE ws IN "
				"(SELECT key FROM audit_workspaces WHERE name = ?)",
				name, NULL);
	if (rc == 0)
		rc = exec_bound(db, "DELETE FROM audit_workspaces WHERE name = ?", name, &rows);
	if (rc == 0 && rows == 0)
		rc = util_err(-ENOENT, "no history of a workspace named '%s'", name);
	if (rc == 0 && removed)
		*removed = n;
	return rc;
}

int audit_ws_forget_unused(sqlite3 *db, const char *ws_id)
{
	static const char used[] = "SELECT key FROM audit_workspaces WHERE id = ?1 AND NOT EXISTS "
				   "(SELECT 1 FROM audit_events WHERE ws = key) AND NOT EXISTS "
				   "(SELECT 1 FROM audit_sessions WHERE ws = key)";
	char *runs = util_asprintf("DELETE FROM audit_runs WHERE ws IN (%s)", used);
	char *row = util_asprintf("DELETE FROM audit_workspaces WHERE key IN (%s)", used);
	int rc = runs && row ? exec_bound(db, runs, ws_id, NULL) : -ENOMEM;

	if (rc == 0)
		rc = exec_bound(db, row, ws_id, NULL);
	free(runs);
	free(row);
	return rc;
}

/* One row of the timeline for a session's start or end (in the caller's transaction). */
static int session_row(struct audit_session *s, const char *op, int64_t time_ns, int result)
{
	struct audit_val v[AUDIT_CHAIN_COLS] = {0};
	char comm[17] = "";
	pid_t ppid = 0;
	uint64_t start = 0;
	int rc;

	if (audit_proc_stat(0, comm, &ppid, &start) < 0)
		comm[0] = '\0';
	v[AUDIT_COL_TIME_NS] = audit_val_int(time_ns, true);
	v[AUDIT_COL_KIND] = audit_val_str("exec");
	v[AUDIT_COL_OP] = audit_val_str(op);
	v[AUDIT_COL_RESULT] = audit_val_int(result, true);
	v[AUDIT_COL_PID] = audit_val_int(s->leader, true);
	v[AUDIT_COL_COMM] =
	    (struct audit_val){.type = AUDIT_VAL_TEXT, .s = comm, .n = strlen(comm)};
	v[AUDIT_COL_SESSION] = audit_val_int(s->id, true);
	rc = audit_chain_load(s->chain);
	if (rc == 0)
		rc = audit_chain_insert(s->chain, v);
	if (rc == 0)
		rc = audit_chain_finish(s->chain);
	return rc == -EIO ? db_fail(s->db) : rc;
}

static int session_insert(struct audit_session *s, const char *jail, const char *argv,
			  int64_t start_ns)
{
	char comm[17];
	pid_t ppid;
	uint64_t start = 0;
	sqlite3_stmt *st = NULL;
	int rc;

	rc = audit_proc_stat(0, comm, &ppid, &start);
	if (rc < 0)
		return util_err(rc, "cannot read /proc/self/stat: %s", strerror(-rc));
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO audit_sessions (ws, argv, jail, leader_pid, "
			       "leader_start, leader_pidns, start_ns) VALUES (?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(s->db);
	sqlite3_bind_int64(st, 1, s->ws_key);
	sqlite3_bind_text(st, 2, argv, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, jail, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, s->leader);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)start);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)audit_proc_pidns(0));
	sqlite3_bind_int64(st, 7, start_ns);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s->db);
	sqlite3_finalize(st);
	if (rc == 0)
		s->id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int audit_session_begin(struct audit_session **out, const char *db_path, const char *ws_id,
			const char *ws_name, const char *jail, char *const argv[])
{
	struct audit_session *s = calloc(1, sizeof(*s));
	int64_t start_ns = util_now_ns();
	char *json = NULL;
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->leader = getpid();
	rc = argv_json(argv, &json);
	if (rc == 0)
		rc = audit_db_open(&s->db, db_path);
	if (rc == 0)
		rc = audit_db_exec(s->db, "BEGIN IMMEDIATE");
	if (rc < 0)
		goto out;
	rc = audit_ws_key(s->db, ws_id, ws_name, &s->ws_key);
	if (rc == 0)
		rc = audit_chain_new(&s->chain, s->db, s->ws_key, ws_id);
	if (rc == 0)
		rc = session_insert(s, jail, json, start_ns);
	if (rc == 0)
		rc = session_row(s, "exec", start_ns, 0);
	if (rc == 0)
		rc = audit_db_exec(s->db, "COMMIT");
	if (rc < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	free(json);
	if (rc < 0) {
		audit_session_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int64_t audit_session_id(const struct audit_session *s)
{
	return s->id;
}

int audit_session_set_box(struct audit_session *s, pid_t box)
{
	uint64_t ns = box > 0 ? audit_proc_pidns(box) : 0;
	sqlite3_stmt *st = NULL;
	int rc;

	/* The launcher's own namespace would name every host process: never a box's. */
	if (!ns || ns == audit_proc_pidns(0))
		return util_err(-EINVAL, "the box's pid namespace (pid %d) is not one of its own",
				(int)box);
	if (sqlite3_prepare_v2(s->db, "UPDATE audit_sessions SET box_pidns = ? WHERE id = ?", -1,
			       &st, NULL) != SQLITE_OK)
		return db_fail(s->db);
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ns);
	sqlite3_bind_int64(st, 2, s->id);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s->db);
	sqlite3_finalize(st);
	return rc;
}

int audit_session_end(struct audit_session *s, int exit_status)
{
	int64_t end_ns = util_now_ns();
	sqlite3_stmt *st = NULL;
	int rc;

	rc = audit_db_exec(s->db, "BEGIN IMMEDIATE");
	if (rc < 0)
		goto out;
	if (sqlite3_prepare_v2(s->db,
			       "UPDATE audit_sessions SET end_ns = ?, exit_status = ? WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(s->db);
		goto rollback;
	}
	sqlite3_bind_int64(st, 1, end_ns);
	sqlite3_bind_int(st, 2, exit_status);
	sqlite3_bind_int64(st, 3, s->id);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s->db);
	if (rc == 0)
		rc = session_row(s, "exit", end_ns, exit_status);
	if (rc == 0)
		rc = audit_db_exec(s->db, "COMMIT");
rollback:
	if (rc < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
out:
	sqlite3_finalize(st);
	audit_session_free(s);
	return rc;
}

int audit_session_limit(struct audit_session *s, const char *option, const char *what,
			int64_t count)
{
	struct audit_val v[AUDIT_CHAIN_COLS] = {0};
	char comm[17] = "";
	pid_t ppid = 0;
	uint64_t start = 0;
	int rc = audit_db_exec(s->db, "BEGIN IMMEDIATE");

	if (rc < 0)
		return rc;
	if (audit_proc_stat(0, comm, &ppid, &start) < 0)
		comm[0] = '\0';
	v[AUDIT_COL_COMM] =
	    (struct audit_val){.type = AUDIT_VAL_TEXT, .s = comm, .n = strlen(comm)};
	v[AUDIT_COL_TIME_NS] = audit_val_int(util_now_ns(), true);
	v[AUDIT_COL_KIND] = audit_val_str("exec");
	v[AUDIT_COL_OP] = audit_val_str("limit");
	v[AUDIT_COL_PATH] = audit_val_str(option);
	v[AUDIT_COL_PATH2] = audit_val_str(what);
	v[AUDIT_COL_RESULT] = audit_val_int(0, true);
	v[AUDIT_COL_PID] = audit_val_int(s->leader, true);
	v[AUDIT_COL_SESSION] = audit_val_int(s->id, true);
	v[AUDIT_COL_COUNT] = audit_val_int(count, true);
	rc = audit_chain_load(s->chain);
	if (rc == 0)
		rc = audit_chain_insert(s->chain, v);
	if (rc == 0)
		rc = audit_chain_finish(s->chain);
	if (rc == -EIO)
		rc = db_fail(s->db);
	if (rc == 0)
		rc = audit_db_exec(s->db, "COMMIT");
	if (rc < 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

void audit_session_free(struct audit_session *s)
{
	if (!s)
		return;
	audit_chain_free(s->chain);
	audit_db_close(s->db);
	free(s);
}

int audit_sessions_open(sqlite3 *db, int64_t ws_key, struct audit_open_session *out, size_t max,
			size_t *n)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, r;

	*n = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, leader_pid, start_ns FROM audit_sessions "
			       "WHERE ws = ? AND end_ns IS NULL ORDER BY start_ns DESC, id DESC",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db);
	sqlite3_bind_int64(st, 1, ws_key);
	while (*n < max && (r = sqlite3_step(st)) == SQLITE_ROW)
		out[(*n)++] =
		    (struct audit_open_session){.id = sqlite3_column_int64(st, 0),
						.leader = (pid_t)sqlite3_column_int64(st, 1),
						.start_ns = sqlite3_column_int64(st, 2)};
	if (*n < max && r != SQLITE_DONE)
		rc = db_fail(db);
	sqlite3_finalize(st);
	return rc;
}
