/*
 * fs/lfs.c: git LFS pointers and the origin's LFS object store, for the view (fs/lfs_view.c)
 * and for the index a workspace starts with (core/lfs_index.c). A pointer is accepted only in
 * the exact form git-lfs writes (spec v1, no extensions), so that git-lfs's clean filter run on
 * the content the view serves gives back the very blob the base commit holds. Objects are
 * opened beneath the store following no symbolic link, and must be regular files of the
 * pointer's size.
 */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <git2.h>

static const char lfs_version[] = "version https://git-lfs.github.com/spec/v1\n";

static bool is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int fs_lfs_parse(const char *buf, size_t len, struct fs_lfs_ptr *out)
{
	const size_t vlen = sizeof(lfs_version) - 1;
	const char *p = buf, *end = buf + len;
	int64_t size = 0;

	if (len >= FS_LFS_POINTER_MAX || len < vlen || memcmp(p, lfs_version, vlen))
		return -EINVAL;
	p += vlen;
	if (end - p < 11 + 64 + 1 || memcmp(p, "oid sha256:", 11) || !is_lower_hex(p + 11, 64) ||
	    p[11 + 64] != '\n')
		return -EINVAL;
	memcpy(out->oid, p + 11, 64);
	out->oid[64] = '\0';
	p += 11 + 64 + 1;
	if (end - p < 7 || memcmp(p, "size ", 5))
		return -EINVAL;
	p += 5;
	/* Decimal as git-lfs writes it: no sign, no leading zero, then the last newline. */
	if (*p == '0' && p + 1 < end && p[1] != '\n')
		return -EINVAL;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (size > (INT64_MAX - 9) / 10)
			return -EINVAL;
		size = size * 10 + (*p - '0');
	}
	if (p + 1 != end || *p != '\n' || p[-1] == ' ')
		return -EINVAL;
	out->size = size;
	return 0;
}

bool fs_lfs_tracked(git_repository *repo, const git_oid *commit, const char *path)
{
	git_attr_options opts = GIT_ATTR_OPTIONS_INIT;
	const char *value = NULL;

	/*
	 * The base commit's .gitattributes files. libgit2 also reads the origin's own (its
	 * info/attributes, its index's, core.attributesFile): the origin's owner's, not the box's.
	 */
	opts.flags =
	    GIT_ATTR_CHECK_INDEX_ONLY | GIT_ATTR_CHECK_NO_SYSTEM | GIT_ATTR_CHECK_INCLUDE_COMMIT;
	git_oid_cpy(&opts.attr_commit_id, commit);
	/* Set, unset and unspecified are strings of libgit2's own, never "lfs". */
	return git_attr_get_ext(&value, repo, &opts, path, "filter") == 0 && value &&
	       strcmp(value, "lfs") == 0;
}

/* lfs.storage from the origin's config: absolute, or relative to its common dir. */
static char *store_path(git_repository *repo)
{
	const char *common = git_repository_commondir(repo);
	git_config *cfg = NULL;
	git_buf val = {0};
	char *path = NULL;

	if (git_repository_config_snapshot(&cfg, repo) == 0 &&
	    git_config_get_string_buf(&val, cfg, "lfs.storage") == 0 && val.size > 0)
		path = val.ptr[0] == '/' ? util_asprintf("%s/objects", val.ptr)
					 : util_asprintf("%s/%s/objects", common, val.ptr);
	else
		path = util_asprintf("%s/lfs/objects", common);
	git_buf_dispose(&val);
	git_config_free(cfg);
	return path;
}

int fs_lfs_store_open(git_repository *repo, int *out)
{
	char *path = store_path(repo);
	int fd;

	*out = -1;
	if (!path)
		return -ENOMEM;
	/* The store itself may be a link the origin's owner made (another disk); nothing in it. */
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

/* openat2 beneath store, no link followed; else component by component with O_NOFOLLOW. */
static int open_beneath(int store, const char *rel)
{
	struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	char a[3] = {rel[0], rel[1], '\0'}, b[3] = {rel[3], rel[4], '\0'};
	int fd = (int)syscall(SYS_openat2, store, rel, &how, sizeof(how));
	int d1, d2;

	if (fd >= 0 || errno != ENOSYS)
		return fd < 0 ? -errno : fd;
	d1 = openat(store, a, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d1 < 0)
		return -errno;
	d2 = openat(d1, b, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(d1);
	if (d2 < 0)
		return -errno;
	fd = openat(d2, rel + 6, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(d2);
	return fd < 0 ? -errno : fd;
}

int fs_lfs_object_open(int store, const struct fs_lfs_ptr *p, int *out, struct stat *st)
{
	char rel[2 + 1 + 2 + 1 + 64 + 1];
	int fd;

	*out = -1;
	if (store < 0)
		return -ENOENT;
	if (strlen(p->oid) != 64 || !is_lower_hex(p->oid, 64))
		return -EINVAL;
	snprintf(rel, sizeof(rel), "%.2s/%.2s/%s", p->oid, p->oid + 2, p->oid);
	fd = open_beneath(store, rel);
	if (fd < 0)
		return fd == -ELOOP || fd == -EXDEV ? -EINVAL : fd;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_size != p->size) {
		close(fd);
		return -EINVAL;
	}
	*out = fd;
	return 0;
}

int fs_lfs_verify(int fd, const struct fs_lfs_ptr *p)
{
	static const char hexd[] = "0123456789abcdef";
	const size_t bufsize = 1 << 17;
	uint8_t *buf = malloc(bufsize), digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx c;
	int64_t off = 0;
	char hex[65];
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	sha256_init(&c);
	while (off < p->size && rc == 0) {
		ssize_t n = pread(fd, buf, bufsize, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EINVAL; /* 0: shorter than it said */
			break;
		}
		sha256_update(&c, (size_t)n, buf);
		off += n;
	}
	free(buf);
	if (rc < 0)
		return rc;
	sha256_digest(&c, sizeof(digest), digest);
	for (size_t i = 0; i < sizeof(digest); i++) {
		hex[2 * i] = hexd[digest[i] >> 4];
		hex[2 * i + 1] = hexd[digest[i] & 15];
	}
	hex[64] = '\0';
	return off == p->size && strcmp(hex, p->oid) == 0 ? 0 : -EINVAL;
}

#define OK_DIR "lfs-ok"

/* The identity of a verified object file, as written in its marker. */
static void identity(const struct stat *st, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 ".%09ld\n",
		 (uint64_t)st->st_dev, (uint64_t)st->st_ino, (int64_t)st->st_size,
		 (int64_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

static bool marker_matches(int blobs, const char *oid, const char *want)
{
	char path[sizeof(OK_DIR) + 65], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), OK_DIR "/%s", oid);
	fd = openat(blobs, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strcmp(buf, want) == 0;
}

/* Best effort: without the marker the next daemon hashes the object again. */
static void marker_write(int blobs, const char *oid, const char *text)
{
	char path[sizeof(OK_DIR) + 65], tmp[sizeof(path) + 32];
	int fd;

	if (mkdirat(blobs, OK_DIR, 0755) < 0 && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), OK_DIR "/%s", oid);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)gettid());
	fd = openat(blobs, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return;
	if (util_write_all(fd, text, strlen(text)) < 0 || close(fd) < 0 ||
	    renameat(blobs, tmp, blobs, path) < 0)
		unlinkat(blobs, tmp, 0);
}

int fs_lfs_object_check(int store, int blobs, const struct fs_lfs_ptr *p, struct stat *st)
{
	char want[128];
	int fd, rc;

	rc = fs_lfs_object_open(store, p, &fd, st);
	if (rc < 0)
		return rc;
	identity(st, want, sizeof(want));
	if (!marker_matches(blobs, p->oid, want)) {
		rc = fs_lfs_verify(fd, p);
		if (rc == 0)
			marker_write(blobs, p->oid, want);
	}
	close(fd);
	return rc;
}
