/*
 * lib/compare.c: arb_compare (arborinth.h): workspaces side by side as one JSON object, for
 * `arborinth compare`, the review page and the MCP server alike. The files and overlaps come
 * from core_compare; the sessions, tests and requests from each workspace's audit timeline.
 * Every name, path and argv came from a box: each string goes into JSON through
 * util_json_bytes (a string when it is UTF-8, {"hex": ...} when not), and jansson escapes
 * quotes, backslashes and control characters.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* Commands that run tests, by the words they hold in a row (the first that matches). */
static const char *const test_words[][3] = {
    {"make", "test", NULL},  {"make", "check", NULL}, {"ctest", NULL, NULL},
    {"pytest", NULL, NULL},  {"npm", "test", NULL},   {"npm", "run", "test"},
    {"yarn", "test", NULL},  {"pnpm", "test", NULL},  {"go", "test", NULL},
    {"cargo", "test", NULL}, {"tox", NULL, NULL},     {"meson", "test", NULL},
    {"ninja", "test", NULL}, {"mvn", "test", NULL},   {"gradle", "test", NULL},
    {"jest", NULL, NULL},    {"vitest", NULL, NULL},  {"rspec", NULL, NULL},
    {"phpunit", NULL, NULL}, {"prove", NULL, NULL},
};

/*
 * The words of argv, basenames (/usr/bin/pytest is pytest), each marked when it is where a
 * command starts: argv[0], and in a shell's -c script the first word and each after ; & | (
 * ) or a newline. Words at most 256, text at most cap bytes.
 */
struct word {
	const char *s;
	bool start;
};
static size_t words_of(char **argv, struct word *w, size_t max, char *buf, size_t cap)
{
	size_t n = 0, used = 0;

	for (size_t i = 0; argv[i] && n < max; i++) {
		bool script = i > 0 && !strcmp(argv[i - 1], "-c");
		bool start = i == 0 || script;
		const char *c = argv[i];

		if (i > 2 && !strcmp(argv[1], "-c"))
			break; /* a shell's $0 and arguments after its script */
		while (*c && n < max && used + 2 < cap) {
			const char *slash;

			if (strchr(" \t", *c)) {
				c++;
				continue;
			}
			if (strchr(";&|()\n", *c)) {
				start = true;
				c++;
				continue;
			}
			w[n] = (struct word){buf + used, start};
			while (*c && !strchr(" \t;&|()\n", *c) && used + 2 < cap)
				buf[used++] = *c++;
			buf[used++] = '\0';
			slash = strrchr(w[n].s, '/');
			if (slash && slash[1])
				w[n].s = slash + 1;
			n++;
			start = false;
			if (!script)
				break; /* one argument, one word */
		}
	}
	return n;
}

/* Whether the words from w[i] (a command's start) are pattern t; "python -m X" is X. */
static bool words_match(const struct word *w, size_t n, size_t i, const char *const t[3])
{
	size_t k = 0;

	if (!w[i].start)
		return false;
	if (i + 2 < n && !strncmp(w[i].s, "python", 6) && !strcmp(w[i + 1].s, "-m"))
		i += 2;
	while (k < 3 && t[k] && i < n && !strcmp(w[i].s, t[k]))
		k++, i++;
	return k == 3 || !t[k];
}

/* The test pattern argv matches ("pytest", "make test", ...) into name, or NULL. */
static const char *test_kind(char **argv, char *name, size_t cap)
{
	char buf[4096];
	struct word w[256];
	size_t n = words_of(argv, w, 256, buf, sizeof(buf));

	for (size_t t = 0; t < sizeof(test_words) / sizeof(test_words[0]); t++)
		for (size_t i = 0; i < n; i++)
			if (words_match(w, n, i, test_words[t])) {
				const char *const *x = test_words[t];

				snprintf(name, cap, "%s%s%s%s%s", x[0], x[1] ? " " : "",
					 x[1] ? x[1] : "", x[2] ? " " : "", x[2] ? x[2] : "");
				return name;
			}
	return NULL;
}

/* argv as one line for people: each word shell-quoted (escapes for what is not text). */
static json_t *command_line(char **argv)
{
	struct util_buf b = {0};
	json_t *out = NULL;
	int rc = 0;

	for (size_t i = 0; rc == 0 && argv[i]; i++) {
		char *q = util_quote_shell(argv[i]);

		rc = q ? 0 : -ENOMEM;
		rc = rc ?: i ? util_buf_put(&b, " ", 1) : 0;
		rc = rc ?: util_buf_put(&b, q, strlen(q));
		free(q);
	}
	rc = rc ?: b.s ? 0 : util_buf_put(&b, "", 0);
	if (rc == 0)
		out = util_json_bytes(b.s);
	free(b.s);
	return out;
}

static json_t *argv_json(char **argv)
{
	json_t *a = json_array();

	for (size_t i = 0; a && argv[i]; i++)
		if (json_array_append_new(a, util_json_bytes(argv[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static int put(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0 ? 0 : util_err(-ENOMEM, "out of memory");
}

static int push(json_t *a, json_t *v)
{
	return v && json_array_append_new(a, v) == 0 ? 0 : util_err(-ENOMEM, "out of memory");
}

/* The sessions, tests and requests of ws_name's timeline into w. */
static int audit_part(arb_project *p, const char *ws_name, json_t *w)
{
	struct arb_audit_filter f = {.kinds = ARB_AUDIT_EXEC | ARB_AUDIT_NET, .by_seq = 1};
	json_t *sessions = json_array(), *tests = json_array(), *refusals = json_array();
	json_t *req = json_object();
	const struct arb_audit_row *r;
	arb_audit_iter *it = NULL;
	int64_t allowed = 0, refused = 0;
	int rc = sessions && tests && refusals && req ? 0 : util_err(-ENOMEM, "out of memory");

	rc = rc ?: arb_audit_open(&it, p, ws_name, &f);
	while (rc == 0 && (rc = arb_audit_next(it, &r)) == 1) {
		rc = 0;
		if (!strcmp(r->kind, "net")) {
			bool ok = r->decision && !strcmp(r->decision, "allowed");
			json_t *o;

			allowed += ok;
			refused += !ok;
			if (ok)
				continue;
			o = json_object();
			rc = o ? 0 : util_err(-ENOMEM, "out of memory");
			rc = rc ?: put(o, "host", util_json_bytes(r->host));
			rc = rc ?: put(o, "path", util_json_bytes(r->path));
			rc = rc ?: put(o, "reason", util_json_bytes(r->reason));
			rc = rc ?: push(refusals, o);
		} else if (!strcmp(r->op, "exec") && r->session) {
			char **argv = util_argv_words(r->argv_json);
			json_t *s = json_object();
			char kind[64];
			const char *tk = argv ? test_kind(argv, kind, sizeof(kind)) : NULL;

			rc = s ? 0 : util_err(-ENOMEM, "out of memory");
			rc = rc ?: put(s, "id", json_integer(r->session));
			rc = rc ?: put(s, "command", argv ? command_line(argv) : json_null());
			rc = rc ?: put(s, "argv", argv ? argv_json(argv) : json_array());
			rc = rc ?: put(s, "exit", json_null());
			rc = rc ?: put(s, "started_ns", json_integer(r->time_ns));
			rc = rc ?: put(s, "duration_ms", json_null());
			rc = rc ?: put(s, "tests", json_boolean(tk));
			rc = rc ?: put(s, "test", tk ? json_string(tk) : json_null());
			rc = rc ?: push(sessions, s);
			util_words_free(argv);
		} else if (!strcmp(r->op, "exit") && r->session) {
			size_t i;
			json_t *s;

			for (i = 0;
			     i < json_array_size(sessions) && (s = json_array_get(sessions, i));
			     i++) {
				json_int_t start;

				if (json_integer_value(json_object_get(s, "id")) != r->session)
					continue;
				start = json_integer_value(json_object_get(s, "started_ns"));
				rc = put(s, "exit", json_integer(r->result));
				rc = rc
					 ?: put(s, "duration_ms",
						json_integer((r->time_ns - start) / 1000000));
			}
		}
	}
	for (size_t i = 0; rc == 0 && i < json_array_size(sessions); i++) {
		json_t *s = json_array_get(sessions, i), *t;

		if (!json_is_true(json_object_get(s, "tests")))
			continue;
		t = json_pack("{s:O, s:O, s:O, s:O}", "command", json_object_get(s, "command"),
			      "test", json_object_get(s, "test"), "exit",
			      json_object_get(s, "exit"), "session", json_object_get(s, "id"));
		rc = push(tests, t);
	}
	rc = rc ?: put(req, "allowed", json_integer(allowed));
	rc = rc ?: put(req, "refused", json_integer(refused));
	rc = rc ?: put(req, "refusals", json_incref(refusals));
	rc = rc ?: put(w, "sessions", json_incref(sessions));
	rc = rc ?: put(w, "tests", json_incref(tests));
	rc = rc ?: put(w, "requests", json_incref(req));
	arb_audit_free(it);
	json_decref(sessions);
	json_decref(tests);
	json_decref(refusals);
	json_decref(req);
	return rc;
}

static json_t *files_json(const struct core_cmp_file *v, size_t n, bool lines)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		char st[2] = {v[i].status, 0};
		json_t *o = json_object();

		if (!o || put(o, "path", util_json_bytes(v[i].path)) < 0 ||
		    put(o, "status", json_string(st)) < 0 ||
		    (v[i].old_path && put(o, "old_path", util_json_bytes(v[i].old_path)) < 0) ||
		    (lines && (put(o, "added", json_integer((json_int_t)v[i].added)) < 0 ||
			       put(o, "deleted", json_integer((json_int_t)v[i].deleted)) < 0)) ||
		    push(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static int build(arb_project *p, const struct core_cmp *c, json_t *root)
{
	json_t *wss = json_array(), *ovs = json_array();
	char hex[GIT_OID_HEXSZ + 1];
	int rc = wss && ovs ? 0 : util_err(-ENOMEM, "out of memory");

	git_oid_tostr(hex, sizeof(hex), &c->base);
	rc = rc ?: put(root, "base", json_string(hex));
	for (size_t i = 0; rc == 0 && i < c->n; i++) {
		const struct core_cmp_ws *w = &c->w[i];
		json_t *o = json_object();

		git_oid_tostr(hex, sizeof(hex), &w->head);
		rc = o ? 0 : util_err(-ENOMEM, "out of memory");
		rc = rc ?: put(o, "name", util_json_bytes(w->ws->name));
		rc = rc ?: put(o, "base", json_string(w->ws->base_commit));
		rc = rc ?: put(o, "head", json_string(hex));
		rc = rc ?: put(o, "files", files_json(w->files, w->n_files, true));
		rc = rc ?: put(o, "uncommitted", files_json(w->unc, w->n_unc, false));
		rc = rc ?: audit_part(p, w->ws->name, o);
		if (rc == 0)
			rc = push(wss, o);
		else
			json_decref(o);
	}
	for (size_t i = 0; rc == 0 && i < c->n_ov; i++) {
		json_t *o = json_object(), *names = json_array();

		for (size_t k = 0; names && k < c->n; k++)
			if (c->ov[i].in[k] && push(names, util_json_bytes(c->w[k].ws->name)) < 0)
				rc = -ENOMEM;
		rc = o ? rc : util_err(-ENOMEM, "out of memory");
		rc = rc ?: put(o, "path", util_json_bytes(c->ov[i].path));
		rc = rc ?: put(o, "workspaces", json_incref(names));
		rc = rc ?: put(o, "conflict", json_boolean(c->ov[i].conflict));
		json_decref(names);
		if (rc == 0)
			rc = push(ovs, o);
		else
			json_decref(o);
	}
	rc = rc ?: put(root, "workspaces", json_incref(wss));
	rc = rc ?: put(root, "overlaps", json_incref(ovs));
	json_decref(wss);
	json_decref(ovs);
	return rc;
}

int arb_compare(char **json, arb_project *p, const char *const *names, size_t n)
{
	struct core_ws **ws = NULL;
	struct core_cmp c = {0};
	json_t *root = NULL;
	int rc = 0;

	lib_err_reset();
	*json = NULL;
	if (n < 1 || n > CORE_CMP_MAX)
		return lib_input_err(
		    util_err(-EINVAL, "compare: give 1 to %d workspaces", CORE_CMP_MAX));
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (!strcmp(names[i], names[j]))
				return lib_input_err(util_err(
				    -EINVAL, "compare: workspace %s given twice", names[i]));
	if (!(ws = calloc(n, sizeof(*ws))))
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = core_ws_get(p->core, names[i], &ws[i]);
		if (rc == -ENOENT || rc == -EINVAL)
			rc = lib_input_err(rc);
	}
	if (rc == 0 && (rc = core_compare(p->core, ws, n, &c)) == -EINVAL)
		rc = lib_input_err(rc);
	if (rc == 0 && !(root = json_object()))
		rc = util_err(-ENOMEM, "out of memory");
	rc = rc ?: build(p, &c, root);
	if (rc == 0 && !(*json = json_dumps(root, JSON_COMPACT)))
		rc = util_err(-ENOMEM, "out of memory");
	json_decref(root);
	core_cmp_free(&c);
	for (size_t i = 0; i < n; i++)
		core_ws_free(ws[i]);
	free(ws);
	return rc;
}
