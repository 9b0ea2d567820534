/*
 * tests/unit/check_audit_chain.c: the audit's tamper evidence and crash bookkeeping through
 * the public API, on real SQLite files: the chain over recorder and session rows, what
 * verification reports for each kind of tampering (and what it cannot see), bundles, and the
 * daemon runs behind crash reconciliation (a child killed before close).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit.h"

#define SEC 1000000000LL

static char dir[64];
static char db_path[128];

static void tmp_setup(void)
{
	strcpy(dir, "/tmp/check_audit_chain.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/state.db", dir);
}

static void tmp_teardown(void)
{
	ck_assert_int_eq(util_rm_rf(dir), 0);
}

static struct audit_log *log_open(void)
{
	struct audit_log *log = NULL;

	ck_assert_msg(audit_log_open(&log, db_path, "id1", "w1") == 0, "%s", util_err_msg());
	return log;
}

static void append(struct audit_log *log, const char *op, const char *path)
{
	struct audit_event ev = {
	    .time_ns = util_now_ns(), .op = op, .path = path, .size = -1, .pid = getpid()};

	ck_assert_int_eq(audit_log_append(log, &ev), 0);
}

/* Ten fs rows and a session's exec and exit rows for workspace w1. */
static void history(void)
{
	struct audit_log *log = log_open();
	struct audit_session *s = NULL;
	char *argv[] = {"true", NULL};
	char name[16];

	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		append(log, i % 3 ? "write" : "create", name);
	}
	append(log, "unlink", "odd-\xff.txt");
	ck_assert_int_eq(audit_log_flush(log), 0);
	ck_assert_int_eq(audit_session_begin(&s, db_path, "id1", "w1", "none", argv), 0);
	ck_assert_int_eq(audit_session_end(s, 0), 0);
	audit_log_close(log);
}

static void sql(const char *stmt)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_msg(audit_db_exec(db, stmt) == 0, "%s", util_err_msg());
	audit_db_close(db);
}

static struct audit_verify_result verify(void)
{
	struct audit_verify_result res;
	sqlite3 *db = NULL;
	int64_t key = 0, deleted = 0;

	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_eq(audit_ws_resolve(db, "w1", &key, &deleted), 0);
	ck_assert_msg(audit_verify_db(db, key, &res) == 0, "%s", util_err_msg());
	audit_db_close(db);
	return res;
}

START_TEST(chain_covers_recorder_and_sessions)
{
	struct audit_verify_result res;

	history();
	res = verify();
	ck_assert_msg(res.ok, "%s", res.reason);
	ck_assert_int_eq(res.rows, 13);
	ck_assert_int_eq(strlen(res.head), 64);
	/* The session's rows are links of the same chain. */
	sql("UPDATE audit_events SET result = 3 WHERE op = 'exit'");
	res = verify();
	ck_assert(!res.ok);
	ck_assert_int_eq(res.broken_seq, 13);
}
END_TEST

START_TEST(verify_names_the_broken_link)
{
	static const struct {
		const char *sql;
		int64_t seq;
	} cases[] = {
	    {"UPDATE audit_events SET path = 'x' WHERE seq = 4", 4},
	    {"UPDATE audit_events SET pid = NULL WHERE seq = 5", 5},
	    {"UPDATE audit_events SET hash = NULL WHERE seq = 6", 6},
	    {"DELETE FROM audit_events WHERE seq = 7", 7},
	    {"DELETE FROM audit_events WHERE seq IN (7, 8)", 8},
	    {"UPDATE audit_events SET seq = 99 WHERE seq = 3", 3},
	    {"UPDATE audit_events SET seq = -seq WHERE seq IN (5, 6);"
	     "UPDATE audit_events SET seq = 6 WHERE seq = -5;"
	     "UPDATE audit_events SET seq = 5 WHERE seq = -6",
	     5},
	};
	char *copy = NULL;

	history();
	ck_assert_ptr_nonnull(copy = util_asprintf("%s/copy.db", dir));
	sql("PRAGMA wal_checkpoint(TRUNCATE)");
	for (size_t i = 0; i < ARB_ARRAY_LEN(cases); i++) {
		struct audit_verify_result res;
		char *cmd = util_asprintf("cp %s %s", db_path, copy);

		ck_assert_int_eq(system(cmd), 0);
		free(cmd);
		sql(cases[i].sql);
		res = verify();
		ck_assert_msg(!res.ok && res.broken_seq == cases[i].seq, "%s: %lld (%s)",
			      cases[i].sql, (long long)res.broken_seq, res.reason);
		cmd = util_asprintf("cp %s %s", copy, db_path);
		ck_assert_int_eq(system(cmd), 0);
		free(cmd);
		ck_assert(verify().ok);
	}
	free(copy);
	/* Rows cut from the end: the head recorded with the chain names the last one. */
	{
		struct audit_verify_result before = verify(), after;

		sql("DELETE FROM audit_events WHERE seq >= 12");
		after = verify();
		ck_assert(!after.ok);
		ck_assert_int_eq(after.broken_seq, 13);
		/* What a chain cannot show: the same with the recorded head moved back too. */
		sql("UPDATE audit_heads SET seq = 11, hash = (SELECT hash FROM audit_events "
		    "WHERE seq = 11)");
		after = verify();
		ck_assert(after.ok);
		ck_assert_int_eq(after.rows, before.rows - 2);
		ck_assert_str_ne(after.head, before.head);
	}
}
END_TEST

START_TEST(bundle_round_trip)
{
	struct audit_verify_result res, db_res = {0};
	char *path = util_asprintf("%s/b.jsonl", dir);
	sqlite3 *db = NULL;
	int64_t key = 0, deleted = 0;
	FILE *f;

	history();
	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_eq(audit_ws_resolve(db, "w1", &key, &deleted), 0);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	ck_assert_int_eq(audit_export(db, key, "w1", f, &db_res), 0);
	ck_assert_int_eq(fclose(f), 0);
	audit_db_close(db);
	ck_assert_int_eq(audit_verify_bundle(path, &res), 0);
	ck_assert_msg(res.ok, "%s", res.reason);
	ck_assert_int_eq(res.rows, 13);
	ck_assert_str_eq(res.head, db_res.head);
	ck_assert_str_eq(res.workspace, "w1");
	/* Not a bundle: refused with the line. */
	ck_assert_int_eq(util_write_file(path, "{}\n", 3, 0644), 0);
	ck_assert_int_eq(audit_verify_bundle(path, &res), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "b.jsonl:1: not an arborinth audit bundle"));
	free(path);
}
END_TEST

/*
 * A daemon run that never closes its log: killed with SIGKILL after its events are in. The
 * run began between *start and *ready.
 */
static void crashed_run(int64_t *start, int64_t *ready)
{
	int ready_fds[2];
	pid_t pid;
	char c;

	*start = util_now_ns();
	ck_assert_int_eq(pipe(ready_fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct audit_log *log = NULL;
		int64_t since = -1;

		if (audit_log_open(&log, db_path, "id1", "w1") < 0 ||
		    audit_log_run_check(log, &since) < 0 || audit_log_run_begin(log) < 0)
			_exit(1);
		append(log, "write", "a");
		if (audit_log_flush(log) < 0 || write(ready_fds[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready_fds[1]);
	ck_assert_int_eq(read(ready_fds[0], &c, 1), 1);
	*ready = util_now_ns();
	close(ready_fds[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

START_TEST(runs_tell_a_crash_from_a_clean_end)
{
	struct audit_log *log = log_open();
	int64_t since = -1, start, ready;

	/* No run yet, then a clean one: nothing to reconcile. */
	ck_assert_int_eq(audit_log_run_check(log, &since), 0);
	ck_assert_int_eq(since, 0);
	ck_assert_int_eq(audit_log_run_begin(log), 0);
	append(log, "write", "a");
	audit_log_close(log);
	log = log_open();
	ck_assert_int_eq(audit_log_run_check(log, &since), 0);
	ck_assert_int_eq(since, 0);
	audit_log_close(log);

	/* A run killed after its last commit: from its start (less 1 s for coarse ctimes). */
	crashed_run(&start, &ready);
	log = log_open();
	ck_assert_int_eq(audit_log_run_check(log, &since), 0);
	ck_assert_msg(since >= start - SEC && since <= ready - SEC,
		      "since %lld, run began in [%lld, %lld]", (long long)since, (long long)start,
		      (long long)ready);
	/* Reconciled by the next run: the one after that has nothing to do. */
	ck_assert_int_eq(audit_log_run_begin(log), 0);
	audit_log_close(log);
	log = log_open();
	ck_assert_int_eq(audit_log_run_check(log, &since), 0);
	ck_assert_int_eq(since, 0);
	audit_log_close(log);
}
END_TEST

START_TEST(purge_forgets_runs)
{
	struct audit_log *log;
	sqlite3 *db = NULL;
	int64_t since = -1, start, ready;

	crashed_run(&start, &ready);
	ck_assert_int_eq(audit_db_open(&db, db_path), 0);
	ck_assert_int_eq(audit_ws_purge(db, "w1", NULL), 0);
	audit_db_close(db);
	/* The name's next history (its key may be reused) has no crash to reconcile. */
	log = log_open();
	ck_assert_int_eq(audit_log_run_check(log, &since), 0);
	ck_assert_int_eq(since, 0);
	audit_log_close(log);
}
END_TEST

static Suite *chain_suite(void)
{
	Suite *s = suite_create("audit_chain");
	TCase *chain = tcase_create("chain"), *runs = tcase_create("runs");

	tcase_add_checked_fixture(chain, tmp_setup, tmp_teardown);
	tcase_add_test(chain, chain_covers_recorder_and_sessions);
	tcase_add_test(chain, verify_names_the_broken_link);
	tcase_add_test(chain, bundle_round_trip);
	suite_add_tcase(s, chain);
	tcase_add_checked_fixture(runs, tmp_setup, tmp_teardown);
	tcase_add_test(runs, runs_tell_a_crash_from_a_clean_end);
	tcase_add_test(runs, purge_forgets_runs);
	suite_add_tcase(s, runs);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(chain_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
