/*
 * fs/ops_ioctl.c: ioctl on the view: ARB_FS_IOC_AUDIT_SYNC on the root directory (fs/fs.h),
 * the request `shell` and `audit` make the audit current with, and ARB_FS_IOC_BOX_ADD/DEL,
 * with which `shell` lists its box (fs/boxes.c checks who asks). Nothing else: any other
 * command, or any command on another node, is ENOTTY, the answer the kernel gave for every
 * ioctl before the daemon had this operation (it turns a daemon's ENOSYS into ENOTTY), so
 * lsattr, chattr and the like see the same as before.
 *
 * A process in a box may issue it too (the box sees the view's root): harmless, it only
 * records and commits the audit events already pending, sooner than the daemon would on its
 * own, as fsync of the root already lets it; it changes no file and skips no event.
 */
#include "fs/fs_internal.h"

#include <errno.h>

/* The errno to answer, 0 when the audit is current. */
static int ioctl_do(struct fs *fs, fuse_req_t req, fuse_ino_t ino, unsigned int cmd, const void *in,
		    size_t in_size, size_t out_size)
{
	if (ino == FUSE_ROOT_ID && !out_size &&
	    (cmd == (unsigned int)ARB_FS_IOC_BOX_ADD || cmd == (unsigned int)ARB_FS_IOC_BOX_DEL))
		return fs_boxes_ioctl(fs, req, cmd, in, in_size);
	if (ino != FUSE_ROOT_ID || cmd != (unsigned int)ARB_FS_IOC_AUDIT_SYNC || in_size ||
	    out_size)
		return ENOTTY;
	return fs_record_sync(fs) < 0 ? EIO : 0;
}

void fs_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		 size_t out_bufsz)
{
	int err;

	(void)arg;
	(void)fi;
	(void)flags;
	err = ioctl_do(fs_of(req), req, ino, cmd, in_buf, in_bufsz, out_bufsz);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}
