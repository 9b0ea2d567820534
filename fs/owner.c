/*
 * fs/owner.c: who owns what is created through the view. The daemon makes every upper entry
 * itself, so the file system gives it the daemon's user; the view hands it to the caller, as
 * a native file system would: the caller's fsuid, and its fsgid unless the directory is
 * set-group-ID (then the upper file system already gave it the directory's group and, to a
 * directory, the set-group-ID bit). Permission checks are the kernel's (default_permissions)
 * on the attributes the view reports.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int fs_upper_own(struct fs *fs, fuse_req_t req, struct fs_node *p, const char *name, mode_t mode)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat st, pst;
	gid_t gid;

	if (ctx->uid == fs->uid && ctx->gid == fs->gid)
		return 0; /* the common case: the daemon's own user */
	if (fstat(p->fd, &pst) < 0 || fstatat(p->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	gid = (pst.st_mode & S_ISGID) ? st.st_gid : ctx->gid;
	if (st.st_uid == ctx->uid && st.st_gid == gid)
		return 0;
	if (fchownat(p->fd, name, ctx->uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		/* A daemon that may not give files away (not root) keeps them. */
		return errno == EPERM && fs->uid != 0 ? 0 : -errno;
	/* chown dropped the set-ID bits of a regular file; its creator asked for them. */
	if (S_ISREG(st.st_mode) && (mode & (S_ISUID | S_ISGID)) &&
	    fchmodat(p->fd, name, st.st_mode & 07777, 0) < 0)
		return -errno;
	return 0;
}
