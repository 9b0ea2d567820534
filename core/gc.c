/*
 * core/gc.c: `arborinth gc`, what no workspace of the project uses, removed: the view
 * daemons' blob cache (only while no view is mounted: a daemon holds the folder open), shared
 * indexes and objects views of commits no workspace is based on, folders a killed create or
 * delete left (an older version's delete could leave an overlay's mode-0 work folder), the
 * review page's comments on workspaces that are gone, submodule stores and indexes no view
 * shows (a killed delete's), refs/arborinth/NAME and remotes arborinth/NAME with no
 * workspace, and with purge the audit history of deleted workspaces.
 * Safe beside a create, delete or shell: decisions and renames out of sight happen under the
 * state database's write lock (which create and delete take for theirs); the slow removal of
 * what was renamed comes after. A create still building (a staging folder) keeps the caches.
 * The blob cache's folder stays (a daemon starting meanwhile holds it open), its contents go.
 * Nothing is followed: folders are removed with util_rm_rf (no link followed, no file
 * opened); a name read from the disk is only renamed within the folder it was read from.
 */
#include "core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "fs/fs.h"

struct gc_item {
	const char *what;
	char *path, *trash;
	bool kept;     /* reported as kept (its size then), nothing renamed */
	bool contents; /* path's contents only (gc_empty): the folder itself stays */
};

struct gc {
	struct core_project *p;
	unsigned int flags;
	core_gc_fn *fn;
	void *arg;
	uint64_t total;
	struct core_ws **ws;
	size_t n_ws;
	struct gc_item *items; /* taken (renamed out of sight) under the lock, or kept */
	size_t n_items;
	char *subs_used; /* "\nHEX\n" for each submodule commit a workspace shows, or NULL */
};

/* Bytes on disk under path, as du counts them (no link followed; a file another name still
 * links frees nothing). */
static uint64_t du_bytes(const char *path)
{
	char *const roots[] = {(char *)path, NULL};
	FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR | FTS_XDEV, NULL);
	uint64_t sum = 0;
	FTSENT *e;

	while (fts && (e = fts_read(fts)))
		if (e->fts_info != FTS_DP && e->fts_info != FTS_NS && e->fts_info != FTS_ERR &&
		    e->fts_info != FTS_DNR &&
		    (S_ISDIR(e->fts_statp->st_mode) || e->fts_statp->st_nlink == 1))
			sum += (uint64_t)e->fts_statp->st_blocks * 512;
	if (fts)
		fts_close(fts);
	return sum;
}

static bool gc_dry(const struct gc *g)
{
	return g->flags & CORE_GC_DRY_RUN;
}

/*
 * Takes path: unless a dry run, renames it out of sight (under the lock). Measured, reported
 * and removed by gc_finish, after the lock: du of a large cache must not hold it.
 */
static int gc_take(struct gc *g, const char *what, const char *dir, const char *name)
{
	/* An earlier gc's that it could not remove is out of sight already: its name stays. */
	bool again = !strncmp(name, ".gc-", 4);
	char *path = util_path_join(dir, name);
	char *trash = again ? util_path_join(dir, name)
			    : util_asprintf("%s/.gc-%s.%d", dir, name, (int)getpid());
	struct gc_item *v = realloc(g->items, (g->n_items + 1) * sizeof(*v));
	int rc = 0;

	if (v)
		g->items = v;
	if (!path || !trash || !v) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (!gc_dry(g) && !again && rename(path, trash) < 0) {
		rc = errno == ENOENT
			 ? 0
			 : util_err(-errno, "gc: cannot remove %s: %s", path, strerror(errno));
		goto out;
	}
	v[g->n_items++] = (struct gc_item){.what = what, .path = path, .trash = trash};
	path = trash = NULL;
out:
	free(path);
	free(trash);
	return rc;
}

/* Notes state_dir/sub as kept, and why (its size measured after the lock). */
static int gc_keep(struct gc *g, const char *why, const char *sub)
{
	char *path = util_path_join(g->p->state_dir, sub);
	struct gc_item *v = realloc(g->items, (g->n_items + 1) * sizeof(*v));

	if (v)
		g->items = v;
	if (!path || !v) {
		free(path);
		return util_err(-ENOMEM, "out of memory");
	}
	v[g->n_items++] = (struct gc_item){.what = why, .path = path, .kept = true};
	return 0;
}

/* After the lock: each thing taken measured (where it is now), reported, removed. */
static void gc_finish(struct gc *g)
{
	for (size_t i = 0; i < g->n_items; i++) {
		struct gc_item *it = &g->items[i];
		const char *where = it->kept || gc_dry(g) ? it->path : it->trash;
		uint64_t bytes = du_bytes(where);
		struct stat st;

		/* Of a folder emptied, what was in it: neither it nor the trash folder counts. */
		if (it->contents && lstat(where, &st) == 0 && bytes >= (uint64_t)st.st_blocks * 512)
			bytes -= (uint64_t)st.st_blocks * 512;

		if (!it->kept && !gc_dry(g) && util_rm_rf(it->trash) < 0) {
			/* Said as it is: still there, under the name it has now. */
			g->fn(g->arg, false, "leftover that cannot be removed (gc tries again)",
			      it->trash, bytes);
			continue;
		}
		if (!it->kept)
			g->total += bytes;
		g->fn(g->arg, !it->kept, it->what, it->path, bytes);
	}
}

static bool gc_base_used(const struct gc *g, const char *hex)
{
	for (size_t i = 0; i < g->n_ws; i++)
		if (!strcmp(g->ws[i]->base_commit, hex))
			return true;
	return false;
}

static bool gc_name_used(const struct gc *g, const char *name)
{
	for (size_t i = 0; i < g->n_ws; i++)
		if (!strcmp(g->ws[i]->name, name))
			return true;
	return false;
}

static bool gc_id_used(const struct gc *g, const char *id)
{
	for (size_t i = 0; i < g->n_ws; i++)
		if (!strcmp(g->ws[i]->id, id))
			return true;
	return false;
}

static size_t gc_mounted(const struct gc *g)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n_ws; i++)
		if (fs_is_mounted(g->ws[i]->workdir) || core_ws_daemon_pid(g->ws[i]) > 0)
			n++;
	return n;
}

static bool old_enough(int dir, const char *name)
{
	struct stat st;

	return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime < time(NULL) - 3600;
}

/* A create still building its staging folder (workspaces/.new-NAME.*, younger than an hour). */
static bool gc_create_running(const struct gc *g)
{
	char *dir = util_path_join(g->p->state_dir, "workspaces");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	bool yes = false;

	while (d && !yes && (e = readdir(d)))
		yes = !strncmp(e->d_name, ".new-", 5) && !old_enough(dirfd(d), e->d_name);
	if (d)
		closedir(d);
	free(dir);
	return yes;
}

/* The names in dir (caller frees each and the array): read whole before anything is renamed
 * there, so a name gc_take gives is never met again in the same walk. */
static int names_of(const char *dir, char ***out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	int rc = 0;

	*out = NULL;
	*n = 0;
	while (d && rc == 0 && (e = readdir(d))) {
		char **nv;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		nv = realloc(v, (*n + 1) * sizeof(*v));
		if (nv)
			v = nv;
		if (!nv || !(v[*n] = strdup(e->d_name)))
			rc = util_err(-ENOMEM, "out of memory");
		else
			(*n)++;
	}
	if (d)
		closedir(d);
	*out = v;
	return rc;
}

static void names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Each entry of state_dir/sub that keep() does not claim, taken as what. */
static int gc_sweep(struct gc *g, const char *sub, const char *what,
		    bool (*keep)(const struct gc *, int, const char *))
{
	char *dir = util_path_join(g->p->state_dir, sub);
	int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	char **names = NULL;
	size_t n = 0;
	int rc = fd < 0 ? 0 : names_of(dir, &names, &n);

	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!keep(g, fd, names[i]))
			rc = gc_take(g, what, dir, names[i]);
	names_free(names, n);
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

/*
 * Everything in state_dir/sub (the folder itself stays: a daemon starting meanwhile holds it
 * open) as one item: moved into sub/.gc-PID under the lock.
 */
static int gc_empty(struct gc *g, const char *sub, const char *what)
{
	char *dir = util_path_join(g->p->state_dir, sub);
	char *trash = dir ? util_asprintf("%s/.gc-%d", dir, (int)getpid()) : NULL;
	struct gc_item *v = realloc(g->items, (g->n_items + 1) * sizeof(*v));
	char **names = NULL;
	size_t n = 0;
	int rc = 0;

	if (v)
		g->items = v;
	if (!dir || !trash || !v) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	rc = names_of(dir, &names, &n);
	if (rc < 0 || n == 0)
		goto out;
	if (!gc_dry(g) && mkdir(trash, 0700) < 0) {
		rc = util_err(-errno, "gc: cannot make %s: %s", trash, strerror(errno));
		goto out;
	}
	for (size_t i = 0; rc == 0 && !gc_dry(g) && i < n; i++) {
		char *from = util_path_join(dir, names[i]), *to = util_path_join(trash, names[i]);

		if (!from || !to)
			rc = util_err(-ENOMEM, "out of memory");
		else if (rename(from, to) < 0 && errno != ENOENT)
			rc = util_err(-errno, "gc: cannot remove %s: %s", from, strerror(errno));
		free(from);
		free(to);
	}
	v[g->n_items++] =
	    (struct gc_item){.what = what, .path = dir, .trash = trash, .contents = true};
	dir = trash = NULL;
out:
	names_free(names, n);
	free(dir);
	free(trash);
	return rc;
}

/*
 * index-cache/<commit>: kept while a workspace links it or is based on it. modules/ (the
 * submodules' indexes and stores, core/submodules.c) is left to the delete that prunes it.
 */
static bool keep_index(const struct gc *g, int dir, const char *name)
{
	struct stat st;

	if (!strcmp(name, "modules"))
		return true;
	if (!strncmp(name, ".gc-", 4))
		return false;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return true;
	if (strstr(name, ".tmp"))
		return !old_enough(dir, name);
	return st.st_nlink > 1 || gc_base_used(g, name);
}

/* objects-view/<commit>: kept while a workspace is based on it; leftovers after an hour. */
static bool keep_view(const struct gc *g, int dir, const char *name)
{
	if (!strcmp(name, "modules"))
		return true;
	if (!strncmp(name, ".new-", 5) || !strncmp(name, ".del-", 5))
		return !old_enough(dir, name);
	return strncmp(name, ".gc-", 4) != 0 && gc_base_used(g, name);
}

/*
 * The submodule commits the workspaces' views show ("\nHEX\n" each), from their records
 * (core_ws_submodules: the walk for a workspace of an older version). NULL, the reason said,
 * when that cannot be known: then every submodule store and index stays.
 */
static char *gc_subs_used(struct gc *g)
{
	char *all = strdup("\n");

	for (size_t i = 0; all && i < g->n_ws; i++) {
		struct fs_submodule *v = NULL;
		size_t n = 0;

		if (core_ws_submodules(g->p, g->ws[i]->root, g->ws[i]->base_commit, &v, &n) < 0) {
			g->fn(g->arg, false,
			      "submodule stores and indexes (cannot tell which are used)",
			      g->ws[i]->root, 0);
			util_err_clear();
			free(all);
			all = NULL;
		}
		for (size_t k = 0; all && k < n; k++) {
			char *more = v[k].state == FS_SUBMODULE_PRESENT
					 ? util_asprintf("%s%s\n", all, v[k].commit)
					 : NULL;

			if (more) {
				free(all);
				all = more;
			}
		}
		fs_submodules_free(v, n);
	}
	return all;
}

static bool gc_sub_used(const struct gc *g, const char *hex)
{
	char key[GIT_OID_HEXSZ + 3];

	snprintf(key, sizeof(key), "\n%.40s\n", hex);
	return strlen(hex) >= GIT_OID_HEXSZ && strspn(hex, "0123456789abcdef") >= GIT_OID_HEXSZ &&
	       strstr(g->subs_used, key);
}

/* objects-view/modules/<commit> (core_objects_view_sub): kept while a view shows it. */
static bool keep_sub_store(const struct gc *g, int dir, const char *name)
{
	if (!strncmp(name, ".new-", 5) || !strncmp(name, ".del-", 5))
		return !old_enough(dir, name);
	if (!strncmp(name, ".gc-", 4))
		return false;
	return strlen(name) != GIT_OID_HEXSZ || gc_sub_used(g, name);
}

/* index-cache/modules/<commit>-<time> (core/submodules.c): kept while a view shows it. */
static bool keep_sub_index(const struct gc *g, int dir, const char *name)
{
	(void)dir;
	if (!strncmp(name, ".gc-", 4))
		return false;
	return strlen(name) <= GIT_OID_HEXSZ + 1 || name[GIT_OID_HEXSZ] != '-' ||
	       gc_sub_used(g, name);
}

/* workspaces/: what a killed delete (.del-*) or create (.new-*) left, an hour on. */
static bool keep_ws_dir(const struct gc *g, int dir, const char *name)
{
	(void)g;
	if (!strncmp(name, ".del-", 5) || !strncmp(name, ".gc-", 4))
		return false;
	if (!strncmp(name, ".new-", 5))
		return !old_enough(dir, name);
	return true;
}

/*
 * review/<id>.json (and .json.tmp): the review page's comments on a workspace that is gone
 * (deleted by a version that left them). Other names are not ours to judge: kept.
 */
static bool keep_review(const struct gc *g, int dir, const char *name)
{
	char id[33];

	(void)dir;
	if (!strncmp(name, ".gc-", 4))
		return false;
	return !core_review_file_id(name, id) || gc_id_used(g, id);
}

/* Workspace folders with no row (a crash between steps): only with purge. */
static int gc_orphans(struct gc *g)
{
	char *dir = util_path_join(g->p->state_dir, "workspaces");
	char **names = NULL;
	size_t n = 0;
	int rc = dir ? names_of(dir, &names, &n) : util_err(-ENOMEM, "out of memory");

	for (size_t i = 0; rc == 0 && i < n; i++) {
		char *workdir;

		if (names[i][0] == '.' || gc_name_used(g, names[i]))
			continue;
		workdir = util_asprintf("%s/%s/workdir", dir, names[i]);
		if (!workdir)
			rc = util_err(-ENOMEM, "out of memory");
		else if (fs_is_mounted(workdir))
			g->fn(g->arg, false, "folder of no workspace, still mounted (unmount it)",
			      workdir, 0);
		else if (!(g->flags & CORE_GC_PURGE))
			g->fn(g->arg, false, "folder of no workspace (gc --purge removes it)",
			      workdir, 0);
		else
			rc = gc_take(g, "folder of no workspace", dir, names[i]);
		free(workdir);
	}
	names_free(names, n);
	free(dir);
	return rc;
}

/* Whether name is a workspace's of this checkout (a row) or of any (a folder). */
static bool gc_ref_used(const struct gc *g, char **all, size_t n, const char *name)
{
	return gc_name_used(g, name) || core_ws_names_has(all, n, name);
}

/*
 * refs/arborinth/NAME and remotes arborinth/NAME whose workspace is gone: no workspace of any
 * checkout of the repository has that name.
 */
static int gc_refs(struct gc *g)
{
	git_repository *repo = core_project_repo(g->p);
	git_reference_iterator *it = NULL;
	git_strarray remotes = {0};
	git_reference *ref;
	char **all = NULL;
	size_t n_all = 0;
	int rc = 0;

	if (!repo)
		return -EIO;
	rc = core_ws_names_all(g->p, false, &all, &n_all);
	if (rc < 0)
		return rc;
	if (git_reference_iterator_glob_new(&it, repo, "refs/arborinth/*") == 0) {
		while (rc == 0 && git_reference_next(&ref, it) == 0) {
			const char *name = git_reference_name(ref) + strlen("refs/arborinth/");

			if (core_ws_name_check(name) == 0 && !gc_ref_used(g, all, n_all, name)) {
				g->fn(g->arg, true, "ref of no workspace", git_reference_name(ref),
				      0);
				if (!gc_dry(g))
					rc = core_origin_remove(g->p, name);
			}
			git_reference_free(ref);
		}
		git_reference_iterator_free(it);
	}
	util_err_clear();
	if (rc == 0 && git_remote_list(&remotes, repo) == 0) {
		for (size_t i = 0; rc == 0 && i < remotes.count; i++) {
			const char *name = remotes.strings[i];

			if (!util_str_has_prefix(name, "arborinth/"))
				continue;
			name += strlen("arborinth/");
			if (core_ws_name_check(name) == 0 && !gc_ref_used(g, all, n_all, name)) {
				g->fn(g->arg, true, "remote of no workspace", remotes.strings[i],
				      0);
				if (!gc_dry(g))
					rc = core_origin_remove(g->p, name);
			}
		}
		git_strarray_dispose(&remotes);
	}
	util_err_clear();
	core_ws_names_free(all, n_all);
	return rc;
}

/* The history of every name no workspace has any more (purge), in the caller's transaction:
 * as core_ws_purge does for one name, for each. */
static int gc_purge(struct gc *g, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	char **names = NULL;
	size_t n = 0;
	int rc = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT DISTINCT name FROM audit_workspaces WHERE name NOT IN "
			       "(SELECT name FROM workspaces) ORDER BY name",
			       -1, &st, NULL) != SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		char **v = realloc(names, (n + 1) * sizeof(*v));

		if (v)
			names = v;
		if (!v || !name || !(v[n] = strdup(name)))
			rc = util_err(-ENOMEM, "out of memory");
		else
			n++;
	}
	sqlite3_finalize(st);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int64_t events = 0;

		if (!gc_dry(g))
			rc = audit_ws_purge(db, names[i], &events);
		if (rc == -ENOENT)
			rc = 0;
		if (rc == 0)
			g->fn(g->arg, true, "audit history of deleted workspace", names[i], 0);
	}
	names_free(names, n);
	return rc;
}

/* Under the write lock: what goes is decided and moved out of sight. */
static int gc_locked(struct gc *g, sqlite3 *db)
{
	size_t mounted;
	int rc = core_ws_list(g->p, &g->ws, &g->n_ws);

	if (rc < 0)
		return rc;
	mounted = gc_mounted(g);
	if (mounted) {
		rc = gc_keep(g,
			     mounted == 1
				 ? "blob cache (a view is mounted and reads it; unmount "
				   "to reclaim)"
				 : "blob cache (views are mounted and read it; unmount them "
				   "to reclaim)",
			     "blobs");
	} else {
		rc = gc_empty(g, "blobs", "blob cache");
	}
	if (rc == 0 && gc_create_running(g))
		g->fn(g->arg, false, "index caches and objects views (a create is running)",
		      g->p->state_dir, 0);
	else if (rc == 0)
		rc = gc_sweep(g, "index-cache", "index cache", keep_index)
			 ?: gc_sweep(g, "objects-view", "objects view", keep_view);
	if (rc == 0 && !gc_create_running(g) && (g->subs_used = gc_subs_used(g)))
		rc = gc_sweep(g, "objects-view/modules", "submodule store", keep_sub_store)
			 ?: gc_sweep(g, "index-cache/modules", "submodule index", keep_sub_index);
	rc = rc ?: gc_sweep(g, "workspaces", "leftover folder", keep_ws_dir);
	rc = rc ?: gc_sweep(g, CORE_REVIEW_DIR, "review comments of no workspace", keep_review);
	rc = rc ?: gc_orphans(g);
	rc = rc ?: gc_refs(g);
	if (rc == 0 && (g->flags & CORE_GC_PURGE))
		rc = gc_purge(g, db);
	return rc;
}

static void gc_free(struct gc *g)
{
	for (size_t i = 0; i < g->n_ws; i++)
		core_ws_free(g->ws[i]);
	free(g->ws);
	for (size_t i = 0; i < g->n_items; i++) {
		free(g->items[i].path);
		free(g->items[i].trash);
	}
	free(g->items);
	free(g->subs_used);
}

int core_gc(struct core_project *p, unsigned int flags, core_gc_fn *fn, void *arg, uint64_t *bytes)
{
	struct gc g = {.p = p, .flags = flags, .fn = fn, .arg = arg};
	sqlite3 *db = NULL;
	int rc = core_project_db(p, false, &db);

	*bytes = 0;
	if (rc == -ENOENT)
		return 0; /* no state: nothing to reclaim */
	core_git_ready();
	rc = rc ?: audit_db_exec(db, "BEGIN IMMEDIATE");
	if (rc < 0)
		return rc;
	rc = gc_locked(&g, db);
	if (rc == 0 && !gc_dry(&g))
		rc = audit_db_exec(db, "COMMIT");
	if (rc < 0 || gc_dry(&g))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	gc_finish(&g);
	*bytes = g.total;
	gc_free(&g);
	return rc;
}
