/* fs/ops_dir.c: creating and removing names: mkdir, mknod, symlink, link, unlink, rmdir. */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/*
 * Gets parent ready for a new entry `name`: it must not exist in the view; the parent gets an
 * upper directory; a whiteout of an old lower entry is removed (*covered tells whether the
 * lower layer has the name, so a new directory there must be opaque).
 */
int fs_prepare_new(struct fs *fs, struct fs_node *parent, const char *name, bool *covered)
{
	const git_tree_entry *e;
	struct fs_node *old = NULL;
	struct stat st;
	int rc;

	rc = fs_lookup_child(fs, parent, name, &old);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	if (parent->unlinked)
		return -ENOENT;
	if (parent == fs->root && !strcmp(name, ".git"))
		return -EEXIST;
	fs_dir_changed(parent);
	rc = fs_upper_dir(fs, parent);
	if (rc < 0)
		return rc;
	*covered = fs_lower_child(fs, parent, name, &e) == 0;
	if (fstatat(parent->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && fs_upper_is_whiteout(&st) &&
	    unlinkat(parent->fd, name, 0) < 0)
		return -errno;
	return 0;
}

/* Replies with the entry for the just-created parent/name. Requires fs->lock. */
static int new_entry(struct fs *fs, struct fs_node *parent, const char *name,
		     struct fuse_entry_param *e)
{
	struct fs_node *n = NULL;
	int rc = fs_lookup_upper(fs, parent, name, &n);

	if (rc > 0)
		rc = -ENOENT;
	if (rc == 0) {
		fs_disk_added(fs, n); /* a directory's block, a long symlink's */
		fs_disk_update(fs, parent);
		rc = fs_entry_fill(fs, n, e);
	}
	return rc;
}

static void reply_entry_or_err(fuse_req_t req, int rc, struct fuse_entry_param *e)
{
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, e);
}

/* A node just made in p's upper directory: given to the caller, then its entry (or undone). */
static int new_upper_entry(struct fs *fs, fuse_req_t req, struct fs_node *p, const char *name,
			   mode_t mode, struct fuse_entry_param *e)
{
	int rc = fs_upper_own(fs, req, p, name, mode);

	if (rc < 0) {
		unlinkat(p->fd, name, 0);
		return rc;
	}
	return new_entry(fs, p, name, e);
}

static int do_mkdir(struct fs *fs, fuse_req_t req, struct fs_node *p, const char *name, mode_t mode)
{
	bool covered = false;
	int rc = fs_prepare_new(fs, p, name, &covered);
	int fd;

	if (rc < 0)
		return rc;
	if (mkdirat(p->fd, name, mode & 07777) < 0)
		return -errno;
	rc = fs_upper_own(fs, req, p, name, mode);
	if (rc < 0 || !covered) {
		if (rc < 0)
			unlinkat(p->fd, name, AT_REMOVEDIR);
		return rc;
	}
	/* A directory made where the base had an entry must not show the old children. */
	fd = openat(p->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = fs_upper_set_opaque(fs, fd);
	close(fd);
	if (rc < 0)
		unlinkat(p->fd, name, AT_REMOVEDIR);
	return rc;
}

void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct fs_node *p;
	int rc;

	pthread_mutex_lock(&fs->lock);
	p = fs_node_get(fs, parent);
	rc = p ? fs_disk_check_new(fs, fuse_req_ctx(req)->pid, p, name) : -ESTALE;
	if (rc == 0)
		rc = do_mkdir(fs, req, p, name, mode);
	if (rc == 0)
		rc = new_entry(fs, p, name, &e);
	if (p)
		fs_record_mode(fs, req, "mkdir", p, name, mode & 07777, rc);
	fs_unlock(fs);
	reply_entry_or_err(req, rc, &e);
}

void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	bool covered;
	struct fs_node *p;
	int rc;

	/* A 0/0 character device is how the upper layer spells a whiteout. */
	if (S_ISCHR(mode) && rdev == makedev(0, 0)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	p = fs_node_get(fs, parent);
	rc = p ? fs_disk_check_new(fs, fuse_req_ctx(req)->pid, p, name) : -ESTALE;
	if (rc == 0)
		rc = fs_prepare_new(fs, p, name, &covered);
	if (rc == 0 && mknodat(p->fd, name, mode, rdev) < 0)
		rc = -errno;
	if (rc == 0)
		rc = new_upper_entry(fs, req, p, name, mode, &e);
	if (p)
		fs_record_mode(fs, req, "mknod", p, name, mode, rc);
	fs_unlock(fs);
	reply_entry_or_err(req, rc, &e);
}

void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	bool covered;
	struct fs_node *p;
	int rc;

	pthread_mutex_lock(&fs->lock);
	p = fs_node_get(fs, parent);
	rc = p ? fs_disk_check_new(fs, fuse_req_ctx(req)->pid, p, name) : -ESTALE;
	if (rc == 0)
		rc = fs_prepare_new(fs, p, name, &covered);
	if (rc == 0 && symlinkat(link, p->fd, name) < 0)
		rc = -errno;
	if (rc == 0)
		rc = new_upper_entry(fs, req, p, name, S_IFLNK | 0777, &e);
	if (p)
		fs_record(fs, req, "symlink", p, name, link, rc);
	fs_unlock(fs);
	reply_entry_or_err(req, rc, &e);
}

static int do_link(struct fs *fs, struct fs_node *n, struct fs_node *np, const char *newname,
		   struct fuse_entry_param *e)
{
	char p[64];
	bool covered;
	int rc;

	if (S_ISDIR(n->type))
		return -EPERM;
	rc = fs_prepare_new(fs, np, newname, &covered);
	if (rc == 0)
		rc = fs_upper_copy_up(fs, n);
	if (rc < 0)
		return rc;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", n->fd);
	fs_pt_settle(n, true);
	rc = linkat(AT_FDCWD, p, np->fd, newname, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
	fs_pt_settle(n, false);
	if (rc < 0)
		return rc;
	rc = fs_entry_fill(fs, n, e);
	fs_hostgit_entry(fs, np, newname, e); /* n may be known by another name */
	return rc;
}

void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct fs_node *n, *np;
	char *from = NULL;
	int rc;

	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	np = fs_node_get(fs, newparent);
	rc = n && np ? fs_disk_check_new(fs, fuse_req_ctx(req)->pid, np, newname) : -ESTALE;
	if (rc == 0)
		rc = do_link(fs, n, np, newname, &e);
	if (rc == 0)
		fs_disk_update(fs, np);
	if (rc == 0)
		n->fsmon_linked = true; /* fsmon.c: its node no longer knows all its names */
	if (n && np) {
		from = fs_node_path(fs, n, NULL);
		fs_record(fs, req, "link", np, newname, from, rc);
	}
	fs_unlock(fs);
	free(from);
	reply_entry_or_err(req, rc, &e);
}

/* Removes parent/name (already looked up as n) from the view. */
int fs_remove_entry(struct fs *fs, struct fs_node *p, const char *name, struct fs_node *n)
{
	const git_tree_entry *e;
	int rc;

	fs_dir_changed(p);
	if (n->fd >= 0) {
		/* The upper directory can only hold whiteouts when the view shows it empty. */
		rc = S_ISDIR(n->type) ? util_rm_rf_at(p->fd, name) : 0;
		fs_pt_settle(n, true);
		if (rc == 0 && !S_ISDIR(n->type) && unlinkat(p->fd, name, 0) < 0)
			rc = -errno;
		fs_pt_settle(n, false);
		if (rc == 0)
			fs_disk_unlinked(fs, n);
		if (rc < 0)
			return rc;
	}
	if (fs_lower_child(fs, p, name, &e) == 0) {
		rc = fs_upper_whiteout(fs, p, name);
		if (rc < 0)
			return rc;
	}
	return fs_node_move(fs, n, NULL, NULL);
}

static int do_unlink(struct fs *fs, struct fs_node *p, const char *name, bool dir)
{
	struct fs_node *n = NULL;
	int rc = fs_lookup_child(fs, p, name, &n);

	if (rc < 0)
		return rc;
	if (n == fs->gitnode)
		return -EBUSY;
	if (n->synth_mode)
		return -EACCES; /* a submodule's .git (lower_sub.c): the daemon's */
	if (dir && !S_ISDIR(n->type))
		return -ENOTDIR;
	if (!dir && S_ISDIR(n->type))
		return -EISDIR;
	if (dir) {
		struct fs_dirent *ents = NULL;
		size_t count = 0;

		rc = fs_dir_list(fs, n, &ents, &count);
		fs_dirents_free(ents, count);
		if (rc < 0)
			return rc;
		if (count > 0)
			return -ENOTEMPTY;
	}
	return fs_remove_entry(fs, p, name, n);
}

static void unlink_common(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
	struct fs *fs = fs_of(req);
	struct fs_node *p;
	int rc;

	pthread_mutex_lock(&fs->lock);
	p = fs_node_get(fs, parent);
	rc = p ? do_unlink(fs, p, name, dir) : -ESTALE;
	if (p)
		fs_record(fs, req, dir ? "rmdir" : "unlink", p, name, NULL, rc);
	fs_unlock(fs);
	fuse_reply_err(req, -rc);
}

void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unlink_common(req, parent, name, false);
}

void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unlink_common(req, parent, name, true);
}
