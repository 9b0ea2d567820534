/*
 * cli/cmd_home.c: `arborinth merge`, `apply` and `export`: a workspace's work brought home.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "include/arborinth.h"

static int one_name(struct cli_global *g, const char *name, int argc, char **argv, bool *json,
		    const char *usage, bool *check)
{
	static const struct option both[] = {
	    {"json", no_argument, NULL, 'j'}, {"check", no_argument, NULL, 'c'}, {0}};
	static const struct option json_only[] = {{"json", no_argument, NULL, 'j'}, {0}};
	static const struct option check_only[] = {{"check", no_argument, NULL, 'c'}, {0}};
	const struct cli_cmd cmd = {name, NULL, NULL, NULL, usage, NULL};
	const struct option *o = json ? (check ? both : json_only) : check_only;
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, &cmd, argc, argv, "", o, &status)) != -1) {
		if (ch == -2)
			return status;
		if (ch == 'j' && json)
			*json = true;
		if (ch == 'c' && check)
			*check = true;
	}
	if (optind != argc - 1)
		return cli_usage_error(
		    name, optind >= argc ? "missing workspace NAME" : "unexpected argument '%s'",
		    argv[argc - 1]);
	if (arb_workspace_name_check(argv[optind]) < 0)
		return cli_usage_error(name, "%s", arb_error_last());
	return -1;
}

int cmd_merge(struct cli_global *g, int argc, char **argv)
{
	static const char *const kinds[] = {"up-to-date", "fast-forward", "merge-commit"};
	arb_project *p = NULL;
	struct arb_merge m;
	bool json = false, check = false;
	int status = one_name(g, "merge", argc, argv, &json, cmd_merge_usage, &check);
	const char *name = argv[optind];

	if (status != -1)
		return status;
	status = CLI_OK;
	if (arb_project_open(&p, g->workdir) < 0 ||
	    arb_merge_ext(&m, p, name, check ? ARB_HOME_CHECK : 0) < 0)
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
	else if (json)
		status = cli_json_print(json_pack("{s:s, s:s, s:s?, s:b}", "result", kinds[m.kind],
						  "branch", m.branch, "commit",
						  *m.commit ? m.commit : NULL, "check", check));
	else if (check)
		printf("merge would be: %s into %s; nothing was changed\n", kinds[m.kind],
		       cli_q(m.branch));
	else if (m.kind == ARB_MERGE_UP_TO_DATE)
		printf("%s already has everything of arborinth/%s\n", cli_q(m.branch), name);
	else
		printf("%s: %s of arborinth/%s, now at %.12s\n", cli_q(m.branch), kinds[m.kind],
		       name, m.commit);
	arb_project_free(p);
	return status;
}

int cmd_export(struct cli_global *g, int argc, char **argv)
{
	arb_project *p = NULL;
	char commit[41];
	size_t n = 0;
	bool json = false;
	int status = one_name(g, "export", argc, argv, &json, cmd_export_usage, NULL);
	const char *name = argv[optind];

	if (status != -1)
		return status;
	status = CLI_OK;
	if (arb_project_open(&p, g->workdir) < 0 || arb_export(commit, &n, p, name) < 0)
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
	else if (json)
		status = cli_json_print(
		    json_pack("{s:s, s:I}", "commit", commit, "objects", (json_int_t)n));
	else
		printf("arborinth/%s exported at %.12s (%zu new object%s)\n", name, commit, n,
		       n == 1 ? "" : "s");
	arb_project_free(p);
	return status;
}

int cmd_apply(struct cli_global *g, int argc, char **argv)
{
	arb_project *p = NULL;
	size_t files = 0;
	bool json = false, check = false;
	int status = one_name(g, "apply", argc, argv, &json, cmd_apply_usage, &check);
	const char *name = argv[optind];

	if (status != -1)
		return status;
	status = CLI_OK;
	if (arb_project_open(&p, g->workdir) < 0 ||
	    arb_apply_ext(&files, p, name, check ? ARB_HOME_CHECK : 0) < 0)
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
	else if (json)
		status = cli_json_print(
		    json_pack("{s:s, s:I}", "workspace", name, "files", (json_int_t)files));
	else if (check)
		printf("%zu changed path%s of %s would apply; nothing was changed\n", files,
		       files == 1 ? "" : "s", name);
	else
		printf("applied %zu changed path%s of %s to the origin's working tree (unstaged)\n",
		       files, files == 1 ? "" : "s", name);
	arb_project_free(p);
	return status;
}
