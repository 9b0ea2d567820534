/*
 * cli/cmd_log.c: `arborinth log` (a workspace's sessions, each with what it changed, and its
 * checkpoints) and `arborinth diff` (git's diff between two states of a workspace).
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "include/arborinth.h"

struct session {
	int64_t id, start_ns, end_ns;
	int exit; /* -1: still running, or ended without a record */
	char *argv, *jail;
	bool ended;
};

static void sessions_free(struct session *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].argv);
		free(v[i].jail);
	}
	free(v);
}

/* The workspace's sessions from the audit's exec/exit rows, by start. */
static int sessions_load(arb_project *p, const char *name, struct session **out, size_t *n)
{
	struct arb_audit_filter f = {.kinds = ARB_AUDIT_EXEC};
	const struct arb_audit_row *row;
	arb_audit_iter *it = NULL;
	struct session *v = NULL;
	int rc = arb_audit_open(&it, p, name, &f);

	*out = NULL;
	*n = 0;
	if (rc == -ENOENT)
		return 0; /* no history yet */
	while (rc == 0 && (rc = arb_audit_next(it, &row)) == 1) {
		bool exec = !strcmp(row->op, "exec");
		struct session *x = NULL;

		rc = 0;
		if (exec) {
			x = realloc(v, (*n + 1) * sizeof(*v));
			if (!x) {
				rc = util_err(-ENOMEM, "out of memory");
				break;
			}
			v = x;
			x = &v[(*n)++];
			*x = (struct session){
			    .id = row->session, .start_ns = row->time_ns, .exit = -1};
			x->argv = row->argv_json ? strdup(row->argv_json) : NULL;
			x->jail = row->jail ? strdup(row->jail) : NULL;
		} else if (!strcmp(row->op, "exit")) {
			for (size_t i = 0; i < *n; i++)
				if (v[i].id == row->session)
					x = &v[i];
			if (x) {
				x->end_ns = row->time_ns;
				x->exit = row->result;
				x->ended = true;
			}
		}
	}
	arb_audit_free(it);
	if (rc < 0) {
		sessions_free(v, *n);
		*n = 0;
		return rc;
	}
	*out = v;
	return 0;
}

static const struct arb_checkpoint *find_ckpt(const struct arb_checkpoint *c, size_t n,
					      int64_t session, const char *kind)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].session == session && !strcmp(c[i].kind, kind))
			return &c[i];
	return NULL;
}

static void fmt_time(int64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

/* What session s changed: between its start and end checkpoints (the view, when running). */
static int session_stat(arb_project *p, const char *name, const struct session *s,
			const struct arb_checkpoint *c, size_t n, struct arb_diffstat *st,
			bool *known)
{
	const struct arb_checkpoint *a = find_ckpt(c, n, s->id, "start");
	const struct arb_checkpoint *b = find_ckpt(c, n, s->id, "end");

	*known = false;
	if (!a || (!b && s->ended))
		return 0;
	*known = true;
	return arb_diffstat(st, p, name, a->tree, b ? b->tree : "view");
}

static json_t *session_json(const struct session *s, const struct arb_checkpoint *c, size_t n,
			    const struct arb_diffstat *st, bool known)
{
	const struct arb_checkpoint *a = find_ckpt(c, n, s->id, "start");
	const struct arb_checkpoint *b = find_ckpt(c, n, s->id, "end");
	json_t *argv = s->argv ? cli_argv_json(s->argv) : NULL;

	return json_pack(
	    "{s:I, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o}", "session", (json_int_t)s->id, "argv",
	    argv ? argv : json_array(), "jail", util_json_bytes(s->jail), "start_ns",
	    (json_int_t)s->start_ns, "end_ns", s->ended ? json_integer(s->end_ns) : json_null(),
	    "exit", s->ended ? json_integer(s->exit) : json_null(), "start_checkpoint",
	    a ? json_integer(a->seq) : json_null(), "end_checkpoint",
	    b ? json_integer(b->seq) : json_null(), "changes",
	    known ? json_pack("{s:I, s:I, s:I}", "files", (json_int_t)st->files, "insertions",
			      (json_int_t)st->insertions, "deletions", (json_int_t)st->deletions)
		  : json_null());
}

/* git log's colour for a commit's first line. */
#define C_HEAD "\033[33m"
#define C_END  "\033[m"

static void session_print(const struct session *s, const struct arb_diffstat *st, bool known,
			  bool color)
{
	char t0[32], t1[32] = "running";

	fmt_time(s->start_ns, t0, sizeof(t0));
	if (s->ended)
		fmt_time(s->end_ns, t1, sizeof(t1));
	printf("%ssession %lld%s  %s .. %s", color ? C_HEAD : "", (long long)s->id,
	       color ? C_END : "", t0, t1);
	if (s->ended)
		printf("  exit %d", s->exit);
	if (known)
		printf("  %zu file%s changed, +%zu -%zu", st->files, st->files == 1 ? "" : "s",
		       st->insertions, st->deletions);
	printf("\n   ");
	cli_argv_print(s->argv, " ");
	printf("\n");
}

static void ckpt_print(const struct arb_checkpoint *c, bool color)
{
	char t[32];

	fmt_time(c->time_ns, t, sizeof(t));
	printf("%scheckpoint %u%s  %s  %.12s  %s", color ? C_HEAD : "", c->seq, color ? C_END : "",
	       t, c->commit, cli_q(c->kind));
	if (c->session)
		printf(" of session %lld", (long long)c->session);
	if (strcmp(c->kind, "start") && strcmp(c->kind, "end"))
		printf("  %s", cli_q(c->message));
	printf("\n");
}

int cmd_log(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'}, {"color", optional_argument, NULL, 'c'}, {0}};
	static const struct cli_cmd cmd = {"log", NULL, NULL, NULL, cmd_log_usage, NULL};
	enum cli_color when = CLI_COLOR_AUTO;
	bool color;
	arb_project *p = NULL;
	struct arb_checkpoint *c = NULL;
	struct session *s = NULL;
	size_t nc = 0, ns = 0, ic = 0, is = 0;
	json_t *js = NULL, *jc = NULL;
	const char *name;
	bool json = false;
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, &cmd, argc, argv, "", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		if (ch == 'c' && cli_color_parse("log", optarg, &when) != CLI_OK)
			return CLI_USAGE;
		json = json || ch == 'j';
	}
	if (optind != argc - 1)
		return cli_usage_error(
		    "log", optind >= argc ? "missing workspace NAME" : "unexpected argument '%s'",
		    argv[argc - 1]);
	name = argv[optind];
	if (arb_workspace_name_check(name) < 0)
		return cli_usage_error("log", "%s", arb_error_last());
	if (arb_project_open(&p, g->workdir) < 0 || arb_checkpoint_list(&c, &nc, p, name) < 0 ||
	    sessions_load(p, name, &s, &ns) < 0) {
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
		goto out;
	}
	status = CLI_OK;
	color = !json && cli_color_use(when);
	if (!json)
		cli_pager_start(g);
	js = json_array();
	jc = json_array();
	/* Oldest first: sessions and the checkpoints that are not a session's own. */
	while (status == CLI_OK && (ic < nc || is < ns)) {
		bool take_s = is < ns && (ic >= nc || s[is].start_ns <= c[ic].time_ns);
		struct arb_diffstat st = {0};
		bool known = false;

		if (!take_s) {
			if (json)
				json_array_append_new(jc, cli_ckpt_json(&c[ic]));
			else if (!c[ic].session)
				ckpt_print(&c[ic], color);
			ic++;
			continue;
		}
		if (session_stat(p, name, &s[is], c, nc, &st, &known) < 0)
			status = cli_fail(CLI_ERR, "%s", arb_error_last());
		else if (json)
			json_array_append_new(js, session_json(&s[is], c, nc, &st, known));
		else
			session_print(&s[is], &st, known, color);
		is++;
	}
	if (status == CLI_OK && json)
		status = cli_json_print(json_pack("{s:s, s:O, s:O}", "workspace", name, "sessions",
						  js, "checkpoints", jc));
out:
	json_decref(js);
	json_decref(jc);
	sessions_free(s, ns);
	arb_free(c);
	arb_project_free(p);
	return status;
}

/* diff --json: the files with their status and lines, and the totals. */
static int diff_json(arb_project *p, const char *name, const char *from, const char *to,
		     const char *const *paths, size_t n_paths)
{
	struct arb_diff_file *v = NULL;
	json_int_t add = 0, del = 0;
	json_t *files;
	size_t n = 0;
	char st[2] = "";

	if (arb_diff_files(&v, &n, p, name, from, to, paths, n_paths) < 0)
		return cli_fail(CLI_ERR, "%s", arb_error_last());
	files = json_array();
	for (size_t i = 0; files && i < n; i++) {
		st[0] = v[i].status;
		add += (json_int_t)v[i].insertions;
		del += (json_int_t)v[i].deletions;
		json_array_append_new(
		    files, json_pack("{s:s, s:o, s:o, s:I, s:I, s:b}", "status", st, "path",
				     util_json_bytes(v[i].path), "old_path",
				     v[i].old_path ? util_json_bytes(v[i].old_path) : json_null(),
				     "insertions", (json_int_t)v[i].insertions, "deletions",
				     (json_int_t)v[i].deletions, "binary", v[i].binary));
	}
	arb_diff_files_free(v, n);
	return cli_json_print(json_pack("{s:s, s:o, s:o, s:o, s:I, s:I}", "workspace", name, "from",
					util_json_bytes(from), "to", util_json_bytes(to), "files",
					files, "insertions", add, "deletions", del));
}

int cmd_diff(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"session", required_argument, NULL, 's'}, {"stat", no_argument, NULL, 'S'},
	    {"name-status", no_argument, NULL, 'N'},   {"json", no_argument, NULL, 'j'},
	    {"color", optional_argument, NULL, 'c'},   {0}};
	static const struct cli_cmd cmd = {"diff", NULL, NULL, NULL, cmd_diff_usage, NULL};
	enum arb_diff_format fmt = ARB_DIFF_PATCH;
	enum cli_color when = CLI_COLOR_AUTO;
	unsigned int flags = 0;
	bool json = false;
	const char *from = "base", *to = "view", *session = NULL, *name;
	arb_project *p = NULL;
	struct arb_checkpoint a, b;
	int dd = argc, status = CLI_USAGE, ch, nargs;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	optind = 0;
	while ((ch = cli_getopt(g, &cmd, dd, argv, "", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		if (ch == 's')
			session = optarg;
		else if (ch == 'c' && cli_color_parse("diff", optarg, &when) != CLI_OK)
			return CLI_USAGE;
		else if (ch == 'c')
			continue;
		else if (fmt != ARB_DIFF_PATCH || json)
			return cli_usage_error("diff", "--stat, --name-status and --json go alone");
		else if (ch == 'j')
			json = true;
		else
			fmt = ch == 'S' ? ARB_DIFF_STAT : ARB_DIFF_NAME_STATUS;
	}
	nargs = dd - optind;
	if (nargs < 1)
		return cli_usage_error("diff", "missing workspace NAME");
	if (nargs > 3 || (session && nargs > 1))
		return cli_usage_error("diff", "unexpected argument '%s' (paths go after --)",
				       argv[dd - 1]);
	name = argv[optind];
	if (arb_workspace_name_check(name) < 0)
		return cli_usage_error("diff", "%s", arb_error_last());
	if (nargs >= 2)
		from = argv[optind + 1];
	if (nargs == 3)
		to = argv[optind + 2];
	status = CLI_OK;
	if (arb_project_open(&p, g->workdir) < 0)
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
	if (status == CLI_OK && session) {
		char *end;
		long long n = strtoll(session, &end, 10);

		if (*end || n <= 0) {
			status = cli_usage_error("diff", "--session '%s' is not a session number",
						 session);
		} else if (arb_checkpoint_of_session(&a, p, name, n, "start") < 0) {
			status = cli_fail(CLI_ERR, "%s", arb_error_last());
		} else {
			from = a.tree;
			to =
			    arb_checkpoint_of_session(&b, p, name, n, "end") == 0 ? b.tree : "view";
		}
	}
	if (status == CLI_OK && json) {
		status = diff_json(p, name, from, to, (const char *const *)argv + dd + (dd < argc),
				   (size_t)(argc - dd - (dd < argc)));
		goto out;
	}
	/* Decided on stdout as given: the pager's pipe is a terminal's too. */
	flags = isatty(STDOUT_FILENO) ? ARB_DIFF_TERMINAL : 0;
	flags |= cli_color_use(when) ? ARB_DIFF_COLOR : 0;
	if (status == CLI_OK)
		cli_pager_start(g);
	fflush(stdout);
	if (status == CLI_OK &&
	    arb_diff_flags(p, name, from, to, (const char *const *)argv + dd + (dd < argc),
			   (size_t)(argc - dd - (dd < argc)), fmt, flags, STDOUT_FILENO) < 0)
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
out:
	arb_project_free(p);
	return status;
}
