/*
 * audit: the state database (.arborinth/state.db): its schema and migrations, and (as the
 * audit issue lands) the batched event writer and the queries behind `arborinth audit`.
 */
#ifndef ARB_AUDIT_H
#define ARB_AUDIT_H

#include <sqlite3.h>

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

#endif
