/*
 * fs/layer.c: the upper layer's format, the one place that defines it (fs/upper.c writes it
 * while serving the view; core reads and writes it for --dirty, checkpoints and rewind).
 * A directory NAME/layer mirrors the view's paths: a regular file, symlink or directory holds
 * what the view shows at that path; a 0/0 character device is a whiteout (the lower entry of
 * that name is gone); a directory's lower part is the same path of its parent's lower tree,
 * unless the directory is opaque (no lower part: it replaced what was there) or names a tree
 * (a directory moved from elsewhere keeps its lower part by tree id).
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

bool fs_layer_is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

int fs_layer_whiteout_at(int dirfd, const char *name)
{
	return mknodat(dirfd, name, S_IFCHR | 0000, makedev(0, 0)) < 0 ? -errno : 0;
}

enum fs_layer_lower fs_layer_dir_lower(int dirfd, char hex[GIT_OID_HEXSZ + 1])
{
	char p[64];
	ssize_t len;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", dirfd);
	if (getxattr(p, FS_XATTR_OPAQUE, NULL, 0) >= 0)
		return FS_LAYER_LOWER_NONE;
	len = getxattr(p, FS_XATTR_TREE, hex, GIT_OID_HEXSZ);
	if (len == GIT_OID_HEXSZ) {
		hex[GIT_OID_HEXSZ] = '\0';
		return FS_LAYER_LOWER_TREE;
	}
	return FS_LAYER_LOWER_SAME;
}

enum fs_layer_lower fs_layer_dir_lower_fd(int fd, char hex[GIT_OID_HEXSZ + 1])
{
	char names[512];
	ssize_t n = flistxattr(fd, names, sizeof(names));
	bool tree = false;

	if (n < 0 && errno == ERANGE)
		return fs_layer_dir_lower(fd, hex); /* more attributes than expected: by name */
	/* Attribute names, each NUL-terminated: opaque wins, as above. */
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(names + off) + 1) {
		if (!strcmp(names + off, FS_XATTR_OPAQUE))
			return FS_LAYER_LOWER_NONE;
		tree = tree || !strcmp(names + off, FS_XATTR_TREE);
	}
	if (tree && fgetxattr(fd, FS_XATTR_TREE, hex, GIT_OID_HEXSZ) == GIT_OID_HEXSZ) {
		hex[GIT_OID_HEXSZ] = '\0';
		return FS_LAYER_LOWER_TREE;
	}
	return FS_LAYER_LOWER_SAME;
}

int fs_layer_set_opaque(int dirfd)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", dirfd);
	if (setxattr(p, FS_XATTR_OPAQUE, "y", 1, 0) < 0)
		return -errno;
	(void)removexattr(p, FS_XATTR_TREE);
	return 0;
}

void fs_lower_stat_of(int64_t base_time, int64_t blob_size, struct fs_lower_stat *out)
{
	*out = (struct fs_lower_stat){
	    .size = blob_size, .mtime_sec = base_time, .ctime_sec = base_time};
}
