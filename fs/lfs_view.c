/*
 * fs/lfs_view.c: lower files tracked by git LFS, shown with their content. When a lower
 * file's blob is a pointer (fs/lfs.c) at a path the base's .gitattributes gives filter=lfs,
 * and the origin's LFS store holds the object as a regular file of the pointer's size whose
 * sha256 is the pointer's oid, the node reports the object's size and is opened on the object
 * itself; otherwise it stays the pointer. The hash is checked once per object file: a marker
 * in the blob cache (lfs-ok/<oid>) records the identity of the file found good, so later
 * daemons only compare it with fstat.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OK_DIR "lfs-ok"

/* The identity of a verified object file, as written in its marker. */
static void identity(const struct stat *st, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 ".%09ld\n",
		 (uint64_t)st->st_dev, (uint64_t)st->st_ino, (int64_t)st->st_size,
		 (int64_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

static bool marker_matches(struct fs *fs, const char *oid, const char *want)
{
	char path[sizeof(OK_DIR) + 65], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), OK_DIR "/%s", oid);
	fd = openat(fs->blobs_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
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
static void marker_write(struct fs *fs, const char *oid, const char *text)
{
	char path[sizeof(OK_DIR) + 65], tmp[sizeof(path) + 32];
	int fd;

	if (mkdirat(fs->blobs_fd, OK_DIR, 0755) < 0 && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), OK_DIR "/%s", oid);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)gettid());
	fd = openat(fs->blobs_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return;
	if (util_write_all(fd, text, strlen(text)) < 0 || close(fd) < 0 ||
	    renameat(fs->blobs_fd, tmp, fs->blobs_fd, path) < 0)
		unlinkat(fs->blobs_fd, tmp, 0);
}

/* The object of p, checked (0 and l filled) or why not (-errno). */
static int object_check(struct fs *fs, const struct fs_lfs_ptr *p, struct fs_lfs_node *l)
{
	char want[128];
	struct stat st;
	int fd, rc;

	rc = fs_lfs_object_open(fs->lfs_store, p, &fd, &st);
	if (rc < 0)
		return rc;
	identity(&st, want, sizeof(want));
	if (!marker_matches(fs, p->oid, want)) {
		rc = fs_lfs_verify(fd, p);
		if (rc == 0)
			marker_write(fs, p->oid, want);
	}
	close(fd);
	if (rc < 0)
		return rc;
	l->ptr = *p;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	l->ctime = st.st_ctim;
	return 0;
}

void fs_lfs_view_probe(struct fs *fs, struct fs_node *n, size_t *size)
{
	struct fs_lfs_node l;
	struct fs_lfs_ptr p;
	git_blob *blob = NULL;
	char *path = NULL;
	int rc;

	if (fs->lfs_store < 0 || *size >= FS_LFS_POINTER_MAX || n->lfs ||
	    (n->lower_mode != GIT_FILEMODE_BLOB && n->lower_mode != GIT_FILEMODE_BLOB_EXECUTABLE))
		return;
	if (git_blob_lookup(&blob, fs->repo, &n->lower_oid) < 0)
		return;
	rc = fs_lfs_parse(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), &p);
	git_blob_free(blob);
	if (rc < 0 || !(path = fs_node_path(fs, n, NULL)) ||
	    !fs_lfs_tracked(fs->repo, &fs->base, path))
		goto out;
	rc = object_check(fs, &p, &l);
	if (rc == 0 && (n->lfs = malloc(sizeof(l))) != NULL) {
		*n->lfs = l;
		*size = (size_t)p.size;
	} else if (rc == -EINVAL) {
		fprintf(stderr,
			"arborinth-fs: %s: LFS object %s is not a regular file of %" PRId64
			" bytes with that sha256; shown as the pointer\n",
			path, p.oid, p.size);
	}
out:
	free(path);
}

int fs_lfs_view_open(struct fs *fs, const struct fs_lfs_node *l, int *out)
{
	struct stat st;
	int fd, rc;

	rc = fs_lfs_object_open(fs->lfs_store, &l->ptr, &fd, &st);
	if (rc < 0)
		return -EIO;
	/* Replaced since it was verified: its content is not what the view promised. */
	if (st.st_dev != l->dev || st.st_ino != l->ino || st.st_ctim.tv_sec != l->ctime.tv_sec ||
	    st.st_ctim.tv_nsec != l->ctime.tv_nsec) {
		close(fd);
		return -EIO;
	}
	*out = fd;
	return 0;
}
