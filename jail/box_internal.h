/* jail/box_internal.h: struct jail_box and what the box's files (box*.c, explain, run) share. */
#ifndef ARB_JAIL_BOX_INTERNAL_H
#define ARB_JAIL_BOX_INTERNAL_H

#include "jail/jail_internal.h"

#include <pthread.h>

struct jail_box {
	/* Inputs, normalised. */
	char *ws_name, *ws_root, *workdir, *tmp, *cache_src, *home_src;
	char *origin_root, *origin_objects, *objects_view, *state_dir;
	char *origin_store; /* NULL: none */
	bool net;
	struct jail_strv host; /* copy of the host environment */
	/* Resolved from the host. */
	char *home;	       /* $HOME: the path, in the box as on the host */
	char *home_real;       /* its real path on the host */
	char *cache_dest;      /* $XDG_CACHE_HOME in the box */
	char *runtime_dir;     /* $XDG_RUNTIME_DIR in the box */
	char *bwrap;	       /* absolute */
	char *box_init;	       /* the box-init program, real path */
	const char *init_path; /* where the box runs it: JAIL_BOX_INIT_PATH, or box_init */
	/* The profile. */
	struct jail_mounts mounts;
	struct jail_strv env;	   /* "NAME=VALUE", sorted once finished */
	struct jail_strv withheld; /* host variable names not passed, sorted once finished */
	struct jail_strv notes;	   /* decisions --explain reports (skipped PATH entries ...) */
	struct jail_strv inputs;   /* more inputs --explain lists ("LABEL      text") */
	struct jail_strv hooks;	   /* box-init options: "--NAME", "ARG", ... */
	struct jail_strv command;
	struct jail_strv hidden; /* walls.c: credential paths (real) and why, in pairs */
	int64_t timeout_ms;	 /* 0: none */
	int stdio[3];		 /* the command's stdin, stdout, stderr; -1: inherited */
	struct jail_limits limits;
	bool pids_default; /* limits.pids is the default budget, not --pids (cgroup.c) */
	char *cg_base[3];  /* per controller of cgroup.c: the cgroup the box's goes below */
	/* diskguard.c: bytes tmp, cache and home may hold; 0: none */
	int64_t disk_budget;
	/* Finished. */
	struct jail_strv argv;
	bool finished;
};

/* diskguard.c: the guard of the box's tmp, cache and home while it runs. */
enum { JAIL_DISK_BUDGET = 1, JAIL_DISK_RESERVE = 2 };
struct jail_diskguard {
	const char *dirs[3]; /* tmp, cache, home */
	int64_t floor[3];    /* the free space below which each one's filesystem trips it */
	int64_t budget;	     /* 0: the reserve only */
	void (*stop_box)(void *ctx);
	void *stop_ctx;
	int stop[2];
	pthread_t thread;
	bool running;
	int tripped; /* 0, JAIL_DISK_BUDGET or JAIL_DISK_RESERVE; read once stopped */
	int dir;     /* JAIL_DISK_RESERVE: the folder whose filesystem */
	int64_t n;   /* the reserve, or what the three held */
	bool late;   /* found by the last look, once the command had ended */
	int64_t base, next_walk, next_below; /* the first look's usage; when to walk again */
};
int jail_diskguard_start(struct jail_diskguard *g, const struct jail_box *b,
			 void (*stop_box)(void *ctx), void *ctx) ARB_MUST_CHECK;
void jail_diskguard_stop(struct jail_diskguard *g);
/*
 * The largest file the box may write (RLIMIT_FSIZE, set before bwrap runs): what one file
 * can take before a disk falls to half its reserve (half what is free when it is below
 * already), so that one fast write cannot outrun the guard's poll; 0: no cap.
 */
int64_t jail_diskguard_fsize(const struct jail_box *b);
/* The stopped box's message: -ENOSPC. */
int jail_diskguard_error(const struct jail_diskguard *g);

/* Adds a non-user mount; src (binds) is resolved to its real path, dest normalised. */
int jail_box_add(struct jail_box *b, enum jail_mount_type type, enum jail_mount_origin origin,
		 unsigned flags, unsigned perms, const char *src, const char *dest,
		 const char *protects, const char *why) ARB_MUST_CHECK;
/*
 * walls.c: the box's root, an allow-list: an empty tmpfs (read-only once built) with the
 * host's system folders read-only (symlinks as symlinks). Part of the defaults.
 */
int jail_box_root(struct jail_box *b) ARB_MUST_CHECK;
/*
 * walls.c, at finish (before sorting): empty mounts over every place the box would show a
 * hidden credential (jail_box_hide) or a host path socket through a bind; the notes that
 * say what the root is made of.
 */
int jail_box_walls(struct jail_box *b) ARB_MUST_CHECK;
/* walls.c: masks host path `real` wherever one of the first n mounts (binds) shows it. */
int jail_box_mask(struct jail_box *b, size_t n, const char *real, const char *why) ARB_MUST_CHECK;
/* walls_root.c: for a caller that is root, masks what only root may read in /etc and /opt. */
int jail_box_root_only(struct jail_box *b, size_t n) ARB_MUST_CHECK;
/* walls.c: whether the box shows host path `real` at that path, as the host has it. */
bool jail_box_shows(const struct jail_box *b, const char *real);
/* box_defaults.c: the default mounts and guards. */
int jail_box_defaults(struct jail_box *b) ARB_MUST_CHECK;
/* box_env.c: the environment from the host allowlist, then sorted when finishing. */
int jail_box_env_defaults(struct jail_box *b) ARB_MUST_CHECK;
int jail_box_env_finish(struct jail_box *b) ARB_MUST_CHECK;
/* box_defaults.c: calls fn for each entry of the host's $PATH, in order, until one fails. */
int jail_box_path_each(struct jail_box *b,
		       int (*fn)(struct jail_box *b, const char *entry)) ARB_MUST_CHECK;
/* box_defaults.c: the mount whose hidden host path `real` would reveal (but $HOME's), or NULL. */
const struct jail_mount *jail_box_path_conflict(const struct jail_box *b, const char *real);

/*
 * toolmgr.c: for each PATH entry under $HOME that was mounted, what its tool manager needs
 * (read-only mounts, variables) and what its programs lead to (toolscan.c). After the
 * environment defaults. Each mount and variable is explained with the entry it is for.
 */
int jail_box_tools(struct jail_box *b) ARB_MUST_CHECK;
/*
 * Mounts `path` read-only at its path in the box (a replaceable default, listed with
 * `why`) when it exists below $HOME and is not shown already; refused with a note when it is
 * $HOME, a credential path, a folder holding one, or would reveal what a mount hides.
 */
int jail_box_tool_mount(struct jail_box *b, const char *path, const char *why) ARB_MUST_CHECK;
/* toolscan.c: links and script interpreters of PATH entry `norm` (real path `real`). */
int jail_box_tool_scan(struct jail_box *b, const char *norm, const char *real) ARB_MUST_CHECK;
/* `path` with $HOME written as "~". Caller frees; NULL on ENOMEM. */
char *jail_box_tilde(const struct jail_box *b, const char *path);

/* ---- cgroups (cgroup.c) ---------------------------------------------------------------- */

/* The box's cgroups for one run, per controller (NULL: no limit). */
struct jail_cgroups {
	char *dir[3], *procs[3];
	int64_t pids_max; /* written to the pids cgroup; 0: none */
};

/* Before the fork: creates the cgroups and writes the limits. */
int jail_cgroups_create(const struct jail_box *b, struct jail_cgroups *cg) ARB_MUST_CHECK;
/* In the forked child: joins them (before any namespace); on failure one line, exit 125. */
void jail_cgroups_enter(const struct jail_cgroups *cg);
/* After the box: the counters, then removal. */
void jail_cgroups_stats(const struct jail_cgroups *cg, struct jail_run_stats *st);
void jail_cgroups_clear(struct jail_cgroups *cg);

/*
 * Writes text into dir/file (cgroup.c; both hierarchies' limit files): 0, or -errno with a
 * message naming the file; a missing file is fine when optional.
 */
int jail_cg_write(const char *dir, const char *file, const char *text,
		  bool optional) ARB_MUST_CHECK;

/* ---- cgroup v2 (cgroup2.c) ---------------------------------------------------------- */

/* Whether dir is on the unified hierarchy. */
bool jail_cg2_is(const char *dir);
/*
 * The cgroup a box's cgroup for `controller` goes below on cgroup v2 (*out, caller frees):
 * our cgroup's parent (the root's when we are in the root), when it offers the controller and
 * this user may write it. Changes nothing. -ENOTSUP/-EACCES with a message naming `option`.
 */
int jail_cg2_base(const char *controller, const char *option, char **out) ARB_MUST_CHECK;
/* Switches controller on for base's children when it is not; -errno with a message. */
int jail_cg2_prepare(const char *base, const char *controller, const char *option) ARB_MUST_CHECK;
/*
 * As jail_cg2_base, and where our parent is not writable: a transient scope with Delegate=yes
 * from the systemd user manager (jail_cg2_scope), this process moved into its leaf
 * "supervisor", and the scope as *out. Moves this process; -errno with a message.
 */
int jail_cg2_scope_base(const char *controller, const char *option, char **out) ARB_MUST_CHECK;
/* cg_base of a limit that goes into a user manager's scope, made when the box runs. */
#define JAIL_CG_SCOPE "a scope of the systemd user manager (made when the box runs)"

/* ---- the systemd user manager's scope (cgscope.c) -------------------------------------- */

/* Whether a user manager may answer: its private socket, or the user bus, is there. */
bool jail_cg2_manager(void);
/*
 * Asks the user manager for a transient scope with Delegate=yes holding this process and
 * waits until this process is in it. 0, or -errno with a message naming `option`.
 */
int jail_cg2_scope(const char *option) ARB_MUST_CHECK;

/* Writes the v2 limit file(s) of controller in dir (memory: bytes, pids: count, cpu: milli). */
int jail_cg2_write_limit(const char *dir, const char *controller, int64_t value) ARB_MUST_CHECK;

/* True when the box gets a pids cgroup (--pids, or the default budget where usable). */
bool jail_cgroups_pids(const struct jail_box *b);

/* ---- the budget of per-user counts (budget.c) ------------------------------------------ */

/* What the box may hold of its user's processes and inotify instances; made before the fork. */
struct jail_budget {
	int64_t nproc, inotify;		  /* the box's RLIMIT_NPROC and max_inotify_instances */
	int64_t user_nproc, user_inotify; /* the user's limits they are below; -1: none */
	int64_t box_nproc;		  /* --pids: the box's own (box-init); 0: none */
	bool inotify_given;		  /* set by --inotify */
	bool root;
	char uid_map[256], gid_map[256], inotify_text[24];
	int ns_fd; /* root: the box's user namespace (made by a helper); -1: none */
};

/* Where the child keeps ns_fd until it joins the namespace (then closed): after the fixed ones. */
#define JAIL_FD_USERNS (JAIL_FD_GO + 1)

/* The box's budget from its limits and the host's: the defaults leave the user a quarter. */
int jail_budget_resolve(const struct jail_box *b, struct jail_budget *out) ARB_MUST_CHECK;
/* Before the fork (root): the user namespace the child joins. Release it after the box. */
int jail_budget_prepare(struct jail_budget *bud) ARB_MUST_CHECK;
void jail_budget_release(struct jail_budget *bud);
/*
 * In the forked child, called before the overlays' namespaces (RLIMIT_NPROC; a user's box
 * namespace) and after them (root's box joins its namespace, ns_fd moved to JAIL_FD_USERNS
 * by jail_budget_keep_fd). On failure one line, exit 125.
 */
void jail_budget_enter(const struct jail_budget *bud, bool after_overlays);
/* In the forked child: puts ns_fd at JAIL_FD_USERNS; returns the first descriptor to close. */
int jail_budget_keep_fd(const struct jail_budget *bud);
/* --explain's line. */
void jail_budget_explain(FILE *f, const struct jail_box *b);

/* ---- overlays (overlay.c) ------------------------------------------------------------ */

/* At finish: each overlay's folder in the workspace (src = DIR/merged, upper = DIR/upper). */
int jail_box_overlays_prepare(struct jail_box *b) ARB_MUST_CHECK;

/* What the child mounts before it execs bwrap, made before the fork. */
struct jail_overlays {
	struct jail_strv targets, options, labels; /* one per overlay */
	bool userns;				   /* not root: a user namespace too */
	char uid_map[32], gid_map[32];
};

/* Creates each overlay's upper, work and merged folders and its mount options. */
int jail_overlays_plan(const struct jail_box *b, struct jail_overlays *o) ARB_MUST_CHECK;
void jail_overlays_clear(struct jail_overlays *o);
/*
 * In the forked child, before exec: a private mount namespace (and user namespace) with the
 * overlays mounted. Does nothing without overlays; on failure prints one line and exits
 * JAIL_EXIT_SETUP.
 */
void jail_overlays_enter(const struct jail_overlays *o);

#endif
