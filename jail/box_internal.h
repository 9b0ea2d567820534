/* jail/box_internal.h: struct jail_box and what the box's files (box*.c, explain, run) share. */
#ifndef ARB_JAIL_BOX_INTERNAL_H
#define ARB_JAIL_BOX_INTERNAL_H

#include "jail/jail_internal.h"

struct jail_box {
	/* Inputs, normalised. */
	char *ws_name, *ws_root, *workdir, *tmp, *cache_src, *home_src;
	char *origin_root, *origin_objects, *state_dir;
	bool net;
	struct jail_strv host; /* copy of the host environment */
	/* Resolved from the host. */
	char *home;	   /* $HOME: the path, in the box as on the host */
	char *home_real;   /* its real path on the host */
	char *cache_dest;  /* $XDG_CACHE_HOME in the box */
	char *runtime_dir; /* $XDG_RUNTIME_DIR in the box */
	char *bwrap;	   /* absolute */
	char *box_init;	   /* the box-init program, real path */
	/* The profile. */
	struct jail_mounts mounts;
	struct jail_strv env;	   /* "NAME=VALUE", sorted once finished */
	struct jail_strv withheld; /* host variable names not passed, sorted once finished */
	struct jail_strv notes;	   /* decisions --explain reports (skipped PATH entries ...) */
	struct jail_strv hooks;	   /* box-init options: "--NAME", "ARG", ... */
	struct jail_strv command;
	/* Finished. */
	struct jail_strv argv;
	bool finished;
};

/* Adds a non-user mount; src (binds) is resolved to its real path, dest normalised. */
int jail_box_add(struct jail_box *b, enum jail_mount_type type, enum jail_mount_origin origin,
		 unsigned flags, unsigned perms, const char *src, const char *dest,
		 const char *protects, const char *why) ARB_MUST_CHECK;
/* box_defaults.c: the default mounts and guards. */
int jail_box_defaults(struct jail_box *b) ARB_MUST_CHECK;
/* box_env.c: the environment from the host allowlist, then sorted when finishing. */
int jail_box_env_defaults(struct jail_box *b) ARB_MUST_CHECK;
int jail_box_env_finish(struct jail_box *b) ARB_MUST_CHECK;

#endif
