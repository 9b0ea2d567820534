/*
 * core/ckpt_cache.c: what the last checkpoint learnt, in NAME/checkpoint.cache. Each changed
 * file of the layer as (inode, size, mtime, ctime) -> blob id, so a file is hashed once across
 * checkpoints; entries younger than CACHE_RACY_NS are not kept (a write in the same timestamp
 * tick would not change them). The same file lists the trees the last checkpoint built (as
 * "0 -1 0 0 ID": no file has inode 0), so a directory whose tree did not change is not written
 * again. Every id it names is stored in the workspace (the file is written only after the
 * checkpoint's objects are, and dropped when a checkpoint fails).
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_RACY_NS (2LL * 1000000000)
/* "INO SIZE MTIME CTIME HEX\n": four 64-bit numbers and a 40-digit id. */
#define CACHE_LINE_MAX (4 * 21 + GIT_OID_HEXSZ + 2)

struct cache_ent {
	ino_t ino;
	int64_t size, mtime, ctime;
	git_oid oid;
};

struct ckpt_cache {
	char *path;
	struct cache_ent *old; /* sorted by inode */
	size_t n_old;
	struct cache_ent *fresh; /* this checkpoint's, written back at the end */
	size_t n_fresh, cap_fresh;
	int64_t start_ns;
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

static void load(struct ckpt_cache *c)
{
	FILE *f = fopen(c->path, "re");
	char hex[GIT_OID_HEXSZ + 1];
	struct cache_ent e = {0};
	unsigned long long ino;
	size_t cap = 0;

	while (f && fscanf(f, "%llu %lld %lld %lld %40s", &ino, (long long *)&e.size,
			   (long long *)&e.mtime, (long long *)&e.ctime, hex) == 5) {
		if (git_oid_fromstr(&e.oid, hex) < 0)
			continue;
		if (c->n_old == cap) {
			struct cache_ent *v =
			    realloc(c->old, (cap = cap ? 2 * cap : 256) * sizeof(*v));

			if (!v)
				break;
			c->old = v;
		}
		e.ino = (ino_t)ino;
		c->old[c->n_old++] = e;
	}
	if (f)
		fclose(f);
	if (c->n_old)
		qsort(c->old, c->n_old, sizeof(*c->old), cmp_ino);
}

int ckpt_cache_open(struct ckpt_cache **out, const struct core_ws *ws, int64_t start_ns)
{
	struct ckpt_cache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c || !(c->path = util_path_join(ws->root, CKPT_CACHE_FILE))) {
		free(c);
		return util_err(-ENOMEM, "out of memory");
	}
	c->start_ns = start_ns;
	load(c);
	*out = c;
	return 0;
}

void ckpt_cache_free(struct ckpt_cache *c)
{
	if (!c)
		return;
	free(c->old);
	free(c->fresh);
	free(c->path);
	free(c);
}

int ckpt_cache_tell(const struct ckpt_cache *c, struct ckpt_odb *store)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < c->n_old; i++)
		rc = ckpt_odb_know(store, &c->old[i].oid);
	return rc < 0 ? util_err(rc, "out of memory") : 0;
}

/* The walk found exactly the entries it started from (the usual case: nothing changed). */
static bool same(struct ckpt_cache *c)
{
	if (c->n_fresh != c->n_old)
		return false;
	if (c->n_fresh)
		qsort(c->fresh, c->n_fresh, sizeof(*c->fresh), cmp_ino);
	for (size_t i = 0; i < c->n_fresh; i++)
		if (c->fresh[i].ino != c->old[i].ino || c->fresh[i].size != c->old[i].size ||
		    c->fresh[i].mtime != c->old[i].mtime || c->fresh[i].ctime != c->old[i].ctime ||
		    !git_oid_equal(&c->fresh[i].oid, &c->old[i].oid))
			return false;
	return true;
}

/*
 * Written when it changed, by rename over the old one but without fsync: the cache only
 * saves hashing, and a cache lost in a crash costs hashing again (ext4 writes a file's data
 * before a rename that replaces another commits).
 */
void ckpt_cache_save(struct ckpt_cache *c)
{
	size_t cap = CACHE_LINE_MAX * (c->n_fresh + 1), len = 0;
	char *text = NULL, *tmp = NULL, hex[GIT_OID_HEXSZ + 1];
	int fd = -1;

	if (same(c))
		return;
	text = malloc(cap);
	for (size_t i = 0; text && i < c->n_fresh && cap - len > CACHE_LINE_MAX; i++) {
		struct cache_ent *e = &c->fresh[i];

		git_oid_tostr(hex, sizeof(hex), &e->oid);
		len += (size_t)snprintf(text + len, cap - len, "%llu %lld %lld %lld %s\n",
					(unsigned long long)e->ino, (long long)e->size,
					(long long)e->mtime, (long long)e->ctime, hex);
	}
	tmp = util_asprintf("%s.%d", c->path, (int)getpid());
	if (text && tmp)
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && (util_write_all(fd, text, len) < 0 || rename(tmp, c->path) < 0))
		unlink(tmp); /* best effort: the next checkpoint hashes again */
	if (fd >= 0)
		close(fd);
	free(tmp);
	free(text);
}

static void put(struct ckpt_cache *c, const struct cache_ent *e)
{
	struct cache_ent *v;

	if (c->n_fresh == c->cap_fresh) {
		c->cap_fresh = c->cap_fresh ? 2 * c->cap_fresh : 256;
		v = realloc(c->fresh, c->cap_fresh * sizeof(*v));
		if (!v)
			return;
		c->fresh = v;
	}
	c->fresh[c->n_fresh++] = *e;
}

void ckpt_cache_keep(struct ckpt_cache *c, const struct stat *st, const git_oid *oid)
{
	if (c->start_ns - ts_ns(&st->st_mtim) < CACHE_RACY_NS ||
	    c->start_ns - ts_ns(&st->st_ctim) < CACHE_RACY_NS)
		return;
	put(c, &(struct cache_ent){.ino = st->st_ino,
				   .size = st->st_size,
				   .mtime = ts_ns(&st->st_mtim),
				   .ctime = ts_ns(&st->st_ctim),
				   .oid = *oid});
}

void ckpt_cache_keep_tree(struct ckpt_cache *c, const git_oid *oid)
{
	put(c, &(struct cache_ent){.ino = 0, .size = -1, .oid = *oid});
}

void ckpt_cache_drop(const struct core_ws *ws)
{
	char *path = util_path_join(ws->root, CKPT_CACHE_FILE);

	if (path)
		unlink(path);
	free(path);
}

const git_oid *ckpt_cache_find(const struct ckpt_cache *c, const struct stat *st)
{
	const struct cache_ent *e = NULL;

	/* By inode alone: a file's inode is in the cache once. */
	for (size_t lo = 0, hi = c->n_old; lo < hi && !e;) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->old[mid].ino == st->st_ino)
			e = &c->old[mid];
		else if (c->old[mid].ino < st->st_ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (e && e->size == st->st_size && e->mtime == ts_ns(&st->st_mtim) &&
	    e->ctime == ts_ns(&st->st_ctim))
		return &e->oid;
	return NULL;
}
