/*
 * tests/helpers/lib_sessions.c: one library process, many boxes, each its own session (driven
 * by tests/integration/lib_sessions.sh). Only the public API (arborinth.h), as a program
 * outside the project uses it.
 *
 *   lib_sessions REPO WORKSPACE
 *   lib_sessions REPO WORKSPACE timers
 *
 * Creates WORKSPACE in REPO, runs two boxes one after the other, then two and then eight at
 * once from as many threads (each with its own project handle, as the header asks), each box
 * writing files of its own (TAG-a.txt, TAG-d/, TAG-d/f). Then checks, through the library:
 * every session id is distinct; every file row of a box's files carries that box's session;
 * the audit filtered by a session holds exactly that box's paths, its exec and its exit;
 * each session has its start and end checkpoint, and between them its files were added (for
 * the boxes run alone: only its files); the chain verifies. Prints one line per failed check
 * and "ok N sessions"; exits 1 when a check failed, 2 when a box could not run.
 *
 * timers: the boxes' own timeouts and signals, three threads at once. One box with a 1 s
 * timeout sleeps 30 s (stopped: 124, timed out), one without a timeout and one with 20 s do
 * their work (0, not timed out); then SIGTERM to the process while two boxes sleep reaches
 * both (143) and the process lives on. Prints "ok timers".
 */
#include <arborinth.h>

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NBOX 12

struct box_run {
	const char *repo, *ws;
	const char *timeout; /* NULL: none */
	const char *cmd;     /* NULL: the files of the tag */
	int timed_out;
	char tag[16];
	int64_t session;
	int exit_status, rc;
	char err[256];
	int alone; /* no other box ran meanwhile */
};

static int fails;

static void failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fails++;
}

static void *run_box(void *arg)
{
	struct box_run *r = arg;
	char script[512];
	char *const argv[] = {"sh", "-c", script, NULL};
	struct arb_run_result res;
	arb_project *p = NULL;
	arb_box *b = NULL;

	/* A pause first and between the writes: the concurrent boxes overlap. */
	snprintf(script, sizeof(script),
		 "sleep 0.3; echo %s > %s-a.txt; mkdir %s-d; sleep 0.3; echo %s > %s-d/f", r->tag,
		 r->tag, r->tag, r->tag, r->tag);
	if (r->cmd)
		snprintf(script, sizeof(script), "%s", r->cmd);
	r->rc = arb_project_open(&p, r->repo);
	if (r->rc == 0)
		r->rc = arb_box_new(&b, p, r->ws);
	if (r->rc == 0 && r->timeout)
		r->rc = arb_box_set_limit(b, "timeout", r->timeout);
	if (r->rc == 0)
		r->rc = arb_box_run(&res, b, argv);
	if (r->rc < 0) {
		snprintf(r->err, sizeof(r->err), "%s", arb_error_last());
	} else {
		r->session = res.session;
		r->exit_status = res.exit_status;
		r->timed_out = res.timed_out;
	}
	arb_box_free(b);
	arb_project_free(p);
	return NULL;
}

static int run_group(struct box_run *runs, size_t n)
{
	pthread_t t[NBOX];

	for (size_t i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, run_box, &runs[i]) != 0)
			return -1;
	for (size_t i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static bool has_prefix(const char *s, const char *tag)
{
	size_t n = strlen(tag);

	return s && !strncmp(s, tag, n) && s[n] == '-';
}

static struct box_run *owner(struct box_run *runs, const char *path)
{
	for (size_t i = 0; i < NBOX; i++)
		if (has_prefix(path, runs[i].tag))
			return &runs[i];
	return NULL;
}

/* Every file row of a box's files carries its session; each session's rows are its own. */
static void check_rows(arb_project *p, const char *ws, struct box_run *runs)
{
	struct arb_audit_filter f = {.kinds = ARB_AUDIT_FS};
	const struct arb_audit_row *row;
	arb_audit_iter *it = NULL;
	int seen[NBOX] = {0};
	int rc;

	if (arb_audit_open(&it, p, ws, &f) < 0) {
		failf("audit: %s", arb_error_last());
		return;
	}
	while ((rc = arb_audit_next(it, &row)) > 0) {
		struct box_run *o = owner(runs, row->path);

		if (!o)
			continue;
		seen[o - runs]++;
		if (row->session != o->session)
			failf("%s %s: session %lld, not %lld (its box's)", row->op, row->path,
			      (long long)row->session, (long long)o->session);
	}
	if (rc < 0)
		failf("audit row: %s", arb_error_last());
	arb_audit_free(it);
	for (size_t i = 0; i < NBOX; i++)
		if (!seen[i])
			failf("no file row of box %s", runs[i].tag);
}

/* The audit of one session: exactly its box's paths, one exec and one exit. */
static void check_session(arb_project *p, const char *ws, const struct box_run *r)
{
	struct arb_audit_filter f = {.session = r->session};
	const struct arb_audit_row *row;
	arb_audit_iter *it = NULL;
	int a = 0, d = 0, df = 0, exec = 0, exit_rows = 0, rc;
	char want[64];

	if (arb_audit_open(&it, p, ws, &f) < 0) {
		failf("audit of session %lld: %s", (long long)r->session, arb_error_last());
		return;
	}
	while ((rc = arb_audit_next(it, &row)) > 0) {
		if (!strcmp(row->kind, "exec")) {
			exec += !strcmp(row->op, "exec");
			exit_rows += !strcmp(row->op, "exit");
			continue;
		}
		if (!strcmp(row->kind, "fs") && !has_prefix(row->path, r->tag)) {
			failf("session %lld (box %s) has %s %s", (long long)r->session, r->tag,
			      row->op, row->path ? row->path : "-");
			continue;
		}
		snprintf(want, sizeof(want), "%s-a.txt", r->tag);
		a += !strcmp(row->path, want);
		snprintf(want, sizeof(want), "%s-d", r->tag);
		d += !strcmp(row->path, want);
		snprintf(want, sizeof(want), "%s-d/f", r->tag);
		df += !strcmp(row->path, want);
	}
	if (rc < 0)
		failf("audit row: %s", arb_error_last());
	arb_audit_free(it);
	if (!a || !d || !df)
		failf("session %lld (box %s) lacks a path: a.txt %d, d %d, d/f %d",
		      (long long)r->session, r->tag, a, d, df);
	if (exec != 1 || exit_rows != 1)
		failf("session %lld: %d exec and %d exit rows", (long long)r->session, exec,
		      exit_rows);
}

/* git's name-status between two checkpoints, into buf. */
static int diff_names(arb_project *p, const char *ws, unsigned from, unsigned to, char *buf,
		      size_t len)
{
	char a[16], b[16];
	FILE *tmp = tmpfile();
	size_t n;
	int rc;

	if (!tmp)
		return -1;
	snprintf(a, sizeof(a), "%u", from);
	snprintf(b, sizeof(b), "%u", to);
	rc = arb_diff(p, ws, a, b, NULL, 0, ARB_DIFF_NAME_STATUS, fileno(tmp));
	rewind(tmp);
	n = fread(buf, 1, len - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return rc;
}

static void check_checkpoints(arb_project *p, const char *ws, const struct box_run *r)
{
	struct arb_checkpoint s, e;
	char names[4096], want[128], a[64], df[64];

	if (arb_checkpoint_of_session(&s, p, ws, r->session, "start") < 0 ||
	    arb_checkpoint_of_session(&e, p, ws, r->session, "end") < 0) {
		failf("session %lld: no start or end checkpoint: %s", (long long)r->session,
		      arb_error_last());
		return;
	}
	if (s.session != r->session || e.session != r->session || strcmp(s.kind, "start") ||
	    strcmp(e.kind, "end") || e.seq <= s.seq) {
		failf("session %lld: checkpoints #%u (%s, session %lld) and #%u (%s, session %lld)",
		      (long long)r->session, s.seq, s.kind, (long long)s.session, e.seq, e.kind,
		      (long long)e.session);
		return;
	}
	if (diff_names(p, ws, s.seq, e.seq, names, sizeof(names)) < 0) {
		failf("diff #%u #%u: %s", s.seq, e.seq, arb_error_last());
		return;
	}
	snprintf(want, sizeof(want), "A\t%s-a.txt\nA\t%s-d/f\n", r->tag, r->tag);
	snprintf(a, sizeof(a), "A\t%s-a.txt\n", r->tag);
	snprintf(df, sizeof(df), "A\t%s-d/f\n", r->tag);
	/* Boxes that ran meanwhile wrote into the same view: their files may be there too. */
	if (r->alone ? strcmp(names, want) != 0 : !strstr(names, a) || !strstr(names, df))
		failf("session %lld (box %s): its checkpoints differ by [%s], want [%s]",
		      (long long)r->session, r->tag, names, want);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SIGTERM to the process once both boxes' commands run (each made its file in the view). */
static void *terminate_soon(void *arg)
{
	const char *workdir = arg;
	char a[4096], b[4096];

	snprintf(a, sizeof(a), "%s/sig0-up", workdir);
	snprintf(b, sizeof(b), "%s/sig1-up", workdir);
	for (int i = 0; i < 600 && (access(a, F_OK) < 0 || access(b, F_OK) < 0); i++)
		usleep(100 * 1000);
	kill(getpid(), SIGTERM);
	return NULL;
}

/* Each box's own timeout, and a signal to the process reaching every box. */
static int timers(const char *repo, const char *ws, const char *workdir)
{
	struct box_run r[3] = {
	    {.repo = repo, .ws = ws, .timeout = "1s", .cmd = "sleep 30", .tag = "late"},
	    {.repo = repo, .ws = ws, .cmd = "sleep 2; echo x > plain-a.txt", .tag = "plain"},
	    {.repo = repo, .ws = ws, .timeout = "20s", .cmd = "sleep 2.5", .tag = "roomy"},
	};
	struct box_run sig[2] = {
	    {.repo = repo, .ws = ws, .cmd = "echo > sig0-up; sleep 30", .tag = "sig0"},
	    {.repo = repo, .ws = ws, .cmd = "echo > sig1-up; sleep 30", .tag = "sig1"},
	};
	int64_t t0 = now_ms(), took;
	pthread_t killer;

	if (run_group(r, 3) < 0)
		return 2;
	took = now_ms() - t0;
	for (size_t i = 0; i < 3; i++)
		if (r[i].rc < 0)
			failf("box %s: %s", r[i].tag, r[i].err);
	if (r[0].exit_status != 124 || !r[0].timed_out)
		failf("the 1 s box: exit %d, timed out %d", r[0].exit_status, r[0].timed_out);
	if (r[1].exit_status != 0 || r[1].timed_out || r[2].exit_status != 0 || r[2].timed_out)
		failf("the other boxes: exit %d and %d, timed out %d and %d (the 1 s box's "
		      "timeout stopped them?)",
		      r[1].exit_status, r[2].exit_status, r[1].timed_out, r[2].timed_out);
	if (took > 15000)
		failf("three boxes took %lld ms (the timeout did not stop the 30 s sleep)",
		      (long long)took);
	t0 = now_ms();
	if (pthread_create(&killer, NULL, terminate_soon, (void *)workdir) != 0 ||
	    run_group(sig, 2) < 0)
		return 2;
	pthread_join(killer, NULL);
	took = now_ms() - t0;
	for (size_t i = 0; i < 2; i++)
		if (sig[i].rc < 0 || sig[i].exit_status != 128 + SIGTERM)
			failf("box %s after SIGTERM: rc %d, exit %d: %s", sig[i].tag, sig[i].rc,
			      sig[i].exit_status, sig[i].err);
	if (took > 25000)
		failf("SIGTERM did not stop the boxes (%lld ms)", (long long)took);
	if (fails)
		return 1;
	printf("ok timers\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct box_run runs[NBOX] = {0};
	struct arb_audit_verify v;
	arb_project *p = NULL;
	arb_workspace *w = NULL;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "timers"))) {
		fprintf(stderr, "usage: lib_sessions REPO WORKSPACE [timers]\n");
		return 2;
	}
	for (size_t i = 0; i < NBOX; i++) {
		runs[i].repo = argv[1];
		runs[i].ws = argv[2];
		snprintf(runs[i].tag, sizeof(runs[i].tag), "%s%zu",
			 i < 2	 ? "seq"
			 : i < 4 ? "two"
				 : "eight",
			 i < 2	 ? i
			 : i < 4 ? i - 2
				 : i - 4);
		runs[i].alone = i < 2;
	}
	if (arb_project_open(&p, argv[1]) < 0 ||
	    arb_workspace_create(&w, p, argv[2], NULL, 0) < 0) {
		fprintf(stderr, "lib_sessions: %s\n", arb_error_last());
		return 2;
	}
	if (argc == 4) {
		int rc = timers(argv[1], argv[2], arb_workspace_workdir(w));

		arb_workspace_free(w);
		arb_project_free(p);
		return rc;
	}
	arb_workspace_free(w);
	/* Two one after the other (in this thread), then two and eight at once. */
	run_box(&runs[0]);
	run_box(&runs[1]);
	if (run_group(runs + 2, 2) < 0 || run_group(runs + 4, 8) < 0) {
		fprintf(stderr, "lib_sessions: cannot start a thread\n");
		return 2;
	}
	for (size_t i = 0; i < NBOX; i++) {
		if (runs[i].rc < 0 || runs[i].exit_status != 0 || runs[i].session <= 0) {
			fprintf(stderr, "lib_sessions: box %s: rc %d, exit %d, session %lld: %s\n",
				runs[i].tag, runs[i].rc, runs[i].exit_status,
				(long long)runs[i].session, runs[i].err);
			return 2;
		}
		printf("box %s: session %lld\n", runs[i].tag, (long long)runs[i].session);
		for (size_t j = 0; j < i; j++)
			if (runs[j].session == runs[i].session)
				failf("boxes %s and %s share session %lld", runs[j].tag,
				      runs[i].tag, (long long)runs[i].session);
	}
	check_rows(p, argv[2], runs);
	for (size_t i = 0; i < NBOX; i++) {
		check_session(p, argv[2], &runs[i]);
		check_checkpoints(p, argv[2], &runs[i]);
	}
	if (arb_audit_verify(&v, p, argv[2]) < 0 || !v.ok)
		failf("audit --verify: %s %s", v.ok ? "" : v.reason, arb_error_last());
	arb_project_free(p);
	if (fails)
		return 1;
	printf("ok %d sessions\n", NBOX);
	return 0;
}
