/*
 * fs/transport/devio.c: the daemon's own I/O on /dev/fuse (fuse_session_custom_io), for the two
 * things libfuse 3.14 has no API for:
 * - FUSE passthrough (passthrough.c): INIT asks for it, OPEN and CREATE replies carry a
 *   backing id;
 * - FUSE over io_uring (uring.c): INIT asks for it, and the reply to a request that came
 *   through the ring goes back into its ring entry, not to /dev/fuse.
 * The INIT request is read on its way in and its reply edited on its way out; once the reply
 * is written the connection is set up (the passthrough probe, the ring's threads) and the
 * run directory's "io" and "transport" files say which paths the view uses.
 *
 * Works around libfuse 3.14 (Debian 12). Retire passthrough.c when libfuse 3.17
 * (fuse_passthrough_open) is the oldest supported, uring.c when libfuse's own io_uring
 * transport (3.18) is, and this file with them (fs/transport/README.md).
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define DEV_IN_OPCODE	   4
#define DEV_OP_INIT	   26
#define DEV_IN_INIT_FLAGS  (FS_MSG_IN_HEADER + 12) /* fuse_init_in.flags */
#define DEV_IN_INIT_FLAGS2 (FS_MSG_IN_HEADER + 16) /* .flags2, with FUSE_INIT_EXT */
#define DEV_INIT_EXT	   (1u << 30)
#define DEV_INIT_OUT_MAJOR 0

/* Writes one line to NAME beside the pidfile (the run directory); only `workspace info`
 * reads it. */
static void write_run_file(struct fs *fs, const char *name, const char *line)
{
	char *dir, *path = NULL, *slash, *buf = NULL;

	if (!fs->cfg->pidfile)
		return;
	dir = strdup(fs->cfg->pidfile);
	slash = dir ? strrchr(dir, '/') : NULL;
	if (slash) {
		*slash = '\0';
		path = util_path_join(dir, name);
	}
	if (path && asprintf(&buf, "%s\n", line) >= 0 &&
	    util_write_file(path, buf, strlen(buf), 0644) < 0)
		util_err_clear();
	free(buf);
	free(path);
	free(dir);
}

static void write_status(struct fs *fs, const char *pt_why)
{
	char line[256];

	if (pt_why)
		snprintf(line, sizeof(line), "daemon (%s)", pt_why);
	else
		snprintf(line, sizeof(line), "passthrough");
	write_run_file(fs, "io", line);
	fs_devio_transport(fs, fs->ring ? NULL : fs->ur_why ? fs->ur_why : "?");
}

void fs_devio_transport(struct fs *fs, const char *why)
{
	char line[256];

	if (why)
		snprintf(line, sizeof(line), "/dev/fuse (%s)", why);
	else
		snprintf(line, sizeof(line), "io_uring (%u queues, one per CPU)",
			 fs_ring_queues(fs));
	write_run_file(fs, "transport", line);
}

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fs *fs = userdata;
	ssize_t n = read(fd, buf, len);

	uint32_t flags2 = 0;

	if (n <= 0 || __atomic_load_n(&fs->pt_init_done, __ATOMIC_ACQUIRE) ||
	    (size_t)n < FS_MSG_IN_HEADER || fs_msg_get32(buf, DEV_IN_OPCODE) != DEV_OP_INIT)
		return n;
	/* INIT: what the kernel offers in flags2 (there only with FUSE_INIT_EXT). */
	memcpy(&fs->init_unique, (const char *)buf + FS_MSG_UNIQUE, sizeof(uint64_t));
	if ((size_t)n >= DEV_IN_INIT_FLAGS2 + 4 &&
	    (fs_msg_get32(buf, DEV_IN_INIT_FLAGS) & DEV_INIT_EXT))
		flags2 = fs_msg_get32(buf, DEV_IN_INIT_FLAGS2);
	fs_pt_peek_init(fs, flags2);
	fs_ring_peek_init(fs, flags2);
	return n;
}

/* After the INIT reply: passthrough probed, the ring's threads started. */
static void after_init(struct fs *fs, int fd)
{
	char why[128];
	const char *pt_why = fs_pt_after_init(fs, fd, why, sizeof(why));

	if (fs->ring && fs_ring_start(fs) < 0)
		fs_ring_stop(fs);
	write_status(fs, pt_why);
	__atomic_store_n(&fs->pt_init_done, true, __ATOMIC_RELEASE);
}

static bool is_init_reply(const struct fs *fs, const struct iovec *iov, int count)
{
	uint64_t unique;

	if (count < 1 || iov[0].iov_len < FS_MSG_UNIQUE + sizeof(unique))
		return false;
	memcpy(&unique, (const char *)iov[0].iov_base + FS_MSG_UNIQUE, sizeof(unique));
	return unique == fs->init_unique && unique != 0;
}

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs *fs = userdata;
	void *out;
	ssize_t n;
	int err;

	fs_pt_patch_reply(iov, count);
	n = fs_ring_reply(iov, count);
	if (n != FS_RING_NOT_MINE)
		return n;
	if (__atomic_load_n(&fs->pt_init_done, __ATOMIC_ACQUIRE) || !is_init_reply(fs, iov, count))
		return writev(fd, iov, count);
	/* INIT's reply: no other request is answered before it. Its fuse_init_out, if readable: */
	out = count >= 2 && iov[1].iov_len >= FS_INIT_OUT_SIZE &&
		      fs_msg_get32(iov[1].iov_base, DEV_INIT_OUT_MAJOR) == 7
		  ? iov[1].iov_base
		  : NULL;
	fs_pt_patch_init(fs, out);
	fs_ring_patch_init(fs, out);
	n = writev(fd, iov, count);
	err = errno;
	if (n >= 0)
		after_init(fs, fd);
	else
		fs_ring_stop(fs);
	errno = err;
	return n;
}

static ssize_t dev_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			  unsigned int flags, void *userdata)
{
	(void)userdata;
	/* A spliced reply (file data) to a ring request: out of the pipe into the entry. */
	if (fs_ring_serving())
		return fs_ring_reply_pipe(fdin, len);
	return splice(fdin, offin, fdout, offout, len, flags);
}

int fs_devio_install(struct fs *fs)
{
	static const struct fuse_custom_io io = {
	    .writev = dev_writev,
	    .read = dev_read,
	    .splice_receive = dev_splice,
	    .splice_send = dev_splice,
	};
	int rc = fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se));

	return rc < 0 ? util_err(rc, "cannot take over the FUSE device's I/O") : 0;
}
