/*
 * fs/ops_readdir.c: directory reading: opendir, readdir(plus), releasedir, fsyncdir.
 *
 * Directories need no handle: the listing lives on the node (struct fs_listing) and is rebuilt
 * only when the directory's entries changed. Where the kernel can, it opens directories
 * without asking (FUSE_CAP_NO_OPENDIR_SUPPORT: no OPENDIR or RELEASEDIR round trip per
 * opendir()) and keeps the listing in its cache until the directory changes.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COOKIE_FIRST 3 /* 1 and 2 are the offsets after "." and ".." */

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);

	(void)ino;
	if (fs->no_opendir) {
		/* The kernel takes this as "open directories without asking from now on". */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fi->fh = 0;
	/* Listings change only through the kernel, which drops its cache when they do. */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static int cmp_name(const void *a, const void *b)
{
	const struct fs_lentry *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static int cmp_cookie(const void *a, const void *b)
{
	const struct fs_lentry *x = a, *y = b;

	return x->cookie < y->cookie ? -1 : x->cookie > y->cookie;
}

/* The cookie the old listing gave name, or 0. byname: its entries sorted by name. */
static uint64_t old_cookie(struct fs_lentry **byname, size_t n, const char *name)
{
	struct fs_lentry key = {.name = (char *)name}, *kp = &key, **hit;

	hit = n ? bsearch(&kp, byname, n, sizeof(*byname), cmp_name) : NULL;
	return hit ? (*hit)->cookie : 0;
}

/*
 * Makes dir->listing current for a pass starting at offset off (fs->lock held). Names
 * already listed keep their cookies. A pass already under way (off > 0) goes on with the
 * listing it started on even when the directory changed since, as it would with a handle of
 * its own: entries removed meanwhile may still show (readdirplus skips them), new ones may
 * not, unchanged ones come exactly once. Rebuilding for every chunk instead would make
 * `rm -rf` of a large directory quadratic.
 */
static int listing_refresh(struct fs *fs, struct fs_node *dir, off_t off)
{
	struct fs_listing *old = dir->listing, *l = NULL;
	struct fs_lentry **byname = NULL;
	struct fs_dirent *ents = NULL;
	size_t n = 0;
	int rc;

	if (old && (old->gen == dir->gen || off > 0))
		return 0;
	rc = fs_dir_list(fs, dir, &ents, &n);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	l = calloc(1, sizeof(*l));
	if (!l || (n && !(l->e = calloc(n, sizeof(*l->e)))))
		goto out;
	if (old && old->n) {
		byname = malloc(old->n * sizeof(*byname));
		if (!byname)
			goto out;
		for (size_t i = 0; i < old->n; i++)
			byname[i] = &old->e[i];
		qsort(byname, old->n, sizeof(*byname), cmp_name);
	}
	l->next_cookie = old ? old->next_cookie : COOKIE_FIRST;
	for (size_t i = 0; i < n; i++) {
		uint64_t c = old ? old_cookie(byname, old->n, ents[i].name) : 0;

		l->e[i] = (struct fs_lentry){.name = ents[i].name, .type = ents[i].type};
		l->e[i].cookie = c ? c : l->next_cookie++;
		ents[i].name = NULL; /* moved */
	}
	l->n = n;
	if (n)
		qsort(l->e, n, sizeof(*l->e), cmp_cookie);
	l->gen = dir->gen;
	fs_listing_free(old);
	dir->listing = l;
	l = NULL;
	rc = 0;
out:
	free(byname);
	fs_listing_free(l);
	fs_dirents_free(ents, n);
	return rc;
}

/* Index of the first entry whose cookie is above off. */
static size_t first_after(const struct fs_listing *l, off_t off)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->e[mid].cookie <= (uint64_t)off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Adds one entry to buf; 0 when it does not fit. */
static size_t add(fuse_req_t req, char *buf, size_t room, const char *name,
		  struct fuse_entry_param *e, off_t next, bool plus)
{
	size_t len = plus ? fuse_add_direntry_plus(req, buf, room, name, e, next)
			  : fuse_add_direntry(req, buf, room, name, &e->attr, next);

	return len > room ? 0 : len;
}

/* Fills buf with the entries after offset off (fs->lock held). */
static size_t fill(struct fs *fs, fuse_req_t req, struct fs_node *dir, char *buf, size_t size,
		   off_t off, bool plus)
{
	const struct fs_listing *l = dir->listing;
	size_t pos = 0, len;

	for (off_t i = off; i < 2; i++) {
		struct fuse_entry_param e = {0};

		e.attr.st_mode = S_IFDIR;
		e.attr.st_ino = i == 0 ? dir->ino : FUSE_ROOT_ID;
		len = add(req, buf + pos, size - pos, i == 0 ? "." : "..", &e, i + 1, plus);
		if (!len)
			return pos;
		pos += len;
	}
	for (size_t i = first_after(l, off); i < l->n; i++) {
		struct fuse_entry_param e = {0};
		struct fs_node *n = NULL;

		e.attr.st_mode = l->e[i].type;
		if (plus) {
			if (fs_lookup_child(fs, dir, l->e[i].name, &n) < 0)
				continue; /* gone since the listing was made */
			if (fs_entry_fill(fs, n, &e) < 0) {
				fs_node_maybe_free(fs, n);
				continue;
			}
			fs_hostgit_entry(fs, dir, l->e[i].name, &e);
		} else if (fs_lookup_child(fs, dir, l->e[i].name, &n) == 0) {
			e.attr.st_ino = n->ino;
			fs_node_maybe_free(fs, n);
		}
		len =
		    add(req, buf + pos, size - pos, l->e[i].name, &e, (off_t)l->e[i].cookie, plus);
		if (!len) {
			if (n && plus) {
				n->nlookup--; /* not handed to the kernel after all */
				fs_node_maybe_free(fs, n);
			}
			break;
		}
		pos += len;
	}
	return pos;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct fs *fs = fs_of(req);
	struct fs_node *dir;
	char *buf = malloc(size);
	size_t len = 0;
	int rc;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	dir = fs_node_get(fs, ino);
	if (!dir)
		rc = -ESTALE;
	else if (!S_ISDIR(dir->type))
		rc = -ENOTDIR;
	else
		rc = listing_refresh(fs, dir, off);
	if (rc == 0) {
		dir->refs++; /* a child dropped in fill() must not take dir with it */
		len = fill(fs, req, dir, buf, size, off, plus);
		dir->refs--;
	}
	fs_unlock(fs);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, false);
}

void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, true);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;
	int fd = -1, rc = 0;

	(void)datasync;
	(void)fi;
	/*
	 * fsync of the view's root also makes the audit current: the writes still being
	 * coalesced are recorded and committed before the reply. (`shell` and `audit` ask with
	 * ARB_FS_IOC_AUDIT_SYNC instead, fs/ops_ioctl.c, which skips the fsync below; they fsync
	 * only a daemon older than that request.) Other directories are not worth the wait
	 * (tools fsync them after every rename).
	 */
	if (ino == FUSE_ROOT_ID && fs_record_sync(fs) < 0)
		rc = EIO;
	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	if (!n)
		rc = ESTALE;
	else if (n->fd >= 0)
		fd = fs_upper_reopen(n->fd, O_RDONLY | O_DIRECTORY);
	fs_unlock(fs);
	if (fd >= 0) {
		if (fsync(fd) < 0 && !rc)
			rc = errno;
		close(fd);
	}
	fuse_reply_err(req, rc);
}
