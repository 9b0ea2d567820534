/*
 * core/lfs_index.c: a new workspace whose base has git LFS files. The view shows such a file
 * with the object's content when the origin's LFS store has it (fs/lfs_view.c), so the
 * workspace's index must give it that size for `git status` to find it clean without reading
 * it, and git in the box needs git-lfs's filters (as `git lfs install --local` writes them)
 * for the times it does read it: to clean it back into the very pointer the base holds, and
 * to make new pointers of what the box commits (their objects land in the workspace's own
 * .git/lfs, never the origin's). Files whose object the origin lacks stay pointers; the
 * caller is told how many.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"

static const char lfs_filter[] = "[filter \"lfs\"]\n"
				 "\tclean = git-lfs clean -- %f\n"
				 "\tsmudge = git-lfs smudge -- %f\n"
				 "\tprocess = git-lfs filter-process\n"
				 "\trequired = true\n";

/* The smallest pointer git-lfs writes: version, oid and a one-digit size. */
#define POINTER_MIN (43 + 76 + 7)

/* e's LFS pointer when it is one that the base tracks with filter=lfs; 1, 0 or -errno. */
static int entry_pointer(git_repository *repo, const git_oid *base, const git_index_entry *e,
			 struct fs_lfs_ptr *ptr)
{
	git_blob *blob = NULL;
	int rc;

	if ((e->mode != GIT_FILEMODE_BLOB && e->mode != GIT_FILEMODE_BLOB_EXECUTABLE) ||
	    e->file_size < POINTER_MIN || e->file_size >= FS_LFS_POINTER_MAX)
		return 0;
	if (git_blob_lookup(&blob, repo, &e->id) < 0)
		return util_err(-EIO, "cannot read %s: %s", e->path, git_error_last()->message);
	rc = fs_lfs_parse(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), ptr) == 0;
	git_blob_free(blob);
	return rc && fs_lfs_tracked(repo, base, e->path) ? 1 : 0;
}

/* Gives the entries with an object its size; counts them and the ones without. */
static int index_sizes(git_repository *repo, const git_oid *base, git_index *idx, int store,
		       int blobs, size_t *nfiles, size_t *nmissing)
{
	size_t n = git_index_entrycount(idx);

	for (size_t i = 0; i < n; i++) {
		git_index_entry *e = (git_index_entry *)git_index_get_byindex(idx, i);
		struct fs_lfs_ptr ptr;
		struct stat st;
		int rc = entry_pointer(repo, base, e, &ptr);

		if (rc <= 0) {
			if (rc < 0)
				return rc;
			continue;
		}
		(*nfiles)++;
		/* The view's own check (fs/lfs_view.c): it shows what this finds. */
		if (fs_lfs_object_check(store, blobs, &ptr, &st) < 0) {
			(*nmissing)++;
			continue;
		}
		/* In place, as gitdir.c fills them: the size is no part of the index's order. */
		e->file_size = (uint32_t)ptr.size;
	}
	return 0;
}

static int config_append(const char *gitdir)
{
	char *path = util_path_join(gitdir, "config"), *text = NULL, *both = NULL;
	size_t len = 0;
	int rc;

	if (!path)
		return -ENOMEM;
	rc = util_read_file(path, &text, &len);
	if (rc == 0) {
		both = util_asprintf("%.*s%s", (int)len, text, lfs_filter);
		rc = both ? util_write_file(path, both, strlen(both), 0644) : -ENOMEM;
	}
	free(path);
	free(text);
	free(both);
	return rc;
}

#define VIEW_MARK "lfs-view"

static int view_mark(const char *root)
{
	static const char text[] = "git LFS files show their objects (core/lfs_index.c)\n";
	char *path = util_path_join(root, VIEW_MARK);
	int rc = path ? util_write_file(path, text, sizeof(text) - 1, 0644) : -ENOMEM;

	free(path);
	return rc;
}

/* Whether a .gitattributes of the base says filter=lfs: else no file can be an LFS file. */
static bool base_uses_lfs(git_repository *repo, git_index *idx)
{
	size_t n = git_index_entrycount(idx);
	bool yes = false;

	for (size_t i = 0; i < n && !yes; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);
		const char *slash = strrchr(e->path, '/');
		git_blob *blob = NULL;

		if (strcmp(slash ? slash + 1 : e->path, ".gitattributes") ||
		    git_blob_lookup(&blob, repo, &e->id) < 0)
			continue;
		yes = memmem(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob),
			     "filter=lfs", 10) != NULL;
		git_blob_free(blob);
	}
	return yes;
}

int core_lfs_prepare(struct core_project *p, const char *root, const git_oid *base, char **note)
{
	git_repository *repo = core_project_repo(p);
	git_commit *commit = NULL;
	git_index *idx = NULL;
	size_t nfiles = 0, nmissing = 0;
	char *gitdir = util_path_join(root, "git");
	char *path = util_path_join(root, "git/index");
	char *blobs_dir = util_path_join(p->state_dir, "blobs");
	int store = -1, blobs = -1, rc;

	*note = NULL;
	if (!gitdir || !path || !blobs_dir || !repo) {
		rc = gitdir && path && blobs_dir ? -EIO : -ENOMEM;
		goto out;
	}
	if (git_commit_lookup(&commit, repo, base) < 0 || git_index_open(&idx, path) < 0) {
		rc = util_err(-EIO, "cannot read index: %s", git_error_last()->message);
		goto out;
	}
	rc = 0;
	if (!base_uses_lfs(repo, idx))
		goto out;
	/* The daemon's blob cache, where the hash of each object is checked once. */
	if (util_mkdir_p(blobs_dir, 0755) < 0 ||
	    (blobs = open(blobs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = util_err(-EIO, "cannot open %s", blobs_dir);
		goto out;
	}
	if (fs_lfs_store_open(repo, &store) < 0)
		store = -1; /* every LFS file is then a pointer */
	rc = index_sizes(repo, base, idx, store, blobs, &nfiles, &nmissing);
	if (rc < 0 || nfiles == 0)
		goto out;
	/* A new file (git renames the lock over it): the shared copy keeps the blob sizes. */
	if (nfiles > nmissing && git_index_write(idx) < 0) {
		rc = util_err(-EIO, "cannot write index: %s", git_error_last()->message);
		goto out;
	}
	if (nfiles > nmissing)
		rc = core_index_not_racy(path, git_commit_committer(commit)->when.time);
	if (rc == 0)
		rc = config_append(gitdir);
	if (rc == 0)
		rc = view_mark(root);
	if (rc == 0 && nmissing > 0 &&
	    !(*note = util_asprintf("%zu of %zu LFS files have no good object in the origin's LFS "
				    "store, so the view shows their pointers: run `git lfs fetch` "
				    "in the origin",
				    nmissing, nfiles)))
		rc = -ENOMEM;
out:
	if (store >= 0)
		close(store);
	if (blobs >= 0)
		close(blobs);
	free(blobs_dir);
	free(gitdir);
	git_index_free(idx);
	git_commit_free(commit);
	free(path);
	return rc;
}

bool core_lfs_view(const struct core_ws *ws)
{
	char *path = util_path_join(ws->root, VIEW_MARK);
	struct stat st;
	bool yes = path && lstat(path, &st) == 0 && S_ISREG(st.st_mode);

	free(path);
	return yes;
}
