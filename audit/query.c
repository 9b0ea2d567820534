/* audit/query.c: the filtered timeline query behind `arborinth audit`. */
#include "audit/audit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const known_ops[] = {
    "create",	    "write",
    "truncate",	    "unlink",
    "mkdir",	    "rmdir",
    "rename",	    "link",
    "symlink",	    "chmod",
    "chown",	    "utimens",
    "setxattr",	    "removexattr",
    "mknod",	    "gap",
    "exec",	    "exit",
    "request",	    "tunnel",
    "unattributed", "unattributed-delete",
    "rewind",	    "limit",
    "fallocate",    "exchange",
    "disk-full",    NULL,
};

bool audit_op_known(const char *op)
{
	for (size_t i = 0; known_ops[i]; i++)
		if (!strcmp(known_ops[i], op))
			return true;
	return false;
}

bool audit_path_is_git(const char *path)
{
	return path && !strncmp(path, ".git", 4) && (path[4] == '\0' || path[4] == '/');
}

struct audit_query {
	sqlite3 *db;
	sqlite3_stmt *st;
};

#define GIT_PATH(col) "(" col " = '.git' OR substr(" col ", 1, 5) = '.git/')"

static void add_in_list(sqlite3_str *sql, const char *col, const char *const *vals)
{
	sqlite3_str_appendf(sql, " AND %s IN (", col);
	for (size_t i = 0; vals[i]; i++)
		sqlite3_str_appendf(sql, "%s%Q", i ? "," : "", vals[i]);
	sqlite3_str_appendall(sql, ")");
}

static char *build_sql(const struct audit_filter *f, bool by_seq)
{
	sqlite3_str *sql = sqlite3_str_new(NULL);
	const char *kinds[4] = {NULL};
	size_t nk = 0;

	sqlite3_str_appendall(
	    sql,
	    "SELECT e.seq, e.time_ns, e.kind, e.op, e.path, e.path2, e.result, e.pid, "
	    "e.comm, e.exe, e.session, e.size, e.count, e.off_lo, e.off_hi, e.mode, s.argv, "
	    "s.jail, e.backend, e.method, e.host, e.decision, e.reason, e.port, e.status, "
	    "e.bytes_up, e.bytes_down, e.duration_ns, e.mtime_ns FROM audit_events e LEFT JOIN "
	    "audit_sessions s "
	    "ON e.kind = 'exec' AND s.id = e.session WHERE e.ws = ?1");
	if (f->since_ns)
		sqlite3_str_appendall(sql, " AND e.time_ns >= ?2");
	if (f->until_ns)
		sqlite3_str_appendall(sql, " AND e.time_ns <= ?3");
	if (f->after_seq)
		sqlite3_str_appendall(sql, " AND e.seq > ?4");
	if (f->upto_seq)
		sqlite3_str_appendall(sql, " AND e.seq <= ?5");
	if (f->path_glob)
		sqlite3_str_appendall(sql, " AND (e.op = 'gap' OR e.path GLOB ?6 OR "
					   "(e.op IN ('rename', 'link') AND e.path2 GLOB ?6))");
	if (f->session)
		sqlite3_str_appendall(sql, " AND e.session = ?7");
	if (f->failed)
		sqlite3_str_appendall(sql, " AND (e.result != 0 OR e.op = 'gap')");
	if (f->ops)
		add_in_list(sql, "e.op", f->ops);
	if (f->kinds) {
		if (f->kinds & AUDIT_KIND_FS)
			kinds[nk++] = "fs";
		if (f->kinds & AUDIT_KIND_EXEC)
			kinds[nk++] = "exec";
		if (f->kinds & AUDIT_KIND_NET)
			kinds[nk++] = "net";
		add_in_list(sql, "e.kind", kinds);
	}
	/* .git internals: hidden when every path the row names is inside .git. */
	if (!f->all)
		sqlite3_str_appendall(sql, " AND NOT (e.kind = 'fs' AND " GIT_PATH(
					       "e.path") " AND (e.path2 IS NULL OR e.op IN "
							 "('symlink', 'setxattr', 'removexattr') "
							 "OR " GIT_PATH("e.path2") "))");
	sqlite3_str_appendall(sql, by_seq ? " ORDER BY e.seq" : " ORDER BY e.time_ns, e.seq");
	return sqlite3_str_finish(sql);
}

int audit_query_new(struct audit_query **out, sqlite3 *db, const struct audit_filter *f,
		    bool by_seq)
{
	struct audit_query *q = calloc(1, sizeof(*q));
	char *sql = build_sql(f, by_seq);
	int rc = 0;

	*out = NULL;
	if (!q || !sql) {
		rc = -ENOMEM;
		goto out;
	}
	q->db = db;
	if (sqlite3_prepare_v2(db, sql, -1, &q->st, NULL) != SQLITE_OK) {
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_int64(q->st, 1, f->ws_key);
	sqlite3_bind_int64(q->st, 2, f->since_ns);
	sqlite3_bind_int64(q->st, 3, f->until_ns);
	sqlite3_bind_int64(q->st, 4, f->after_seq);
	sqlite3_bind_int64(q->st, 5, f->upto_seq);
	if (f->path_glob)
		sqlite3_bind_text(q->st, 6, f->path_glob, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q->st, 7, f->session);
	*out = q;
	q = NULL;
out:
	sqlite3_free(sql);
	audit_query_free(q);
	return rc;
}

static int64_t col_int(sqlite3_stmt *st, int col, int64_t null_value)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? null_value
							   : sqlite3_column_int64(st, col);
}

static const char *col_text(sqlite3_stmt *st, int col)
{
	return (const char *)sqlite3_column_text(st, col);
}

int audit_query_next(struct audit_query *q, struct audit_row *row)
{
	sqlite3_stmt *st = q->st;
	int rc = sqlite3_step(st);

	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(q->db));
	*row = (struct audit_row){
	    .seq = sqlite3_column_int64(st, 0),
	    .time_ns = sqlite3_column_int64(st, 1),
	    .kind = col_text(st, 2),
	    .op = col_text(st, 3),
	    .path = col_text(st, 4),
	    .path2 = col_text(st, 5),
	    .result = sqlite3_column_int(st, 6),
	    .pid = col_int(st, 7, 0),
	    .comm = col_text(st, 8),
	    .exe = col_text(st, 9),
	    .session = col_int(st, 10, 0),
	    .size = col_int(st, 11, -1),
	    .count = col_int(st, 12, 0),
	    .off_lo = col_int(st, 13, -1),
	    .off_hi = col_int(st, 14, -1),
	    .mode = col_int(st, 15, -1),
	    .argv_json = col_text(st, 16),
	    .jail = col_text(st, 17),
	    .backend = col_text(st, 18),
	    .method = col_text(st, 19),
	    .host = col_text(st, 20),
	    .decision = col_text(st, 21),
	    .reason = col_text(st, 22),
	    .port = col_int(st, 23, -1),
	    .status = col_int(st, 24, -1),
	    .bytes_up = col_int(st, 25, -1),
	    .bytes_down = col_int(st, 26, -1),
	    .duration_ns = col_int(st, 27, -1),
	    .mtime_ns = col_int(st, 28, -1),
	};
	return 1;
}

void audit_query_free(struct audit_query *q)
{
	if (!q)
		return;
	sqlite3_finalize(q->st);
	free(q);
}

int audit_seq_max(sqlite3 *db, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int rc = -EIO;

	if (sqlite3_prepare_v2(db, "SELECT ifnull(max(seq), 0) FROM audit_events", -1, &st, NULL) ==
		SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = 0;
	} else {
		util_err(rc, "state database: %s", sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	return rc;
}
