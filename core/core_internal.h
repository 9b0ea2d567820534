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
struct core_origin_refs;
int core_gitdir_write(struct core_project *p, const char *gitdir, const char *name,
		      const git_oid *base, const char *store,
		      const struct core_origin_refs *refs) ARB_MUST_CHECK;

/*
 * The origin's branches and tags as a workspace shows them (core/origin_refs.c): names
 * (refs/heads/X, refs/tags/X) with their ids, and the origin's current branch (NULL when
 * detached or unborn). core_origin_refs_write puts them into the gitdir gitfd: without last
 * (create) as one packed-refs (branches as refs/remotes/origin/X, tags, the local branch of
 * the current one) and refs/remotes/origin/HEAD; with last (what the previous call wrote) the
 * branches as loose refs where they differ, and the tags not in last. Their objects go first into
 * the workspace's store NAME/CORE_ORIGIN_OBJECTS: core_objects_tips (core/objects_view.c) copies
 * there what the n tips reach beyond the base's store and earlier copies, each copy a directory
 * published whole and named in the store's info/alternates.
 */
#define CORE_ORIGIN_OBJECTS "origin-objects"
struct core_origin_refs {
	char **names;
	git_oid *ids;
	size_t n, cap;
	char *head;
};
int core_origin_refs_read(struct core_project *p, struct core_origin_refs *out) ARB_MUST_CHECK;
void core_origin_refs_clear(struct core_origin_refs *r);
int core_origin_refs_write(int gitfd, const struct core_origin_refs *r,
			   const struct core_origin_refs *last) ARB_MUST_CHECK;
/* The refs given to the workspace last (NAME/CORE_ORIGIN_REFS_LAST): new tags are added. */
#define CORE_ORIGIN_REFS_LAST "origin-refs.last"
int core_origin_refs_save(const char *path, const struct core_origin_refs *r) ARB_MUST_CHECK;
int core_objects_tips(struct core_project *p, const char *base_hex, const char *store,
		      const git_oid *tips, size_t n) ARB_MUST_CHECK;

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
/* Drops the objects views no workspace of db is based on, but the newest (best effort). */
void core_objects_view_prune(struct core_project *p, sqlite3 *db);

/*
 * core/objects_src.c: the origin's objects as stored. core_objsrc_open maps the packs of
 * objects (an objects directory) for writing into the directory fd out (borrowed); free with
 * core_objsrc_free. core_objsrc_link hard-links loose object id into out: 1, or 0 when it is
 * not loose there (or cannot be linked), -errno when out cannot take it. core_objsrc_entry: 1
 * and id's whole pack entry (borrowed, valid while s lives), 0 when no pack has it whole.
 */
struct core_objsrc;
int core_objsrc_open(const char *objects, int out, struct core_objsrc **s) ARB_MUST_CHECK;
void core_objsrc_free(struct core_objsrc *s);
int core_objsrc_link(struct core_objsrc *s, const git_oid *id) ARB_MUST_CHECK;
int core_objsrc_entry(const struct core_objsrc *s, const git_oid *id, const unsigned char **entry,
		      size_t *len, uint32_t *crc) ARB_MUST_CHECK;

/*
 * A workspace's gitdir read as the box left it (core/ws_read.c): nothing followed, nothing
 * blocking, a one-line refusal for what arborinth did not write (alternates other than the
 * origin's objects, commondir, a symlink or special file under refs/ or as packed-refs).
 * core_wsgit_open checks the gitdir; caller frees with core_wsgit_free (NULL is fine).
 */
struct core_wsgit;
int core_wsgit_open(struct core_wsgit **out, struct core_project *p,
		    const struct core_ws *ws) ARB_MUST_CHECK;
void core_wsgit_free(struct core_wsgit *g);
/* The target of refname (a loose ref file, else its packed-refs line). -ENOENT, refusal. */
int core_wsgit_ref(struct core_wsgit *g, const char *refname, git_oid *id) ARB_MUST_CHECK;
/*
 * Object id from the workspace's own store only (never an alternate): *data (caller frees),
 * *len, *type, its hash checked. -ENOENT (no message) when the store lacks it, else refusal.
 */
int core_wsgit_read(struct core_wsgit *g, const git_oid *id, git_object_t *type, void **data,
		    size_t *len) ARB_MUST_CHECK;
/*
 * Copies root (of type) and what it reaches into dst, object by object, skipping what dst
 * has (core/ws_copy.c); what is in neither is refused naming the object and `what`.
 * *copied (optional): objects written.
 */
int core_wsgit_copy(struct core_wsgit *g, git_odb *dst, const git_oid *root, git_object_t type,
		    const char *what, size_t *copied) ARB_MUST_CHECK;
/* The same walk between two host-owned stores: src read through libgit2. */
int core_odb_copy(git_odb *src, git_odb *dst, const git_oid *root, git_object_t type,
		  const char *what, size_t *copied) ARB_MUST_CHECK;

/*
 * The export repository (core/export.c): core_export_write makes one at dir for workspace
 * name, its branch at base; core_export_path: NAME/export.git (caller frees).
 */
int core_export_write(struct core_project *p, const char *dir, const char *name,
		      const git_oid *base) ARB_MUST_CHECK;
char *core_export_path(const struct core_ws *ws);
/* ws's export repository, made (at the base) when missing; caller frees. -errno, message. */
int core_export_open(struct core_project *p, const struct core_ws *ws,
		     git_repository **out) ARB_MUST_CHECK;

/* Origin side: refs/arborinth/NAME and remote arborinth/NAME (url = the workspace's export). */
int core_origin_add(struct core_project *p, const char *name, const git_oid *base,
		    const char *url) ARB_MUST_CHECK;
/* Removes both; missing ones are fine. */
int core_origin_remove(struct core_project *p, const char *name);

/*
 * core/beneath.c: opens name (one component that core_entry_name_ok accepts) beneath dir,
 * following no symbolic link (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, else O_NOFOLLOW);
 * flags and mode as openat(). Returns the fd or -1 with errno (EINVAL for a refused name).
 * core_open_read_beneath: for reading, never blocking: a regular file (or a directory when
 * want_dir), anything else (FIFO, socket, device, symlink) refused at once.
 */
int core_open_beneath(int dir, const char *name, int flags, mode_t mode);
int core_open_read_beneath(int dir, const char *name, bool want_dir);

#endif
