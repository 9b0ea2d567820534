/*
 * tests/unit/check_audit.c: the state database's audit schema, the event recorder (threads,
 * locks held by another process, back-pressure, gaps, close, kill -9), process identities,
 * sessions, queries, summaries and time parsing. Real SQLite files, real processes.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"

static char dir[64];
static char db_path[128];

static void tmp_setup(void)
{
	strcpy(dir, "/tmp/check_audit.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/state.db", dir);
}

static void tmp_teardown(void)
{
	ck_assert_int_eq(util_rm_rf(dir), 0);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A scalar from the database through a separate connection. */
static int64_t query_int(const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static char *query_text(const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char *v = NULL;

	ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static struct audit_log *log_open(const struct audit_log_opts *opts)
{
	struct audit_log *log = NULL;

	ck_assert_msg(audit_log_open_opts(&log, db_path, "id1", "w1", opts) == 0, "%s",
		      util_err_msg());
	return log;
}

static struct audit_event ev_make(const char *op, const char *path)
{
	return (struct audit_event){
	    .time_ns = util_now_ns(), .op = op, .path = path, .size = -1, .pid = getpid()};
}

/*
 * Forks a process that takes the database's write lock (BEGIN IMMEDIATE), holds it for
 * hold_ms and commits. Returns once the lock is held.
 */
static pid_t lock_holder(long hold_ms)
{
	int fds[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		sqlite3 *db = NULL;

		close(fds[0]);
		if (sqlite3_open(db_path, &db) != SQLITE_OK)
			_exit(1);
		sqlite3_busy_timeout(db, 10000);
		if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
			_exit(2);
		if (write(fds[1], "L", 1) != 1)
			_exit(3);
		sleep_ms(hold_ms);
		if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			_exit(4);
		sqlite3_close(db);
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	return pid;
}

static void wait_ok(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}

/* ---- schema ---- */

START_TEST(schema_history_follows_workspaces)
{
	sqlite3 *db = NULL;
	int64_t key = 0, deleted = -1;

	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_ge(audit_db_schema_version(), 2);
	ck_assert_int_eq(audit_db_exec(db, "INSERT INTO workspaces (id, name, base_commit, "
					   "branch, created_ns) VALUES ('a1', 'w', 'c', 'b', 1)"),
			 0);
	ck_assert_int_eq(audit_ws_resolve(db, "w", &key, &deleted), 0);
	ck_assert_int_eq(deleted, 0);
	ck_assert_int_eq(audit_db_exec(db, "DELETE FROM workspaces WHERE id = 'a1'"), 0);
	ck_assert_int_eq(audit_ws_resolve(db, "w", &key, &deleted), 0);
	/* The trigger stamps the deletion with the current time (milliseconds). */
	ck_assert_int_gt(deleted, util_now_ns() - 60 * 1000000000LL);
	ck_assert_int_le(deleted, util_now_ns());
	/* A new workspace of the same name gets its own, live, history. */
	ck_assert_int_eq(audit_db_exec(db, "INSERT INTO workspaces (id, name, base_commit, "
					   "branch, created_ns) VALUES ('a2', 'w', 'c', 'b', 2)"),
			 0);
	{
		int64_t key2 = 0;

		ck_assert_int_eq(audit_ws_resolve(db, "w", &key2, &deleted), 0);
		ck_assert_int_ne(key2, key);
		ck_assert_int_eq(deleted, 0);
	}
	ck_assert_int_eq(audit_ws_resolve(db, "nope", &key, &deleted), -ENOENT);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "no workspace named 'nope'"));
	audit_db_close(db);
	/* Reopening does not migrate again. */
	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	audit_db_close(db);
	ck_assert_int_eq(query_int("PRAGMA user_version"), audit_db_schema_version());
	ck_assert_int_eq(query_int("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
				   "name IN ('audit_events_ws_time', 'audit_events_ws_path')"),
			 2);
}
END_TEST

/* ---- recorder ---- */

START_TEST(log_every_field)
{
	struct audit_log *log = log_open(NULL);
	struct audit_event w = ev_make("write", "src/a.c");
	struct audit_event r = ev_make("rename", "x");
	struct audit_event u = ev_make("unlink", "gone");
	char comm[32] = "", *s;
	FILE *f;

	w.size = 300;
	w.count = 3;
	w.off_lo = 10;
	w.off_hi = 310;
	r.path2 = "y/z";
	r.mode = 0644;
	u.result = ENOENT;
	ck_assert_int_eq(audit_log_append(log, &w), 0);
	ck_assert_int_eq(audit_log_append(log, &r), 0);
	ck_assert_int_eq(audit_log_append(log, &u), 0);
	ck_assert_int_eq(audit_log_append(log, &(struct audit_event){.path = "x"}), -EINVAL);
	ck_assert_int_eq(audit_log_append(NULL, &w), 0);
	audit_log_close(log);

	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 3);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE op = 'write' AND "
				   "path = 'src/a.c' AND size = 300 AND count = 3 AND off_lo = 10 "
				   "AND off_hi = 310 AND result = 0 AND kind = 'fs' AND "
				   "path2 IS NULL AND mode IS NULL"),
			 1);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE op = 'rename' AND "
				   "path = 'x' AND path2 = 'y/z' AND mode = 420 AND size IS NULL "
				   "AND count IS NULL"),
			 1);
	ck_assert_int_eq(query_int("SELECT result FROM audit_events WHERE op = 'unlink'"), ENOENT);
	ck_assert_int_eq(query_int("SELECT count(DISTINCT pid) FROM audit_events"), 1);
	ck_assert_int_eq(query_int("SELECT pid FROM audit_events LIMIT 1"), getpid());
	f = fopen("/proc/self/comm", "r");
	ck_assert_ptr_nonnull(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	s = query_text("SELECT comm FROM audit_events LIMIT 1");
	ck_assert_str_eq(s, comm);
	free(s);
	s = query_text("SELECT exe FROM audit_events LIMIT 1");
	ck_assert_ptr_nonnull(strstr(s, "check_audit"));
	free(s);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events e JOIN audit_workspaces w "
				   "ON w.key = e.ws WHERE w.id = 'id1' AND w.name = 'w1'"),
			 3);
}
END_TEST

struct burst {
	struct audit_log *log;
	int id, n;
	int64_t max_ns;
};

static void *burst_thread(void *arg)
{
	struct burst *b = arg;
	char path[64];

	for (int i = 0; i < b->n; i++) {
		struct audit_event ev = ev_make(i % 2 ? "write" : "create", path);
		struct timespec t0, t1;
		int64_t d;

		snprintf(path, sizeof(path), "t%d/f%d", b->id, i);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (audit_log_append(b->log, &ev) != 0)
			return (void *)1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		d = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
		if (d > b->max_ns)
			b->max_ns = d;
	}
	return NULL;
}

static void run_burst(struct audit_log *log, int threads, int per_thread, struct burst *b)
{
	pthread_t t[16];

	for (int i = 0; i < threads; i++) {
		b[i] = (struct burst){.log = log, .id = i, .n = per_thread};
		ck_assert_int_eq(pthread_create(&t[i], NULL, burst_thread, &b[i]), 0);
	}
	for (int i = 0; i < threads; i++) {
		void *ret;

		ck_assert_int_eq(pthread_join(t[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
}

START_TEST(log_threads_burst_complete)
{
	struct audit_log *log = log_open(NULL);
	struct audit_log_stats st;
	struct burst b[8];

	run_burst(log, 8, 12500, b);
	ck_assert_int_eq(audit_log_flush(log), 0);
	audit_log_stats(log, &st);
	ck_assert_uint_eq(st.appended, 100000);
	ck_assert_uint_eq(st.written, 100000);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_uint_eq(st.dropped, 0);
	audit_log_close(log);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 100000);
	ck_assert_int_eq(query_int("SELECT count(DISTINCT path) FROM audit_events"), 100000);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE op = 'gap'"), 0);
	/* Per thread, the order of appends is the order of rows. */
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events a JOIN audit_events b ON "
				   "a.path = 't3/f100' AND b.path = 't3/f101' AND a.seq < b.seq"),
			 1);
}
END_TEST

START_TEST(log_close_drains_everything)
{
	struct audit_log *log = log_open(NULL);
	struct burst b[4];

	run_burst(log, 4, 10000, b);
	/* No flush: close alone must write all of it. */
	audit_log_close(log);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 40000);
}
END_TEST

START_TEST(log_durable_within_100ms)
{
	struct audit_log *log = log_open(NULL);
	int64_t worst = 0;

	for (int i = 0; i < 20; i++) {
		char path[32], sql[128];
		struct audit_event ev;
		int64_t t0;

		snprintf(path, sizeof(path), "d%d", i);
		ev = ev_make("mkdir", path);
		t0 = mono_ms();
		ck_assert_int_eq(audit_log_append(log, &ev), 0);
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM audit_events WHERE path = '%s'",
			 path);
		while (query_int(sql) != 1 && mono_ms() - t0 < 5000)
			sleep_ms(1);
		if (mono_ms() - t0 > worst)
			worst = mono_ms() - t0;
		sleep_ms(i * 3);
	}
	/*
	 * The writer commits a lone event after a short gathering pause (10 ms), not when a batch
	 * fills. The bound here is loose on purpose: this machine is shared, and tests assert
	 * behaviour, not speed (a writer that waited for a full batch would never commit).
	 */
	ck_assert_msg(worst < 2000, "an event took %lld ms to be committed", (long long)worst);
	audit_log_close(log);
}
END_TEST

START_TEST(log_back_pressure_not_drops)
{
	struct audit_log_opts o = {.queue_max = 32};
	struct audit_log *log = log_open(&o);
	struct audit_log_stats st;
	struct burst b[4];

	run_burst(log, 4, 5000, b);
	ck_assert_int_eq(audit_log_flush(log), 0);
	audit_log_stats(log, &st);
	ck_assert_uint_gt(st.waits, 0);
	ck_assert_uint_eq(st.dropped, 0);
	ck_assert_uint_eq(st.written, 20000);
	audit_log_close(log);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 20000);
}
END_TEST

/* Another process holds the write lock for 4 s: appends never wait on it, nothing is lost. */
START_TEST(log_survives_locked_database)
{
	struct audit_log *log = log_open(NULL);
	struct audit_log_stats st;
	struct burst b[4];
	pid_t holder;

	/* The database exists and the writer is idle before the lock is taken. */
	ck_assert_int_eq(audit_log_flush(log), 0);
	holder = lock_holder(4000);
	run_burst(log, 4, 5000, b);
	/* The appends finished while the lock was still held: none waited for it. */
	ck_assert_int_eq(waitpid(holder, NULL, WNOHANG), 0);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 0);
	audit_log_stats(log, &st);
	ck_assert_uint_eq(st.pending, 20000);
	wait_ok(holder);
	ck_assert_int_eq(audit_log_flush(log), 0);
	audit_log_stats(log, &st);
	ck_assert_uint_gt(st.failures, 0);
	ck_assert_uint_eq(st.dropped, 0);
	audit_log_close(log);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 20000);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE op = 'gap'"), 0);
}
END_TEST

/* Past the backlog limit, events are dropped, counted, and the count is written as a gap. */
START_TEST(log_gap_when_backlog_full)
{
	struct audit_log_opts o = {.queue_max = 100, .backlog_bytes = 64 * 1024};
	struct audit_log *log = log_open(&o);
	struct audit_log_stats st;
	int kept = 0, dropped = 0;
	int64_t first_dropped = 0;
	pid_t holder;

	ck_assert_int_eq(audit_log_flush(log), 0);
	holder = lock_holder(1000);
	for (int i = 0; i < 5000; i++) {
		struct audit_event ev = ev_make("create", "f");
		int rc = audit_log_append(log, &ev);

		if (rc == 0) {
			kept++;
		} else {
			ck_assert_int_eq(rc, -ENOBUFS);
			if (!dropped)
				first_dropped = ev.time_ns;
			dropped++;
		}
	}
	ck_assert_int_gt(kept, 100);
	ck_assert_int_gt(dropped, 0);
	wait_ok(holder);
	ck_assert_int_eq(audit_log_flush(log), 0);
	audit_log_stats(log, &st);
	ck_assert_uint_eq(st.dropped, (uint64_t)dropped);
	ck_assert_uint_eq(st.gap_rows, 1);
	audit_log_close(log);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE op = 'create'"), kept);
	ck_assert_int_eq(query_int("SELECT count FROM audit_events WHERE op = 'gap'"), dropped);
	ck_assert_int_eq(query_int("SELECT time_ns FROM audit_events WHERE op = 'gap'"),
			 first_dropped);
	/* The gap comes first: it is written with the first transaction that succeeds. */
	ck_assert_int_eq(query_int("SELECT min(seq) FROM audit_events"),
			 query_int("SELECT seq FROM audit_events WHERE op = 'gap'"));
}
END_TEST

/* A database that never becomes writable: close gives up after close_timeout_ms. */
START_TEST(log_close_times_out_on_dead_database)
{
	struct audit_log_opts o = {.close_timeout_ms = 300};
	struct audit_log *log = log_open(&o);
	struct audit_event ev = ev_make("mkdir", "d");
	int64_t t0;
	pid_t holder;

	ck_assert_int_eq(audit_log_flush(log), 0);
	holder = lock_holder(3000);
	ck_assert_int_eq(audit_log_append(log, &ev), 0);
	t0 = mono_ms();
	ck_assert_int_eq(audit_log_flush(log), -ETIMEDOUT);
	ck_assert_int_lt(mono_ms() - t0, 2000);
	t0 = mono_ms();
	audit_log_close(log);
	ck_assert_int_lt(mono_ms() - t0, 2000);
	wait_ok(holder);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 0);
}
END_TEST

/* The daemon killed with SIGKILL while appending: everything committed before is stored. */
START_TEST(log_kill9_keeps_older_events)
{
	int fds[2];
	pid_t child;
	char buf[32];

	ck_assert_int_eq(pipe(fds), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct audit_log *log = NULL;

		close(fds[0]);
		if (audit_log_open(&log, db_path, "id1", "w1") < 0)
			_exit(1);
		for (int i = 0; i < 3000; i++) {
			struct audit_event ev = ev_make("create", "before");

			if (audit_log_append(log, &ev) < 0)
				_exit(2);
		}
		if (audit_log_flush(log) < 0)
			_exit(4);
		if (write(fds[1], "ok", 2) != 2)
			_exit(3);
		/* Keep busy until killed. */
		for (;;) {
			struct audit_event ev = ev_make("create", "after");

			(void)audit_log_append(log, &ev);
		}
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], buf, 2), 2);
	close(fds[0]);
	sleep_ms(50); /* let it append (and its writer commit) more while it is killed */
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE path = 'before'"),
			 3000);
}
END_TEST

/* ---- process identities ---- */

static pid_t spawn_sleeper(const char *comm)
{
	int fds[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		prctl(PR_SET_NAME, comm);
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	return pid;
}

START_TEST(proc_names_other_processes)
{
	struct audit_log *log = log_open(NULL);
	struct audit_log_stats st;
	pid_t a = spawn_sleeper("procA"), b = spawn_sleeper("procB"), gone;
	struct audit_event ev = ev_make("mkdir", "a");
	uint64_t misses;

	ev.pid = a;
	ck_assert_int_eq(audit_log_append(log, &ev), 0);
	audit_log_stats(log, &st);
	misses = st.proc_misses;
	/* Cached: no further resolution for the same process. */
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(audit_log_append(log, &ev), 0);
	audit_log_stats(log, &st);
	ck_assert_uint_eq(st.proc_misses, misses);
	ev.pid = b;
	ev.path = "b";
	ck_assert_int_eq(audit_log_append(log, &ev), 0);
	/* Noted while alive, recorded after it is gone (a write recorded at release). */
	gone = spawn_sleeper("procGone");
	audit_log_proc_note(log, gone);
	kill(gone, SIGKILL);
	waitpid(gone, NULL, 0);
	ev.pid = gone;
	ev.path = "g";
	ck_assert_int_eq(audit_log_append(log, &ev), 0);
	/* pid 0: unknown. */
	ev.pid = 0;
	ev.path = "z";
	ck_assert_int_eq(audit_log_append(log, &ev), 0);
	audit_log_close(log);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE path = 'a' AND "
				   "comm = 'procA'"),
			 101);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE path = 'b' AND "
				   "comm = 'procB'"),
			 1);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE path = 'g' AND "
				   "comm = 'procGone'"),
			 1);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE path = 'z' AND "
				   "comm IS NULL AND pid IS NULL"),
			 1);
}
END_TEST

/* After exec the same pid is another program: noticed within 100 ms. */
START_TEST(proc_exec_is_noticed)
{
	struct audit_log *log = log_open(NULL);
	struct audit_event ev = ev_make("mkdir", "before");
	int fds[2];
	pid_t pid;
	char c;
	char *s;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		prctl(PR_SET_NAME, "beforeexec");
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		sleep_ms(300);
		execlp("sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	ev.pid = pid;
	ck_assert_int_eq(audit_log_append(log, &ev), 0);
	sleep_ms(600);
	ev.path = "after";
	ev.time_ns = util_now_ns();
	ck_assert_int_eq(audit_log_append(log, &ev), 0);
	audit_log_close(log);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	s = query_text("SELECT comm FROM audit_events WHERE path = 'before'");
	ck_assert_str_eq(s, "beforeexec");
	free(s);
	s = query_text("SELECT comm || ' ' || exe FROM audit_events WHERE path = 'after'");
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(!strncmp(s, "sleep /", 7) && strstr(s, "sleep"), "got %s", s);
	free(s);
}
END_TEST

/* ---- sessions ---- */

/*
 * A session led by a child process (as `arborinth shell` would be): its grandchild's events
 * are linked, an unrelated process's are not.
 */
START_TEST(session_links_descendants)
{
	char *const argv[] = {"sh", "-c", "it's", NULL};
	struct audit_log *log = log_open(NULL);
	int to_child[2], from_child[2];
	pid_t leader, other = spawn_sleeper("outsider");
	pid_t grandchild = 0;
	int64_t sid = 0;
	char *s;

	ck_assert_int_eq(pipe(to_child), 0);
	ck_assert_int_eq(pipe(from_child), 0);
	leader = fork();
	ck_assert_int_ge(leader, 0);
	if (leader == 0) {
		struct audit_session *sess = NULL;
		pid_t gc;
		int64_t id;
		char c;

		if (audit_session_begin(&sess, db_path, "id1", "w1", "none", argv) < 0)
			_exit(1);
		id = audit_session_id(sess);
		gc = fork();
		if (gc == 0) {
			prctl(PR_SET_NAME, "grandchild");
			pause();
			_exit(0);
		}
		sleep_ms(50); /* let the grandchild set its name */
		if (write(from_child[1], &id, sizeof(id)) != sizeof(id) ||
		    write(from_child[1], &gc, sizeof(gc)) != sizeof(gc))
			_exit(2);
		if (read(to_child[0], &c, 1) != 1)
			_exit(3);
		kill(gc, SIGKILL);
		waitpid(gc, NULL, 0);
		_exit(audit_session_end(sess, 7) == 0 ? 0 : 4);
	}
	ck_assert_int_eq(read(from_child[0], &sid, sizeof(sid)), sizeof(sid));
	ck_assert_int_eq(read(from_child[0], &grandchild, sizeof(grandchild)), sizeof(grandchild));
	ck_assert_int_gt(sid, 0);
	{
		struct audit_event in = ev_make("create", "inside"), out = ev_make("create", "out");

		in.pid = grandchild;
		out.pid = other;
		ck_assert_int_eq(audit_log_append(log, &in), 0);
		ck_assert_int_eq(audit_log_append(log, &out), 0);
		ck_assert_int_eq(audit_log_flush(log), 0);
	}
	ck_assert_int_eq(write(to_child[1], "x", 1), 1);
	wait_ok(leader);
	audit_log_close(log);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);

	ck_assert_int_eq(query_int("SELECT session FROM audit_events WHERE path = 'inside'"), sid);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE path = 'inside' AND "
				   "comm = 'grandchild'"),
			 1);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE path = 'out' AND "
				   "session IS NULL"),
			 1);
	s = query_text("SELECT argv || ' ' || jail FROM audit_sessions");
	ck_assert_str_eq(s, "[\"sh\",\"-c\",\"it's\"] none");
	free(s);
	ck_assert_int_eq(query_int("SELECT exit_status FROM audit_sessions"), 7);
	ck_assert_int_eq(query_int("SELECT leader_pid FROM audit_sessions"), leader);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_sessions WHERE end_ns >= start_ns"),
			 1);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events WHERE kind = 'exec' AND "
				   "session = (SELECT id FROM audit_sessions)"),
			 2);
	ck_assert_int_eq(query_int("SELECT result FROM audit_events WHERE op = 'exit'"), 7);
}
END_TEST

/*
 * A boxed session: the leader's child lives in a new pid namespace. Processes of the box are
 * linked through the chain, and the namespace is learnt; a process deeper than the chain limit
 * is still linked through the namespace.
 */
START_TEST(session_links_pid_namespace)
{
	char *const argv[] = {"box", NULL};
	struct audit_log *log = log_open(NULL);
	int from[2], to[2];
	pid_t leader, pids[2];
	int64_t sid = 0;

	ck_assert_int_eq(pipe(from), 0);
	ck_assert_int_eq(pipe(to), 0);
	leader = fork();
	ck_assert_int_ge(leader, 0);
	if (leader == 0) {
		struct audit_session *sess = NULL;
		int64_t id;
		pid_t init;
		char c;

		if (audit_session_begin(&sess, db_path, "id1", "w1", "bubblewrap", argv) < 0)
			_exit(1);
		id = audit_session_id(sess);
		if (write(from[1], &id, sizeof(id)) != sizeof(id))
			_exit(2);
		if (unshare(CLONE_NEWPID) < 0)
			_exit(3);
		init = fork(); /* pid 1 of the box */
		if (init == 0) {
			/* A chain of 40 processes; the last reports its host pid via /proc. */
			for (int depth = 0; depth < 40; depth++) {
				pid_t c2 = fork();

				if (c2 != 0) {
					if (depth == 0) {
						char link[64];
						ssize_t n;
						pid_t host;
						/* Our host pid: /proc/self in the host's /proc. */
						n = readlink("/proc/self", link, sizeof(link) - 1);
						link[n > 0 ? n : 0] = '\0';
						host = (pid_t)atoi(link);
						if (write(from[1], &host, sizeof(host)) !=
						    sizeof(host))
							_exit(4);
					}
					waitpid(c2, NULL, 0);
					_exit(0);
				}
			}
			{
				char link[64];
				ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);
				pid_t host;

				link[n > 0 ? n : 0] = '\0';
				host = (pid_t)atoi(link);
				if (write(from[1], &host, sizeof(host)) != sizeof(host))
					_exit(5);
				if (read(to[0], &c, 1) != 1)
					_exit(6);
				_exit(0);
			}
		}
		waitpid(init, NULL, 0);
		_exit(audit_session_end(sess, 0) == 0 ? 0 : 7);
	}
	ck_assert_int_eq(read(from[0], &sid, sizeof(sid)), sizeof(sid));
	ck_assert_int_eq(read(from[0], &pids[0], sizeof(pid_t)), sizeof(pid_t));
	ck_assert_int_eq(read(from[0], &pids[1], sizeof(pid_t)), sizeof(pid_t));
	{
		struct audit_event shallow = ev_make("create", "shallow");
		struct audit_event deep = ev_make("create", "deep");

		/* The shallow process teaches the namespace; the deep one is linked by it. */
		shallow.pid = pids[0];
		deep.pid = pids[1];
		ck_assert_int_eq(audit_log_append(log, &shallow), 0);
		ck_assert_int_eq(audit_log_flush(log), 0);
		ck_assert_int_eq(audit_log_append(log, &deep), 0);
		ck_assert_int_eq(audit_log_flush(log), 0);
	}
	ck_assert_int_eq(write(to[1], "x", 1), 1);
	wait_ok(leader);
	audit_log_close(log);
	ck_assert_int_eq(query_int("SELECT session FROM audit_events WHERE path = 'shallow'"), sid);
	ck_assert_int_eq(query_int("SELECT session FROM audit_events WHERE path = 'deep'"), sid);
	ck_assert_int_gt(query_int("SELECT box_pidns FROM audit_sessions"), 0);
	ck_assert_int_ne(query_int("SELECT box_pidns FROM audit_sessions"),
			 query_int("SELECT leader_pidns FROM audit_sessions"));
}
END_TEST

/*
 * Two boxes of one leader (a library process runs a session per box, from threads at once):
 * each box's processes go to the session that named the box's pid namespace
 * (audit_session_set_box), not to the leader's first or latest. Before the launcher named
 * them, both chains reach the same leader: that is the case this tells apart.
 */
START_TEST(session_two_boxes_one_leader)
{
	char *const argv[] = {"box", NULL};
	struct audit_log *log = log_open(NULL);
	int from[2], to[2];
	pid_t leader, host[2];
	int64_t sid[2];

	ck_assert_int_eq(pipe(from), 0);
	ck_assert_int_eq(pipe(to), 0);
	leader = fork();
	ck_assert_int_ge(leader, 0);
	if (leader == 0) {
		struct audit_session *sess[2] = {NULL, NULL};
		pid_t helper[2], init;
		int up[2];

		if (pipe(up) < 0)
			_exit(1);
		for (int i = 0; i < 2; i++) {
			if (audit_session_begin(&sess[i], db_path, "id1", "w1", "bubblewrap",
						argv) < 0)
				_exit(1);
			helper[i] = fork(); /* bwrap: makes the box's pid namespace and pid 1 */
			if (helper[i] == 0) {
				if (unshare(CLONE_NEWPID) < 0)
					_exit(3);
				init = fork();
				if (init == 0) {
					char link[64], c;
					ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);
					pid_t me;

					link[n > 0 ? n : 0] = '\0';
					me = (pid_t)atoi(
					    link); /* the host's pid: the host's /proc */
					if (write(up[1], &me, sizeof(me)) != sizeof(me) ||
					    read(to[0], &c, 1) != 1)
						_exit(4);
					_exit(0);
				}
				waitpid(init, NULL, 0);
				_exit(0);
			}
			if (read(up[0], &init, sizeof(init)) != sizeof(init) ||
			    audit_session_set_box(sess[i], init) < 0)
				_exit(5);
			sid[i] = audit_session_id(sess[i]);
			if (write(from[1], &sid[i], sizeof(sid[i])) != sizeof(sid[i]) ||
			    write(from[1], &init, sizeof(init)) != sizeof(init))
				_exit(6);
		}
		for (int i = 0; i < 2; i++)
			waitpid(helper[i], NULL, 0);
		_exit(audit_session_end(sess[0], 0) == 0 && audit_session_end(sess[1], 0) == 0 ? 0
											       : 7);
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(read(from[0], &sid[i], sizeof(sid[i])), sizeof(sid[i]));
		ck_assert_int_eq(read(from[0], &host[i], sizeof(pid_t)), sizeof(pid_t));
	}
	ck_assert_int_ne(sid[0], sid[1]);
	{
		struct audit_event a = ev_make("create", "box0"), b = ev_make("create", "box1");

		/* The second box first: the leader's latest session is not the answer. */
		b.pid = host[1];
		a.pid = host[0];
		ck_assert_int_eq(audit_log_append(log, &b), 0);
		ck_assert_int_eq(audit_log_append(log, &a), 0);
		ck_assert_int_eq(audit_log_flush(log), 0);
	}
	ck_assert_int_eq(write(to[1], "xx", 2), 2);
	wait_ok(leader);
	audit_log_close(log);
	ck_assert_int_eq(query_int("SELECT session FROM audit_events WHERE path = 'box0'"), sid[0]);
	ck_assert_int_eq(query_int("SELECT session FROM audit_events WHERE path = 'box1'"), sid[1]);
	ck_assert_int_eq(query_int("SELECT count(DISTINCT box_pidns) FROM audit_sessions"), 2);
	/* The launcher's own namespace is never a box's. */
	{
		struct audit_session *s = NULL;

		ck_assert_int_eq(audit_session_begin(&s, db_path, "id1", "w1", "none", argv), 0);
		ck_assert_int_eq(audit_session_set_box(s, getpid()), -EINVAL);
		ck_assert_int_eq(audit_session_end(s, 0), 0);
	}
}
END_TEST

/* ---- queries ---- */

static void emit(struct audit_log *log, int64_t t, const char *op, const char *path,
		 const char *path2, int result, int64_t size)
{
	struct audit_event ev = {.time_ns = t,
				 .op = op,
				 .path = path,
				 .path2 = path2,
				 .result = result,
				 .size = size,
				 .pid = getpid()};

	ck_assert_int_eq(audit_log_append(log, &ev), 0);
}

#define T0 1700000000000000000LL
#define S  1000000000LL

static void emit_story(void)
{
	struct audit_log *log = log_open(NULL);

	emit(log, T0 + 1 * S, "create", "src/new.c", NULL, 0, -1);
	emit(log, T0 + 2 * S, "write", "src/new.c", NULL, 0, 100);
	emit(log, T0 + 3 * S, "write", "README", NULL, 0, 5);
	emit(log, T0 + 4 * S, "unlink", "old.txt", NULL, 0, -1);
	emit(log, T0 + 5 * S, "rename", "a.txt", "b.txt", 0, -1);
	emit(log, T0 + 6 * S, "unlink", "missing", NULL, ENOENT, -1);
	emit(log, T0 + 7 * S, "write", ".git/index", NULL, 0, 64);
	emit(log, T0 + 8 * S, "create", "tmp.o", NULL, 0, -1);
	emit(log, T0 + 9 * S, "unlink", "tmp.o", NULL, 0, -1);
	emit(log, T0 + 10 * S, "rename", ".git/x.lock", ".git/x", 0, -1);
	emit(log, T0 + 11 * S, "symlink", "lnk", ".git/hooks", 0, -1);
	emit(log, T0 + 12 * S, "link", "hard", "README", 0, -1);
	audit_log_close(log);
}

static int count_rows(const struct audit_filter *f, char *paths, size_t size)
{
	struct audit_query *q = NULL;
	struct audit_row r;
	sqlite3 *db = NULL;
	int n = 0, rc;

	paths[0] = '\0';
	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_eq(audit_query_new(&q, db, f, false), 0);
	while ((rc = audit_query_next(q, &r)) == 1) {
		snprintf(paths + strlen(paths), size - strlen(paths), "%s%s", n ? " " : "",
			 r.path ? r.path : "-");
		n++;
	}
	ck_assert_int_eq(rc, 0);
	audit_query_free(q);
	audit_db_close(db);
	return n;
}

START_TEST(query_filters)
{
	const char *ops_unlink[] = {"unlink", NULL};
	struct audit_filter f = {0};
	sqlite3 *db = NULL;
	int64_t deleted;
	char paths[512];

	emit_story();
	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_eq(audit_ws_resolve(db, "w1", &f.ws_key, &deleted), 0);
	audit_db_close(db);

	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 10);
	ck_assert_str_eq(paths, "src/new.c src/new.c README old.txt a.txt missing tmp.o tmp.o "
				"lnk hard");
	f.all = true;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 12);
	f.all = false;
	f.since_ns = T0 + 3 * S;
	f.until_ns = T0 + 5 * S;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 3);
	ck_assert_str_eq(paths, "README old.txt a.txt");
	f.since_ns = f.until_ns = 0;
	f.path_glob = "src/*";
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 2);
	f.path_glob = "b.txt";
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 1);
	ck_assert_str_eq(paths, "a.txt");
	f.path_glob = NULL;
	f.ops = ops_unlink;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 3);
	f.failed = true;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 1);
	ck_assert_str_eq(paths, "missing");
	f.ops = NULL;
	f.failed = false;
	f.kinds = AUDIT_KIND_EXEC;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 0);
	f.kinds = AUDIT_KIND_FS;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 10);
	f.kinds = 0;
	f.session = 5;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 0);
	f.session = 0;
	f.after_seq = 9;
	f.all = true;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 3);
	f.after_seq = 0;
	f.upto_seq = 2;
	ck_assert_int_eq(count_rows(&f, paths, sizeof(paths)), 2);
	ck_assert(audit_path_is_git(".git"));
	ck_assert(audit_path_is_git(".git/HEAD"));
	ck_assert(!audit_path_is_git(".github/x"));
	ck_assert(!audit_path_is_git("a/.git"));
	ck_assert(audit_op_known("removexattr"));
	ck_assert(!audit_op_known("delete"));
}
END_TEST

START_TEST(summary_statuses)
{
	struct audit_filter f = {0};
	struct audit_summary *s = NULL;
	struct audit_query *q = NULL;
	const struct audit_summary_entry *e;
	struct audit_row r;
	sqlite3 *db = NULL;
	int64_t deleted;
	size_t n;
	int rc;

	emit_story();
	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_eq(audit_ws_resolve(db, "w1", &f.ws_key, &deleted), 0);
	ck_assert_int_eq(audit_summary_new(&s), 0);
	ck_assert_int_eq(audit_query_new(&q, db, &f, false), 0);
	while ((rc = audit_query_next(q, &r)) == 1)
		ck_assert_int_eq(audit_summary_add(s, &r), 0);
	ck_assert_int_eq(rc, 0);
	n = audit_summary_entries(s, &e);
	/* README, a.txt, b.txt, hard, lnk, missing, old.txt, src/new.c, tmp.o; .git hidden */
	ck_assert_uint_eq(n, 9);
	ck_assert_str_eq(e[0].path, "README");
	ck_assert_str_eq(e[0].status, "modified");
	ck_assert_int_eq(e[0].bytes, 5);
	ck_assert_int_eq(e[0].ops, 2); /* the write, and the link to it */
	ck_assert_str_eq(e[1].path, "a.txt");
	ck_assert_str_eq(e[1].status, "renamed");
	ck_assert_str_eq(e[1].renamed_to, "b.txt");
	ck_assert_str_eq(e[2].path, "b.txt");
	ck_assert_str_eq(e[2].status, "added");
	ck_assert_ptr_null(e[2].renamed_to);
	ck_assert_str_eq(e[3].path, "hard");
	ck_assert_str_eq(e[3].status, "added");
	/* A symlink's target is not a path of the workspace. */
	ck_assert_str_eq(e[4].path, "lnk");
	ck_assert_str_eq(e[4].status, "added");
	ck_assert_str_eq(e[5].path, "missing");
	ck_assert_str_eq(e[5].status, "unchanged");
	ck_assert_str_eq(e[6].path, "old.txt");
	ck_assert_str_eq(e[6].status, "deleted");
	ck_assert_str_eq(e[7].path, "src/new.c");
	ck_assert_str_eq(e[7].status, "added");
	ck_assert_int_eq(e[7].ops, 2);
	ck_assert_int_eq(e[7].bytes, 100);
	ck_assert_int_eq(e[7].first_ns, T0 + 1 * S);
	ck_assert_int_eq(e[7].last_ns, T0 + 2 * S);
	ck_assert_str_eq(e[8].path, "tmp.o");
	ck_assert_str_eq(e[8].status, "deleted");
	audit_query_free(q);
	audit_summary_free(s);
	audit_db_close(db);
}
END_TEST

/* RENAME_EXCHANGE: both names stay, each with the other's file. */
START_TEST(summary_exchange)
{
	static const struct {
		const char *op, *path, *path2;
	} rows[] = {
	    {"exchange", "x1", "x2"},
	    {"create", "new", NULL},
	    {"exchange", "new", "old"},
	    {"fallocate", "x1", NULL},
	};
	struct audit_summary *s = NULL;
	const struct audit_summary_entry *e;
	size_t n;

	ck_assert_int_eq(audit_summary_new(&s), 0);
	for (size_t i = 0; i < ARB_ARRAY_LEN(rows); i++) {
		struct audit_row r = {.kind = "fs",
				      .op = rows[i].op,
				      .path = rows[i].path,
				      .path2 = rows[i].path2,
				      .time_ns = T0 + (int64_t)i * S,
				      .size = -1};

		ck_assert_int_eq(audit_summary_add(s, &r), 0);
	}
	n = audit_summary_entries(s, &e);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(e[0].path, "new");
	ck_assert_str_eq(e[0].status, "added");
	ck_assert_str_eq(e[1].path, "old");
	ck_assert_str_eq(e[1].status, "modified");
	ck_assert_str_eq(e[2].path, "x1");
	ck_assert_str_eq(e[2].status, "modified");
	ck_assert_int_eq(e[2].ops, 2);
	ck_assert_str_eq(e[3].path, "x2");
	ck_assert_str_eq(e[3].status, "modified");
	ck_assert_ptr_null(e[3].renamed_to);
	ck_assert(audit_op_known("exchange") && audit_op_known("fallocate") &&
		  audit_op_known("disk-full"));
	audit_summary_free(s);
}
END_TEST

START_TEST(purge_removes_all_history_of_a_name)
{
	sqlite3 *db = NULL;
	int64_t key, deleted, removed = 0;

	emit_story();
	{
		struct audit_log *log = NULL;

		ck_assert_int_eq(audit_log_open(&log, db_path, "id2", "w2"), 0);
		emit(log, T0, "mkdir", "keep", NULL, 0, -1);
		audit_log_close(log);
	}
	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_eq(audit_ws_purge(db, "w1", &removed), 0);
	ck_assert_int_eq(removed, 12);
	ck_assert_int_eq(audit_ws_resolve(db, "w1", &key, &deleted), -ENOENT);
	ck_assert_int_eq(audit_ws_purge(db, "w1", NULL), -ENOENT);
	ck_assert_int_eq(audit_ws_resolve(db, "w2", &key, &deleted), 0);
	audit_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM audit_events"), 1);
}
END_TEST

START_TEST(time_parsing)
{
	const int64_t now = T0;
	int64_t t;

	ck_assert_int_eq(audit_time_parse("10m", now, &t), 0);
	ck_assert_int_eq(t, now - 600 * S);
	ck_assert_int_eq(audit_time_parse("2h", now, &t), 0);
	ck_assert_int_eq(t, now - 7200 * S);
	ck_assert_int_eq(audit_time_parse("30s", now, &t), 0);
	ck_assert_int_eq(t, now - 30 * S);
	ck_assert_int_eq(audit_time_parse("1w", now, &t), 0);
	ck_assert_int_eq(t, now - 604800 * S);
	ck_assert_int_eq(audit_time_parse("2023-11-14T22:13:20Z", now, &t), 0);
	ck_assert_int_eq(t, T0);
	ck_assert_int_eq(audit_time_parse("2023-11-14T23:13:20.5+01:00", now, &t), 0);
	ck_assert_int_eq(t, T0 + S / 2);
	ck_assert_int_eq(audit_time_parse("@1700000000", now, &t), 0);
	ck_assert_int_eq(t, T0);
	setenv("TZ", "UTC", 1);
	tzset();
	ck_assert_int_eq(audit_time_parse("2023-11-14 22:13", now, &t), 0);
	ck_assert_int_eq(t, T0 - 20 * S);
	ck_assert_int_eq(audit_time_parse("2023-11-14", now, &t), 0);
	ck_assert_int_eq(t, T0 - (22 * 3600 + 13 * 60 + 20) * S);
	static const char *const bad[] = {"",
					  "10",
					  "10x",
					  "m",
					  "-5m",
					  "10m5",
					  "2023-13-01",
					  "2023-11-14T25:00",
					  "@",
					  "@x",
					  "2023-11-14Tfoo",
					  "2023-11-14 10:00 junk"};
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		ck_assert_msg(audit_time_parse(bad[i], now, &t) == -EINVAL, "accepted '%s'",
			      bad[i]);
		ck_assert_ptr_nonnull(strstr(util_err_msg(), "invalid time"));
	}
}
END_TEST

static Suite *audit_suite(void)
{
	Suite *s = suite_create("audit");
	struct {
		const char *name;
		const TTest *tests[12];
		int timeout;
	} cases[] = {
	    {"schema", {schema_history_follows_workspaces}, 30},
	    {"recorder",
	     {log_every_field, log_threads_burst_complete, log_close_drains_everything,
	      log_durable_within_100ms, log_back_pressure_not_drops},
	     120},
	    {"unwritable",
	     {log_survives_locked_database, log_gap_when_backlog_full,
	      log_close_times_out_on_dead_database, log_kill9_keeps_older_events},
	     60},
	    {"proc", {proc_names_other_processes, proc_exec_is_noticed}, 30},
	    {"session", {session_links_descendants, NULL}, 30},
	    {"query",
	     {query_filters, summary_statuses, summary_exchange,
	      purge_removes_all_history_of_a_name, time_parsing},
	     30},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(cases); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
		tcase_set_timeout(tc, cases[i].timeout);
		for (size_t j = 0; cases[i].tests[j]; j++)
			tcase_add_test(tc, cases[i].tests[j]);
		suite_add_tcase(s, tc);
	}
	/* A new pid namespace (a box) needs CAP_SYS_ADMIN. */
	if (geteuid() == 0) {
		TCase *tc = tcase_create("session_pidns");

		tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
		tcase_add_test(tc, session_links_pid_namespace);
		tcase_add_test(tc, session_two_boxes_one_leader);
		suite_add_tcase(s, tc);
	} else if (getenv("ARBORINTH_TEST_MUST_RUN")) {
		fprintf(stderr, "check_audit: the pid namespace test needs root\n");
		exit(EXIT_FAILURE);
	} else {
		fprintf(stderr, "check_audit: SKIP session_links_pid_namespace (needs root)\n");
	}
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(audit_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
