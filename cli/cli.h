/*
 * cli: the arborinth executable. One file per command; each exports one entry point that
 * takes the arguments after its name and returns an exit status.
 */
#ifndef ARB_CLI_H
#define ARB_CLI_H

#include <jansson.h>
#include <stdbool.h>

#include "util/util.h"

enum { CLI_OK = 0, CLI_ERR = 1, CLI_USAGE = 2 };

/* Options every command understands; set before the command name or among its own options. */
struct cli_global {
	const char *workdir; /* --workdir DIR, default "." */
	bool list_options; /* --list-options: cli_getopt prints the command's options, runs nothing
			    */
	bool no_pager;	   /* --no-pager */
};

/*
 * Colour and a pager for text output (cli/pager.c): cli_color_parse reads --color[=WHEN]
 * (a usage error for another WHEN); cli_color_use decides it on stdout as given, so call it
 * before cli_pager_start, which sends stdout to the pager when it is a terminal (and
 * g->no_pager is not set); cli_pager_finish (main) waits for the pager.
 */
enum cli_color { CLI_COLOR_AUTO, CLI_COLOR_ALWAYS, CLI_COLOR_NEVER };
int cli_color_parse(const char *cmd, const char *when, enum cli_color *out);
bool cli_color_use(enum cli_color c);
void cli_pager_start(const struct cli_global *g);
void cli_pager_finish(void);

struct cli_cmd {
	const char *name;
	const char *path; /* "workspace create" for sub-commands; NULL: same as name */
	int (*fn)(struct cli_global *g, int argc, char **argv);
	const char *summary;
	const char *usage;	    /* full help text, printed by `help NAME` and `NAME --help` */
	const struct cli_cmd *subs; /* sub-command table, or NULL */
};

/* The top-level table; NULL-terminated. */
extern const struct cli_cmd cli_commands[];

const char *cli_cmd_path(const struct cli_cmd *cmd);
const struct cli_cmd *cli_cmd_find(const struct cli_cmd *table, const char *name);
/* Dispatches argv[0] to a sub-command table (`workspace create ...`). */
int cli_dispatch_sub(struct cli_global *g, const struct cli_cmd *parent,
		     const struct cli_cmd *table, int argc, char **argv);

/* One line on stderr: "arborinth: <msg>". Returns status. */
int cli_fail(int status, const char *fmt, ...) ARB_PRINTF(2, 3);
/* The last library error (util_err_msg) on stderr; returns CLI_ERR. */
int cli_fail_lib(void);
/* Usage error for `cmd`: message plus a hint to --help; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) ARB_PRINTF(2, 3);
void cli_print_help(const struct cli_cmd *cmd);

/*
 * Box-chosen text (a path, a ref name, a message) as people see it: util_quote(s), borrowed
 * until 16 more calls of cli_q on this thread (so several fit in one printf). cli_fail and
 * cli_usage_error escape their whole message (util_quote_text) themselves.
 */
const char *cli_q(const char *s);
/*
 * A session's argv as the audit keeps it (cli/argv.c): cli_argv_print prints it as one shell
 * line (util_quote_shell words, `before` ahead of the first); cli_argv_json: a JSON array of
 * util_json_bytes values (caller json_decref's), NULL when argv_json is not such an array.
 */
void cli_argv_print(const char *argv_json, const char *before);
json_t *cli_argv_json(const char *argv_json);

/* Prints obj as JSON on stdout (one document, newline-terminated) and releases it. */
int cli_json_print(json_t *obj);
/* The library's JSON array of an explain's backends (arb_box_explain_backends); [] for NULL. */
json_t *cli_json_backends(const char *text);

/*
 * Shared option parsing: getopt_long over argv with the command's options plus --workdir and
 * --help. Returns the option character, -1 at the end, or CLI_USAGE/handled markers through
 * *status when parsing must stop (then returns -2).
 */
struct option;
int cli_getopt(struct cli_global *g, const struct cli_cmd *cmd, int argc, char **argv,
	       const char *shortopts, const struct option *longopts, int *status);

/*
 * Runs cmd in box b (or with explain prints the resolved box) and returns the exit status
 * `shell` exits with; a failure is one line on stderr (a usage error of command `name` when
 * the input was at fault). cli_box_fail: that line, for a failure of the library.
 */
struct arb_box;
int cli_box_go(struct arb_box *b, char **cmd, bool explain, const char *name);
/* The same for a prepared agent launch (arb_agent_run). */
struct arb_agent;
int cli_agent_go(struct arb_agent *a, const char *name);
int cli_box_fail(const char *cmd);

/*
 * Command entry points, their help texts and sub-command tables. The help texts of the commands
 * with a page (cmd_NAME_usage, cli_main_usage_head/_tail) are generated at build time from
 * docs/commands/arborinth-NAME.md (scripts/docgen.py).
 */
extern const char cli_main_usage_head[], cli_main_usage_tail[], cmd_help_usage[];
extern const char cmd_project_usage[], cmd_workspace_usage[], cmd_shell_usage[],
    cmd_fs_daemon_usage[];
extern const struct cli_cmd cmd_project_subs[], cmd_workspace_subs[];
int cmd_help(struct cli_global *g, int argc, char **argv);
int cmd_project(struct cli_global *g, int argc, char **argv);
int cmd_workspace(struct cli_global *g, int argc, char **argv);
int cmd_shell(struct cli_global *g, int argc, char **argv);
extern const char cmd_audit_usage[];
int cmd_audit(struct cli_global *g, int argc, char **argv);
/*
 * `audit --verify[=FILE]` and `audit --export FILE` (cmd_audit_chain.c): args are the
 * positional arguments (NAME, none for a bundle); filtered: a timeline option was given too.
 */
int cli_audit_chain(struct cli_global *g, bool filtered, const char *verify_file,
		    const char *export_file, int nargs, char **args);
extern const char cmd_grant_usage[], cmd_claude_usage[], cmd_codex_usage[], cmd_opencode_usage[];
int cmd_grant(struct cli_global *g, int argc, char **argv);
int cmd_claude(struct cli_global *g, int argc, char **argv);
int cmd_codex(struct cli_global *g, int argc, char **argv);
int cmd_opencode(struct cli_global *g, int argc, char **argv);
/* Checkpoints, undo and history (cli/cmd_checkpoint.c, cli/cmd_log.c). */
extern const char cmd_checkpoint_usage[], cmd_rewind_usage[], cmd_restore_usage[], cmd_log_usage[],
    cmd_diff_usage[];
int cmd_checkpoint(struct cli_global *g, int argc, char **argv);
int cmd_rewind(struct cli_global *g, int argc, char **argv);
int cmd_restore(struct cli_global *g, int argc, char **argv);
int cmd_log(struct cli_global *g, int argc, char **argv);
int cmd_diff(struct cli_global *g, int argc, char **argv);
struct arb_checkpoint;
json_t *cli_ckpt_json(const struct arb_checkpoint *c);
/* Bringing work home (cli/cmd_home.c). */
extern const char cmd_merge_usage[], cmd_apply_usage[], cmd_export_usage[];
int cmd_merge(struct cli_global *g, int argc, char **argv);
int cmd_apply(struct cli_global *g, int argc, char **argv);
extern const char cmd_compare_usage[];
int cmd_compare(struct cli_global *g, int argc, char **argv);
extern const char cmd_mcp_usage[];
int cmd_mcp(struct cli_global *g, int argc, char **argv);
int cmd_export(struct cli_global *g, int argc, char **argv);
/* Plugins: `arborinth NAME ARGS...` runs arborinth-NAME from PATH (cli/plugin.c). */
int cli_plugin_run(const char *name, int argc, char **argv);
int cmd_fs_daemon(struct cli_global *g, int argc, char **argv);
extern const char cmd_doctor_usage[];
int cmd_doctor(struct cli_global *g, int argc, char **argv);
extern const char cmd_gc_usage[];
int cmd_gc(struct cli_global *g, int argc, char **argv);
extern const char cmd_review_usage[];
int cmd_review(struct cli_global *g, int argc, char **argv);
extern const char cmd_box_init_usage[];
int cmd_box_init(struct cli_global *g, int argc, char **argv);
/*
 * A workspace's submodules (cli/ws_submodules.c): create's lines on stderr for those the view
 * shows empty; `workspace info`'s lines, and its JSON array (NULL when there is none).
 */
struct arb_project;
struct arb_workspace;
void cli_ws_submodules_note(struct arb_project *p, const struct arb_workspace *ws);
void cli_ws_submodules_print(struct arb_project *p, const struct arb_workspace *ws);
json_t *cli_ws_submodules_json(struct arb_project *p, const struct arb_workspace *ws);

#endif
