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
};

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

/* Prints obj as JSON on stdout (one document, newline-terminated) and releases it. */
int cli_json_print(json_t *obj);

/*
 * Shared option parsing: getopt_long over argv with the command's options plus --workdir and
 * --help. Returns the option character, -1 at the end, or CLI_USAGE/handled markers through
 * *status when parsing must stop (then returns -2).
 */
struct option;
int cli_getopt(struct cli_global *g, const struct cli_cmd *cmd, int argc, char **argv,
	       const char *shortopts, const struct option *longopts, int *status);

/*
 * shell's limits (cli/shell_limits.c): parses --OPTION ARG ("timeout", "memory", "cpus",
 * "pids") into l or *timeout_ms; -EINVAL with a message quoting it. The report prints a line
 * on stderr for each limit the box reached.
 */
struct jail_limits;
struct jail_run_stats;
int cli_shell_limit_parse(const char *option, const char *arg, struct jail_limits *l,
			  int64_t *timeout_ms) ARB_MUST_CHECK;
void cli_shell_limit_report(const struct jail_limits *l, const struct jail_run_stats *st);
/*
 * One audit row per limit that acted on session s's box (--timeout when timed_out, --memory
 * when the OOM killer ended processes, --pids when forks were refused); a failure to record
 * is a warning on stderr.
 */
struct audit_session;
void cli_shell_limit_audit(struct audit_session *s, const struct jail_limits *l, int64_t timeout_ms,
			   bool timed_out, const struct jail_run_stats *st);

/* Command entry points, their help texts and sub-command tables. */
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
 * Files for the box in a workspace's home (cli/box_home.c), safe against what the box planted
 * there. cli_home_dir_open: home/SUB (SUB relative, '/'-separated; each level created 0700
 * when missing, none may be a link) as a directory fd in *out. cli_home_write: home/SUB/NAME
 * replaced atomically by data (mode 0600). -errno with a message.
 */
int cli_home_dir_open(const char *home, const char *sub, int *out) ARB_MUST_CHECK;
int cli_home_write(const char *home, const char *sub, const char *name,
		   const char *data) ARB_MUST_CHECK;
/* Sets NAME=VALUE in the box (jail_box_add_env). -errno with a message. */
struct jail_box;
int cli_box_env(struct jail_box *b, const char *name, const char *value) ARB_MUST_CHECK;
/*
 * The project, its state database and the history key of workspace name (deleted_ns: when it
 * was deleted, else 0; a mounted view's pending writes are recorded first). The database is
 * the project's (borrowed); caller frees *p with core_project_free().
 */
struct core_project;
struct sqlite3;
int cli_audit_open(struct core_project **p, struct sqlite3 **db, const char *workdir,
		   const char *name, int64_t *ws_key, int64_t *deleted_ns) ARB_MUST_CHECK;
/*
 * `audit --verify[=FILE]` and `audit --export FILE` (cmd_audit_chain.c): args are the
 * positional arguments (NAME, none for a bundle); filtered: a timeline option was given too.
 */
int cli_audit_chain(struct cli_global *g, bool filtered, const char *verify_file,
		    const char *export_file, int nargs, char **args);
/*
 * `shell` sessions in the audit log: begin records argv, jail and this process as the leader
 * (call it right before starting the command); end records the exit status and frees s
 * (NULL is fine; a failure to record is a warning on stderr).
 */
struct audit_session;
struct core_ws;
int cli_audit_session_begin(struct audit_session **out, struct core_project *p,
			    const struct core_ws *ws, const char *jail, char *const cmd[]);
void cli_audit_session_end(const struct core_ws *ws, struct audit_session *s, int exit_status);
/*
 * `shell --backend` and `--allow-host` (cli/shell_proxy.c). cli_proxy_start: the proxy for
 * ws's box from backend specs and allowed hosts (neither: *out stays NULL); with listen, on
 * NAME/run/proxy/proxy.sock and egress.sock, recording every request in state.db through
 * *audit, else only credentials and placeholders (for --explain). cli_proxy_set_session:
 * the session the records belong to (call it once the session has begun).
 * cli_proxy_stop: stops the proxy, then writes out and closes its records (NULLs are fine).
 * cli_proxy_box_setup: the socket directory (read-only), the relay hooks and the base
 * URL/placeholder/HTTP(S)_PROXY variables on the box; with CLI_PROXY_TCP (--net) no socket and
 * no relay, the placeholders in key files of the box's home instead (NAME_API_KEY_FILE).
 */
struct proxy;
struct jail_box;
struct cli_net_audit;
/* A launcher's login: the backend it replaces the key of (see proxy_login_open). */
struct cli_proxy_login {
	const char *backend;
	int kind; /* enum proxy_login_kind */
	const char *path, *token_url;
};
struct cli_proxy_opts {
	const char *const *backends; /* --backend specifications */
	size_t n_backends;
	const char *key_file;		     /* --api-key-file */
	const struct cli_proxy_login *login; /* or NULL */
	const char *const *allow_hosts;	     /* --allow-host HOST[:PORT] */
	size_t n_allow_hosts;
	bool listen;
	/* --net: on the host's loopback, not the box's relay; tcp_fd and tcp_tls_fd (or -1)
	 * are listeners (proxy_listen_loopback) for backend tcp_backend, kept by the caller. */
	bool tcp;
	int tcp_fd, tcp_tls_fd;
	const char *tcp_backend;
};
int cli_proxy_start(struct proxy **out, struct cli_net_audit **audit, struct core_project *p,
		    const struct core_ws *ws, const struct cli_proxy_opts *o) ARB_MUST_CHECK;
void cli_proxy_set_session(struct cli_net_audit *a, const struct audit_session *s);
void cli_proxy_stop(struct proxy *px, struct cli_net_audit *a);
enum { CLI_PROXY_TCP = 1, CLI_PROXY_DRY = 2 /* --explain: write nothing */ };
int cli_proxy_box_setup(struct proxy *px, struct jail_box *b, const struct core_ws *ws,
			unsigned flags) ARB_MUST_CHECK;
/* Where the box finds backend's key file with --net: HOME/.arborinth/proxy/NAME.key. */
char *cli_proxy_key_file(const char *home, const char *backend);
/* Where the box finds the proxy's CA certificate when a backend serves TLS (tls-port=):
 * HOME/.arborinth/proxy/ca.pem, named by ARBORINTH_PROXY_CA_FILE. */
char *cli_proxy_ca_file(const char *home);
/*
 * Agent launchers, grants and bind files (cli/cmd_launch*.c, cli/cmd_grant.c).
 * cli_shell_run: `shell` with argv as given to it, plus `extra`, which a launcher uses to add
 * its client's mounts and variables to the box (called first, before grants, bind files,
 * --mount and --env, so those win, but after the proxy started, whose placeholders it may
 * read; -errno with a message). cli_binds_apply: --grant and
 * --binds on a box (grants first); prints the error, returns a CLI status.
 */
struct cli_box_extra {
	int (*apply)(void *ctx, struct jail_box *b,
		     struct proxy *px); /* px: NULL without backends */
	void *ctx;
	const struct cli_proxy_login *login; /* the launcher's login, or NULL */
	int tcp_fd, tcp_tls_fd;		     /* with --net: the launcher's listeners, or -1 */
	const char *tcp_backend;	     /* ... for this backend */
};
int cli_shell_run(struct cli_global *g, int argc, char **argv, const struct cli_box_extra *extra);
int cli_binds_apply(struct jail_box *b, const char *const *grants, size_t n_grants,
		    const char *const *files, size_t n_files);
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
struct core_ckpt;
json_t *cli_ckpt_json(const struct core_ckpt *c);
/* Bringing work home (cli/cmd_home.c). */
extern const char cmd_merge_usage[], cmd_apply_usage[];
int cmd_merge(struct cli_global *g, int argc, char **argv);
int cmd_apply(struct cli_global *g, int argc, char **argv);
/* Plugins: `arborinth NAME ARGS...` runs arborinth-NAME from PATH (cli/plugin.c). */
int cli_plugin_run(const char *name, int argc, char **argv);
int cmd_fs_daemon(struct cli_global *g, int argc, char **argv);
extern const char cmd_box_init_usage[];
int cmd_box_init(struct cli_global *g, int argc, char **argv);

#endif
