/* fs/ops_file.c: open, create, read, write and the rest of a file handle's life. */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct fs_handle *handle_of(struct fuse_file_info *fi)
{
	return (struct fs_handle *)(uintptr_t)fi->fh;
}

static bool wants_write(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* Open flags passed to the real file: access mode, append, truncate, sync. */
static int real_flags(int flags)
{
	return flags & (O_ACCMODE | O_APPEND | O_TRUNC | O_SYNC | O_DSYNC | O_NOATIME);
}

/* Opens the blob cache file (or lfs's LFS object) for lower node data (no lock held). */
static int open_lower(struct fs *fs, const git_oid *oid, const struct fs_lfs_node *lfs,
		      int64_t size, int *out)
{
	struct stat st;
	int rc, fd = -1;

	if (lfs->ptr.oid[0])
		return fs_lfs_view_open(fs, lfs, out);
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = fs_lower_open_blob(fs, oid, &fd);
		if (rc < 0)
			return rc;
		if (size < 0 || (fstat(fd, &st) == 0 && st.st_size == size)) {
			*out = fd;
			return 0;
		}
		/* A torn cache file (a crash mid-write): drop it and materialise again. */
		close(fd);
		char hex[GIT_OID_HEXSZ + 1], path[GIT_OID_HEXSZ + 2];

		git_oid_tostr(hex, sizeof(hex), oid);
		memcpy(path, hex, 2);
		path[2] = '/';
		memcpy(path + 3, hex + 2, GIT_OID_HEXSZ - 1); /* with the NUL */
		unlinkat(fs->blobs_fd, path, 0);
	}
	return -EIO;
}

static void handle_release(struct fs *fs, struct fs_handle *h);

static struct fs_handle *handle_new(struct fs_node *n, int fd, bool lower, bool writable)
{
	struct fs_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->node = n;
	h->fd = fd;
	h->lower = lower;
	h->writable = writable;
	pthread_mutex_init(&h->wlock, NULL);
	return h;
}

/*
 * How the kernel will do h's I/O (fs->lock held): through the upper file itself
 * (passthrough: returns the backing id) or through its page cache and this daemon (0). An
 * inode has one mode at a time (passthrough.c): passthrough only while no cached handle of
 * the node is open.
 */
static int32_t choose_io(struct fs *fs, fuse_req_t req, struct fs_handle *h)
{
	struct stat st;
	int32_t id = 0;

	h->opener = fuse_req_ctx(req)->pid;
	if (h->writable)
		(void)fs_record_writer(h->node, h->opener, 0);
	if (fs->passthrough && !h->lower && h->node->cached_opens == 0 && fstat(h->fd, &st) == 0)
		id = fs_passthrough_get(fs, h->node);
	if (id > 0) {
		h->passthrough = true;
		h->w.pid = h->opener;
		/* fsmon.c: its writes never reach us; it is "changed" until closed */
		if (h->writable && h->node->pt_writers++ == 0) {
			fs->fsmon.nlive++;
			h->node->pt_ctime = st.st_ctim;
			h->node->pt_size = st.st_size;
			h->node->pt_dirty = false;
		}
	} else {
		h->cached = true;
		h->node->cached_opens++;
	}
	return id;
}

/* Opens node n (fs->lock held on entry and on return; dropped while reading blobs). */
static int open_node(struct fs *fs, struct fs_node *n, int flags, struct fs_handle **out)
{
	struct fs_lfs_node lfs = {0};
	git_oid oid;
	int64_t size = -1;
	int fd, rc;

	if (S_ISDIR(n->type))
		return -EISDIR;
	if (wants_write(flags)) {
		rc = fs_upper_copy_up(fs, n);
		if (rc < 0)
			return rc;
	}
	if (n->fd >= 0) {
		fd = fs_upper_reopen(n->fd, real_flags(flags));
		if (fd < 0)
			return fd;
		*out = handle_new(n, fd, false, (flags & O_ACCMODE) != O_RDONLY);
	} else {
		git_oid_cpy(&oid, &n->lower_oid);
		if (fs_lower_size(fs, n, &size) < 0)
			size = -1; /* unknown: skip the torn-file check */
		if (n->lfs)
			lfs = *n->lfs;
		n->refs++; /* keep n while the lock is dropped */
		fs_unlock(fs);
		rc = open_lower(fs, &oid, &lfs, size, &fd);
		pthread_mutex_lock(&fs->lock);
		n->refs--;
		if (rc < 0)
			return rc;
		*out = handle_new(n, fd, true, false);
	}
	if (!*out) {
		close(fd);
		return -ENOMEM;
	}
	n->refs++;
	return 0;
}

/* A file fsmon.c made up: read-only, no handle, read from the node every time. */
static void open_synth(fuse_req_t req, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fi->fh = 0;
	fi->direct_io = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

/* Reads a made-up file; false when ino is not one (fs->lock not held). */
static bool read_synth(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	if (!n || !n->synth_mode) {
		pthread_mutex_unlock(&fs->lock);
		return false;
	}
	rc = fs_fsmon_read(n, size, off, &buf, &len);
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
	return true;
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_handle *h = NULL;
	struct fs_node *n;
	int32_t backing = 0;
	int rc;

	if (fs->no_open) {
		/* The kernel takes this as "open without asking from now on" (see fs->no_open). */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	if (n && n->synth_mode) {
		fs_unlock(fs);
		open_synth(req, fi);
		return;
	}
	rc = n ? 0 : -ESTALE;
	if (n && wants_write(fi->flags) && !(fi->flags & O_TRUNC)) {
		/* A copy-up comes first: the base file's bytes are the workspace's from now on. */
		struct fs_disk_ask ask = {.pid = fuse_req_ctx(req)->pid};

		rc = fs_disk_check(fs, n, &ask);
	}
	if (rc == 0)
		rc = open_node(fs, n, fi->flags, &h);
	if (n && (fi->flags & O_TRUNC)) {
		fs_record_node(fs, req, "truncate", n, NULL, 0, 0, rc);
		fs_disk_update(fs, n);
	}
	if (rc == 0)
		backing = choose_io(fs, req, h);
	fs_unlock(fs);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (h->writable)
		fs_record_first_write(fs, h->opener); /* its writes may come after it exits */
	fi->fh = (uintptr_t)h;
	/* The base never changes and every write comes through the kernel: keep its cache. */
	fi->keep_cache = 1;
	/*
	 * No FLUSH at close(): writes reach the file before write() returns and locks are
	 * kernel-local (no lock operations), so a flush has nothing to do; skipping it saves a
	 * round trip to the daemon on every close().
	 */
	fi->noflush = 1;
	if (fs_passthrough_reply_create(req, NULL, fi, backing) == -ENOENT)
		handle_release(fs, h); /* the caller was interrupted: no release will come */
}

/*
 * What an open of an existing n through CREATE does when files have no handles: the
 * truncation O_TRUNC asks for (the kernel will not send it: it believes it created the file).
 */
static int open_nohandle(struct fs *fs, struct fs_node *n, int flags)
{
	int rc;

	if (S_ISDIR(n->type))
		return -EISDIR;
	if (!(flags & O_TRUNC))
		return 0;
	rc = fs_upper_copy_up(fs, n);
	if (rc == 0)
		rc = fs_upper_truncate(fs, n, 0);
	fs_disk_update(fs, n);
	return rc;
}

static int do_create(struct fs *fs, fuse_req_t req, struct fs_node *p, const char *name,
		     mode_t mode, struct fuse_file_info *fi, struct fuse_entry_param *e,
		     struct fs_handle **h)
{
	struct fs_node *n = NULL;
	bool covered;
	int fd, rc;

	rc = fs_prepare_new(fs, p, name, &covered);
	if (rc == -EEXIST && !(fi->flags & O_EXCL)) {
		/* Lost a race with another creator: open what is there. */
		rc = fs_lookup_child(fs, p, name, &n);
		if (rc == 0 && fs->no_open)
			rc = open_nohandle(fs, n, fi->flags);
		else if (rc == 0)
			rc = open_node(fs, n, fi->flags, h);
		if (rc == 0)
			rc = fs_entry_fill(fs, n, e);
		return rc;
	}
	if (rc < 0)
		return rc;
	/*
	 * Without OPEN requests the file is then written through its node's data descriptor:
	 * made read-write here (a new file may be, whatever its mode) and kept as that, which
	 * spares the first write a reopen.
	 */
	fd = openat(p->fd, name,
		    (fs->no_open ? O_RDWR : real_flags(fi->flags)) | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC,
		    mode & 07777);
	if (fd < 0)
		return -errno;
	rc = fs_upper_own(fs, req, p, name, mode);
	if (rc < 0) {
		close(fd);
		unlinkat(p->fd, name, 0);
		return rc;
	}
	rc = fs_lookup_upper(fs, p, name, &n);
	if (rc > 0)
		rc = -ENOENT;
	if (rc == 0 && fs->no_open) {
		/* No handle: the kernel sends no RELEASE once it opens without asking. */
		fs_upper_adopt_data_fd(fs, n, fd);
		return fs_entry_fill(fs, n, e);
	}
	if (rc == 0) {
		*h = handle_new(n, fd, false, (fi->flags & O_ACCMODE) != O_RDONLY);
		rc = *h ? 0 : -ENOMEM;
	}
	if (rc < 0) {
		close(fd);
		return rc;
	}
	n->refs++;
	return fs_entry_fill(fs, n, e);
}

void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct fs_handle *h = NULL;
	struct fs_node *p, *old = NULL;
	int32_t backing = 0;
	int rc;

	pthread_mutex_lock(&fs->lock);
	p = fs_node_get(fs, parent);
	rc = p ? 0 : -ESTALE;
	if (p && fs_lookup_child(fs, p, name, &old) == -ENOENT)
		rc = fs_disk_check_new(fs, fuse_req_ctx(req)->pid, p, name); /* a new name */
	if (rc == 0)
		rc = do_create(fs, req, p, name, mode, fi, &e, &h);
	if (rc == 0)
		fs_disk_update(fs, p); /* its new entry */
	if (p)
		fs_record_mode(fs, req, "create", p, name, mode & 07777, rc);
	if (rc == 0 && h)
		backing = choose_io(fs, req, h);
	fs_unlock(fs);
	if (rc < 0) {
		if (h)
			handle_release(fs, h);
		fuse_reply_err(req, -rc);
		return;
	}
	if (h && h->writable)
		fs_record_first_write(fs, h->opener); /* as in fs_op_open */
	fi->fh = (uintptr_t)h;
	fi->keep_cache = 1;
	fi->noflush = 1; /* as in fs_op_open */
	if (fs_passthrough_reply_create(req, &e, fi, backing) == -ENOENT && h)
		handle_release(fs, h);
}

/*
 * I/O without a handle (fh 0: the kernel sent no OPEN). A node's data comes from its upper
 * file (kept open on the node) or, for an unmodified file, from its blob cache file, opened
 * for the request. The node is pinned (refs) while the lock is dropped for the I/O.
 */
struct node_io {
	struct fs_node *node;
	int fd;
	bool owned; /* fd is ours to close (a blob cache file, or an upper file over the budget) */
	bool lower; /* fd is the read-only blob cache file */
};

/*
 * Gets n's data for reading (write false) or, after a copy-up, writing; ask (may be NULL): the
 * space the write may take, checked first (disk.c). Lock held on entry.
 */
static int node_io_begin(struct fs *fs, fuse_ino_t ino, bool write, const struct fs_disk_ask *ask,
			 struct node_io *io)
{
	struct fs_node *n = fs_node_get(fs, ino);
	struct fs_lfs_node lfs = {0};
	int64_t size = -1;
	git_oid oid;
	int rc = 0;

	io->node = NULL;
	io->fd = -1;
	io->owned = false;
	io->lower = false;
	if (!n)
		return -ESTALE;
	if (S_ISDIR(n->type))
		return -EISDIR;
	if (ask)
		rc = fs_disk_check(fs, n, ask);
	if (write && rc == 0)
		rc = fs_upper_copy_up(fs, n);
	if (rc < 0)
		return rc;
	n->refs++;
	io->node = n;
	if (n->fd >= 0)
		return fs_upper_data_fd(fs, n, &io->fd, &io->owned);
	git_oid_cpy(&oid, &n->lower_oid);
	if (fs_lower_size(fs, n, &size) < 0)
		size = -1;
	if (n->lfs)
		lfs = *n->lfs;
	fs_unlock(fs);
	rc = open_lower(fs, &oid, &lfs, size, &io->fd);
	pthread_mutex_lock(&fs->lock);
	io->owned = io->lower = rc == 0;
	return rc;
}

/* Unpins the node (lock held on entry; released on return). */
static void node_io_end(struct fs *fs, struct node_io *io)
{
	if (io->node) {
		io->node->refs--;
		fs_node_maybe_free(fs, io->node);
	}
	fs_unlock(fs);
	if (io->owned)
		close(io->fd);
}

/*
 * node_io_begin under the lock, which is released on return; on failure everything is
 * released, on success finish with node_io_done.
 */
static int node_io_get(struct fs *fs, fuse_ino_t ino, bool write, const struct fs_disk_ask *ask,
		       struct node_io *io)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = node_io_begin(fs, ino, write, ask, io);
	if (rc < 0)
		node_io_end(fs, io);
	else
		fs_unlock(fs);
	return rc;
}

static void node_io_done(struct fs *fs, struct node_io *io)
{
	pthread_mutex_lock(&fs->lock);
	node_io_end(fs, io);
}

static void read_node(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off)
{
	struct fs *fs = fs_of(req);
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
	struct node_io io;
	int rc;

	if (read_synth(req, ino, size, off))
		return;
	rc = node_io_get(fs, ino, false, NULL, &io);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = io.fd;
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
	node_io_done(fs, &io);
}

static void write_node(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off)
{
	struct fs *fs = fs_of(req);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(fuse_buf_size(bufv));
	pid_t pid = fuse_req_ctx(req)->pid;
	struct fs_disk_ask ask = {.pid = pid, .off = off, .len = (int64_t)fuse_buf_size(bufv)};
	struct node_io io;
	bool first = false;
	ssize_t n;
	int rc = node_io_get(fs, ino, true, &ask, &io);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = io.fd;
	dst.buf[0].pos = off;
	n = fuse_buf_copy(&dst, bufv, FUSE_BUF_SPLICE_NONBLOCK);
	pthread_mutex_lock(&fs->lock);
	if (n > 0) {
		pid = fs_record_writer(io.node, pid, 0);
		first = fs_record_node_write(fs, io.node, pid, off, (size_t)n);
		fs_fsmon_note_node(fs, io.node);
		fs_disk_update(fs, io.node);
	}
	node_io_end(fs, &io);
	if (first)
		fs_record_first_write(fs, pid);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/*
 * A read-only handle opened on the base content follows the file once another handle copied
 * it up and wrote to it, as it would on one real file. dup2() swaps the descriptor in place,
 * so concurrent reads on the handle see either the old or the new file, never a closed fd.
 */
static void follow_copy_up(struct fs *fs, struct fs_handle *h)
{
	int fd = -1;

	pthread_mutex_lock(&fs->lock);
	if (h->node->fd >= 0)
		fd = fs_upper_reopen(h->node->fd, O_RDONLY);
	pthread_mutex_unlock(&fs->lock);
	if (fd < 0)
		return;
	pthread_mutex_lock(&h->wlock);
	if (h->lower && dup2(fd, h->fd) >= 0)
		__atomic_store_n(&h->lower, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&h->wlock);
	close(fd);
}

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_handle *h = handle_of(fi);
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

	if (!h) {
		read_node(req, ino, size, off);
		return;
	}
	if (__atomic_load_n(&h->lower, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&h->node->fd, __ATOMIC_ACQUIRE) >= 0)
		follow_copy_up(fs_of(req), h);

	/* Zero-copy: libfuse splices straight from the file when the kernel allows it. */
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = h->fd;
	buf.buf[0].pos = off;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

/* The space check of a write of len bytes at off through handle h (disk.c). */
static int handle_space(fuse_req_t req, struct fs_handle *h, off_t off, size_t len)
{
	struct fs *fs = fs_of(req);
	struct fs_disk_ask ask = {.pid = fuse_req_ctx(req)->pid, .off = off, .len = (int64_t)len};
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = fs_disk_check(fs, h->node, &ask);
	fs_unlock(fs);
	return rc;
}

void fs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
		     struct fuse_file_info *fi)
{
	struct fs_handle *h = handle_of(fi);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(fuse_buf_size(bufv));
	pid_t pid;
	ssize_t n;

	if (!h) {
		write_node(req, ino, bufv, off);
		return;
	}
	if (!h->writable) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (handle_space(req, h, off, fuse_buf_size(bufv)) < 0) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = h->fd;
	dst.buf[0].pos = off;
	n = fuse_buf_copy(&dst, bufv, FUSE_BUF_SPLICE_NONBLOCK);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	pthread_mutex_lock(&fs_of(req)->lock);
	fs_fsmon_note_node(fs_of(req), h->node);
	fs_disk_update(fs_of(req), h->node);
	pid = fs_record_writer(h->node, fuse_req_ctx(req)->pid, h->opener);
	pthread_mutex_unlock(&fs_of(req)->lock);
	pthread_mutex_lock(&h->wlock);
	/* A writer other than the one coalesced so far (another's mmap writeback): its own row. */
	if (h->w.count && h->w.pid != pid) {
		fs_record_writes(fs_of(req), h);
		h->w = (struct fs_wstats){0};
	}
	if (fs_wstats_add(&h->w, off, (size_t)n)) {
		h->w.pid = pid;
		fs_record_first_write(fs_of(req), h->w.pid);
	}
	pthread_mutex_unlock(&h->wlock);
	fuse_reply_write(req, (size_t)n);
}

void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_handle *h = handle_of(fi);
	int fd;

	if (!h) {
		/* Opened without asking: the kernel then stops sending FLUSH (nothing to do). */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fd = dup(h->fd);

	/* Closing a duplicate releases the POSIX locks the caller held, as close(2) would. */
	if (fd >= 0)
		close(fd);
	fuse_reply_err(req, 0);
}

/*
 * A passthrough open's writes never reached the daemon: when the file changed while it was
 * open (its ctime or size moved, which restoring the mtime does not undo), they are recorded
 * as one write of its opener over the file's whole size. fs->lock not held.
 */
static void passthrough_writes(struct fs *fs, struct fs_handle *h)
{
	struct fs_node *n = h->node;
	struct stat st;
	bool changed;

	if (fstat(h->fd, &st) < 0)
		return;
	pthread_mutex_lock(&fs->lock);
	changed = n->pt_dirty || st.st_size != n->pt_size ||
		  st.st_ctim.tv_sec != n->pt_ctime.tv_sec ||
		  st.st_ctim.tv_nsec != n->pt_ctime.tv_nsec;
	n->pt_ctime = st.st_ctim;
	n->pt_size = st.st_size;
	n->pt_dirty = false;
	pthread_mutex_unlock(&fs->lock);
	if (!changed)
		return;
	h->w.bytes = h->w.hi = st.st_size;
	h->w.lo = 0;
	h->w.count = 0; /* unknown: the kernel wrote */
	h->w.pid = h->opener;
}

void fs_pt_settle(struct fs_node *n, bool before)
{
	struct stat st;

	if (n->pt_writers == 0 || n->fd < 0 || fstat(n->fd, &st) < 0)
		return;
	if (before && (st.st_size != n->pt_size || st.st_ctim.tv_sec != n->pt_ctime.tv_sec ||
		       st.st_ctim.tv_nsec != n->pt_ctime.tv_nsec))
		n->pt_dirty = true;
	n->pt_ctime = st.st_ctim;
	n->pt_size = st.st_size;
}

static void handle_release(struct fs *fs, struct fs_handle *h)
{
	if (h->passthrough && h->writable)
		passthrough_writes(fs, h);
	if (h->w.count || h->w.hi > 0)
		fs_record_writes(fs, h);
	close(h->fd);
	pthread_mutex_lock(&fs->lock);
	if (h->passthrough)
		fs_passthrough_put(fs, h->node);
	if (h->passthrough && h->writable) {
		if (--h->node->pt_writers == 0)
			fs->fsmon.nlive--;
		h->node->fsmon_seq = 0;
		fs_fsmon_note_node(fs, h->node);
	}
	if (h->cached)
		h->node->cached_opens--;
	if (h->writable)
		fs_disk_update(fs, h->node); /* passthrough: the kernel wrote it */
	h->node->refs--;
	fs_node_maybe_free(fs, h->node);
	fs_unlock(fs);
	pthread_mutex_destroy(&h->wlock);
	free(h);
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (handle_of(fi))
		handle_release(fs_of(req), handle_of(fi));
	fuse_reply_err(req, 0);
}

/*
 * The descriptor a handle-taking operation works on: the handle's, or the node's data (with
 * a copy-up first when it writes). Returns with fs->lock released; finish with io_done.
 */
static int io_fd(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, bool write,
		 const struct fs_disk_ask *ask, struct node_io *io)
{
	struct fs_handle *h = handle_of(fi);
	struct fs *fs = fs_of(req);
	int rc = 0;

	if (h) {
		*io =
		    (struct node_io){.node = NULL, .fd = h->fd, .owned = false, .lower = h->lower};
		if (write && !h->writable)
			return -EBADF;
		if (ask) {
			pthread_mutex_lock(&fs->lock);
			rc = fs_disk_check(fs, h->node, ask);
			fs_unlock(fs);
		}
		return rc;
	}
	return node_io_get(fs, ino, write, ask, io);
}

static void io_done(fuse_req_t req, struct node_io *io)
{
	if (io->node)
		node_io_done(fs_of(req), io); /* else a handle's descriptor: nothing to release */
}

void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct node_io io;
	int rc = io_fd(req, ino, fi, false, NULL, &io);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* The read-only blob cache file holds nothing of the workspace's to sync. */
	if (!io.lower && (datasync ? fdatasync(io.fd) : fsync(io.fd)) < 0)
		rc = -errno;
	io_done(req, &io);
	fuse_reply_err(req, -rc);
}

/*
 * fallocate in every mode changes the file's content (PUNCH_HOLE, ZERO_RANGE, COLLAPSE_RANGE,
 * INSERT_RANGE), its size or its allocation: one row each, with the mode and the range.
 */
void fs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		     struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_handle *h = handle_of(fi);
	struct fs_node *n;
	struct fs_disk_ask ask = {
	    .pid = fuse_req_ctx(req)->pid, .off = offset, .len = length, .mode = mode};
	struct node_io io;
	int rc = io_fd(req, ino, fi, true, &ask, &io);
	struct fs_node *held = rc == 0 ? io.node : NULL; /* pinned by io_fd */

	if (h) {
		/* The handle's coalesced writes came first: their row too. */
		pthread_mutex_lock(&h->wlock);
		if (h->w.count) {
			fs_record_writes(fs, h);
			h->w = (struct fs_wstats){0};
		}
		pthread_mutex_unlock(&h->wlock);
	}
	if (rc == 0 && fallocate(io.fd, mode, offset, length) < 0)
		rc = -errno;
	pthread_mutex_lock(&fs->lock);
	n = held ? held : h ? h->node : fs_node_get(fs, ino);
	if (n) {
		(void)fs_record_writer(n, fuse_req_ctx(req)->pid, 0);
		fs_record_range(fs, req, "fallocate", n, (uint32_t)mode, offset, length, rc);
		fs_disk_update(fs, n);
	}
	if (held)
		node_io_end(fs, &io);
	else
		fs_unlock(fs);
	fuse_reply_err(req, -rc);
}

void fs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct node_io io;
	int rc = io_fd(req, ino, fi, false, NULL, &io);
	off_t r;

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	r = lseek(io.fd, off, whence);
	rc = r < 0 ? -errno : 0;
	io_done(req, &io);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lseek(req, r);
}
