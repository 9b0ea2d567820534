/*
 * core/ckpt_store.c: where checkpoints live, out of every box's reach. NAME/checkpoints.git
 * is a bare repository only arborinth writes: beside the workspace's gitdir (NAME/git, which
 * the view passes through as .git), not under the view, never bound into a box (the origin's
 * the state directory is hidden there), its only alternate the origin's object store (which the box
 * cannot write either), so no object or ref the box made is read from it. Each checkpoint's
 * commit id is also recorded in state.db (table ckpt_ids); a ref that names another commit
 * is refused with one line naming the checkpoint.
 * Checkpoints an older arborinth kept in the gitdir (refs/arborinth/checkpoints/N there) are
 * not imported: the box could have rewritten them, and nothing recorded says what they were.
 * A tree named by a revision of the workspace's repository (the box's own commits) is
 * copied into the store by ckpt_store_import, every entry name checked on the way.
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORE_DIR "checkpoints.git"

char *ckpt_store_path(const struct core_ws *ws)
{
	return util_path_join(ws->root, STORE_DIR);
}

static int put_file(const char *dir, const char *name, const char *text)
{
	char *path = util_path_join(dir, name);
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
	int rc = fd >= 0 && util_write_all(fd, text, strlen(text)) == 0 ? 0 : -EIO;

	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

/* Makes the store in a fresh folder, then renames it into place (another process may win). */
static int store_create(struct core_project *p, const struct core_ws *ws, const char *path)
{
	static const char *const dirs[] = {"objects", "objects/pack", "objects/info",
					   "refs",    "refs/heads",   "refs/tags"};
	char *tmp = util_asprintf("%s.new.%d", path, (int)getpid()), *alt = NULL, *last = NULL;
	int rc = 0;

	if (!tmp)
		return util_err(-ENOMEM, "out of memory");
	if (mkdir(tmp, 0700) < 0)
		rc = -errno;
	for (size_t i = 0; rc == 0 && i < ARB_ARRAY_LEN(dirs); i++) {
		char *d = util_path_join(tmp, dirs[i]);

		rc = d && mkdir(d, 0755) == 0 ? 0 : d ? -errno : -ENOMEM;
		free(d);
	}
	rc = rc ?: put_file(tmp, "HEAD", "ref: refs/heads/checkpoints\n");
	rc = rc
		 ?: put_file(tmp, "config",
			     "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
			     "\tlogallrefupdates = false\n");
	alt = rc == 0 ? util_asprintf("%s\n", core_project_objects_dir(p)) : NULL;
	rc = rc ?: alt ? put_file(tmp, "objects/info/alternates", alt) : -ENOMEM;
	if (rc == 0 && rename(tmp, path) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		rc = -errno;
	(void)util_rm_rf(tmp); /* gone when renamed; ours when another process won */
	if (rc < 0) {
		rc = util_err(rc, "cannot make the checkpoint store %s: %s", path, strerror(-rc));
	} else {
		/* What the last checkpoint learnt names objects of the old store: start afresh. */
		ckpt_cache_drop(ws);
		last = util_path_join(ws->root, CKPT_LAST_FILE);
		if (last)
			unlink(last);
	}
	free(last);
	free(alt);
	free(tmp);
	return rc;
}

int ckpt_repo_open(struct core_project *p, const struct core_ws *ws, git_repository **out)
{
	char *path = ckpt_store_path(ws);
	struct stat st;
	int rc = path ? 0 : util_err(-ENOMEM, "out of memory");

	*out = NULL;
	core_git_ready();
	if (rc == 0 && lstat(path, &st) < 0)
		rc = errno == ENOENT ? store_create(p, ws, path)
				     : util_err(-errno, "%s: %s", path, strerror(errno));
	else if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = util_err(-EIO, "%s is not a directory; refusing it as the checkpoint store",
			      path);
	if (rc == 0 && git_repository_open_bare(out, path) < 0)
		rc = util_err(-EIO, "cannot open %s: %s", path, git_error_last()->message);
	free(path);
	return rc;
}

int ckpt_ws_repo_open(const struct core_ws *ws, git_repository **out)
{
	core_git_ready();
	if (git_repository_open_bare(out, ws->gitdir) < 0)
		return util_err(-EIO, "cannot open %s: %s", ws->gitdir, git_error_last()->message);
	return 0;
}

/* ---- the ids in state.db ----------------------------------------------------------------- */

/* The state database; the table made when create (a checkpoint is recorded), else found. */
static int ids_db(struct core_project *p, bool create, sqlite3 **db)
{
	int rc = core_project_db(p, true, db);

	if (rc < 0)
		return rc == -ENOMEM ? util_err(rc, "out of memory") : rc;
	if (create && sqlite3_exec(*db,
				   "CREATE TABLE IF NOT EXISTS ckpt_ids ("
				   "  ws TEXT NOT NULL,"
				   "  seq INTEGER NOT NULL,"
				   "  commit_id TEXT NOT NULL,"
				   "  PRIMARY KEY (ws, seq))",
				   NULL, NULL, NULL) != SQLITE_OK)
		return util_err(-EIO, "state.db: %s", sqlite3_errmsg(*db));
	return 0;
}

int ckpt_ids_record(struct core_project *p, const struct core_ws *ws, unsigned seq,
		    const git_oid *commit)
{
	char hex[GIT_OID_HEXSZ + 1];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = ids_db(p, true, &db);

	if (rc < 0)
		return rc;
	git_oid_tostr(hex, sizeof(hex), commit);
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO ckpt_ids VALUES (?, ?, ?)", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, ws->id, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, seq) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, hex, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = util_err(-EIO, "checkpoint %u: cannot record it in state.db: %s", seq,
			      sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

void ckpt_ids_free(struct ckpt_ids *ids)
{
	if (ids)
		free(ids->v);
}

int ckpt_ids_load(struct core_project *p, const struct core_ws *ws, unsigned only,
		  struct ckpt_ids *out)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc = ids_db(p, false, &db), step;

	memset(out, 0, sizeof(*out));
	if (rc < 0)
		return rc;
	/* No table yet: nothing was recorded (every checkpoint found will be refused). */
	if (sqlite3_prepare_v2(db,
			       "SELECT seq, commit_id FROM ckpt_ids WHERE ws = ?1 AND "
			       "(?2 = 0 OR seq = ?2)",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_bind_text(st, 1, ws->id, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, only) != SQLITE_OK)
		rc = util_err(-EIO, "state.db: %s", sqlite3_errmsg(db));
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *hex = (const char *)sqlite3_column_text(st, 1);

		if (out->n == cap) {
			struct ckpt_id *nv =
			    realloc(out->v, (cap = cap ? 2 * cap : 16) * sizeof(*nv));

			if (!nv) {
				rc = util_err(-ENOMEM, "out of memory");
				break;
			}
			out->v = nv;
		}
		out->v[out->n].seq = (unsigned)sqlite3_column_int64(st, 0);
		if (!hex || git_oid_fromstr(&out->v[out->n].commit, hex) < 0)
			continue; /* not an id: as if not recorded */
		out->n++;
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = util_err(-EIO, "state.db: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (rc < 0)
		ckpt_ids_free(out);
	return rc;
}

int ckpt_ids_match(const struct ckpt_ids *ids, const struct core_ws *ws, unsigned seq,
		   const git_oid *commit)
{
	char hex[GIT_OID_HEXSZ + 1], want[GIT_OID_HEXSZ + 1];

	git_oid_tostr(hex, sizeof(hex), commit);
	for (size_t i = 0; i < ids->n; i++) {
		if (ids->v[i].seq != seq)
			continue;
		if (git_oid_equal(&ids->v[i].commit, commit))
			return 0;
		git_oid_tostr(want, sizeof(want), &ids->v[i].commit);
		return util_err(-EIO,
				"checkpoint %u of %s is commit %.12s in the store but %.12s in "
				"state.db; refusing it",
				seq, ws->name, hex, want);
	}
	return util_err(-EIO,
			"checkpoint %u of %s (commit %.12s) is not recorded in state.db; refusing "
			"it",
			seq, ws->name, hex);
}

int ckpt_ids_check(struct core_project *p, const struct core_ws *ws, unsigned seq,
		   const git_oid *commit)
{
	struct ckpt_ids ids;
	int rc = ckpt_ids_load(p, ws, seq, &ids);

	rc = rc ?: ckpt_ids_match(&ids, ws, seq, commit);
	ckpt_ids_free(&ids);
	return rc;
}

/* ---- a tree of the workspace's repository, brought in ------------------------------------ */

/*
 * Copies tree id and what it holds from from (the workspace's store: the box's) into to
 * (the checkpoint store), skipping what to has (its objects and the origin's). Every entry
 * name is checked first; libgit2 hashes what it reads, so an object is what its id says.
 */
static int import_tree(git_odb *from, git_odb *to, const git_oid *id, int depth)
{
	git_odb_object *obj = NULL;
	int rc = 0;

	if (git_odb_exists(to, id))
		return 0;
	if (depth > 256)
		return util_err(-ELOOP, "refusing a tree nested deeper than 256 levels");
	if (git_odb_read(&obj, from, id) < 0)
		return util_err(-EIO, "missing object: %s", git_error_last()->message);
	if (git_odb_object_type(obj) == GIT_OBJECT_TREE) {
		/* Parsed by hand: git_tree_lookup needs a repository, and names come first. */
		const unsigned char *d = git_odb_object_data(obj),
				    *end = d + git_odb_object_size(obj);

		while (rc == 0 && d < end) {
			const unsigned char *sp = memchr(d, ' ', (size_t)(end - d));
			const unsigned char *nul = sp ? memchr(sp, '\0', (size_t)(end - sp)) : NULL;
			git_oid sub;

			if (!sp || !nul || end - nul < 21) {
				rc = util_err(-EIO, "a malformed tree");
				break;
			}
			if (!core_entry_name_ok((const char *)sp + 1, (size_t)(nul - sp - 1))) {
				rc = core_entry_name_check((const char *)sp + 1, "checkpoint");
				break;
			}
			git_oid_fromraw(&sub, nul + 1);
			/* 160000: a submodule's commit, not in any store here. */
			if (!(sp - d == 6 && !memcmp(d, "160000", 6)))
				rc = import_tree(from, to, &sub, depth + 1);
			d = nul + 21;
		}
	} else if (git_odb_object_type(obj) != GIT_OBJECT_BLOB) {
		rc = util_err(-EIO, "an object of a tree is neither a tree nor a blob");
	}
	if (rc == 0 && git_odb_write((git_oid[1]){0}, to, git_odb_object_data(obj),
				     git_odb_object_size(obj), git_odb_object_type(obj)) < 0)
		rc = util_err(-EIO, "checkpoint store: %s", git_error_last()->message);
	git_odb_object_free(obj);
	return rc;
}

int ckpt_store_import(git_repository *store, git_repository *wrepo, const git_oid *tree)
{
	git_odb *from = NULL, *to = NULL;
	int rc = 0;

	if (git_repository_odb(&from, wrepo) < 0 || git_repository_odb(&to, store) < 0)
		rc = util_err(-EIO, "%s", git_error_last()->message);
	rc = rc ?: import_tree(from, to, tree, 0);
	git_odb_free(to);
	git_odb_free(from);
	return rc;
}

int ckpt_odb_new(const struct core_ws *ws, struct ckpt_odb **out)
{
	char *store = ckpt_store_path(ws);
	char *objects = store ? util_path_join(store, "objects") : NULL;
	int rc;

	*out = NULL;
	rc = objects ? ckpt_odb_open(objects, out) : util_err(-ENOMEM, "out of memory");
	free(objects);
	free(store);
	return rc;
}
