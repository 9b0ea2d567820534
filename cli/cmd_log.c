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

#include "audit/audit.h"
#include "core/core.h"

const char cmd_log_usage[] =
    "usage: arborinth log NAME [--json]\n"
    "\n"
    "Lists workspace NAME's sessions (shell and launcher runs) with their command, start, end,\n"
    "exit status and what they changed (files, lines added and removed, between the session's\n"
    "start and end checkpoints), and the checkpoints, oldest first.\n";

const char cmd_diff_usage[] =
    "usage: arborinth diff NAME [FROM [TO] | --session N] [--stat | --name-status]\n"
    "                           [-- PATH...]\n"
    "\n"
    "Shows in git's diff format what changed in workspace NAME between FROM (default: 'base',\n"
    "the commit it was made from) and TO (default: 'view', the view now, uncommitted and\n"
    "untracked files included), or what session N changed. FROM and TO are checkpoint numbers,\n"
    "'base', 'view', or revisions of the workspace's repository (its branch, commit ids).\n";

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
static int sessions_load(struct core_project *p, const char *name, struct session **out, size_t *n)
{
	static const char *const ops[] = {"exec", "exit", NULL};
	struct audit_filter f = {.kinds = AUDIT_KIND_EXEC, .ops = ops};
	struct audit_query *q = NULL;
	struct audit_row row;
	struct session *v = NULL;
	size_t cap = 0;
	sqlite3 *db = NULL;
	int64_t deleted;
	int rc = core_project_db(p, false, &db);

	*out = NULL;
	*n = 0;
	if (rc == -ENOENT)
		return 0;
	rc = rc ?: audit_ws_resolve(db, name, &f.ws_key, &deleted);
	if (rc == -ENOENT)
		return 0;
	rc = rc ?: audit_query_new(&q, db, &f, true);
	while (rc == 0 && (rc = audit_query_next(q, &row)) == 1) {
		rc = 0;
		if (!strcmp(row.op, "exec")) {
			if (*n == cap) {
				struct session *nv =
				    realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

				if (!nv) {
					rc = util_err(-ENOMEM, "out of memory");
					break;
				}
				v = nv;
			}
			v[*n] =
			    (struct session){.id = row.session,
					     .start_ns = row.time_ns,
					     .exit = -1,
					     .argv = row.argv_json ? strdup(row.argv_json) : NULL,
					     .jail = row.jail ? strdup(row.jail) : NULL};
			(*n)++;
		} else {
			for (size_t i = *n; i-- > 0;)
				if (v[i].id == row.session) {
					v[i].end_ns = row.time_ns;
					v[i].exit = row.result;
					v[i].ended = true;
					break;
				}
		}
	}
	audit_query_free(q);
	if (rc < 0) {
		sessions_free(v, *n);
		*n = 0;
		return rc;
	}
	*out = v;
	return 0;
}

static const struct core_ckpt *find_ckpt(const struct core_ckpt *c, size_t n, int64_t session,
					 const char *kind)
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
static int session_stat(struct core_project *p, const struct core_ws *ws, const struct session *s,
			const struct core_ckpt *c, size_t n, struct core_diffstat *st, bool *known)
{
	const struct core_ckpt *a = find_ckpt(c, n, s->id, "start");
	const struct core_ckpt *b = find_ckpt(c, n, s->id, "end");
	git_oid from, to;

	*known = false;
	if (!a || (!b && s->ended))
		return 0;
	if (git_oid_fromstr(&from, a->tree) < 0 ||
	    (b ? git_oid_fromstr(&to, b->tree) : core_ws_tree(p, ws, "view", &to)) < 0)
		return util_err(-EIO, "log: bad checkpoint of session %lld", (long long)s->id);
	*known = true;
	return core_ws_diffstat(p, ws, &from, &to, st);
}

static json_t *session_json(const struct session *s, const struct core_ckpt *c, size_t n,
			    const struct core_diffstat *st, bool known)
{
	const struct core_ckpt *a = find_ckpt(c, n, s->id, "start");
	const struct core_ckpt *b = find_ckpt(c, n, s->id, "end");
	json_t *argv = s->argv ? json_loads(s->argv, 0, NULL) : NULL;

	return json_pack(
	    "{s:I, s:o, s:s?, s:I, s:o, s:o, s:o, s:o, s:o}", "session", (json_int_t)s->id, "argv",
	    argv ? argv : json_array(), "jail", s->jail, "start_ns", (json_int_t)s->start_ns,
	    "end_ns", s->ended ? json_integer(s->end_ns) : json_null(), "exit",
	    s->ended ? json_integer(s->exit) : json_null(), "start_checkpoint",
	    a ? json_integer(a->seq) : json_null(), "end_checkpoint",
	    b ? json_integer(b->seq) : json_null(), "changes",
	    known ? json_pack("{s:I, s:I, s:I}", "files", (json_int_t)st->files, "insertions",
			      (json_int_t)st->insertions, "deletions", (json_int_t)st->deletions)
		  : json_null());
}

static void session_print(const struct session *s, const struct core_diffstat *st, bool known)
{
	json_t *argv = s->argv ? json_loads(s->argv, 0, NULL) : NULL;
	char t0[32], t1[32] = "running";
	size_t i;
	json_t *a;

	fmt_time(s->start_ns, t0, sizeof(t0));
	if (s->ended)
		fmt_time(s->end_ns, t1, sizeof(t1));
	printf("session %lld  %s .. %s", (long long)s->id, t0, t1);
	if (s->ended)
		printf("  exit %d", s->exit);
	if (known)
		printf("  %zu file%s changed, +%zu -%zu", st->files, st->files == 1 ? "" : "s",
		       st->insertions, st->deletions);
	printf("\n   ");
	json_array_foreach(argv, i, a)
	{
		char *q = json_string_value(a) ? util_shell_quote(json_string_value(a)) : NULL;

		printf(" %s", q ? q : "?");
		free(q);
	}
	printf("\n");
	json_decref(argv);
}

static void ckpt_print(const struct core_ckpt *c)
{
	char t[32];

	fmt_time(c->time_ns, t, sizeof(t));
	printf("checkpoint %u  %s  %.12s  %s", c->seq, t, c->commit, c->kind);
	if (c->session)
		printf(" of session %lld", (long long)c->session);
	if (strcmp(c->kind, "start") && strcmp(c->kind, "end"))
		printf("  %s", c->message);
	printf("\n");
}

int cmd_log(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
	static const struct cli_cmd cmd = {"log", NULL, NULL, NULL, cmd_log_usage, NULL};
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	struct core_ckpt *c = NULL;
	struct session *s = NULL;
	size_t nc = 0, ns = 0, ic = 0, is = 0;
	json_t *js = NULL, *jc = NULL;
	bool json = false;
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, &cmd, argc, argv, "", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		json = true;
	}
	if (optind != argc - 1)
		return cli_usage_error(
		    "log", optind >= argc ? "missing workspace NAME" : "unexpected argument '%s'",
		    argv[argc - 1]);
	if (core_ws_name_check(argv[optind]) < 0)
		return cli_usage_error("log", "%s", util_err_msg());
	if (core_project_open(&p, g->workdir) < 0 || core_ws_get(p, argv[optind], &ws) < 0 ||
	    core_ws_checkpoints(p, ws, &c, &nc) < 0 || sessions_load(p, ws->name, &s, &ns) < 0) {
		status = cli_fail_lib();
		goto out;
	}
	status = CLI_OK;
	js = json_array();
	jc = json_array();
	/* Oldest first: sessions and the checkpoints that are not a session's own. */
	while (status == CLI_OK && (ic < nc || is < ns)) {
		bool take_s = is < ns && (ic >= nc || s[is].start_ns <= c[ic].time_ns);
		struct core_diffstat st = {0};
		bool known = false;

		if (!take_s) {
			if (json)
				json_array_append_new(jc, cli_ckpt_json(&c[ic]));
			else if (!c[ic].session)
				ckpt_print(&c[ic]);
			ic++;
			continue;
		}
		if (session_stat(p, ws, &s[is], c, nc, &st, &known) < 0)
			status = cli_fail_lib();
		else if (json)
			json_array_append_new(js, session_json(&s[is], c, nc, &st, known));
		else
			session_print(&s[is], &st, known);
		is++;
	}
	if (status == CLI_OK && json)
		status = cli_json_print(json_pack("{s:s, s:O, s:O}", "workspace", ws->name,
						  "sessions", js, "checkpoints", jc));
out:
	json_decref(js);
	json_decref(jc);
	sessions_free(s, ns);
	core_ckpts_free(c, nc);
	core_ws_free(ws);
	core_project_free(p);
	return status;
}

int cmd_diff(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"session", required_argument, NULL, 's'},
					     {"stat", no_argument, NULL, 'S'},
					     {"name-status", no_argument, NULL, 'N'},
					     {0}};
	static const struct cli_cmd cmd = {"diff", NULL, NULL, NULL, cmd_diff_usage, NULL};
	enum core_diff_format fmt = CORE_DIFF_PATCH;
	const char *from = "base", *to = "view", *session = NULL;
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	struct core_ckpt a = {0}, b = {0};
	int dd = argc, status = CLI_USAGE, ch, nargs;
	git_oid ta, tb;

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
		else if (fmt != CORE_DIFF_PATCH)
			return cli_usage_error("diff", "--stat and --name-status go alone");
		else
			fmt = ch == 'S' ? CORE_DIFF_STAT : CORE_DIFF_NAME_STATUS;
	}
	nargs = dd - optind;
	if (nargs < 1)
		return cli_usage_error("diff", "missing workspace NAME");
	if (nargs > 3 || (session && nargs > 1))
		return cli_usage_error("diff", "unexpected argument '%s' (paths go after --)",
				       argv[dd - 1]);
	if (core_ws_name_check(argv[optind]) < 0)
		return cli_usage_error("diff", "%s", util_err_msg());
	if (nargs >= 2)
		from = argv[optind + 1];
	if (nargs == 3)
		to = argv[optind + 2];
	status = CLI_OK;
	if (core_project_open(&p, g->workdir) < 0 || core_ws_get(p, argv[optind], &ws) < 0)
		status = cli_fail_lib();
	if (status == CLI_OK && session) {
		char *end;
		long long n = strtoll(session, &end, 10);

		if (*end || n <= 0) {
			status = cli_usage_error("diff", "--session '%s' is not a session number",
						 session);
		} else if (core_ws_session_ckpt(p, ws, n, "start", &a) < 0) {
			status = cli_fail_lib();
		} else {
			from = a.tree;
			to = core_ws_session_ckpt(p, ws, n, "end", &b) == 0 ? b.tree : "view";
		}
	}
	if (status == CLI_OK &&
	    (core_ws_tree(p, ws, from, &ta) < 0 || core_ws_tree(p, ws, to, &tb) < 0 ||
	     core_ws_diff(p, ws, &ta, &tb, (const char *const *)argv + dd + (dd < argc),
			  (size_t)(argc - dd - (dd < argc)), fmt, stdout) < 0))
		status = cli_fail_lib();
	core_ckpt_clear(&a);
	core_ckpt_clear(&b);
	core_ws_free(ws);
	core_project_free(p);
	return status;
}
