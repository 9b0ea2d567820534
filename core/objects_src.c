/*
 * core/objects_src.c: the origin's objects as they are stored, for core/objects_view.c to
 * copy without inflating and deflating them again: a loose object is hard-linked (the same
 * file: git never changes an object file in place), a whole object in one of the origin's packs
 * is taken as its raw entry (header and deflated data, with the CRC-32 from the pack's index).
 * A delta entry is not: its base may be an object the box must not see, so the caller reads
 * it whole through libgit2 instead. Packs are read-only mappings of index version 2 and pack
 * version 2 files, checked for size before any offset is used.
 */
#include "core/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct src_pack {
	const unsigned char *idx, *pack;
	size_t idx_len, pack_len;
	uint32_t n;
	uint64_t *offs; /* every entry's offset, sorted: where each entry ends */
};

struct core_objsrc {
	int objects;  /* the origin's objects directory */
	int out;      /* the store being written */
	bool no_link; /* linking failed once (another file system, say): not tried again */
	unsigned char dirs[32]; /* fan-out directories made in out, a bit each */
	struct src_pack *packs;
	size_t n_packs;
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void *map_file(int dir, const char *name, size_t *len)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	void *m = NULL;

	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		*len = (size_t)st.st_size;
	}
	if (fd >= 0)
		close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* Offset of entry i (idx v2: 31 bits, or an index into the 64-bit table). UINT64_MAX: bad. */
static uint64_t entry_off(const struct src_pack *k, uint32_t i)
{
	const unsigned char *offs = k->idx + 8 + 1024 + (size_t)k->n * 24;
	uint32_t o = be32(offs + 4 * (size_t)i);
	const unsigned char *big = offs + 4 * (size_t)k->n;

	if (!(o & 0x80000000U))
		return o;
	o &= 0x7fffffffU;
	if ((size_t)(big - k->idx) + 8 * ((size_t)o + 1) > k->idx_len - 40)
		return UINT64_MAX;
	return (uint64_t)be32(big + 8 * (size_t)o) << 32 | be32(big + 8 * (size_t)o + 4);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Maps pack `base` (.idx and .pack) of pack_dir into k: 0, or -EINVAL when not usable. */
static int pack_open(int pack_dir, const char *idx_name, struct src_pack *k)
{
	char name[256];

	snprintf(name, sizeof(name), "%.*s.pack", (int)(strlen(idx_name) - 4), idx_name);
	k->idx = map_file(pack_dir, idx_name, &k->idx_len);
	k->pack = map_file(pack_dir, name, &k->pack_len);
	if (!k->idx || !k->pack || k->idx_len < 8 + 1024 + 40 ||
	    memcmp(k->idx, "\377tOc\0\0\0\2", 8) || k->pack_len < 32 ||
	    memcmp(k->pack, "PACK\0\0\0\2", 8))
		return -EINVAL;
	k->n = be32(k->idx + 8 + 1020);
	if (k->n != be32(k->pack + 8) || (k->idx_len - 8 - 1024 - 40) / 28 < k->n ||
	    !(k->offs = malloc(((size_t)k->n + 1) * sizeof(*k->offs))))
		return -EINVAL;
	for (uint32_t i = 0; i < k->n; i++)
		if ((k->offs[i] = entry_off(k, i)) < 12 || k->offs[i] >= k->pack_len - 20)
			return -EINVAL;
	k->offs[k->n] = k->pack_len - 20; /* the last entry ends at the trailer */
	qsort(k->offs, k->n, sizeof(*k->offs), cmp_u64);
	return 0;
}

static void pack_close(struct src_pack *k)
{
	if (k->idx)
		munmap((void *)k->idx, k->idx_len);
	if (k->pack)
		munmap((void *)k->pack, k->pack_len);
	free(k->offs);
}

/* Every usable pack of objects/pack; one that is not is skipped (libgit2 reads it then). */
static int packs_open(struct core_objsrc *s)
{
	int dir = openat(s->objects, "pack", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
	struct dirent *e;
	int rc = 0;

	if (!d) {
		if (dir >= 0)
			close(dir);
		return 0;
	}
	while (rc == 0 && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		struct src_pack k = {0}, *v;

		if (l < 5 || l > 200 || strcmp(e->d_name + l - 4, ".idx"))
			continue;
		if (pack_open(dirfd(d), e->d_name, &k) < 0) {
			pack_close(&k);
			continue;
		}
		v = realloc(s->packs, (s->n_packs + 1) * sizeof(*v));
		if (!v) {
			pack_close(&k);
			rc = -ENOMEM;
			break;
		}
		s->packs = v;
		s->packs[s->n_packs++] = k;
	}
	closedir(d);
	return rc;
}

int core_objsrc_open(const char *objects, int out, struct core_objsrc **res)
{
	struct core_objsrc *s = calloc(1, sizeof(*s));
	int rc;

	*res = NULL;
	if (!s)
		return util_err(-ENOMEM, "out of memory");
	s->out = out;
	s->objects = open(objects, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->objects < 0) {
		rc = util_err(-errno, "cannot open %s: %s", objects, strerror(errno));
		free(s);
		return rc;
	}
	rc = packs_open(s);
	if (rc < 0) {
		core_objsrc_free(s);
		return util_err(rc, "out of memory");
	}
	*res = s;
	return 0;
}

void core_objsrc_free(struct core_objsrc *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_packs; i++)
		pack_close(&s->packs[i]);
	free(s->packs);
	close(s->objects);
	free(s);
}

int core_objsrc_link(struct core_objsrc *s, const git_oid *id)
{
	char hex[GIT_OID_HEXSZ + 1], path[GIT_OID_HEXSZ + 2];
	unsigned char b = id->id[0];

	if (s->no_link)
		return 0;
	git_oid_tostr(hex, sizeof(hex), id);
	snprintf(path, sizeof(path), "%.2s/%s", hex, hex + 2);
	if (!(s->dirs[b / 8] & (1U << (b % 8)))) {
		struct stat st;

		/* The fan-out directory only for an object that is there to link. */
		if (fstatat(s->objects, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return 0;
		path[2] = '\0';
		if (mkdirat(s->out, path, 0755) < 0 && errno != EEXIST)
			return -errno;
		path[2] = '/';
		s->dirs[b / 8] |= (unsigned char)(1U << (b % 8));
	}
	if (linkat(s->objects, path, s->out, path, 0) == 0 || errno == EEXIST)
		return 1;
	if (errno != ENOENT)
		s->no_link = true; /* EXDEV, EPERM (protected_hardlinks), EMLINK: copies then */
	return 0;
}

int core_objsrc_entry(const struct core_objsrc *s, const git_oid *id, const unsigned char **entry,
		      size_t *len, uint32_t *crc)
{
	for (size_t p = 0; p < s->n_packs; p++) {
		const struct src_pack *k = &s->packs[p];
		const unsigned char *fan = k->idx + 8, *ids = fan + 1024;
		uint32_t lo = id->id[0] ? be32(fan + 4 * (id->id[0] - 1)) : 0;
		uint32_t hi = be32(fan + 4 * id->id[0]);

		while (lo < hi && hi <= k->n) {
			uint32_t mid = lo + (hi - lo) / 2;
			int c = memcmp(ids + 20 * (size_t)mid, id->id, 20);
			uint64_t off, *next;

			if (c < 0) {
				lo = mid + 1;
				continue;
			}
			if (c > 0) {
				hi = mid;
				continue;
			}
			off = entry_off(k, mid);
			/* A delta (types 6 and 7) names its base: not taken alone. */
			if (off >= k->pack_len - 20 || ((k->pack[off] >> 4) & 7) < 1 ||
			    ((k->pack[off] >> 4) & 7) > 4)
				return 0;
			next = bsearch(&off, k->offs, k->n, sizeof(off), cmp_u64);
			if (!next)
				return 0;
			*entry = k->pack + off;
			*len = (size_t)(next[1] - off);
			*crc = be32(ids + 20 * (size_t)k->n + 4 * (size_t)mid);
			return 1;
		}
	}
	return 0;
}
