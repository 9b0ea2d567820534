/*
 * cli/cmd_launch.c: `arborinth claude|codex|opencode NAME [OPTIONS] [-- CLIENT ARGS...]`:
 * the options into an arb_agent (include/arborinth.h), what it says, and its run.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/review.h"
#include "include/arborinth.h"

/* Options with their names in arb_agent_set (val: 1000 + their index), values or not. */
#define OPT(name, arg, i)                                                                          \
	{                                                                                          \
		name, arg, NULL, 1000 + (i)                                                        \
	}
static const struct option launch_opts[] = {
    OPT("rev", required_argument, 0),
    OPT("client", required_argument, 1),
    OPT("grant", required_argument, 2),
    OPT("binds", required_argument, 3),
    OPT("mount", required_argument, 4),
    OPT("env", required_argument, 5),
    OPT("upstream", required_argument, 6),
    OPT("api-key-file", required_argument, 7),
    OPT("model", required_argument, 8),
    OPT("provider", required_argument, 9),
    OPT("auth", required_argument, 10),
    OPT("token-url", required_argument, 11),
    OPT("timeout", required_argument, 12),
    OPT("memory", required_argument, 13),
    OPT("cpus", required_argument, 14),
    OPT("pids", required_argument, 15),
    OPT("net", no_argument, 16),
    OPT("no-upstream-auth", no_argument, 17),
    OPT("no-tool-managers", no_argument, 18),
    OPT("inotify", required_argument, 19),
    OPT("vertex", no_argument, 20),
    {"explain", no_argument, NULL, 'x'},
    {"json", no_argument, NULL, 'j'},
    {"review", no_argument, NULL, 'r'},
    {0},
};
#undef OPT

static int fail(const char *name)
{
	return arb_error_is_input() ? cli_usage_error(name, "%s", arb_error_last())
				    : cli_fail(CLI_ERR, "%s", arb_error_last());
}

/*
 * --review: the review comments on workspace name as the client's first prompt: a trailing
 * argument for claude and codex (their interactive prompt), --prompt for opencode's TUI.
 * -1 to go on, else the exit status.
 */
static int review_prompt(arb_project *p, arb_agent *a, const char *client, const char *name)
{
	char *msg = NULL;
	int status = -1;

	if (review_message_for(&msg, p, name) < 0)
		return cli_fail_lib();
	if ((!strcmp(client, "opencode") && arb_agent_add_arg(a, "--prompt") < 0) ||
	    arb_agent_add_arg(a, msg) < 0)
		status = fail(client);
	free(msg);
	return status;
}

/* Options and arguments into a new agent (*out); -1 to go on, else the exit status. */
static int parse(struct cli_global *g, const struct cli_cmd *cmd, int argc, char **argv,
		 arb_project **p, arb_agent **out, bool *explain, bool *json)
{
	struct {
		const char *name, *value;
	} *v = calloc((size_t)argc + 1, sizeof(*v));
	int dd = argc, c, status = CLI_USAGE, n = 0;
	bool review = false;

	if (!v)
		return cli_fail(CLI_ERR, "out of memory");
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	optind = 0;
	while ((c = cli_getopt(g, cmd, dd, argv, "", launch_opts, &status)) != -1) {
		if (c == -2)
			goto out;
		if (c == 'x' || c == 'j' || c == 'r') {
			*(c == 'x' ? explain : c == 'j' ? json : &review) = true;
			continue;
		}
		v[n].name = launch_opts[c - 1000].name;
		v[n++].value = optarg;
	}
	status = CLI_USAGE;
	if (*json && !*explain) {
		status = cli_usage_error(cmd->name, "--json goes with --explain");
		goto out;
	}
	if (optind >= dd) {
		status = cli_usage_error(cmd->name, "missing workspace NAME");
		goto out;
	}
	if (optind + 1 < dd) {
		status = cli_usage_error(cmd->name,
					 "unexpected argument '%s' (client arguments go after --)",
					 argv[optind + 1]);
		goto out;
	}
	if (arb_project_open(p, g->workdir) < 0) {
		status = cli_fail(CLI_ERR, "%s", arb_error_last());
		goto out;
	}
	if (arb_agent_new(out, *p, cmd->name, argv[optind]) < 0) {
		status = fail(cmd->name);
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (arb_agent_set(*out, v[i].name, v[i].value) < 0) {
			status = fail(cmd->name);
			goto out;
		}
	for (int i = dd + 1; i < argc; i++)
		if (arb_agent_add_arg(*out, argv[i]) < 0) {
			status = fail(cmd->name);
			goto out;
		}
	if (review && (status = review_prompt(*p, *out, cmd->name, argv[optind])) != -1)
		goto out;
	status = -1;
out:
	free(v);
	return status;
}

/* A note ("about: [missing: ]text") as {"about", "missing", "text"}. */
static json_t *note_json(const char *note)
{
	const char *colon = strstr(note, ": ");
	char about[32] = "note";
	size_t n = colon ? (size_t)(colon - note) : sizeof(about);
	bool missing;

	if (n < sizeof(about) && !memchr(note, ' ', n)) {
		memcpy(about, note, n);
		about[n] = '\0';
		note = colon + 2;
	}
	missing = !strncmp(note, "missing: ", 9);
	return json_pack("{s:s, s:b, s:o}", "about", about, "missing", missing, "text",
			 util_json_bytes(missing ? note + 9 : note));
}

/* --explain --json: the notes and the box's text. */
static int explain_json(arb_agent *a, const char *name, const char *ws, const char *const *notes,
			size_t n)
{
	json_t *arr = json_array();
	char *text = NULL;

	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, note_json(notes[i]));
	if (arb_agent_explain(&text, a) < 0) {
		json_decref(arr);
		return fail(name);
	}
	arr = json_pack("{s:s, s:s, s:o, s:o}", "command", name, "workspace", ws, "notes", arr,
			"box", util_json_bytes(text));
	arb_free(text);
	return cli_json_print(arr);
}

/*
 * After an interactive run: the launcher's command that resumes the client's session in the
 * box (the client's own hint would run it on the host, outside the box).
 */
static void resume_hint(const struct cli_global *g, arb_agent *a, const char *name, const char *ws)
{
	char *args = NULL;

	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO) || arb_agent_resume_args(&args, a) != 1)
		return;
	if (strcmp(g->workdir, "."))
		fprintf(stderr,
			"arborinth: resume this session in its box: arborinth --workdir %s %s "
			"%s -- %s\n",
			cli_q(g->workdir), name, ws, args);
	else
		fprintf(stderr,
			"arborinth: resume this session in its box: arborinth %s %s -- %s\n", name,
			ws, args);
	arb_free(args);
}

static int launch(struct cli_global *g, const char *name, const char *usage, int argc, char **argv)
{
	struct cli_cmd cmd = {name, NULL, NULL, NULL, usage, NULL};
	const char *const *notes;
	arb_project *p = NULL;
	arb_agent *a = NULL;
	bool explain = false, json = false;
	char *text = NULL;
	size_t n = 0;
	int status = parse(g, &cmd, argc, argv, &p, &a, &explain, &json);

	if (status != -1)
		goto out;
	if (arb_agent_prepare(a, explain) < 0) {
		status = fail(name);
		goto out;
	}
	/* --explain: the credential and the MCP servers first; a run says the MCP servers. */
	notes = arb_agent_notes(a, &n);
	if (json) {
		status = explain_json(a, name, argv[optind], notes, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (explain)
			printf("%s\n", notes[i]);
		else if (!strncmp(notes[i], "mcp: ", 5))
			fprintf(stderr, "arborinth: %s\n", notes[i]);
	if (explain) {
		status = arb_agent_explain(&text, a) < 0 ? fail(name) : CLI_OK;
		if (text)
			fputs(text, stdout);
		arb_free(text);
	} else {
		status = cli_agent_go(a, name);
		resume_hint(g, a, name, argv[optind]);
	}
out:
	arb_agent_free(a);
	arb_project_free(p);
	return status;
}

int cmd_claude(struct cli_global *g, int argc, char **argv)
{
	return launch(g, "claude", cmd_claude_usage, argc, argv);
}

int cmd_codex(struct cli_global *g, int argc, char **argv)
{
	return launch(g, "codex", cmd_codex_usage, argc, argv);
}

int cmd_opencode(struct cli_global *g, int argc, char **argv)
{
	return launch(g, "opencode", cmd_opencode_usage, argc, argv);
}
