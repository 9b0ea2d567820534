/*
 * fs/ops_rename.c: rename, including directories that live wholly or partly in the lower
 * layer. A moved directory keeps its lower children by recording the id of its base tree on
 * its upper copy (FS_XATTR_TREE), so a rename costs O(1) whatever the directory holds.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

/*
 * Makes the upper copy of directory d say where its lower part comes from, so it stays the
 * same wherever d moves: its own base tree, or nothing (opaque) when the destination's
 * base has an entry of that name that must not show through.
 */
static int pin_dir_lower(struct fs *fs, struct fs_node *d, struct fs_node *np, const char *newname)
{
	const git_tree_entry *e;
	char p[64], hex[GIT_OID_HEXSZ + 1];

	git_tree *t = NULL;

	fs_dir_changed(d);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", d->fd);
	/* A submodule's: the tree of its commit (lower_sub.c), or nothing when not shown. */
	if (d->has_lower && d->lower_mode == GIT_FILEMODE_COMMIT &&
	    (fs_lower_tree(fs, d, &t) < 0 || !t))
		return fs_upper_set_opaque(fs, d->fd);
	if (d->has_lower) {
		git_oid_tostr(hex, sizeof(hex),
			      t ? git_object_id((const git_object *)t) : &d->lower_oid);
		if (setxattr(p, FS_XATTR_TREE, hex, GIT_OID_HEXSZ, 0) < 0)
			return -errno;
		(void)removexattr(p, FS_XATTR_OPAQUE);
		d->lower_from_xattr = true;
		return 0;
	}
	if (fs_lower_child(fs, np, newname, &e) == 0)
		return fs_upper_set_opaque(fs, d->fd);
	return 0;
}

static int check_replace(struct fs *fs, struct fs_node *n, struct fs_node *t)
{
	struct fs_dirent *ents = NULL;
	size_t count = 0;
	int rc;

	if (S_ISDIR(n->type) && !S_ISDIR(t->type))
		return -ENOTDIR;
	if (!S_ISDIR(n->type) && S_ISDIR(t->type))
		return -EISDIR;
	if (!S_ISDIR(t->type))
		return 0;
	rc = fs_dir_list(fs, t, &ents, &count);
	fs_dirents_free(ents, count);
	if (rc < 0)
		return rc;
	return count ? -ENOTEMPTY : 0;
}

/* Copies n up and pins its lower part for its new place np/newname. */
static int ready_to_move(struct fs *fs, struct fs_node *n, struct fs_node *np, const char *newname)
{
	int rc = fs_upper_copy_up(fs, n);

	if (rc == 0 && S_ISDIR(n->type))
		rc = pin_dir_lower(fs, n, np, newname);
	return rc;
}

static int exchange(struct fs *fs, struct fs_node *p, const char *name, struct fs_node *n,
		    struct fs_node *np, const char *newname, struct fs_node *t)
{
	int rc = ready_to_move(fs, n, np, newname);

	if (rc == 0)
		rc = ready_to_move(fs, t, p, name);
	if (rc < 0)
		return rc;
	if (renameat2(p->fd, name, np->fd, newname, RENAME_EXCHANGE) < 0)
		return -errno;
	rc = fs_node_move(fs, n, NULL, NULL);
	if (rc == 0)
		rc = fs_node_move(fs, t, NULL, NULL);
	if (rc == 0)
		rc = fs_node_move(fs, n, np, newname);
	if (rc == 0)
		rc = fs_node_move(fs, t, p, name);
	return rc;
}

static int do_rename(struct fs *fs, struct fs_node *p, const char *name, struct fs_node *np,
		     const char *newname, unsigned int flags)
{
	const git_tree_entry *e;
	struct fs_node *n = NULL, *t = NULL;
	bool covered = false;
	int rc;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	rc = fs_lookup_child(fs, p, name, &n);
	if (rc < 0)
		return rc;
	rc = fs_lookup_child(fs, np, newname, &t);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (n == fs->gitnode || t == fs->gitnode)
		return -EBUSY;
	if (flags & RENAME_EXCHANGE) {
		if (!t)
			return -ENOENT;
		return exchange(fs, p, name, n, np, newname, t);
	}
	if (t && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (t == n)
		return 0; /* two names of one file: nothing to do, as rename(2) says */
	if (t) {
		rc = check_replace(fs, n, t);
		if (rc == 0 && t->fd >= 0 && S_ISDIR(t->type))
			rc = util_rm_rf_at(np->fd, newname); /* only whiteouts are left in it */
		if (rc < 0)
			return rc;
		rc = fs_upper_dir(fs, np);
	} else {
		rc = fs_prepare_new(fs, np, newname, &covered);
	}
	if (rc == 0)
		rc = ready_to_move(fs, n, np, newname);
	if (rc < 0)
		return rc;
	if (renameat2(p->fd, name, np->fd, newname, 0) < 0)
		return -errno;
	/* The old name hid nothing of the base? Then it needs a whiteout to stay gone. */
	if (fs_lower_child(fs, p, name, &e) == 0) {
		rc = fs_upper_whiteout(fs, p, name);
		if (rc < 0)
			return rc;
	}
	if (t) {
		fs_disk_unlinked(fs, t); /* replaced: its space goes with its last name */
		(void)fs_node_move(fs, t, NULL, NULL);
	}
	return fs_node_move(fs, n, np, newname);
}

/* fs_pt_settle for the files a rename moves (their ctime moves with them). */
static void settle(struct fs *fs, struct fs_node *p, const char *name, struct fs_node *np,
		   const char *newname, bool before)
{
	struct fs_node *a = fs_node_by_name(fs, p, name), *b = fs_node_by_name(fs, np, newname);

	if (a)
		fs_pt_settle(a, before);
	if (b)
		fs_pt_settle(b, before);
}

void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		  const char *newname, unsigned int flags)
{
	struct fs *fs = fs_of(req);
	struct fs_node *p, *np;
	char *to = NULL;
	int rc;

	pthread_mutex_lock(&fs->lock);
	p = fs_node_get(fs, parent);
	np = fs_node_get(fs, newparent);
	rc = p && np ? fs_name_check(newname) : -ESTALE;
	if (rc == 0)
		rc = fs_hostgit_rename_check(fs, p, name, np, newname, flags);
	if (rc == 0)
		settle(fs, p, name, np, newname, true);
	if (rc == 0)
		rc = do_rename(fs, p, name, np, newname, flags);
	if (p && np)
		settle(fs, np, newname, p, name, false);
	if (rc == 0) {
		struct fs_node *a = fs_node_by_name(fs, np, newname),
			       *b = fs_node_by_name(fs, p, name);

		fs_fsmon_note(fs, np, newname);
		/* A moved directory moves every path under it: tokens before this get "/". */
		if ((a && S_ISDIR(a->type)) || (b && S_ISDIR(b->type)))
			fs_fsmon_reset(fs);
	}
	if (p && np) {
		to = fs_node_path(fs, np, newname);
		/* An exchange leaves both names in place, with each other's file. */
		fs_record(fs, req, (flags & RENAME_EXCHANGE) ? "exchange" : "rename", p, name, to,
			  rc);
	}
	fs_unlock(fs);
	free(to);
	fuse_reply_err(req, -rc);
}
