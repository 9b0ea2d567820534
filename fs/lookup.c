/* fs/lookup.c: resolving names in the merged view, stat data, and merged directory listings. */
#include "fs/fs_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

int fs_name_check(const char *name)
{
	size_t len = strlen(name);

	if (len > 255)
		return -ENAMETOOLONG;
	if (len == 0 || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
		return -EINVAL;
	return 0;
}

/* A directory found in the upper layer: where its lower part comes from. */
static void dir_lower_from_upper(struct fs *fs, struct fs_node *parent, struct fs_node *n)
{
	char hex[GIT_OID_HEXSZ + 1];
	const git_tree_entry *e = NULL;
	enum fs_layer_lower from = fs_layer_dir_lower(n->fd, hex);

	if (from == FS_LAYER_LOWER_NONE) {
		n->has_lower = false;
		return;
	}
	if (from == FS_LAYER_LOWER_TREE) {
		if (git_oid_fromstr(&n->lower_oid, hex) == 0) {
			n->has_lower = true;
			n->lower_mode = GIT_FILEMODE_TREE;
			n->lower_from_xattr = true;
			return;
		}
	}
	if (parent && fs_lower_child(fs, parent, n->name, &e) == 0 &&
	    (git_tree_entry_filemode(e) == GIT_FILEMODE_TREE ||
	     git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT)) {
		n->has_lower = true;
		n->lower_mode = git_tree_entry_filemode(e);
		git_oid_cpy(&n->lower_oid, git_tree_entry_id(e));
	}
}

int fs_lookup_upper(struct fs *fs, struct fs_node *parent, const char *name, struct fs_node **out)
{
	struct fs_node *n;
	struct stat st;
	int fd;

	if (fstatat(parent->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 1 : -errno;
	if (fs_upper_is_whiteout(&st))
		return -ENOENT;
	n = S_ISDIR(st.st_mode) ? NULL : fs_node_by_upper(fs, st.st_dev, st.st_ino);
	if (n) {
		/* Another name of a hard-linked file: same node, now known by this name too. */
		if (n->unlinked && fs_node_move(fs, n, parent, name) < 0)
			return -ENOMEM;
		*out = n;
		return 0;
	}
	fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = fs_node_new(fs, parent, name, st.st_mode & S_IFMT);
	if (!n) {
		close(fd);
		return -ENOMEM;
	}
	fs_node_set_upper(fs, n, fd, &st);
	if (S_ISDIR(st.st_mode))
		dir_lower_from_upper(fs, parent, n);
	*out = n;
	return 0;
}

int fs_lookup_child(struct fs *fs, struct fs_node *parent, const char *name, struct fs_node **out)
{
	const git_tree_entry *e = NULL;
	struct fs_node *n;
	int rc;

	*out = NULL;
	if (!S_ISDIR(parent->type))
		return -ENOTDIR;
	rc = fs_name_check(name);
	if (rc < 0)
		return rc;
	if (parent == fs->root && !strcmp(name, ".git")) {
		*out = fs->gitnode;
		return 0;
	}
	n = fs_node_by_name(fs, parent, name);
	if (n) {
		*out = n;
		return 0;
	}
	if (!strcmp(name, ".git") && (rc = fs_lower_sub_gitfile(fs, parent, out)) <= 0)
		return rc; /* a submodule's root: the daemon's .git file, whatever the layer has */
	if (parent->fd >= 0) {
		rc = fs_lookup_upper(fs, parent, name, out);
		if (rc <= 0)
			return rc;
	}
	rc = fs_lower_child(fs, parent, name, &e);
	if (rc < 0)
		return rc;
	n = fs_node_new(fs, parent, name, fs_lower_type(git_tree_entry_filemode(e)));
	if (!n)
		return -ENOMEM;
	n->has_lower = true;
	n->lower_mode = git_tree_entry_filemode(e);
	git_oid_cpy(&n->lower_oid, git_tree_entry_id(e));
	*out = n;
	return 0;
}

static int stat_lower(struct fs *fs, struct fs_node *n, struct stat *st)
{
	struct fs_lower_stat ls;
	int64_t size = 4096;
	int rc;

	memset(st, 0, sizeof(*st));
	switch (n->lower_mode) {
	case GIT_FILEMODE_TREE:
	case GIT_FILEMODE_COMMIT:
		st->st_mode = S_IFDIR | 0755;
		break;
	case GIT_FILEMODE_LINK:
		st->st_mode = S_IFLNK | 0777;
		break;
	case GIT_FILEMODE_BLOB_EXECUTABLE:
		st->st_mode = S_IFREG | 0755;
		break;
	default:
		st->st_mode = S_IFREG | 0644;
	}
	if (!S_ISDIR(st->st_mode)) {
		rc = fs_lower_size(fs, n, &size);
		if (rc < 0)
			return rc;
	}
	fs_lower_stat_of(fs->base_time, size, &ls);
	st->st_size = ls.size;
	st->st_blocks = (size + 511) / 512;
	st->st_blksize = 4096;
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim.tv_sec = st->st_mtim.tv_sec = ls.mtime_sec;
	st->st_ctim.tv_sec = ls.ctime_sec;
	return 0;
}

int fs_node_stat(struct fs *fs, struct fs_node *n, struct stat *st)
{
	if (n->synth_mode) {
		int rc = fs_fsmon_stat(fs, n, st);

		st->st_ino = n->ino;
		return rc;
	}
	if (n->fd >= 0) {
		if (fstatat(n->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	} else {
		int rc = stat_lower(fs, n, st);

		if (rc < 0)
			return rc;
	}
	st->st_ino = n->ino;
	/* Merged directories cannot count their subdirectories cheaply; 1 means "unknown". */
	if (S_ISDIR(st->st_mode))
		st->st_nlink = 1;
	return 0;
}

int fs_entry_fill(struct fs *fs, struct fs_node *n, struct fuse_entry_param *e)
{
	int rc;

	memset(e, 0, sizeof(*e));
	rc = fs_node_stat(fs, n, &e->attr);
	if (rc < 0)
		return rc;
	e->ino = n->ino;
	e->attr_timeout = FS_TIMEOUT;
	e->entry_timeout = FS_TIMEOUT;
	fs_hostgit_entry(fs, n->parent, n->name, e); /* callers with another name add theirs */
	n->nlookup++;
	return 0;
}

void fs_dirents_free(struct fs_dirent *ents, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
}

struct dirlist {
	struct fs_dirent *ents;
	size_t n, cap;
};

static int list_add(struct dirlist *l, const char *name, mode_t type)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct fs_dirent *ne = realloc(l->ents, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		l->ents = ne;
		l->cap = cap;
	}
	l->ents[l->n].name = strdup(name);
	if (!l->ents[l->n].name)
		return -ENOMEM;
	l->ents[l->n++].type = type;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct fs_dirent *)a)->name, ((const struct fs_dirent *)b)->name);
}

/* Upper entries (whiteouts included, with type 0), sorted by name. */
static int list_upper(struct fs *fs, struct fs_node *dir, struct dirlist *l)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	fd = openat(dir->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		mode_t type = DTTOIF(de->d_type);

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, ".git") && (dir == fs->root || fs_lower_sub_root(fs, dir)))
			continue;
		if (de->d_type == DT_CHR || de->d_type == DT_UNKNOWN) {
			if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = fs_upper_is_whiteout(&st) ? 0 : (st.st_mode & S_IFMT);
		}
		rc = list_add(l, de->d_name, type);
	}
	closedir(d);
	if (rc == 0 && l->n > 1)
		qsort(l->ents, l->n, sizeof(*l->ents), cmp_name);
	return rc;
}

int fs_dir_list(struct fs *fs, struct fs_node *dir, struct fs_dirent **out, size_t *count)
{
	struct dirlist l = {0};
	git_tree *tree = NULL;
	size_t nupper;
	int rc = 0;

	*out = NULL;
	*count = 0;
	if (dir->fd >= 0)
		rc = list_upper(fs, dir, &l);
	nupper = l.n;
	if (rc == 0)
		rc = fs_lower_tree(fs, dir, &tree);
	for (size_t i = 0; rc == 0 && tree && i < git_tree_entrycount(tree); i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		struct fs_dirent key = {.name = (char *)git_tree_entry_name(e)};

		if (nupper && bsearch(&key, l.ents, nupper, sizeof(*l.ents), cmp_name))
			continue; /* shadowed by an upper entry or whited out */
		rc = list_add(&l, key.name, fs_lower_type(git_tree_entry_filemode(e)));
	}
	if (rc == 0 && dir == fs->root)
		rc = list_add(&l, ".git", S_IFDIR);
	else if (rc == 0 && fs_lower_sub_root(fs, dir))
		rc = list_add(&l, ".git", S_IFREG);
	if (rc < 0) {
		fs_dirents_free(l.ents, l.n);
		return rc;
	}
	/* Whiteouts stay out of the listing. */
	size_t w = 0;

	for (size_t i = 0; i < l.n; i++) {
		if (l.ents[i].type == 0) {
			free(l.ents[i].name);
			continue;
		}
		l.ents[w++] = l.ents[i];
	}
	*out = l.ents;
	*count = w;
	return 0;
}
