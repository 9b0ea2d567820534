/*
 * ckpt/pack.c: one pack file of a checkpoint's new objects. A checkpoint of 100 changed
 * files writes ~400 objects; as loose files each was an inode created on the workspace's file
 * system (open, write, link, close: a fifth of the checkpoint's time on a journaled ext4).
 * Here they are gathered in memory, already deflated, and written at the end as one pack and
 * its index (git's formats: pack version 2 with whole objects, no deltas; index version 2),
 * objects/pack/pack-SUM.pack then .idx, each an unnamed file linked in once complete, so a
 * reader never sees half of one. SHA-1 for the two checksums is OpenSSL's (see ckpt_sha1).
 */
#include "ckpt/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#define PACK_HEADER 12 /* "PACK", version, count */

struct pack_ent {
	git_oid id;
	uint64_t off; /* of its entry: in data, or (in_body) in the pack file */
	uint32_t crc; /* of its entry (header and deflated data), for the index */
	bool in_body; /* taken in with a whole other pack's body (ckpt_pack_add_body) */
};

/* Another pack's entries, taken in whole: written between the header and data's entries. */
struct body {
	unsigned char *buf; /* owned: freed with the pack (ckpt_pack_buf_free) */
	size_t buf_len;
	size_t off, len; /* the entries within buf */
};

struct ckpt_pack {
	unsigned char *data; /* the header, then the new entries; the count filled in at the end */
	size_t len, cap;
	struct body *bodies;
	size_t n_bodies, body_bytes;
	struct pack_ent *ents;
	size_t n, cap_ents;
	uint32_t *slot; /* open addressing over ents: index + 1, 0 free */
	size_t n_slots; /* a power of two, at least twice n */
};

int ckpt_pack_new(struct ckpt_pack **out)
{
	struct ckpt_pack *pk = calloc(1, sizeof(*pk));

	*out = NULL;
	if (!pk || !(pk->data = malloc(pk->cap = 64 << 10))) {
		free(pk);
		return util_err(-ENOMEM, "out of memory");
	}
	memcpy(pk->data, "PACK\0\0\0\2\0\0\0\0", PACK_HEADER);
	pk->len = PACK_HEADER;
	*out = pk;
	return 0;
}

void ckpt_pack_free(struct ckpt_pack *pk)
{
	if (!pk)
		return;
	free(pk->data);
	for (size_t i = 0; i < pk->n_bodies; i++)
		ckpt_pack_buf_free(pk->bodies[i].buf, pk->bodies[i].buf_len);
	free(pk->bodies);
	free(pk->ents);
	free(pk->slot);
	free(pk);
}

size_t ckpt_pack_bytes(const struct ckpt_pack *pk)
{
	return pk->len + pk->body_bytes;
}

/*
 * Large buffers straight from the kernel, their pages filled in at once (MAP_POPULATE): the
 * packs taken in are megabytes, and faulting their pages in one by one as read() fills them
 * cost more than the copy.
 */
unsigned char *ckpt_pack_buf_new(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void ckpt_pack_buf_free(unsigned char *buf, size_t len)
{
	if (buf)
		munmap(buf, len ? len : 1);
}

static size_t slot_of(const git_oid *id, size_t n_slots)
{
	uint32_t h;

	memcpy(&h, id->id, sizeof(h));
	return h & (n_slots - 1);
}

static const struct pack_ent *find(const struct ckpt_pack *pk, const git_oid *id)
{
	if (!pk->n_slots)
		return NULL;
	for (size_t s = slot_of(id, pk->n_slots);; s = (s + 1) & (pk->n_slots - 1)) {
		if (!pk->slot[s])
			return NULL;
		if (git_oid_equal(&pk->ents[pk->slot[s] - 1].id, id))
			return &pk->ents[pk->slot[s] - 1];
	}
}

bool ckpt_pack_has(const struct ckpt_pack *pk, const git_oid *id)
{
	return find(pk, id) != NULL;
}

/* Slots for the entries again, n_slots of them. */
static int rehash(struct ckpt_pack *pk, size_t n_slots)
{
	uint32_t *slot = calloc(n_slots, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < pk->n; i++) {
		size_t s = slot_of(&pk->ents[i].id, n_slots);

		while (slot[s])
			s = (s + 1) & (n_slots - 1);
		slot[s] = (uint32_t)(i + 1);
	}
	free(pk->slot);
	pk->slot = slot;
	pk->n_slots = n_slots;
	return 0;
}

/* Room for more entries (their array and slots), so adding them cannot fail. */
static int room(struct ckpt_pack *pk, size_t more)
{
	size_t cap = pk->cap_ents ? pk->cap_ents : 256, n_slots = pk->n_slots ? pk->n_slots : 1024;

	while (cap < pk->n + more)
		cap *= 2;
	while (n_slots < 2 * (pk->n + more))
		n_slots *= 2;
	if (cap > pk->cap_ents) {
		struct pack_ent *v = realloc(pk->ents, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pk->ents = v;
		pk->cap_ents = cap;
	}
	return n_slots == pk->n_slots ? 0 : rehash(pk, n_slots);
}

static int reserve(struct ckpt_pack *pk, size_t more)
{
	size_t cap = pk->cap;
	unsigned char *d;

	while (cap - pk->len < more)
		cap *= 2;
	if (cap == pk->cap)
		return 0;
	d = realloc(pk->data, cap);
	if (!d)
		return -ENOMEM;
	pk->data = d;
	pk->cap = cap;
	return 0;
}

/* An entry's header: type and size, four bits then seven per byte, low bits first. */
static size_t entry_header(unsigned char *h, git_object_t type, size_t len)
{
	size_t n = 0;

	h[n] = (unsigned char)((type << 4) | (len & 15));
	for (len >>= 4; len; len >>= 7) {
		h[n++] |= 0x80;
		h[n] = len & 0x7f;
	}
	return n + 1;
}

/* Adds an entry to the table (room() made room for it). */
static void ent_add(struct ckpt_pack *pk, const struct pack_ent *e)
{
	size_t s;

	pk->ents[pk->n++] = *e;
	for (s = slot_of(&e->id, pk->n_slots); pk->slot[s]; s = (s + 1) & (pk->n_slots - 1))
		;
	pk->slot[s] = (uint32_t)pk->n;
}

/*
 * Appends an entry: its header (hl bytes) and deflated data (zl bytes); crc is the entry's
 * CRC-32 when known (has_crc), else computed here.
 */
static int append(struct ckpt_pack *pk, const git_oid *id, const unsigned char *head, size_t hl,
		  const unsigned char *z, size_t zl, bool has_crc, uint32_t crc)
{
	struct pack_ent e = {.id = *id, .off = pk->len, .crc = crc};

	if (find(pk, id))
		return 0;
	if (room(pk, 1) < 0 || reserve(pk, hl + zl) < 0)
		return -ENOMEM;
	memcpy(pk->data + pk->len, head, hl);
	memcpy(pk->data + pk->len + hl, z, zl);
	if (!has_crc)
		e.crc = (uint32_t)crc32(0, pk->data + pk->len, (uInt)(hl + zl));
	pk->len += hl + zl;
	ent_add(pk, &e);
	return 0;
}

int ckpt_pack_add_body(struct ckpt_pack *pk, unsigned char *buf, size_t buf_len, size_t off,
		       size_t len, const struct ckpt_pack_in *in, size_t n)
{
	struct body *v;
	git_oid id;

	for (size_t i = 0; i < n; i++) {
		git_oid_fromraw(&id, in[i].id);
		if (find(pk, &id))
			return -EEXIST; /* a pack may not hold an object twice */
	}
	if (room(pk, n) < 0 || !(v = realloc(pk->bodies, (pk->n_bodies + 1) * sizeof(*v))))
		return -ENOMEM;
	pk->bodies = v;
	for (size_t i = 0; i < n; i++) {
		/* Where it lands: after the header and the bodies taken in before. */
		struct pack_ent e = {.off = PACK_HEADER + pk->body_bytes + (in[i].off - off),
				     .crc = in[i].crc,
				     .in_body = true};

		git_oid_fromraw(&e.id, in[i].id);
		ent_add(pk, &e);
	}
	v[pk->n_bodies++] = (struct body){.buf = buf, .buf_len = buf_len, .off = off, .len = len};
	pk->body_bytes += len;
	return 0;
}

int ckpt_pack_add(struct ckpt_pack *pk, const git_oid *id, git_object_t type, size_t len,
		  const unsigned char *z, size_t zl)
{
	unsigned char head[16];

	return append(pk, id, head, entry_header(head, type, len), z, zl, false, 0);
}

int ckpt_pack_add_entry(struct ckpt_pack *pk, const git_oid *id, const unsigned char *entry,
			size_t entry_len, uint32_t crc)
{
	git_object_t type;
	size_t len, hl = 1;
	unsigned shift = 4;

	if (!entry_len)
		return -EINVAL;
	type = (git_object_t)((entry[0] >> 4) & 7);
	len = entry[0] & 15;
	for (unsigned char c = entry[0]; c & 0x80; shift += 7) {
		if (hl >= entry_len || shift > 56)
			return -EINVAL;
		c = entry[hl++];
		len |= (size_t)(c & 0x7f) << shift;
	}
	if (type < GIT_OBJECT_COMMIT || type > GIT_OBJECT_TAG)
		return -EINVAL; /* a delta: it names another entry, so it cannot move alone */
	return append(pk, id, entry, hl, entry + hl, entry_len - hl, true, crc);
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static int sha1(const unsigned char *data, size_t len, unsigned char out[20])
{
	return ckpt_sha1(NULL, 0, data, len, out);
}

static const struct ckpt_pack *sort_pk; /* qsort has no context argument */

static int cmp_ent(const void *a, const void *b)
{
	return git_oid_cmp(&sort_pk->ents[*(const uint32_t *)a].id,
			   &sort_pk->ents[*(const uint32_t *)b].id);
}

/* The index of the pack (its checksum sum): *out, *out_len (caller frees). */
static int index_build(const struct ckpt_pack *pk, const unsigned char sum[20], unsigned char **out,
		       size_t *out_len)
{
	size_t len = 8 + 256 * 4 + pk->n * (20 + 4 + 4) + 2 * 20;
	unsigned char *ix = malloc(len), *p;
	uint32_t *order = malloc(pk->n * sizeof(*order)), fan[256] = {0};

	if (!ix || !order) {
		free(ix);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < pk->n; i++) {
		order[i] = (uint32_t)i;
		fan[pk->ents[i].id.id[0]]++;
	}
	sort_pk = pk;
	qsort(order, pk->n, sizeof(*order), cmp_ent); /* n > 0: an empty pack is never written */
	memcpy(ix, "\377tOc\0\0\0\2", 8);
	p = ix + 8;
	for (uint32_t b = 0, sum_n = 0; b < 256; b++, p += 4)
		put32(p, sum_n += fan[b]);
	for (size_t i = 0; i < pk->n; i++, p += 20)
		memcpy(p, pk->ents[order[i]].id.id, 20);
	for (size_t i = 0; i < pk->n; i++, p += 4)
		put32(p, pk->ents[order[i]].crc);
	for (size_t i = 0; i < pk->n; i++, p += 4) {
		const struct pack_ent *e = &pk->ents[order[i]];

		/* Where it is in the file: the bodies taken in come before data's entries. */
		put32(p, (uint32_t)(e->in_body ? e->off : e->off + pk->body_bytes)); /* < 2 GiB */
	}
	memcpy(p, sum, 20);
	free(order);
	if (sha1(ix, len - 20, ix + len - 20) < 0) {
		free(ix);
		return -EIO;
	}
	*out = ix;
	*out_len = len;
	return 0;
}

/* Writes all of iov (n parts) to fd: 0 or -errno. */
static int write_iov(int fd, struct iovec *iov, size_t n)
{
	while (n) {
		ssize_t w = writev(fd, iov, (int)(n < IOV_MAX ? n : IOV_MAX));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		for (; n && (size_t)w >= iov->iov_len; iov++, n--)
			w -= (ssize_t)iov->iov_len;
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * iov (n parts, consumed) as pack/NAME, linked in whole (an existing one is the same content:
 * its name is its sum).
 */
static int file_put(int pack_dir, const char *name, struct iovec *iov, size_t n)
{
	char proc[64], tmp[96];
	int fd = openat(pack_dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0444), rc;

	if (fd >= 0) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		rc = write_iov(fd, iov, n) == 0 &&
			     (linkat(AT_FDCWD, proc, pack_dir, name, AT_SYMLINK_FOLLOW) == 0 ||
			      errno == EEXIST)
			 ? 0
			 : -errno;
		close(fd);
		return rc;
	}
	/* No O_TMPFILE here: a named temporary file, renamed over. */
	snprintf(tmp, sizeof(tmp), "tmp_arb_%d_%s", (int)getpid(), name);
	fd = openat(pack_dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	rc =
	    write_iov(fd, iov, n) == 0 && renameat(pack_dir, tmp, pack_dir, name) == 0 ? 0 : -errno;
	close(fd);
	if (rc < 0)
		unlinkat(pack_dir, tmp, 0);
	return rc;
}

/*
 * The pack file in parts, into iov (room for pk->n_bodies + 3): the header, the bodies taken
 * in, the new entries, then sum (filled in later). Returns the number of parts.
 */
static size_t pack_parts(struct ckpt_pack *pk, struct iovec *iov, unsigned char *sum)
{
	size_t n = 0;

	iov[n++] = (struct iovec){pk->data, PACK_HEADER};
	for (size_t i = 0; i < pk->n_bodies; i++)
		iov[n++] = (struct iovec){pk->bodies[i].buf + pk->bodies[i].off, pk->bodies[i].len};
	iov[n++] = (struct iovec){pk->data + PACK_HEADER, pk->len - PACK_HEADER};
	iov[n++] = (struct iovec){sum, 20};
	return n;
}

int ckpt_pack_write(struct ckpt_pack *pk, int objects_dir, size_t max_bytes)
{
	unsigned char sum[20], *ix = NULL;
	char hex[41], name[64] = "pack", **taken = NULL;
	size_t ix_len = 0, n_taken = 0, n_iov = 0;
	struct iovec *iov = NULL, ix_iov;
	int dir = -1, rc = 0;

	if (!pk->n)
		return 0;
	if (mkdirat(objects_dir, "pack", 0755) < 0 && errno != EEXIST)
		rc = -errno;
	if (rc == 0 && (dir = openat(objects_dir, "pack",
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		rc = -errno;
	rc = rc ?: ckpt_pack_absorb(pk, dir, max_bytes, &taken, &n_taken);
	if (rc == 0 && !(iov = malloc((pk->n_bodies + 3) * sizeof(*iov))))
		rc = -ENOMEM;
	if (rc == 0) {
		put32(pk->data + 8, (uint32_t)pk->n);
		n_iov = pack_parts(pk, iov, sum);
		rc = ckpt_sha1_iov(iov, n_iov - 1, sum) < 0 ? -EIO : 0;
		rc = rc ?: index_build(pk, sum, &ix, &ix_len);
	}
	if (rc == 0) {
		for (int i = 0; i < 20; i++)
			snprintf(hex + 2 * i, 3, "%02x", sum[i]);
		/* The pack first: readers find a pack through its index. */
		snprintf(name, sizeof(name), "pack-%s.pack", hex);
		rc = file_put(dir, name, iov, n_iov);
		snprintf(name, sizeof(name), "pack-%s.idx", hex);
		ix_iov = (struct iovec){ix, ix_len};
		rc = rc ?: file_put(dir, name, &ix_iov, 1);
	}
	if (rc == 0) {
		snprintf(name, sizeof(name), "pack-%s", hex);
		ckpt_pack_remove(dir, name, taken, n_taken);
	} else {
		for (size_t i = 0; i < n_taken; i++)
			free(taken[i]); /* they stay: the new pack is not in place */
		free(taken);
	}
	if (dir >= 0)
		close(dir);
	free(iov);
	free(ix);
	return rc < 0 ? util_err(rc, "checkpoint: cannot write %s: %s", name, strerror(-rc)) : 0;
}
