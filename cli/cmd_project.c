/* cli/cmd_project.c: `arborinth project info`. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "include/arborinth.h"

static int project_info(struct cli_global *g, int argc, char **argv);

const struct cli_cmd cmd_project_subs[] = {
    {"info", "project info", project_info, "show the repository", cmd_project_usage},
    {0},
};

static json_t *info_json(const arb_project *p, const struct arb_head *h, size_t n)
{
	json_t *head = json_pack("{s:s?,s:s?,s:b,s:b}", "commit", h->unborn ? NULL : h->commit,
				 "branch", *h->branch ? h->branch : NULL, "detached",
				 !*h->branch && !h->unborn, "unborn", h->unborn);

	return json_pack("{s:s,s:s,s:s,s:o,s:I}", "root", arb_project_root(p), "git_dir",
			 arb_project_git_dir(p), "state_dir", arb_project_state_dir(p), "head",
			 head, "workspaces", (json_int_t)n);
}

static int project_info(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
	arb_project *p = NULL;
	struct arb_head head;
	bool json = false;
	int status = CLI_ERR;
	size_t n = 0;
	int c;

	optind = 0;
	while ((c = cli_getopt(g, &cmd_project_subs[0], argc, argv, "", opts, &status)) != -1) {
		if (c == -2)
			return status;
		json = true;
	}
	if (optind < argc)
		return cli_usage_error("project info", "unexpected argument '%s'", argv[optind]);
	if (arb_project_open(&p, g->workdir) < 0 || arb_project_head(&head, p) < 0 ||
	    arb_project_workspace_count(&n, p) < 0) {
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
		goto out;
	}
	if (json) {
		status = cli_json_print(info_json(p, &head, n));
		goto out;
	}
	printf("root:       %s\n", arb_project_root(p));
	printf("git dir:    %s\n", arb_project_git_dir(p));
	if (head.unborn)
		printf("HEAD:       (no commits yet) on %s\n", *head.branch ? head.branch : "?");
	else if (*head.branch)
		printf("HEAD:       %s on %s\n", head.commit, head.branch);
	else
		printf("HEAD:       %s (detached)\n", head.commit);
	printf("workspaces: %zu\n", n);
	status = CLI_OK;
out:
	arb_project_free(p);
	return status;
}

int cmd_project(struct cli_global *g, int argc, char **argv)
{
	return cli_dispatch_sub(g, cli_cmd_find(cli_commands, "project"), cmd_project_subs, argc,
				argv);
}
