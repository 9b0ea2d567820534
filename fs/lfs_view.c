/*
 * fs/lfs_view.c: lower files tracked by git LFS, shown with their content. When a lower
 * file's blob is a pointer (fs/lfs.c) at a path the base's .gitattributes gives filter=lfs,
 * and the origin's LFS store holds the object as a regular file of the pointer's size whose
 * sha256 is the pointer's oid, the node reports the object's size and is opened on the object
 * itself; otherwise it stays the pointer. The hash is checked once per object file
 * (fs_lfs_object_check), and the file opened later must still be the one checked.
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

void fs_lfs_view_probe(struct fs *fs, struct fs_node *n, size_t *size)
{
	struct fs_lfs_node l;
	struct fs_lfs_ptr p;
	struct stat st;
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
	rc = fs_lfs_object_check(fs->lfs_store, fs->blobs_fd, &p, &st);
	l = (struct fs_lfs_node){.ptr = p, .dev = st.st_dev, .ino = st.st_ino, .ctime = st.st_ctim};
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
