/*
 * core: projects (the origin repository) and workspaces: discovery, layout, create, list,
 * info, delete. The only module that ties git, the state database and the view together.
 */
#ifndef ARB_CORE_H
#define ARB_CORE_H

#include <git2.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util/util.h"

#define CORE_WS_NAME_MAX 64

struct core_project;

/*
 * Finds the repository containing `workdir` (searching upwards). Fails with a message for:
 * not a directory (-ENOTDIR/-ENOENT), not in a git repository (-ENOENT), bare (-EINVAL).
 * Caller frees with core_project_free(). Not thread-safe.
 */
int core_project_open(struct core_project **out, const char *workdir) ARB_MUST_CHECK;
void core_project_free(struct core_project *p);
/*
 * The disk budget (fs_disk_parse: "2G", "none") that workspaces created, forked or mounted
 * through p from now on get; each keeps it (NAME/disk) for its later mounts. Without it a
 * workspace keeps the budget it has (none set: the daemon's default). -EINVAL with a message.
 */
int core_project_set_disk(struct core_project *p, const char *size) ARB_MUST_CHECK;

/* Borrowed, valid while p lives. Paths are absolute, without a trailing slash. */
const char *core_project_root(const struct core_project *p);
const char *core_project_gitdir(const struct core_project *p);
/* The object directory of the origin (of its common dir for a linked worktree). */
const char *core_project_objects_dir(const struct core_project *p);
/*
 * Where all of the project's state lives: <commondir>/arborinth, for a linked worktree
 * <commondir>/arborinth/worktrees/<id> (core/state_dir.c). The one source of that path.
 */
const char *core_project_state_dir(const struct core_project *p);
/* The workspace whose view the project was opened from (a folder in it), else NULL. */
const char *core_project_view_ws(const struct core_project *p);
git_repository *core_project_repo(const struct core_project *p);
/*
 * A one-line note the last workspace create through p left (it removed a stale
 * refs/arborinth/NAME or remote arborinth/NAME), or NULL. Borrowed, valid until the next.
 */
const char *core_project_note(const struct core_project *p);

/* HEAD: hex commit id (empty for an unborn branch) and branch name (NULL when detached). */
struct core_head {
	char commit[GIT_OID_HEXSZ + 1];
	char *branch; /* owned; free() */
	bool unborn;
};
int core_project_head(const struct core_project *p, struct core_head *out) ARB_MUST_CHECK;

/*
 * The state database, opened on first use and owned by p. With create, makes the state dir
 * when missing; without, returns -ENOENT when there is none.
 */
int core_project_db(struct core_project *p, bool create, sqlite3 **out) ARB_MUST_CHECK;

/*
 * Checks a workspace name; -EINVAL with a message naming the broken rule. The rules include
 * git's for the branch refs/heads/arborinth/NAME (git-check-ref-format), checked here
 * without libgit2; core_ws_name_check_new, for a workspace about to be made, also asks
 * libgit2 (the library that will make the ref).
 */
int core_ws_name_check(const char *name) ARB_MUST_CHECK;
int core_ws_name_check_new(const char *name) ARB_MUST_CHECK;

/* Resolves a revision to a commit; -ENOENT / -EINVAL with a message. */
int core_rev_resolve(const struct core_project *p, const char *rev, git_oid *out) ARB_MUST_CHECK;

struct core_ws {
	char *id;
	char *name;
	char *base_commit;
	char *branch; /* arborinth/NAME */
	char *remote; /* arborinth/NAME */
	int64_t created_ns;
	char *state;
	char *root; /* <state dir>/workspaces/NAME */
	char *workdir, *tmp, *cache, *home, *layer, *gitdir, *run;
	bool mounted;
	pid_t daemon_pid; /* 0 when not running */
	char *notes;	  /* create: what the user should know of the new view, or NULL */
};
void core_ws_free(struct core_ws *ws);

/*
 * Creates workspace `name` at `rev` (NULL: HEAD): directory layout, gitdir and index, row,
 * origin ref refs/arborinth/NAME and remote arborinth/NAME. Atomic: on failure nothing is left.
 * -EEXIST when the name is taken. *out (optional) receives the new workspace; core_ws_free().
 */
int core_ws_create(struct core_project *p, const char *name, const char *rev,
		   struct core_ws **out) ARB_MUST_CHECK;
/* Flags of core_ws_create_opts. */
#define CORE_WS_DIRTY	    0x1 /* also carry the origin's uncommitted working-tree state */
#define CORE_WS_ALLOW_OTHER 0x2 /* mount it for other users too (see core_ws_mount) */
/* The view's I/O path from now on (see core_ws_mount); neither: as it was. */
#define CORE_WS_IO_PASSTHROUGH 0x4
#define CORE_WS_IO_DAEMON      0x8
int core_ws_create_opts(struct core_project *p, const char *name, const char *rev,
			unsigned int flags, struct core_ws **out) ARB_MUST_CHECK;
/* -ENOENT (with message) for an unknown workspace. */
int core_ws_get(struct core_project *p, const char *name, struct core_ws **out) ARB_MUST_CHECK;
/*
 * The workspace `name` would be if created at rev (NULL: HEAD), for --explain: its paths and
 * base, nothing created; state "planned", id "". A usage error for a name create refuses.
 */
int core_ws_planned(struct core_project *p, const char *name, const char *rev,
		    struct core_ws **out) ARB_MUST_CHECK;
/* All workspaces by name. Caller frees each and the array. */
int core_ws_list(struct core_project *p, struct core_ws ***out, size_t *n) ARB_MUST_CHECK;
int core_ws_count(struct core_project *p, size_t *n) ARB_MUST_CHECK;
/*
 * Removes folder, origin ref, remote and row. The workspace's audit history (audit/audit.h)
 * stays readable with `arborinth audit NAME` until purged.
 */
int core_ws_delete(struct core_project *p, const char *name) ARB_MUST_CHECK;
/*
 * core_ws_delete that, without CORE_WS_DELETE_FORCE, first refuses (-ENOTEMPTY, one line
 * counting them, nothing changed) when the workspace has commits no ref of the origin
 * reaches or files in its view that are not in its branch's last commit (core_ws_unsaved).
 * Either way -EBUSY while a session runs, or when the view is busy (naming the processes
 * that keep it so: core_ws_busy). core_ws_delete is core_ws_delete_opts with the flag.
 */
#define CORE_WS_DELETE_FORCE 0x1
int core_ws_delete_opts(struct core_project *p, const char *name,
			unsigned int flags) ARB_MUST_CHECK;
/*
 * What deleting ws would lose (core/ws_unsaved.c): in u, the commits of its branches (and a
 * detached HEAD) that neither its base nor a ref of the origin (but its own
 * refs/arborinth/NAME and remote) reaches, the files of its view that differ from its branch
 * arborinth/NAME's tree, and the files (and deletions) its boxes wrote into overlays
 * (NAME/overlay/ * /upper). The gitdir is read as hostile (through core_ws_export: it fills
 * NAME/export.git). -errno with a message.
 */
struct core_unsaved {
	size_t commits, files, overlay;
};
int core_ws_unsaved(struct core_project *p, const struct core_ws *ws,
		    struct core_unsaved *u) ARB_MUST_CHECK;
/*
 * The processes that keep ws's view busy (core/ws_busy.c): their number (0: none found),
 * and in *out (caller frees; NULL when none) "pid N (comm), ..." (the first few, then "and
 * N more"). Read from /proc with readlink only. -errno when /proc cannot be read.
 */
int core_ws_busy(const struct core_ws *ws, char **out) ARB_MUST_CHECK;

/*
 * The object store a box of a workspace based on base_hex (a commit id) is shown in place of
 * the origin's: every object reachable from that commit and nothing else
 * (<state dir>/objects-view/<commit>, read-only files, no alternates; core/objects_view.c).
 * Built when missing (seconds for a large history; from an ancestor's store when one exists),
 * else a stat(). *out (optional): its path, caller frees. -errno with a message.
 */
int core_objects_view(struct core_project *p, const char *base_hex, char **out) ARB_MUST_CHECK;
/*
 * Brings the origin's branches and tags into the workspace's gitdir again (as at create:
 * core/origin_refs.c) and the objects they reach into its read-only store, before a box
 * starts; the view must be mounted (the refs are written through it). A no-op for a
 * workspace made before it had that store. -errno with a message.
 */
int core_ws_origin_refresh(struct core_project *p, const struct core_ws *ws) ARB_MUST_CHECK;
/*
 * Submodules (core/submodules.c). core_submodules: those of base_hex as the view shows them
 * (fs_submodules_find on the origin; free with fs_submodules_free). core_objects_view_sub:
 * the store a box is shown for a submodule the origin initialised, the same as
 * core_objects_view's from its store <commondir>/<gitdir> (objects-view/modules/<commit>).
 * core_submodule_binds: for each such submodule of the workspace at ws_root, based at base_hex
 * (core_ws_submodules), the store's path (*src) and
 * where the box sees it (*dest, the origin's own store of it, where the workspace's
 * submodule gitdirs' alternates point); both arrays of *n strings, free each and them.
 */
struct fs_submodule;
int core_submodules(struct core_project *p, const char *base_hex, struct fs_submodule **out,
		    size_t *n) ARB_MUST_CHECK;
int core_objects_view_sub(struct core_project *p, const char *gitdir, const char *commit_hex,
			  char **out) ARB_MUST_CHECK;
int core_submodule_binds(struct core_project *p, const char *ws_root, const char *base_hex,
			 char ***src, char ***dest, size_t *n) ARB_MUST_CHECK;
/*
 * The submodules of the workspace at ws_root (based at base_hex) as its create recorded them
 * (core/submod_record.c), without walking .gitmodules and the origin's modules/ again; a
 * workspace made by an older version has no record: then core_submodules. Free with
 * fs_submodules_free.
 */
int core_ws_submodules(struct core_project *p, const char *ws_root, const char *base_hex,
		       struct fs_submodule **out, size_t *n) ARB_MUST_CHECK;
/*
 * `workspace delete --purge`: deletes the workspace if it exists (core_ws_delete_opts with
 * flags), then removes the audit history of every workspace ever called name (two
 * transactions: a failed purge leaves the history, and running it again finishes). -ENOENT when
 * there is neither.
 */
int core_ws_purge(struct core_project *p, const char *name, unsigned int flags) ARB_MUST_CHECK;

/*
 * `arborinth gc` (core/gc.c): removes what no workspace of p uses: the blob cache (only when
 * no view of p is mounted), shared indexes and objects views of commits no workspace is
 * based on (none while a create is building), folders killed creates and deletes left,
 * refs/arborinth/NAME and remotes arborinth/NAME of no workspace; with CORE_GC_PURGE also
 * folders of no workspace and the audit history of deleted workspaces (core_ws_purge).
 * CORE_GC_DRY_RUN: reports and changes nothing. fn gets each thing removed (removed true)
 * or kept with its reason (false), with its size in bytes; *bytes the total removed.
 * Decisions are made under the state database's write lock. -errno with a message.
 */
#define CORE_GC_DRY_RUN 0x1
#define CORE_GC_PURGE	0x2
typedef void core_gc_fn(void *arg, bool removed, const char *what, const char *path,
			uint64_t bytes);
int core_gc(struct core_project *p, unsigned int flags, core_gc_fn *fn, void *arg,
	    uint64_t *bytes) ARB_MUST_CHECK;

/*
 * The user's projects (core/registry.c): $XDG_STATE_HOME/arborinth/projects (default
 * ~/.local/state/arborinth/projects), a line per project. core_registry_add appends one
 * (best effort, once per state_dir). core_registry_list: the entries that still name a
 * project of this user's (state directory owned by the user, with its state.db, not a link),
 * each once; caller frees with core_registry_free. core_registry_prune rewrites the file
 * without the others; *dropped: how many.
 */
struct core_registry_entry {
	char *state_dir, *root;
};
void core_registry_add(const char *state_dir, const char *root);
int core_registry_list(struct core_registry_entry **out, size_t *n) ARB_MUST_CHECK;
void core_registry_free(struct core_registry_entry *v, size_t n);
int core_registry_prune(size_t *dropped) ARB_MUST_CHECK;

/*
 * Mounts the workspace view (starts its daemon, which detaches) and returns once it is live;
 * a no-op when mounted (whatever flags say). A dead mount left by a killed daemon is cleared
 * first. flags: 0 (private: only the daemon's user may use the view; the workspace folder is
 * 0700) or CORE_WS_ALLOW_OTHER (FUSE allow_other: every user, with the view's permission
 * checks; the workspace folder is 0711 so others can reach workdir/ but list nothing).
 * -EPERM with a message when allow_other needs user_allow_other in /etc/fuse.conf (not root).
 * CORE_WS_IO_PASSTHROUGH / CORE_WS_IO_DAEMON choose, for this and every later mount, whether
 * files created in the view are written through FUSE passthrough (fs/transport/passthrough.c; kept
 * as the file NAME/io-passthrough) or through the daemon (the default).
 */
int core_ws_mount(struct core_project *p, struct core_ws *ws, unsigned int flags) ARB_MUST_CHECK;
/*
 * Whether this process can mount a view at all (/dev/fuse, and fusermount3 when not root):
 * 0, or the check's -errno with a one-line message naming the cause and `arborinth doctor`.
 * core_ws_create_opts asks first, before it makes anything.
 */
int core_mount_preflight(void) ARB_MUST_CHECK;
/*
 * The program that serves views (`PROGRAM __fs-daemon ...`) for this process, when it is not
 * the arborinth_fs beside the running binary (libarborinth in another program). Process-wide;
 * call before the first mount. NULL: back to the default.
 */
void core_set_daemon_exe(const char *path);
/* Unmounts the view and waits for its daemon to finish; a no-op when not mounted. */
int core_ws_unmount(struct core_project *p, struct core_ws *ws) ARB_MUST_CHECK;
/* The live daemon's pid from run/daemon.pid, or 0. */
pid_t core_ws_daemon_pid(const struct core_ws *ws);
/*
 * Makes the workspace's audit current: a mounted view records the writes it is still
 * coalescing and commits them before this returns (ARB_FS_IOC_AUDIT_SYNC on the view's root;
 * fsync of the root when its daemon is older than that request). A no-op when not mounted.
 */
int core_ws_audit_sync(const struct core_ws *ws) ARB_MUST_CHECK;
/*
 * Lists (add) or unlists the box whose pid 1 is pid (on the host) with the mounted view:
 * its processes then see the gitdir as the box wrote it, and every other process the view's
 * own config without hooks or nested repositories (fs/hostgit.c). A no-op when not mounted.
 */
int core_ws_box_list(const struct core_ws *ws, pid_t pid, bool add) ARB_MUST_CHECK;

/*
 * Checkpoints (core/checkpoint.c, core/ckpt_tree.c, core/rewind.c): the whole view as a git
 * tree and commit in the workspace's own object store, on refs/arborinth/checkpoints/N.
 */
#define CORE_CKPT_MESSAGE_MAX 1000
struct core_ckpt {
	unsigned seq; /* N */
	char commit[GIT_OID_HEXSZ + 1], tree[GIT_OID_HEXSZ + 1];
	int64_t time_ns;
	char kind[16];	       /* manual, start, end (of a session), rewind */
	int64_t session;       /* 0: none */
	char *message;	       /* owned: the first line */
	size_t hashed, reused; /* core_ws_checkpoint: layer files hashed, known from before */
};
struct core_ckpt_opts {
	const char *message; /* NULL: "checkpoint" */
	const char *kind;    /* NULL: "manual" */
	int64_t session;
};
void core_ckpt_clear(struct core_ckpt *c);
void core_ckpts_free(struct core_ckpt *v, size_t n);
/*
 * Records the view as it is now (what a write() through the view wrote is in the layer when
 * it returns, so nothing needs syncing). Costs what
 * changed since the base: the base's unchanged subtrees are referenced by id; each changed
 * file is hashed once (a cache keeps what earlier checkpoints hashed).
 */
int core_ws_checkpoint(struct core_project *p, const struct core_ws *ws,
		       const struct core_ckpt_opts *o, struct core_ckpt *out) ARB_MUST_CHECK;
/* All checkpoints, by N. Caller frees with core_ckpts_free(). */
int core_ws_checkpoints(struct core_project *p, const struct core_ws *ws, struct core_ckpt **out,
			size_t *n) ARB_MUST_CHECK;
/* Session N's "start" or "end" checkpoint (kind); -ENOENT with a message. */
int core_ws_session_ckpt(struct core_project *p, const struct core_ws *ws, int64_t session,
			 const char *kind, struct core_ckpt *out) ARB_MUST_CHECK;
/*
 * A tree of the workspace by name: "base", "view" (now, objects written), N or #N (a
 * checkpoint), or a revision of the workspace's repository (its branch, a commit id).
 */
int core_ws_tree(struct core_project *p, const struct core_ws *ws, const char *spec,
		 git_oid *tree) ARB_MUST_CHECK;
enum core_diff_format { CORE_DIFF_PATCH, CORE_DIFF_NAME_STATUS, CORE_DIFF_STAT };
/* flags: for a terminal (content's control characters escaped), in git's colours. */
#define CORE_DIFF_TERMINAL 0x1
#define CORE_DIFF_COLOR	   0x2
/* git's diff of two trees of the workspace (renames found), limited to paths when given. */
int core_ws_diff(struct core_project *p, const struct core_ws *ws, const git_oid *from,
		 const git_oid *to, const char *const *paths, size_t n_paths,
		 enum core_diff_format fmt, unsigned int flags, FILE *f) ARB_MUST_CHECK;
/*
 * The files of that diff (renames found): status as git's --name-status letter, old_path
 * only for a rename or copy; lines added and removed (0 for a binary file). free with
 * core_diff_files_free.
 */
struct core_diff_file {
	char status;
	bool binary;
	char *path, *old_path;
	size_t insertions, deletions;
};
int core_ws_diff_files(struct core_project *p, const struct core_ws *ws, const git_oid *from,
		       const git_oid *to, const char *const *paths, size_t n_paths,
		       struct core_diff_file **out, size_t *n) ARB_MUST_CHECK;
void core_diff_files_free(struct core_diff_file *v, size_t n);
struct core_diffstat {
	size_t files, insertions, deletions;
};
int core_ws_diffstat(struct core_project *p, const struct core_ws *ws, const git_oid *from,
		     const git_oid *to, struct core_diffstat *out) ARB_MUST_CHECK;
/*
 * The view becomes tree: checkpoints first (kind "rewind", into *before), then, with the view
 * unmounted, replaces the upper layer by one that gives exactly tree over the base, and
 * mounts it again when it was mounted. -EBUSY while a session of ws runs.
 */
int core_ws_rewind(struct core_project *p, struct core_ws *ws, const git_oid *tree,
		   struct core_ckpt *before) ARB_MUST_CHECK;
/*
 * Paths (relative to the workdir) get back what tree has there, through the mounted view (so
 * the audit records each change): files, symlinks and whole directories; a path tree lacks is
 * removed. -EINVAL for a path outside the workdir or in .git.
 */
int core_ws_restore(struct core_project *p, struct core_ws *ws, const git_oid *tree,
		    const char *const *paths, size_t n) ARB_MUST_CHECK;
/*
 * The patch from workspace a's view to workspace b's (core/ws_between.c), as core_ws_diff's
 * CORE_DIFF_PATCH, onto f.
 */
int core_ws_diff_between(struct core_project *p, const struct core_ws *a, const struct core_ws *b,
			 FILE *f) ARB_MUST_CHECK;
/*
 * `workspace create NAME --from FROM[@CKPT]`: NAME's base is FROM's checkpoint CKPT (any
 * core_ws_tree name; NULL: a checkpoint of FROM's view taken now), as a commit in the origin's
 * store over FROM's base. Copies what the checkpoint has beyond the origin; NAME is
 * independent of FROM afterwards. flags as for core_ws_create_opts (not CORE_WS_DIRTY).
 */
int core_ws_fork(struct core_project *p, const char *name, const char *from, const char *ckpt,
		 unsigned int flags, struct core_ws **out) ARB_MUST_CHECK;
/*
 * Bringing work home (core/home.c). merge: the workspace's branch into the origin's current
 * branch, fetched through the remote arborinth/NAME: a fast-forward, or a merge commit made in
 * memory first; -EEXIST listing the conflicting paths, -EBUSY when the origin's own uncommitted
 * changes are in the way; either way nothing changes. apply: the workspace's changes against
 * its base (the view now: committed and not) into the origin's working tree as unstaged
 * changes, checked whole first (-EEXIST, nothing written, when a file is not as the base has it
 * or a new path exists). Neither runs hooks.
 */
enum core_merge_kind { CORE_MERGE_UP_TO_DATE, CORE_MERGE_FAST_FORWARD, CORE_MERGE_COMMIT };
struct core_merge {
	enum core_merge_kind kind;
	char branch[256];		/* the origin's branch */
	char commit[GIT_OID_HEXSZ + 1]; /* its new head */
};
/*
 * Both refuse a stale workspace first (-EEXIST naming the paths: core_ws_stale). With
 * CORE_HOME_CHECK they check everything and change nothing (merge: made in memory only; the
 * origin's uncommitted changes are not looked at).
 */
#define CORE_HOME_CHECK 0x1
int core_ws_merge(struct core_project *p, const struct core_ws *ws, unsigned int flags,
		  struct core_merge *out) ARB_MUST_CHECK;
int core_ws_apply(struct core_project *p, const struct core_ws *ws, unsigned int flags,
		  size_t *files) ARB_MUST_CHECK;
/* core_ws_merge with CORE_HOME_CHECK (core/stale.c). */
int core_ws_merge_check(struct core_project *p, const struct core_ws *ws,
			struct core_merge *out) ARB_MUST_CHECK;
/* The stale refusal: 0 when none, else -EEXIST with its one line. */
int core_ws_stale_refuse(struct core_project *p, const struct core_ws *ws,
			 bool view) ARB_MUST_CHECK;
/*
 * Ref files as git writes them, parsed as hostile bytes (core/ref_parse.c). Loose: 40 hex
 * digits, an optional newline: -ELOOP for a symbolic ref, -EINVAL. Packed: refname's line in
 * packed-refs: -ENOENT when absent, -EINVAL when malformed or given twice.
 */
int core_ref_parse_loose(const void *buf, size_t len, unsigned char id[20]) ARB_MUST_CHECK;
int core_ref_parse_packed(const void *buf, size_t len, const char *refname,
			  unsigned char id[20]) ARB_MUST_CHECK;
/*
 * The objects a commit (its tree, then its parents) or a tree (its entries but gitlinks)
 * names, each given to fn with the type it must have; parsed as hostile bytes (same file).
 * -EINVAL when malformed; fn's negative return stops the walk and is returned.
 */
typedef int core_child_fn(void *arg, const unsigned char id[20], git_object_t want);
int core_object_children(git_object_t type, const void *data, size_t len, core_child_fn *fn,
			 void *arg) ARB_MUST_CHECK;

/*
 * Fills ws's export repository (NAME/export.git, where the origin's remote arborinth/NAME
 * points; re-pointed there first for a workspace made before exports) with the branch
 * arborinth/NAME: its objects beyond the origin's copied from the workspace's own store after
 * the gitdir is checked, so `git fetch arborinth/NAME` never reads the box's gitdir. *tip:
 * the branch's commit; *copied (optional): objects copied. -errno with a one-line refusal.
 */
int core_ws_export(struct core_project *p, const struct core_ws *ws, git_oid *tip,
		   size_t *copied) ARB_MUST_CHECK;
/*
 * Workspaces of one origin against their common base (core/compare.c): the merge base of
 * their base commits. Per workspace: its branch's head (exported), its view's tree, the files
 * its view changed against the base (with lines) and those not committed (against its head);
 * the paths more than one touched (in: a flag per workspace) and whether merging the views
 * in memory conflicts there. Nothing of the origin changes. Free with core_cmp_free.
 */
#define CORE_CMP_MAX 32
struct core_cmp_file {
	char *path, *old_path; /* old_path: renames only */
	char status;	       /* A, M, D, R */
	size_t added, deleted;
};
struct core_cmp_ws {
	const struct core_ws *ws;
	git_oid head, view;
	struct core_cmp_file *files, *unc;
	size_t n_files, n_unc;
};
struct core_cmp_overlap {
	char *path;
	unsigned char *in;
	bool conflict;
};
struct core_cmp {
	git_oid base;
	struct core_cmp_ws *w;
	size_t n;
	struct core_cmp_overlap *ov;
	size_t n_ov;
};
int core_compare(struct core_project *p, struct core_ws *const *ws, size_t n,
		 struct core_cmp *out) ARB_MUST_CHECK;
void core_cmp_free(struct core_cmp *c);
/*
 * A stale fork (core/stale.c): when ws's base is not the origin's HEAD, the paths ws changes
 * (its view against its base with view set, else its branch) that the origin also changed
 * between that base and HEAD, space-separated into *paths (caller frees; "" when none).
 */
int core_ws_stale(struct core_project *p, const struct core_ws *ws, bool view,
		  char **paths) ARB_MUST_CHECK;
/* The session of ws still running (its leader alive and no exit recorded), or 0. */
int core_ws_session_running(struct core_project *p, const struct core_ws *ws,
			    int64_t *session) ARB_MUST_CHECK;

/*
 * Test hook for atomicity tests: returns -EIO (with a message) when the environment variable
 * ARBORINTH_FAULT equals `point`, else 0.
 */
int core_fault(const char *point) ARB_MUST_CHECK;

/*
 * core/entry_name.c: whether a tree entry name (len bytes) may become a file name on the
 * host: not empty, ".", "..", no '/' or NUL, not ".git" in any case nor an NTFS or HFS+
 * alias of it (git's checkout rules). core_entry_name_check: 0, or -EINVAL with a one-line
 * message naming the entry (escaped) and `what` (the command).
 */
bool core_entry_name_ok(const char *name, size_t len);
int core_entry_name_check(const char *name, const char *what) ARB_MUST_CHECK;

#endif
