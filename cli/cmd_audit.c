/* cli/cmd_audit.c: `arborinth audit NAME`: a workspace's change history. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "include/arborinth.h"

static const struct cli_cmd audit_cmd = {"audit", NULL, cmd_audit, NULL, cmd_audit_usage};

#define MAX_OPS 32

struct audit_opts {
	struct arb_audit_filter f;
	const char *ops[MAX_OPS + 1];
	size_t nops;
	const char *name;
	bool summary, json, follow, color, filtered, verify;
	const char *verify_file, *export_file;
};

/* --- output --- */

#define C_RESET	  "\033[0m"
#define C_DIM	  "\033[2m"
#define C_RED	  "\033[31m"
#define C_GREEN	  "\033[32m"
#define C_YELLOW  "\033[33m"
#define C_BLUE	  "\033[34m"
#define C_MAGENTA "\033[35m"
#define C_CYAN	  "\033[36m"
#define C_BOLD	  "\033[1m"

static const char *op_color(const char *op)
{
	static const struct {
		const char *op, *color;
	} map[] = {
	    {"create", C_GREEN},   {"mkdir", C_GREEN},	    {"symlink", C_GREEN},
	    {"link", C_GREEN},	   {"mknod", C_GREEN},	    {"unlink", C_RED},
	    {"rmdir", C_RED},	   {"write", C_YELLOW},	    {"truncate", C_YELLOW},
	    {"rename", C_MAGENTA}, {"exec", C_BLUE C_BOLD}, {"exit", C_BLUE},
	    {"gap", C_RED C_BOLD}, {"request", C_CYAN},	    {"tunnel", C_CYAN},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(map); i++)
		if (!strcmp(map[i].op, op))
			return map[i].color;
	return "";
}

static const char *errno_name(int e)
{
	const char *n = e > 0 ? strerrorname_np(e) : NULL;

	return n ? n : "error";
}

static void format_time(char *buf, size_t size, int64_t ns, bool iso)
{
	char base[32];

	util_time_format(base, sizeof(base), ns, iso);
	if (iso) {
		/* "YYYY-MM-DDTHH:MM:SSZ" -> with nanoseconds before the Z */
		base[strlen(base) - 1] = '\0';
		snprintf(buf, size, "%s.%09lldZ", base, (long long)(ns % 1000000000LL));
	} else {
		snprintf(buf, size, "%s.%03lld", base, (long long)(ns % 1000000000LL / 1000000));
	}
}

static void format_size(char *buf, size_t size, int64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024 && u + 1 < ARB_ARRAY_LEN(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%lld B", (long long)bytes);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* An "unattributed" row (crash reconciliation): what the upper layer showed. */
static void print_unattributed(const struct arb_audit_row *r)
{
	mode_t m = r->mode >= 0 ? (mode_t)r->mode : 0;
	char sz[32], when[48];

	fputs(S_ISDIR(m)   ? "  directory"
	      : S_ISLNK(m) ? "  symlink"
	      : S_ISREG(m) ? "  file"
			   : "  special file",
	      stdout);
	if (r->size >= 0) {
		format_size(sz, sizeof(sz), r->size);
		printf(" %s", sz);
	}
	printf(" mode %04llo", (long long)(m & 07777));
	if (r->mtime_ns >= 0) {
		format_time(when, sizeof(when), r->mtime_ns, false);
		printf(" mtime %s", when);
	}
}

/* A "fallocate" row: its FALLOC_FL_* mode by name, and the range. */
static void print_falloc(const struct arb_audit_row *r)
{
	static const char *const names[] = {"keep-size",      "punch-hole", "no-hide-stale",
					    "collapse-range", "zero-range", "insert-range",
					    "unshare-range"};
	const char *sep = "  ";
	char sz[32];

	for (size_t i = 0; i < ARB_ARRAY_LEN(names); i++)
		if (r->mode >= 0 && (r->mode & (1 << i))) {
			printf("%s%s", sep, names[i]);
			sep = "+";
		}
	format_size(sz, sizeof(sz), r->size > 0 ? r->size : 0);
	printf("%s%s at %lld", !strcmp(sep, "  ") ? "  allocate " : " ", sz, (long long)r->off_lo);
}

static void print_detail(const struct arb_audit_row *r)
{
	char sz[32];

	if (!strcmp(r->op, "fallocate")) {
		print_falloc(r);
	} else if (!strcmp(r->op, "disk-full")) {
		format_size(sz, sizeof(sz), r->size > 0 ? r->size : 0);
		printf("  %s refused (%s), %lld refusal%s", sz,
		       r->mode == 2 ? "free space below the reserve" : "over the disk budget",
		       (long long)r->count, r->count == 1 ? "" : "s");
	} else if (!strcmp(r->op, "unattributed")) {
		print_unattributed(r);
	} else if (!strcmp(r->op, "unattributed-delete")) {
		fputs("  (deleted: a whiteout)", stdout);
	} else if (!strcmp(r->op, "write") && r->size >= 0) {
		format_size(sz, sizeof(sz), r->size);
		printf("  %s", sz);
		if (r->count > 1)
			printf(" in %lld writes", (long long)r->count);
	} else if (!strcmp(r->op, "truncate") && r->size >= 0) {
		format_size(sz, sizeof(sz), r->size);
		printf("  to %s", sz);
	} else if (r->mode >= 0) {
		printf("  mode %04llo", (long long)(r->mode & 07777));
	}
}

/* A "net" row: what was asked, what came back, how much, how long, and the decision. */
static void print_net_text(const struct audit_opts *o, const struct arb_audit_row *r)
{
	bool c = o->color, refused = r->decision && !strcmp(r->decision, "refused");
	bool failed = r->result != 0;
	char up[32], down[32];

	if (!strcmp(r->op, "tunnel")) {
		printf("%s ", cli_q(r->method ? r->method : "?"));
		if (r->host && strchr(r->host, ':'))
			printf("[%s]", cli_q(r->host));
		else
			fputs(cli_q(r->host ? r->host : "?"), stdout);
		if (r->port > 0)
			printf(":%lld", (long long)r->port);
	} else {
		printf("%s %s %s", cli_q(r->backend ? r->backend : "-"),
		       cli_q(r->method ? r->method : "?"), cli_q(r->path ? r->path : "-"));
	}
	if (r->status > 0)
		printf("  %lld", (long long)r->status);
	else
		fputs("  -", stdout);
	if (!refused) {
		format_size(up, sizeof(up), r->bytes_up > 0 ? r->bytes_up : 0);
		format_size(down, sizeof(down), r->bytes_down > 0 ? r->bytes_down : 0);
		printf("  up %s, down %s", up, down);
	}
	printf("  %.1f ms", (double)(r->duration_ns > 0 ? r->duration_ns : 0) / 1e6);
	if (refused)
		printf("  %srefused: %s%s\n", c ? C_RED : "", cli_q(r->reason ? r->reason : "?"),
		       c ? C_RESET : "");
	else if (failed)
		printf("  %sfailed: %s%s\n", c ? C_RED : "", cli_q(r->reason ? r->reason : "?"),
		       c ? C_RESET : "");
	else
		printf("  %sallowed%s\n", c ? C_GREEN : "", c ? C_RESET : "");
}

static void print_row_text(const struct audit_opts *o, const struct arb_audit_row *r)
{
	bool c = o->color;
	bool failed = r->result != 0;
	char when[48], who[128];

	format_time(when, sizeof(when), r->time_ns, false);
	if (!strcmp(r->kind, "net"))
		snprintf(who, sizeof(who), "proxy/session %lld", (long long)r->session);
	else if (r->pid)
		snprintf(who, sizeof(who), "%s[%lld]", cli_q(r->comm ? r->comm : "?"),
			 (long long)r->pid);
	else
		snprintf(who, sizeof(who), "%s", cli_q(r->comm ? r->comm : "-"));
	printf("%s%s%s  %s%-22s%s %s%-11s%s ", c ? C_DIM : "", when, c ? C_RESET : "",
	       c ? C_CYAN : "", who, c ? C_RESET : "", c ? op_color(r->op) : "", r->op,
	       c ? C_RESET : "");
	if (!strcmp(r->op, "gap")) {
		printf("%s%lld events could not be recorded%s\n", c ? C_RED : "",
		       (long long)r->count, c ? C_RESET : "");
		return;
	}
	if (!strcmp(r->kind, "exec")) {
		if (!strcmp(r->op, "exec")) {
			printf("session %lld (jail %s): ", (long long)r->session,
			       cli_q(r->jail ? r->jail : "?"));
			cli_argv_print(r->argv_json, "");
			putchar('\n');
		} else if (!strcmp(r->op, "limit")) {
			printf("session %lld  %s%s: %s%s\n", (long long)r->session, c ? C_RED : "",
			       cli_q(r->path ? r->path : "?"), cli_q(r->path2 ? r->path2 : ""),
			       c ? C_RESET : "");
		} else {
			printf("session %lld  %sstatus %d%s\n", (long long)r->session,
			       c && failed ? C_RED : "", r->result, c && failed ? C_RESET : "");
		}
		return;
	}
	if (!strcmp(r->kind, "net")) {
		print_net_text(o, r);
		return;
	}
	fputs(cli_q(r->path ? r->path : "-"), stdout);
	/* path2 is a second path (rename, link, symlink target), or an attribute's name. */
	if (r->path2 && strstr(r->op, "xattr"))
		printf(" [%s]", cli_q(r->path2));
	else if (r->path2)
		printf(" -> %s", cli_q(r->path2));
	print_detail(r);
	if (failed)
		printf("  %s%s%s\n", c ? C_RED : "", errno_name(r->result), c ? C_RESET : "");
	else
		printf("  %sok%s\n", c ? C_GREEN : "", c ? C_RESET : "");
}

static json_t *opt_int(int64_t v, bool present)
{
	return present ? json_integer(v) : json_null();
}

/* Exact: a string, {"hex": ...} when s is not UTF-8, null for NULL. */
static json_t *opt_str(const char *s)
{
	return util_json_bytes(s);
}

static void print_row_json(const struct audit_opts *o, const struct arb_audit_row *r)
{
	bool exec = !strcmp(r->kind, "exec"), exit_row = exec && !strcmp(r->op, "exit");
	bool net = !strcmp(r->kind, "net");
	bool refused = net && r->decision && !strcmp(r->decision, "refused");
	json_t *obj = json_object(), *argv = NULL;
	char when[48];
	char *line;

	format_time(when, sizeof(when), r->time_ns, true);
	if (exec && r->argv_json)
		argv = cli_argv_json(r->argv_json);
	json_object_set_new(obj, "seq", json_integer(r->seq));
	json_object_set_new(obj, "time", json_string(when));
	json_object_set_new(obj, "time_ns", json_integer(r->time_ns));
	json_object_set_new(obj, "workspace", opt_str(o->name));
	json_object_set_new(obj, "kind", json_string(r->kind));
	json_object_set_new(obj, "op", json_string(r->op));
	json_object_set_new(obj, "path", opt_str(r->path));
	json_object_set_new(obj, "path2", opt_str(r->path2));
	json_object_set_new(obj, "result",
			    json_string(r->result == 0	  ? "ok"
					: refused	  ? "refused"
					: exit_row || net ? "failed"
							  : errno_name(r->result)));
	json_object_set_new(obj, "errno", opt_int(r->result, !exec && !net));
	json_object_set_new(obj, "exit_status", opt_int(r->result, exit_row));
	json_object_set_new(obj, "pid", opt_int(r->pid, r->pid > 0));
	json_object_set_new(obj, "comm", opt_str(r->comm));
	json_object_set_new(obj, "exe", opt_str(r->exe));
	json_object_set_new(obj, "session", opt_int(r->session, r->session > 0));
	json_object_set_new(obj, "size", opt_int(r->size, r->size >= 0));
	json_object_set_new(obj, "count",
			    opt_int(r->count, !strcmp(r->op, "write") || !strcmp(r->op, "gap") ||
						  !strcmp(r->op, "limit") ||
						  !strcmp(r->op, "disk-full")));
	json_object_set_new(obj, "off_lo", opt_int(r->off_lo, r->off_lo >= 0));
	json_object_set_new(obj, "off_hi", opt_int(r->off_hi, r->off_hi >= 0));
	json_object_set_new(obj, "mode", opt_int(r->mode, r->mode >= 0));
	json_object_set_new(obj, "mtime_ns", opt_int(r->mtime_ns, r->mtime_ns >= 0));
	json_object_set_new(obj, "argv", argv ? argv : json_null());
	json_object_set_new(obj, "jail", opt_str(exec ? r->jail : NULL));
	json_object_set_new(obj, "backend", opt_str(net ? r->backend : NULL));
	json_object_set_new(obj, "method", opt_str(net ? r->method : NULL));
	json_object_set_new(obj, "host", opt_str(net ? r->host : NULL));
	json_object_set_new(obj, "port", opt_int(r->port, net && r->port > 0));
	json_object_set_new(obj, "status", opt_int(r->status, net && r->status > 0));
	json_object_set_new(obj, "bytes_up", opt_int(r->bytes_up, net && r->bytes_up >= 0));
	json_object_set_new(obj, "bytes_down", opt_int(r->bytes_down, net && r->bytes_down >= 0));
	json_object_set_new(obj, "duration_ns",
			    opt_int(r->duration_ns, net && r->duration_ns >= 0));
	json_object_set_new(obj, "decision", opt_str(net ? r->decision : NULL));
	json_object_set_new(obj, "reason", opt_str(net ? r->reason : NULL));
	line = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (line)
		puts(line);
	free(line);
	json_decref(obj);
}

static void print_summary(const struct audit_opts *o, const arb_audit_summary *s)
{
	const struct arb_audit_summary_entry *e;
	size_t n = arb_audit_summary_entries(s, &e);
	bool c = o->color;

	if (!o->json && n > 0)
		printf("%-9s %6s %10s  %-23s  %-23s  %s\n", "STATUS", "OPS", "BYTES", "FIRST",
		       "LAST", "PATH");
	for (size_t i = 0; i < n; i++) {
		char first[48], last[48], sz[32];

		format_time(first, sizeof(first), e[i].first_ns, o->json);
		format_time(last, sizeof(last), e[i].last_ns, o->json);
		if (o->json) {
			json_t *obj = json_pack(
			    "{s:o,s:s,s:o,s:I,s:I,s:s,s:s,s:I,s:I}", "path", opt_str(e[i].path),
			    "status", e[i].status, "renamed_to", opt_str(e[i].renamed_to), "ops",
			    (json_int_t)e[i].ops, "bytes", (json_int_t)e[i].bytes, "first", first,
			    "last", last, "first_ns", (json_int_t)e[i].first_ns, "last_ns",
			    (json_int_t)e[i].last_ns);
			char *line =
			    obj ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

			if (line)
				puts(line);
			free(line);
			json_decref(obj);
			continue;
		}
		format_size(sz, sizeof(sz), e[i].bytes);
		printf("%s%-9s%s %6lld %10s  %s  %s  %s", c ? op_color(e[i].status) : "",
		       e[i].status, c ? C_RESET : "", (long long)e[i].ops, sz, first, last,
		       cli_q(e[i].path));
		if (e[i].renamed_to)
			printf(" -> %s", cli_q(e[i].renamed_to));
		putchar('\n');
	}
}

/* --- running --- */

/* Prints every row of one query. */
static int run_query(arb_project *p, const struct audit_opts *o, const struct arb_audit_filter *f)
{
	const struct arb_audit_row *r;
	arb_audit_iter *it = NULL;
	int rc = arb_audit_open(&it, p, o->name, f);

	while (rc == 0 && (rc = arb_audit_next(it, &r)) == 1) {
		rc = 0;
		if (o->json)
			print_row_json(o, r);
		else
			print_row_text(o, r);
	}
	arb_audit_free(it);
	return rc < 0 ? rc : 0;
}

static int follow(arb_project *p, const struct audit_opts *o, int64_t seen)
{
	struct arb_audit_filter f = o->f;
	struct timespec pause = {0, 200 * 1000000L};

	f.by_seq = 1;
	f.no_sync = 1;
	for (;;) {
		int64_t top;
		int rc;

		if (fflush(stdout) != 0 || ferror(stdout))
			return 0; /* the reader went away; main() reports real errors */
		nanosleep(&pause, NULL);
		rc = arb_audit_seq_max(&top, p);
		if (rc < 0)
			return rc;
		if (top <= seen)
			continue;
		f.after_seq = seen;
		f.upto_seq = top;
		rc = run_query(p, o, &f);
		if (rc < 0)
			return rc;
		seen = top;
	}
}

static void note_deleted(const struct audit_opts *o, int64_t deleted_ns)
{
	char when[48];

	if (!deleted_ns || o->json)
		return;
	util_time_format(when, sizeof(when), deleted_ns, false);
	fprintf(stderr, "arborinth: workspace '%s' was deleted at %s; showing its history\n",
		cli_q(o->name), when);
}

static int audit_show(struct cli_global *g, struct audit_opts *o)
{
	arb_project *p = NULL;
	arb_audit_summary *sum = NULL;
	int64_t deleted_ns = 0, top = 0;
	int rc;

	rc = arb_project_open(&p, g->workdir);
	if (rc == 0)
		rc = arb_audit_history(&deleted_ns, p, o->name);
	if (rc == 0)
		rc = arb_audit_seq_max(&top, p);
	if (rc < 0)
		goto out;
	note_deleted(o, deleted_ns);
	/*
	 * --follow prints up to the top row now, then what comes after it. Without it, no bound:
	 * the query first makes a mounted view's audit current, and the rows that records come
	 * after `top` (they were left out before).
	 */
	o->f.upto_seq = o->follow ? top : 0;
	if (o->summary) {
		rc = arb_audit_summary_open(&sum, p, o->name, &o->f);
		if (rc == 0)
			print_summary(o, sum);
	} else {
		rc = run_query(p, o, &o->f);
	}
	if (rc == 0 && o->follow)
		rc = follow(p, o, top);
out:
	arb_audit_summary_free(sum);
	arb_project_free(p);
	return rc < 0 ? cli_fail(CLI_ERR, "%s", arb_error_last()) : CLI_OK;
}

/* --- options --- */

static int add_list(struct audit_opts *o, const char *arg, bool kinds)
{
	char *copy = strdup(arg);
	int rc = 0;

	if (!copy)
		return cli_fail(CLI_ERR, "out of memory");
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && rc == 0;
	     t = strtok_r(NULL, ",", &save)) {
		if (kinds) {
			if (!strcmp(t, "fs"))
				o->f.kinds |= ARB_AUDIT_FS;
			else if (!strcmp(t, "exec"))
				o->f.kinds |= ARB_AUDIT_EXEC;
			else if (!strcmp(t, "net"))
				o->f.kinds |= ARB_AUDIT_NET;
			else
				rc = cli_usage_error("audit", "unknown kind '%s' (fs, exec, net)",
						     t);
			continue;
		}
		if (!arb_audit_op_known(t))
			rc = cli_usage_error("audit", "unknown operation '%s'", t);
		else if (o->nops >= MAX_OPS)
			rc = cli_usage_error("audit", "too many operations");
		else if (!(o->ops[o->nops] = strdup(t)))
			rc = cli_fail(CLI_ERR, "out of memory");
		else
			o->nops++;
	}
	free(copy);
	return rc;
}

static int parse_time(const char *opt, const char *arg, int64_t *out)
{
	if (arb_time_parse(out, arg) < 0)
		return cli_usage_error("audit", "--%s: %s", opt, arb_error_last());
	return 0;
}

static int parse_session(const char *arg, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0)
		return cli_usage_error("audit", "--session: invalid session id '%s'", arg);
	*out = v;
	return 0;
}

static int parse_chain_opt(struct audit_opts *o, int c, const char *arg)
{
	if (o->verify || o->export_file)
		return cli_usage_error("audit",
				       "--verify and --export cannot be combined or repeated");
	if (c == 'e') {
		if (!*arg)
			return cli_usage_error("audit", "--export: empty file name");
		o->export_file = arg;
		return 0;
	}
	if (arg && !*arg)
		return cli_usage_error("audit", "--verify=: empty file name");
	o->verify = true;
	o->verify_file = arg;
	return 0;
}

static int parse_opt(struct audit_opts *o, int c, const char *arg)
{
	if (c == 'V' || c == 'e')
		return parse_chain_opt(o, c, arg);
	o->filtered = true;
	switch (c) {
	case 'S':
		return parse_time("since", arg, &o->f.since_ns);
	case 'U':
		return parse_time("until", arg, &o->f.until_ns);
	case 'p':
		if (!*arg)
			return cli_usage_error("audit", "--path: empty pattern");
		o->f.path_glob = arg;
		return 0;
	case 'o':
		return add_list(o, arg, false);
	case 'k':
		return add_list(o, arg, true);
	case 's':
		return parse_session(arg, &o->f.session);
	case 'F':
		o->f.failed = true;
		return 0;
	case 'a':
		o->f.all = true;
		return 0;
	case 'm':
		o->summary = true;
		return 0;
	case 'j':
		o->json = true;
		return 0;
	case 'f':
		o->follow = true;
		return 0;
	default:
		return CLI_USAGE;
	}
}

static bool want_color(void)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	return isatty(STDOUT_FILENO) && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
}

int cmd_audit(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"since", required_argument, NULL, 'S'},  {"until", required_argument, NULL, 'U'},
	    {"path", required_argument, NULL, 'p'},   {"op", required_argument, NULL, 'o'},
	    {"kind", required_argument, NULL, 'k'},   {"session", required_argument, NULL, 's'},
	    {"failed", no_argument, NULL, 'F'},	      {"all", no_argument, NULL, 'a'},
	    {"summary", no_argument, NULL, 'm'},      {"json", no_argument, NULL, 'j'},
	    {"follow", no_argument, NULL, 'f'},	      {"verify", optional_argument, NULL, 'V'},
	    {"export", required_argument, NULL, 'e'}, {0},
	};
	struct audit_opts o = {0};
	int status = CLI_OK, c;

	optind = 0;
	while ((c = cli_getopt(g, &audit_cmd, argc, argv, "", opts, &status)) != -1) {
		if (c == -2)
			goto out;
		status = parse_opt(&o, c, optarg);
		if (status != 0)
			goto out;
	}
	if (o.verify || o.export_file) {
		status = cli_audit_chain(g, o.filtered, o.verify_file, o.export_file, argc - optind,
					 argv + optind);
		goto out;
	}
	if (optind >= argc) {
		status = cli_usage_error("audit", "missing workspace NAME");
		goto out;
	}
	if (argc - optind > 1) {
		status = cli_usage_error("audit", "unexpected argument '%s'", argv[optind + 1]);
		goto out;
	}
	if (o.summary && o.follow) {
		status = cli_usage_error("audit", "--summary and --follow cannot be combined");
		goto out;
	}
	if (o.f.since_ns && o.f.until_ns && o.f.since_ns > o.f.until_ns) {
		status = cli_usage_error("audit", "--since is later than --until");
		goto out;
	}
	o.name = argv[optind];
	if (o.nops)
		o.f.ops = o.ops;
	o.color = !o.json && want_color();
	/* --follow ends when the reader goes away, not with a signal. */
	if (o.follow)
		signal(SIGPIPE, SIG_IGN);
	status = audit_show(g, &o);
out:
	for (size_t i = 0; i < o.nops; i++)
		free((char *)o.ops[i]);
	return status;
}
