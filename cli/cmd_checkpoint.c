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

#include "audit/audit.h"
#include "core/core.h"

const char cmd_checkpoint_usage[] =
    "usage: arborinth checkpoint NAME [-m MSG] [--json]\n"
    "\n"
    "Records workspace NAME's whole view as it is now (tracked, untracked and ignored files,\n"
    "deletions, executable bits, symlinks; .git excluded) as a commit in the workspace's own\n"
    "object store, on refs/arborinth/checkpoints/N; its branch, index and HEAD are not\n"
    "touched. Every shell and launcher session checkpoints at its start and its end.\n"
    "'arborinth log NAME' lists them.\n"
    "\n"
    "  -m, --message MSG  what the checkpoint is (one line; default \"checkpoint\")\n"
    "  --json             print the checkpoint as a JSON object\n";

const char cmd_rewind_usage[] =
    "usage: arborinth rewind NAME (--to CKPT | --before-session N) [--json]\n"
    "\n"
    "Gives workspace NAME's whole view the state of checkpoint CKPT (its number, or any tree\n"
    "'arborinth diff' accepts), or the state before session N started. Checkpoints first, so\n"
    "a rewind can itself be undone (arborinth rewind NAME --to THAT). Refused while a session\n"
    "of NAME runs. Files come back with content, executable bit and symlinks as git holds\n"
    "them; empty directories and other modes do not. Recorded in the audit as one 'rewind' row.\n";

const char cmd_restore_usage[] =
    "usage: arborinth restore NAME PATH... (--at CKPT | --before-session N)\n"
    "\n"
    "Gives single paths of workspace NAME (files, symlinks or whole directories, relative to\n"
    "its workdir) back the state they had at checkpoint CKPT or before session N; a path that\n"
    "did not exist then is removed. Written through the view, so the audit records each\n"
    "change.\n";

static int open_ws(struct cli_global *g, const char *name, struct core_project **p,
		   struct core_ws **ws)
{
	if (core_ws_name_check(name) < 0)
		return cli_usage_error("checkpoint", "%s", util_err_msg());
	if (core_project_open(p, g->workdir) < 0 || core_ws_get(*p, name, ws) < 0)
		return cli_fail_lib();
	return CLI_OK;
}

json_t *cli_ckpt_json(const struct core_ckpt *c)
{
	return json_pack("{s:I, s:s, s:s, s:I, s:s, s:s, s:o}", "checkpoint", (json_int_t)c->seq,
			 "commit", c->commit, "tree", c->tree, "time_ns", (json_int_t)c->time_ns,
			 "kind", c->kind, "message", c->message ? c->message : "", "session",
			 c->session ? json_integer(c->session) : json_null());
}

int cmd_checkpoint(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"message", required_argument, NULL, 'm'}, {"json", no_argument, NULL, 'j'}, {0}};
	static const struct cli_cmd cmd = {"checkpoint",	 NULL, NULL, NULL,
					   cmd_checkpoint_usage, NULL};
	struct core_ckpt_opts o = {0};
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	struct core_ckpt c = {0};
	bool json = false;
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, &cmd, argc, argv, "m:", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		if (ch == 'm')
			o.message = optarg;
		else
			json = true;
	}
	if (optind != argc - 1)
		return cli_usage_error("checkpoint",
				       optind >= argc ? "missing workspace NAME"
						      : "unexpected argument '%s'",
				       argv[argc - 1]);
	if (o.message && (strchr(o.message, '\n') || strlen(o.message) > CORE_CKPT_MESSAGE_MAX))
		return cli_usage_error("checkpoint", "-m: one line of at most %d bytes",
				       CORE_CKPT_MESSAGE_MAX);
	status = open_ws(g, argv[optind], &p, &ws);
	if (status == CLI_OK && core_ws_checkpoint(p, ws, &o, &c) < 0)
		status = cli_fail_lib();
	if (status == CLI_OK && json)
		status = cli_json_print(cli_ckpt_json(&c));
	else if (status == CLI_OK)
		printf("checkpoint %u of %s: %.12s (%s; %zu files hashed, %zu known)\n", c.seq,
		       ws->name, c.commit, c.message, c.hashed, c.reused);
	core_ckpt_clear(&c);
	core_ws_free(ws);
	core_project_free(p);
	return status;
}

/* --to CKPT or --before-session N as a tree of ws. */
static int target_tree(struct core_project *p, const struct core_ws *ws, const char *to,
		       const char *before, git_oid *tree)
{
	struct core_ckpt c = {0};
	char *end;
	long long s;
	int rc;

	if (to)
		return core_ws_tree(p, ws, to, tree);
	s = strtoll(before, &end, 10);
	if (*end || s <= 0)
		return util_err(-EINVAL, "--before-session '%s' is not a session number", before);
	rc = core_ws_session_ckpt(p, ws, s, "start", &c);
	if (rc == 0 && git_oid_fromstr(tree, c.tree) < 0)
		rc = util_err(-EIO, "bad checkpoint tree %s", c.tree);
	core_ckpt_clear(&c);
	return rc;
}

/* One audit row for the rewind (path: what it went back to). */
static void record_rewind(struct core_project *p, const struct core_ws *ws, const char *what)
{
	struct audit_log *log = NULL;
	struct audit_event ev = {
	    .time_ns = util_now_ns(), .kind = "fs", .op = "rewind", .path = what, .size = -1};
	char *db = util_path_join(core_project_state_dir(p), "state.db");

	if (!db || audit_log_open(&log, db, ws->id, ws->name) < 0 || audit_log_append(log, &ev) < 0)
		fprintf(stderr, "arborinth: warning: the rewind could not be recorded in the audit "
				"log\n");
	if (log)
		audit_log_close(log);
	free(db);
}

static int parse_target(struct cli_global *g, const struct cli_cmd *cmd, int argc, char **argv,
			const char *at_name, const char **to, const char **before, bool *json)
{
	static const struct option opts[] = {{"to", required_argument, NULL, 't'},
					     {"at", required_argument, NULL, 't'},
					     {"before-session", required_argument, NULL, 'b'},
					     {"json", no_argument, NULL, 'j'},
					     {0}};
	int status = CLI_USAGE, ch;

	optind = 0;
	while ((ch = cli_getopt(g, cmd, argc, argv, "", opts, &status)) != -1) {
		if (ch == -2)
			return status;
		if (ch == 't')
			*to = optarg;
		else if (ch == 'b')
			*before = optarg;
		else if (json)
			*json = true;
		else
			return cli_usage_error(cmd->name, "unknown option '--json'");
	}
	if (!*to == !*before)
		return cli_usage_error(
		    cmd->name, "give exactly one of %s CKPT and --before-session N", at_name);
	if (optind >= argc)
		return cli_usage_error(cmd->name, "missing workspace NAME");
	return -1;
}

int cmd_rewind(struct cli_global *g, int argc, char **argv)
{
	static const struct cli_cmd cmd = {"rewind", NULL, NULL, NULL, cmd_rewind_usage, NULL};
	const char *to = NULL, *before = NULL;
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	struct core_ckpt c = {0};
	bool json = false;
	git_oid tree;
	char what[128];
	int status = parse_target(g, &cmd, argc, argv, "--to", &to, &before, &json);

	if (status != -1)
		return status;
	if (optind != argc - 1)
		return cli_usage_error("rewind", "unexpected argument '%s'", argv[argc - 1]);
	status = open_ws(g, argv[optind], &p, &ws);
	if (status == CLI_OK &&
	    (target_tree(p, ws, to, before, &tree) < 0 || core_ws_rewind(p, ws, &tree, &c) < 0))
		status = cli_fail_lib();
	if (status == CLI_OK) {
		snprintf(what, sizeof(what), "%s%s (undo: --to %u)", to ? "" : "before session ",
			 to ? to : before, c.seq);
		record_rewind(p, ws, what);
		if (json)
			status =
			    cli_json_print(json_pack("{s:s, s:o}", "rewound_to", to ? to : before,
						     "undo", cli_ckpt_json(&c)));
		else
			printf("%s is back at %s%s; checkpoint %u holds what it was (undo: "
			       "arborinth rewind %s --to %u)\n",
			       ws->name, to ? "" : "before session ", to ? to : before, c.seq,
			       ws->name, c.seq);
	}
	core_ckpt_clear(&c);
	core_ws_free(ws);
	core_project_free(p);
	return status;
}

int cmd_restore(struct cli_global *g, int argc, char **argv)
{
	static const struct cli_cmd cmd = {"restore", NULL, NULL, NULL, cmd_restore_usage, NULL};
	const char *to = NULL, *before = NULL;
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	git_oid tree;
	int status = parse_target(g, &cmd, argc, argv, "--at", &to, &before, NULL);

	if (status != -1)
		return status;
	if (optind + 1 >= argc)
		return cli_usage_error("restore", "missing PATH");
	status = open_ws(g, argv[optind], &p, &ws);
	if (status == CLI_OK &&
	    (target_tree(p, ws, to, before, &tree) < 0 ||
	     core_ws_restore(p, ws, &tree, (const char *const *)argv + optind + 1,
			     (size_t)(argc - optind - 1)) < 0))
		status = cli_fail_lib();
	if (status == CLI_OK)
		printf("restored %d path%s of %s from %s%s\n", argc - optind - 1,
		       argc - optind - 1 == 1 ? "" : "s", ws->name, to ? "" : "before session ",
		       to ? to : before);
	core_ws_free(ws);
	core_project_free(p);
	return status;
}
