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
	char *note;    /* core_project_note */
	char *disk;    /* core_project_set_disk: the budget mounts through p give (NULL: theirs) */
	char *view_ws; /* opened from inside this workspace's view (core_view_of), else NULL */
};

/*
 * core/state_dir.c: the state directory of a repository (see there for the layout), and the
 * project a folder inside a view belongs to. core_view_of: 0 when real (resolved) is inside
 * <state>/workspaces/NAME/workdir of an existing state directory, with the origin's root,
 * NAME and the state directory (free with core_view_of_free); -ENOENT when it is not.
 * Found from the path and the origin's own files only, never from the workspace's gitdir.
 */
#define CORE_OLD_STATE_NAME ".arborinth" /* <root>/.arborinth: older versions' place */
char *core_state_dir_of(const char *root, const char *gitdir, const char *commondir);
struct core_view_of {
	char *root, *name, *state;
};
int core_view_of(const char *real, struct core_view_of *v) ARB_MUST_CHECK;
void core_view_of_free(struct core_view_of *v);
/*
 * For a view shared with --allow-other: the state directory 0711 (search only: others pass
 * through to NAME/workdir and can list nothing), and for a linked worktree's the folders
 * above it, arborinth/ and arborinth/worktrees/, too.
 */
int core_state_dir_share(const struct core_project *p) ARB_MUST_CHECK;

/*
 * core/state_move.c: moves an older version's <root>/.arborinth to p's state directory on
 * first use (views stopped and started again, remotes fixed), resuming one interrupted.
 * 0 when there is nothing to move or it moved; -errno with one line otherwise.
 */
int core_state_upgrade(struct core_project *p) ARB_MUST_CHECK;
/*
 * core/state_copy.c: copies from_dir/name to to_dir/to_name (which must not exist) without
 * following links, then checks the copy against the source: 0, or -errno (-EIO: they differ).
 */
int core_state_copy(const char *from_dir, const char *name, const char *to_dir,
		    const char *to_name) ARB_MUST_CHECK;

/*
 * libgit2 set up (fs_git_init), once per process and for as long as it runs: every path of
 * core that calls libgit2 first, since a project found from its cache did not set it up.
 */
void core_git_ready(void);

/*
 * One checkpoint or export of workspace ws at a time, across threads and processes (several
 * boxes of a workspace end at once): an exclusive flock() on NAME/checkpoint.lock, taken on
 * a descriptor of its own. Returns it for core_ws_unlock(), or -errno with a message.
 */
int core_ws_lock(const struct core_ws *ws) ARB_MUST_CHECK;
void core_ws_unlock(int fd);

/*
 * project_cache.c: the origin's paths without libgit2. core_project_cached fills p->root,
 * gitdir and commondir from <real's root>/.git/arborinth/repo.cache when everything they were
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

/* Dates the index file at path after base_time, so that no entry of the base is racy. */
int core_index_not_racy(const char *path, int64_t base_time) ARB_MUST_CHECK;
/*
 * core/lfs_index.c: after core_gitdir_write into root/git, for a base with git LFS files (a
 * .gitattributes with filter=lfs, and pointers at paths it names): the index gives each one
 * whose object the origin has the object's size (what the view shows), the config git-lfs's
 * filters, and root a file `lfs-view`. *note (caller frees; NULL when all is well): one line
 * saying how many have no object and stay pointers. core_lfs_view: ws has `lfs-view`, so its
 * daemon shows LFS objects (fs_config.lfs); a workspace made before this, or whose base has
 * no LFS file, shows blobs as they are, as its index says.
 */
int core_lfs_prepare(struct core_project *p, const char *root, const git_oid *base,
		     char **note) ARB_MUST_CHECK;
bool core_lfs_view(const struct core_ws *ws);

/*
 * The workspace names of every checkout of the repository (core/ws_names.c), from their
 * folders: the main checkout's and each linked worktree's (others_only: all but p's own
 * state directory's). They share refs/arborinth/ and the remotes. Free with
 * core_ws_names_free. -ENOMEM.
 */
int core_ws_names_all(const struct core_project *p, bool others_only, char ***out,
		      size_t *n) ARB_MUST_CHECK;
void core_ws_names_free(char **v, size_t n);
bool core_ws_names_has(char *const *v, size_t n, const char *name);

/*
 * The review page's comments (core/ws_review.c): <state dir>/review/<workspace id>.json, as
 * cli/review_comments.c writes them. core_review_file_id: whether name is one (or its .tmp),
 * its workspace's id into id. core_review_remove: the workspace's, gone (best effort).
 */
#define CORE_REVIEW_DIR "review"
bool core_review_file_id(const char *name, char id[33]);
void core_review_remove(struct core_project *p, const char *id);

/* Drops the shared index of base_hex when no workspace links it any more (best effort). */
void core_index_cache_prune(struct core_project *p, const char *base_hex);
/* Drops the objects views no workspace of db is based on, but the newest (best effort). */
void core_objects_view_prune(struct core_project *p, sqlite3 *db);

/*
 * core/objects_pack.c: the objects tip reaches in the repository gitdir (but what not, or
 * NULL, reaches) packed by the host's `git pack-objects --revs` into tmp/pack/: 0, or -errno
 * (no message: the caller falls back to its own walk).
 */
int core_objects_pack(const char *gitdir, const char *tmp, const git_oid *tip,
		      const git_oid * not ) ARB_MUST_CHECK;

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
 * Removes the ref and remote of name that no workspace owns (the caller holds the state
 * database's write lock and has just taken the name): *cleared when there were any.
 */
int core_origin_clear_stale(struct core_project *p, const char *name, bool *cleared) ARB_MUST_CHECK;

/*
 * core/beneath.c: opens name (one component that core_entry_name_ok accepts) beneath dir,
 * following no symbolic link (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, else O_NOFOLLOW);
 * flags and mode as openat(). Returns the fd or -1 with errno (EINVAL for a refused name).
 * core_open_read_beneath: for reading, never blocking: a regular file (or a directory when
 * want_dir), anything else (FIFO, socket, device, symlink) refused at once.
 */
int core_open_beneath(int dir, const char *name, int flags, mode_t mode);
int core_open_read_beneath(int dir, const char *name, bool want_dir);

/*
 * core/gitdir.c, for core/submodules.c too: an index's stat data as a view based at `when`
 * reports its files, and the index file dated after base_time (not "racily clean").
 * core_submodules_write: in the workspace gitdir, the gitdir of each submodule of base the
 * origin initialised (modules/NAME...): HEAD detached at the recorded commit, an index of its
 * tree, objects through an alternate to the origin's store of it, core.worktree.
 */
int core_index_fill_stat(git_index *idx, git_odb *odb, int64_t when) ARB_MUST_CHECK;
int core_index_not_racy(const char *path, int64_t base_time) ARB_MUST_CHECK;
int core_submodules_write(struct core_project *p, const char *gitdir,
			  const git_oid *base) ARB_MUST_CHECK;
/*
 * rewind: checkpoints keep a submodule's gitlink (its files are its own repository's), so a
 * rewind to a tree that records the same commit leaves its files as they are: the layer
 * directory of each top-level one moves from the replaced layer `from` to `to` (the view
 * unmounted). Names are the box's: opened beneath, no link followed. -errno, message.
 */
/* What create found (core/submod_record.c), recorded in ws_root for core_ws_submodules. */
int core_submodules_record(const char *ws_root, const struct fs_submodule *v,
			   size_t n) ARB_MUST_CHECK;
int core_submodules_carry(struct core_project *p, const struct core_ws *ws, const char *from,
			  const char *to, git_repository *repo, const git_oid *tree) ARB_MUST_CHECK;

#endif
