/*
 * cli/cmd_review.c: `arborinth review [NAME...]` serves the review page on loopback
 * (cli/review_http.c) until interrupted; `arborinth review send NAME` prints the one message
 * the comments made on the page give the agent (the launchers' --review passes it).
 */
#include "cli/cli.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/review.h"

/* cmd_review_usage: generated from docs/commands/arborinth-review.md. */

static int send_cmd(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'}, {"clear", no_argument, NULL, 'c'}, {0}};
	struct cli_cmd self = {"review", NULL, NULL, NULL, cmd_review_usage, NULL};
	arb_project *p = NULL;
	arb_workspace *ws = NULL;
	json_t *list = NULL;
	bool json = false, clear = false;
	int status = CLI_USAGE, c;
	char *text = NULL;

	optind = 0;
	while ((c = cli_getopt(g, &self, argc, argv, "", opts, &status)) != -1) {
		if (c == -2)
			return status;
		if (c == 'j')
			json = true;
		else
			clear = true;
	}
	if (optind + 1 != argc)
		return cli_usage_error("review send", "give one workspace NAME");
	if (arb_workspace_name_check(argv[optind]) < 0)
		return cli_usage_error("review send", "%s", arb_error_last());
	status = CLI_ERR;
	if (arb_project_open(&p, g->workdir) < 0 || arb_workspace_get(&ws, p, argv[optind]) < 0) {
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
		goto out;
	}
	if (review_comments_load(&list, p, ws) < 0) {
		status = cli_fail_lib();
		goto out;
	}
	if (json) {
		status = cli_json_print(review_message_json(argv[optind], list));
	} else if ((text = review_message(argv[optind], list))) {
		fputs(text, stdout);
		status = CLI_OK;
	} else {
		status = cli_fail(CLI_ERR, "workspace %s has no review comments", argv[optind]);
	}
	if (status == CLI_OK && clear && review_comments_clear(p, ws) < 0)
		status = cli_fail_lib();
out:
	free(text);
	json_decref(list);
	arb_workspace_free(ws);
	arb_project_free(p);
	return status;
}

int cmd_review(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"port", required_argument, NULL, 'p'}, {"open", no_argument, NULL, 'o'}, {0}};
	const struct cli_cmd *self = cli_cmd_find(cli_commands, "review");
	struct review_opts o = {0};
	struct review_ctx ctx = {0};
	char exe[PATH_MAX];
	ssize_t len;
	int status = CLI_USAGE, c;

	if (argc >= 2 && !strcmp(argv[1], "send"))
		return send_cmd(g, argc - 1, argv + 1);
	optind = 0;
	while ((c = cli_getopt(g, self, argc, argv, "", opts, &status)) != -1) {
		char *end;
		long v;

		if (c == -2)
			return status;
		if (c == 'o') {
			o.open = 1;
			continue;
		}
		v = strtol(optarg, &end, 10);
		if (*end || v < 1 || v > 65535)
			return cli_usage_error("review", "--port '%s' is not a port number",
					       optarg);
		o.port = (unsigned)v;
	}
	for (int i = optind; i < argc; i++)
		if (arb_workspace_name_check(argv[i]) < 0)
			return cli_usage_error("review", "%s", arb_error_last());
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return cli_fail(CLI_ERR, "review: cannot find this program (/proc/self/exe)");
	exe[len] = '\0';
	if (arb_project_open(&ctx.p, g->workdir) < 0)
		return cli_fail(CLI_ERR, "%s", arb_error_last());
	for (int i = optind; i < argc; i++) {
		arb_workspace *ws = NULL;

		if (arb_workspace_get(&ws, ctx.p, argv[i]) < 0) {
			status = cli_fail(CLI_ERR, "%s", arb_error_last());
			arb_project_free(ctx.p);
			return status;
		}
		arb_workspace_free(ws);
	}
	ctx.exe = exe;
	ctx.names = argv + optind;
	ctx.n = (size_t)(argc - optind);
	status = review_serve(&ctx, &o) < 0 ? cli_fail_lib() : CLI_OK;
	arb_project_free(ctx.p);
	return status;
}
