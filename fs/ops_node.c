/* fs/ops_node.c: lookup, forget, getattr, setattr, readlink, statfs. */
#include "fs/fs_internal.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct fs_node *p, *n = NULL;
	int rc, hidden;
	bool synth;

	pthread_mutex_lock(&fs->lock);
	p = fs_node_get(fs, parent);
	synth = p && p == fs->gitnode && util_str_has_prefix(name, FS_FSMON_NAME);
	if (synth)
		rc = fs_fsmon_lookup(fs, name, &n);
	else
		rc = p ? fs_lookup_child(fs, p, name, &n) : -ESTALE;
	/* hostgit.c: what exists may be hidden from (or made up for) callers outside boxes */
	hidden = rc == 0 && !synth ? fs_hostgit_lookup(fs, req, p, name, &n) : 0;
	if (hidden < 0) {
		fs_node_maybe_free(fs, n);
		rc = hidden;
	}
	if (rc == 0)
		rc = fs_entry_fill(fs, n, &e);
	if (rc == 0 && synth && strcmp(name, FS_FSMON_NAME) != 0)
		e.entry_timeout = e.attr_timeout = 0; /* an answer: asked once */
	if (rc == 0 && !synth)
		fs_hostgit_entry(fs, p, name, &e);
	fs_unlock(fs);
	if (rc == -ENOENT && !hidden) {
		/* A negative entry the kernel may cache: only we change the namespace. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = FS_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

static void forget_one(struct fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs_node *n = fs_node_get(fs, ino);

	if (!n)
		return;
	n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
	fs_node_maybe_free(fs, n);
}

void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = fs_of(req);

	pthread_mutex_lock(&fs->lock);
	forget_one(fs, ino, nlookup);
	fs_unlock(fs);
	fuse_reply_none(req);
}

void fs_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = fs_of(req);

	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < count; i++)
		forget_one(fs, forgets[i].ino, forgets[i].nlookup);
	fs_unlock(fs);
	fuse_reply_none(req);
}

void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;
	struct stat st;
	int rc;

	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	rc = n ? fs_node_stat(fs, n, &st) : -ESTALE;
	fs_unlock(fs);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, FS_TIMEOUT);
}

static int set_times(struct fs_node *n, const struct stat *attr, int to_set)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
	char p[64];

	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		ts[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		ts[1] = attr->st_mtim;
	if (S_ISLNK(n->type))
		return utimensat(n->parent->fd, n->name, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", n->fd);
	return utimensat(AT_FDCWD, p, ts, 0) < 0 ? -errno : 0;
}

static int set_size(struct fs *fs, struct fs_node *n, off_t size, struct fuse_file_info *fi)
{
	struct fs_handle *h = fi ? (struct fs_handle *)(uintptr_t)fi->fh : NULL;

	if (h && h->writable && !h->lower)
		return ftruncate(h->fd, size) < 0 ? -errno : 0;
	return fs_upper_truncate(fs, n, size);
}

static int do_setattr(struct fs *fs, struct fs_node *n, struct stat *attr, int to_set,
		      struct fuse_file_info *fi)
{
	char p[64];
	int rc = fs_upper_copy_up(fs, n);

	if (rc < 0)
		return rc;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", n->fd);
	if (to_set & FUSE_SET_ATTR_MODE) {
		if (S_ISLNK(n->type))
			return -EOPNOTSUPP;
		if (chmod(p, attr->st_mode & 07777) < 0)
			return -errno;
	}
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;

		if (fchownat(n->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = set_size(fs, n, attr->st_size, fi);
		if (rc < 0)
			return rc;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		      FUSE_SET_ATTR_MTIME_NOW))
		return set_times(n, attr, to_set);
	return 0;
}

static const char *setattr_op(int to_set)
{
	if (to_set & FUSE_SET_ATTR_SIZE)
		return "truncate";
	if (to_set & FUSE_SET_ATTR_MODE)
		return "chmod";
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		return "chown";
	return "utimens";
}

void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;
	struct stat st;
	int rc;

	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	if (n) {
		fs_pt_settle(n, true);
		if (to_set & FUSE_SET_ATTR_SIZE)
			(void)fs_record_writer(n, fuse_req_ctx(req)->pid, 0);
	}
	rc = n ? 0 : -ESTALE;
	if (n && (to_set & FUSE_SET_ATTR_SIZE)) {
		struct fs_disk_ask ask = {.pid = fuse_req_ctx(req)->pid, .len = attr->st_size};

		rc = fs_disk_check(fs, n, &ask); /* a truncate that extends */
	}
	if (rc == 0)
		rc = do_setattr(fs, n, attr, to_set, fi);
	if (n) {
		fs_pt_settle(n, false);
		fs_disk_update(fs, n);
	}
	if (n)
		fs_record_node(fs, req, setattr_op(to_set), n, NULL,
			       (to_set & FUSE_SET_ATTR_SIZE) ? attr->st_size : -1,
			       (to_set & FUSE_SET_ATTR_MODE) ? attr->st_mode & 07777 : 0, rc);
	if (rc == 0)
		rc = fs_node_stat(fs, n, &st);
	fs_unlock(fs);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, FS_TIMEOUT);
}

void fs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);
	char buf[PATH_MAX + 1];
	char *target = NULL;
	struct fs_node *n;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	if (!n) {
		rc = -ESTALE;
	} else if (!S_ISLNK(n->type)) {
		rc = -EINVAL;
	} else if (n->fd >= 0) {
		ssize_t len = readlinkat(n->fd, "", buf, sizeof(buf) - 1);

		if (len < 0)
			rc = -errno;
		else
			buf[len] = '\0';
	} else {
		rc = fs_lower_readlink(fs, &n->lower_oid, &target);
	}
	fs_unlock(fs);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, target ? target : buf);
	free(target);
}

void fs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);
	struct statvfs sv;

	if (fstatvfs(fs->layer_fd, &sv) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}
