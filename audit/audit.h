/*
 * audit: the state database (<state dir>/state.db): its schema and migrations, and (as the
 * audit issue lands) the batched event writer and the queries behind `arborinth audit`.
 */
#ifndef ARB_AUDIT_H
#define ARB_AUDIT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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
 * The event recorder. The fs daemon fills a struct audit_event per mutating operation and
 * hands it to audit_log_append(); a writer thread stores batches in state.db.
 *
 * Delivery contract:
 * - append never touches SQLite. It copies the event into a queue and returns. When the
 *   queue holds queue_max events and the database is writable, append waits until the writer
 *   has taken a batch (back-pressure; counted in stats.waits/wait_ns). It never drops an event
 *   while the database is writable.
 * - The writer takes everything queued (up to 4096 per transaction) as soon as it is there, so
 *   an event is committed within a few milliseconds under light load and well within 100 ms
 *   under a burst. WAL with synchronous=NORMAL: a committed event survives the daemon being
 *   killed (kill -9); a power cut may lose the last transactions.
 * - When a transaction cannot be written (another process holds the write lock, the disk is
 *   full, an I/O error), the writer keeps the batch, retries with backoff (10 ms .. 500 ms)
 *   and the queue is allowed to grow up to backlog_bytes of memory without back-pressure, so
 *   file operations keep working. Beyond that, events are dropped and counted; the count is
 *   written as one row with op "gap" (count = events lost, time_ns = first lost) in the next
 *   transaction that succeeds. The same happens when an event cannot be copied (ENOMEM).
 * - audit_log_close() writes everything queued before it returns, retrying an unwritable
 *   database for up to close_timeout_ms; only then are the remaining events given up.
 *
 * Who did it: append resolves ev->pid on the calling thread to a process identity (comm, exe,
 * start time, pid namespace, parent chain) through a cache keyed by pid and checked against the
 * start time in /proc/PID/stat. A cache hit younger than 100 ms costs no system call; an older
 * one re-reads /proc/PID/stat once (so exec and pid reuse are noticed within 100 ms); a miss
 * reads stat, exe and ns/pid for the process and each uncached ancestor. When the process has
 * already exited, its last cached identity is used (audit_log_proc_note() at open time
 * makes sure there is one for writes recorded at release).
 *
 * Sessions: each `arborinth shell` run is a row in audit_sessions (see audit_session_begin)
 * holding its leader, the `arborinth shell` process itself: pid, start time (field 22 of
 * /proc/PID/stat, clock ticks since boot) and pid-namespace inode. The writer thread (never
 * the calling thread: this needs SQLite) links an event to the session whose leader (pid,
 * start time) appears in the event process's parent chain; the pid and start time pair names
 * exactly one process per boot, so a reused pid never matches. Sessions are read from the
 * database again whenever another connection has committed (PRAGMA data_version), and the
 * session row is committed before the command is started, so no event of a session can be
 * seen before its row. When a matched process lives in another pid namespace than the
 * daemon (a bubblewrap box), that namespace is remembered as the session's box_pidns (and
 * stored in the row), so later processes of the box whose parent chain is broken (re-parented
 * orphans, chains deeper than 32) are still linked while the session runs. A launcher that
 * knows its box's pid namespace says so before the command starts (audit_session_set_box):
 * a process in the box pid namespace of a running session (itself or an ancestor, looked up
 * before any leader) belongs to that session, so several boxes of one leader (threads of a
 * library process) are told apart by the kernel's word, not by anything a box can write. A
 * process that reaches a leader of several sessions outside their boxes goes to the one
 * running without a box (--jail none), else the latest. A process that leaves the leader's
 * tree under --jail none (double fork, re-parented to init) is not linked. The result is
 * memoised per process identity (never on a leader, which may lead more sessions later).
 */
struct audit_log;

struct audit_event {
	int64_t time_ns;  /* CLOCK_REALTIME when the operation happened */
	const char *op;	  /* "create", "write", "truncate", "unlink", "mkdir", "rmdir", "rename",
			   * "link", "symlink", "chmod", "chown", "utimens", "setxattr",
			   * "removexattr", "mknod", "fallocate" (mode: FALLOC_FL_* flags; size,
			   * off_lo, off_hi: the range), "exchange" (RENAME_EXCHANGE of path and
			   * path2), "disk-full" (refused for want of space: fs/disk.c) */
	const char *path; /* workspace-relative, no leading '/' */
	const char
	    *path2;	  /* rename: the destination (path is the source); link: the existing
			   * file that the new name path links to; symlink: the target; else NULL */
	int result;	  /* 0 or a positive errno */
	pid_t pid;	  /* the caller (fuse_req_ctx()->pid); 0 when unknown */
	int64_t size;	  /* bytes written / new size (truncate) / -1 when not applicable */
	int64_t count;	  /* writes coalesced (write; 0: a passthrough open), refusals
			   * (disk-full), else 0 */
	int64_t off_lo;	  /* lowest offset written (write); the range (fallocate, disk-full) */
	int64_t off_hi;	  /* highest end offset written (write); the range's end */
	uint32_t mode;	  /* chmod/create/mkdir/mknod mode, else 0; "unattributed": st_mode */
	int64_t mtime_ns; /* "unattributed": the entry's mtime; else 0 (not stored) */
	const char *kind; /* NULL: "fs"; "net" for the proxy's requests (fields below) */
	/*
	 * > 0: the session this event belongs to, taken as is (the proxy knows its box's
	 * session; its events have no process in the box). 0: found from pid as above.
	 */
	int64_t session;
	/*
	 * kind "net" (op "request": a request to a credential-proxy backend; op "tunnel": a
	 * request to the --allow-host proxy, normally CONNECT). Stored only for "net" events.
	 * Never a body, never a credential: the caller redacts them from path and host.
	 */
	const char *backend;  /* NULL when no backend matched, or a tunnel */
	const char *method;   /* NULL when the request line was unreadable */
	const char *host;     /* tunnels: the requested host; else NULL */
	int port;	      /* tunnels: the requested port; else 0 */
	int status;	      /* HTTP status sent to the box; 0 when none could be sent */
	int64_t bytes_up;     /* body (tunnel: stream) bytes from the box */
	int64_t bytes_down;   /* body (tunnel: stream) bytes to the box */
	int64_t duration_ns;  /* from the complete request head to the end */
	const char *decision; /* "allowed" or "refused" */
	const char *reason;   /* "allowed", the policy's reason, or what went wrong */
};

/* Limits; a zero field takes its default. */
struct audit_log_opts {
	size_t queue_max;     /* events queued before append waits (default 16384) */
	size_t backlog_bytes; /* memory kept while the database is unwritable (default 64 MiB) */
	int close_timeout_ms; /* how long close retries an unwritable database (default 10000) */
};

struct audit_log_stats {
	uint64_t appended;     /* events accepted by append */
	uint64_t written;      /* events committed (gap rows not included) */
	uint64_t dropped;      /* events lost (reported in gap rows) */
	uint64_t gap_rows;     /* gap rows committed */
	uint64_t pending;      /* accepted and not yet committed */
	uint64_t waits;	       /* appends that waited on a full queue */
	int64_t wait_ns;       /* total time they waited */
	uint64_t transactions; /* committed transactions */
	uint64_t failures;     /* transactions that could not be written and were retried */
	uint64_t proc_misses;  /* pid cache misses (full /proc resolution) */
};

/*
 * Opens the recorder for one workspace (by id and name) on the database at db_path (created and
 * migrated if needed) and starts its writer thread. Caller closes with audit_log_close(),
 * which writes every queued event before returning.
 */
int audit_log_open(struct audit_log **out, const char *db_path, const char *ws_id,
		   const char *ws_name) ARB_MUST_CHECK;
/* The same with limits (opts may be NULL). */
int audit_log_open_opts(struct audit_log **out, const char *db_path, const char *ws_id,
			const char *ws_name, const struct audit_log_opts *opts) ARB_MUST_CHECK;
/*
 * Queues a copy of ev (strings copied). Thread-safe; never waits on SQLite, only on a full
 * queue (see above). 0 when queued; -ENOBUFS when the event was dropped and counted in a gap
 * (the database has been unwritable for too long); -EINVAL for an event without op. log may be
 * NULL (audit off): then nothing happens and 0 is returned.
 */
int audit_log_append(struct audit_log *log, const struct audit_event *ev);
/*
 * Resolves pid into the process cache now (at open/create of a handle whose coalesced write
 * is appended at release, when the process may be gone). Thread-safe; NULL log is a no-op.
 */
void audit_log_proc_note(struct audit_log *log, pid_t pid);
/*
 * Waits until everything appended before the call is committed (or dropped into a gap).
 * Thread-safe. -ETIMEDOUT when the database stayed unwritable for close_timeout_ms.
 */
int audit_log_flush(struct audit_log *log) ARB_MUST_CHECK;
/* Counters so far. Thread-safe. */
void audit_log_stats(struct audit_log *log, struct audit_log_stats *out);
/*
 * Drains the queue into the database, stops the writer and frees log. NULL is fine. A run
 * begun with audit_log_run_begin() is marked as ended cleanly once everything is written.
 */
void audit_log_close(struct audit_log *log);

/*
 * Crash reconciliation, for the view daemon (one run of it per mount). A run is recorded in
 * audit_runs when it begins; each committed batch notes in it the time the batch was taken
 * (every event queued before then is in); audit_log_close() marks it ended once everything
 * is written. A run with no end crashed (kill -9, power cut, a close that gave up) and may
 * have lost the events of changes made up to 10 s before its last note (writes coalesce for a
 * second; an event is queued after its change) or since it began.
 *
 * audit_log_run_check(): before serving, *since_ns = the earliest change time that unfinished
 * runs of this workspace may not have recorded (minus 1 s for coarse kernel timestamps), or 0
 * when the last run ended cleanly. The caller then appends an "unattributed" event for each
 * entry of the upper layer whose ctime is at or after it, and calls audit_log_run_begin():
 * it waits until those are committed, marks the unfinished runs as reconciled and begins this
 * one. A crash before that leaves them unfinished, so the next start reconciles again. Call
 * both from one thread, before any other append.
 */
int audit_log_run_check(struct audit_log *log, int64_t *since_ns) ARB_MUST_CHECK;
int audit_log_run_begin(struct audit_log *log) ARB_MUST_CHECK;

/*
 * Sessions: one row per `arborinth shell` run, written through their own connection.
 * audit_session_begin() records argv, jail, start time and the leader (the calling process:
 * getpid(), its start time and pid namespace), and one "exec" row in the timeline; it commits
 * before returning, so call it before starting the command. audit_session_end() records the
 * end time and exit status (shell convention: 128+N for signal N) and an "exit" row, and frees
 * s; audit_session_free() frees without ending (the session then shows as still running).
 * Not thread-safe (one session per thread).
 */
struct audit_session;
int audit_session_begin(struct audit_session **out, const char *db_path, const char *ws_id,
			const char *ws_name, const char *jail, char *const argv[]) ARB_MUST_CHECK;
int64_t audit_session_id(const struct audit_session *s);
/*
 * The session's box: `box` is its pid 1 on the host, whose pid namespace (read now, from
 * /proc) is stored as the session's box_pidns, so that every process of that namespace is
 * linked to this session while it runs, before its leader (several sessions of one process,
 * the library's, share their leader). Call before the box's command starts. -EINVAL when the
 * namespace is the caller's own or cannot be read.
 */
int audit_session_set_box(struct audit_session *s, pid_t box) ARB_MUST_CHECK;
int audit_session_end(struct audit_session *s, int exit_status) ARB_MUST_CHECK;
/*
 * A limit of the session's box acted (kind "exec", op "limit"): `option` (--timeout,
 * --memory, --pids) in path, what it did in path2 (a sentence), `count` (processes ended,
 * forks refused; 1 for a timeout) in count. Its own transaction; call before the end.
 */
int audit_session_limit(struct audit_session *s, const char *option, const char *what,
			int64_t count) ARB_MUST_CHECK;
void audit_session_free(struct audit_session *s);

/*
 * The sessions of workspace ws_key that have not ended (no end time: running, or their
 * leader died before it could record one), newest first: up to max, *n of them. Through the
 * sessions table's index, so it costs the workspace's sessions, not its events.
 */
struct audit_open_session {
	int64_t id, start_ns;
	pid_t leader;
};
int audit_sessions_open(sqlite3 *db, int64_t ws_key, struct audit_open_session *out, size_t max,
			size_t *n) ARB_MUST_CHECK;

/*
 * History of workspaces. Every workspace gets a row in audit_workspaces when it is created
 * (a trigger on `workspaces`), keyed by its random id, and keeps it (with deleted_ns set)
 * after `workspace delete`, so its events stay readable. A later workspace of the same name
 * has a new id and its own, empty, history.
 *
 * audit_ws_resolve(): the history to show for name: the live workspace of that name, else the
 * most recently deleted one. *key receives its key (for queries), *deleted_ns its deletion
 * time or 0. -ENOENT with a message when no workspace of that name ever had history.
 */
int audit_ws_resolve(sqlite3 *db, const char *name, int64_t *key,
		     int64_t *deleted_ns) ARB_MUST_CHECK;
/*
 * Deletes every event, session and daemon run of every workspace ever called name, and their
 * history rows (the live workspace's row too: it is added back when the database is next written
 * for it). Run inside the caller's transaction when there is one. *removed (optional) counts the
 * events removed. -ENOENT when there is no history of that name.
 */
int audit_ws_purge(sqlite3 *db, const char *name, int64_t *removed) ARB_MUST_CHECK;
/*
 * Forgets the workspace whose id is ws_id when its view never came up (a create that failed
 * at the mount): its history row and daemon runs, only when it has no event or session.
 * 0 also when there is nothing to forget.
 */
int audit_ws_forget_unused(sqlite3 *db, const char *ws_id) ARB_MUST_CHECK;

/*
 * Reading the timeline (`arborinth audit`). Rows come from audit_events: kind "fs" (file
 * system operations and "gap" rows), "exec" (a session's "exec" and "exit"), "net" (the
 * proxy's "request" and "tunnel" rows). A "net" row's result is 0 when it was allowed and
 * completed, 1 when it was refused or failed (so --failed finds it).
 */
enum {
	AUDIT_KIND_FS = 1,
	AUDIT_KIND_EXEC = 2,
	AUDIT_KIND_NET = 4,
};

struct audit_filter {
	int64_t ws_key;		/* from audit_ws_resolve() */
	int64_t since_ns;	/* 0: from the start */
	int64_t until_ns;	/* 0: to the end (inclusive) */
	const char *path_glob;	/* SQLite GLOB on path or path2 (`*` crosses '/'); NULL: any */
	const char *const *ops; /* NULL-terminated list of ops; NULL: any */
	unsigned kinds;		/* AUDIT_KIND_* mask; 0: all */
	int64_t session;	/* 0: any */
	bool failed;		/* only failed operations and non-zero exits */
	bool all;		/* include .git/ internals */
	int64_t after_seq;	/* only rows with seq > after_seq (--follow) */
	int64_t upto_seq;	/* 0, or only rows with seq <= upto_seq */
};

/* One row; strings borrowed until the next audit_query_next() or audit_query_free(). */
struct audit_row {
	int64_t seq, time_ns;
	const char *kind, *op, *path, *path2; /* path/path2 may be NULL */
	int result;			      /* errno (fs), exit status ("exit") */
	int64_t pid;			      /* 0: unknown */
	const char *comm, *exe;		      /* NULL: unknown */
	int64_t session;		      /* 0: none */
	int64_t size;			      /* -1: not applicable */
	int64_t count;			      /* writes coalesced; events lost for "gap" */
	int64_t off_lo, off_hi;		      /* -1: not applicable */
	int64_t mode;			      /* -1: not applicable */
	int64_t mtime_ns;		      /* "unattributed" rows; -1: not applicable */
	const char *argv_json, *jail;	      /* "exec"/"exit" rows: the session's argv, jail */
	/* "net" rows (see struct audit_event); NULL / -1 on other rows. */
	const char *backend, *method, *host, *decision, *reason;
	int64_t port, status, bytes_up, bytes_down, duration_ns;
};

/* True for the op names the timeline knows (fs ops, "gap", "exec", "exit", "request",
 * "tunnel"). */
bool audit_op_known(const char *op);
/* True when a path is inside the workspace's .git (hidden unless --all). */
bool audit_path_is_git(const char *path);

/*
 * Runs the filtered query on db: rows oldest first (by time, then seq), or by seq when by_seq
 * (for --follow). Caller frees with audit_query_free(). Not thread-safe.
 */
struct audit_query;
int audit_query_new(struct audit_query **out, sqlite3 *db, const struct audit_filter *f,
		    bool by_seq) ARB_MUST_CHECK;
/* 1 and *row filled, 0 at the end, negative errno on failure. */
int audit_query_next(struct audit_query *q, struct audit_row *row) ARB_MUST_CHECK;
void audit_query_free(struct audit_query *q);
/* The highest seq in the database (0 when empty). */
int audit_seq_max(sqlite3 *db, int64_t *out) ARB_MUST_CHECK;

/*
 * Tamper evidence. Every row of a workspace's timeline carries a SHA-256 hash chained over the
 * row before it (same workspace, seq order) and the seq of that row; the recorder computes
 * them as it inserts. The encoding and the bundle format are in README.md.
 *
 * audit_verify_db(): walks the workspace's chain (ws_key from audit_ws_resolve()). 0 when it
 * could be read: res->ok tells whether it is intact; if not, res->broken_seq names the first
 * broken link (a changed row, or the seq of a row missing or moved from before the next one)
 * and res->reason says which. A chain cut at its end cannot be told from a shorter one: keep
 * the head (res->head) somewhere the workload cannot write.
 */
struct audit_verify_result {
	bool ok;
	int64_t rows;	     /* rows checked (all of them when ok) */
	char head[65];	     /* hex hash of the last row checked ("" when none) */
	int64_t broken_seq;  /* the first broken link, 0 when ok or not tied to a row */
	char reason[200];    /* why it is broken */
	char workspace[128]; /* bundles: the workspace name recorded in it */
};
int audit_verify_db(sqlite3 *db, int64_t ws_key, struct audit_verify_result *res) ARB_MUST_CHECK;
/*
 * Writes the workspace's chain as a bundle (JSON lines: a header, one line per row with every
 * chained column and its hash, a trailer with the head and the row count) to out, checking
 * the chain as it goes. -EBADMSG (res filled as above) when the chain is broken: the caller
 * discards what was written.
 */
int audit_export(sqlite3 *db, int64_t ws_key, const char *ws_name, FILE *out,
		 struct audit_verify_result *res) ARB_MUST_CHECK;
/*
 * Checks a bundle written by audit_export(): every row's link and hash, then that the trailer
 * names the last row's hash and the row count. 0 when the file could be read (res->ok says
 * whether it verifies); -EINVAL with a message (the line number) for a file that is not a
 * bundle; -errno when it cannot be read.
 */
int audit_verify_bundle(const char *path, struct audit_verify_result *res) ARB_MUST_CHECK;

/*
 * --summary: one entry per path, from fs rows fed in timeline order. status is "added" (did
 * not exist before its first operation), "deleted" (existed, or was added, and is gone at the
 * end), "renamed" (moved away; renamed_to names the last destination), or "modified". Failed
 * operations count in ops but do not change the status or bytes.
 */
struct audit_summary_entry {
	const char *path;
	const char *status;
	const char *renamed_to; /* NULL unless renamed */
	int64_t ops, bytes, first_ns, last_ns;
};
struct audit_summary;
int audit_summary_new(struct audit_summary **out) ARB_MUST_CHECK;
int audit_summary_add(struct audit_summary *s, const struct audit_row *row) ARB_MUST_CHECK;
/* Entries sorted by path; borrowed, valid while s lives. */
size_t audit_summary_entries(struct audit_summary *s, const struct audit_summary_entry **out);
void audit_summary_free(struct audit_summary *s);

/*
 * Parses a time for --since/--until: relative to now ("30s", "10m", "2h", "3d", "1w", a
 * duration back from now), an ISO 8601 / RFC 3339 time ("2024-05-01T12:00:00Z", with
 * fraction or offset), a local "YYYY-MM-DD HH:MM[:SS]" or "YYYY-MM-DD" (local midnight), or
 * "@SECONDS" since the epoch. -EINVAL with a message otherwise.
 */
int audit_time_parse(const char *s, int64_t now_ns, int64_t *out) ARB_MUST_CHECK;

#endif
