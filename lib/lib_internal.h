/*
 * lib/lib_internal.h: what the files of lib/ share, and what the agent launchers (still in
 * cli/, issue #14's next step) reach below the public API: the proxy and box wiring a
 * launcher adds its client to. Nothing here is exported from libarborinth.so.
 */
#ifndef ARB_LIB_INTERNAL_H
#define ARB_LIB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "include/arborinth.h"
#include "util/util.h"

struct audit_session;
struct core_project;
struct core_ws;
struct jail_box;
struct jail_limits;
struct jail_run_stats;
struct proxy_proc;

/*
 * The folder of arborinth_fs and arborinth_box_init for this process (lib/helpers.c), or
 * NULL; the first call also points core at its view daemon.
 */
const char *lib_helper_dir(void);
/*
 * For the command line: the program is arborinth, whose helpers are beside it or itself
 * (jail/box.c, core/mount.c): the library does not look for others. Call before anything.
 */
void lib_helpers_from_program(void);

/*
 * A stream writing onto a copy of the caller's descriptor fd (what uses it says `what` in
 * its message). fclose() it; the caller's fd stays open. -errno with a message.
 */
int lib_fd_stream(int fd, const char *what, FILE **out) ARB_MUST_CHECK;

/* Marks this thread's last error (util_err) as caused by the caller's input. Returns rc. */
int lib_input_err(int rc);
/* Clears the mark (every public entry point does, first). */
void lib_err_reset(void);

/*
 * lib/submodules.c: the stores of the base's submodules the origin initialised, each shown
 * read-only at the origin's store of it with what the recorded commit reaches only (as the
 * origin's own objects are: core_objects_view), as the workspace at ws_root recorded them at
 * create (core_ws_submodules). -errno with a message.
 */
struct jail_box;
struct core_project;
int lib_box_submodules(struct jail_box *b, struct core_project *p, const char *ws_root,
		       const char *base_hex, const char *gitdir) ARB_MUST_CHECK;

struct arb_project {
	struct core_project *core;
};

/* ---- limits (lib/box_limits.c) ----------------------------------------------------------- */

/*
 * Parses OPTION ARG ("timeout", "memory", "cpus", "pids") into l or *timeout_ms; -EINVAL with
 * a message quoting it ("--memory '12X': ...").
 */
int lib_limit_parse(const char *option, const char *arg, struct jail_limits *l,
		    int64_t *timeout_ms) ARB_MUST_CHECK;
/*
 * One audit row per limit that acted on session s's box (--timeout when timed_out, --memory
 * when the OOM killer ended processes, --pids when forks were refused); a failure to record
 * is a warning on stderr.
 */
void lib_limit_audit(struct audit_session *s, const struct jail_limits *l, int64_t timeout_ms,
		     bool timed_out, const struct jail_run_stats *st);
/* The workspace's disk budget from root/disk (as core keeps it), 0 when none or unreadable. */
int64_t lib_disk_budget(const char *root);
/* The audit row of a box the disk guard stopped: op "limit", path "--disk", what it said. */
void lib_limit_audit_disk(struct audit_session *s, const char *why);

/* ---- the box's home (lib/box_home.c) ----------------------------------------------------- */

/*
 * Files for the box in a workspace's home, safe against what the box planted there.
 * lib_home_dir_open: home/SUB (SUB relative, '/'-separated; each level created 0700 when
 * missing, none may be a link) as a directory fd in *out. lib_home_write: home/SUB/NAME
 * replaced atomically by data (mode 0600). -errno with a message.
 */
int lib_home_dir_open(const char *home, const char *sub, int *out) ARB_MUST_CHECK;
int lib_home_write(const char *home, const char *sub, const char *name,
		   const char *data) ARB_MUST_CHECK;
/* Sets NAME=VALUE in the box (jail_box_add_env). -errno with a message. */
int lib_box_env(struct jail_box *b, const char *name, const char *value) ARB_MUST_CHECK;

/* ---- sessions (lib/box_session.c) -------------------------------------------------------- */

/*
 * Sessions in the audit log: begin records argv, jail and this process as the leader (call it
 * right before starting the command) and, box > 0, the pid namespace of the box whose pid 1
 * that is, which names the session's processes (one process may run several boxes at once);
 * end records the exit status and frees s (NULL is fine;
 * a failure to record is a warning on stderr). lib_session_checkpoint: the session's "start"
 * or "end" checkpoint (a failure is a warning: the session runs anyway).
 */
int lib_session_begin(struct audit_session **out, struct core_project *p, const struct core_ws *ws,
		      const char *jail, char *const cmd[], pid_t box) ARB_MUST_CHECK;
void lib_session_end(const struct core_ws *ws, struct audit_session *s, int exit_status);
void lib_session_checkpoint(struct core_project *p, const struct core_ws *ws,
			    const struct audit_session *s, const char *kind);
/* After the "end" checkpoint: the branch into the export (core_ws_export); failure: a warning. */
void lib_session_export(struct core_project *p, const struct core_ws *ws);

/* ---- the credential proxy of a box (lib/box_proxy.c) ------------------------------------- */

/*
 * lib_proxy_start: the proxy for ws's box from backend specs and allowed hosts (neither: *out
 * stays NULL); with listen, on NAME/run/proxy/proxy.sock and egress.sock, recording every
 * request in state.db through *audit, else only credentials and placeholders (for explain).
 * lib_proxy_set_session: the session the records belong to (once it has begun).
 * lib_proxy_stop: stops the proxy, then writes out and closes its records (NULLs are fine).
 * lib_proxy_end: tells it to stop (once the box is over) without waiting for it.
 * lib_proxy_box_setup: the socket directory (read-only), the relay hooks and the base
 * URL/placeholder/HTTP(S)_PROXY variables on the box; with LIB_PROXY_TCP (network shared) no
 * socket and no relay, the placeholders in key files of the box's home (NAME_API_KEY_FILE).
 */
/* A launcher's login: the backend it replaces the key of (see proxy_login_open). */
struct lib_proxy_login {
	const char *backend;
	int kind; /* enum proxy_login_kind */
	const char *path, *token_url;
};
struct lib_proxy_opts {
	const char *const *backends; /* backend specifications */
	size_t n_backends;
	const char *key_file;		     /* the one backend's key file */
	const struct lib_proxy_login *login; /* or NULL */
	const char *const *allow_hosts;	     /* HOST[:PORT] */
	size_t n_allow_hosts;
	bool listen;
	/* Network shared: on the host's loopback, not the box's relay; tcp_fd and tcp_tls_fd
	 * (or -1) are listeners (proxy_listen_loopback) for backend tcp_backend, kept by the
	 * caller. */
	bool tcp;
	int tcp_fd, tcp_tls_fd;
	const char *tcp_backend;
	/* Start the proxy and return: lib_proxy_wait() reads its answer (or failure) later. */
	bool spawn_only;
};
/* Whether the upstream of backend spec can be reached (proxy_backend_reach). */
int lib_proxy_reach(const char *spec) ARB_MUST_CHECK;
int lib_proxy_start(struct proxy_proc **out, struct core_project *p, const struct core_ws *ws,
		    const struct lib_proxy_opts *o) ARB_MUST_CHECK;
void lib_proxy_set_session(struct proxy_proc *px, const struct audit_session *s);
void lib_proxy_stop(struct proxy_proc *px);
void lib_proxy_end(struct proxy_proc *px);
/* The started proxy's answer: 0, or why it could not start (NULL px: 0). */
int lib_proxy_wait(struct proxy_proc *px) ARB_MUST_CHECK;
/* Whether it records (its audit log opens after its answer): before the box starts. */
int lib_proxy_confirm(struct proxy_proc *px) ARB_MUST_CHECK;
/* The running proxy's placeholder for backend name (NULL: none), and its in-box ports. */
const char *lib_proxy_placeholder(const struct proxy_proc *px, const char *name);
const uint16_t *lib_proxy_ports(const struct proxy_proc *px, size_t *n);
enum { LIB_PROXY_TCP = 1, LIB_PROXY_DRY = 2 /* explain: write nothing */ };
int lib_proxy_box_setup(struct proxy_proc *px, struct jail_box *b, const struct core_ws *ws,
			unsigned flags) ARB_MUST_CHECK;
/*
 * --explain's lines for the proxy's backends: per backend its origin (origins[i], in the
 * answer's order), what it reaches (the answer's facts) and its box variables' names; then
 * notes (bind-file backends a given one replaced). flags: as lib_proxy_box_setup's. *json: the
 * backends as a JSON array (caller frees).
 */
int lib_proxy_explain(struct proxy_proc *px, struct jail_box *b, unsigned flags,
		      char *const *origins, char *const *notes, size_t n_notes,
		      char **json) ARB_MUST_CHECK;
/* Where the box finds backend's key file with the network shared: HOME/.arborinth/proxy/NAME.key */
char *lib_proxy_key_file(const char *home, const char *backend);
/* Where the box finds the proxy's CA certificate when a backend serves TLS (tls-port=):
 * HOME/.arborinth/proxy/ca.pem, named by ARBORINTH_PROXY_CA_FILE. */
char *lib_proxy_ca_file(const char *home);

/* ---- grants and bind files (lib/box_binds.c) --------------------------------------------- */

/*
 * A box's bind files, loaded once, before its proxy starts (their backends go to it), and its
 * backends: those given (--backend, a launcher's) first, then the files' (a later file's
 * replaces an earlier one's of the same name; one given wins, and origins says so). A bind
 * file the box can write (under one of the writable folders: the project's state folder,
 * with every workspace's view, home and cache, and --mount rw sources; under an rw or
 * overlay entry of the files) may not give a backend (-EPERM, input): a backend reads host
 * credentials and sends them where it says.
 */
struct binds_set;
struct lib_binds {
	struct binds_set *files; /* NULL without bind files */
	char **backends;	 /* specifications, NULL-terminated */
	char **origins;		 /* per backend: "--backend" or "--binds FILE:LINE:COL" */
	char **notes;		 /* file backends a given one replaced, for --explain */
	size_t n_backends, n_given, n_notes;
	char *explain_json; /* explain: the backends as JSON (lib_proxy_explain) */
};
int lib_binds_load(struct lib_binds *lb, const char *const *files, size_t n_files,
		   const char *const *given, size_t n_given, const char *const *writable,
		   size_t n_writable) ARB_MUST_CHECK;
void lib_binds_release(struct lib_binds *lb);
/* The proxy's failure rc: when its message names a bind file's backend ("backend NAME..."),
 * the message is prefixed with "--binds FILE:LINE:COL: ". Returns rc. */
int lib_binds_blame(const struct lib_binds *lb, int rc);
/* Grants, then the loaded bind files (lb->files), on a box. -EINVAL (input) with
 * "--grant ..."/"--binds ..." messages. */
/*
 * lib/box_walls.c: hides from the box every credential file the box's proxy reads (key files,
 * key-json files, logins) and the --api-key-file given (jail_box_hide). px may be NULL.
 */
int lib_box_hide_credentials(struct jail_box *b, struct proxy_proc *px,
			     const char *key_file) ARB_MUST_CHECK;
int lib_binds_apply(struct jail_box *b, const char *const *grants, size_t n_grants,
		    const struct lib_binds *lb) ARB_MUST_CHECK;

/* ---- a launcher's part of a box (lib/box.c) ---------------------------------------------- */

/*
 * What an agent launcher adds to a box: apply() is called first (before grants, bind files,
 * mounts and variables, so those win, but after the proxy started, whose placeholders it may
 * read; px is NULL without backends; -errno with a message); its login for the proxy; with the
 * network shared, its listeners for tcp_backend (or -1).
 */
struct lib_box_extra {
	int (*apply)(void *ctx, struct jail_box *b, struct proxy_proc *px);
	void *ctx;
	const struct lib_proxy_login *login;
	int tcp_fd, tcp_tls_fd;
	const char *tcp_backend;
	/* explain only: a workspace that does not exist is shown as created at plan_rev */
	bool plan;
	const char *plan_rev;
};
/* Borrowed: must outlive the box. */
void lib_box_set_extra(arb_box *b, const struct lib_box_extra *extra);

#endif
