/* audit/audit_internal.h: what the files of audit/ share; not part of the public header. */
#ifndef ARB_AUDIT_INTERNAL_H
#define ARB_AUDIT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "audit/audit.h"

/* Below this depth a parent chain is cut (the pid namespace still links a boxed process). */
#define AUDIT_PROC_DEPTH_MAX 32

/*
 * One process as seen at one moment: immutable after creation except `session` (owned by the
 * writer thread) and `checked_ns` (atomic). Reference counted; each holds a reference on its
 * parent. A process that execs gets a new identity (comm or exe differ).
 */
struct audit_proc {
	atomic_int refs;
	pid_t pid;
	uint64_t start; /* field 22 of /proc/PID/stat: clock ticks after boot */
	uint64_t pidns; /* inode of /proc/PID/ns/pid, 0 when unreadable */
	char comm[17];	/* may be empty */
	char *exe;	/* NULL when unreadable */
	int depth;	/* 0 for a process whose parent is unknown */
	bool truncated; /* the parent chain stops before a process without parent */
	struct audit_proc *parent;
	atomic_llong checked_ns; /* last time /proc agreed with this identity */
	int64_t session;	 /* writer only: -1 not resolved yet, 0 none, else the id */
};

struct audit_proc_cache;

int audit_proc_cache_new(struct audit_proc_cache **out) ARB_MUST_CHECK;
void audit_proc_cache_free(struct audit_proc_cache *c);
/*
 * The identity of pid now (see audit.h for the cost). NULL for pid <= 0 or when the process
 * never could be read. Caller releases with audit_proc_put(). Thread-safe.
 */
struct audit_proc *audit_proc_get(struct audit_proc_cache *c, pid_t pid);
void audit_proc_put(struct audit_proc *p);
/* Full /proc resolutions so far. */
uint64_t audit_proc_cache_misses(struct audit_proc_cache *c);

/*
 * Reads pid's comm, parent pid and start time from /proc/PID/stat (pid 0: "self").
 * comm is 17 bytes. -ENOENT when the process is gone.
 */
int audit_proc_stat(pid_t pid, char *comm, pid_t *ppid, uint64_t *start) ARB_MUST_CHECK;
/* Inode of /proc/PID/ns/pid (pid 0: self); 0 when unreadable. */
uint64_t audit_proc_pidns(pid_t pid);

/* Appends s as a JSON string (quoted, escaped) to buf of size *cap at *len; grows it. */
int audit_json_str(char **buf, size_t *len, size_t *cap, const char *s) ARB_MUST_CHECK;

/* Inserts the history row for a workspace when missing; *key receives its key. */
int audit_ws_key(sqlite3 *db, const char *ws_id, const char *ws_name, int64_t *key) ARB_MUST_CHECK;

/*
 * Tamper evidence (chain.c). A row's canonical values, in audit_chain_cols order (README.md,
 * "Tamper evidence"): each is NULL, a 64-bit integer or text (bytes, not NUL-terminated).
 * AUDIT_VAL_OTHER is a value arborinth never writes (a real or a blob put there by hand).
 */
#define AUDIT_HASH_LEN	 32
#define AUDIT_HASH_HEX	 (2 * AUDIT_HASH_LEN + 1)
#define AUDIT_CHAIN_COLS 28
enum {
	AUDIT_COL_SEQ,
	AUDIT_COL_PREV_SEQ,
	AUDIT_COL_TIME_NS,
	AUDIT_COL_KIND,
	AUDIT_COL_OP,
	AUDIT_COL_PATH,
	AUDIT_COL_PATH2,
	AUDIT_COL_RESULT,
	AUDIT_COL_PID,
	AUDIT_COL_COMM,
	AUDIT_COL_EXE,
	AUDIT_COL_SESSION,
	AUDIT_COL_SIZE,
	AUDIT_COL_COUNT,
	AUDIT_COL_OFF_LO,
	AUDIT_COL_OFF_HI,
	AUDIT_COL_MODE,
	AUDIT_COL_MTIME_NS,
	AUDIT_COL_BACKEND,
	AUDIT_COL_METHOD,
	AUDIT_COL_HOST,
	AUDIT_COL_PORT,
	AUDIT_COL_STATUS,
	AUDIT_COL_BYTES_UP,
	AUDIT_COL_BYTES_DOWN,
	AUDIT_COL_DURATION_NS,
	AUDIT_COL_DECISION,
	AUDIT_COL_REASON,
};
enum audit_val_type {
	AUDIT_VAL_NULL = 0,
	AUDIT_VAL_INT = 1,
	AUDIT_VAL_TEXT = 2,
	AUDIT_VAL_OTHER = 3
};
struct audit_val {
	enum audit_val_type type;
	int64_t i;
	const char *s;
	size_t n;
};

/* Values for a row being written: NULL when absent (and for empty text). */
static inline struct audit_val audit_val_int(int64_t i, bool present)
{
	return present ? (struct audit_val){.type = AUDIT_VAL_INT, .i = i}
		       : (struct audit_val){.type = AUDIT_VAL_NULL};
}

static inline struct audit_val audit_val_str(const char *s)
{
	return s && *s ? (struct audit_val){.type = AUDIT_VAL_TEXT, .s = s, .n = strlen(s)}
		       : (struct audit_val){.type = AUDIT_VAL_NULL};
}
extern const char *const audit_chain_cols[AUDIT_CHAIN_COLS];

/* SHA-256("arborinth audit chain v1\n" || ws_id): what the first row of a workspace follows. */
int audit_chain_genesis(const char *ws_id, uint8_t out[AUDIT_HASH_LEN]) ARB_MUST_CHECK;
/* SHA-256(prev || encoding of vals). */
int audit_chain_hash(const uint8_t prev[AUDIT_HASH_LEN], const struct audit_val *vals,
		     uint8_t out[AUDIT_HASH_LEN]) ARB_MUST_CHECK;
void audit_chain_hex(const uint8_t hash[AUDIT_HASH_LEN], char out[AUDIT_HASH_HEX]);
/* v = column col of st's current row (text borrowed until the statement moves). */
void audit_val_column(struct audit_val *v, sqlite3_stmt *st, int col);
/* "SELECT <chain columns>, hash FROM audit_events WHERE ws = ? ORDER BY seq"; sqlite3_free. */
char *audit_chain_select_sql(void);

/*
 * Appending chained rows to one workspace's chain on db. audit_chain_load() reads the chain's
 * head and the next seq: call it after BEGIN IMMEDIATE of every transaction (other
 * connections append too). audit_chain_insert() fills vals[seq] and vals[prev_seq], hashes
 * and inserts. Not thread-safe; the statements live as long as the chain.
 */
struct audit_chain;
int audit_chain_new(struct audit_chain **out, sqlite3 *db, int64_t ws_key,
		    const char *ws_id) ARB_MUST_CHECK;
void audit_chain_free(struct audit_chain *c);
int audit_chain_load(struct audit_chain *c) ARB_MUST_CHECK;
int audit_chain_insert(struct audit_chain *c, struct audit_val *vals) ARB_MUST_CHECK;
/* Records the chain's head in audit_heads; call before COMMIT of a transaction that inserted. */
int audit_chain_finish(struct audit_chain *c) ARB_MUST_CHECK;
/* The statement behind it (prepared by the caller with AUDIT_HEAD_SAVE_SQL). */
#define AUDIT_HEAD_SAVE_SQL                                                                        \
	"INSERT INTO audit_heads (ws, seq, hash) VALUES (?, ?, ?) ON CONFLICT(ws) DO UPDATE SET "  \
	"seq = excluded.seq, hash = excluded.hash"
int audit_head_save(sqlite3_stmt *save, int64_t ws_key, int64_t seq,
		    const uint8_t hash[AUDIT_HASH_LEN]) ARB_MUST_CHECK;
/* Chains every row of every workspace in seq order (the migration that added the chain). */
int audit_chain_backfill(sqlite3 *db) ARB_MUST_CHECK;

/*
 * Checking a chain row by row (verify.c), from the database or a bundle. Start with
 * audit_verify_start(); audit_verify_step() returns 0 while intact, 1 when this row breaks
 * the chain (res filled), negative errno on failure.
 */
struct audit_verifier {
	uint8_t genesis[AUDIT_HASH_LEN];
	uint8_t prev[AUDIT_HASH_LEN], prev2[AUDIT_HASH_LEN]; /* the last two rows' hashes */
	int64_t prev_seq, prev2_seq;			     /* 0: genesis; prev2 -1: none */
};
void audit_verify_start(struct audit_verifier *v, const uint8_t genesis[AUDIT_HASH_LEN],
			struct audit_verify_result *res);
int audit_verify_step(struct audit_verifier *v, const struct audit_val *vals, const void *hash,
		      size_t hash_len, struct audit_verify_result *res) ARB_MUST_CHECK;
/*
 * audit_verify_db() that also hands every intact row to cb (in seq order, stopping at the
 * first broken link or when cb returns non-zero).
 */
typedef int (*audit_row_cb)(void *ctx, const struct audit_val *vals, const void *hash);
int audit_verify_each(sqlite3 *db, int64_t ws_key, struct audit_verify_result *res, audit_row_cb cb,
		      void *cb_ctx) ARB_MUST_CHECK;
/*
 * Daemon runs (runs.c). A crashed run may have lost the events of changes made up to
 * AUDIT_RUN_LAG_NS before the moment its last committed batch was taken (writes coalesce for
 * up to about a second, and an event reaches the queue after its change); AUDIT_RUN_CLOCK_NS
 * allows for the kernel's coarse timestamps.
 */
#define AUDIT_RUN_LAG_NS   (10 * 1000000000LL)
#define AUDIT_RUN_CLOCK_NS (1 * 1000000000LL)
/* The earliest change time that unfinished runs of ws_key may not have recorded; 0: none. */
int audit_runs_unclean_since(sqlite3 *db, int64_t ws_key, int64_t *since_ns) ARB_MUST_CHECK;
/* Marks unfinished runs of ws_key as reconciled and starts a new one (its own transaction). */
int audit_runs_begin(sqlite3 *db, int64_t ws_key, int64_t *run_id) ARB_MUST_CHECK;
/* In the writer's transaction: everything queued before synced_ns is in; end: a clean end. */
int audit_runs_synced(sqlite3 *db, int64_t run_id, int64_t synced_ns, bool end) ARB_MUST_CHECK;

/* The workspace id of a history key (for the genesis). Caller frees. */
int audit_ws_id(sqlite3 *db, int64_t ws_key, char **out) ARB_MUST_CHECK;

#endif
