/* audit/audit_internal.h: what the files of audit/ share; not part of the public header. */
#ifndef ARB_AUDIT_INTERNAL_H
#define ARB_AUDIT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

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

#endif
