/* core/ws_create.c: creating and deleting workspaces, all or nothing. */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"

static const char *const ws_subdirs[] = {"workdir", "tmp", "cache", "home", "layer", "git", "run"};

static int random_hex(char *buf, size_t bytes)
{
	unsigned char raw[32];

	if (bytes > sizeof(raw) || getrandom(raw, bytes, 0) != (ssize_t)bytes)
		return -EIO;
	for (size_t i = 0; i < bytes; i++)
		snprintf(buf + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/*
 * The origin's branches and tags: their objects into staging's store first, then the gitdir
 * (whose alternates name the store where it will be: root's).
 */
static int write_git(struct core_project *p, const char *dir, const char *root, const char *name,
		     const git_oid *base)
{
	struct core_origin_refs refs = {0};
	char hex[GIT_OID_HEXSZ + 1];
	char *store = util_path_join(dir, CORE_ORIGIN_OBJECTS);
	char *final = util_path_join(root, CORE_ORIGIN_OBJECTS);
	char *git = util_path_join(dir, "git"), *last = NULL;
	int rc = store && final && git ? 0 : -ENOMEM;

	git_oid_tostr(hex, sizeof(hex), base);
	rc = rc ?: core_origin_refs_read(p, &refs);
	rc = rc ?: core_objects_tips(p, hex, store, refs.ids, refs.n);
	rc = rc ?: core_gitdir_write(p, git, name, base, final, &refs);
	if (rc == 0 && !(last = util_path_join(dir, CORE_ORIGIN_REFS_LAST)))
		rc = -ENOMEM;
	rc = rc ?: core_origin_refs_save(last, &refs);
	core_origin_refs_clear(&refs);
	free(store);
	free(final);
	free(git);
	free(last);
	return rc;
}

static int make_staging(struct core_project *p, const char *name, const char *root,
			const git_oid *base, unsigned int flags, char **out, char **note)
{
	char *dir = util_asprintf("%s/workspaces/.new-%s.XXXXXX", p->state_dir, name);
	int rc = 0;

	*out = NULL;
	if (!dir)
		return -ENOMEM;
	if (!mkdtemp(dir)) {
		rc = util_err(-errno, "cannot create %s: %s", dir, strerror(errno));
		free(dir);
		return rc;
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(ws_subdirs) && rc == 0; i++) {
		char *d = util_path_join(dir, ws_subdirs[i]);

		rc = !d ? -ENOMEM : mkdir(d, 0755) < 0 ? -errno : 0;
		free(d);
	}
	if (rc == 0)
		rc = write_git(p, dir, root, name, base);
	if (rc == 0)
		rc = core_lfs_prepare(p, dir, base, note);
	if (rc == 0) {
		char *ex = util_path_join(dir, "export.git");

		rc = ex ? core_export_write(p, ex, name, base) : -ENOMEM;
		free(ex);
	}
	if (rc == 0) {
		char hex[GIT_OID_HEXSZ + 1];

		rc = core_objects_view(p, git_oid_tostr(hex, sizeof(hex), base), NULL);
	}
	if (rc == 0 && (flags & CORE_WS_DIRTY)) {
		char *layer = util_path_join(dir, "layer");

		rc = layer ? core_dirty_copy(p, base, layer) : -ENOMEM;
		free(layer);
	}
	if (rc == 0)
		rc = core_fault("staging");
	if (rc < 0) {
		(void)util_rm_rf(dir);
		free(dir);
		return rc;
	}
	*out = dir;
	return 0;
}

static int insert_row(sqlite3 *db, const char *name, const git_oid *base)
{
	char id[33], hex[GIT_OID_HEXSZ + 1];
	char *branch = util_asprintf("arborinth/%s", name);
	sqlite3_stmt *st = NULL;
	int rc;

	if (!branch)
		return -ENOMEM;
	rc = random_hex(id, 16);
	if (rc < 0)
		goto out;
	git_oid_tostr(hex, sizeof(hex), base);
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO workspaces (id, name, base_commit, branch, created_ns, "
			       "state) VALUES (?, ?, ?, ?, ?, 'ready')",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, hex, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, branch, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, util_now_ns());
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT)
		rc = util_err(-EEXIST, "workspace '%s' already exists", name);
	else if (rc != SQLITE_DONE)
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	else
		rc = 0;
out:
	sqlite3_finalize(st);
	free(branch);
	return rc;
}

/* Removes a ref and remote left by an earlier workspace of name, keeping a note of it. */
static int clear_stale(struct core_project *p, const char *name)
{
	bool cleared = false;
	int rc = core_origin_clear_stale(p, name, &cleared);

	if (rc == 0 && cleared) {
		free(p->note);
		p->note =
		    util_asprintf("removed refs/arborinth/%s and remote arborinth/%s, left by "
				  "an earlier workspace of that name",
				  name, name);
	}
	return rc;
}

/* The part that must be serialised between processes: under the database's write lock. */
static int create_commit(struct core_project *p, sqlite3 *db, const char *name, const git_oid *base,
			 const char *staging, const char *root)
{
	char *gitdir = util_path_join(root, "export.git"); /* the remote's url */
	int rc;

	if (!gitdir)
		return -ENOMEM;
	rc = audit_db_exec(db, "BEGIN IMMEDIATE");
	if (rc < 0)
		goto out;
	rc = insert_row(db, name, base);
	if (rc == 0)
		rc = core_fault("row");
	/* The name is ours now, under the lock: a ref or remote of it is an earlier one's. */
	if (rc == 0)
		rc = clear_stale(p, name);
	if (rc < 0)
		goto rollback;
	rc = util_rename_dir_noreplace(AT_FDCWD, staging, AT_FDCWD, root);
	if (rc < 0) {
		rc = rc == -EEXIST || rc == -ENOTEMPTY
			 ? util_err(-EEXIST, "workspace '%s' already exists (%s)", name, root)
			 : util_err(rc, "cannot create %s: %s", root, strerror(-rc));
		goto rollback;
	}
	rc = core_fault("rename");
	if (rc == 0)
		rc = core_origin_add(p, name, base, gitdir);
	if (rc == 0)
		rc = core_fault("origin");
	if (rc == 0)
		rc = audit_db_exec(db, "COMMIT");
	if (rc == 0)
		goto out;
	(void)core_origin_remove(p, name);
	if (rename(root, staging) < 0)
		(void)util_rm_rf(root);
rollback:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	free(gitdir);
	return rc;
}

/*
 * -EEXIST when another checkout of the repository (the main one, a linked worktree) has a
 * workspace of that name: they share refs/arborinth/NAME and the remote arborinth/NAME, which
 * this create would otherwise take over as stale.
 */
static int name_elsewhere(struct core_project *p, const char *name)
{
	char **v = NULL;
	size_t n = 0;
	int rc = core_ws_names_all(p, true, &v, &n);

	if (rc == 0 && core_ws_names_has(v, n, name))
		rc =
		    util_err(-EEXIST,
			     "workspace '%s' already exists in another checkout of this repository "
			     "(they share refs/arborinth/%s); choose another name",
			     name, name);
	core_ws_names_free(v, n);
	return rc;
}

/* Mounts the new workspace; on failure removes it again, keeping the reason. */
static int mount_new(struct core_project *p, const char *name, unsigned int flags,
		     struct core_ws **out)
{
	struct core_ws *ws = NULL;
	char reason[1024], id[65];
	sqlite3 *db = NULL;
	int rc = core_ws_get(p, name, &ws);

	if (rc < 0)
		return rc;
	rc = core_fault("mount");
	if (rc == 0)
		rc = core_ws_mount(p, ws, flags & (CORE_WS_ALLOW_OTHER | CORE_WS_IO_PASSTHROUGH));
	if (rc == 0) {
		if (out)
			*out = ws;
		else
			core_ws_free(ws);
		return 0;
	}
	snprintf(reason, sizeof(reason), "%s", util_err_msg());
	snprintf(id, sizeof(id), "%s", ws->id);
	core_ws_free(ws);
	/* Best effort, and the history of a view that never came up with it: the reason the
	 * mount failed is what the caller needs. */
	if (core_ws_delete(p, name) == 0 && core_project_db(p, false, &db) == 0 &&
	    audit_ws_forget_unused(db, id) < 0)
		util_err_clear();
	return util_err(rc, "%s", reason);
}

int core_ws_create(struct core_project *p, const char *name, const char *rev, struct core_ws **out)
{
	return core_ws_create_opts(p, name, rev, 0, out);
}

int core_ws_create_opts(struct core_project *p, const char *name, const char *rev,
			unsigned int flags, struct core_ws **out)
{
	char *wsdir = NULL, *staging = NULL, *root = NULL, *note = NULL;
	struct core_ws *existing = NULL;
	sqlite3 *db = NULL;
	git_oid base;
	int rc;

	if (out)
		*out = NULL;
	free(p->note);
	p->note = NULL;
	rc = core_ws_name_check_new(name);
	if (rc == 0)
		rc = core_rev_resolve(p, rev ? rev : "HEAD", &base);
	/* Without FUSE nothing is made: no state directory, row, ref, remote or folder. */
	if (rc == 0)
		rc = core_mount_preflight();
	if (rc == 0)
		rc = core_project_db(p, true, &db);
	if (rc < 0)
		return rc;
	if (core_ws_get(p, name, &existing) == 0) {
		core_ws_free(existing);
		return util_err(-EEXIST, "workspace '%s' already exists", name);
	}
	rc = name_elsewhere(p, name);
	if (rc < 0)
		return rc;
	wsdir = util_path_join(p->state_dir, "workspaces");
	root = util_asprintf("%s/%s", wsdir ? wsdir : "", name);
	if (!wsdir || !root) {
		rc = -ENOMEM;
		goto out;
	}
	rc = util_mkdir_p(wsdir, 0755);
	if (rc == 0)
		rc = make_staging(p, name, root, &base, flags, &staging, &note);
	if (rc == 0)
		rc = create_commit(p, db, name, &base, staging, root);
	if (staging)
		(void)util_rm_rf(staging);
	if (rc == 0)
		rc = mount_new(p, name, flags, out);
	if (rc == 0 && out && *out) {
		(*out)->notes = note;
		note = NULL;
	}
out:
	free(note);
	free(wsdir);
	free(staging);
	free(root);
	return rc;
}

static int delete_row(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, "DELETE FROM workspaces WHERE name = ?", -1, &st, NULL) !=
	    SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st) == SQLITE_DONE
		 ? 0
		 : util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

/* "N thing" or "N things", after ", " or " and " when not the first of the list. */
static void count_part(char *buf, size_t size, size_t n, const char *one, const char *many,
		       const char *sep)
{
	size_t len = strlen(buf);

	if (n)
		snprintf(buf + len, size - len, "%s%zu %s", len ? sep : "", n, n == 1 ? one : many);
}

/* Without force: refuses (-ENOTEMPTY, one line) when deleting would lose work. */
static int delete_check_unsaved(struct core_project *p, const struct core_ws *ws)
{
	struct core_unsaved u;
	char why[512], what[256] = "";
	int rc = core_ws_unsaved(p, ws, &u);

	if (rc < 0) {
		/* Copied first: util_err writes the buffer util_err_msg returns. */
		snprintf(why, sizeof(why), "%s", util_err_msg());
		return util_err(rc,
				"cannot tell whether %s has work not in the origin (%s); use "
				"--force to delete anyway",
				ws->name, why);
	}
	if (u.commits == 0 && u.files == 0 && u.overlay == 0)
		return 0;
	count_part(what, sizeof(what), u.commits, "commit not in the origin",
		   "commits not in the origin", "");
	count_part(what, sizeof(what), u.files, "changed file not in a commit",
		   "changed files not in a commit", u.overlay ? ", " : " and ");
	count_part(what, sizeof(what), u.overlay, "change in an overlay", "changes in overlays",
		   " and ");
	return util_err(-ENOTEMPTY, "%s has %s; use --force to delete anyway", ws->name, what);
}

/* The one-line refusal naming who keeps ws's view busy (-EBUSY), or 0 when none is seen. */
static int delete_busy(const struct core_ws *ws)
{
	char *who = NULL;
	int rc = core_ws_busy(ws, &who);

	if (rc < 0) { /* /proc unreadable: the unmount's own check still stands */
		util_err_clear();
		rc = 0;
	} else if (rc > 0) {
		rc =
		    util_err(-EBUSY, "cannot delete %s: its view is busy: %s; end %s and try again",
			     ws->name, who, strchr(who, ',') ? "them" : "it");
	}
	free(who);
	return rc;
}

/*
 * Unmounts, never under a process that uses the view: one in a mount namespace of its own
 * (a container, `unshare -m`) would keep a private copy of the mount alive, unseen by the
 * unmount, and keep writing into a workspace about to go. Named either way.
 */
static int delete_unmount(struct core_project *p, struct core_ws *ws)
{
	int rc = ws->mounted ? delete_busy(ws) : 0;

	if (rc == 0)
		rc = core_ws_unmount(p, ws);
	if (rc != -EBUSY)
		return rc;
	rc = delete_busy(ws);
	return rc < 0 ? rc
		      : util_err(-EBUSY, "cannot delete %s: its view %s is busy; try again",
				 ws->name, ws->workdir);
}

int core_ws_delete(struct core_project *p, const char *name)
{
	return core_ws_delete_opts(p, name, CORE_WS_DELETE_FORCE);
}

int core_ws_delete_opts(struct core_project *p, const char *name, unsigned int flags)
{
	struct core_ws *ws = NULL;
	char *trash = NULL;
	sqlite3 *db = NULL;
	int64_t running = 0;
	int rc;

	rc = core_ws_get(p, name, &ws);
	if (rc == 0)
		rc = core_project_db(p, false, &db);
	/* Never under a running box: its work would go with the folder, unseen. */
	if (rc == 0)
		rc = core_ws_session_running(p, ws, &running);
	if (rc == 0 && running)
		rc = util_err(-EBUSY,
			      "session %lld of %s is running; delete it when that session has "
			      "ended (its box would keep writing into a removed workspace)",
			      (long long)running, name);
	if (rc == 0 && !(flags & CORE_WS_DELETE_FORCE))
		rc = delete_check_unsaved(p, ws);
	if (rc < 0)
		goto out;
	rc = delete_unmount(p, ws);
	if (rc < 0)
		goto out;
	trash = util_asprintf("%s/workspaces/.del-%s.%d", p->state_dir, name, (int)getpid());
	if (!trash) {
		rc = -ENOMEM;
		goto out;
	}
	rc = audit_db_exec(db, "BEGIN IMMEDIATE");
	if (rc < 0)
		goto out;
	/* Out of sight first, so a half-removed folder never looks like a workspace. */
	if (rename(ws->root, trash) < 0 && errno != ENOENT) {
		rc = util_err(-errno, "cannot remove %s: %s", ws->root, strerror(errno));
		goto rollback;
	}
	rc = delete_row(db, name);
	if (rc == 0)
		rc = core_origin_remove(p, name);
	if (rc == 0)
		rc = audit_db_exec(db, "COMMIT");
	if (rc == 0) {
		/* The box wrote git/ and layer/: removed without following a link or opening a
		 * file (a FIFO is unlinked, never read). */
		(void)util_rm_rf(trash);
		core_review_remove(p, ws->id);
		core_index_cache_prune(p, ws->base_commit);
		core_objects_view_prune(p, db);
		goto out;
	}
	(void)rename(trash, ws->root);
rollback:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	free(trash);
	core_ws_free(ws);
	return rc;
}

int core_ws_purge(struct core_project *p, const char *name, unsigned int flags)
{
	struct core_ws *ws = NULL;
	sqlite3 *db = NULL;
	int rc;

	if (core_ws_get(p, name, &ws) == 0) {
		core_ws_free(ws);
		rc = core_ws_delete_opts(p, name, flags);
		if (rc < 0)
			return rc;
	}
	rc = core_project_db(p, false, &db);
	if (rc == -ENOENT)
		return util_err(-ENOENT, "no workspace named '%s'", name);
	if (rc == 0)
		rc = audit_db_exec(db, "BEGIN IMMEDIATE");
	if (rc < 0)
		return rc;
	rc = audit_ws_purge(db, name, NULL);
	if (rc == -ENOENT)
		rc = util_err(-ENOENT, "no workspace named '%s'", name);
	if (rc == 0)
		rc = audit_db_exec(db, "COMMIT");
	if (rc < 0)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}
