/*
 * core/objects_view.c: the object store a box sees. The origin's store holds more than the
 * commits a workspace is made from: blobs of a `.env` once staged, `git stash -u`'s untracked
 * files, other workspaces' work under refs/arborinth/, branches never merged. So the box is not
 * shown the origin's store but one made for the workspace's base commit: every object
 * reachable from that commit (its history, trees and blobs), nothing else, written by the host
 * into <state dir>/objects-view/<commit>/ (an objects directory: packs, and loose files for
 * objects too large for a pack; no info/alternates) and bound read-only in the box at the
 * origin's objects path, where the workspace gitdir's alternates point. The host's own readers
 * (the view's daemon, checkpoints, `git fetch` from the origin) keep the origin's whole store.
 *
 * Built once per base and shared by its workspaces: a later create of that base costs a
 * stat(). Objects are copied as the origin stores them (core/objects_src.c): a loose one
 * hard-linked, a whole one in a pack as its raw entry; only a delta, whose base may be what the
 * box must not see, is read and deflated again, whole. That is the fallback: first the host's
 * git packs the history with the origin's deltas (core/objects_pack.c; on git.git's history
 * the walk wrote 4.9 GB, the pack is about the origin's). (libgit2's packbuilder spent 50 s
 * searching for deltas at 50,000 files; reading and deflating every object, 12 s.) A base
 * whose ancestor has a store starts from it: its files hard-linked, and what the new commits
 * add. Stores no workspace uses are removed on delete, all but the newest (the next base is
 * most often its descendant).
 */
#include "core/ckpt_internal.h"
#include "fs/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define VIEW_DIR "objects-view"
/* A store of more packs than this is not built on: the next one starts afresh. */
#define PACKS_MAX 16
/* How many of the newest stores are tried as the ancestor to start from. */
#define ANCESTORS_MAX 8

/* Ids seen, open addressing; the zero id is never inserted. */
struct oid_set {
	git_oid *slot;
	size_t n, cap; /* cap: 0 or a power of two over twice n */
};

static size_t set_pos(const git_oid *id, size_t cap)
{
	uint32_t h;

	memcpy(&h, id->id, sizeof(h));
	return h & (cap - 1);
}

/* 1 when added, 0 when there already, -ENOMEM. */
static int set_add(struct oid_set *s, const git_oid *id)
{
	static const git_oid zero;
	size_t i;

	if (2 * (s->n + 1) > s->cap) {
		struct oid_set t = {.cap = s->cap ? 2 * s->cap : 4096};

		if (!(t.slot = calloc(t.cap, sizeof(*t.slot))))
			return -ENOMEM;
		for (size_t j = 0; j < s->cap; j++)
			if (!git_oid_equal(&s->slot[j], &zero))
				(void)set_add(&t, &s->slot[j]);
		free(s->slot);
		*s = t;
	}
	for (i = set_pos(id, s->cap); !git_oid_equal(&s->slot[i], &zero);
	     i = (i + 1) & (s->cap - 1))
		if (git_oid_equal(&s->slot[i], id))
			return 0;
	s->slot[i] = *id;
	s->n++;
	return 1;
}

/* What an id on the stack was named as: a blob needs no reading, the rest is walked. */
enum kind { KIND_BLOB, KIND_WALK };

struct todo {
	git_oid id;
	enum kind kind;
};

struct build {
	git_odb *origin;	 /* where objects are read */
	git_odb *prev;		 /* the ancestor's store: what it has is there already (or NULL) */
	struct ckpt_odb *out;	 /* the new store */
	struct core_objsrc *src; /* the origin's objects as stored, copied as they are */
	struct oid_set seen;
	struct todo *stack;
	size_t n, cap;
};

static int push(struct build *b, const git_oid *id, enum kind kind)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		struct todo *v = realloc(b->stack, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->stack = v;
		b->cap = cap;
	}
	b->stack[b->n++] = (struct todo){*id, kind};
	return 0;
}

/* A tree's entries: subtrees and blobs (submodules' commits are in another repository). */
static int push_tree(struct build *b, const unsigned char *p, size_t len)
{
	const unsigned char *end = p + len;
	int rc = 0;

	while (p < end && rc == 0) {
		const unsigned char *nul = memchr(p, '\0', (size_t)(end - p));
		git_oid id;

		if (!nul || end - nul < 21)
			return -EIO;
		git_oid_fromraw(&id, nul + 1);
		if (strncmp((const char *)p, "160000 ", 7))
			rc = push(b, &id,
				  strncmp((const char *)p, "40000 ", 6) ? KIND_BLOB : KIND_WALK);
		p = nul + 21;
	}
	return rc;
}

/* A commit's tree and parents (a tag's object): the header lines naming an id. */
static int push_refs(struct build *b, const char *p, size_t len)
{
	static const char *const keys[] = {"tree ", "parent ", "object "};
	const char *end = p + len;
	int rc = 0;

	while (p < end && *p != '\n' && rc == 0) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t ll = eol ? (size_t)(eol - p) : (size_t)(end - p);

		for (size_t k = 0; k < ARB_ARRAY_LEN(keys); k++) {
			size_t kl = strlen(keys[k]);
			git_oid id;

			if (ll == kl + GIT_OID_HEXSZ && !strncmp(p, keys[k], kl)) {
				if (git_oid_fromstrn(&id, p + kl, GIT_OID_HEXSZ) < 0)
					return -EIO;
				rc = push(b, &id, KIND_WALK);
			}
		}
		p += ll + 1;
	}
	return rc;
}

/* What an object names: pushed for copying. -EIO (message) when it does not parse. */
static int push_named(struct build *b, const git_oid *id, git_object_t type, const void *data,
		      size_t len)
{
	int rc = 0;

	if (type == GIT_OBJECT_TREE)
		rc = push_tree(b, data, len);
	else if (type == GIT_OBJECT_COMMIT || type == GIT_OBJECT_TAG)
		rc = push_refs(b, data, len);
	if (rc == -EIO)
		return util_err(rc, "objects view: object %s is malformed", git_oid_tostr_s(id));
	return rc < 0 ? util_err(rc, "out of memory") : 0;
}

/* id into the new store as the origin stores it: 1, 0 when it cannot be (a delta), -errno. */
static int copy_stored(struct build *b, const git_oid *id)
{
	const unsigned char *entry;
	uint32_t crc;
	size_t len;
	int rc = 0;

	/* Packed first: a lookup in memory, where most objects of most repositories are. */
	if (core_objsrc_entry(b->src, id, &entry, &len, &crc) == 1) {
		rc = ckpt_odb_put_entry(b->out, id, entry, len, crc);
		if (rc != -E2BIG)
			return rc < 0 ? rc : 1;
	}
	rc = core_objsrc_link(b->src, id);
	if (rc < 0)
		return util_err(rc, "objects view: cannot link %s: %s", git_oid_tostr_s(id),
				strerror(-rc));
	return rc;
}

/*
 * One object: copied into the new store unless seen or the ancestor's store has it. Blobs
 * are copied as stored; what names other objects is read (libgit2) to walk on; what cannot
 * be copied as stored is read and written whole.
 */
static int copy_one(struct build *b, const struct todo *t)
{
	git_odb_object *obj = NULL;
	git_object_t type;
	git_oid got;
	const void *data;
	size_t len;
	int rc = set_add(&b->seen, &t->id), stored = 0;

	if (rc <= 0)
		return rc < 0 ? util_err(rc, "out of memory") : 0;
	if (b->prev && git_odb_exists(b->prev, &t->id))
		return 0; /* the ancestor's store is whole: what it has, it has below too */
	if (t->kind == KIND_BLOB && (stored = copy_stored(b, &t->id)) != 0)
		return stored < 0 ? stored : 0;
	rc = git_odb_read(&obj, b->origin, &t->id);
	if (rc == GIT_ENOTFOUND)
		return 0; /* a shallow or partial origin: the box lacks it as the origin does */
	if (rc < 0)
		return util_err(-EIO, "objects view: %s", git_error_last()->message);
	type = git_odb_object_type(obj);
	data = git_odb_object_data(obj);
	len = git_odb_object_size(obj);
	rc = t->kind == KIND_BLOB ? 0 : copy_stored(b, &t->id);
	if (rc == 0) {
		rc = ckpt_odb_put(b->out, type, data, len, &got);
		if (rc == 0 && !git_oid_equal(&got, &t->id))
			rc = util_err(-EIO, "objects view: object %s is corrupt",
				      git_oid_tostr_s(&t->id));
	}
	if (rc >= 0)
		rc = push_named(b, &t->id, type, data, len);
	git_odb_object_free(obj);
	return rc;
}

/* Hard-links the files of directory `name` of store `from` into the same one of `to`. */
static int link_dir(int from, int to, const char *name)
{
	int sfd = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), dfd = -1;
	DIR *s = NULL;
	struct dirent *f;
	int rc = 0;

	if (sfd < 0 || (mkdirat(to, name, 0755) < 0 && errno != EEXIST) ||
	    (dfd = openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    !(s = fdopendir(sfd)))
		rc = -errno;
	else
		sfd = -1; /* the DIR's now */
	while (rc == 0 && (f = readdir(s)))
		if (f->d_name[0] != '.' && linkat(dirfd(s), f->d_name, dfd, f->d_name, 0) < 0)
			rc = -errno;
	if (s)
		closedir(s);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* Every file of the store `from` (its packs and loose objects), hard-linked into `to`. */
static int link_store(const char *from, const char *to)
{
	int f = open(from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int t = open(to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = f >= 0 ? fdopendir(dup(f)) : NULL;
	struct dirent *e;
	int rc = d && t >= 0 ? 0 : -errno;

	while (rc == 0 && (e = readdir(d)))
		if (!strcmp(e->d_name, "pack") ||
		    (strlen(e->d_name) == 2 && strspn(e->d_name, "0123456789abcdef") == 2))
			rc = link_dir(f, t, e->d_name);
	if (d)
		closedir(d);
	if (f >= 0)
		close(f);
	if (t >= 0)
		close(t);
	return rc < 0 ? util_err(rc, "cannot link %s into %s: %s", from, to, strerror(-rc)) : 0;
}

static bool is_hex_id(const char *s)
{
	return strlen(s) == GIT_OID_HEXSZ && strspn(s, "0123456789abcdef") == GIT_OID_HEXSZ;
}

/* The stores under dir, newest first: names (caller frees each and the array), count. */
struct store_ent {
	char hex[GIT_OID_HEXSZ + 1];
	int64_t mtime_ns;
};

static int newest_first(const void *a, const void *b)
{
	int64_t x = ((const struct store_ent *)a)->mtime_ns,
		y = ((const struct store_ent *)b)->mtime_ns;

	return x < y ? 1 : x > y ? -1 : 0;
}

static int stores_list(const char *dir, struct store_ent **out, size_t *n)
{
	DIR *d = opendir(dir);
	struct store_ent *v = NULL;
	struct dirent *e;
	size_t cap = 0;
	struct stat st;

	*out = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (!is_hex_id(e->d_name) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (*n == cap) {
			struct store_ent *w = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

			if (!w) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = w;
		}
		snprintf(v[*n].hex, sizeof(v[*n].hex), "%s", e->d_name);
		v[(*n)++].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), newest_first);
	*out = v;
	return 0;
}

static size_t packs_in(const char *store)
{
	char *path = util_path_join(store, "pack");
	DIR *d = path ? opendir(path) : NULL;
	struct dirent *e;
	size_t n = 0;

	while (d && (e = readdir(d)))
		n += strlen(e->d_name) > 5 && !strcmp(e->d_name + strlen(e->d_name) - 5, ".pack");
	if (d)
		closedir(d);
	free(path);
	return n;
}

/* The newest store of an ancestor of base, to start from: its path, or NULL. */
static char *ancestor_store(git_repository *repo, const char *dir, const git_oid *base)
{
	struct store_ent *v = NULL;
	char *found = NULL;
	size_t n = 0;

	if (stores_list(dir, &v, &n) < 0)
		return NULL; /* a full build then */
	for (size_t i = 0, tried = 0; i < n && tried < ANCESTORS_MAX && !found; i++) {
		char *path = util_path_join(dir, v[i].hex);
		git_oid id;

		tried++;
		if (path && git_oid_fromstr(&id, v[i].hex) == 0 &&
		    git_graph_descendant_of(repo, base, &id) == 1 && packs_in(path) <= PACKS_MAX)
			found = path;
		else
			free(path);
	}
	free(v);
	return found;
}

/*
 * Writes into tmp (an objects directory) every object the n tips reach in repo (whose object
 * directory is objects) that prev (NULL: none) lacks; prev must be whole (what it has, it has
 * below too). -errno, message.
 */
static int walk_into(git_repository *repo, const char *objects, const char *tmp, git_odb *prev,
		     const git_oid *tips, size_t n)
{
	struct build b = {.prev = prev};
	int rc = repo ? 0 : -EIO, out = -1;

	if (rc == 0 && git_repository_odb(&b.origin, repo) < 0)
		rc = util_err(-EIO, "objects view: %s", git_error_last()->message);
	rc = rc ?: ckpt_odb_open(tmp, &b.out);
	if (rc == 0 && (out = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		rc = util_err(-errno, "cannot open %s: %s", tmp, strerror(errno));
	rc = rc ?: core_objsrc_open(objects, out, &b.src);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (push(&b, &tips[i], KIND_WALK) < 0)
			rc = util_err(-ENOMEM, "out of memory");
	while (rc == 0 && b.n) {
		struct todo t = b.stack[--b.n];

		rc = copy_one(&b, &t);
	}
	rc = rc ?: ckpt_odb_flush(b.out);
	core_objsrc_free(b.src);
	if (out >= 0)
		close(out);
	ckpt_odb_free(b.out);
	git_odb_free(b.origin);
	free(b.seen.slot);
	free(b.stack);
	return rc;
}

/* Writes the store of base into tmp (an empty directory): -errno, message. */
static int build_into(git_repository *repo, const char *objects, const char *dir, const char *tmp,
		      const git_oid *base)
{
	git_odb *prev_odb = NULL;
	char *prev = repo ? ancestor_store(repo, dir, base) : NULL;
	int rc = repo ? 0 : -EIO;

	if (rc == 0 && prev)
		rc = link_store(prev, tmp);
	/*
	 * A first store: the host's git packs the history with the origin's deltas
	 * (core/objects_pack.c), else the walk. On an ancestor's store the walk adds the few
	 * objects of the new commits.
	 */
	if (rc == 0 && !prev &&
	    core_objects_pack(git_repository_commondir(repo), tmp, base, NULL) == 0)
		goto out;
	if (rc == 0 && prev && git_odb_open(&prev_odb, prev) < 0)
		rc = util_err(-EIO, "objects view: %s", git_error_last()->message);
	rc = rc ?: walk_into(repo, objects, tmp, prev_odb, base, 1);
out:
	git_odb_free(prev_odb);
	free(prev);
	return rc;
}

/* The repository a store is built from: the origin's, or (sub) its store of a submodule. */
static int source_open(struct core_project *p, const char *sub, git_repository **repo,
		       char **objects)
{
	char *path = sub ? util_path_join(p->commondir, sub) : NULL;

	*repo = NULL;
	*objects = NULL;
	if (!sub) {
		*repo = core_project_repo(p);
		*objects = strdup(core_project_objects_dir(p));
		return *repo && *objects ? 0 : util_err(-EIO, "objects view: %s", util_err_msg());
	}
	if (!path || !(*objects = util_path_join(path, "objects"))) {
		free(path);
		return util_err(-ENOMEM, "out of memory");
	}
	if (git_repository_open_bare(repo, path) < 0) {
		*repo = NULL;
		free(path);
		return util_err(-EIO, "submodule store: %s",
				git_error_last() ? git_error_last()->message : "?");
	}
	free(path);
	return 0;
}

static int build(struct core_project *p, const char *sub, const char *dir, const char *final,
		 const char *hex)
{
	git_repository *repo = NULL;
	char *objects = NULL;
	char *tmp = util_asprintf("%s/.new-%s.XXXXXX", dir, hex);
	git_oid base;
	int rc = util_mkdir_p(dir, 0755);

	if (rc == 0 && !tmp)
		rc = -ENOMEM;
	if (rc == 0 && (!mkdtemp(tmp) || chmod(tmp, 0755) < 0))
		rc = util_err(-errno, "cannot create %s: %s", tmp, strerror(errno));
	else if (rc == 0 && git_oid_fromstr(&base, hex) < 0)
		rc = util_err(-EINVAL, "objects view: bad commit id %s", hex);
	if (rc == 0) {
		core_git_ready();
		rc = source_open(p, sub, &repo, &objects);
	}
	if (rc == 0)
		rc = build_into(repo, objects, dir, tmp, &base);
	if (sub)
		git_repository_free(repo);
	free(objects);
	/* Published whole; a concurrent build of the same base that came first is as good. */
	if (rc == 0) {
		int r = util_rename_dir_noreplace(AT_FDCWD, tmp, AT_FDCWD, final);

		if (r < 0 && r != -EEXIST && r != -ENOTEMPTY)
			rc = util_err(r, "cannot create %s: %s", final, strerror(-r));
	}
	if (tmp)
		(void)util_rm_rf(tmp); /* gone already when renamed */
	free(tmp);
	return rc;
}

/* The store of base_hex (of the origin, or of its submodule store sub) under dir (freed). */
static int view_in(struct core_project *p, const char *sub, char *dir, const char *base_hex,
		   char **out)
{
	char *final = dir && base_hex ? util_path_join(dir, base_hex) : NULL;
	struct stat st;
	int rc = 0;

	if (out)
		*out = NULL;
	if (!base_hex || !is_hex_id(base_hex))
		rc =
		    util_err(-EINVAL, "objects view: bad commit id '%s'", base_hex ? base_hex : "");
	else if (!final)
		rc = util_err(-ENOMEM, "out of memory");
	else if (lstat(final, &st) < 0 || !S_ISDIR(st.st_mode))
		rc = build(p, sub, dir, final, base_hex);
	if (rc == 0 && out) {
		*out = final;
		final = NULL;
	}
	free(final);
	free(dir);
	return rc;
}

int core_objects_view(struct core_project *p, const char *base_hex, char **out)
{
	return view_in(p, NULL, util_path_join(p->state_dir, VIEW_DIR), base_hex, out);
}

/*
 * A submodule's (core/submodules.c): from the origin's store of it, <commondir>/<gitdir>,
 * into objects-view/modules/<commit>, which the main stores' listing passes over; pruned
 * (prune_subs) when no workspace's base shows that submodule commit.
 */
int core_objects_view_sub(struct core_project *p, const char *gitdir, const char *commit_hex,
			  char **out)
{
	if (!fs_submodule_name_ok(gitdir))
		return util_err(-EINVAL, "objects view: bad submodule store '%s'", gitdir);
	return view_in(p, gitdir, util_asprintf("%s/%s/modules", p->state_dir, VIEW_DIR),
		       commit_hex, out);
}

/* Whether some workspace of the database is based on hex. */
static bool in_use(sqlite3 *db, const char *hex)
{
	sqlite3_stmt *st = NULL;
	bool yes = true; /* when the database cannot say, the store stays */

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM workspaces WHERE base_commit = ? LIMIT 1", -1,
			       &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, hex, -1, SQLITE_STATIC);
		yes = sqlite3_step(st) != SQLITE_DONE;
	}
	sqlite3_finalize(st);
	return yes;
}

/* What a build or a prune that was killed left (.new-*, .del-*), an hour on. */
static void drop_leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	while (d && (e = readdir(d)))
		if ((!strncmp(e->d_name, ".new-", 5) || !strncmp(e->d_name, ".del-", 5)) &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode) && st.st_mtime < time(NULL) - 3600)
			(void)util_rm_rf_at(dirfd(d), e->d_name);
	if (d)
		closedir(d);
}

/*
 * The commits of the submodules the workspaces' bases show, each as "\nHEX\n" in the result
 * (caller frees); NULL when that cannot be known (then no submodule store is removed).
 */
static char *subs_in_use(struct core_project *p, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	char *all = strdup("\n");
	int step = SQLITE_ERROR;

	if (!all || sqlite3_prepare_v2(db, "SELECT name, base_commit FROM workspaces", -1, &st,
				       NULL) != SQLITE_OK) {
		free(all);
		return NULL;
	}
	while (all && (step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *base = (const char *)sqlite3_column_text(st, 1);
		char *root = name ? util_asprintf("%s/workspaces/%s", p->state_dir, name) : NULL;
		struct fs_submodule *v = NULL;
		size_t n = 0;

		/* Each workspace's record; the walk for one an older version made. */
		if (!base || !root || core_ws_submodules(p, root, base, &v, &n) < 0) {
			free(all);
			all = NULL;
		}
		free(root);
		for (size_t i = 0; all && i < n; i++) {
			char *more;

			if (v[i].state != FS_SUBMODULE_PRESENT)
				continue;
			more = util_asprintf("%s%s\n", all, v[i].commit);
			free(all);
			all = more;
		}
		fs_submodules_free(v, n);
	}
	sqlite3_finalize(st);
	if (all && step != SQLITE_DONE) {
		free(all);
		all = NULL;
	}
	return all;
}

/* Submodule indexes (core/submodules.c: index-cache/modules/<commit>-<time>) not in used. */
static void prune_sub_indexes(struct core_project *p, const char *used)
{
	char *path = util_asprintf("%s/index-cache/modules", p->state_dir);
	DIR *d = path ? opendir(path) : NULL;
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char key[GIT_OID_HEXSZ + 3];

		if (strlen(e->d_name) <= GIT_OID_HEXSZ + 1 || e->d_name[GIT_OID_HEXSZ] != '-' ||
		    strspn(e->d_name, "0123456789abcdef") != GIT_OID_HEXSZ)
			continue;
		snprintf(key, sizeof(key), "\n%.40s\n", e->d_name);
		if (!strstr(used, key))
			(void)unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
	free(path);
}

/* Submodule stores (objects-view/modules/) no workspace's base shows any more. */
static void prune_subs(struct core_project *p, sqlite3 *db, const char *dir)
{
	char *sub = util_path_join(dir, "modules"), *used = NULL;
	char *idx = util_asprintf("%s/index-cache/modules", p->state_dir);
	struct store_ent *v = NULL;
	size_t n = 0;

	/* Nothing to look for (most repositories): no submodule's tree is read. */
	if (!sub || !idx || stores_list(sub, &v, &n) < 0 || (n == 0 && access(idx, F_OK) < 0) ||
	    !(used = subs_in_use(p, db)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		char key[GIT_OID_HEXSZ + 3];
		char *path = util_path_join(sub, v[i].hex);
		char *trash = util_asprintf("%s/.del-%s.%d", sub, v[i].hex, (int)getpid());

		snprintf(key, sizeof(key), "\n%s\n", v[i].hex);
		if (path && trash && !strstr(used, key) && rename(path, trash) == 0)
			(void)util_rm_rf(trash);
		free(path);
		free(trash);
	}
	drop_leftovers(sub);
	prune_sub_indexes(p, used);
out:
	free(idx);
	free(used);
	free(v);
	free(sub);
}

void core_objects_view_prune(struct core_project *p, sqlite3 *db)
{
	char *dir = util_path_join(p->state_dir, VIEW_DIR);
	struct store_ent *v = NULL;
	size_t n = 0;

	if (!dir || stores_list(dir, &v, &n) < 0)
		goto out;
	/* The newest stays: the next workspace's base is most often its descendant. */
	for (size_t i = 1; i < n; i++) {
		char *path = util_path_join(dir, v[i].hex);
		char *trash = util_asprintf("%s/.del-%s.%d", dir, v[i].hex, (int)getpid());

		/* Out of sight first: a box being set up binds a whole store or none. */
		if (path && trash && !in_use(db, v[i].hex) && rename(path, trash) == 0)
			(void)util_rm_rf(trash);
		free(path);
		free(trash);
	}
	drop_leftovers(dir);
	prune_subs(p, db, dir);
out:
	free(v);
	free(dir);
}

/* ---- the origin's branches and tags (core_objects_tips) --------------------------------- */

static int oid_order(const void *a, const void *b)
{
	return git_oid_cmp(a, b);
}

/* The name of a set of tips: the hash of their sorted ids, as hex. */
static int tips_digest(const git_oid *tips, size_t n, char hex[GIT_OID_HEXSZ + 1])
{
	git_oid *v = n ? malloc(n * sizeof(*v)) : NULL;
	char *text = malloc(n * (GIT_OID_HEXSZ + 1) + 1);
	git_oid d;
	int rc = 0;

	if ((n && !v) || !text) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (n)
		memcpy(v, tips, n * sizeof(*v));
	if (n)
		qsort(v, n, sizeof(*v), oid_order);
	text[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		git_oid_tostr(text + i * (GIT_OID_HEXSZ + 1), GIT_OID_HEXSZ + 1, &v[i]);
		text[i * (GIT_OID_HEXSZ + 1) + GIT_OID_HEXSZ] = '\n';
	}
	if (git_odb_hash(&d, text, n * (GIT_OID_HEXSZ + 1), GIT_OBJECT_BLOB) < 0)
		rc = util_err(-EIO, "objects view: %s", git_error_last()->message);
	else
		git_oid_tostr(hex, GIT_OID_HEXSZ + 1, &d);
out:
	free(v);
	free(text);
	return rc;
}

/* store/info/alternates: every part of the store, so git reads them all. */
static int tips_alternates(const char *store, const struct store_ent *v, size_t n)
{
	char *text = strdup(""), *path = util_asprintf("%s/info/alternates", store);
	char *info = util_path_join(store, "info");
	int rc = text && path && info ? util_mkdir_p(info, 0755) : -ENOMEM;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		/* Relative to the store (git reads them so): it was made in a staging directory. */
		char *t = util_asprintf("%s%s\n", text, v[i].hex);

		free(text);
		if (!(text = t))
			rc = -ENOMEM;
	}
	rc = rc ?: util_write_file(path, text, strlen(text), 0644);
	free(text);
	free(path);
	free(info);
	return rc < 0 ? util_err(rc, "cannot write %s/info/alternates", store) : 0;
}

int core_objects_tips(struct core_project *p, const char *base_hex, const char *store,
		      const git_oid *tips, size_t n)
{
	char hex[GIT_OID_HEXSZ + 1];
	char *base = NULL, *final = NULL, *tmp = NULL;
	struct store_ent *v = NULL;
	git_odb *prev = NULL;
	size_t nv = 0;
	struct stat st;
	int rc = core_objects_view(p, base_hex, &base);

	rc = rc ?: tips_digest(tips, n, hex);
	rc = rc ?: util_mkdir_p(store, 0755);
	if (rc == 0 && !(final = util_path_join(store, hex)))
		rc = -ENOMEM;
	if (rc == 0 && lstat(final, &st) == 0 && S_ISDIR(st.st_mode))
		goto alternates; /* this set of tips was copied already */
	if (rc == 0 && !(tmp = util_asprintf("%s/.new-%s.XXXXXX", store, hex)))
		rc = -ENOMEM;
	if (rc == 0 && (!mkdtemp(tmp) || chmod(tmp, 0755) < 0)) {
		rc = util_err(-errno, "cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		tmp = NULL;
	}
	/* What is there already: the base's store and every earlier part, each whole. */
	if (rc == 0 && (git_odb_new(&prev) < 0 || git_odb_add_disk_alternate(prev, base) < 0))
		rc = util_err(-EIO, "objects view: %s", git_error_last()->message);
	rc = rc ?: stores_list(store, &v, &nv);
	for (size_t i = 0; rc == 0 && i < nv; i++) {
		char *part = util_path_join(store, v[i].hex);

		if (!part || git_odb_add_disk_alternate(prev, part) < 0)
			rc = util_err(-EIO, "objects view: cannot open %s", part ? part : store);
		free(part);
	}
	if (rc == 0) {
		core_git_ready();
		rc = walk_into(core_project_repo(p), core_project_objects_dir(p), tmp, prev, tips,
			       n);
	}
	/* Published whole; a concurrent copy of the same tips that came first is as good. */
	if (rc == 0) {
		int r = util_rename_dir_noreplace(AT_FDCWD, tmp, AT_FDCWD, final);

		if (r < 0 && r != -EEXIST && r != -ENOTEMPTY)
			rc = util_err(r, "cannot create %s: %s", final, strerror(-r));
	}
alternates:
	free(v);
	v = NULL;
	if (rc == 0 && (rc = stores_list(store, &v, &nv)) == 0)
		rc = tips_alternates(store, v, nv);
	if (tmp)
		(void)util_rm_rf(tmp);
	if (rc == 0)
		drop_leftovers(store);
	git_odb_free(prev);
	free(v);
	free(tmp);
	free(final);
	free(base);
	return rc;
}
