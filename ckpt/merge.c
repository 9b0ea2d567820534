/*
 * ckpt/merge.c: keeps the workspace's packs few. Each checkpoint that stores anything
 * writes one pack (ckpt/pack.c); left alone, a long agent run would leave thousands, and
 * every object lookup (libgit2's here, git's in the view) searches them all: at 280 packs a
 * checkpoint already took longer than with loose objects. So a new pack takes in smaller
 * packs before it is written, geometrically, as `git repack --geometric=2` does: from the
 * smallest up, a pack is taken in while it is less than twice what the new pack holds so far.
 * Every pack left is then at least twice all smaller ones together, so N packs hold at least
 * 2^N times the smallest, and each object is copied about log2(packs) times in all. Entries
 * are copied as they are, never inflated. A pack with deltas (git's own, from a gc in the
 * view) or a .keep/.promisor is left alone, and so is one that cannot be read (another
 * checkpoint took it in meanwhile): taking in is only an optimisation. The packs taken in are
 * removed once the new one is in place; a reader with one open keeps its mapping, and one
 * that lists the directory again finds the objects in the new pack.
 */
#include "ckpt/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDX_HEAD (8 + 256 * 4) /* magic, version, fan-out */

struct cand {
	char base[64]; /* "pack-HEX" */
	off_t size;
};

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* dir/base.ext, whole, into *out (*len bytes; caller frees with ckpt_pack_buf_free); -errno. */
static int read_at(int dir, const char *base, const char *ext, unsigned char **out, size_t *len)
{
	char name[80];
	struct stat st;
	unsigned char *buf = NULL;
	size_t got = 0;
	int fd, rc = 0;

	snprintf(name, sizeof(name), "%s%s", base, ext);
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    !(buf = ckpt_pack_buf_new((size_t)st.st_size)))
		rc = -EIO;
	while (rc == 0 && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0)
			rc = n < 0 && errno == EINTR ? 0 : -EIO;
		else
			got += (size_t)n;
	}
	close(fd);
	if (rc < 0 || got < (size_t)st.st_size) {
		ckpt_pack_buf_free(buf, (size_t)st.st_size);
		return rc < 0 ? rc : -EIO;
	}
	*out = buf;
	*len = got;
	return 0;
}

struct span {
	uint64_t off;
	uint32_t i; /* its index in the idx's name table */
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The entries of pack (plen bytes) as idx (ilen bytes) lists them, by offset; -EINVAL. */
static int spans_of(const unsigned char *idx, size_t ilen, const unsigned char *pack, size_t plen,
		    struct span **out, uint32_t *n_out)
{
	uint32_t n;
	struct span *v;

	if (ilen < IDX_HEAD || memcmp(idx, "\377tOc\0\0\0\2", 8) || plen < 32 ||
	    memcmp(pack, "PACK\0\0\0\2", 8))
		return -EINVAL;
	n = get32(idx + 8 + 255 * 4);
	if (n == 0 || get32(pack + 8) != n || ilen != IDX_HEAD + (size_t)n * 28 + 40)
		return -EINVAL;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = get32(idx + IDX_HEAD + (size_t)n * 24 + (size_t)i * 4);

		v[i] = (struct span){.off = off, .i = i};
		if ((off & 0x80000000U) || off < 12 || off >= plen - 20) {
			free(v); /* a large offset: not one of ours, and not worth the code */
			return -EINVAL;
		}
	}
	qsort(v, n, sizeof(*v), cmp_span);
	*out = v;
	*n_out = n;
	return 0;
}

/*
 * Takes every entry of pack base into pk, or none when one is a delta; -errno. Whole, as it is
 * (ckpt_pack_add_body); entry by entry only when pk holds one of its objects already.
 */
static int absorb(struct ckpt_pack *pk, int dir, const char *base)
{
	unsigned char *idx = NULL, *pack = NULL;
	size_t ilen = 0, plen = 0;
	struct span *sp = NULL;
	struct ckpt_pack_in *in = NULL;
	uint32_t n = 0;
	int rc = read_at(dir, base, ".idx", &idx, &ilen);

	rc = rc ?: read_at(dir, base, ".pack", &pack, &plen);
	rc = rc ?: spans_of(idx, ilen, pack, plen, &sp, &n);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		unsigned type = (pack[sp[i].off] >> 4) & 7;

		if (type < GIT_OBJECT_COMMIT || type > GIT_OBJECT_TAG)
			rc = -EINVAL;
	}
	if (rc == 0 && !(in = malloc(n * sizeof(*in))))
		rc = -ENOMEM;
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		/* Its CRC-32 from the index, not computed anew: damage stays detectable. */
		in[i] = (struct ckpt_pack_in){
		    .id = idx + IDX_HEAD + (size_t)sp[i].i * 20,
		    .off = sp[i].off,
		    .crc = get32(idx + IDX_HEAD + (size_t)n * 20 + (size_t)sp[i].i * 4)};
	if (rc == 0) {
		rc = ckpt_pack_add_body(pk, pack, plen, 12, plen - 32, in, n);
		if (rc == 0)
			pack = NULL; /* pk's now */
	}
	if (rc == -EEXIST)
		rc = 0; /* entry by entry, those pk lacks */
	for (uint32_t i = 0; rc == 0 && pack && i < n; i++) {
		uint64_t end = i + 1 < n ? sp[i + 1].off : plen - 20;
		git_oid id;

		git_oid_fromraw(&id, in[i].id);
		rc = ckpt_pack_add_entry(pk, &id, pack + sp[i].off, (size_t)(end - sp[i].off),
					 in[i].crc);
	}
	free(in);
	free(sp);
	ckpt_pack_buf_free(pack, plen);
	ckpt_pack_buf_free(idx, ilen);
	return rc;
}

static int cmp_size(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->size < y->size ? -1 : x->size > y->size;
}

static bool has_sibling(int dir, const char *base, const char *ext)
{
	char name[80];

	snprintf(name, sizeof(name), "%s%s", base, ext);
	return faccessat(dir, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The packs of dir that may be taken in, smallest first. */
static int candidates(int dir, struct cand **out, size_t *n)
{
	int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct cand *v = NULL;
	size_t cap = 0;
	struct dirent *de;

	*out = NULL;
	*n = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat st;
		struct cand c = {0};

		if (len < 10 || len >= sizeof(c.base) + 5 || strncmp(de->d_name, "pack-", 5) ||
		    strcmp(de->d_name + len - 5, ".pack"))
			continue;
		memcpy(c.base, de->d_name, len - 5);
		if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || has_sibling(dir, c.base, ".keep") ||
		    has_sibling(dir, c.base, ".promisor"))
			continue;
		c.size = st.st_size;
		if (*n == cap) {
			struct cand *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*nv));

			if (!nv)
				break;
			v = nv;
		}
		v[(*n)++] = c;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_size);
	*out = v;
	return 0;
}

int ckpt_pack_absorb(struct ckpt_pack *pk, int pack_dir, size_t max_bytes, char ***taken,
		     size_t *n_taken)
{
	struct cand *c = NULL;
	size_t n = 0, acc = ckpt_pack_bytes(pk);
	char **names;
	int rc = candidates(pack_dir, &c, &n);

	*taken = NULL;
	*n_taken = 0;
	if (rc < 0)
		return 0; /* nothing taken in */
	names = calloc(n + 1, sizeof(*names));
	for (size_t i = 0; names && i < n; i++) {
		if ((size_t)c[i].size >= 2 * acc || acc + (size_t)c[i].size > max_bytes)
			break;
		if (absorb(pk, pack_dir, c[i].base) < 0)
			continue;
		acc += (size_t)c[i].size;
		if (!(names[*n_taken] = strdup(c[i].base)))
			break; /* its objects are in the new pack too: it merely stays */
		(*n_taken)++;
	}
	free(c);
	*taken = names;
	return 0;
}

void ckpt_pack_remove(int pack_dir, const char *written, char **taken, size_t n)
{
	/* The index first: without it no reader looks into the pack. */
	static const char *const exts[] = {".idx", ".rev", ".bitmap", ".mtimes", ".pack"};
	char name[80];

	for (size_t i = 0; i < n; i++) {
		/* The same objects in the same order make the same pack, under the same name. */
		for (size_t e = 0; strcmp(taken[i], written) && e < ARB_ARRAY_LEN(exts); e++) {
			snprintf(name, sizeof(name), "%s%s", taken[i], exts[e]);
			(void)unlinkat(pack_dir, name, 0);
		}
		free(taken[i]);
	}
	free(taken);
}
