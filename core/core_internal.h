/* core/core_internal.h: what the files of core/ share; not part of the public header. */
#ifndef ARB_CORE_INTERNAL_H
#define ARB_CORE_INTERNAL_H

#include "core/core.h"

struct core_project {
	git_repository *repo; /* opened on first use: core_project_repo() */
	char *root;
	char *gitdir;
	char *commondir;
	char *objects;
	char *state_dir;
	sqlite3 *db;
	char *disk; /* core_project_set_disk: the budget mounts through p give (NULL: theirs) */
};

/*
 * libgit2 set up (fs_git_init), once per process and for as long as it runs: every path of
 * core that calls libgit2 first, since a project found from its cache did not set it up.
 */
void core_git_ready(void);

/*
 * project_cache.c: the origin's paths without libgit2. core_project_cached fills p->root,
 * gitdir and commondir from <real's root>/.arborinth/repo.cache when everything they were
 * found from still holds (0), else -ENOENT (nothing set, no message) or -ENOMEM.
 * core_project_cache_write records them after libgit2 found them (best effort).
 */
int core_project_cached(struct core_project *p, const char *real);
void core_project_cache_write(const struct core_project *p);

/*
 * Writes the workspace gitdir at `gitdir` for workspace `name` based on `base`: HEAD on
 * refs/heads/arborinth/NAME, alternates to the origin's objects, config, and an index whose
 * stat data matches what the view reports. Reads no blob content (only object headers).
 */
int core_gitdir_write(struct core_project *p, const char *gitdir, const char *name,
		      const git_oid *base) ARB_MUST_CHECK;

/*
 * `--dirty`: writes into the layer directory `layer` what the origin's working tree has that
 * differs from `base` (modified and untracked-not-ignored files and symlinks copied, deleted
 * paths as whiteouts). Reads the origin, never writes it. Defined in core/dirty.c.
 */
int core_dirty_copy(struct core_project *p, const git_oid *base, const char *layer) ARB_MUST_CHECK;

/*
 * core_ws_audit_sync with the request it makes (core/mount.c): ioctl cmd on the view's root,
 * ARB_FS_IOC_AUDIT_SYNC there; the unit tests also pass a command no daemon knows, which
 * takes the way of a daemon older than the request. When the daemon does not know cmd
 * (ENOTTY, ENOSYS or EINVAL), fsync of the root instead, and *fsynced (optional) is set.
 */
int core_ws_audit_sync_cmd(bool *fsynced, const struct core_ws *ws,
			   unsigned long cmd) ARB_MUST_CHECK;

/* Drops the shared index of base_hex when no workspace links it any more (best effort). */
void core_index_cache_prune(struct core_project *p, const char *base_hex);

/* Origin side: refs/arborinth/NAME and remote arborinth/NAME (url = workspace gitdir). */
int core_origin_add(struct core_project *p, const char *name, const git_oid *base,
		    const char *ws_gitdir) ARB_MUST_CHECK;
/* Removes both; missing ones are fine. */
int core_origin_remove(struct core_project *p, const char *name);

#endif
