/* fs/ops_xattr.c: extended attributes, kept on upper files; arborinth's own are hidden. */
#include "fs/fs_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static bool reserved(const char *name)
{
	return util_str_has_prefix(name, FS_XATTR_PREFIX);
}

/* /proc path of n's upper file, or -ENODATA-style absence for a lower-only node. */
static int node_proc(struct fs *fs, fuse_ino_t ino, char *p, size_t size, bool copy_up,
		     struct fs_node **out)
{
	struct fs_node *n = fs_node_get(fs, ino);
	int rc;

	if (!n)
		return -ESTALE;
	*out = n;
	if (copy_up) {
		rc = fs_upper_copy_up(fs, n);
		if (rc < 0)
			return rc;
	}
	if (n->fd < 0)
		return 1;
	snprintf(p, size, "/proc/self/fd/%d", n->fd);
	return 0;
}

void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n = NULL;
	char p[64];
	int rc;

	if (reserved(name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	rc = node_proc(fs, ino, p, sizeof(p), true, &n);
	if (rc == 0 && setxattr(p, name, value, size, flags) < 0)
		rc = -errno;
	if (n)
		fs_record_node(fs, req, "setxattr", n, name, (int64_t)size, 0, rc);
	fs_unlock(fs);
	fuse_reply_err(req, -rc);
}

void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n = NULL;
	char p[64];
	int rc;

	if (reserved(name)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	rc = node_proc(fs, ino, p, sizeof(p), true, &n);
	if (rc == 1)
		rc = -ENODATA;
	else if (rc == 0 && removexattr(p, name) < 0)
		rc = -errno;
	if (n)
		fs_record_node(fs, req, "removexattr", n, name, -1, 0, rc);
	fs_unlock(fs);
	fuse_reply_err(req, -rc);
}

void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;
	char *buf = NULL;
	ssize_t len = -1;
	char p[64];
	int rc;

	if (reserved(name)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (size && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	rc = node_proc(fs, ino, p, sizeof(p), false, &n);
	if (rc == 1)
		rc = -ENODATA;
	else if (rc == 0 && S_ISLNK(n->type))
		rc = -ENODATA;
	else if (rc == 0 && (len = getxattr(p, name, buf, size)) < 0)
		rc = -errno;
	fs_unlock(fs);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else
		fuse_reply_buf(req, buf, (size_t)len);
	free(buf);
}

/* Drops reserved names from a NUL-separated list in place; returns the new length. */
static size_t filter_list(char *list, size_t len)
{
	size_t w = 0;

	for (size_t r = 0; r < len;) {
		size_t l = strlen(list + r) + 1;

		if (!reserved(list + r)) {
			memmove(list + w, list + r, l);
			w += l;
		}
		r += l;
	}
	return w;
}

void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;
	char *buf = NULL;
	ssize_t len = 0;
	char p[64];
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = node_proc(fs, ino, p, sizeof(p), false, &n);
	if (rc == 0 && !S_ISLNK(n->type)) {
		/* Always fetch the whole list: reserved names must be counted out. */
		len = listxattr(p, NULL, 0);
		if (len > 0 && (buf = malloc((size_t)len)))
			len = listxattr(p, buf, (size_t)len);
		if (len < 0)
			rc = -errno;
		else if (len > 0 && !buf)
			rc = -ENOMEM;
	}
	fs_unlock(fs);
	if (rc > 0)
		rc = 0;
	if (rc == 0 && buf)
		len = (ssize_t)filter_list(buf, (size_t)len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else if ((size_t)len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)len);
	free(buf);
}
