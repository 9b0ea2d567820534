/*
 * cli/cmd_compare.c: `arborinth compare A B [C ...]`: workspaces of one origin side by side
 * against their common base (arb_compare), as text for people or its JSON for programs.
 * Everything printed came from boxes: names and paths go through cli_q (util_quote), commands
 * are the library's shell-quoted lines.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/arborinth.h"

/* A string of the library's JSON as people see it (a {"hex"} one decoded first). */
static const char *txt(json_t *v)
{
	const char *hex = json_string_value(json_object_get(v, "hex"));
	static __thread char buf[4096];
	size_t n = 0;

	if (json_is_string(v))
		return cli_q(json_string_value(v));
	if (!hex)
		return "?";
	for (; hex[0] && hex[1] && n + 1 < sizeof(buf); hex += 2) {
		unsigned x = 0;

		if (sscanf(hex, "%2x", &x) != 1)
			break;
		buf[n++] = (char)x;
	}
	buf[n] = '\0';
	return cli_q(buf);
}

static json_int_t num(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static void print_ws(json_t *w)
{
	json_t *files = json_object_get(w, "files"), *unc = json_object_get(w, "uncommitted");
	json_t *ses = json_object_get(w, "sessions"), *req = json_object_get(w, "requests"), *v;
	json_int_t add = 0, del = 0;
	size_t i;

	for (i = 0; i < json_array_size(files) && (v = json_array_get(files, i)); i++) {
		add += num(v, "added");
		del += num(v, "deleted");
	}
	printf("%s (base %.12s, head %.12s)\n", txt(json_object_get(w, "name")),
	       json_string_value(json_object_get(w, "base")),
	       json_string_value(json_object_get(w, "head")));
	printf("  changed: %zu file%s, +%lld -%lld\n", json_array_size(files),
	       json_array_size(files) == 1 ? "" : "s", (long long)add, (long long)del);
	for (i = 0; i < json_array_size(files) && (v = json_array_get(files, i)); i++)
		printf("    %s %s +%lld -%lld\n", json_string_value(json_object_get(v, "status")),
		       txt(json_object_get(v, "path")), (long long)num(v, "added"),
		       (long long)num(v, "deleted"));
	printf("  uncommitted: %zu file%s\n", json_array_size(unc),
	       json_array_size(unc) == 1 ? "" : "s");
	for (i = 0; i < json_array_size(unc) && (v = json_array_get(unc, i)); i++)
		printf("    %s %s\n", json_string_value(json_object_get(v, "status")),
		       txt(json_object_get(v, "path")));
	printf("  sessions: %zu\n", json_array_size(ses));
	for (i = 0; i < json_array_size(ses) && (v = json_array_get(ses, i)); i++) {
		json_t *ex = json_object_get(v, "exit"), *ms = json_object_get(v, "duration_ms");
		const char *t = json_string_value(json_object_get(v, "test"));
		const char *cmd = json_string_value(json_object_get(v, "command"));

		printf("    #%lld ", (long long)num(v, "id"));
		if (json_is_integer(ex))
			printf("exit %lld, %.1fs", (long long)json_integer_value(ex),
			       (double)json_integer_value(ms) / 1000.0);
		else
			printf("running");
		printf("%s%s%s: %s\n", t ? " [test: " : "", t ? t : "", t ? "]" : "",
		       cmd ? cmd : txt(json_object_get(v, "command")));
	}
	printf("  requests: %lld allowed, %lld refused\n", (long long)num(req, "allowed"),
	       (long long)num(req, "refused"));
	for (i = 0; i < json_array_size(json_object_get(req, "refusals")) &&
		    (v = json_array_get(json_object_get(req, "refusals"), i));
	     i++)
		printf("    refused %s %s: %s\n", txt(json_object_get(v, "host")),
		       txt(json_object_get(v, "path")), txt(json_object_get(v, "reason")));
}

static void print_text(json_t *root)
{
	json_t *ov = json_object_get(root, "overlaps"), *v, *n;
	size_t i, k;

	printf("common base %.12s\n", json_string_value(json_object_get(root, "base")));
	for (i = 0; i < json_array_size(json_object_get(root, "workspaces")) &&
		    (v = json_array_get(json_object_get(root, "workspaces"), i));
	     i++)
		print_ws(v);
	printf("changed by more than one: %zu\n", json_array_size(ov));
	for (i = 0; i < json_array_size(ov) && (v = json_array_get(ov, i)); i++) {
		printf("  %s %s:", json_is_true(json_object_get(v, "conflict")) ? "CONFLICT" : "ok",
		       txt(json_object_get(v, "path")));
		for (k = 0; k < json_array_size(json_object_get(v, "workspaces")) &&
			    (n = json_array_get(json_object_get(v, "workspaces"), k));
		     k++)
			printf(" %s", txt(n));
		printf("\n");
	}
}

int cmd_compare(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
	const struct cli_cmd cmd = {"compare", NULL, NULL, NULL, cmd_compare_usage, NULL};
	arb_project *p = NULL;
	bool json = false;
	char *out = NULL;
	json_t *root = NULL;
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, &cmd, argc, argv, "", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		json = true;
	}
	if (optind >= argc)
		return cli_usage_error("compare", "missing workspace names");
	for (int i = optind; i < argc; i++)
		if (arb_workspace_name_check(argv[i]) < 0)
			return cli_usage_error("compare", "%s", arb_error_last());
	status = CLI_OK;
	if (arb_project_open(&p, g->workdir) < 0 ||
	    arb_compare(&out, p, (const char *const *)argv + optind, (size_t)(argc - optind)) < 0)
		status = arb_error_is_input() ? cli_usage_error("compare", "%s", arb_error_last())
					      : cli_fail(CLI_ERR, "%s", arb_error_last());
	else if (!(root = json_loads(out, 0, NULL)))
		status = cli_fail(CLI_ERR, "compare: cannot read the library's answer");
	else if (json)
		status = cli_json_print(json_incref(root));
	else
		print_text(root);
	json_decref(root);
	arb_free(out);
	arb_project_free(p);
	return status;
}
