/*
 * cli/cmd_mcp.c: `arborinth mcp`: a Model Context Protocol server over stdio (JSON-RPC 2.0,
 * one message a line) that gives an orchestrating agent arborinth's workspaces as tools:
 * create and fork, run a command in a box (its output, bounded, and exit status), log, diff,
 * compare, the audit, checkpoint and rewind, merge and apply. Each tool calls the library
 * function the matching command calls, so the checks and refusals are the same; argv goes to
 * the box as an array, never through a shell line. Arguments are checked against the tool's
 * schema first: a bad one, or an unknown tool, is a JSON-RPC error and nothing runs. What
 * boxes wrote (output, names, paths) reaches the client as text escaped like the commands'
 * (util_quote_text per line) or as the library's JSON. stdout carries the protocol only.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "include/arborinth.h"

#define OUT_MAX	 (64 * 1024)
#define ROWS_MAX 500

enum { RPC_PARSE = -32700, RPC_INVALID = -32600, RPC_METHOD = -32601, RPC_PARAMS = -32602 };

/* ---- replies ---------------------------------------------------------------------------- */

static void send_msg(json_t *msg)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;

	if (s) {
		fputs(s, stdout);
		fputc('\n', stdout);
		fflush(stdout);
	}
	free(s);
	json_decref(msg);
}

static void send_error(json_t *id, int code, const char *msg)
{
	char *text = util_quote_text(msg);

	send_msg(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
			   id ? id : json_null(), "error", "code", code, "message",
			   text ? text : "error"));
	free(text);
}

/* Box-written text for the client: valid UTF-8, no control bytes but newlines. */
static char *clean_text(const char *s, size_t n)
{
	struct util_buf b = {0};
	int rc = 0;

	while (rc == 0 && n) {
		const char *nl = memchr(s, '\n', n);
		size_t k = nl ? (size_t)(nl - s) : n;
		char *line = util_quoten(s, k), *t = line;

		/* util_quoten quotes what needs escapes: keep the escapes, drop the quotes. */
		if (t && *t == '"' && k && (k = strlen(t)) >= 2 && t[k - 1] == '"') {
			t[k - 1] = '\0';
			t++;
		}
		rc = t ? util_buf_put(&b, t, strlen(t)) : -ENOMEM;
		if (rc == 0 && nl)
			rc = util_buf_put(&b, "\n", 1);
		free(line);
		n -= nl ? (size_t)(nl - s) + 1 : n;
		s = nl ? nl + 1 : s;
	}
	if (rc == 0 && !b.s)
		rc = util_buf_put(&b, "", 0);
	if (rc < 0) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* A tool's result: text (the JSON of obj, or text itself), isError when err. */
static void send_result(json_t *id, json_t *obj, const char *text, bool err)
{
	char *s = obj ? json_dumps(obj, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;

	send_msg(json_pack("{s:s, s:O, s:{s:[{s:s, s:s}], s:b}}", "jsonrpc", "2.0", "id", id,
			   "result", "content", "type", "text", "text",
			   s	  ? s
			   : text ? text
				  : "",
			   "isError", err));
	free(s);
	json_decref(obj);
}

static void send_lib_error(json_t *id)
{
	send_result(id, NULL, arb_error_last(), true);
}

/* ---- arguments ------------------------------------------------------------------------- */

/* args[key] as a string: required or optional; a workspace name when name is set. */
static int arg_str(json_t *args, const char *key, bool required, bool name, const char **out,
		   char *why, size_t cap)
{
	json_t *v = json_object_get(args, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			snprintf(why, cap, "missing argument '%s'", key);
		return required ? -EINVAL : 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		snprintf(why, cap, "argument '%s' must be a string", key);
		return -EINVAL;
	}
	*out = json_string_value(v);
	if (name && arb_workspace_name_check(*out) < 0) {
		snprintf(why, cap, "%s", arb_error_last());
		return -EINVAL;
	}
	return 0;
}

static int arg_bool(json_t *args, const char *key, bool *out, char *why, size_t cap)
{
	json_t *v = json_object_get(args, key);

	*out = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(why, cap, "argument '%s' must be true or false", key);
		return -EINVAL;
	}
	*out = json_is_true(v);
	return 0;
}

/* Only the keys listed (NULL-terminated) may be there. */
static int arg_keys(json_t *args, const char *const *keys, char *why, size_t cap)
{
	const char *k;
	json_t *v;
	void *it;

	for (it = json_object_iter(args); it; it = json_object_iter_next(args, it)) {
		size_t i = 0;

		k = json_object_iter_key(it);
		v = json_object_iter_value(it);
		(void)v;
		while (keys[i] && strcmp(keys[i], k))
			i++;
		if (!keys[i]) {
			char *q = util_quote_text(k);

			snprintf(why, cap, "unknown argument '%s'", q ? q : "?");
			free(q);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- capturing a box's output ----------------------------------------------------------- */

struct sink {
	int fd;
	char *buf;
	size_t n;
	size_t total;
};

static void *drain(void *arg)
{
	struct sink *s = arg;
	char tmp[8192];
	ssize_t r;

	while ((r = read(s->fd, tmp, sizeof(tmp))) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		s->total += (size_t)r;
		if (s->n < OUT_MAX) {
			size_t k = (size_t)r < OUT_MAX - s->n ? (size_t)r : OUT_MAX - s->n;

			memcpy(s->buf + s->n, tmp, k);
			s->n += k;
		}
	}
	return NULL;
}

/* ---- the tools -------------------------------------------------------------------------- */

typedef void tool_fn(arb_project *p, json_t *id, json_t *args);

static void t_create(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"name", "rev", "from", "checkpoint", NULL};
	const char *name, *rev, *from, *ckpt;
	char why[300];
	arb_workspace *ws = NULL;
	int rc;

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "name", true, true, &name, why, sizeof(why)) < 0 ||
	    arg_str(args, "rev", false, false, &rev, why, sizeof(why)) < 0 ||
	    arg_str(args, "from", false, true, &from, why, sizeof(why)) < 0 ||
	    arg_str(args, "checkpoint", false, false, &ckpt, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	if (rev && from)
		return send_error(id, RPC_PARAMS, "give 'rev' or 'from', not both");
	rc = from ? arb_workspace_fork(&ws, p, name, from, ckpt, 0)
		  : arb_workspace_create(&ws, p, name, rev, 0);
	if (rc < 0)
		return send_lib_error(id);
	send_result(id,
		    json_pack("{s:o, s:s, s:s, s:o}", "name",
			      util_json_bytes(arb_workspace_name(ws)), "base",
			      arb_workspace_base_commit(ws), "branch", arb_workspace_branch(ws),
			      "workdir", util_json_bytes(arb_workspace_workdir(ws))),
		    NULL, false);
	arb_workspace_free(ws);
}

static void t_list(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {NULL};
	arb_workspace **v = NULL;
	json_t *a = json_array();
	char why[300];
	size_t n = 0;

	if (arg_keys(args, keys, why, sizeof(why)) < 0) {
		json_decref(a);
		return send_error(id, RPC_PARAMS, why);
	}
	if (arb_workspace_list(&v, &n, p) < 0) {
		json_decref(a);
		return send_lib_error(id);
	}
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:o, s:s, s:b}", "name",
						   util_json_bytes(arb_workspace_name(v[i])),
						   "base", arb_workspace_base_commit(v[i]),
						   "mounted", arb_workspace_mounted(v[i])));
	arb_workspace_list_free(v, n);
	send_result(id, json_pack("{s:o}", "workspaces", a), NULL, false);
}

static void t_shell(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspace", "argv", "timeout", NULL};
	json_t *argv = json_object_get(args, "argv"), *v;
	struct sink out = {-1, NULL, 0, 0}, err = {-1, NULL, 0, 0};
	struct arb_run_result res = {0};
	const char *name, *timeout;
	pthread_t to, te;
	char why[300], **cmd = NULL;
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, devnull = -1, rc;
	arb_box *b = NULL;
	size_t i, n;

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0 ||
	    arg_str(args, "timeout", false, false, &timeout, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	n = json_array_size(argv);
	if (!json_is_array(argv) || n == 0 || n > 4096)
		return send_error(id, RPC_PARAMS,
				  "argument 'argv' must be a non-empty array of "
				  "strings");
	for (i = 0; i < n && (v = json_array_get(argv, i)); i++)
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return send_error(id, RPC_PARAMS,
					  "argument 'argv' must be a non-empty "
					  "array of strings (without NUL)");
	cmd = calloc(n + 1, sizeof(*cmd));
	out.buf = malloc(OUT_MAX);
	err.buf = malloc(OUT_MAX);
	if (!cmd || !out.buf || !err.buf) {
		send_error(id, -32603, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		cmd[i] = (char *)json_string_value(json_array_get(argv, i));
	if (arb_box_new(&b, p, name) < 0 ||
	    (timeout && arb_box_set_limit(b, "timeout", timeout) < 0)) {
		if (arb_error_is_input())
			send_error(id, RPC_PARAMS, arb_error_last());
		else
			send_lib_error(id);
		goto out;
	}
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		send_error(id, -32603, "cannot make pipes");
		goto out;
	}
	arb_box_set_stdio(b, devnull, po[1], pe[1]);
	out.fd = po[0];
	err.fd = pe[0];
	if (pthread_create(&to, NULL, drain, &out) != 0) {
		send_error(id, -32603, "cannot start a reader");
		goto out;
	}
	if (pthread_create(&te, NULL, drain, &err) != 0) {
		close(po[1]); /* the first reader ends at EOF */
		po[1] = -1;
		pthread_join(to, NULL);
		send_error(id, -32603, "cannot start a reader");
		goto out;
	}
	rc = arb_box_run(&res, b, cmd);
	/* The box is done: close our write ends (and the box's copies went with it). */
	arb_box_free(b);
	b = NULL;
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	pthread_join(to, NULL);
	pthread_join(te, NULL);
	if (rc < 0) {
		if (arb_error_is_input())
			send_error(id, RPC_PARAMS, arb_error_last());
		else
			send_lib_error(id);
		goto out;
	}
	{
		char *o = clean_text(out.buf, out.n), *e = clean_text(err.buf, err.n);

		send_result(id,
			    json_pack("{s:i, s:b, s:I, s:s, s:s, s:b, s:b}", "exit",
				      res.exit_status, "timed_out", res.timed_out, "session",
				      (json_int_t)res.session, "stdout", o ? o : "", "stderr",
				      e ? e : "", "stdout_truncated", out.total > out.n,
				      "stderr_truncated", err.total > err.n),
			    NULL, false);
		free(o);
		free(e);
	}
out:
	arb_box_free(b);
	for (int k = 0; k < 2; k++) {
		if (po[k] >= 0)
			close(po[k]);
		if (pe[k] >= 0)
			close(pe[k]);
	}
	if (devnull >= 0)
		close(devnull);
	free(out.buf);
	free(err.buf);
	free(cmd);
}

static void t_checkpoint(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspace", "message", NULL};
	struct arb_checkpoint c;
	const char *name, *msg;
	char why[300];

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0 ||
	    arg_str(args, "message", false, false, &msg, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	if (arb_checkpoint_create(&c, p, name, msg) < 0)
		return send_lib_error(id);
	send_result(id,
		    json_pack("{s:I, s:s, s:s}", "checkpoint", (json_int_t)c.seq, "commit",
			      c.commit, "tree", c.tree),
		    NULL, false);
}

static void t_log(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspace", NULL};
	struct arb_checkpoint *v = NULL;
	const char *name;
	char why[300];
	json_t *a = json_array();
	size_t n = 0;

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0) {
		json_decref(a);
		return send_error(id, RPC_PARAMS, why);
	}
	if (arb_checkpoint_list(&v, &n, p, name) < 0) {
		json_decref(a);
		return send_lib_error(id);
	}
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a,
				      json_pack("{s:I, s:s, s:s, s:I, s:I, s:o}", "checkpoint",
						(json_int_t)v[i].seq, "kind", v[i].kind, "commit",
						v[i].commit, "time_ns", (json_int_t)v[i].time_ns,
						"session", (json_int_t)v[i].session, "message",
						util_json_bytes(v[i].message)));
	arb_free(v);
	send_result(id, json_pack("{s:o}", "checkpoints", a), NULL, false);
}

static void t_rewind(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspace", "to", NULL};
	struct arb_checkpoint undo;
	const char *name, *to;
	char why[300];

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0 ||
	    arg_str(args, "to", true, false, &to, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	if (arb_rewind(&undo, p, name, to, 0) < 0)
		return send_lib_error(id);
	send_result(
	    id, json_pack("{s:s, s:I}", "rewound_to", to, "undo_checkpoint", (json_int_t)undo.seq),
	    NULL, false);
}

/* Reads what fd (a memfd) holds, bounded; *trunc when there was more. */
static char *read_back(int fd, bool *trunc)
{
	char *buf = malloc(OUT_MAX + 1), *t;
	ssize_t r = buf ? pread(fd, buf, OUT_MAX + 1, 0) : -1;

	*trunc = r > OUT_MAX;
	if (r < 0) {
		free(buf);
		return NULL;
	}
	t = clean_text(buf, (size_t)(r > OUT_MAX ? OUT_MAX : r));
	free(buf);
	return t;
}

static void t_diff(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspace", "from", "to", "stat", NULL};
	const char *name, *from, *to;
	char why[300], *text;
	bool stat, trunc = false;
	int fd;

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0 ||
	    arg_str(args, "from", false, false, &from, why, sizeof(why)) < 0 ||
	    arg_str(args, "to", false, false, &to, why, sizeof(why)) < 0 ||
	    arg_bool(args, "stat", &stat, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	fd = memfd_create("arborinth-diff", MFD_CLOEXEC);
	if (fd < 0)
		return send_error(id, -32603, "cannot make a buffer");
	if (arb_diff(p, name, from ? from : "base", to ? to : "view", NULL, 0,
		     stat ? ARB_DIFF_STAT : ARB_DIFF_PATCH, fd) < 0) {
		close(fd);
		return send_lib_error(id);
	}
	text = read_back(fd, &trunc);
	close(fd);
	send_result(id, json_pack("{s:s, s:b}", "diff", text ? text : "", "truncated", trunc), NULL,
		    false);
	free(text);
}

static void t_compare(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspaces", NULL};
	json_t *ws = json_object_get(args, "workspaces"), *v;
	const char *names[64];
	char why[300], *out = NULL;
	size_t n = json_array_size(ws);

	if (arg_keys(args, keys, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	if (!json_is_array(ws) || n == 0 || n > 64)
		return send_error(id, RPC_PARAMS,
				  "argument 'workspaces' must be an array of workspace names");
	for (size_t i = 0; i < n; i++) {
		v = json_array_get(ws, i);
		names[i] = json_string_value(v);
		if (!names[i] || arb_workspace_name_check(names[i]) < 0)
			return send_error(id, RPC_PARAMS,
					  names[i] ? arb_error_last()
						   : "a workspace name is not a "
						     "string");
	}
	if (arb_compare(&out, p, names, n) < 0)
		return arb_error_is_input() ? send_error(id, RPC_PARAMS, arb_error_last())
					    : send_lib_error(id);
	send_result(id, NULL, out, false);
	arb_free(out);
}

static void t_audit(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspace", "session", NULL};
	struct arb_audit_filter f = {0};
	const struct arb_audit_row *r;
	arb_audit_iter *it = NULL;
	json_t *rows = json_array(), *s = json_object_get(args, "session");
	const char *name;
	char why[300];
	size_t total = 0;
	int rc;

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0 ||
	    (s && !json_is_integer(s))) {
		json_decref(rows);
		return send_error(id, RPC_PARAMS,
				  s && !json_is_integer(s) ? "argument 'session' must be an integer"
							   : why);
	}
	f.session = s ? json_integer_value(s) : 0;
	if (arb_audit_open(&it, p, name, &f) < 0) {
		json_decref(rows);
		return send_lib_error(id);
	}
	while ((rc = arb_audit_next(it, &r)) == 1) {
		json_t *o;

		if (++total > ROWS_MAX) /* the last ROWS_MAX rows */
			json_array_remove(rows, 0);
		o = json_pack("{s:I, s:I, s:s, s:s, s:o, s:i, s:I}", "seq", (json_int_t)r->seq,
			      "time_ns", (json_int_t)r->time_ns, "kind", r->kind, "op", r->op,
			      "path", util_json_bytes(r->path), "result", r->result, "session",
			      (json_int_t)r->session);
		if (o && r->argv_json)
			json_object_set_new(o, "argv", cli_argv_json(r->argv_json));
		if (o && r->host)
			json_object_set_new(o, "host", util_json_bytes(r->host));
		if (o && r->decision)
			json_object_set_new(o, "decision", util_json_bytes(r->decision));
		json_array_append_new(rows, o);
	}
	arb_audit_free(it);
	if (rc < 0) {
		json_decref(rows);
		return send_lib_error(id);
	}
	send_result(id, json_pack("{s:o, s:I}", "rows", rows, "total", (json_int_t)total), NULL,
		    false);
}

static void t_merge(arb_project *p, json_t *id, json_t *args)
{
	static const char *const kinds[] = {"up-to-date", "fast-forward", "merge-commit"};
	static const char *const keys[] = {"workspace", "check", NULL};
	struct arb_merge m;
	const char *name;
	char why[300];
	bool check;

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0 ||
	    arg_bool(args, "check", &check, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	if (arb_merge_ext(&m, p, name, check ? ARB_HOME_CHECK : 0) < 0)
		return send_lib_error(id);
	send_result(id,
		    json_pack("{s:s, s:s, s:s, s:b}", "result", kinds[m.kind], "branch", m.branch,
			      "commit", m.commit, "check", check),
		    NULL, false);
}

static void t_apply(arb_project *p, json_t *id, json_t *args)
{
	static const char *const keys[] = {"workspace", "check", NULL};
	const char *name;
	char why[300];
	size_t files = 0;
	bool check;

	if (arg_keys(args, keys, why, sizeof(why)) < 0 ||
	    arg_str(args, "workspace", true, true, &name, why, sizeof(why)) < 0 ||
	    arg_bool(args, "check", &check, why, sizeof(why)) < 0)
		return send_error(id, RPC_PARAMS, why);
	if (arb_apply_ext(&files, p, name, check ? ARB_HOME_CHECK : 0) < 0)
		return send_lib_error(id);
	send_result(id, json_pack("{s:I, s:b}", "files", (json_int_t)files, "check", check), NULL,
		    false);
}

#define WS "{\"type\":\"string\",\"description\":\"a workspace's name\"}"
static const struct tool {
	const char *name, *description, *schema;
	tool_fn *fn;
} tools[] = {
    {"workspace_create",
     "Create a workspace (a copy-on-write view of a commit of the project), or with 'from' a "
     "fork of another workspace at its checkpoint 'checkpoint' (default: its view now).",
     "{\"type\":\"object\",\"properties\":{\"name\":" WS ",\"rev\":{\"type\":\"string\"},"
     "\"from\":" WS ",\"checkpoint\":{\"type\":\"string\"}},\"required\":[\"name\"]}",
     t_create},
    {"workspace_list", "List the project's workspaces.", "{\"type\":\"object\"}", t_list},
    {"shell",
     "Run a command (argv, no shell unless you name one) in the workspace's box: no network, "
     "the view read-write. Returns its exit status and output (64 KiB a stream at most).",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS ",\"argv\":{\"type\":\"array\","
     "\"items\":{\"type\":\"string\"},\"minItems\":1},\"timeout\":{\"type\":\"string\","
     "\"description\":\"30s, 10m, 2h\"}},\"required\":[\"workspace\",\"argv\"]}",
     t_shell},
    {"log", "The workspace's checkpoints (sessions start and end with one).",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS "},\"required\":[\"workspace\"]}",
     t_log},
    {"diff",
     "The workspace's diff from 'from' (default base) to 'to' (default view): base, view, a "
     "checkpoint N or a revision.",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS ",\"from\":{\"type\":\"string\"},"
     "\"to\":{\"type\":\"string\"},\"stat\":{\"type\":\"boolean\"}},\"required\":["
     "\"workspace\"]}",
     t_diff},
    {"compare",
     "Workspaces of one origin side by side against their common base: files, overlaps and "
     "conflicts, sessions, tests, requests, what is uncommitted (JSON).",
     "{\"type\":\"object\",\"properties\":{\"workspaces\":{\"type\":\"array\",\"items\":" WS
     ",\"minItems\":1}},\"required\":[\"workspaces\"]}",
     t_compare},
    {"audit", "The workspace's audit timeline (the last 500 rows), or one session's.",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS ",\"session\":{\"type\":"
     "\"integer\"}},\"required\":[\"workspace\"]}",
     t_audit},
    {"checkpoint", "Record the workspace's view as a checkpoint.",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS ",\"message\":{\"type\":"
     "\"string\"}},\"required\":[\"workspace\"]}",
     t_checkpoint},
    {"rewind", "Give the workspace's view an earlier state (a checkpoint N, base).",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS ",\"to\":{\"type\":\"string\"}},"
     "\"required\":[\"workspace\",\"to\"]}",
     t_rewind},
    {"merge",
     "Merge the workspace's branch into the origin's current branch; refused on a conflict "
     "or when stale; with check, only say what would happen.",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS ",\"check\":{\"type\":"
     "\"boolean\"}},\"required\":[\"workspace\"]}",
     t_merge},
    {"apply",
     "Apply the workspace's changes (committed and not) to the origin's working tree, "
     "unstaged; refused whole when they do not fit or it is stale; check: only check.",
     "{\"type\":\"object\",\"properties\":{\"workspace\":" WS ",\"check\":{\"type\":"
     "\"boolean\"}},\"required\":[\"workspace\"]}",
     t_apply},
};

static json_t *tool_list(void)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < sizeof(tools) / sizeof(tools[0]); i++)
		json_array_append_new(a,
				      json_pack("{s:s, s:s, s:o}", "name", tools[i].name,
						"description", tools[i].description, "inputSchema",
						json_loads(tools[i].schema, 0, NULL)));
	return a;
}

static void handle(arb_project *p, json_t *msg)
{
	json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");
	const char *method = json_string_value(json_object_get(msg, "method"));

	if (!json_is_object(msg) || !method)
		return send_error(id, RPC_INVALID, "not a JSON-RPC 2.0 request");
	if (!id) /* a notification (notifications/initialized, cancelled): no reply */
		return;
	if (!strcmp(method, "initialize")) {
		const char *v = json_string_value(json_object_get(params, "protocolVersion"));

		send_msg(json_pack("{s:s, s:O, s:{s:s, s:{s:{}}, s:{s:s, s:s}}}", "jsonrpc", "2.0",
				   "id", id, "result", "protocolVersion", v ? v : "2025-06-18",
				   "capabilities", "tools", "serverInfo", "name", "arborinth",
				   "version", "0.1.0"));
	} else if (!strcmp(method, "ping")) {
		send_msg(json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result"));
	} else if (!strcmp(method, "tools/list")) {
		send_msg(json_pack("{s:s, s:O, s:{s:o}}", "jsonrpc", "2.0", "id", id, "result",
				   "tools", tool_list()));
	} else if (!strcmp(method, "tools/call")) {
		const char *name = json_string_value(json_object_get(params, "name"));
		json_t *args = json_object_get(params, "arguments");
		size_t i = 0;

		while (name && i < sizeof(tools) / sizeof(tools[0]) && strcmp(tools[i].name, name))
			i++;
		if (!name || i == sizeof(tools) / sizeof(tools[0]))
			return send_error(id, RPC_PARAMS, "unknown tool");
		if (args && !json_is_object(args))
			return send_error(id, RPC_PARAMS, "arguments must be an object");
		args = args ? json_incref(args) : json_object();
		tools[i].fn(p, id, args);
		json_decref(args);
	} else {
		send_error(id, RPC_METHOD, "method not found");
	}
}

int cmd_mcp(struct cli_global *g, int argc, char **argv)
{
	const struct cli_cmd cmd = {"mcp", NULL, NULL, NULL, cmd_mcp_usage, NULL};
	static const struct option none[] = {{0}};
	arb_project *p = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, &cmd, argc, argv, "", none, &status)) != -1)
		if (ch == -2)
			return status;
	if (optind != argc)
		return cli_usage_error("mcp", "unexpected argument '%s'", argv[optind]);
	if (arb_project_open(&p, g->workdir) < 0)
		return cli_fail(CLI_ERR, "%s", arb_error_last());
	while ((n = getline(&line, &cap, stdin)) > 0) {
		json_error_t e;
		json_t *msg;

		if (n == 1 && line[0] == '\n')
			continue;
		msg = json_loadb(line, (size_t)n, 0, &e);
		if (!msg)
			send_error(NULL, RPC_PARSE, "parse error");
		else
			handle(p, msg);
		json_decref(msg);
	}
	free(line);
	arb_project_free(p);
	return CLI_OK;
}
