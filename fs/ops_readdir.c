/* fs/ops_readdir.c: directory handles: opendir, readdir(plus), releasedir, fsyncdir. */
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

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_handle *h = NULL;
	struct fs_node *n;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	n = fs_node_get(fs, ino);
	if (!n)
		rc = -ESTALE;
	else if (!S_ISDIR(n->type))
		rc = -ENOTDIR;
	else if (!(h = calloc(1, sizeof(*h))))
		rc = -ENOMEM;
	if (rc == 0) {
		h->node = n;
		h->fd = -1;
		n->refs++;
	}
	fs_unlock(fs);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uintptr_t)h;
	/* Listings change only through the kernel, which drops its cache when they do. */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Fills buf from offset off. Offsets: 1 = ".", 2 = "..", 3+i = entry i. */
static size_t fill(struct fs *fs, fuse_req_t req, struct fs_handle *h, char *buf, size_t size,
		   off_t off, bool plus)
{
	size_t pos = 0;

	for (off_t i = off; i < (off_t)h->nents + 2; i++) {
		struct fuse_entry_param e = {0};
		const char *name;
		struct fs_node *n = NULL;
		size_t len;

		if (i < 2) {
			name = i == 0 ? "." : "..";
			e.attr.st_mode = S_IFDIR;
			e.attr.st_ino = i == 0 ? h->node->ino : FUSE_ROOT_ID;
		} else {
			name = h->ents[i - 2].name;
			e.attr.st_mode = h->ents[i - 2].type;
			if (plus) {
				if (fs_lookup_child(fs, h->node, name, &n) < 0)
					continue; /* gone since the snapshot */
				if (fs_entry_fill(fs, n, &e) < 0) {
					fs_node_maybe_free(fs, n);
					continue;
				}
			} else if (fs_lookup_child(fs, h->node, name, &n) == 0) {
				e.attr.st_ino = n->ino;
				fs_node_maybe_free(fs, n);
			}
		}
		if (plus)
			len = fuse_add_direntry_plus(req, buf + pos, size - pos, name, &e, i + 1);
		else
			len = fuse_add_direntry(req, buf + pos, size - pos, name, &e.attr, i + 1);
		if (len > size - pos) {
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

static void readdir_common(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
			   bool plus)
{
	struct fs *fs = fs_of(req);
	struct fs_handle *h = handle_of(fi);
	char *buf = malloc(size);
	size_t len = 0;
	int rc = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->lock);
	if (off == 0 || !h->ents) {
		/* A snapshot per pass, so offsets stay meaningful while it is read. */
		fs_dirents_free(h->ents, h->nents);
		h->ents = NULL;
		h->nents = 0;
		rc = fs_dir_list(fs, h->node, &h->ents, &h->nents);
	}
	if (rc == 0)
		len = fill(fs, req, h, buf, size, off, plus);
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
	readdir_common(req, size, off, fi, false);
}

void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	readdir_common(req, size, off, fi, true);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_handle *h = handle_of(fi);

	pthread_mutex_lock(&fs->lock);
	fs_dirents_free(h->ents, h->nents);
	h->node->refs--;
	fs_node_maybe_free(fs, h->node);
	fs_unlock(fs);
	free(h);
	fuse_reply_err(req, 0);
}

void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	struct fs_handle *h = handle_of(fi);
	int fd = -1, rc = 0;

	pthread_mutex_lock(&fs->lock);
	if (h->node->fd >= 0)
		fd = fs_upper_reopen(h->node->fd, O_RDONLY | O_DIRECTORY);
	fs_unlock(fs);
	if (fd >= 0) {
		rc = fsync(fd) < 0 ? errno : 0;
		close(fd);
	}
	fuse_reply_err(req, rc);
}
