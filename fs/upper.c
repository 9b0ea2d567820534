/* fs/upper.c: the upper layer: copy-up, whiteouts and directory markers. */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static void proc_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

int fs_upper_reopen(int fd, int flags)
{
	char p[64];
	int nfd;

	proc_path(p, sizeof(p), fd);
	/* The magic link names the file itself: following it cannot leave the layer. */
	nfd = open(p, flags | O_CLOEXEC);
	return nfd < 0 ? -errno : nfd;
}

/*
 * The workload may hold a descriptor the file's mode no longer grants (a file made 0444 while
 * open for writing, say); the kernel checked the caller against the mode when it opened. The
 * daemon owns the upper file, so it opens it with a momentary u+rw. fs->lock is held, so no
 * chmod from the workload interleaves.
 */
static int reopen_owned(int pathfd, int flags)
{
	struct stat st;
	char p[64];
	int fd;

	if (fstat(pathfd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & (S_IRUSR | S_IWUSR)) == (S_IRUSR | S_IWUSR))
		return -EACCES;
	proc_path(p, sizeof(p), pathfd);
	if (chmod(p, (st.st_mode & 07777) | S_IRUSR | S_IWUSR) < 0)
		return -errno;
	fd = fs_upper_reopen(pathfd, flags);
	if (chmod(p, st.st_mode & 07777) < 0 && fd >= 0) {
		close(fd);
		fd = -EIO;
	}
	return fd;
}

/* Keeps fd on n as its data descriptor, counted against fs->data_fds_max. */
static void keep_data_fd(struct fs *fs, struct fs_node *n, int fd)
{
	n->data_fd = fd;
	fs->ndata_fds++;
	fs_node_fds_changed(fs);
}

void fs_upper_adopt_data_fd(struct fs *fs, struct fs_node *n, int fd)
{
	if (n->data_fd < 0 && S_ISREG(n->type) && fs->ndata_fds < fs->data_fds_max)
		keep_data_fd(fs, n, fd);
	else
		close(fd);
}

int fs_upper_data_fd(struct fs *fs, struct fs_node *n, int *out, bool *owned)
{
	int fd;

	*owned = false;
	if (n->fd < 0)
		return -EIO;
	if (!S_ISREG(n->type))
		return S_ISDIR(n->type) ? -EISDIR : -EINVAL;
	if (n->data_fd >= 0) {
		*out = n->data_fd;
		return 0;
	}
	fd = fs_upper_reopen(n->fd, O_RDWR);
	if (fd == -EACCES)
		fd = reopen_owned(n->fd, O_RDWR);
	if (fd < 0)
		return fd;
	if (fs->ndata_fds >= fs->data_fds_max)
		*owned = true; /* over the budget: the caller closes it after this request */
	else
		keep_data_fd(fs, n, fd);
	*out = fd;
	return 0;
}

int fs_upper_truncate(struct fs *fs, struct fs_node *n, off_t size)
{
	bool owned;
	int fd, rc;

	rc = fs_upper_data_fd(fs, n, &fd, &owned);
	if (rc < 0)
		return rc;
	rc = ftruncate(fd, size) < 0 ? -errno : 0;
	if (owned)
		close(fd);
	return rc;
}

bool fs_upper_is_whiteout(const struct stat *st)
{
	return fs_layer_is_whiteout(st);
}

/* Opens parent/name as O_PATH without following a symlink and records it on n. */
static int attach(struct fs *fs, struct fs_node *n, int parent_fd, const char *name)
{
	struct stat st;
	int fd = openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	fs_node_set_upper(fs, n, fd, &st);
	return 0;
}

int fs_upper_dir(struct fs *fs, struct fs_node *dir)
{
	struct timespec times[2] = {{fs->base_time, 0}, {fs->base_time, 0}};
	int rc;

	if (dir->fd >= 0)
		return 0;
	if (!dir->parent || dir->unlinked)
		return -ENOENT;
	rc = fs_upper_dir(fs, dir->parent);
	if (rc < 0)
		return rc;
	if (mkdirat(dir->parent->fd, dir->name, 0755) < 0)
		return -errno;
	/* The directory did not change in the view: keep the times it reported. */
	(void)utimensat(dir->parent->fd, dir->name, times, AT_SYMLINK_NOFOLLOW);
	return attach(fs, dir, dir->parent->fd, dir->name);
}

/*
 * An unnamed file in dirfd (O_TMPFILE). A layer on a file system without O_TMPFILE (bindfs
 * and other FUSE file systems, NFS) gets a named one in the blob cache instead, a folder of
 * the same file system that no view shows: *named then holds its name there (else "").
 */
static int layer_tmpfile(struct fs *fs, int dirfd, mode_t mode, char *named, size_t len)
{
	unsigned int r;
	int fd;

	named[0] = '\0';
	fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd < 0 ? -errno : fd;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	snprintf(named, len, ".copyup-%d-%08x", (int)getpid(), r);
	fd = openat(fs->blobs_fd, named, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		named[0] = '\0';
	return fd < 0 ? -errno : fd;
}

/* Links the file layer_tmpfile made in as dirfd/name (never over one there). */
static int layer_link(struct fs *fs, int tmp, const char *named, int dirfd, const char *name)
{
	char p[64];
	int rc = 0;

	if (named[0]) {
		if (linkat(fs->blobs_fd, named, dirfd, name, 0) < 0)
			rc = -errno;
		unlinkat(fs->blobs_fd, named, 0);
		return rc;
	}
	proc_path(p, sizeof(p), tmp);
	return linkat(AT_FDCWD, p, dirfd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
}

/*
 * An unnamed file holding n's base content, mode and times (layer_tmpfile): a crash while it
 * is made leaves nothing behind in the layer (a named one, a stray file in the blob cache).
 */
static int blob_tmpfile(struct fs *fs, struct fs_node *n, int dirfd, int *out, char *named,
			size_t len)
{
	struct timespec times[2] = {{fs->base_time, 0}, {fs->base_time, 0}};
	mode_t mode = n->lower_mode == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644;
	int src = -1, tmp;
	int rc;

	rc = n->lfs ? fs_lfs_view_open(fs, n->lfs, &src)
		    : fs_lower_open_blob(fs, &n->lower_oid, &src);
	if (rc < 0)
		return rc;
	tmp = layer_tmpfile(fs, dirfd, mode, named, len);
	rc = tmp < 0 ? tmp : util_copy_fd(tmp, src);
	if (rc == 0 && (fchmod(tmp, mode) < 0 || futimens(tmp, times) < 0))
		rc = -errno;
	close(src);
	if (rc < 0) {
		if (tmp >= 0)
			close(tmp);
		if (named[0])
			unlinkat(fs->blobs_fd, named, 0);
		return rc;
	}
	*out = tmp;
	return 0;
}

static int copy_up_file(struct fs *fs, struct fs_node *n)
{
	char named[64];
	int tmp, rc;

	rc = blob_tmpfile(fs, n, n->parent->fd, &tmp, named, sizeof(named));
	if (rc < 0)
		return rc;
	/* Linked into place only once complete. */
	rc = layer_link(fs, tmp, named, n->parent->fd, n->name);
	if (rc == 0)
		rc = attach(fs, n, n->parent->fd, n->name);
	close(tmp);
	return rc;
}

/*
 * A base file removed from the view while a process still had it open, written through that
 * descriptor: its copy is an unnamed file in the layer, which lives as long as the node (its
 * descriptors are the only references) and is never linked anywhere.
 */
static int copy_up_unlinked(struct fs *fs, struct fs_node *n)
{
	struct stat st;
	char named[64];
	int tmp, path, rc;

	rc = blob_tmpfile(fs, n, fs->layer_fd, &tmp, named, sizeof(named));
	if (rc < 0)
		return rc;
	if (named[0])
		unlinkat(fs->blobs_fd, named, 0); /* unnamed from here on, as O_TMPFILE's */
	path = fstat(tmp, &st) < 0 ? -errno : fs_upper_reopen(tmp, O_PATH);
	if (path < 0) {
		close(tmp);
		return path;
	}
	fs_node_set_upper(fs, n, path, &st);
	keep_data_fd(fs, n, tmp); /* the node's data from now on: kept, over the budget or not */
	return 0;
}

static int copy_up_symlink(struct fs *fs, struct fs_node *n)
{
	struct timespec times[2] = {{fs->base_time, 0}, {fs->base_time, 0}};
	char *target = NULL;
	int rc = fs_lower_readlink(fs, &n->lower_oid, &target);

	if (rc < 0)
		return rc;
	if (symlinkat(target, n->parent->fd, n->name) < 0)
		rc = -errno;
	free(target);
	if (rc < 0)
		return rc;
	(void)utimensat(n->parent->fd, n->name, times, AT_SYMLINK_NOFOLLOW);
	return attach(fs, n, n->parent->fd, n->name);
}

/*
 * .git/index may be the base commit's shared index (core/gitdir.c hard-links one copy into
 * every workspace of that base). Before anything could change it through this view, it gets
 * a private copy, made under a temporary name and renamed over, as git itself would.
 */
static int unshare_index(struct fs *fs, struct fs_node *n)
{
	static const char tmp_name[] = ".index.arborinth-unshare";
	struct stat st;
	int src = -1, dst = -1, rc;

	if (n->parent != fs->gitnode || strcmp(n->name, "index") != 0 || !S_ISREG(n->type))
		return 0;
	if (fstatat(n->fd, "", &st, AT_EMPTY_PATH) < 0)
		return -errno;
	if (st.st_nlink < 2)
		return 0;
	src = fs_upper_reopen(n->fd, O_RDONLY);
	if (src < 0)
		return src;
	/*
	 * The workload can make anything at the temporary name through the view (a FIFO, a hard
	 * link to another file): remove it and create a new file, never open what is there. No
	 * view operation runs meanwhile (fs->lock is held).
	 */
	struct fs_node *planted = fs_node_by_name(fs, n->parent, tmp_name);

	if (unlinkat(n->parent->fd, tmp_name, 0) < 0 && errno != ENOENT) {
		rc = -errno;
		close(src);
		return rc;
	}
	if (planted && fs_node_move(fs, planted, NULL, NULL) < 0) {
		close(src);
		return -ENOMEM;
	}
	dst = openat(n->parent->fd, tmp_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     st.st_mode & 07777);
	rc = dst < 0 ? -errno : util_copy_fd(dst, src);
	if (rc == 0 && futimens(dst, (struct timespec[2]){st.st_atim, st.st_mtim}) < 0)
		rc = -errno;
	if (rc == 0 && renameat(n->parent->fd, tmp_name, n->parent->fd, n->name) < 0)
		rc = -errno;
	/*
	 * The node's data descriptor (reads and writes without a handle) must not keep pointing
	 * at the shared file: swap the private copy in under the same number, so a read in
	 * flight on it sees one file or the other, never a closed descriptor.
	 */
	if (rc == 0 && n->data_fd >= 0 && dup3(dst, n->data_fd, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc < 0 && dst >= 0)
		unlinkat(n->parent->fd, tmp_name, 0);
	if (rc == 0)
		rc = attach(fs, n, n->parent->fd, n->name);
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	return rc;
}

int fs_upper_copy_up(struct fs *fs, struct fs_node *n)
{
	int rc;

	if (n->synth_mode)
		return -EACCES; /* made up by the daemon (fsmon.c): read-only */
	if (n->fd >= 0)
		return unshare_index(fs, n);
	if (S_ISDIR(n->type))
		return fs_upper_dir(fs, n);
	if ((n->unlinked || !n->parent) && S_ISREG(n->type) && n->has_lower) {
		rc = copy_up_unlinked(fs, n);
		if (rc == 0) {
			n->has_lower = false;
			fs_disk_added(fs, n);
		}
		return rc;
	}
	if (n->unlinked || !n->parent)
		return -ENOENT;
	rc = fs_upper_dir(fs, n->parent);
	if (rc < 0)
		return rc;
	rc = S_ISLNK(n->type) ? copy_up_symlink(fs, n) : copy_up_file(fs, n);
	if (rc == 0) {
		n->has_lower = false;
		fs_disk_added(fs, n);
	}
	return rc;
}

int fs_upper_whiteout(struct fs *fs, struct fs_node *dir, const char *name)
{
	int rc = fs_upper_dir(fs, dir);

	if (rc < 0)
		return rc;
	fs_dir_changed(dir);
	return fs_layer_whiteout_at(dir->fd, name);
}

int fs_upper_set_opaque(struct fs *fs, int dirfd)
{
	(void)fs;
	return fs_layer_set_opaque(dirfd);
}
