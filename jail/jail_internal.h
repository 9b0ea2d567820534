/*
 * jail/jail_internal.h: what the files of jail/ share (and the unit tests reach): string
 * vectors, paths, mount specs, the mount tree, the environment rules and the seccomp rules.
 * Not part of the public header.
 */
#ifndef ARB_JAIL_INTERNAL_H
#define ARB_JAIL_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "jail/jail.h"

/* ---- string vectors ------------------------------------------------------------------- */

/*
 * A growable, always NULL-terminated vector of owned strings. Allocation failures set `oom`
 * instead of being returned by every push; check it (jail_strv_ok) once after a batch.
 */
struct jail_strv {
	char **v;
	size_t n, cap;
	bool oom;
};

void jail_strv_push(struct jail_strv *s, const char *str);
void jail_strv_pushf(struct jail_strv *s, const char *fmt, ...) ARB_PRINTF(2, 3);
/* Takes ownership of str (frees it on failure); NULL marks oom. */
void jail_strv_take(struct jail_strv *s, char *str);
int jail_strv_ok(const struct jail_strv *s) ARB_MUST_CHECK; /* 0 or -ENOMEM */
void jail_strv_clear(struct jail_strv *s);

/*
 * box-init's command line (jail/init_argv.c, next to its parser jail_init_opts_parse):
 * PROGRAM __box-init --ready-fd N [--go-fd N] (when go_fd >= 0), the hook options ("--NAME",
 * "ARG" pairs), --, COMMAND.
 */
void jail_init_argv(struct jail_strv *a, const char *program, int ready_fd, int go_fd,
		    const struct jail_strv *hooks, const struct jail_strv *command);

/* ---- paths ---------------------------------------------------------------------------- */

/*
 * Normalises an absolute path: repeated and trailing slashes collapse; "." and ".."
 * components are refused (-EINVAL, no message: callers word it). *out: caller frees.
 */
int jail_path_norm(const char *path, char **out) ARB_MUST_CHECK;
/*
 * The host's real path for `path`: symlinks resolved in its longest existing prefix, the
 * rest appended as written. NULL only on ENOMEM. Caller frees.
 */
char *jail_path_real(const char *path);
/* Orders paths so that a directory comes right before everything below it ('/' sorts first). */
int jail_path_cmp(const char *a, const char *b);

/* ---- mount specs ---------------------------------------------------------------------- */

/* A parsed --mount SPEC. */
struct jail_spec {
	enum jail_mount_type type;
	char *src;  /* binds and overlays only: as written (normalised); NULL otherwise */
	char *dest; /* normalised */
};

/*
 * Parses "TYPE:dest" or "TYPE:source:dest" (TYPE one of ro, rw, overlay, tmpfs, dev, proc).
 * ro/rw/overlay without a source bind dest itself; tmpfs, dev and proc take only a destination.
 * Paths must be absolute without "." or ".."; a bind source must exist. -EINVAL with a message that
 * quotes the spec and says what is wrong. Clear with jail_spec_clear().
 */
int jail_spec_parse(const char *text, struct jail_spec *out) ARB_MUST_CHECK;
void jail_spec_clear(struct jail_spec *s);
/* "ro", "rw", "tmpfs", "dev", "proc", "dir", "overlay". */
const char *jail_mount_type_name(enum jail_mount_type t);

/* ---- the mount tree ------------------------------------------------------------------- */

enum jail_mount_origin {
	JAIL_FROM_DEFAULT, /* part of the box's profile */
	JAIL_FROM_GUARD,   /* a security mask: no user mount at or below it */
	JAIL_FROM_USER,	   /* --mount */
};

enum {
	/* A convenience default: a user mount at the same destination replaces it. */
	JAIL_MOUNT_REPLACEABLE = 1u << 0,
	/* tmpfs remounted read-only once everything below it is mounted. */
	JAIL_MOUNT_SEAL = 1u << 1,
	/* The source is writable from inside the box: paths below it are checked for links. */
	JAIL_MOUNT_BOX_WRITABLE = 1u << 2,
	/*
	 * What a tool manager on PATH needs (toolmgr.c): dropped when a grant or bind file
	 * mounts something at or above it, so a bind file's tmpfs hides it.
	 */
	JAIL_MOUNT_TOOL = 1u << 3,
};

struct jail_mount {
	enum jail_mount_type type;
	enum jail_mount_origin origin;
	unsigned flags;
	unsigned perms; /* tmpfs and dir: mode, 0 for the default */
	char *src;	/* binds: the host path bound (resolved); overlay: DIR/merged */
	char *lower;	/* overlay: the host path it shows (resolved) */
	char *upper;	/* overlay: DIR/upper, its folder DIR in the workspace (overlay.c) */
	char *dest;	/* normalised destination in the box */
	char *protects; /* the real host path this mount hides, or NULL */
	char *why;	/* where it came from, for --explain */
};

/*
 * Mounts keyed by destination: at most one per destination. Sorted with jail_path_cmp,
 * an ancestor comes before its descendants, so compiled in that order the deeper mount
 * wins. Guards admit only non-user mounts at or below them.
 */
struct jail_mounts {
	struct jail_mount *v;
	size_t n, cap;
};

/*
 * Adds a default or guard mount (strings copied). The same mount twice at one destination
 * is merged; two different ones are -EEXIST with a message.
 */
int jail_mounts_add(struct jail_mounts *m, const struct jail_mount *mnt) ARB_MUST_CHECK;
/*
 * Adds the user mount `spec` (as given to --mount). Refused (-EINVAL, message quoting the
 * spec) when it lands at or below a guard, when its source contains a path a mount hides,
 * or when it would replace a default that is not replaceable. A user mount at the
 * destination of a replaceable default or of an earlier user mount replaces it.
 */
int jail_mounts_add_user(struct jail_mounts *m, const char *spec) ARB_MUST_CHECK;
/* Removes the mounts with `flag` strictly below dest. */
void jail_mounts_drop_below(struct jail_mounts *m, const char *dest, unsigned flag);
/* Removes the mount at dest, if any; the order of the others is kept. */
void jail_mounts_drop(struct jail_mounts *m, const char *dest);
/* Borrowed; NULL when nothing is mounted at dest. */
const struct jail_mount *jail_mounts_find(const struct jail_mounts *m, const char *dest);
/* The guard whose destination or hidden path covers `path`, or NULL. */
const struct jail_mount *jail_mounts_guard_for(const struct jail_mounts *m, const char *path);
/* Sorts into mount order (ancestors first). */
void jail_mounts_sort(struct jail_mounts *m);
/*
 * Refuses (-ELOOP with a message) a mount whose destination lies below a box-writable bind
 * when the path to it inside that bind's source contains a symlink (one the box may have
 * planted to move a later mount elsewhere). Call after jail_mounts_sort().
 */
int jail_mounts_check_links(const struct jail_mounts *m) ARB_MUST_CHECK;
/*
 * Refuses (-EINVAL with a message) a mount whose destination does not exist inside the
 * read-only bind above it (the host's / for most): bwrap would fail to create it there.
 * Call after jail_mounts_sort().
 */
int jail_mounts_check_dests(const struct jail_mounts *m) ARB_MUST_CHECK;
/*
 * Appends the bwrap options for all mounts, in order (sorted first), but for those that show
 * what their nearest ancestor shows there already (a read-only bind of the same host tree, a
 * sealed tmpfs in a sealed tmpfs).
 */
void jail_mounts_args(const struct jail_mounts *m, struct jail_strv *args);
/* Depth of v[i] among the mounts (number of mounted ancestors); sorted first. */
size_t jail_mounts_depth(const struct jail_mounts *m, size_t i);
void jail_mounts_clear(struct jail_mounts *m);

/* ---- environment ---------------------------------------------------------------------- */

/* [A-Za-z_][A-Za-z0-9_]* */
bool jail_env_name_valid(const char *name);
/* Names that look like credentials or host channels (*_TOKEN, SSH_AUTH_SOCK, ...). */
bool jail_env_is_secret(const char *name);
/* Host variables that pass into the box unless they look secret (PATH, TERM, LC_*, ...). */
bool jail_env_is_allowed(const char *name);
/* Sets NAME=VALUE in env (a vector of "NAME=VALUE"), replacing an existing NAME. */
void jail_env_set(struct jail_strv *env, const char *name, const char *value);
/* The value of name in a NULL-terminated "NAME=VALUE" array, or NULL. Borrowed. */
const char *jail_env_get(char *const *env, const char *name);

/* ---- seccomp -------------------------------------------------------------------------- */

/* One deny rule. arg < 0: every call of the syscall; else (arg & mask) == value. */
struct jail_seccomp_rule {
	const char *syscall;
	int err; /* errno the call fails with */
	int arg;
	uint64_t mask, value;
	const char *value_name; /* for --explain, or NULL */
	const char *why;
};

/* The rule table the filter is built from (and --explain prints). Borrowed, static. */
const struct jail_seccomp_rule *jail_seccomp_rules(size_t *n);
/* The ABIs the filter covers, NULL-terminated (native first); any other is killed. */
const char *const *jail_seccomp_arches(void);
/*
 * The filter as BPF (struct sock_filter[]), compiled from the rules when arborinth was built
 * (generated by jail_seccomp_gen). Borrowed, static.
 */
const unsigned char *jail_seccomp_bpf(size_t *len);
/* Writes that BPF into a new memfd, positioned at 0. *fd: caller closes. -errno with a message. */
int jail_seccomp_export(int *fd) ARB_MUST_CHECK;
/*
 * Builds the filter from the rules with libseccomp and writes it as BPF to fd (in the
 * arb_jail_seccomp library: the generator and the tests, not arborinth). -errno, a message.
 */
int jail_seccomp_build(int fd) ARB_MUST_CHECK;

/* ---- the box -------------------------------------------------------------------------- */

/*
 * Descriptors bwrap receives (fixed, so --explain shows the exact argv). bwrap reads the
 * first two; the others pass through to box-init: READY gets its byte once the command
 * started, GO gives it the host's word that the command may start (jail/run.c).
 */
enum { JAIL_FD_SECCOMP = 3, JAIL_FD_INFO = 4, JAIL_FD_READY = 5, JAIL_FD_GO = 6 };
/* Where the box-init program is bound inside the box. */
#define JAIL_BOX_INIT_PATH "/run/arborinth/box-init"

/* The finished bwrap argv (NULL-terminated) and box environment. Borrowed. */
char *const *jail_box_argv(const struct jail_box *b);
char *const *jail_box_envp(const struct jail_box *b);
const struct jail_mounts *jail_box_mounts(const struct jail_box *b);

#endif
