/*
 * cli/cmd_launch.c: `arborinth claude|codex|opencode NAME [OPTIONS] [-- CLIENT ARGS...]`:
 * the options into an arb_agent (include/arborinth.h), what it says, and its run.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/review.h"
#include "include/arborinth.h"

/* The options every launcher's help lists. */
#define LAUNCH_COMMON_OPTS                                                                         \
	"  --rev REV            base NAME on REV when creating it (default HEAD)\n"                \
	"  --client PATH        the client binary (default: found on PATH); bound read-only\n"     \
	"                       at its host path in the box\n"                                     \
	"  --model MODEL        the model (default: the host's setting, when there is one)\n"      \
	"  --upstream URL       send the client's API calls to URL instead of the provider\n"      \
	"  --api-key-file FILE  the real API key, read on the host (default: the variable)\n"      \
	"  --auth login|api-key|none\n"                                                            \
	"                       the credential: the host's login, an API key, or none (default:\n" \
	"                       a key when one is given, else the host's login)\n"                 \
	"  --no-upstream-auth   the same as --auth none: the upstream gets no credential\n"        \
	"  --token-url URL      where the host's login is refreshed (default: the client's own)\n" \
	"  --grant NAME         a toolchain bundle (repeatable; 'arborinth grant list')\n"         \
	"  --binds FILE         a bind file (repeatable; applied after grants)\n"                  \
	"  --mount SPEC, --env NAME[=VALUE]\n"                                                     \
	"                       as for 'arborinth shell'\n"                                        \
	"  --timeout D, --memory SIZE, --cpus N, --pids N, --inotify N, --no-tool-managers\n"      \
	"                       as for 'arborinth shell'\n"                                        \
	"  --net                share the host's network; the proxy then listens on the host's\n"  \
	"                       127.0.0.1 and the client reads the session's token from a file\n"  \
	"  --explain            print the resolved box and the client's argv, run nothing\n"       \
	"  --review             the review comments on NAME (arborinth review) as the first\n"     \
	"                       prompt\n"

const char cmd_claude_usage[] =
    "usage: arborinth claude NAME [OPTIONS] [-- CLAUDE ARGS...]\n"
    "\n"
    "Runs Claude Code in workspace NAME (created from --rev when missing) inside a box. Its API\n"
    "calls go through the credential proxy: ANTHROPIC_BASE_URL is the in-box relay and\n"
    "ANTHROPIC_API_KEY a placeholder; the real key ($ANTHROPIC_API_KEY or --api-key-file) stays\n"
    "on the host. CLAUDE_CONFIG_DIR is NAME's home/.claude, so sessions persist per\n"
    "workspace; non-essential traffic is off. Arguments after -- go to claude unchanged.\n"
    "\n" LAUNCH_COMMON_OPTS;

const char cmd_codex_usage[] =
    "usage: arborinth codex NAME [OPTIONS] [-- CODEX ARGS...]\n"
    "\n"
    "Runs Codex in workspace NAME (created from --rev when missing) inside a box. Its API\n"
    "calls go through the credential proxy: OPENAI_BASE_URL is the in-box relay and\n"
    "OPENAI_API_KEY/CODEX_API_KEY a placeholder; the real key ($OPENAI_API_KEY or\n"
    "--api-key-file) stays on the host. CODEX_HOME is NAME's home/.codex. The host's model and\n"
    "reasoning effort (~/.codex/config.toml) are passed as -c overrides. Arguments after -- go\n"
    "to codex unchanged.\n"
    "\n" LAUNCH_COMMON_OPTS;

const char cmd_opencode_usage[] =
    "usage: arborinth opencode NAME [OPTIONS] [-- OPENCODE ARGS...]\n"
    "\n"
    "Runs OpenCode in workspace NAME (created from --rev when missing) inside a box, with a\n"
    "provider config (OPENCODE_CONFIG_CONTENT) whose baseURL is the in-box relay and whose key\n"
    "is a placeholder; the real key stays on the host: --api-key-file, else the provider's\n"
    "variable, else the host's OpenCode login store (auth.json), else the provider's\n"
    "options.apiKey in the host's opencode.json(c). Auto-update, model list fetches, default\n"
    "plugins, LSP downloads and sharing are off. Arguments after -- go to opencode.\n"
    "\n" LAUNCH_COMMON_OPTS
    "  --provider P         anthropic, openai, or an OpenAI-compatible provider of the\n"
    "                       host's OpenCode config (default: the host's model's provider,\n"
    "                       else anthropic)\n";

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
    {"explain", no_argument, NULL, 'x'},
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
		 arb_project **p, arb_agent **out, bool *explain)
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
		if (c == 'x' || c == 'r') {
			*(c == 'x' ? explain : &review) = true;
			continue;
		}
		v[n].name = launch_opts[c - 1000].name;
		v[n++].value = optarg;
	}
	status = CLI_USAGE;
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

static int launch(struct cli_global *g, const char *name, const char *usage, int argc, char **argv)
{
	struct cli_cmd cmd = {name, NULL, NULL, NULL, usage, NULL};
	const char *const *notes;
	arb_project *p = NULL;
	arb_agent *a = NULL;
	bool explain = false;
	char *text = NULL;
	size_t n = 0;
	int status = parse(g, &cmd, argc, argv, &p, &a, &explain);

	if (status != -1)
		goto out;
	if (arb_agent_prepare(a, explain) < 0) {
		status = fail(name);
		goto out;
	}
	/* --explain: the credential and the MCP servers first; a run says the MCP servers. */
	notes = arb_agent_notes(a, &n);
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
