/*
 * audit: the state database (.arborinth/state.db): its schema and migrations, and (as the
 * audit issue lands) the batched event writer and the queries behind `arborinth audit`.
 */
#ifndef ARB_AUDIT_H
#define ARB_AUDIT_H

#include <sqlite3.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/util.h"

/*
 * Opens (creating if needed) the SQLite database at path, in WAL mode with a busy timeout,
 * and migrates it to the latest schema version (PRAGMA user_version). A database written by a
 * newer arborinth (higher user_version) is refused with -EPROTO.
 * Caller closes *out with audit_db_close(). Not shared between threads.
 */
int audit_db_open(sqlite3 **out, const char *path) ARB_MUST_CHECK;
void audit_db_close(sqlite3 *db);
/* The schema version this build migrates to. */
int audit_db_schema_version(void);

/* Runs a statement with no result rows; sets the util error message on failure. */
int audit_db_exec(sqlite3 *db, const char *sql) ARB_MUST_CHECK;

/*
 * The event recorder (audit issue). The fs daemon fills a struct audit_event per mutating
 * operation and hands it to audit_log_append(); a writer thread stores batches in state.db.
 */
struct audit_log;

struct audit_event {
	int64_t time_ns;   /* CLOCK_REALTIME when the operation happened */
	const char *op;	   /* "create", "write", "truncate", "unlink", "mkdir", "rmdir", "rename",
			    * "link", "symlink", "chmod", "chown", "utimens", "setxattr",
			    * "removexattr", "mknod" */
	const char *path;  /* workspace-relative, no leading '/' */
	const char *path2; /* rename/link destination, symlink target; else NULL */
	int result;	   /* 0 or a positive errno */
	pid_t pid;	   /* the caller (fuse_req_ctx()->pid); 0 when unknown */
	int64_t size;	   /* bytes written / new size (truncate) / -1 when not applicable */
	int64_t count;	   /* writes coalesced into this event (write), else 0 */
	int64_t off_lo;	   /* lowest offset written (write) */
	int64_t off_hi;	   /* highest end offset written (write) */
	uint32_t mode;	   /* chmod/create/mkdir/mknod mode, else 0 */
};

/*
 * Opens the recorder for one workspace (by id and name) on the database at db_path and starts
 * its writer thread. Caller closes with audit_log_close(), which writes every queued event
 * before returning.
 */
int audit_log_open(struct audit_log **out, const char *db_path, const char *ws_id,
		   const char *ws_name) ARB_MUST_CHECK;
/*
 * Queues a copy of ev (strings copied). Thread-safe; never waits on SQLite, only (briefly) on a
 * full queue. Resolves pid to comm/exe/session on the calling thread while the process lives.
 */
int audit_log_append(struct audit_log *log, const struct audit_event *ev);
/* Waits until everything queued so far is in the database. */
int audit_log_flush(struct audit_log *log);
void audit_log_close(struct audit_log *log);

#endif
