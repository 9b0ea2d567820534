/*
 * cli/cmd_checkpoint.c: `arborinth checkpoint`, `rewind` and `restore`: recording the view,
 * and giving it (or single paths of it) back an earlier state.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/arborinth.h"

/* A workspace name, checked as the command line checks it. */
static int check_name(const char *cmd, const char *name)
{
	return arb_workspace_name_check(name) < 0 ? cli_usage_error(cmd, "%s", arb_error_last())
						  : CLI_OK;
}

static int fail_lib(void)
{
	return cli_fail(CLI_ERR, "%s", arb_error_last());
}

json_t *cli_ckpt_json(const struct arb_checkpoint *c)
{
	return json_pack("{s:I, s:s, s:s, s:I, s:s, s:o, s:o}", "checkpoint", (json_int_t)c->seq,
			 "commit", c->commit, "tree", c->tree, "time_ns", (json_int_t)c->time_ns,
			 "kind", c->kind, "message", util_json_bytes(c->message), "session",
			 c->session ? json_integer(c->session) : json_null());
}

int cmd_checkpoint(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"message", required_argument, NULL, 'm'}, {"json", no_argument, NULL, 'j'}, {0}};
	static const struct cli_cmd cmd = {"checkpoint",	 NULL, NULL, NULL,
					   cmd_checkpoint_usage, NULL};
	const char *message = NULL;
	arb_project *p = NULL;
	struct arb_checkpoint c;
	bool json = false;
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, &cmd, argc, argv, "m:", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		if (ch == 'm')
			message = optarg;
		else
			json = true;
	}
	if (optind != argc - 1)
		return cli_usage_error("checkpoint",
				       optind >= argc ? "missing workspace NAME"
						      : "unexpected argument '%s'",
				       argv[argc - 1]);
	if (message && (strchr(message, '\n') || strlen(message) > 1000))
		return cli_usage_error("checkpoint", "-m: one line of at most %d bytes", 1000);
	if ((status = check_name("checkpoint", argv[optind])) != CLI_OK)
		return status;
	if (arb_project_open(&p, g->workdir) < 0 ||
	    arb_checkpoint_create(&c, p, argv[optind], message) < 0)
		status = fail_lib();
	else if (json)
		status = cli_json_print(cli_ckpt_json(&c));
	else
		printf("checkpoint %u of %s: %.12s (%s; %zu files hashed, %zu known)\n", c.seq,
		       argv[optind], c.commit, cli_q(c.message), c.hashed, c.reused);
	arb_project_free(p);
	return status;
}

static int parse_target(struct cli_global *g, const struct cli_cmd *cmd, int argc, char **argv,
			const char *at_name, const char **to, int64_t *before, bool *json)
{
	static const struct option opts[] = {{"to", required_argument, NULL, 't'},
					     {"at", required_argument, NULL, 't'},
					     {"before-session", required_argument, NULL, 'b'},
					     {"json", no_argument, NULL, 'j'},
					     {0}};
	int status = CLI_USAGE, ch;
	char *end;

	optind = 0;
	while ((ch = cli_getopt(g, cmd, argc, argv, "", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		if (ch == 't') {
			*to = optarg;
		} else if (ch == 'b') {
			long long s = strtoll(optarg, &end, 10);

			if (*end || s <= 0 || !*optarg)
				return cli_fail(CLI_ERR,
						"--before-session '%s' is not a session number",
						optarg);
			*before = s;
		} else if (json) {
			*json = true;
		} else {
			return cli_usage_error(cmd->name, "unknown option '--json'");
		}
	}
	if (!*to == !*before)
		return cli_usage_error(
		    cmd->name, "give exactly one of %s CKPT and --before-session N", at_name);
	if (optind >= argc)
		return cli_usage_error(cmd->name, "missing workspace NAME");
	return check_name(cmd->name, argv[optind]) == CLI_OK ? -1 : CLI_USAGE;
}

/* "CKPT" or "before session N", for the messages. */
static void target_text(char *buf, size_t size, const char *to, int64_t before)
{
	if (to)
		snprintf(buf, size, "%s", to);
	else
		snprintf(buf, size, "before session %lld", (long long)before);
}

int cmd_rewind(struct cli_global *g, int argc, char **argv)
{
	static const struct cli_cmd cmd = {"rewind", NULL, NULL, NULL, cmd_rewind_usage, NULL};
	const char *to = NULL, *name;
	int64_t before = 0;
	arb_project *p = NULL;
	struct arb_checkpoint c;
	bool json = false;
	char what[64], num[32];
	int status = parse_target(g, &cmd, argc, argv, "--to", &to, &before, &json);

	if (status != -1)
		return status;
	if (optind != argc - 1)
		return cli_usage_error("rewind", "unexpected argument '%s'", argv[argc - 1]);
	name = argv[optind];
	status = CLI_OK;
	target_text(what, sizeof(what), to, before);
	snprintf(num, sizeof(num), "%lld", (long long)before);
	if (arb_project_open(&p, g->workdir) < 0 || arb_rewind(&c, p, name, to, before) < 0)
		status = fail_lib();
	else if (json)
		status = cli_json_print(json_pack("{s:s, s:o}", "rewound_to", to ? to : num, "undo",
						  cli_ckpt_json(&c)));
	else
		printf("%s is back at %s; checkpoint %u holds what it was (undo: arborinth rewind "
		       "%s --to %u)\n",
		       name, cli_q(what), c.seq, name, c.seq);
	arb_project_free(p);
	return status;
}

int cmd_restore(struct cli_global *g, int argc, char **argv)
{
	static const struct cli_cmd cmd = {"restore", NULL, NULL, NULL, cmd_restore_usage, NULL};
	const char *to = NULL;
	int64_t before = 0;
	arb_project *p = NULL;
	char what[64];
	bool json = false;
	int status = parse_target(g, &cmd, argc, argv, "--at", &to, &before, &json);
	json_t *paths = NULL;
	int n;

	if (status != -1)
		return status;
	if (optind + 1 >= argc)
		return cli_usage_error("restore", "missing PATH");
	n = argc - optind - 1;
	status = CLI_OK;
	target_text(what, sizeof(what), to, before);
	if (arb_project_open(&p, g->workdir) < 0 ||
	    arb_restore(p, argv[optind], to, before, (const char *const *)argv + optind + 1,
			(size_t)n) < 0)
		status = fail_lib();
	else if (json && (paths = json_array()))
		for (int i = 0; i < n; i++)
			json_array_append_new(paths, util_json_bytes(argv[optind + 1 + i]));
	if (status == CLI_OK && json)
		status = cli_json_print(json_pack("{s:s, s:o, s:o}", "workspace", argv[optind],
						  "from", util_json_bytes(what), "paths", paths));
	else if (status == CLI_OK)
		printf("restored %d path%s of %s from %s\n", n, n == 1 ? "" : "s", argv[optind],
		       cli_q(what));
	arb_project_free(p);
	return status;
}
