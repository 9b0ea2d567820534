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

/* Borrowed, valid while p lives. Paths are absolute, without a trailing slash. */
const char *core_project_root(const struct core_project *p);
const char *core_project_gitdir(const struct core_project *p);
/* The object directory of the origin (of its common dir for a linked worktree). */
const char *core_project_objects_dir(const struct core_project *p);
/* <root>/.arborinth */
const char *core_project_state_dir(const struct core_project *p);
git_repository *core_project_repo(const struct core_project *p);

/* HEAD: hex commit id (empty for an unborn branch) and branch name (NULL when detached). */
struct core_head {
	char commit[GIT_OID_HEXSZ + 1];
	char *branch; /* owned; free() */
	bool unborn;
};
int core_project_head(const struct core_project *p, struct core_head *out) ARB_MUST_CHECK;

/*
 * The state database, opened on first use and owned by p. With create, makes .arborinth/
 * (and excludes it from git status) when missing; without, returns -ENOENT when there is none.
 */
int core_project_db(struct core_project *p, bool create, sqlite3 **out) ARB_MUST_CHECK;

/* Checks a workspace name; -EINVAL with a message naming the broken rule. */
int core_ws_name_check(const char *name) ARB_MUST_CHECK;

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
	char *root; /* .arborinth/workspaces/NAME */
	char *workdir, *tmp, *cache, *home, *layer, *gitdir, *run;
	bool mounted;
	pid_t daemon_pid; /* 0 when not running */
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
int core_ws_create_opts(struct core_project *p, const char *name, const char *rev,
			unsigned int flags, struct core_ws **out) ARB_MUST_CHECK;
/* -ENOENT (with message) for an unknown workspace. */
int core_ws_get(struct core_project *p, const char *name, struct core_ws **out) ARB_MUST_CHECK;
/* All workspaces by name. Caller frees each and the array. */
int core_ws_list(struct core_project *p, struct core_ws ***out, size_t *n) ARB_MUST_CHECK;
int core_ws_count(struct core_project *p, size_t *n) ARB_MUST_CHECK;
/*
 * Removes folder, origin ref, remote and row. The workspace's audit history (audit/audit.h)
 * stays readable with `arborinth audit NAME` until purged.
 */
int core_ws_delete(struct core_project *p, const char *name) ARB_MUST_CHECK;
/*
 * `workspace delete --purge`: deletes the workspace if it exists, then removes the audit
 * history of every workspace ever called name (two transactions: a failed purge leaves the
 * history, and running it again finishes). -ENOENT when there is neither.
 */
int core_ws_purge(struct core_project *p, const char *name) ARB_MUST_CHECK;

/*
 * Mounts the workspace view (starts its daemon, which detaches) and returns once it is live;
 * a no-op when mounted (whatever flags say). A dead mount left by a killed daemon is cleared
 * first. flags: 0 (private: only the daemon's user may use the view; the workspace folder is
 * 0700) or CORE_WS_ALLOW_OTHER (FUSE allow_other: every user, with the view's permission
 * checks; the workspace folder is 0711 so others can reach workdir/ but list nothing).
 * -EPERM with a message when allow_other needs user_allow_other in /etc/fuse.conf (not root).
 */
int core_ws_mount(struct core_project *p, struct core_ws *ws, unsigned int flags) ARB_MUST_CHECK;
/* Unmounts the view and waits for its daemon to finish; a no-op when not mounted. */
int core_ws_unmount(struct core_project *p, struct core_ws *ws) ARB_MUST_CHECK;
/* The live daemon's pid from run/daemon.pid, or 0. */
pid_t core_ws_daemon_pid(const struct core_ws *ws);
/*
 * Makes the workspace's audit current: a mounted view records the writes it is still
 * coalescing and commits them before this returns (fsync of the view's root). A no-op when
 * not mounted.
 */
int core_ws_audit_sync(const struct core_ws *ws) ARB_MUST_CHECK;

/*
 * Test hook for atomicity tests: returns -EIO (with a message) when the environment variable
 * ARBORINTH_FAULT equals `point`, else 0.
 */
int core_fault(const char *point) ARB_MUST_CHECK;

#endif
