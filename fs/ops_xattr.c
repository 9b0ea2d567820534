/*
 * fs/ops_xattr.c: extended attributes: the view has none.
 *
 * Before every write and truncate the kernel asks for the file's security.capability
 * (file_remove_privs), a round trip per write() that cost three of the eleven synchronous
 * requests a created-rewritten-deleted file made. The kernel stops asking, for the whole
 * mount, once GETXATTR answers ENOSYS (fc->no_getxattr: getxattr(2) then fails with
 * EOPNOTSUPP without a request); LISTXATTR likewise. Setting and removing are refused with
 * EOPNOTSUPP rather than ENOSYS so that each attempt still reaches the daemon and the audit.
 * Nothing is lost that git could keep: trees record no xattrs, so checkpoints never had them.
 * The upper layer's own xattrs (user.arborinth.*, fs/layer.c) live on the real directories
 * and were never visible through the view.
 */
#include "fs/fs_internal.h"

#include <errno.h>

static void refuse(fuse_req_t req, fuse_ino_t ino, const char *op, const char *name, int64_t size)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;

	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	if (n)
		fs_record_node(fs, req, op, n, name, size, 0, -EOPNOTSUPP);
	fs_unlock(fs);
	fuse_reply_err(req, n ? EOPNOTSUPP : ESTALE);
}

void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags)
{
	(void)value;
	(void)flags;
	refuse(req, ino, "setxattr", name, (int64_t)size);
}

void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	refuse(req, ino, "removexattr", name, -1);
}

void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENOSYS);
}

void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	(void)size;
	fuse_reply_err(req, ENOSYS);
}
