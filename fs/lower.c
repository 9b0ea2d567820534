/* fs/lower.c: the lower layer: the base commit's tree through libgit2, and the blob cache. */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static pthread_key_t repo_key;
static pthread_once_t repo_key_once = PTHREAD_ONCE_INIT;

static void repo_key_free(void *r)
{
	git_repository_free(r);
}

static void repo_key_make(void)
{
	(void)pthread_key_create(&repo_key, repo_key_free);
}

int fs_lower_init(struct fs *fs)
{
	git_commit *commit = NULL;
	int rc = -EIO;

	if (git_repository_open_bare(&fs->repo, fs->repo_path) < 0 ||
	    git_oid_fromstr(&fs->base, fs->cfg->base) < 0 ||
	    git_commit_lookup(&commit, fs->repo, &fs->base) < 0) {
		rc = util_err(-EIO, "cannot read base commit %s: %s", fs->cfg->base,
			      git_error_last() ? git_error_last()->message : "?");
		goto out;
	}
	fs->base_time = git_commit_committer(commit)->when.time;
	/* Without --lfs (a workspace made before), or without a store: pointers stay pointers. */
	if (!fs->cfg->lfs || fs_lfs_store_open(fs->repo, &fs->lfs_store) < 0)
		fs->lfs_store = -1;
	fs->root->has_lower = true;
	fs->root->lower_mode = GIT_FILEMODE_TREE;
	git_oid_cpy(&fs->root->lower_oid, git_commit_tree_id(commit));
	rc = fs_lower_subs_init(fs);
out:
	git_commit_free(commit);
	return rc;
}

mode_t fs_lower_type(uint32_t git_mode)
{
	switch (git_mode) {
	case GIT_FILEMODE_TREE:
	case GIT_FILEMODE_COMMIT: /* a submodule: its tree when initialised (lower_sub.c) */
		return S_IFDIR;
	case GIT_FILEMODE_LINK:
		return S_IFLNK;
	default:
		return S_IFREG;
	}
}

int fs_lower_tree(struct fs *fs, struct fs_node *dir, git_tree **out)
{
	*out = NULL;
	if (dir->has_lower && dir->lower_mode == GIT_FILEMODE_COMMIT && !dir->lower_tree) {
		int rc = fs_lower_sub_tree(fs, dir);

		if (rc < 0)
			return rc;
	}
	if (!dir->has_lower ||
	    (dir->lower_mode != GIT_FILEMODE_TREE && dir->lower_mode != GIT_FILEMODE_COMMIT))
		return 0;
	if (!dir->lower_tree && dir->lower_mode == GIT_FILEMODE_COMMIT)
		return 0;
	if (!dir->lower_tree && git_tree_lookup(&dir->lower_tree, fs->repo, &dir->lower_oid) < 0)
		return -EIO;
	*out = dir->lower_tree;
	return 0;
}

int fs_lower_child(struct fs *fs, struct fs_node *dir, const char *name,
		   const git_tree_entry **entry)
{
	git_tree *tree = NULL;
	int rc = fs_lower_tree(fs, dir, &tree);

	*entry = NULL;
	if (rc < 0)
		return rc;
	if (!tree)
		return -ENOENT;
	*entry = git_tree_entry_byname(tree, name);
	return *entry ? 0 : -ENOENT;
}

int fs_lower_size(struct fs *fs, struct fs_node *n, int64_t *size)
{
	git_object_t type;
	git_odb *odb = NULL;
	size_t len = 0;

	if (n->lower_size >= 0) {
		*size = n->lower_size;
		return 0;
	}
	if (git_repository_odb(&odb, fs->repo) < 0)
		return -EIO;
	if (git_odb_read_header(&len, &type, odb, &n->lower_oid) < 0) {
		git_odb_free(odb);
		return -EIO;
	}
	git_odb_free(odb);
	fs_lfs_view_probe(fs, n, &len);
	n->lower_size = (int64_t)len;
	*size = n->lower_size;
	return 0;
}

/* A per-thread repository handle, so blob reads don't hold the namespace lock. */
static git_repository *thread_repo(struct fs *fs)
{
	git_repository *r;

	pthread_once(&repo_key_once, repo_key_make);
	r = pthread_getspecific(repo_key);
	if (!r && git_repository_open_bare(&r, fs->repo_path) == 0) {
		if (fs_lower_subs_attach(fs, r) < 0) {
			git_repository_free(r);
			return NULL;
		}
		pthread_setspecific(repo_key, r);
	}
	return r;
}

static int blob_materialise(struct fs *fs, const git_oid *oid, const char *path)
{
	char dir[3] = {path[0], path[1], '\0'};
	char tmp[GIT_OID_HEXSZ + 48];
	git_repository *repo = thread_repo(fs);
	git_blob *blob = NULL;
	unsigned int rnd = 0;
	int fd = -1;
	int rc;

	if (!repo)
		return -EIO;
	if (git_blob_lookup(&blob, repo, oid) < 0)
		return -EIO;
	if (mkdirat(fs->blobs_fd, dir, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		goto out;
	}
	/* Only a unique name: O_EXCL below refuses a clash; rnd stays 0 if getrandom fails. */
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		rnd = 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%08x", path, (int)gettid(), rnd);
	fd = openat(fs->blobs_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = util_write_all(fd, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	/* Daemons of several workspaces may race here: the rename makes one copy win whole. */
	if (rc == 0 && renameat(fs->blobs_fd, tmp, fs->blobs_fd, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(fs->blobs_fd, tmp, 0);
out:
	git_blob_free(blob);
	return rc;
}

int fs_lower_open_blob(struct fs *fs, const git_oid *oid, int *out)
{
	char hex[GIT_OID_HEXSZ + 1];
	char path[GIT_OID_HEXSZ + 2];
	int fd, rc;

	git_oid_tostr(hex, sizeof(hex), oid);
	snprintf(path, sizeof(path), "%.2s/%s", hex, hex + 2);
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = openat(fs->blobs_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			*out = fd;
			return 0;
		}
		if (errno != ENOENT)
			return -errno;
		rc = blob_materialise(fs, oid, path);
		if (rc < 0)
			return rc;
	}
	return -EIO;
}

int fs_lower_readlink(struct fs *fs, const git_oid *oid, char **out)
{
	git_blob *blob = NULL;
	size_t len;

	*out = NULL;
	if (git_blob_lookup(&blob, fs->repo, oid) < 0)
		return -EIO;
	len = (size_t)git_blob_rawsize(blob);
	*out = malloc(len + 1);
	if (*out) {
		memcpy(*out, git_blob_rawcontent(blob), len);
		(*out)[len] = '\0';
	}
	git_blob_free(blob);
	return *out ? 0 : -ENOMEM;
}
