/*
 * fs/transport/passthrough.c: FUSE passthrough for the upper layer's files, through libfuse 3.14
 * (`workspace create|mount --io passthrough`).
 *
 * With passthrough (kernel 6.9+, FUSE protocol 7.40), reads and writes of an open file go to
 * a "backing" file inside the kernel, with no request to the daemon: here the upper-layer
 * file. libfuse 3.14 has no API for it, so the daemon does its own /dev/fuse I/O
 * (fuse_session_custom_io) and edits replies on their way to the kernel:
 * - INIT: sets FUSE_PASSTHROUGH (bit 37, in flags2) and max_stack_depth 1 (the upper layer
 *   is a plain file system; 1 keeps the view stackable under an overlay);
 * - OPEN and CREATE: open_flags |= FOPEN_PASSTHROUGH (without FOPEN_KEEP_CACHE, which the
 *   kernel refuses with it) and the id registered with FUSE_DEV_IOC_BACKING_OPEN.
 * A reply is written by the thread that calls fuse_reply_open()/fuse_reply_create(), so the
 * id to put in it travels in a thread-local variable set around that call.
 *
 * Passthrough needs OPEN requests: the kernel can give a backing file only to an open it
 * sent. The default view answers OPEN with ENOSYS once (fs->no_open) and the kernel then
 * opens files by itself, which makes opens free; a passthrough view keeps OPEN and RELEASE,
 * one round trip per open(), and in exchange no READ or WRITE of an upper file reaches the
 * daemon. (Passthrough on CREATE alone, with opens left to the kernel, was tried: 6.18 then
 * fails every other open of a file with EIO while its creator still has it open.)
 *
 * The kernel keeps one I/O mode per inode: every open of an inode open in passthrough mode
 * must be passthrough with the same backing file, and none may be while it is open cached
 * (through the page cache and the daemon: the base's files, or an upper file opened while a
 * cached open of it was live). Nodes count both kinds of their open handles (ops_file.c) and
 * get a passthrough open only when no cached one is live; one backing id per node, closed
 * with its last passthrough handle.
 *
 * Registering a backing file needs CAP_SYS_ADMIN in the initial user namespace, and a
 * kernel that offers FUSE_PASSTHROUGH in INIT. Without both the daemon keeps the default
 * (no OPEN requests, every write through the daemon); right after INIT it probes with a
 * temporary file of the upper layer. The run directory's "io" file says which path the view
 * uses and, when it is the daemon, why.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Protocol 7.40 definitions (Debian 12's <linux/fuse.h> is 7.38). */
#define PT_INIT_FLAG2  (1u << 5) /* FUSE_PASSTHROUGH, 1ULL << 37 */
#define PT_FOPEN       (1u << 7) /* FOPEN_PASSTHROUGH */
#define PT_KEEP_CACHE  (1u << 1) /* FOPEN_KEEP_CACHE: refused with passthrough */
#define PT_STACK_DEPTH 1

struct pt_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define PT_IOC_BACKING_OPEN  _IOW(229, 1, struct pt_backing_map)
#define PT_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* Byte offsets in fuse_init_out and fuse_open_out. */
#define PT_OFF_INIT_DEPTH 36
#define PT_OPEN_SIZE	  16	     /* struct fuse_open_out: OPEN's reply */
#define PT_CREATE_SIZE	  (128 + 16) /* fuse_entry_out + fuse_open_out: CREATE's */
#define PT_OFF_OPEN_FLAGS 8
#define PT_OFF_BACKING_ID 12
#define PT_USER_NS_INIT	  "user:[4026531837]" /* PROC_USER_INIT_INO */

/* The backing id for the CREATE reply this thread is writing (0: none). */
static __thread int32_t reply_backing_id;

/* Registers fd as a backing file: the id (> 0) or -errno. */
static int backing_open(int devfd, int fd)
{
	struct pt_backing_map map = {.fd = fd};
	int id = ioctl(devfd, PT_IOC_BACKING_OPEN, &map);

	return id < 0 ? -errno : id;
}

static void backing_close(int devfd, int32_t id)
{
	uint32_t v = (uint32_t)id;

	(void)ioctl(devfd, PT_IOC_BACKING_CLOSE, &v);
}

/* Right after INIT: can this connection register a file of the upper layer? 0 or -errno. */
static int probe(struct fs *fs, int devfd)
{
	int fd = openat(fs->layer_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	int id;

	if (fd < 0)
		return -errno;
	id = backing_open(devfd, fd);
	close(fd);
	if (id > 0)
		backing_close(devfd, id);
	return id > 0 ? 0 : id < 0 ? id : -EIO;
}

void fs_pt_patch_init(struct fs *fs, void *init_out)
{
	if (!fs->pt_offered || !init_out)
		return;
	fs_msg_put32(init_out, FS_INIT_OUT_FLAGS2,
		     fs_msg_get32(init_out, FS_INIT_OUT_FLAGS2) | PT_INIT_FLAG2);
	fs_msg_put32(init_out, PT_OFF_INIT_DEPTH, PT_STACK_DEPTH);
	fs->pt_asked = true;
}

/* An OPEN or CREATE reply with a backing id: its fuse_open_out gets the flag and the id. */
void fs_pt_patch_reply(struct iovec *iov, int count)
{
	size_t base;
	uint32_t flags;

	if (reply_backing_id <= 0 || count < 2 ||
	    (iov[1].iov_len != PT_OPEN_SIZE && iov[1].iov_len != PT_CREATE_SIZE))
		return;
	base = iov[1].iov_len - PT_OPEN_SIZE;
	flags = fs_msg_get32(iov[1].iov_base, base + PT_OFF_OPEN_FLAGS);
	flags = (flags & ~PT_KEEP_CACHE) | PT_FOPEN;
	fs_msg_put32(iov[1].iov_base, base + PT_OFF_OPEN_FLAGS, flags);
	fs_msg_put32(iov[1].iov_base, base + PT_OFF_BACKING_ID, (uint32_t)reply_backing_id);
}

const char *fs_pt_after_init(struct fs *fs, int devfd, char *why, size_t len)
{
	int rc = fs->pt_asked ? probe(fs, devfd) : -EOPNOTSUPP;

	snprintf(why, len, "passthrough unavailable: %s", strerror(-rc));
	/* Other threads read them under the lock once the kernel sends more requests. */
	pthread_mutex_lock(&fs->lock);
	fs->devfd = devfd;
	fs->passthrough = rc == 0;
	pthread_mutex_unlock(&fs->lock);
	return rc == 0 ? NULL : fs->pt_why ? fs->pt_why : why;
}

/* CAP_SYS_ADMIN in the initial user namespace, which FUSE_DEV_IOC_BACKING_OPEN requires. */
static bool may_register(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};
	char ns[64];
	ssize_t n = readlink("/proc/self/ns/user", ns, sizeof(ns) - 1);

	if (n < 0 || syscall(SYS_capget, &hdr, data) < 0)
		return false;
	ns[n] = '\0';
	return !strcmp(ns, PT_USER_NS_INIT) &&
	       (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN));
}

/*
 * The INIT request, before libfuse hands it to fs_init(): whether the kernel offers
 * passthrough and this process may use it decides whether files are opened without asking.
 */
void fs_pt_peek_init(struct fs *fs, uint32_t flags2)
{
	if (!fs->cfg->passthrough) {
		fs->pt_why = "the default; passthrough is chosen per workspace";
		return;
	}
	fs->pt_offered = flags2 & PT_INIT_FLAG2;
	if (fs->pt_offered && !may_register())
		fs->pt_why = "passthrough unavailable: no CAP_SYS_ADMIN";
	else if (!fs->pt_offered)
		fs->pt_why = "passthrough unavailable: the kernel does not offer it";
	fs->pt_offered = fs->pt_offered && !fs->pt_why;
}

int32_t fs_passthrough_get(struct fs *fs, struct fs_node *n)
{
	int id;

	if (!fs->passthrough || !S_ISREG(n->type) || n->fd < 0)
		return 0;
	if (n->backing_id > 0) {
		n->backing_opens++;
		return n->backing_id;
	}
	id = backing_open(fs->devfd, n->fd);
	if (id <= 0)
		return 0; /* this open goes through the daemon */
	n->backing_id = id;
	n->backing_opens = 1;
	return id;
}

void fs_passthrough_put(struct fs *fs, struct fs_node *n)
{
	if (n->backing_opens == 0 || --n->backing_opens > 0)
		return;
	backing_close(fs->devfd, n->backing_id);
	n->backing_id = 0;
}

int fs_passthrough_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
				struct fuse_file_info *fi, int32_t backing_id)
{
	int rc;

	if (backing_id > 0)
		fi->keep_cache = 0;
	reply_backing_id = backing_id;
	rc = e ? fuse_reply_create(req, e, fi) : fuse_reply_open(req, fi);
	reply_backing_id = 0;
	return rc;
}
