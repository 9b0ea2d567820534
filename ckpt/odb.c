/*
 * ckpt/odb.c: the object store checkpoints write through. The caller hands it whole
 * objects; it hashes them (ckpt_sha1) and gathers the new ones into one pack
 * (ckpt/pack.c), written by ckpt_odb_flush() at the end; an object too large for it is
 * written loose (NAME/checkpoints.git/objects/xx/yyyy: zlib of "TYPE SIZE\0DATA") into an unnamed
 * file (O_TMPFILE) linked in under its name (compression: see deflate_object). libgit2's own loose
 * store took about thirty system calls per object (it resolves every path component, freshens,
 * writes a named temporary file, links, unlinks), and one file per object was most of a
 * checkpoint's kernel time; going through libgit2's object database at all cost its
 * collision-detecting SHA-1 and, for trees, a check that every entry exists.
 */
#include "ckpt/ckpt_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#include <nettle/sha1.h>

/*
 * libdeflate, opened with dlopen when the first blob is deflated, not linked: linked, every
 * arborinth process paid for one more library in its start-up symbol lookups (~0.4 M
 * instructions), and few of them deflate anything. Without it (not installed), zlib does.
 */
#define LIBDEFLATE_DSO "libdeflate.so.0"

struct fast_deflate {
	void *lib;
	bool tried;
	struct libdeflate_compressor *c;
	__typeof__(libdeflate_zlib_compress) *compress;
	__typeof__(libdeflate_zlib_compress_bound) *bound;
	__typeof__(libdeflate_free_compressor) *free;
};

/* Whether libdeflate is there (opened on the first call). */
static bool fast_ready(struct fast_deflate *d)
{
	__typeof__(libdeflate_alloc_compressor) *alloc;

	if (d->tried)
		return d->c != NULL;
	d->tried = true;
	if (!(d->lib = dlopen(LIBDEFLATE_DSO, RTLD_NOW | RTLD_LOCAL)))
		return false;
	alloc = (__typeof__(alloc))dlsym(d->lib, "libdeflate_alloc_compressor");
	d->compress = (__typeof__(d->compress))dlsym(d->lib, "libdeflate_zlib_compress");
	d->bound = (__typeof__(d->bound))dlsym(d->lib, "libdeflate_zlib_compress_bound");
	d->free = (__typeof__(d->free))dlsym(d->lib, "libdeflate_free_compressor");
	if (alloc && d->compress && d->bound && d->free)
		d->c = alloc(1);
	return d->c != NULL;
}

static void fast_close(struct fast_deflate *d)
{
	if (d->c)
		d->free(d->c);
	if (d->lib)
		dlclose(d->lib);
}

struct ckpt_odb {
	int objects; /* NAME/checkpoints.git/objects (ckpt_store.c) */
	/*
	 * One deflate stream for every object, reset between them: deflateInit allocated and
	 * cleared ~270 KiB of state for each of a checkpoint's few hundred objects.
	 */
	z_stream z[2]; /* loose blobs at zlib's fastest level, trees stored: see deflate_object */
	bool z_ready[2];
	struct fast_deflate fast; /* blobs for the pack: see deflate_object */
	unsigned char *buf;	  /* the deflated object, reused */
	size_t buf_cap;
	struct ckpt_pack *pack;	       /* what this store writes, until ckpt_odb_flush() */
	git_oid *known;		       /* open addressing: ids stored by earlier checkpoints */
	size_t n_known, n_known_slots; /* slots: 0 or a power of two over twice n_known */
};

/*
 * Objects larger than this, or beyond this much pack, are written loose: the pack stays in
 * memory until the end and its index holds 32-bit offsets.
 */
#define PACK_OBJECT_MAX (16U << 20)
#define PACK_BYTES_MAX	(512U << 20)
/*
 * Smaller packs are taken into a new one (ckpt/merge.c) up to this much: the copy and
 * its SHA-1 cost a checkpoint about 2 ms a MiB, and every byte written is one the next fsync
 * on the file system may wait for, so this bounds the occasional slow one; packs beyond it
 * stay (one more per this much of checkpoints; a git gc in the view packs them together).
 */
#define PACK_MERGE_MAX (8U << 20)

/*
 * Nettle's SHA-1 (as audit/chain.c's SHA-256: no set-up, no allocation per hash, the CPU's
 * SHA instructions, a library that loads in a tenth of OpenSSL's time). A plain SHA-1, not
 * libgit2's collision-detecting one (three times the instructions, a fifth of a checkpoint):
 * the ids are git's all the same, and the store is the workspace's own, whose content the
 * workload chose anyway; the host's git checks every object again with collision detection
 * when it fetches them from the workspace (index-pack).
 */
int ckpt_sha1(const void *head, size_t hl, const void *data, size_t len, unsigned char out[20])
{
	struct sha1_ctx c;

	sha1_init(&c);
	if (hl)
		sha1_update(&c, hl, head);
	sha1_update(&c, len, data);
	sha1_digest(&c, SHA1_DIGEST_SIZE, out);
	return 0;
}

int ckpt_sha1_iov(const struct iovec *iov, size_t n, unsigned char out[20])
{
	struct sha1_ctx c;

	sha1_init(&c);
	for (size_t i = 0; i < n; i++)
		sha1_update(&c, iov[i].iov_len, iov[i].iov_base);
	sha1_digest(&c, SHA1_DIGEST_SIZE, out);
	return 0;
}

int ckpt_object_id(git_object_t type, const void *data, size_t len, git_oid *id)
{
	char head[64];
	int hl = snprintf(head, sizeof(head), "%s %zu", git_object_type2string(type), len) + 1;

	return ckpt_sha1(head, (size_t)hl, data, len, id->id);
}

/* "xx/yyyy..." for id. */
static void obj_path(const git_oid *id, char path[GIT_OID_HEXSZ + 2])
{
	char hex[GIT_OID_HEXSZ + 1];

	git_oid_tostr(hex, sizeof(hex), id);
	snprintf(path, GIT_OID_HEXSZ + 2, "%.2s/%s", hex, hex + 2);
}

static size_t known_slot(const git_oid *id, size_t n_slots)
{
	uint32_t h;

	memcpy(&h, id->id, sizeof(h));
	return h & (n_slots - 1);
}

static bool known(const struct ckpt_odb *f, const git_oid *id)
{
	static const git_oid zero;

	if (!f->n_known_slots)
		return false;
	for (size_t s = known_slot(id, f->n_known_slots);; s = (s + 1) & (f->n_known_slots - 1)) {
		if (git_oid_equal(&f->known[s], &zero))
			return false;
		if (git_oid_equal(&f->known[s], id))
			return true;
	}
}

static int known_put(git_oid *slots, size_t n_slots, const git_oid *id)
{
	static const git_oid zero;
	size_t s = known_slot(id, n_slots);

	while (!git_oid_equal(&slots[s], &zero)) {
		if (git_oid_equal(&slots[s], id))
			return 0;
		s = (s + 1) & (n_slots - 1);
	}
	slots[s] = *id;
	return 1;
}

int ckpt_odb_know(struct ckpt_odb *f, const git_oid *id)
{
	static const git_oid zero;

	if (git_oid_equal(id, &zero))
		return 0;
	if (2 * (f->n_known + 1) > f->n_known_slots) {
		size_t n = f->n_known_slots ? 2 * f->n_known_slots : 256;
		git_oid *v = calloc(n, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < f->n_known_slots; i++)
			if (!git_oid_equal(&f->known[i], &zero))
				(void)known_put(v, n, &f->known[i]);
		free(f->known);
		f->known = v;
		f->n_known_slots = n;
	}
	f->n_known += (size_t)known_put(f->known, f->n_known_slots, id);
	return 0;
}

/*
 * In this checkpoint's pack, or stored by an earlier checkpoint as far as the caller told
 * (ckpt_odb_know). Asked before every write and mostly answered no, so no store is searched:
 * libgit2's search of every pack and loose directory, with an error message formatted per
 * miss, cost more than the writes. An object stored elsewhere as well costs only its room.
 */
static bool packed(struct ckpt_odb *f, const git_oid *id)
{
	return ckpt_pack_has(f->pack, id) || known(f, id);
}

/*
 * Deflates data into f->buf (*out_len bytes), after "TYPE LEN\0" for a loose object (loose),
 * alone for a pack entry.
 */
/* f->buf holds at least cap bytes. */
static int buf_reserve(struct ckpt_odb *f, size_t cap)
{
	unsigned char *nb;

	if (cap <= f->buf_cap)
		return 0;
	nb = realloc(f->buf, cap);
	if (!nb)
		return -ENOMEM;
	f->buf = nb;
	f->buf_cap = cap;
	return 0;
}

static int deflate_object(struct ckpt_odb *f, const void *data, size_t len, git_object_t type,
			  bool loose, size_t *out_len)
{
	char head[64];
	int hl = loose
		     ? snprintf(head, sizeof(head), "%s %zu", git_object_type2string(type), len) + 1
		     : 0;
	/*
	 * Trees, mostly object ids, hardly compress: stored as they are (zlib level 0, a zlib
	 * stream all the same) by a stream with the smallest tables, since deflateReset clears
	 * them for every object; they were half of the compression time. Blobs at the fastest
	 * level (libdeflate's, or zlib's): stored too, they cut a fifth of a checkpoint's
	 * instructions, but made its packs three times larger, and the bytes written (and
	 * copied again when packs are merged) slowed the next fsync on the file system more
	 * than that saved.
	 */
	int k = type == GIT_OBJECT_TREE;
	z_stream *z = &f->z[k];
	size_t cap;
	int zr;

	/*
	 * A blob for the pack (whole, no header before it) with libdeflate at its fastest level:
	 * 40% less time than zlib's, the output 6% smaller (a zlib stream all the same).
	 */
	if (!k && !loose && fast_ready(&f->fast)) {
		cap = f->fast.bound(f->fast.c, len);
		if (buf_reserve(f, cap) < 0)
			return -ENOMEM;
		*out_len = f->fast.compress(f->fast.c, data, len, f->buf, cap);
		return *out_len ? 0 : -EIO;
	}
	if (!f->z_ready[k]) {
		if ((k ? deflateInit2(z, Z_NO_COMPRESSION, Z_DEFLATED, 9, 1, Z_DEFAULT_STRATEGY)
		       : deflateInit(z, Z_BEST_SPEED)) != Z_OK)
			return -ENOMEM;
		f->z_ready[k] = true;
	} else if (deflateReset(z) != Z_OK) {
		return -EIO;
	}
	cap = deflateBound(z, (uLong)(len + (size_t)hl));
	if (buf_reserve(f, cap) < 0)
		return -ENOMEM;
	z->next_out = f->buf;
	z->avail_out = (uInt)cap;
	z->next_in = (unsigned char *)head;
	z->avail_in = (uInt)hl;
	zr = deflate(z, Z_NO_FLUSH);
	z->next_in = (unsigned char *)data;
	z->avail_in = (uInt)len;
	if (zr == Z_OK)
		zr = deflate(z, Z_FINISH);
	*out_len = cap - z->avail_out;
	return zr == Z_STREAM_END ? 0 : -EIO;
}

/* Object id (type, len bytes of data) into the pack, or loose when too large: -errno, message. */
static int store(struct ckpt_odb *f, const git_oid *id, const void *data, size_t len,
		 git_object_t type)
{
	char path[GIT_OID_HEXSZ + 2], proc[64], tmp[GIT_OID_HEXSZ + 32];
	const unsigned char *z = NULL;
	size_t zl = 0;
	int fd, rc;

	if (len > UINT32_MAX) /* larger than one zlib call: not what a checkpoint writes */
		return util_err(-EFBIG, "an object of %zu bytes is too large to store", len);
	if (len <= PACK_OBJECT_MAX && ckpt_pack_bytes(f->pack) + len < PACK_BYTES_MAX) {
		rc = deflate_object(f, data, len, type, false, &zl);
		rc = rc ?: ckpt_pack_add(f->pack, id, type, len, f->buf, zl);
		return rc < 0 ? util_err(rc, "cannot add an object to the pack: %s", strerror(-rc))
			      : 0;
	}
	obj_path(id, path);
	rc = deflate_object(f, data, len, type, true, &zl);
	z = f->buf;
	if (rc < 0)
		return util_err(rc, "cannot deflate an object: %s", strerror(-rc));
	path[2] = '\0';
	if (mkdirat(f->objects, path, 0755) < 0 && errno != EEXIST)
		goto fail;
	/* An unnamed file in the fan-out directory, linked in once whole. */
	fd = openat(f->objects, path, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0444);
	path[2] = '/';
	if (fd >= 0) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		rc = util_write_all(fd, z, zl) == 0 &&
			     (linkat(AT_FDCWD, proc, f->objects, path, AT_SYMLINK_FOLLOW) == 0 ||
			      errno == EEXIST)
			 ? 0
			 : -1;
	} else {
		/* No O_TMPFILE here: a named temporary file, renamed over. */
		snprintf(tmp, sizeof(tmp), "%.2s/tmp_arb_%d_%.8s", path, (int)getpid(), path + 3);
		fd = openat(f->objects, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
		rc = fd >= 0 && util_write_all(fd, z, zl) == 0 &&
			     renameat(f->objects, tmp, f->objects, path) == 0
			 ? 0
			 : -1;
		if (rc < 0 && fd >= 0)
			unlinkat(f->objects, tmp, 0);
	}
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		return 0;
fail:
	return util_err(-errno, "cannot write object %s: %s", path, strerror(errno));
}

int ckpt_odb_put(struct ckpt_odb *f, git_object_t type, const void *data, size_t len, git_oid *id)
{
	int rc = ckpt_object_id(type, data, len, id);

	if (rc < 0 || packed(f, id))
		return rc;
	return store(f, id, data, len, type);
}

int ckpt_odb_put_entry(struct ckpt_odb *f, const git_oid *id, const unsigned char *entry,
		       size_t len, uint32_t crc)
{
	int rc;

	if (packed(f, id))
		return 0;
	if (ckpt_pack_bytes(f->pack) + len >= PACK_BYTES_MAX)
		return -E2BIG;
	rc = ckpt_pack_add_entry(f->pack, id, entry, len, crc);
	return rc < 0 ? util_err(rc, "cannot add an object to the pack: %s", strerror(-rc)) : 0;
}

void ckpt_odb_free(struct ckpt_odb *f)
{
	if (!f)
		return;
	close(f->objects);
	free(f->known);
	for (int k = 0; k < 2; k++)
		if (f->z_ready[k])
			deflateEnd(&f->z[k]);
	fast_close(&f->fast);
	free(f->buf);
	ckpt_pack_free(f->pack);
	free(f);
}

int ckpt_odb_flush(struct ckpt_odb *f)
{
	return ckpt_pack_write(f->pack, f->objects, PACK_MERGE_MAX);
}

int ckpt_odb_open(const char *objects, struct ckpt_odb **out)
{
	struct ckpt_odb *f = calloc(1, sizeof(*f));
	int rc = 0;

	*out = NULL;
	if (!f) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	f->objects = open(objects, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->objects < 0) {
		rc = util_err(-errno, "cannot open %s: %s", objects, strerror(errno));
		goto out;
	}
	rc = ckpt_pack_new(&f->pack);
	if (rc < 0) {
		close(f->objects);
		goto out;
	}
	*out = f;
	f = NULL;
out:
	free(f);
	return rc;
}
