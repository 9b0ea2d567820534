/*
 * arborinth.h: libarborinth, the public C API of arborinth.
 *
 * A project is a git checkout (the origin). Its workspaces are copy-on-write views of a
 * commit, mounted by a FUSE daemon at WORKSPACE/workdir; every write through a view is
 * recorded in the project's audit log. A box runs a command inside a workspace's view under
 * bubblewrap: system folders read-only, home hidden, seccomp, no network unless asked, API keys
 * only through the credential proxy. The command-line tool `arborinth` is built on this API.
 *
 * Conventions (as libgit2's):
 *  - Objects are opaque handles, created by a function whose first parameter is the output
 *    (`arb_project_open(&p, ...)`) and released by the matching `*_free()` (NULL is fine).
 *  - Functions return 0 (or a count, where said) on success and a negative errno on failure;
 *    arb_error_last() then holds a one-line message for this thread, and
 *    arb_error_is_input() says whether the caller's input was at fault (a bad name, spec or
 *    file: the command line's usage errors) rather than the system.
 *  - Strings returned by accessors are borrowed: valid while their object lives.
 *  - A handle is used by one thread at a time; different handles may be used concurrently.
 *
 * Link with `pkg-config --cflags --libs arborinth`. A running box needs bwrap (bubblewrap)
 * on PATH and the arborinth helper programs installed beside the library's arborinth binary
 * (`cmake --install` puts them together); the view needs /dev/fuse.
 */
#ifndef ARBORINTH_H
#define ARBORINTH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ARB_EXTERN __attribute__((visibility("default")))
#else
#define ARB_EXTERN
#endif

#define ARB_VERSION_MAJOR 0
#define ARB_VERSION_MINOR 1
#define ARB_VERSION_PATCH 0

/* The library's version at run time (compare with ARB_VERSION_* at build time). */
ARB_EXTERN void arb_version(int *major, int *minor, int *patch);

/* ---- errors ------------------------------------------------------------------------------ */

/* The message of this thread's last failure; never NULL ("" when there was none). */
ARB_EXTERN const char *arb_error_last(void);
/* Nonzero when this thread's last failure was the caller's input, not the system. */
ARB_EXTERN int arb_error_is_input(void);
/* Frees memory the library returned to the caller (text from arb_box_explain, ...). */
ARB_EXTERN void arb_free(void *ptr);

/* ---- projects ---------------------------------------------------------------------------- */

typedef struct arb_project arb_project;

/*
 * Opens the git repository containing `workdir` (NULL: the current directory), searching
 * upwards; from a folder inside a workspace's view, that view's origin. Moves an older
 * version's <root>/.arborinth into the state directory on first use (-EBUSY while a session
 * runs). -ENOENT (not in a repository), -ENOTDIR, -EINVAL (a bare repository).
 */
ARB_EXTERN int arb_project_open(arb_project **out, const char *workdir);
ARB_EXTERN void arb_project_free(arb_project *p);
/*
 * The checkout's top directory, its git directory and arborinth's state directory (absolute):
 * <git common dir>/arborinth, for a linked worktree <git common dir>/arborinth/worktrees/ID.
 */
ARB_EXTERN const char *arb_project_root(const arb_project *p);
ARB_EXTERN const char *arb_project_git_dir(const arb_project *p);
ARB_EXTERN const char *arb_project_state_dir(const arb_project *p);

/* The checkout's HEAD. */
struct arb_head {
	char commit[41];  /* hex; "" when the branch has no commits yet */
	char branch[256]; /* the branch's short name; "" when detached */
	int unborn;	  /* no commits yet */
};
ARB_EXTERN int arb_project_head(struct arb_head *out, const arb_project *p);
/* The number of workspaces. */
ARB_EXTERN int arb_project_workspace_count(size_t *out, arb_project *p);
/*
 * A one-line note the last arb_workspace_create or _fork through p left (it removed a
 * refs/arborinth/NAME or remote arborinth/NAME an earlier workspace of that name left), or
 * NULL. Borrowed, valid until the next create.
 */
ARB_EXTERN const char *arb_project_note(const arb_project *p);
/*
 * Reclaims what no workspace of p uses (`arborinth gc`): the views' blob cache (only while
 * no view of p is mounted), shared indexes and objects views of commits no workspace is
 * based on, folders interrupted creates and deletes left, review comments of workspaces
 * that are gone (arb_workspace_delete removes a workspace's), submodule stores and indexes no
 * view shows, refs/arborinth/NAME and remotes
 * arborinth/NAME of no workspace; with ARB_GC_PURGE also folders of no workspace and the
 * audit history of deleted workspaces. ARB_GC_DRY_RUN changes nothing. fn (optional) gets
 * each thing removed (removed nonzero) or kept and why (what), with its size; *bytes (optional)
 * the total removed. Safe beside creates, deletes and shells of other processes.
 */
#define ARB_GC_DRY_RUN 0x1
#define ARB_GC_PURGE   0x2
typedef void arb_gc_fn(void *arg, int removed, const char *what, const char *path, uint64_t bytes);
ARB_EXTERN int arb_project_gc(arb_project *p, unsigned flags, arb_gc_fn *fn, void *arg,
			      uint64_t *bytes);
/*
 * The roots of the user's projects (every repository arborinth keeps state for), from the
 * per-user list $XDG_STATE_HOME/arborinth/projects (default ~/.local/state/arborinth/):
 * entries that no longer name a project of this user's are left out. Caller frees with
 * arb_projects_free. arb_projects_prune drops those entries from the list; *dropped
 * (optional): how many.
 */
ARB_EXTERN int arb_projects_list(char ***roots, size_t *n);
ARB_EXTERN void arb_projects_free(char **roots, size_t n);
ARB_EXTERN int arb_projects_prune(size_t *dropped);
/*
 * The disk budget of workspaces created, forked or mounted through p from now on, kept by
 * each for its later mounts: "500M", "10G" (K, M, G, T: powers of 1024), or "0"/"none" for
 * none. A workspace that never had one gets the default: what its layer uses plus half the
 * free space of the filesystem holding it, at each mount. -EINVAL for another string.
 */
ARB_EXTERN int arb_project_set_disk(arb_project *p, const char *size);

/* ---- workspaces -------------------------------------------------------------------------- */

typedef struct arb_workspace arb_workspace;

/* 0 when name can be a workspace's; -EINVAL with the rule it breaks (an input error). */
ARB_EXTERN int arb_workspace_name_check(const char *name);

#define ARB_WS_DIRTY	   0x1 /* create: carry the origin's uncommitted changes too */
#define ARB_WS_ALLOW_OTHER 0x2 /* create, mount: other users may use the view */
/*
 * create, fork, mount: how files created in the view are written from now on, for this and
 * later mounts: by the kernel straight into the upper layer (FUSE passthrough; needs root,
 * else the view falls back to the daemon and says why), or through the daemon (the default).
 */
#define ARB_WS_IO_PASSTHROUGH 0x4
#define ARB_WS_IO_DAEMON      0x8

/*
 * Creates workspace `name` at revision `rev` (NULL: HEAD) and mounts its view. -EEXIST when
 * the name is taken, also by a workspace of another checkout of the repository (a linked
 * worktree's: they share refs/arborinth/NAME); nothing is left behind on failure. *out may be
 * NULL when not wanted.
 */
ARB_EXTERN int arb_workspace_create(arb_workspace **out, arb_project *p, const char *name,
				    const char *rev, unsigned flags);
/*
 * Creates workspace `name` whose base is workspace `from`'s checkpoint `ckpt` ("N", "#N",
 * "base", "view", a revision of its repository; NULL: a checkpoint of its view taken now):
 * as instant as a create, independent of `from` afterwards. flags: ARB_WS_ALLOW_OTHER and
 * an ARB_WS_IO_* mode.
 */
ARB_EXTERN int arb_workspace_fork(arb_workspace **out, arb_project *p, const char *name,
				  const char *from, const char *ckpt, unsigned flags);
/* -ENOENT for an unknown workspace. A snapshot: accessors say what was true when got. */
ARB_EXTERN int arb_workspace_get(arb_workspace **out, arb_project *p, const char *name);
/* All workspaces, by name, into a new array (free with arb_workspace_list_free). */
ARB_EXTERN int arb_workspace_list(arb_workspace ***out, size_t *n, arb_project *p);
ARB_EXTERN void arb_workspace_list_free(arb_workspace **v, size_t n);
ARB_EXTERN void arb_workspace_free(arb_workspace *ws);

ARB_EXTERN const char *arb_workspace_name(const arb_workspace *ws);
ARB_EXTERN const char *arb_workspace_id(const arb_workspace *ws);
/* The commit it was created at (40 hex digits) and its branch (arborinth/NAME). */
ARB_EXTERN const char *arb_workspace_base_commit(const arb_workspace *ws);
ARB_EXTERN const char *arb_workspace_branch(const arb_workspace *ws);
/* Its folder, its view (root/workdir) and its home (the box's $HOME). */
ARB_EXTERN const char *arb_workspace_root(const arb_workspace *ws);
ARB_EXTERN const char *arb_workspace_workdir(const arb_workspace *ws);
ARB_EXTERN const char *arb_workspace_home(const arb_workspace *ws);
/* The box's /tmp and cache, the origin's remote for it (arborinth/NAME), its state. */
ARB_EXTERN const char *arb_workspace_tmp(const arb_workspace *ws);
ARB_EXTERN const char *arb_workspace_cache(const arb_workspace *ws);
ARB_EXTERN const char *arb_workspace_remote(const arb_workspace *ws);
ARB_EXTERN const char *arb_workspace_state(const arb_workspace *ws);
ARB_EXTERN int64_t arb_workspace_created_ns(const arb_workspace *ws);
/*
 * What arb_workspace_create has to tell of the new view (for example that some git LFS files
 * are shown as pointers for want of their objects), one line each; NULL when nothing, and
 * for a workspace got any other way.
 */
ARB_EXTERN const char *arb_workspace_notes(const arb_workspace *ws);
/* The mounted view's I/O path: "passthrough" or "daemon (why)"; NULL when not mounted. */
ARB_EXTERN const char *arb_workspace_io(const arb_workspace *ws);
/*
 * How the mounted view's requests reach its daemon: "io_uring (N queues, one per CPU)" or
 * "/dev/fuse (why not io_uring)"; NULL when not mounted.
 */
ARB_EXTERN const char *arb_workspace_transport(const arb_workspace *ws);
/* Nonzero when the view was mounted; the daemon's pid (0: not running). */
ARB_EXTERN int arb_workspace_mounted(const arb_workspace *ws);
ARB_EXTERN int64_t arb_workspace_daemon_pid(const arb_workspace *ws);

/* Mounts the view (a no-op when mounted); flags: ARB_WS_ALLOW_OTHER, an ARB_WS_IO_* mode. */
ARB_EXTERN int arb_workspace_mount(arb_project *p, const char *name, unsigned flags);
/* Unmounts the view and waits for its daemon; a no-op when not mounted. */
ARB_EXTERN int arb_workspace_unmount(arb_project *p, const char *name);
/* Unmounts and removes the workspace (its audit history stays readable). */
ARB_EXTERN int arb_workspace_delete(arb_project *p, const char *name);
/*
 * arb_workspace_delete (ARB_WS_DELETE_PURGE: arb_workspace_purge) that, without
 * ARB_WS_DELETE_FORCE, refuses with -ENOTEMPTY (a message counting them, nothing changed)
 * when the workspace has commits no ref of the origin reaches or files of its view not in
 * its branch's last commit. Always -EBUSY while a session of it runs, or while processes
 * keep its view busy (the message names them). arb_workspace_delete and _purge force.
 */
#define ARB_WS_DELETE_FORCE 0x1
#define ARB_WS_DELETE_PURGE 0x2
ARB_EXTERN int arb_workspace_remove(arb_project *p, const char *name, unsigned flags);
/* The running session of workspace name (*session 0: none). */
/*
 * The workspace `name` was forked from (`create --from FROM`): *from (caller frees with
 * arb_free), NULL when it was not made by a fork. -ENOENT (input) for no such workspace.
 */
ARB_EXTERN int arb_workspace_forked_from(char **from, arb_project *p, const char *name);
ARB_EXTERN int arb_workspace_session(int64_t *session, arb_project *p, const char *name);
/*
 * Deletes the workspace if it exists, then the audit history of every workspace ever called
 * name. -ENOENT when there is neither.
 */
ARB_EXTERN int arb_workspace_purge(arb_project *p, const char *name);

/*
 * The submodules of the workspace's base as its view shows them, in .gitmodules order (a
 * submodule before its own): path in the view, name in .gitmodules, the commit the base
 * records (hex), and state: "present" (the origin initialised it: its files are in the view,
 * `git submodule status` works in the box), "absent" (not initialised in the origin: an
 * empty directory), "refused" (a name that would leave .git/modules: an empty directory).
 * Free with arb_submodules_free.
 */
typedef struct arb_submodule {
	char *path, *name, *commit;
	const char *state;
} arb_submodule;
ARB_EXTERN int arb_workspace_submodules(arb_submodule **out, size_t *n, arb_project *p,
					const arb_workspace *ws);
ARB_EXTERN void arb_submodules_free(arb_submodule *v, size_t n);

/* ---- boxes ------------------------------------------------------------------------------- */

typedef struct arb_box arb_box;

/*
 * A box specification for workspace `ws_name`: the default profile (bubblewrap, no network,
 * the workspace's home, tmp and cache) that the setters below extend. Inputs are checked
 * when the box is built (arb_box_explain, arb_box_run): a bad one fails there with
 * arb_error_is_input() set and nothing run.
 */
ARB_EXTERN int arb_box_new(arb_box **out, arb_project *p, const char *ws_name);
ARB_EXTERN void arb_box_free(arb_box *b);

/* "bubblewrap" (the default) or "none" (run on the host, no isolation: for comparison). */
ARB_EXTERN int arb_box_set_jail(arb_box *b, const char *jail);
/* A mount: TYPE:DEST or TYPE:SRC:DEST, TYPE ro, rw, overlay, tmpfs, dev or proc. */
ARB_EXTERN int arb_box_add_mount(arb_box *b, const char *spec);
/* A variable: NAME=VALUE, or NAME for the host's value. */
ARB_EXTERN int arb_box_add_env(arb_box *b, const char *var);
/* Nonzero: share the host's network (the proxy then listens on the host's loopback). */
ARB_EXTERN int arb_box_set_network(arb_box *b, int share);
/* A credential-proxy backend: NAME[=URL][,OPT=VALUE...], e.g. "anthropic". */
ARB_EXTERN int arb_box_add_backend(arb_box *b, const char *spec);
/* The real key of the one backend, read from FILE on the host. */
ARB_EXTERN int arb_box_set_api_key_file(arb_box *b, const char *file);
/* HOST:PORT the box may open CONNECT tunnels to (without network sharing). */
ARB_EXTERN int arb_box_allow_host(arb_box *b, const char *host_port);
/* A toolchain grant (node, python, rust, go) and a bind file, in the order added. */
ARB_EXTERN int arb_box_add_grant(arb_box *b, const char *name);
ARB_EXTERN int arb_box_add_binds_file(arb_box *b, const char *path);
/* Nonzero: only the PATH entries under $HOME, not what their tool managers need. */
ARB_EXTERN int arb_box_set_no_tool_managers(arb_box *b, int off);
/*
 * A limit: "timeout" (30s, 10m, 2h, 1d), "memory" (512M, 2G), "cpus" (0.5, 2), "pids" (N),
 * "inotify" (N). Without pids and inotify the box gets a default budget that leaves its user
 * a quarter of the user's own limits.
 */
ARB_EXTERN int arb_box_set_limit(arb_box *b, const char *limit, const char *value);
/*
 * The command's standard input, output and error: a descriptor of the caller's (a pipe, a
 * file, a terminal) or -1 to inherit the caller's own. The library does not close them.
 */
ARB_EXTERN int arb_box_set_stdio(arb_box *b, int in_fd, int out_fd, int err_fd);

/* The resolved box as text (mounts with their reasons, environment, argv); runs nothing. */
ARB_EXTERN int arb_box_explain(char **out, arb_box *b, char *const argv[]);
/*
 * The credential proxy's backends of the last arb_box_explain as a JSON array (each: name,
 * origin "--backend" or "--binds FILE:LINE:COL", port, about {upstream, instance, token or
 * credential source kind...}, env ["NAME=VALUE"...], key_var), "[]" without any; NULL before
 * an explain. Never a credential. Borrowed: valid until the next explain or arb_box_free.
 */
ARB_EXTERN const char *arb_box_explain_backends(const arb_box *b);

struct arb_run_result {
	int exit_status;       /* the command's (128+N for signal N; 124 after a timeout) */
	int timed_out;	       /* the timeout stopped the box (arb_error_last() says how) */
	int64_t oom_kills;     /* processes the memory limit's OOM killer ended */
	int64_t forks_refused; /* forks the pids limit refused */
	int64_t session;       /* the session's number in the audit log (0: none) */
	int64_t memory_limit;  /* the limits the box ran with (bytes, processes); 0: none */
	int64_t pids_limit;
};

/*
 * Runs argv (argv[0] searched on the box's PATH) in the box and waits for it: mounts the
 * view when it is down, starts the proxy for the backends, records a session in the audit
 * log with a checkpoint at its start and end. 0 when the command ran, whatever its status
 * (in *res); negative errno when the box could not be built or started.
 *
 * Every run is a session of its own, its writes linked to it by the box's pid namespace:
 * threads of one process may run boxes at once (up to 64; each thread with a project
 * handle of its own), even in one workspace. Signals the process gets (SIGTERM, SIGINT, ...)
 * go to every box still running. Under jail "none" there is no box: such runs of one process
 * at the same time cannot be told apart in the audit.
 */
ARB_EXTERN int arb_box_run(struct arb_run_result *res, arb_box *b, char *const argv[]);

/* A built-in grant (arb_box_add_grant): its name, a line on it, and what it adds. */
struct arb_grant {
	const char *name;
	const char *summary;
	const char *const *items; /* human-readable entries, NULL-terminated */
};
/* The built-in grants; static, never freed. */
ARB_EXTERN const struct arb_grant *arb_grants(size_t *n);

/* ---- coding agents ------------------------------------------------------------------------ */

/*
 * A coding agent's client (Claude Code, Codex, OpenCode) in a box over a workspace, as
 * `arborinth claude|codex|opencode` runs it: the client found on the host and bound read-only,
 * its API calls through the credential proxy (a key, or the host's login, swapped on the
 * host), its config and state in the workspace's home, the host's settings and named MCP
 * servers imported.
 */
typedef struct arb_agent arb_agent;
/* client: "claude", "codex" or "opencode"; the workspace is created when missing. */
ARB_EXTERN int arb_agent_new(arb_agent **out, arb_project *p, const char *client,
			     const char *ws_name);
ARB_EXTERN void arb_agent_free(arb_agent *a);
/*
 * An option, as the launchers' command line names them without the dashes: rev, client,
 * model, upstream, api-key-file, auth (login, api-key or none), token-url, provider
 * (opencode), timeout, memory, cpus, pids, inotify, and, repeatable, grant, binds, mount, env; with
 * value NULL: net, no-tool-managers, no-upstream-auth. -EINVAL (input) for a bad one.
 */
ARB_EXTERN int arb_agent_set(arb_agent *a, const char *option, const char *value);
/* An argument for the client, after those the launch puts first. */
ARB_EXTERN int arb_agent_add_arg(arb_agent *a, const char *arg);
/*
 * Resolves the launch: the client on the host, its credential (read and checked), the host's
 * settings and MCP servers, and the workspace (created when missing, unless explain: then a
 * missing one is an input error). Nothing runs.
 */
ARB_EXTERN int arb_agent_prepare(arb_agent *a, int explain);
/* What the prepared launch says: "credential: ..." (never a secret) and "mcp: ..." lines. */
ARB_EXTERN const char *const *arb_agent_notes(const arb_agent *a, size_t *n);
/* The resolved box as text, its command the client's argv (prepared with explain). */
ARB_EXTERN int arb_agent_explain(char **out, arb_agent *a);
/* Runs the client in its box and waits (prepared without explain), as arb_box_run. */
ARB_EXTERN int arb_agent_run(struct arb_run_result *res, arb_agent *a);
/*
 * After arb_agent_run: the client arguments that resume the session the run wrote ("--resume
 * ID" for Claude Code, "resume ID" for Codex) into *out (free with arb_free) and 1, or NULL
 * and 0 when there is none.
 */
ARB_EXTERN int arb_agent_resume_args(char **out, const arb_agent *a);

/* ---- the audit log ----------------------------------------------------------------------- */

typedef struct arb_audit_iter arb_audit_iter;

#define ARB_AUDIT_FS   0x1 /* file system operations (and "gap" rows) */
#define ARB_AUDIT_EXEC 0x2 /* sessions: "exec", "exit", "limit" */
#define ARB_AUDIT_NET  0x4 /* the proxy's "request" and "tunnel" rows */

struct arb_audit_filter {
	int64_t since_ns, until_ns; /* 0: unbounded */
	const char *path_glob;	    /* SQLite GLOB on path or path2; NULL: any */
	unsigned kinds;		    /* ARB_AUDIT_* mask; 0: all */
	int64_t session;	    /* 0: any */
	int failed;		    /* only failed operations and non-zero exits */
	int all;		    /* include .git internals */
	const char *const *ops;	    /* NULL-terminated operation names; NULL: any */
	int64_t after_seq;	    /* only rows with a larger seq (following a timeline) */
	int64_t upto_seq;	    /* 0, or only rows with seq up to this */
	int by_seq;		    /* order by seq rather than by time */
	int no_sync;		    /* do not make a mounted view record its pending writes first */
};

/* One row; strings valid until the next arb_audit_next() or arb_audit_free(). */
struct arb_audit_row {
	int64_t seq, time_ns;
	const char *kind, *op;	   /* "fs"/"exec"/"net"; "write", "exec", "request", ... */
	const char *path, *path2;  /* NULL when not applicable */
	int result;		   /* errno (fs), exit status ("exit"), 0/1 (net) */
	int64_t pid;		   /* 0: unknown */
	const char *comm, *exe;	   /* NULL: unknown */
	int64_t session;	   /* 0: none */
	int64_t size, count;	   /* -1 / 0 when not applicable */
	int64_t off_lo, off_hi;	   /* -1: not applicable */
	const char *argv_json;	   /* "exec" rows: the session's argv as JSON */
	const char *method, *host; /* "net" rows */
	const char *decision;	   /* "net" rows: allowed or refused */
	int64_t status;		   /* "net" rows: the HTTP status; -1 otherwise */
	const char *jail;	   /* "exec" rows: the session's jail */
	int64_t mode, mtime_ns;	   /* -1: not applicable ("unattributed" rows: mtime) */
	const char *backend;	   /* "net" rows: the proxy backend */
	const char *reason;	   /* "net" rows: why allowed or refused */
	int64_t port, bytes_up, bytes_down, duration_ns; /* "net" rows; -1 otherwise */
};

/*
 * The timeline of workspace `ws_name` (a deleted one's too, while its history is kept),
 * oldest first. f: NULL for everything but .git internals. -ENOENT (an input error) when no
 * workspace of that name ever had history.
 */
ARB_EXTERN int arb_audit_open(arb_audit_iter **out, arb_project *p, const char *ws_name,
			      const struct arb_audit_filter *f);
/* 1 with *row set, 0 at the end, negative errno on failure. */
ARB_EXTERN int arb_audit_next(arb_audit_iter *it, const struct arb_audit_row **row);
ARB_EXTERN void arb_audit_free(arb_audit_iter *it);
/*
 * Whether workspace `ws_name` has a history: 0 with *deleted_ns 0 (the live workspace) or
 * its deletion time; -ENOENT (input) when no workspace of that name ever had one.
 */
ARB_EXTERN int arb_audit_history(int64_t *deleted_ns, arb_project *p, const char *ws_name);
/* The highest seq in the project's audit log (0 when empty): where to follow from. */
ARB_EXTERN int arb_audit_seq_max(int64_t *out, arb_project *p);
/* Nonzero for an operation name the timeline knows ("write", "exec", "request", ...). */
ARB_EXTERN int arb_audit_op_known(const char *op);
/*
 * A time for filters: relative ("30s", "10m", "2h", "3d", "1w" back from now), ISO 8601
 * ("2024-05-01T12:00:00Z"), local "YYYY-MM-DD[ HH:MM[:SS]]" or "@SECONDS". -EINVAL (input).
 */
ARB_EXTERN int arb_time_parse(int64_t *out_ns, const char *text);

/*
 * What the rows of a filter did to each path (fs rows, in timeline order): "added",
 * "deleted", "renamed" (renamed_to: the last destination) or "modified", with the number of
 * operations, bytes written and first and last time. Entries sorted by path.
 */
struct arb_audit_summary_entry {
	const char *path;
	const char *status;
	const char *renamed_to; /* NULL unless renamed */
	int64_t ops, bytes, first_ns, last_ns;
};
typedef struct arb_audit_summary arb_audit_summary;
ARB_EXTERN int arb_audit_summary_open(arb_audit_summary **out, arb_project *p, const char *ws_name,
				      const struct arb_audit_filter *f);
/* The entries; borrowed, valid while s lives. */
ARB_EXTERN size_t arb_audit_summary_entries(const arb_audit_summary *s,
					    const struct arb_audit_summary_entry **out);
ARB_EXTERN void arb_audit_summary_free(arb_audit_summary *s);

/* Tamper evidence: the hash chain of a workspace's timeline, and bundles exported from it. */
struct arb_audit_verify {
	int ok;
	int64_t rows;	     /* rows checked (all of them when ok) */
	char head[65];	     /* hex hash of the last row checked ("" when none) */
	int64_t broken_seq;  /* the first broken link, 0 when ok or not tied to a row */
	char reason[200];    /* why it is broken */
	char workspace[128]; /* bundles: the workspace name recorded in it */
};
/* Checks the workspace's chain in the database; 0 whether or not it verifies (res->ok). */
ARB_EXTERN int arb_audit_verify(struct arb_audit_verify *res, arb_project *p, const char *ws_name);
/* Checks a bundle file; -EINVAL (input) for a file that is not one. */
ARB_EXTERN int arb_audit_verify_bundle(struct arb_audit_verify *res, const char *path);
/*
 * Writes the workspace's chain as a bundle (JSON lines: header, rows with hashes, trailer)
 * onto fd, checking it as it goes; -EBADMSG (res filled) when the chain is broken.
 */
ARB_EXTERN int arb_audit_export(struct arb_audit_verify *res, arb_project *p, const char *ws_name,
				int fd);

/* ---- checkpoints ------------------------------------------------------------------------- */

struct arb_checkpoint {
	unsigned seq;	 /* N of refs/arborinth/checkpoints/N */
	char commit[41]; /* hex */
	char tree[41];	 /* hex: the view's tree */
	int64_t time_ns;
	char kind[16];	   /* manual, start, end (of a session), rewind */
	int64_t session;   /* 0: none */
	char message[256]; /* the first line, cut at 255 bytes */
	size_t hashed;	   /* arb_checkpoint_create: files of the layer hashed now ... */
	size_t reused;	   /* ... and known from earlier checkpoints */
};

/*
 * Records the view of workspace `ws_name` as it is now. message: one line of at most 1000
 * bytes, NULL for "checkpoint".
 */
ARB_EXTERN int arb_checkpoint_create(struct arb_checkpoint *out, arb_project *p,
				     const char *ws_name, const char *message);
/* All checkpoints, oldest first, into a new array (free with arb_free). */
ARB_EXTERN int arb_checkpoint_list(struct arb_checkpoint **out, size_t *n, arb_project *p,
				   const char *ws_name);
/* Session N's checkpoint at its "start" or "end" (kind). -ENOENT when it has none. */
ARB_EXTERN int arb_checkpoint_of_session(struct arb_checkpoint *out, arb_project *p,
					 const char *ws_name, int64_t session, const char *kind);
/*
 * The view becomes checkpoint `to` ("N", "#N", "base", or a revision of the workspace's
 * repository), or with `to` NULL the state before session `before_session` began. A
 * checkpoint of the state before is taken first (in *undo when not NULL), and one audit row
 * records the rewind. -EBUSY while a session of the workspace runs.
 */
ARB_EXTERN int arb_rewind(struct arb_checkpoint *undo, arb_project *p, const char *ws_name,
			  const char *to, int64_t before_session);
/*
 * Paths (relative to the workdir; files, symlinks, whole directories) get back what they had
 * at `to` (or before session `before_session`, with `to` NULL); a path that did not exist
 * then is removed. Written through the view, so the audit records each change.
 */
ARB_EXTERN int arb_restore(arb_project *p, const char *ws_name, const char *to,
			   int64_t before_session, const char *const *paths, size_t n);

/* ---- diffs ------------------------------------------------------------------------------ */

/*
 * States of a workspace are named as for arb_rewind: "base" (the commit it was made from),
 * "view" (now, uncommitted and untracked files included), a checkpoint "N" or "#N", or a
 * revision of its repository (its branch, commit or tree ids).
 */
struct arb_diffstat {
	size_t files, insertions, deletions;
};
ARB_EXTERN int arb_diffstat(struct arb_diffstat *out, arb_project *p, const char *ws_name,
			    const char *from, const char *to);
enum arb_diff_format { ARB_DIFF_PATCH, ARB_DIFF_NAME_STATUS, ARB_DIFF_STAT };
/* git's diff from `from` to `to` (renames found), limited to paths when n > 0, onto fd. */
ARB_EXTERN int arb_diff(arb_project *p, const char *ws_name, const char *from, const char *to,
			const char *const *paths, size_t n, enum arb_diff_format fmt, int fd);
/*
 * arb_diff with flags: ARB_DIFF_TERMINAL escapes the content's control characters (arb_diff
 * sets it when fd is a terminal), ARB_DIFF_COLOR adds git's colours.
 */
#define ARB_DIFF_TERMINAL 0x1u
#define ARB_DIFF_COLOR	  0x2u
ARB_EXTERN int arb_diff_flags(arb_project *p, const char *ws_name, const char *from, const char *to,
			      const char *const *paths, size_t n, enum arb_diff_format fmt,
			      unsigned int flags, int fd);
/*
 * The same diff's files into a new array of *n (free with arb_diff_files_free): status is
 * git's --name-status letter (A, D, M, R, C, T), old_path set for R and C only, the lines
 * added and removed (0 for a binary file).
 */
struct arb_diff_file {
	char status;
	int binary;
	char *path, *old_path;
	size_t insertions, deletions;
};
ARB_EXTERN int arb_diff_files(struct arb_diff_file **out, size_t *n, arb_project *p,
			      const char *ws_name, const char *from, const char *to,
			      const char *const *paths, size_t n_paths);
ARB_EXTERN void arb_diff_files_free(struct arb_diff_file *v, size_t n);

/* The patch from workspace a's view to workspace b's (both now), onto fd. */
ARB_EXTERN int arb_diff_between(arb_project *p, const char *a, const char *b, int fd);

/* ---- bringing work home ----------------------------------------------------------------- */

enum arb_merge_kind { ARB_MERGE_UP_TO_DATE, ARB_MERGE_FAST_FORWARD, ARB_MERGE_COMMIT };
struct arb_merge {
	enum arb_merge_kind kind;
	char branch[256]; /* the origin's branch */
	char commit[41];  /* its head now */
};
/*
 * Merges the workspace's branch into the origin's current branch: a fast-forward or a merge
 * commit. -EEXIST listing the conflicting paths, -EBUSY when the origin's uncommitted changes
 * are in the way; either way nothing changes. Runs no hooks or config of the workspace.
 */
ARB_EXTERN int arb_merge(struct arb_merge *out, arb_project *p, const char *ws_name);
/*
 * Applies the workspace's changes against its base (committed and not) to the origin's
 * working tree as unstaged changes; *files: how many files changed. Checked whole first:
 * -EEXIST and nothing written when an origin file is not as the base has it.
 */
ARB_EXTERN int arb_apply(size_t *files, arb_project *p, const char *ws_name);
/*
 * arb_merge and arb_apply with flags. Both refuse a stale workspace (-EEXIST naming the
 * paths): one whose base is older than the origin's HEAD when the origin changed since a
 * path the workspace changes. ARB_HOME_CHECK: every check made, nothing changed (merge: in
 * memory, without looking at the origin's uncommitted changes); *out / *files tell what
 * would be done.
 */
#define ARB_HOME_CHECK 0x1
ARB_EXTERN int arb_merge_ext(struct arb_merge *out, arb_project *p, const char *ws_name,
			     unsigned flags);
ARB_EXTERN int arb_apply_ext(size_t *files, arb_project *p, const char *ws_name, unsigned flags);

/* ---- comparing workspaces --------------------------------------------------------------- */

/*
 * Workspaces of one origin (1 to 32) against their common base (the merge base of their
 * base commits), as one JSON object in *json (free with arb_free):
 *   {"base": hex, "workspaces": [{"name", "base", "head", "files": [{"path", "status"
 *   (A|M|D|R), "old_path" (R only), "added", "deleted"}], "uncommitted": [{"path",
 *   "status"}], "sessions": [{"id", "command", "argv", "exit", "started_ns", "duration_ms",
 *   "tests", "test"}], "tests": [{"command", "test", "exit", "session"}], "requests":
 *   {"allowed", "refused", "refusals": [{"host", "path", "reason"}]}}], "overlaps": [{"path",
 *   "workspaces": [names], "conflict"}]}
 * files: the view (committed and not) against the common base; uncommitted: the view against
 * the branch's head; overlaps: paths more than one changed, conflict when merging the views
 * in memory conflicts there. A string a box chose that is not UTF-8 is {"hex": "..."}.
 * "exit" and "duration_ms" are null while a session runs. Nothing is changed. -EINVAL (input)
 * for workspaces without a common base, -ENOENT for an unknown one.
 */
ARB_EXTERN int arb_compare(char **json, arb_project *p, const char *const *names, size_t n);

/*
 * Exports the workspace's branch into its export repository (the one the origin's remote
 * arborinth/NAME points at, so `git fetch arborinth/NAME` gets it): the gitdir the box wrote
 * is checked and the branch's objects copied from the workspace's own store only. commit: the
 * branch's head (41 bytes); *objects: objects copied. -EPERM/-EINVAL/-ELOOP with one line
 * naming what the box planted; the export then stays as it was.
 */
ARB_EXTERN int arb_export(char commit[41], size_t *objects, arb_project *p, const char *ws_name);

/* ---- doctor ------------------------------------------------------------------------------ */

/* How a check came out: there, there with less (arborinth works around it), or not there. */
enum arb_check_status { ARB_CHECK_OK = 0, ARB_CHECK_DEGRADED = 1, ARB_CHECK_MISSING = 2 };
struct arb_check {
	const char *name; /* "bubblewrap", "/dev/fuse", "limits", "claude", ... (static) */
	enum arb_check_status status;
	int required; /* missing: workspaces or boxes cannot work on this machine */
	char *detail; /* what was found, one line (never a credential) */
	char *fix;    /* the one line that mends it; NULL when ok */
};
/*
 * Checks what arborinth needs of this machine for the project at `workdir` (NULL: the current
 * directory; outside a repository its file system check is skipped): bubblewrap and user
 * namespaces (by making a box), /dev/fuse and fusermount3, allow_other, cgroup limits, FUSE
 * passthrough and io_uring, the project's file system, the agent clients and whether a
 * credential is present. Changes nothing. *out: an array of *n checks, freed with
 * arb_checks_free(). -ENOMEM.
 */
ARB_EXTERN int arb_doctor(struct arb_check **out, size_t *n, const char *workdir);
ARB_EXTERN void arb_checks_free(struct arb_check *v, size_t n);

#ifdef __cplusplus
}
#endif

#endif
