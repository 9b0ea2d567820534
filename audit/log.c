/*
 * audit/log.c: the event recorder. FUSE threads queue events (audit_log_append); one writer
 * thread per log stores them in batched transactions and keeps them in memory while the
 * database cannot be written. The contract is in audit.h.
 */
#include "audit/audit_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH_MAX	      4096
#define DEFAULT_QUEUE_MAX     16384
#define DEFAULT_BACKLOG_BYTES (64u << 20)
#define DEFAULT_CLOSE_TIMEOUT 10000
/* The writer gives up waiting for the write lock quickly: file operations must not wait. */
#define WRITER_BUSY_MS 20
#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 500
/*
 * Group commit: a writer that wakes to a short queue waits this long for more events before
 * its transaction, so a steady trickle of operations costs one transaction per GATHER_MS
 * rather than one per event. Skipped for flush and close; well inside the 100 ms promise.
 */
#define GATHER_MS  10
#define GATHER_MIN 256

/* A queued event: the strings live in data[]. */
struct rec {
	struct rec *next;
	struct audit_proc *proc;
	int64_t time_ns, size, count, off_lo, off_hi, mtime_ns;
	uint32_t mode;
	int result;
	pid_t pid;
	const char *kind, *op, *path, *path2;
	/* kind "net" (see struct audit_event) */
	int64_t session, bytes_up, bytes_down, duration_ns;
	int port, status;
	const char *backend, *method, *host, *decision, *reason;
	size_t bytes;
	char data[];
};

struct rec_list {
	struct rec *head, *tail;
	size_t n, bytes;
};

/* What the writer knows of a session, to link events to it. */
struct sess {
	int64_t id;
	pid_t leader_pid;
	uint64_t leader_start, leader_pidns, box_pidns;
	int64_t start_ns, end_ns; /* end 0: running */
};

struct audit_log {
	pthread_mutex_t lock;
	pthread_cond_t wake;  /* writer: the queue became non-empty, or close */
	pthread_cond_t retry; /* writer's backoff sleep; close interrupts it */
	pthread_cond_t space; /* appenders: room in the queue, or the database became unwritable */
	pthread_cond_t done;  /* flushers: progress */
	struct rec_list queue;
	size_t held_bytes; /* the writer's current batch */
	/*
	 * failing: the last transaction could not be written. backlog: since the first failure
	 * until the queue is back under queue_max; the queue may then grow to backlog_bytes.
	 */
	bool failing, backlog, closing, thread_started;
	int flushers; /* threads waiting in audit_log_flush(): no gathering */
	uint64_t gap_count;
	int64_t gap_first_ns;
	uint64_t tickets, done_tickets;
	struct audit_log_stats st;
	struct audit_log_opts opts;
	pthread_t thread;
	int64_t run_id; /* this daemon run (audit_log_run_begin), 0: none */
	bool gave_up;	/* close could not write everything: the run stays unfinished */
	char *db_path;

	struct audit_proc_cache *procs;
	uint64_t self_pidns;

	/* writer thread only */
	sqlite3 *db;
	int64_t ws_key;
	struct audit_chain *chain;
	sqlite3_stmt *version;
	int64_t data_version;
	struct sess *sess;
	size_t nsess;
};

static int64_t now_ns(void)
{
	return util_now_ns();
}

static void rec_free(struct rec *r)
{
	if (!r)
		return;
	audit_proc_put(r->proc);
	free(r);
}

static void list_free(struct rec_list *l)
{
	for (struct rec *r = l->head, *next; r; r = next) {
		next = r->next;
		rec_free(r);
	}
	*l = (struct rec_list){0};
}

static const char *copy_str(char **cursor, const char *s)
{
	char *at = *cursor;
	size_t n;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	memcpy(at, s, n);
	*cursor += n;
	return at;
}

static size_t str_size(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static struct rec *rec_new(const struct audit_event *ev)
{
	const char *kind = ev->kind ? ev->kind : "fs";
	bool net = !strcmp(kind, "net");
	size_t strs = strlen(kind) + strlen(ev->op) + 2 + str_size(ev->path) + str_size(ev->path2);
	struct rec *r;

	if (net)
		strs += str_size(ev->backend) + str_size(ev->method) + str_size(ev->host) +
			str_size(ev->decision) + str_size(ev->reason);
	r = calloc(1, sizeof(*r) + strs);
	char *cursor;

	if (!r)
		return NULL;
	cursor = r->data;
	r->next = NULL;
	r->proc = NULL;
	r->time_ns = ev->time_ns;
	r->size = ev->size;
	r->count = ev->count;
	r->off_lo = ev->off_lo;
	r->off_hi = ev->off_hi;
	r->mode = ev->mode;
	r->mtime_ns = ev->mtime_ns;
	r->result = ev->result;
	r->pid = ev->pid;
	r->kind = copy_str(&cursor, kind);
	r->op = copy_str(&cursor, ev->op);
	r->path = copy_str(&cursor, ev->path);
	r->path2 = copy_str(&cursor, ev->path2);
	r->session = ev->session;
	if (net) {
		r->backend = copy_str(&cursor, ev->backend);
		r->method = copy_str(&cursor, ev->method);
		r->host = copy_str(&cursor, ev->host);
		r->decision = copy_str(&cursor, ev->decision);
		r->reason = copy_str(&cursor, ev->reason);
		r->port = ev->port;
		r->status = ev->status;
		r->bytes_up = ev->bytes_up;
		r->bytes_down = ev->bytes_down;
		r->duration_ns = ev->duration_ns;
	}
	r->bytes = sizeof(*r) + strs;
	return r;
}

/* Requires log->lock. */
static void count_gap(struct audit_log *log, int64_t time_ns)
{
	if (log->gap_count == 0)
		log->gap_first_ns = time_ns;
	log->gap_count++;
	log->st.dropped++;
}

int audit_log_append(struct audit_log *log, const struct audit_event *ev)
{
	struct rec *r;
	int64_t waited_from = 0;

	if (!log)
		return 0;
	if (!ev || !ev->op)
		return -EINVAL;
	r = rec_new(ev);
	if (r)
		r->proc = audit_proc_get(log->procs, ev->pid);
	pthread_mutex_lock(&log->lock);
	if (!r) {
		count_gap(log, ev->time_ns);
		pthread_mutex_unlock(&log->lock);
		return -ENOBUFS;
	}
	while (!log->closing && log->queue.n >= log->opts.queue_max) {
		bool fits =
		    log->queue.bytes + log->held_bytes + r->bytes <= log->opts.backlog_bytes;

		if (log->backlog && fits)
			break;
		if (log->failing) {
			/* Kept as much as allowed and the database still cannot take it. */
			count_gap(log, ev->time_ns);
			pthread_mutex_unlock(&log->lock);
			rec_free(r);
			return -ENOBUFS;
		}
		if (!waited_from)
			waited_from = now_ns();
		pthread_cond_wait(&log->space, &log->lock);
	}
	if (waited_from) {
		log->st.waits++;
		log->st.wait_ns += now_ns() - waited_from;
	}
	if (log->queue.tail)
		log->queue.tail->next = r;
	else
		log->queue.head = r;
	log->queue.tail = r;
	log->queue.n++;
	log->queue.bytes += r->bytes;
	log->tickets++;
	log->st.appended++;
	if (log->queue.n == 1)
		pthread_cond_signal(&log->wake);
	pthread_mutex_unlock(&log->lock);
	return 0;
}

void audit_log_proc_note(struct audit_log *log, pid_t pid)
{
	if (log)
		audit_proc_put(audit_proc_get(log->procs, pid));
}

/* Moves up to BATCH_MAX events from the queue to *batch. Requires log->lock. */
static void take_batch(struct audit_log *log, struct rec_list *batch)
{
	struct rec *r = log->queue.head, *last = NULL;
	size_t n = 0, bytes = 0;

	while (r && n < BATCH_MAX) {
		bytes += r->bytes;
		n++;
		last = r;
		r = r->next;
	}
	if (!last)
		return;
	batch->head = log->queue.head;
	batch->tail = last;
	batch->n = n;
	batch->bytes = bytes;
	log->queue.head = r;
	if (!r)
		log->queue.tail = NULL;
	last->next = NULL;
	log->queue.n -= n;
	log->queue.bytes -= bytes;
	log->held_bytes = bytes;
	pthread_cond_broadcast(&log->space);
}

/* --- sessions (writer thread) --- */

static int sess_load(struct audit_log *log)
{
	sqlite3_stmt *st = NULL;
	struct sess *list = NULL;
	size_t n = 0;
	int rc;

	/* Recent and running sessions of any workspace: a session's command may write anywhere. */
	rc = sqlite3_prepare_v2(log->db,
				"SELECT id, leader_pid, leader_start, ifnull(leader_pidns, 0), "
				"ifnull(box_pidns, 0), start_ns, ifnull(end_ns, 0) "
				"FROM audit_sessions WHERE end_ns IS NULL OR end_ns > ?",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, now_ns() - 3600 * 1000000000LL);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct sess *nl = realloc(list, (n + 1) * sizeof(*list));

		if (!nl) {
			rc = SQLITE_NOMEM;
			break;
		}
		list = nl;
		list[n++] = (struct sess){
		    .id = sqlite3_column_int64(st, 0),
		    .leader_pid = (pid_t)sqlite3_column_int64(st, 1),
		    .leader_start = (uint64_t)sqlite3_column_int64(st, 2),
		    .leader_pidns = (uint64_t)sqlite3_column_int64(st, 3),
		    .box_pidns = (uint64_t)sqlite3_column_int64(st, 4),
		    .start_ns = sqlite3_column_int64(st, 5),
		    .end_ns = sqlite3_column_int64(st, 6),
		};
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(list);
		return -EIO;
	}
	free(log->sess);
	log->sess = list;
	log->nsess = n;
	return 0;
}

/* Reloads the sessions when another connection has committed since the last look. */
static int sess_refresh(struct audit_log *log)
{
	int64_t v;
	int rc;

	rc = sqlite3_step(log->version);
	v = rc == SQLITE_ROW ? sqlite3_column_int64(log->version, 0) : -1;
	sqlite3_reset(log->version);
	if (v < 0)
		return -EIO;
	if (v == log->data_version)
		return 0;
	rc = sess_load(log);
	if (rc == 0)
		log->data_version = v;
	return rc;
}

static void sess_learn_box(struct audit_log *log, struct sess *s, uint64_t pidns)
{
	sqlite3_stmt *st = NULL;

	if (!pidns || pidns == log->self_pidns || pidns == s->leader_pidns || s->box_pidns)
		return;
	s->box_pidns = pidns;
	/* Informational; the in-memory copy is what links events. */
	if (sqlite3_prepare_v2(log->db,
			       "UPDATE audit_sessions SET box_pidns = ? WHERE id = ? AND "
			       "box_pidns IS NULL",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)pidns);
		sqlite3_bind_int64(st, 2, s->id);
		(void)sqlite3_step(st);
	}
	sqlite3_finalize(st);
}

static bool sess_running(const struct sess *s, int64_t time_ns)
{
	return time_ns >= s->start_ns && (s->end_ns == 0 || time_ns <= s->end_ns);
}

/* The running session whose box is pid namespace pidns (namespace inodes are reused). */
static struct sess *sess_by_box(struct audit_log *log, uint64_t pidns, int64_t time_ns)
{
	if (!pidns || pidns == log->self_pidns)
		return NULL;
	for (size_t i = 0; i < log->nsess; i++)
		if (log->sess[i].box_pidns == pidns && sess_running(&log->sess[i], time_ns))
			return &log->sess[i];
	return NULL;
}

/*
 * The session led by a; *shared when a leads several (a library process runs one session per
 * box): then the one running at time_ns without a box, else one running, else the latest.
 */
static struct sess *sess_by_leader(struct audit_log *log, const struct audit_proc *a,
				   int64_t time_ns, bool *shared)
{
	struct sess *best = NULL;
	int best_rank = -1;
	size_t n = 0;

	for (size_t i = 0; i < log->nsess; i++) {
		struct sess *s = &log->sess[i];
		int rank;

		if (s->leader_pid != a->pid || s->leader_start != a->start)
			continue;
		n++;
		rank = (sess_running(s, time_ns) ? 2 : 0) + (s->box_pidns == 0);
		if (rank > best_rank || (rank == best_rank && s->start_ns > best->start_ns)) {
			best = s;
			best_rank = rank;
		}
	}
	*shared = n > 1;
	return best;
}

/*
 * The session of the process behind an event at time_ns; memoised on the identities: on the
 * chain below a matched leader (of one session), on a complete chain (back to a process
 * without parent) that matched nothing, and on the process of a box's namespace.
 */
static int64_t sess_resolve(struct audit_log *log, struct audit_proc *p, int64_t time_ns)
{
	struct audit_proc *a, *decided = NULL;
	struct sess *s = NULL;
	bool shared = false;
	int64_t id = 0;

	if (!p)
		return 0;
	if (p->session >= 0)
		return p->session;
	for (a = p; a && !decided; a = a->parent) {
		if (a->session >= 0) {
			id = a->session;
			decided = a;
		} else if ((s = sess_by_box(log, a->pidns, time_ns)) != NULL) {
			/* The kernel's word: a box's processes cannot leave its namespace. */
			id = s->id;
			decided = a;
			a->session = id;
		} else if ((s = sess_by_leader(log, a, time_ns, &shared)) != NULL) {
			/* No memo on the leader itself: it may lead other sessions later. */
			id = s->id;
			decided = a;
			if (!shared)
				sess_learn_box(log, s, p->pidns);
		}
	}
	/* The box's namespace may still be learnt from a later event: no "none" memo. */
	if (id == 0 && p->pidns && p->pidns != log->self_pidns)
		return 0;
	if (shared || (!decided && p->truncated))
		return id;
	for (a = p; a && a != decided; a = a->parent)
		a->session = id;
	return id;
}

/* --- writing --- */

static int insert_rec(struct audit_log *log, const struct rec *r)
{
	bool write = !strcmp(r->op, "write"), net = !strcmp(r->kind, "net");
	/* Rows with a range: writes, fallocate (its mode stored even when 0) and refusals. */
	bool falloc = !strcmp(r->op, "fallocate");
	bool ranged = write || falloc || !strcmp(r->op, "disk-full");
	int64_t session = r->session > 0 ? r->session : sess_resolve(log, r->proc, r->time_ns);
	struct audit_val v[AUDIT_CHAIN_COLS] = {0};

	v[AUDIT_COL_TIME_NS] = audit_val_int(r->time_ns, true);
	v[AUDIT_COL_KIND] = audit_val_str(r->kind);
	v[AUDIT_COL_OP] = audit_val_str(r->op);
	v[AUDIT_COL_PATH] = audit_val_str(r->path);
	v[AUDIT_COL_PATH2] = audit_val_str(r->path2);
	v[AUDIT_COL_RESULT] = audit_val_int(r->result, true);
	v[AUDIT_COL_PID] = audit_val_int(r->pid, r->pid > 0);
	v[AUDIT_COL_COMM] = audit_val_str(r->proc ? r->proc->comm : NULL);
	v[AUDIT_COL_EXE] = audit_val_str(r->proc ? r->proc->exe : NULL);
	v[AUDIT_COL_SESSION] = audit_val_int(session, session > 0);
	v[AUDIT_COL_SIZE] = audit_val_int(r->size, r->size >= 0);
	v[AUDIT_COL_COUNT] = audit_val_int(r->count, write || r->count > 0);
	v[AUDIT_COL_OFF_LO] = audit_val_int(r->off_lo, ranged);
	v[AUDIT_COL_OFF_HI] = audit_val_int(r->off_hi, ranged);
	v[AUDIT_COL_MODE] = audit_val_int(r->mode, r->mode != 0 || falloc);
	v[AUDIT_COL_MTIME_NS] = audit_val_int(r->mtime_ns, r->mtime_ns != 0);
	if (net) {
		v[AUDIT_COL_BACKEND] = audit_val_str(r->backend);
		v[AUDIT_COL_METHOD] = audit_val_str(r->method);
		v[AUDIT_COL_HOST] = audit_val_str(r->host);
		v[AUDIT_COL_PORT] = audit_val_int(r->port, r->port > 0);
		v[AUDIT_COL_STATUS] = audit_val_int(r->status, true);
		v[AUDIT_COL_BYTES_UP] = audit_val_int(r->bytes_up, true);
		v[AUDIT_COL_BYTES_DOWN] = audit_val_int(r->bytes_down, true);
		v[AUDIT_COL_DURATION_NS] = audit_val_int(r->duration_ns, true);
		v[AUDIT_COL_DECISION] = audit_val_str(r->decision);
		v[AUDIT_COL_REASON] = audit_val_str(r->reason);
	}
	return audit_chain_insert(log->chain, v);
}

static int insert_gap(struct audit_log *log, uint64_t count, int64_t first_ns)
{
	struct audit_val v[AUDIT_CHAIN_COLS] = {0};

	v[AUDIT_COL_TIME_NS] = audit_val_int(first_ns, true);
	v[AUDIT_COL_KIND] = audit_val_str("fs");
	v[AUDIT_COL_OP] = audit_val_str("gap");
	v[AUDIT_COL_RESULT] = audit_val_int(0, true);
	v[AUDIT_COL_COUNT] = audit_val_int((int64_t)count, true);
	return audit_chain_insert(log->chain, v);
}

/*
 * One transaction: the gap row (if any), then the batch, then (run_id) the run's note that
 * everything queued before taken_ns is in. 0, or -EBUSY/-EIO (rolled back).
 */
static int write_batch(struct audit_log *log, const struct rec_list *batch, uint64_t gap,
		       int64_t gap_first_ns, int64_t run_id, int64_t taken_ns)
{
	int rc;

	if (sqlite3_exec(log->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -EBUSY;
	rc = audit_chain_load(log->chain);
	if (rc == 0)
		rc = sess_refresh(log);
	if (rc == 0 && gap)
		rc = insert_gap(log, gap, gap_first_ns);
	for (struct rec *r = batch->head; r && rc == 0; r = r->next)
		rc = insert_rec(log, r);
	if (rc == 0)
		rc = audit_chain_finish(log->chain);
	if (rc == 0 && run_id)
		rc = audit_runs_synced(log->db, run_id, taken_ns, false);
	if (rc == 0 && sqlite3_exec(log->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = -EIO;
	if (rc < 0)
		sqlite3_exec(log->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Requires log->lock. Throws away everything left (close could not write it). */
static void give_up(struct audit_log *log, struct rec_list *batch)
{
	uint64_t n = batch->n + log->queue.n;

	list_free(batch);
	list_free(&log->queue);
	log->gave_up = true;
	log->held_bytes = 0;
	log->st.dropped += n;
	log->gap_count = 0;
	log->done_tickets += n;
	pthread_cond_broadcast(&log->done);
	pthread_cond_broadcast(&log->space);
}

static void *writer_main(void *arg)
{
	struct audit_log *log = arg;
	struct rec_list batch = {0};
	int64_t fail_since = 0, taken_ns = 0;
	int backoff = 0;
	bool gathered = false;

	pthread_mutex_lock(&log->lock);
	for (;;) {
		uint64_t gap;
		int64_t gap_first, run_id;
		int rc;

		if (!batch.head && log->queue.n > 0 && log->queue.n < GATHER_MIN && !gathered &&
		    !log->closing && !log->flushers && !log->failing) {
			struct timespec ts;

			util_deadline(&ts, CLOCK_REALTIME, GATHER_MS);
			pthread_cond_timedwait(&log->retry, &log->lock, &ts);
			gathered = true;
			continue;
		}
		gathered = false;
		if (!batch.head) {
			take_batch(log, &batch);
			taken_ns = now_ns();
		}
		if (!batch.head && !log->gap_count) {
			if (log->closing)
				break;
			pthread_cond_wait(&log->wake, &log->lock);
			continue;
		}
		gap = log->gap_count;
		gap_first = log->gap_first_ns;
		log->gap_count = 0;
		run_id = log->run_id;
		pthread_mutex_unlock(&log->lock);
		rc = write_batch(log, &batch, gap, gap_first, run_id, taken_ns);
		pthread_mutex_lock(&log->lock);
		if (rc == 0) {
			log->st.written += batch.n;
			log->st.gap_rows += gap ? 1 : 0;
			log->st.transactions++;
			log->done_tickets += batch.n;
			list_free(&batch);
			log->held_bytes = 0;
			log->failing = false;
			if (log->queue.n < log->opts.queue_max)
				log->backlog = false;
			fail_since = 0;
			backoff = 0;
			pthread_cond_broadcast(&log->done);
			pthread_cond_broadcast(&log->space);
			continue;
		}
		/* Put the gap back: it is written with the next transaction that succeeds. */
		if (gap) {
			if (log->gap_count == 0 || gap_first < log->gap_first_ns)
				log->gap_first_ns = gap_first;
			log->gap_count += gap;
		}
		log->st.failures++;
		if (!fail_since)
			fail_since = now_ns();
		if (!log->failing) {
			log->failing = true;
			log->backlog = true;
			pthread_cond_broadcast(&log->space);
		}
		if (log->closing &&
		    now_ns() - fail_since > (int64_t)log->opts.close_timeout_ms * 1000000) {
			give_up(log, &batch);
			break;
		}
		backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2)
				  : BACKOFF_MIN_MS;
		{
			struct timespec ts;

			util_deadline(&ts, CLOCK_REALTIME, backoff);
			pthread_cond_timedwait(&log->retry, &log->lock, &ts);
		}
	}
	pthread_mutex_unlock(&log->lock);
	return NULL;
}

/* --- lifecycle --- */

static int log_prepare(struct audit_log *log, const char *db_path, const char *ws_id,
		       const char *ws_name)
{
	int rc;

	rc = audit_db_open(&log->db, db_path);
	if (rc < 0)
		return rc;
	rc = audit_ws_key(log->db, ws_id, ws_name, &log->ws_key);
	if (rc < 0)
		return rc;
	sqlite3_busy_timeout(log->db, WRITER_BUSY_MS);
	log->db_path = strdup(db_path);
	if (!log->db_path)
		return -ENOMEM;
	rc = audit_chain_new(&log->chain, log->db, log->ws_key, ws_id);
	if (rc < 0)
		return rc;
	if (sqlite3_prepare_v3(log->db, "PRAGMA data_version", -1, SQLITE_PREPARE_PERSISTENT,
			       &log->version, NULL) != SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(log->db));
	log->data_version = -1;
	return 0;
}

static void log_free(struct audit_log *log)
{
	list_free(&log->queue);
	audit_chain_free(log->chain);
	free(log->db_path);
	sqlite3_finalize(log->version);
	audit_db_close(log->db);
	audit_proc_cache_free(log->procs);
	free(log->sess);
	pthread_mutex_destroy(&log->lock);
	pthread_cond_destroy(&log->wake);
	pthread_cond_destroy(&log->retry);
	pthread_cond_destroy(&log->space);
	pthread_cond_destroy(&log->done);
	free(log);
}

int audit_log_open_opts(struct audit_log **out, const char *db_path, const char *ws_id,
			const char *ws_name, const struct audit_log_opts *opts)
{
	struct audit_log *log = calloc(1, sizeof(*log));
	int rc;

	*out = NULL;
	if (!log)
		return -ENOMEM;
	pthread_mutex_init(&log->lock, NULL);
	pthread_cond_init(&log->wake, NULL);
	pthread_cond_init(&log->retry, NULL);
	pthread_cond_init(&log->space, NULL);
	pthread_cond_init(&log->done, NULL);
	if (opts)
		log->opts = *opts;
	if (!log->opts.queue_max)
		log->opts.queue_max = DEFAULT_QUEUE_MAX;
	if (!log->opts.backlog_bytes)
		log->opts.backlog_bytes = DEFAULT_BACKLOG_BYTES;
	if (!log->opts.close_timeout_ms)
		log->opts.close_timeout_ms = DEFAULT_CLOSE_TIMEOUT;
	log->self_pidns = audit_proc_pidns(0);
	rc = audit_proc_cache_new(&log->procs);
	if (rc == 0)
		rc = log_prepare(log, db_path, ws_id, ws_name);
	if (rc == 0) {
		rc = -pthread_create(&log->thread, NULL, writer_main, log);
		if (rc == 0)
			(void)pthread_setname_np(log->thread, "arb-audit");
		if (rc < 0)
			util_err(rc, "cannot start the audit writer: %s", strerror(-rc));
	}
	if (rc < 0) {
		log_free(log);
		return rc;
	}
	log->thread_started = true;
	*out = log;
	return 0;
}

int audit_log_open(struct audit_log **out, const char *db_path, const char *ws_id,
		   const char *ws_name)
{
	return audit_log_open_opts(out, db_path, ws_id, ws_name, NULL);
}

int audit_log_flush(struct audit_log *log)
{
	uint64_t target, seen;
	int rc = 0;

	if (!log)
		return 0;
	pthread_mutex_lock(&log->lock);
	target = log->tickets;
	seen = log->done_tickets;
	log->flushers++;
	pthread_cond_broadcast(&log->retry);
	/* Waits while there is progress; a database unwritable for the whole timeout fails. */
	while (log->done_tickets < target || (log->gap_count && !log->closing)) {
		struct timespec ts;

		util_deadline(&ts, CLOCK_REALTIME, log->opts.close_timeout_ms);
		if (pthread_cond_timedwait(&log->done, &log->lock, &ts) == ETIMEDOUT) {
			if (log->done_tickets == seen) {
				rc = util_err(-ETIMEDOUT,
					      "audit: the state database stayed unwritable");
				break;
			}
		}
		seen = log->done_tickets;
	}
	log->flushers--;
	pthread_mutex_unlock(&log->lock);
	return rc;
}

void audit_log_stats(struct audit_log *log, struct audit_log_stats *out)
{
	pthread_mutex_lock(&log->lock);
	*out = log->st;
	out->pending = log->tickets - log->done_tickets;
	pthread_mutex_unlock(&log->lock);
	out->proc_misses = audit_proc_cache_misses(log->procs);
}

void audit_log_close(struct audit_log *log)
{
	if (!log)
		return;
	pthread_mutex_lock(&log->lock);
	log->closing = true;
	pthread_cond_broadcast(&log->wake);
	pthread_cond_broadcast(&log->retry);
	pthread_cond_broadcast(&log->space);
	pthread_mutex_unlock(&log->lock);
	if (log->thread_started)
		pthread_join(log->thread, NULL);
	/* The writer is gone: its connection is ours. Everything is in: the run ended clean. */
	if (log->run_id && !log->gave_up) {
		sqlite3_busy_timeout(log->db, log->opts.close_timeout_ms);
		/* On failure it stays unfinished and the next run reconciles: nothing is lost. */
		(void)!audit_runs_synced(log->db, log->run_id, util_now_ns(), true);
	}
	log_free(log);
}

int audit_log_run_check(struct audit_log *log, int64_t *since_ns)
{
	sqlite3 *db = NULL;
	int rc;

	*since_ns = 0;
	rc = audit_db_open(&db, log->db_path);
	if (rc == 0)
		rc = audit_runs_unclean_since(db, log->ws_key, since_ns);
	audit_db_close(db);
	return rc;
}

int audit_log_run_begin(struct audit_log *log)
{
	sqlite3 *db = NULL;
	int64_t id = 0;
	int rc;

	rc = audit_log_flush(log);
	if (rc == 0)
		rc = audit_db_open(&db, log->db_path);
	if (rc == 0)
		rc = audit_runs_begin(db, log->ws_key, &id);
	audit_db_close(db);
	if (rc == 0) {
		pthread_mutex_lock(&log->lock);
		log->run_id = id;
		pthread_mutex_unlock(&log->lock);
	}
	return rc;
}
