/* audit/db.c: opening state.db and migrating its schema. */
#include "audit/audit_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * migrations[i] takes the schema from user_version i to i + 1: its SQL, then its step in C
 * (when it has one). Append only: a released migration is never edited, so every database
 * reaches the same schema.
 */
static const struct migration {
	const char *sql;
	int (*step)(sqlite3 *db);
} migrations[] = {
    /* 0 -> 1: workspaces. */
    {"CREATE TABLE workspaces ("
     "  id TEXT PRIMARY KEY,"
     "  name TEXT NOT NULL UNIQUE,"
     "  base_commit TEXT NOT NULL,"
     "  branch TEXT NOT NULL,"
     "  created_ns INTEGER NOT NULL,"
     "  state TEXT NOT NULL DEFAULT 'ready'"
     ");"},
    /*
     * 1 -> 2: audit. History rows outlive their workspace (triggers keep them in step), events
     * and sessions refer to a history row by its integer key.
     */
    {"CREATE TABLE audit_workspaces ("
     "  key INTEGER PRIMARY KEY,"
     "  id TEXT NOT NULL UNIQUE,"
     "  name TEXT NOT NULL,"
     "  created_ns INTEGER NOT NULL,"
     "  deleted_ns INTEGER"
     ");"
     "CREATE INDEX audit_workspaces_name ON audit_workspaces(name);"
     "INSERT INTO audit_workspaces (id, name, created_ns)"
     "  SELECT id, name, created_ns FROM workspaces;"
     "CREATE TRIGGER audit_workspaces_insert AFTER INSERT ON workspaces BEGIN"
     "  INSERT OR IGNORE INTO audit_workspaces (id, name, created_ns)"
     "    VALUES (new.id, new.name, new.created_ns);"
     "END;"
     "CREATE TRIGGER audit_workspaces_delete AFTER DELETE ON workspaces BEGIN"
     "  UPDATE audit_workspaces SET deleted_ns ="
     "    CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000000"
     "    WHERE id = old.id;"
     "END;"
     "CREATE TABLE audit_sessions ("
     "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
     "  ws INTEGER NOT NULL,"
     "  argv TEXT NOT NULL,"
     "  jail TEXT NOT NULL,"
     "  leader_pid INTEGER NOT NULL,"
     "  leader_start INTEGER NOT NULL,"
     "  leader_pidns INTEGER,"
     "  box_pidns INTEGER,"
     "  start_ns INTEGER NOT NULL,"
     "  end_ns INTEGER,"
     "  exit_status INTEGER"
     ");"
     "CREATE INDEX audit_sessions_ws ON audit_sessions(ws, start_ns);"
     "CREATE TABLE audit_events ("
     "  seq INTEGER PRIMARY KEY,"
     "  ws INTEGER NOT NULL,"
     "  time_ns INTEGER NOT NULL,"
     "  kind TEXT NOT NULL,"
     "  op TEXT NOT NULL,"
     "  path TEXT,"
     "  path2 TEXT,"
     "  result INTEGER NOT NULL DEFAULT 0,"
     "  pid INTEGER,"
     "  comm TEXT,"
     "  exe TEXT,"
     "  session INTEGER,"
     "  size INTEGER,"
     "  count INTEGER,"
     "  off_lo INTEGER,"
     "  off_hi INTEGER,"
     "  mode INTEGER"
     ");"
     "CREATE INDEX audit_events_ws_time ON audit_events(ws, time_ns);"
     "CREATE INDEX audit_events_ws_path ON audit_events(ws, path);"
     "CREATE INDEX audit_events_session ON audit_events(session) WHERE session IS NOT NULL;"},
    /*
     * 2 -> 3: the proxy's rows (kind 'net'): what was asked, what was answered, and why.
     * NULL on every other kind of row.
     */
    {"ALTER TABLE audit_events ADD COLUMN backend TEXT;"
     "ALTER TABLE audit_events ADD COLUMN method TEXT;"
     "ALTER TABLE audit_events ADD COLUMN host TEXT;"
     "ALTER TABLE audit_events ADD COLUMN port INTEGER;"
     "ALTER TABLE audit_events ADD COLUMN status INTEGER;"
     "ALTER TABLE audit_events ADD COLUMN bytes_up INTEGER;"
     "ALTER TABLE audit_events ADD COLUMN bytes_down INTEGER;"
     "ALTER TABLE audit_events ADD COLUMN duration_ns INTEGER;"
     "ALTER TABLE audit_events ADD COLUMN decision TEXT;"
     "ALTER TABLE audit_events ADD COLUMN reason TEXT;"},
    /*
     * 3 -> 4: tamper evidence and crash reconciliation. Each row's hash chains over the
     * previous row of its workspace (prev_seq); rows already there are chained now (C step).
     * audit_heads: each workspace's last row (seq, hash), written with the rows, so rows cut
     * from the end show. mtime_ns: an "unattributed" row's file mtime. audit_runs: one row
     * per view daemon run (see runs.c): a run without end_ns crashed, and the next one
     * reconciles.
     */
    {"ALTER TABLE audit_events ADD COLUMN mtime_ns INTEGER;"
     "ALTER TABLE audit_events ADD COLUMN prev_seq INTEGER;"
     "ALTER TABLE audit_events ADD COLUMN hash BLOB;"
     "CREATE INDEX audit_events_ws_seq ON audit_events(ws, seq);"
     "CREATE TABLE audit_heads ("
     "  ws INTEGER PRIMARY KEY,"
     "  seq INTEGER NOT NULL,"
     "  hash BLOB NOT NULL"
     ");"
     "CREATE TABLE audit_runs ("
     "  id INTEGER PRIMARY KEY,"
     "  ws INTEGER NOT NULL,"
     "  pid INTEGER NOT NULL,"
     "  start_ns INTEGER NOT NULL,"
     "  synced_ns INTEGER,"
     "  end_ns INTEGER,"
     "  clean INTEGER"
     ");"
     "CREATE INDEX audit_runs_ws ON audit_runs(ws, end_ns);",
     audit_chain_backfill},
};

int audit_db_schema_version(void)
{
	return (int)ARB_ARRAY_LEN(migrations);
}

int audit_db_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		util_err(-EIO, "state database: %s", msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

static int db_user_version(sqlite3 *db, int *out)
{
	sqlite3_stmt *st = NULL;
	int rc = -EIO;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_step(st) != SQLITE_ROW)
		goto out;
	*out = sqlite3_column_int(st, 0);
	rc = 0;
out:
	if (rc < 0)
		util_err(rc, "state database: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

static int db_migrate(sqlite3 *db)
{
	int version = 0;
	int rc;

	/*
	 * Current already (every open but a new version's first): nothing to write, so no write
	 * lock to wait for behind the other writers (the launcher, the view's daemon, the proxy
	 * of each box). The version is read again under the lock when there is work.
	 */
	if (db_user_version(db, &version) == 0 && version == audit_db_schema_version())
		return 0;
	util_err_clear();
	/* IMMEDIATE: two processes opening a fresh database migrate one after the other. */
	rc = audit_db_exec(db, "BEGIN IMMEDIATE");
	if (rc < 0)
		return rc;
	rc = db_user_version(db, &version);
	if (rc < 0)
		goto out;
	if (version > audit_db_schema_version()) {
		rc = util_err(-EPROTO,
			      "state database has schema version %d, newer than this "
			      "arborinth understands (%d)",
			      version, audit_db_schema_version());
		goto out;
	}
	for (; version < audit_db_schema_version(); version++) {
		char pragma[64];

		rc = audit_db_exec(db, migrations[version].sql);
		if (rc == 0 && migrations[version].step)
			rc = migrations[version].step(db);
		if (rc < 0)
			goto out;
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", version + 1);
		rc = audit_db_exec(db, pragma);
		if (rc < 0)
			goto out;
	}
	rc = audit_db_exec(db, "COMMIT");
out:
	if (rc < 0)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * path readable and writable by its owner only, whatever the umask: made 0600 when missing
 * (create), and (a state.db of an older version, made 0644) its group and other bits taken
 * away when this user owns it. Links are not followed. Never opens an existing file: closing
 * a descriptor of a database file drops every POSIX lock this process's SQLite connections
 * hold on it (fchmodat goes through an O_PATH descriptor, which does not).
 */
static int file_private(const char *path, bool create)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) < 0) {
		if (errno != ENOENT || !create)
			return 0; /* sqlite says why, if it matters */
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 && fchmod(fd, 0600) < 0) {
			close(fd);
			return util_err(-errno, "cannot make %s private: %s", path,
					strerror(errno));
		}
		if (fd >= 0)
			close(fd);
		return 0; /* EEXIST: made meanwhile, by a process that made it private too */
	}
	if (S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) &&
	    fchmodat(AT_FDCWD, path, st.st_mode & 0700, AT_SYMLINK_NOFOLLOW) < 0)
		return util_err(-errno, "cannot make %s private: %s", path, strerror(errno));
	return 0;
}

/* state.db and its -wal and -shm files: their owner's only (sqlite gives the latter two the
 * database's mode when it makes them). */
static int db_private(const char *path)
{
	static const char *const ext[] = {"-wal", "-shm"};
	int rc = file_private(path, true);

	for (size_t i = 0; rc == 0 && i < ARB_ARRAY_LEN(ext); i++) {
		char *side = util_asprintf("%s%s", path, ext[i]);

		rc = side ? file_private(side, false) : -ENOMEM;
		free(side);
	}
	return rc;
}

int audit_db_open(sqlite3 **out, const char *path)
{
	sqlite3 *db = NULL;
	int rc;

	*out = NULL;
	rc = db_private(path);
	if (rc < 0)
		return rc;
	if (sqlite3_open_v2(path, &db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
				SQLITE_OPEN_NOFOLLOW,
			    NULL) != SQLITE_OK) {
		rc = util_err(-EIO, "cannot open state database %s: %s", path,
			      db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(db, 30000);
	rc = audit_db_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
			       "PRAGMA foreign_keys=ON;");
	if (rc < 0)
		goto out;
	rc = db_migrate(db);
	if (rc < 0)
		goto out;
	*out = db;
	db = NULL;
out:
	sqlite3_close(db);
	return rc;
}

void audit_db_close(sqlite3 *db)
{
	sqlite3_close(db);
}
