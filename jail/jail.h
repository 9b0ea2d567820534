/*
 * jail: running a command for a workspace.
 *
 * Backends: `none` runs the command on the host with no isolation; `bubblewrap` runs it in a
 * box. A box is one object, struct jail_box: built from the workspace's paths and the host's
 * environment (the default profile), extended with user mounts and variables, then
 * finished. --explain (jail_box_explain) and the launch (jail_box_run) read that same
 * finished object, so what is printed is what runs.
 *
 * The default box: every namespace unshared (network too unless `net`), all capabilities
 * dropped, no new privileges, a seccomp filter (libseccomp, exported as BPF to bwrap), an
 * allow-list root (the host's system folders read-only, credentials and host sockets masked:
 * walls.c), the workdir read-write at its own path, tmp/cache/home from the workspace,
 * guards over $HOME, /run, the origin checkout and its state directory, and an environment
 * rebuilt from an allowlist. Inside, `arborinth __box-init` is pid 1: it starts the relay
 * hooks, runs the command, forwards signals, reaps zombies and passes the exit status out.
 */
#ifndef ARB_JAIL_H
#define ARB_JAIL_H

#include <stdbool.h>

#include "util/util.h"

/*
 * Runs argv[0] (searched on PATH) with argv in directory cwd and waits; stdio: the
 * command's stdin, stdout and stderr (-1 each, or stdio NULL: inherited).
 * *exit_status receives the shell-style status (128+N when killed by signal N); 127 when
 * the program could not be started (with a message on stderr from the child, as shells do).
 * While the child runs, SIGTERM/SIGHUP sent to us are forwarded; SIGINT/SIGQUIT are ignored
 * here (the terminal delivers them to the child itself).
 */
int jail_none_run(const char *cwd, char *const argv[], const int stdio[3],
		  int *exit_status) ARB_MUST_CHECK;
/*
 * In a child about to exec: puts the descriptors of stdio (-1: keep) at 0, 1 and 2. -errno.
 * Safe when one of them already is 0, 1 or 2, or two are the same.
 */
int jail_stdio_apply(const int stdio[3]);

/* ---- the bubblewrap box ----------------------------------------------------------------- */

enum jail_mount_type {
	JAIL_MOUNT_RO,	  /* read-only bind */
	JAIL_MOUNT_RW,	  /* read-write bind */
	JAIL_MOUNT_TMPFS, /* fresh tmpfs */
	JAIL_MOUNT_DEV,	  /* private /dev */
	JAIL_MOUNT_PROC,  /* procfs of the box's pid namespace */
	JAIL_MOUNT_DIR,	  /* a directory created in whatever is mounted above it */
	/*
	 * The source as the lower layer of an overlay whose writes land in the workspace
	 * (NAME/overlay/DEST/upper); the host's source never changes (jail/overlay.c).
	 */
	JAIL_MOUNT_OVERLAY,
	JAIL_MOUNT_SYMLINK, /* a symlink (src: its target as written) in the box's own root */
};

/* What the box is built from. Strings are copied; paths absolute. */
struct jail_box_config {
	const char *ws_name;	    /* workspace name */
	const char *ws_root;	    /* <state dir>/workspaces/NAME */
	const char *workdir;	    /* bound read-write at its own path; the command starts here */
	const char *tmp;	    /* bound at /tmp */
	const char *cache;	    /* bound at $XDG_CACHE_HOME (default $HOME/.cache) */
	const char *home;	    /* bound at $HOME in place of the real home */
	const char *origin_root;    /* the origin checkout (hidden) */
	const char *origin_objects; /* its object store's path (objects_view there) */
	const char *state_dir;	    /* the origin's state dir (hidden) */
	bool net;		    /* share the host network namespace */
	/* Do not mount what tool managers on PATH need (jail/toolmgr.c), only the entries. */
	bool no_tool_managers;
	char *const *host_env; /* the host environment; NULL: environ */
	const char *bwrap;     /* the bwrap program; NULL: "bwrap" on the host PATH */
	/*
	 * The box-init program, bound into the box and run as `PROGRAM __box-init ...`. NULL:
	 * arborinth_box_init beside the running binary, else the running binary itself.
	 */
	const char *box_init;
	/*
	 * What the box reads at origin_objects, bound read-only: the objects of the base's history
	 * only (core_objects_view). NULL: origin_objects itself.
	 */
	const char *objects_view;
	/*
	 * The workspace's store of what the origin's branches and tags reach beyond the base
	 * (core/origin_refs.c), bound read-only at its own path (the gitdir's second alternate).
	 * NULL: none.
	 */
	const char *origin_store;
};

struct jail_box;

/*
 * Makes the default box for cfg. Fails with a message when bwrap or the arborinth binary
 * cannot be found, or $HOME cannot be masked. Caller frees with jail_box_free().
 */
int jail_box_new(struct jail_box **out, const struct jail_box_config *cfg) ARB_MUST_CHECK;
void jail_box_free(struct jail_box *b);

/*
 * --mount SPEC (TYPE ro, rw, overlay, tmpfs, dev or proc): -EINVAL with a message quoting the
 * spec (syntax, missing source, guard).
 */
int jail_box_add_mount(struct jail_box *b, const char *spec) ARB_MUST_CHECK;
/*
 * A mount that is part of the box's policy rather than the user's (for other modules, e.g.
 * the proxy's socket directory): allowed below guards, listed as "default" with `why`.
 */
int jail_box_add_default_mount(struct jail_box *b, enum jail_mount_type type, const char *src,
			       const char *dest, const char *why) ARB_MUST_CHECK;
/* --env NAME=VALUE, or NAME alone for the host's value. -EINVAL with a message. */
int jail_box_add_env(struct jail_box *b, const char *arg) ARB_MUST_CHECK;
/*
 * Asks box-init to run hook `name` with `arg` before the command (`__box-init --NAME ARG`);
 * the hook must exist in the table box-init's program hands jail_init_opts_parse().
 */
int jail_box_add_init_hook(struct jail_box *b, const char *name, const char *arg) ARB_MUST_CHECK;
/*
 * Stops the box `ms` milliseconds after it starts (--timeout): SIGTERM to the command, SIGKILL
 * to the whole box 2 s later; jail_box_run() then reports JAIL_EXIT_TIMEOUT. 0: no limit.
 */
int jail_box_set_timeout(struct jail_box *b, int64_t ms) ARB_MUST_CHECK;
/* The command's stdin, stdout and stderr: the caller's descriptors (-1: inherited). */
int jail_box_set_stdio(struct jail_box *b, const int stdio[3]) ARB_MUST_CHECK;
/*
 * Resource limits on a cgroup of the box's own (jail/cgroup.c); a 0 field: no limit. pids and
 * inotify also set the box's share of its user's per-user counts (jail/budget.c); 0 there:
 * the default, which leaves the user a quarter of its limit.
 */
struct jail_limits {
	int64_t memory;	   /* bytes of memory (and swap) for all of the box */
	int64_t cpu_milli; /* CPU time per wall time, in thousandths of a CPU */
	int64_t pids;	   /* processes and threads at once (cgroup, RLIMIT_NPROC) */
	int64_t inotify;   /* inotify instances at once (the box's user namespace) */
};
/*
 * Sets the limits; -ENOTSUP/-EACCES with a message when this host gives no cgroup for one
 * (the controller is not on cgroup v1, or its cgroup is not writable; --pids needs one only
 * for root).
 */
int jail_box_set_limits(struct jail_box *b, const struct jail_limits *l) ARB_MUST_CHECK;
/*
 * Whether each limit (--memory, --pids, --cpus) could be placed for this process, in words
 * into why (always set): 0 when all can, -ENOTSUP when one cannot. Changes nothing.
 */
int jail_limits_probe(char *why, size_t len);
/*
 * What the box's tmp, cache and home may hold together (bytes, 0: no budget) while it runs;
 * with or without one, the box is stopped when the filesystem holding one of them falls
 * below the reserve fs/disk.c keeps (jail/diskguard.c).
 */
int jail_box_set_disk(struct jail_box *b, int64_t budget) ARB_MUST_CHECK;
/* The command to run (argv[0] searched on the box's PATH). Required before finishing. */
int jail_box_set_command(struct jail_box *b, char *const argv[]) ARB_MUST_CHECK;

/*
 * Grants, bind files and agent launchers (jail/binds_box.c). An extra mount binds host path
 * `path` at the same path (ro, rw, overlay) or puts a tmpfs there. Unlike --mount it may land below
 * the $HOME guard (toolchains live there), never at $HOME or /, at or below another guard,
 * nor (ro/rw) reopen a path a mount hides other than $HOME. It replaces an earlier extra or
 * user mount or a replaceable default at the same destination; later --mount may replace
 * it; the tool-manager mounts below it are dropped (a bind file's tmpfs hides them). Listed
 * as "user" with `why`. -EINVAL with a message (no prefix: the caller adds one).
 */
int jail_box_add_extra_mount(struct jail_box *b, enum jail_mount_type type, const char *path,
			     const char *why) ARB_MUST_CHECK;
/*
 * A credential on the host (a key or login file, a config folder) the box must never see,
 * wherever it lives (jail/walls.c): once finished, every place the box would show it through a
 * bind (one that names it or any folder above it) has an empty mount over it. A path that does
 * not exist is ignored. -EINVAL with a message for a relative path.
 */
int jail_box_hide(struct jail_box *b, const char *path, const char *why) ARB_MUST_CHECK;
/* Puts dir (absolute, no ':') in front of the box's PATH. */
int jail_box_path_prepend(struct jail_box *b, const char *dir) ARB_MUST_CHECK;
/* One more line of --explain's inputs: "LABEL      text" (a backend of the proxy, ...). */
int jail_box_add_input(struct jail_box *b, const char *label, const char *text) ARB_MUST_CHECK;
/* $HOME and $XDG_CACHE_HOME as the box sees them. Borrowed. */
const char *jail_box_home(const struct jail_box *b);
const char *jail_box_cache_dir(const struct jail_box *b);

/*
 * Resolves the box into its launch profile: mount order, link checks, the environment and
 * the exact bwrap argv. After this the box is read-only. -errno with a message.
 */
int jail_box_finish(struct jail_box *b) ARB_MUST_CHECK;
/*
 * The resolved profile as text: inputs, mounts by destination with their origin, the
 * complete environment, the seccomp rules and the exact bwrap argv. *out: caller frees.
 */
int jail_box_explain(const struct jail_box *b, char **out) ARB_MUST_CHECK;

/* Exit status when the box itself could not be started (bwrap or box-init failed). */
#define JAIL_EXIT_SETUP 125
/* Exit status when the box ran out of time (as timeout(1)). */
#define JAIL_EXIT_TIMEOUT 124
/* Exit status when the disk guard stopped the box (jail_box_set_disk). */
#define JAIL_EXIT_DISK 123

/*
 * Runs the finished box and waits: creates missing workspace tmp/cache/home folders,
 * exports the seccomp BPF, starts bwrap (which dies with us), calls gate(ctx) (when not
 * NULL) while bwrap builds the box and lets box-init start the command only when it returned
 * 0 (else the box stops before the command and jail_box_run() returns gate's -errno and
 * message, *exit_status JAIL_EXIT_SETUP), forwards SIGTERM, SIGHUP,
 * SIGUSR1, SIGUSR2 (and SIGINT/SIGQUIT sent by a process rather than the terminal) to
 * box-init. *exit_status: the command's status (128+N when killed by signal N), or
 * JAIL_EXIT_TIMEOUT when the box's timeout stopped it (then -ETIME with a message), or
 * JAIL_EXIT_DISK when the disk guard did (then -ENOSPC with a message). When the
 * box could not be started returns -ECHILD with a message (bwrap's own is on stderr). *stats
 * (may be NULL): what the limits did, also after a timeout. done(ctx, status) (when not
 * NULL) is called once box-init says the command exited with `status` (as *exit_status) and
 * nothing of the box runs any more (*stats is filled by then), while bwrap and the kernel take the
 * box down (about a millisecond: the session's end checkpoint goes there); it is not called when
 * box-init ends without saying so (killed by the timeout, a box-init of an older build): the caller
 * does that work itself after the return then.
 */
/* What the limits did during a run. */
struct jail_run_stats {
	int64_t oom_kills;     /* processes the kernel's OOM killer ended for --memory */
	int64_t forks_refused; /* forks and clones --pids refused */
	int64_t pids_limit;    /* the pids.max that applied (--pids or the default); 0: none */
};
int jail_box_run(const struct jail_box *b, int (*gate)(void *ctx),
		 void (*done)(void *ctx, int status), void *ctx, int *exit_status,
		 struct jail_run_stats *stats) ARB_MUST_CHECK;

/*
 * The pid 1 on the host of the box the calling thread runs, for jail_box_run()'s gate (the
 * first call waits for bwrap to say it) and done; 0 when none. Several threads of a process
 * may each run a box at once (up to 64); signals to the process go to every box still running.
 */
pid_t jail_box_init_pid(void);

/* ---- box-init: pid 1 inside the box ------------------------------------------------------ */

/*
 * A hook box-init runs before the command (the credential proxy's relays plug in here).
 * box-init accepts `--NAME ARG` (repeatable) for each hook in its table and calls start()
 * once per occurrence, in order, before the command starts; stop() after the command
 * exited, in reverse order. Hooks may start threads (signals are blocked in all of them).
 */
struct jail_init_hook {
	const char *name;
	/* 0, or -errno with util_err(): box-init then exits 125 without running the command. */
	int (*start)(const char *arg, void **state);
	void (*stop)(void *state); /* may be NULL */
};

struct jail_init_opts {
	/*
	 * -1, or gets '1' once the command is started, then 'd' and the command's exit status
	 * once it exited and nothing else of the box runs (box-init killed and reaped the rest).
	 */
	int ready_fd;
	/*
	 * -1, or where the host's one byte comes once the command may start (the session is in
	 * the audit log, the start checkpoint taken): box-init waits for it after starting the
	 * hooks, and without it (end of file) exits without running the command.
	 */
	int go_fd;
	const struct jail_init_hook *hooks; /* the table; NULL-name terminated */
	const char *const *hook_names;	    /* requested hooks, NULL-terminated ... */
	const char *const *hook_args;	    /* ... and their arguments */
	char *const *argv;		    /* the command */
};

/*
 * Runs box-init: blocks and handles signals, starts the hooks, forks the command (signals
 * reset, descriptors above 2 closed on exec), then reaps every child until the command
 * exits, forwarding SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and non-terminal SIGINT/SIGQUIT to it.
 * *exit_status: the command's status (128+N for signal N; 127/126 when it cannot be run).
 * -errno with a message when a hook fails or the command cannot be forked.
 */
int jail_init_run(const struct jail_init_opts *o, int *exit_status) ARB_MUST_CHECK;
/*
 * box-init's own command line from its verb on (argv[0] "__box-init"; built by the host side
 * in jail/init_argv.c) into o, with hook names checked against the table `hooks`.
 * -EINVAL with a message (a bad pair, an unknown hook, a bad --ready-fd or --go-fd, no
 * command). Free
 * with jail_init_opts_clear(); o->argv points into argv.
 */
int jail_init_opts_parse(struct jail_init_opts *o, int argc, char **argv,
			 const struct jail_init_hook *hooks) ARB_MUST_CHECK;
void jail_init_opts_clear(struct jail_init_opts *o);

/*
 * box-init's hook for --pids N (jail/budget.c): RLIMIT_NPROC N for box-init and the command,
 * counted in the box's own user namespace, so it bounds the box's processes alone.
 */
#define JAIL_NPROC_HOOK "nproc"
int jail_budget_nproc_hook(const char *arg, void **state);

#endif
