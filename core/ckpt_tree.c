/*
 * core/ckpt_tree.c: the view as a git tree, built from the base tree and the upper layer only
 * (fs/layer.c defines the layer). A directory the layer does not hold is the base's subtree by
 * id, never read; one it holds starts from its lower tree's entries (a tree builder copies
 * that one directory's entries), then the layer's entries win: whiteouts remove, files and
 * symlinks are hashed into the workspace's own object store, directories recurse. What git
 * cannot hold (empty directories, FIFOs, sockets, devices) is left out, and so is the view's
 * .git. A cache of (inode, size, mtime, ctime) -> blob id in NAME/checkpoint.cache keeps each
 * changed file hashed once across checkpoints; entries younger than CACHE_RACY_NS are not
 * kept (a write in the same timestamp tick would not change them). The same file lists the
 * trees the last checkpoint built (as "0 -1 0 0 ID": no file has inode 0), so a directory
 * whose tree did not change is not written again; every id the file names is only a hint for
 * the store, checked by libgit2 where a tree takes it in, and the file is dropped when a
 * checkpoint fails.
 */
#include "core/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>

#include "fs/fs.h"

#define CACHE_RACY_NS (2LL * 1000000000)
/* "INO SIZE MTIME CTIME HEX\n": four 64-bit numbers and a 40-digit id. */
#define CACHE_LINE_MAX (4 * 21 + GIT_OID_HEXSZ + 2)

struct cache_ent {
	ino_t ino;
	int64_t size, mtime, ctime;
	git_oid oid;
	bool used;
};

struct build {
	git_repository *repo;	/* reads: the workspace's objects and the origin's */
	git_repository *wrepo;	/* writes: the checkpoint's own store only (see ckpt_writer) */
	git_odb_backend *store; /* borrowed from wrepo: its pack is written at the end */
	struct cache_ent *old;	/* sorted by inode */
	size_t n_old;
	struct cache_ent *fresh; /* this walk's, written back at the end */
	size_t n_fresh, cap_fresh;
	int64_t start_ns;
	size_t hashed, reused;
};

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static int cmp_ino(const void *a, const void *b)
{
	const struct cache_ent *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return git_oid_cmp(&x->oid, &y->oid); /* trees (inode 0) in one order */
}

static void cache_load(struct build *b, const char *path)
{
	FILE *f = fopen(path, "re");
	char hex[GIT_OID_HEXSZ + 1];
	struct cache_ent e = {0};
	unsigned long long ino;
	size_t cap = 0;

	while (f && fscanf(f, "%llu %lld %lld %lld %40s", &ino, (long long *)&e.size,
			   (long long *)&e.mtime, (long long *)&e.ctime, hex) == 5) {
		if (git_oid_fromstr(&e.oid, hex) < 0)
			continue;
		if (b->n_old == cap) {
			struct cache_ent *v =
			    realloc(b->old, (cap = cap ? 2 * cap : 256) * sizeof(*v));

			if (!v)
				break;
			b->old = v;
		}
		e.ino = (ino_t)ino;
		b->old[b->n_old++] = e;
	}
	if (f)
		fclose(f);
	if (b->n_old)
		qsort(b->old, b->n_old, sizeof(*b->old), cmp_ino);
}

/* Written atomically; a failure only costs hashing again next time. */
/* The walk found exactly the entries it started from (the usual case: nothing changed). */
static bool cache_same(struct build *b)
{
	if (b->n_fresh != b->n_old)
		return false;
	if (b->n_fresh)
		qsort(b->fresh, b->n_fresh, sizeof(*b->fresh), cmp_ino);
	for (size_t i = 0; i < b->n_fresh; i++)
		if (b->fresh[i].ino != b->old[i].ino || b->fresh[i].size != b->old[i].size ||
		    b->fresh[i].mtime != b->old[i].mtime || b->fresh[i].ctime != b->old[i].ctime ||
		    !git_oid_equal(&b->fresh[i].oid, &b->old[i].oid))
			return false;
	return true;
}

/*
 * Written when it changed, by rename over the old one but without fsync: the cache only
 * saves hashing, and a cache lost in a crash costs hashing again (ext4 writes a file's data
 * before a rename that replaces another commits).
 */
static void cache_save(struct build *b, const char *dir)
{
	size_t cap = CACHE_LINE_MAX * (b->n_fresh + 1), len = 0;
	char *text = NULL, *tmp = NULL, *path = NULL, hex[GIT_OID_HEXSZ + 1];
	int fd = -1;

	if (cache_same(b))
		return;
	text = malloc(cap);
	for (size_t i = 0; text && i < b->n_fresh && cap - len > CACHE_LINE_MAX; i++) {
		struct cache_ent *e = &b->fresh[i];

		git_oid_tostr(hex, sizeof(hex), &e->oid);
		len += (size_t)snprintf(text + len, cap - len, "%llu %lld %lld %lld %s\n",
					(unsigned long long)e->ino, (long long)e->size,
					(long long)e->mtime, (long long)e->ctime, hex);
	}
	path = util_path_join(dir, CKPT_CACHE_FILE);
	tmp = path ? util_asprintf("%s.%d", path, (int)getpid()) : NULL;
	if (text && tmp)
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && (util_write_all(fd, text, len) < 0 || rename(tmp, path) < 0))
		unlink(tmp); /* best effort: the next checkpoint hashes again */
	if (fd >= 0)
		close(fd);
	free(tmp);
	free(path);
	free(text);
}

static void cache_put(struct build *b, const struct cache_ent *e)
{
	struct cache_ent *v;

	if (b->n_fresh == b->cap_fresh) {
		b->cap_fresh = b->cap_fresh ? 2 * b->cap_fresh : 256;
		v = realloc(b->fresh, b->cap_fresh * sizeof(*v));
		if (!v)
			return;
		b->fresh = v;
	}
	b->fresh[b->n_fresh++] = *e;
}

static void cache_keep(struct build *b, const struct stat *st, const git_oid *oid)
{
	if (b->start_ns - ts_ns(&st->st_mtim) < CACHE_RACY_NS ||
	    b->start_ns - ts_ns(&st->st_ctim) < CACHE_RACY_NS)
		return;
	cache_put(b, &(struct cache_ent){.ino = st->st_ino,
					 .size = st->st_size,
					 .mtime = ts_ns(&st->st_mtim),
					 .ctime = ts_ns(&st->st_ctim),
					 .oid = *oid});
}

/* A tree this checkpoint built (its directory's contents are in the ids, not the stat). */
static void cache_keep_tree(struct build *b, const git_oid *oid)
{
	cache_put(b, &(struct cache_ent){.ino = 0, .size = -1, .oid = *oid});
}

void ckpt_cache_drop(const struct core_ws *ws)
{
	char *path = util_path_join(ws->root, CKPT_CACHE_FILE);

	if (path)
		unlink(path);
	free(path);
}

static const struct cache_ent *cache_find(const struct build *b, const struct stat *st)
{
	struct cache_ent key = {.ino = st->st_ino};
	const struct cache_ent *e = NULL;

	/* By inode alone: a file's inode is in the cache once. */
	for (size_t lo = 0, hi = b->n_old; lo < hi && !e;) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->old[mid].ino == key.ino)
			e = &b->old[mid];
		else if (b->old[mid].ino < key.ino)
			lo = mid + 1;
		else
			hi = mid;
	}

	if (e && e->size == st->st_size && e->mtime == ts_ns(&st->st_mtim) &&
	    e->ctime == ts_ns(&st->st_ctim))
		return e;
	return NULL;
}

/* Files up to this size are read whole into memory to be stored; larger ones are streamed. */
#define BLOB_IN_MEMORY_MAX (64LL << 20)

/* The file open on fd (st: its stat), read whole and stored as a blob. */
static int store_read(struct build *b, int fd, const struct stat *st, git_oid *oid)
{
	size_t len = (size_t)st->st_size, got = 0;
	char *buf = malloc(len ? len : 1);
	int rc = buf ? 0 : -ENOMEM;

	while (rc == 0 && got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = n < 0 ? -errno : -EAGAIN; /* shorter than it was: changed meanwhile */
		else
			got += (size_t)n;
	}
	if (rc == 0 && git_blob_create_from_buffer(oid, b->wrepo, buf, len) < 0)
		rc = -EIO;
	free(buf);
	return rc;
}

/* dir/name, a regular file of the layer, as a blob (hashed unless the cache knows it). */
static int hash_file(struct build *b, int dir, const char *name, const struct stat *st,
		     git_oid *oid)
{
	const struct cache_ent *c = cache_find(b, st);
	struct stat now;
	char p[64];
	int fd, rc;

	if (c) {
		*oid = c->oid;
		b->reused++;
		cache_keep(b, st, oid);
		return 0;
	}
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return util_err(-errno, "checkpoint: cannot read %s: %s", name, strerror(errno));
	rc = fstat(fd, &now) == 0 && S_ISREG(now.st_mode) ? 0 : -EAGAIN;
	if (rc == 0 && now.st_size <= BLOB_IN_MEMORY_MAX) {
		/* Read here: libgit2's from_disk resolves the path, a readlink per component. */
		rc = store_read(b, fd, &now, oid);
		if (rc < 0)
			rc = util_err(rc, "checkpoint: cannot store %s: %s", name,
				      rc == -EIO && git_error_last() ? git_error_last()->message
								     : strerror(-rc));
	} else if (rc == 0) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if (git_blob_create_from_disk(oid, b->wrepo, p) < 0)
			rc = util_err(-EIO, "checkpoint: cannot store %s: %s", name,
				      git_error_last()->message);
	}
	close(fd);
	if (rc == 0) {
		b->hashed++;
		cache_keep(b, &now, oid);
	}
	return rc == -EAGAIN ? util_err(-EAGAIN, "checkpoint: %s changed while it was read", name)
			     : rc;
}

static int hash_link(struct build *b, int dir, const char *name, git_oid *oid)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dir, name, target, sizeof(target));

	if (n < 0 || (size_t)n >= sizeof(target))
		return util_err(n < 0 ? -errno : -ENAMETOOLONG, "checkpoint: cannot read link %s",
				name);
	if (git_blob_create_from_buffer(oid, b->wrepo, target, (size_t)n) < 0)
		return util_err(-EIO, "checkpoint: cannot store %s: %s", name,
				git_error_last()->message);
	return 0;
}

/* The lower tree of layer directory `sub` named `name` in a directory whose lower is lower. */
static int sub_lower(struct build *b, int sub, const git_tree *lower, const char *name,
		     git_tree **out)
{
	char hex[GIT_OID_HEXSZ + 1];
	const git_tree_entry *e;
	git_oid oid;

	*out = NULL;
	switch (fs_layer_dir_lower(sub, hex)) {
	case FS_LAYER_LOWER_NONE:
		return 0;
	case FS_LAYER_LOWER_TREE:
		if (git_oid_fromstr(&oid, hex) < 0 || git_tree_lookup(out, b->repo, &oid) < 0)
			return util_err(-EIO, "checkpoint: %s names tree %s, which is missing",
					name, hex);
		return 0;
	case FS_LAYER_LOWER_SAME:
		break;
	}
	e = lower ? git_tree_entry_byname(lower, name) : NULL;
	if (!e || git_tree_entry_filemode(e) != GIT_FILEMODE_TREE)
		return 0;
	return git_tree_lookup(out, b->repo, git_tree_entry_id(e)) < 0
		   ? util_err(-EIO, "checkpoint: missing tree %s", name)
		   : 0;
}

static int build_dir(struct build *b, int dir, const git_tree *lower, bool root, git_oid *out,
		     bool *empty);

static int add_entry(struct build *b, git_treebuilder *tb, int dir, const git_tree *lower,
		     const char *name)
{
	struct stat st;
	git_filemode_t mode;
	git_oid oid;
	int rc = 0;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			   ? 0
			   : util_err(-errno, "checkpoint: %s: %s", name, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		git_tree *sl = NULL;
		bool empty = false;

		if (sub < 0)
			return util_err(-errno, "checkpoint: %s: %s", name, strerror(errno));
		rc = sub_lower(b, sub, lower, name, &sl);
		rc = rc ?: build_dir(b, sub, sl, false, &oid, &empty);
		git_tree_free(sl);
		close(sub);
		if (rc < 0)
			return rc;
		if (empty) {
			git_treebuilder_remove(tb, name); /* git holds no empty directory */
			return 0;
		}
		mode = GIT_FILEMODE_TREE;
	} else if (S_ISREG(st.st_mode)) {
		rc = hash_file(b, dir, name, &st, &oid);
		mode = st.st_mode & 0111 ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
	} else if (S_ISLNK(st.st_mode)) {
		rc = hash_link(b, dir, name, &oid);
		mode = GIT_FILEMODE_LINK;
	} else {
		/* A whiteout, or what git cannot hold: either way nothing of the lower shows. */
		git_treebuilder_remove(tb, name);
		return 0;
	}
	if (rc == 0 && git_treebuilder_insert(NULL, tb, name, &oid, mode) < 0)
		rc = util_err(-EIO, "checkpoint: %s: %s", name, git_error_last()->message);
	return rc;
}

static int build_dir(struct build *b, int dir, const git_tree *lower, bool root, git_oid *out,
		     bool *empty)
{
	git_treebuilder *tb = NULL;
	struct dirent *de;
	DIR *d = NULL;
	int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0), rc = 0;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return util_err(-errno, "checkpoint: cannot list the layer: %s", strerror(errno));
	}
	if (git_treebuilder_new(&tb, b->wrepo, lower) < 0) {
		rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
		goto out;
	}
	while (rc == 0 && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (root && !strcmp(de->d_name, ".git"))
			continue; /* the view shows the workspace's gitdir there */
		rc = add_entry(b, tb, dir, lower, de->d_name);
	}
	if (rc == 0 && errno)
		rc = util_err(-errno, "checkpoint: cannot list the layer: %s", strerror(errno));
	if (rc == 0) {
		*empty = git_treebuilder_entrycount(tb) == 0;
		if (git_treebuilder_write(out, tb) < 0)
			rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
		else
			cache_keep_tree(b, out);
	}
out:
	git_treebuilder_free(tb);
	closedir(d);
	return rc;
}

/*
 * A repository whose only object store is ckpt_odb.c's (one pack of the new objects, written
 * cheaply), for what a checkpoint writes. Writing through the workspace's own repository made
 * libgit2 look for every new object in every store first and rescan the packs after each miss
 * (the origin's and the workspace's). The store answers what exists from its own pack first,
 * then from repo's stores without a rescan.
 */
static int ckpt_writer(const struct core_ws *ws, git_repository *repo, git_repository **out,
		       git_odb_backend **store)
{
	git_odb_backend *loose = NULL;
	git_odb *odb = NULL, *lookup = NULL;
	int rc;

	*out = NULL;
	if (git_repository_odb(&lookup, repo) < 0)
		return util_err(-EIO, "checkpoint: %s", git_error_last()->message);
	rc = ckpt_odb_new(ws, lookup, &loose);
	git_odb_free(lookup); /* repo, which outlives the writer, holds it */
	if (rc < 0)
		return rc;
	*store = loose;
	if (git_odb_new(&odb) < 0) {
		loose->free(loose);
		rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
	} else if (git_odb_add_backend(odb, loose, 1) < 0) {
		loose->free(loose);
		rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
	} else if (git_repository_wrap_odb(out, odb) < 0) {
		rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
	}
	git_odb_free(odb); /* the repository holds its own reference */
	return rc;
}

int ckpt_view_tree(git_repository *repo, const struct core_ws *ws, git_oid *tree,
		   struct ckpt_stats *stats)
{
	struct build b = {.repo = repo, .start_ns = util_now_ns()};
	git_commit *base = NULL;
	git_tree *lower = NULL;
	git_oid oid;
	char *cache = util_path_join(ws->root, CKPT_CACHE_FILE);
	int layer = open(ws->layer, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = 0;
	bool empty;

	if (!cache || layer < 0) {
		rc = util_err(cache ? -errno : -ENOMEM, "checkpoint: cannot open %s: %s", ws->layer,
			      strerror(errno));
		goto out;
	}
	if (git_oid_fromstr(&oid, ws->base_commit) < 0 ||
	    git_commit_lookup(&base, repo, &oid) < 0 || git_commit_tree(&lower, base) < 0) {
		rc = util_err(-EIO, "checkpoint: base %s: %s", ws->base_commit,
			      git_error_last()->message);
		goto out;
	}
	cache_load(&b, cache);
	rc = ckpt_writer(ws, repo, &b.wrepo, &b.store);
	for (size_t i = 0; rc == 0 && i < b.n_old; i++)
		rc = ckpt_odb_know(b.store, &b.old[i].oid);
	rc = rc ?: build_dir(&b, layer, lower, true, tree, &empty);
	rc = rc ?: ckpt_odb_flush(b.store);
	if (rc == 0)
		cache_save(&b, ws->root);
	else
		ckpt_cache_drop(ws); /* in case an id it named is at fault */
	if (stats) {
		stats->hashed = b.hashed;
		stats->reused = b.reused;
	}
out:
	git_repository_free(b.wrepo);
	git_tree_free(lower);
	git_commit_free(base);
	if (layer >= 0)
		close(layer);
	free(b.old);
	free(b.fresh);
	free(cache);
	return rc;
}
