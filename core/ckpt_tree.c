/*
 * core/ckpt_tree.c: the view as a git tree, built from the base tree and the upper layer only
 * (fs/layer.c defines the layer). A directory the layer does not hold is the base's subtree by
 * id, never read; one it holds starts from its lower tree's entries (read through
 * core/ckpt_base.c), then the layer's entries win: whiteouts remove, files and symlinks are
 * hashed into the workspace's own object store (ckpt/odb.c; core/ckpt_cache.c keeps each
 * changed file hashed once across checkpoints), directories recurse. What git cannot hold
 * (empty directories, FIFOs, sockets, devices, entries named .git) is left out, and so is the
 * view's .git. Trees are made here as git makes them (entries in git's order, canonical
 * modes), not with libgit2's tree builder, which copied the lower tree's entries, checked
 * every id it took in against the object stores and hashed with collision detection: the ids
 * here are the base's own, or ones this checkpoint's store was given or told of.
 */
#include "core/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"

#define MODE_TREE    0040000U
#define MODE_BLOB    0100644U
#define MODE_EXEC    0100755U
#define MODE_LINK    0120000U
#define MODE_GITLINK 0160000U

/* One entry of a directory: of its lower tree, or of its layer directory. */
struct ent {
	const char *name; /* borrowed: from the lower tree's data or the directory's listing */
	size_t nlen;
	uint32_t mode;	    /* git's; 0 for a layer entry: nothing (whatever the lower had goes) */
	unsigned char type; /* a layer entry's d_type */
	bool vanished;	    /* a layer entry gone before it was read: the lower's stays */
	bool replaced;	    /* a lower entry the layer has an entry of that name for */
	git_oid id;
};

struct ents {
	struct ent *v;
	size_t n, cap;
};

struct build {
	struct ckpt_base *base;
	struct ckpt_odb *store;
	struct ckpt_cache *cache;
	unsigned char *tree; /* the tree being written, reused */
	size_t tree_cap;
	size_t hashed, reused;
};

static struct ent *ents_add(struct ents *e)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 32;
		struct ent *v = realloc(e->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		e->v = v;
		e->cap = cap;
	}
	memset(&e->v[e->n], 0, sizeof(e->v[0]));
	return &e->v[e->n++];
}

/* Git's order of tree entries: by name, a tree's name as if it ended in '/'. */
static int git_order(const struct ent *a, const struct ent *b)
{
	size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
	int c = memcmp(a->name, b->name, n);
	unsigned ca, cb;

	if (c)
		return c;
	ca = a->nlen > n ? (unsigned char)a->name[n] : a->mode == MODE_TREE ? '/' : 0;
	cb = b->nlen > n ? (unsigned char)b->name[n] : b->mode == MODE_TREE ? '/' : 0;
	return ca < cb ? -1 : ca > cb;
}

static int cmp_git(const void *a, const void *b)
{
	return git_order(a, b);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

/* As git writes it (canon_mode): a regular file is 100755 when its owner may execute it. */
static uint32_t canon_mode(uint32_t m)
{
	switch (m & 0170000) {
	case MODE_TREE:
		return MODE_TREE;
	case MODE_LINK:
		return MODE_LINK;
	case 0100000:
		return m & 0100 ? MODE_EXEC : MODE_BLOB;
	default:
		return MODE_GITLINK;
	}
}

/* The entries of tree id (a base tree), in its order; names borrowed from b->base. */
static int lower_read(struct build *b, const git_oid *id, struct ents *out)
{
	const unsigned char *d, *end;
	size_t len;
	int rc = ckpt_base_read(b->base, id, GIT_OBJECT_TREE, &d, &len);

	for (end = d + len; rc == 0 && d < end;) {
		const unsigned char *nul = memchr(d, '\0', (size_t)(end - d)), *sp = d;
		struct ent *e = ents_add(out);
		uint32_t mode = 0;

		for (; sp < end && *sp >= '0' && *sp <= '7'; sp++)
			mode = mode << 3 | (uint32_t)(*sp - '0');
		if (!e)
			return util_err(-ENOMEM, "out of memory");
		if (sp == d || !nul || *sp != ' ' || nul < sp + 2 || end - nul <= GIT_OID_RAWSZ)
			return util_err(-EIO, "checkpoint: base tree %s is malformed",
					git_oid_tostr_s(id));
		e->name = (const char *)sp + 1;
		e->nlen = (size_t)(nul - sp - 1);
		e->mode = canon_mode(mode);
		git_oid_fromraw(&e->id, nul + 1);
		d = nul + 1 + GIT_OID_RAWSZ;
	}
	return rc;
}

/* A lower entry that is a tree named name, or NULL. */
static const struct ent *lower_dir(const struct ents *low, const char *name, size_t nlen)
{
	struct ent key = {.name = name, .nlen = nlen, .mode = MODE_TREE};

	return low->n ? bsearch(&key, low->v, low->n, sizeof(key), cmp_git) : NULL;
}

/* Whether the lower entries have a gitlink (a submodule) named name. */
static bool lower_gitlink(const struct ents *low, const char *name, size_t nlen)
{
	struct ent key = {.name = name, .nlen = nlen, .mode = MODE_GITLINK};

	return low->n && bsearch(&key, low->v, low->n, sizeof(key), cmp_git);
}

/*
 * The entries of layer directory dir (open, read here to its end) into out, by name; their
 * names point into *buf (caller frees). Leaves out ".", ".." and what git cannot hold by its
 * name (".git", in any case, and its NTFS/HFS+ aliases, as git's checkout refuses them:
 * core_entry_name_ok); at the root, that is the workspace's gitdir. The names are the box's:
 * nothing else about them is trusted (files are opened with O_NOFOLLOW|O_NONBLOCK below).
 */
static int layer_list(int dir, char **buf, struct ents *out)
{
	size_t cap = 8192, len = 0;
	char *v = NULL;

	for (;;) {
		ssize_t n;

		if (cap - len < 4096 || !v) {
			char *nv = realloc(v, cap = v ? 2 * cap : cap);

			if (!nv) {
				free(v);
				return util_err(-ENOMEM, "out of memory");
			}
			v = nv;
		}
		n = getdents64(dir, v + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(v);
			return util_err(-errno, "checkpoint: cannot list the layer: %s",
					strerror(errno));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*buf = v;
	for (size_t off = 0; off < len;) {
		struct dirent64 *d = (struct dirent64 *)(v + off);
		struct ent *e;

		off += d->d_reclen;
		if (!core_entry_name_ok(d->d_name, strlen(d->d_name)))
			continue;
		if (!(e = ents_add(out)))
			return util_err(-ENOMEM, "out of memory");
		e->name = d->d_name;
		e->nlen = strlen(d->d_name);
		e->type = d->d_type;
	}
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(out->v[0]), cmp_name);
	return 0;
}

/* Files up to this size are read whole into memory to be stored (see ckpt_odb.c). */
#define BLOB_MAX UINT32_MAX

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
		if (n < 0)
			rc = util_err(-errno, "%s", strerror(errno));
		else if (n == 0)
			rc = -EAGAIN; /* shorter than it was: changed meanwhile */
		else
			got += (size_t)n;
	}
	if (!buf)
		rc = util_err(rc, "out of memory");
	if (rc == 0)
		rc = ckpt_odb_put(b->store, GIT_OBJECT_BLOB, buf, len, oid);
	free(buf);
	return rc;
}

/* dir/name, a regular file of the layer, as a blob (hashed unless the cache knows it). */
static int hash_file(struct build *b, int dir, const char *name, const struct stat *st,
		     git_oid *oid)
{
	const git_oid *known = ckpt_cache_find(b->cache, st);
	struct stat now;
	int fd, rc;

	if (known) {
		*oid = *known;
		b->reused++;
		ckpt_cache_keep(b->cache, st, oid);
		return 0;
	}
	/*
	 * Trust boundary: the layer is what the box wrote. One component, no link followed,
	 * never blocking on a FIFO, and read only when fstat says it is a regular file.
	 */
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return util_err(-errno, "checkpoint: cannot read %s: %s", name, strerror(errno));
	rc = fstat(fd, &now) == 0 && S_ISREG(now.st_mode) ? 0 : -EAGAIN;
	if (rc == 0 && (uint64_t)now.st_size > BLOB_MAX)
		rc = util_err(-EFBIG, "checkpoint: %s is too large to store", name);
	else if (rc == 0 && (rc = store_read(b, fd, &now, oid)) < 0 && rc != -EAGAIN)
		rc = util_err(rc, "checkpoint: cannot store %s: %s", name, util_err_msg());
	close(fd);
	if (rc == 0) {
		b->hashed++;
		ckpt_cache_keep(b->cache, &now, oid);
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
	if (ckpt_odb_put(b->store, GIT_OBJECT_BLOB, target, (size_t)n, oid) < 0)
		return util_err(-EIO, "checkpoint: cannot store %s: %s", name, util_err_msg());
	return 0;
}

static int build_dir(struct build *b, int dir, const git_oid *lower, bool root, git_oid *out,
		     bool *empty);

/* Layer directory e of dir (whose lower entries are low) as a tree, or nothing when empty. */
static int sub_dir(struct build *b, int dir, const struct ents *low, struct ent *e)
{
	/* The box's folder: O_DIRECTORY|O_NOFOLLOW open neither a link nor a FIFO. */
	int sub = openat(dir, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = 0;
	const struct ent *l;
	const git_oid *sl = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	git_oid moved;
	bool empty = false;

	if (sub < 0 && errno == ENOENT) {
		e->vanished = true;
		return 0;
	}
	if (sub < 0)
		return util_err(-errno, "checkpoint: %s: %s", e->name, strerror(errno));
	switch (fs_layer_dir_lower_fd(sub, hex)) {
	case FS_LAYER_LOWER_NONE:
		break;
	case FS_LAYER_LOWER_TREE:
		if (git_oid_fromstr(&moved, hex) < 0)
			rc = util_err(-EIO, "checkpoint: %s names tree %s", e->name, hex);
		sl = &moved;
		break;
	case FS_LAYER_LOWER_SAME:
		if (lower_gitlink(low, e->name, e->nlen)) {
			/* A submodule's files in the view (core/submodules.c): what changes there
			 * is its own repository's to commit; the gitlink stays as the base has it.
			 */
			close(sub);
			e->vanished = true;
			return 0;
		}
		l = lower_dir(low, e->name, e->nlen);
		sl = l ? &l->id : NULL;
		break;
	}
	rc = rc ?: build_dir(b, sub, sl, false, &e->id, &empty);
	close(sub);
	e->mode = rc == 0 && !empty ? MODE_TREE : 0; /* git holds no empty directory */
	return rc;
}

/* What layer entry e of dir becomes: e->mode and e->id, or 0 (nothing), or e->vanished. */
static int layer_entry(struct build *b, int dir, const struct ents *low, struct ent *e)
{
	struct stat st;
	int rc = 0;

	if (e->type == DT_DIR)
		return sub_dir(b, dir, low, e);
	if (e->type == DT_REG || e->type == DT_UNKNOWN) {
		if (fstatat(dir, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			e->vanished = errno == ENOENT;
			return e->vanished ? 0
					   : util_err(-errno, "checkpoint: %s: %s", e->name,
						      strerror(errno));
		}
		e->type = IFTODT(st.st_mode);
		if (e->type == DT_DIR)
			return sub_dir(b, dir, low, e);
	}
	if (e->type == DT_REG) {
		rc = hash_file(b, dir, e->name, &st, &e->id);
		e->mode = canon_mode(st.st_mode);
	} else if (e->type == DT_LNK) {
		rc = hash_link(b, dir, e->name, &e->id);
		e->mode = MODE_LINK;
	}
	/* Else a whiteout, or what git cannot hold: either way nothing of the lower shows. */
	return rc;
}

/* Appends mode in octal as git writes it (no leading zero). */
static size_t put_mode(unsigned char *p, uint32_t mode)
{
	char digits[12];
	size_t n = 0, len;

	do
		digits[n++] = (char)('0' + (mode & 7));
	while (mode >>= 3);
	for (len = n; n; n--)
		*p++ = (unsigned char)digits[n - 1];
	return len;
}

static int put_ent(struct build *b, size_t *len, const struct ent *e)
{
	size_t need = *len + 8 + e->nlen + 1 + GIT_OID_RAWSZ;

	if (need > b->tree_cap) {
		size_t cap = b->tree_cap ? b->tree_cap : 16384;
		unsigned char *v;

		while (cap < need)
			cap *= 2;
		if (!(v = realloc(b->tree, cap)))
			return util_err(-ENOMEM, "out of memory");
		b->tree = v;
		b->tree_cap = cap;
	}
	*len += put_mode(b->tree + *len, e->mode);
	b->tree[(*len)++] = ' ';
	memcpy(b->tree + *len, e->name, e->nlen + 1);
	*len += e->nlen + 1;
	memcpy(b->tree + *len, e->id.id, GIT_OID_RAWSZ);
	*len += GIT_OID_RAWSZ;
	return 0;
}

/*
 * The tree of low's entries that lay (by name) does not replace, and lay's that are
 * something, in git's order: stored, its id to out; nothing when empty but at the root.
 */
static int tree_write(struct build *b, const struct ents *low, struct ents *lay, bool root,
		      git_oid *out, bool *empty)
{
	size_t len = 0, i = 0, j = 0, n_lay = 0;
	int rc = 0;

	for (size_t k = 0; k < lay->n; k++) /* those that are something, first */
		if (lay->v[k].mode) {
			struct ent t = lay->v[k];

			lay->v[k] = lay->v[n_lay];
			lay->v[n_lay++] = t;
		}
	if (n_lay > 1)
		qsort(lay->v, n_lay, sizeof(lay->v[0]), cmp_git);
	while (rc == 0 && (i < low->n || j < n_lay)) {
		if (j == n_lay || (i < low->n && git_order(&low->v[i], &lay->v[j]) < 0)) {
			if (!low->v[i].replaced)
				rc = put_ent(b, &len, &low->v[i]);
			i++;
		} else {
			rc = put_ent(b, &len, &lay->v[j++]);
		}
	}
	*empty = len == 0;
	if (rc < 0 || (*empty && !root))
		return rc;
	rc = ckpt_odb_put(b->store, GIT_OBJECT_TREE, b->tree, len, out);
	if (rc == 0)
		ckpt_cache_keep_tree(b->cache, out);
	return rc;
}

static int build_dir(struct build *b, int dir, const git_oid *lower, bool root, git_oid *out,
		     bool *empty)
{
	struct ents low = {0}, lay = {0};
	char *names = NULL;
	int rc = lower ? lower_read(b, lower, &low) : 0;

	rc = rc ?: layer_list(dir, &names, &lay);
	for (size_t k = 0; rc == 0 && k < lay.n; k++)
		rc = layer_entry(b, dir, &low, &lay.v[k]);
	/* Looked up while lay is by name (tree_write reorders it). */
	for (size_t i = 0; rc == 0 && lay.n && i < low.n; i++) {
		const struct ent *l = bsearch(&low.v[i], lay.v, lay.n, sizeof(lay.v[0]), cmp_name);

		low.v[i].replaced = l && !l->vanished;
	}
	rc = rc ?: tree_write(b, &low, &lay, root, out, empty);
	free(low.v);
	free(lay.v);
	free(names);
	return rc;
}

/* The tree of the base commit (hex), read through the base's cache. */
static int base_tree(struct ckpt_base *base, const char *hex, git_oid *tree)
{
	const unsigned char *d;
	size_t len;
	git_oid commit;
	int rc = git_oid_fromstr(&commit, hex) < 0
		     ? util_err(-EINVAL, "checkpoint: base %s is not an object id", hex)
		     : ckpt_base_read(base, &commit, GIT_OBJECT_COMMIT, &d, &len);

	if (rc == 0 && (len < 5 + GIT_OID_HEXSZ || memcmp(d, "tree ", 5) ||
			git_oid_fromstrn(tree, (const char *)d + 5, GIT_OID_HEXSZ) < 0))
		rc = util_err(-EIO, "checkpoint: base commit %s names no tree", hex);
	return rc;
}

int ckpt_view_tree(git_repository *repo, const struct core_ws *ws, git_oid *tree,
		   struct ckpt_stats *stats)
{
	struct build b = {0};
	git_odb *odb = NULL;
	git_oid root;
	char *path = util_path_join(ws->root, CKPT_BASE_FILE);
	int layer = open(ws->layer, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = 0;
	bool empty;

	if (!path || layer < 0) {
		rc = util_err(path ? -errno : -ENOMEM, "checkpoint: cannot open %s: %s", ws->layer,
			      strerror(errno));
		goto out;
	}
	if (git_repository_odb(&odb, repo) < 0) {
		rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
		goto out;
	}
	rc = ckpt_base_open(&b.base, path, odb);
	rc = rc ?: base_tree(b.base, ws->base_commit, &root);
	rc = rc ?: ckpt_cache_open(&b.cache, ws, util_now_ns());
	rc = rc ?: ckpt_odb_new(ws, &b.store);
	rc = rc ?: ckpt_cache_tell(b.cache, b.store);
	rc = rc ?: build_dir(&b, layer, &root, true, tree, &empty);
	rc = rc ?: ckpt_odb_flush(b.store);
	if (rc == 0)
		ckpt_cache_save(b.cache);
	else
		ckpt_cache_drop(ws); /* in case an id it named is at fault */
	if (b.base)
		ckpt_base_save(b.base); /* what it read is right whatever failed since */
	if (stats) {
		stats->hashed = b.hashed;
		stats->reused = b.reused;
	}
out:
	ckpt_odb_free(b.store);
	ckpt_cache_free(b.cache);
	ckpt_base_free(b.base);
	git_odb_free(odb);
	if (layer >= 0)
		close(layer);
	free(b.tree);
	free(path);
	return rc;
}
