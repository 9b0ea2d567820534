/*
 * fs/boxes.c: which callers of the view are inside the workspace's boxes.
 *
 * Trust boundary: the launcher (arborinth shell, on the host) tells the daemon the pid of
 * each box's pid 1 before the box's command starts (ARB_FS_IOC_BOX_ADD on the view's root,
 * fs/fs.h) and takes it back when the box is over (ARB_FS_IOC_BOX_DEL). The daemon keeps the
 * pid namespace of that process, open (so its inode number cannot be reused while it is
 * listed), and a caller is "in a box" when /proc/PID/ns/pid of the pid the kernel gives with
 * its request is one of them. Everything else is a host caller, and gets what hostgit.c
 * answers hosts: when in doubt (no box listed, no pid, /proc unreadable) the answer is the
 * host's, the safe one, for a box loses nothing but its own git settings by it.
 *
 * Only a caller in the daemon's own pid namespace, with the daemon's uid or root, may add or
 * remove: a box runs in a pid namespace of its own (bwrap --unshare-pid) and cannot. The
 * daemon's own namespace is never listed (hosts would then count as boxes). Pids cannot be
 * reused under a request: the kernel keeps its caller waiting until the daemon answered.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ns_of(pid_t pid, struct stat *st)
{
	char p[48];

	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pid);
	return stat(p, st) < 0 ? -errno : 0;
}

void fs_boxes_init(struct fs *fs)
{
	struct stat st;

	fs->nboxes = 0;
	fs->self_ns_ok = ns_of(getpid(), &st) == 0;
	fs->self_ns_dev = fs->self_ns_ok ? st.st_dev : 0;
	fs->self_ns_ino = fs->self_ns_ok ? st.st_ino : 0;
}

static void drop(struct fs *fs, size_t i)
{
	close(fs->boxes[i].nsfd);
	if (fs->boxes[i].pidfd >= 0)
		close(fs->boxes[i].pidfd);
	fs->boxes[i] = fs->boxes[--fs->nboxes];
}

void fs_boxes_free(struct fs *fs)
{
	while (fs->nboxes)
		drop(fs, 0);
}

/* Forgets the boxes whose pid 1 is gone (a launcher that died without taking them back). */
static void prune(struct fs *fs)
{
	for (size_t i = 0; i < fs->nboxes;) {
		struct pollfd p = {.fd = fs->boxes[i].pidfd, .events = POLLIN};

		if (p.fd >= 0 && poll(&p, 1, 0) > 0)
			drop(fs, i);
		else
			i++;
	}
}

static bool same_ns(const struct stat *st, dev_t dev, ino_t ino)
{
	return st->st_dev == dev && st->st_ino == ino;
}

bool fs_boxes_has_caller(struct fs *fs, fuse_req_t req)
{
	pid_t pid;
	struct stat st;

	if (!fs->nboxes)
		return false;
	pid = fuse_req_ctx(req)->pid;
	if (pid <= 0 || ns_of(pid, &st) < 0)
		return false;
	for (size_t i = 0; i < fs->nboxes; i++)
		if (same_ns(&st, fs->boxes[i].dev, fs->boxes[i].ino))
			return true;
	return false;
}

/* The caller may list boxes: the daemon's uid or root, in the daemon's pid namespace. */
static bool trusted_caller(struct fs *fs, fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;

	if (c->uid != 0 && c->uid != fs->uid)
		return false;
	return fs->self_ns_ok && c->pid > 0 && ns_of(c->pid, &st) == 0 &&
	       same_ns(&st, fs->self_ns_dev, fs->self_ns_ino);
}

static int add(struct fs *fs, pid_t pid)
{
	char p[48];
	struct stat st;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? ESRCH : errno;
	if (fstat(fd, &st) < 0 || same_ns(&st, fs->self_ns_dev, fs->self_ns_ino)) {
		close(fd);
		return EINVAL;
	}
	for (size_t i = 0; i < fs->nboxes; i++) {
		if (same_ns(&st, fs->boxes[i].dev, fs->boxes[i].ino)) {
			close(fd);
			return 0;
		}
	}
	prune(fs);
	if (fs->nboxes == FS_BOXES_MAX) {
		close(fd);
		return ENOSPC;
	}
	fs->boxes[fs->nboxes++] = (struct fs_box){
	    .pid = pid,
	    .dev = st.st_dev,
	    .ino = st.st_ino,
	    .nsfd = fd,
	    .pidfd = (int)syscall(SYS_pidfd_open, pid, 0),
	};
	return 0;
}

static int del(struct fs *fs, pid_t pid)
{
	for (size_t i = 0; i < fs->nboxes;) {
		if (fs->boxes[i].pid == pid)
			drop(fs, i);
		else
			i++;
	}
	prune(fs);
	return 0;
}

int fs_boxes_ioctl(struct fs *fs, fuse_req_t req, unsigned int cmd, const void *in, size_t len)
{
	int32_t pid;
	int err;

	if (len != sizeof(pid) || !in)
		return EINVAL;
	memcpy(&pid, in, sizeof(pid));
	if (pid <= 0)
		return EINVAL;
	if (!trusted_caller(fs, req))
		return EPERM;
	pthread_mutex_lock(&fs->lock);
	err = cmd == (unsigned int)ARB_FS_IOC_BOX_ADD ? add(fs, pid) : del(fs, pid);
	pthread_mutex_unlock(&fs->lock);
	return err;
}
