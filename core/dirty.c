/*
 * core/dirty.c: `workspace create --dirty`: the origin's uncommitted working-tree state,
 * written into a new workspace's upper layer before it is first mounted.
 *
 * What differs from the base tree is found with git_status_list (the origin's index serves as
 * the stat cache, exactly as for `git status`; nothing in the origin is written). Each
 * reported path then gets the state it has in the origin's working tree: present files and
 * symlinks are copied into the layer, absent ones become whiteouts (fs/layer.c) at the
 * topmost directory that is gone as a whole. Staged renames need
 * nothing special: the old path is absent, the new one present. Ignored files stay behind.
 * The copying costs what the dirty files weigh; the scan costs what `git status` costs.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"

struct dirty {
	git_tree *base;
	int src;   /* the origin's working tree */
	int layer; /* the staging workspace's layer/ */
	int64_t base_time;
};

/* Opens (creating as needed) the layer directory holding `rel`'s last component. */
static int layer_parent(struct dirty *d, const char *rel, int *out)
{
	char buf[PATH_MAX];
	char *p = buf, *slash;
	int fd, nfd;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", rel) >= sizeof(buf))
		return -ENAMETOOLONG;
	fd = fcntl(d->layer, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		*slash = '\0';
		if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
			nfd = -errno;
			goto fail;
		}
		nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			nfd = -errno;
			goto fail;
		}
		close(fd);
		fd = nfd;
		p = slash + 1;
	}
	*out = fd;
	return 0;
fail:
	close(fd);
	return nfd;
}

static const char *base_name(const char *rel)
{
	const char *s = strrchr(rel, '/');

	return s ? s + 1 : rel;
}

static int copy_file(struct dirty *d, const char *rel, const struct stat *st)
{
	struct timespec times[2] = {st->st_atim, st->st_mtim};
	const char *name = base_name(rel);
	int dir = -1, src = -1, dst = -1;
	int rc;

	rc = layer_parent(d, rel, &dir);
	if (rc < 0)
		return rc;
	src = openat(d->src, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0) {
		rc = -errno;
		goto out;
	}
	(void)unlinkat(dir, name, 0); /* a path reported twice */
	dst = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     st->st_mode & 0777);
	if (dst < 0) {
		rc = -errno;
		goto out;
	}
	rc = util_copy_fd(dst, src);
	if (rc == 0 && fchmod(dst, st->st_mode & 07777) < 0)
		rc = -errno;
	if (rc == 0 && futimens(dst, times) < 0)
		rc = -errno;
out:
	if (rc < 0)
		util_err(rc, "--dirty: cannot copy %s: %s", rel, strerror(-rc));
	if (dst >= 0)
		close(dst);
	if (src >= 0)
		close(src);
	close(dir);
	return rc;
}

static int copy_symlink(struct dirty *d, const char *rel)
{
	char target[PATH_MAX];
	int dir = -1, rc;
	ssize_t len = readlinkat(d->src, rel, target, sizeof(target) - 1);

	if (len < 0)
		return util_err(-errno, "--dirty: cannot read link %s: %s", rel, strerror(errno));
	target[len] = '\0';
	rc = layer_parent(d, rel, &dir);
	if (rc < 0)
		return rc;
	(void)unlinkat(dir, base_name(rel), 0);
	if (symlinkat(target, dir, base_name(rel)) < 0)
		rc = util_err(-errno, "--dirty: cannot copy link %s: %s", rel, strerror(errno));
	close(dir);
	return rc;
}

static int make_dir(struct dirty *d, const char *rel)
{
	char *child = util_asprintf("%s/.", rel);
	int dir = -1, rc;

	if (!child)
		return -ENOMEM;
	rc = layer_parent(d, child, &dir); /* creates rel itself */
	free(child);
	if (rc == 0)
		close(dir);
	return rc;
}

static bool in_base(struct dirty *d, const char *rel)
{
	git_tree_entry *e = NULL;

	if (git_tree_entry_bypath(&e, d->base, rel) < 0)
		return false;
	git_tree_entry_free(e);
	return true;
}

/*
 * rel is in the base but gone from the origin: a whiteout at its topmost missing ancestor
 * (a deleted directory is one whiteout). Nothing when an ancestor is now a file or symlink:
 * that entry is copied in its own right and hides the base's directory.
 */
static int whiteout(struct dirty *d, const char *rel)
{
	char buf[PATH_MAX];
	struct stat st;
	char *slash = buf;
	int dir = -1, rc;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", rel) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (;;) {
		slash = strchr(slash, '/');
		if (slash)
			*slash = '\0';
		if (fstatat(d->src, buf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && errno != ENOTDIR)
				return util_err(-errno, "--dirty: cannot stat %s: %s", buf,
						strerror(errno));
			break; /* buf is the topmost missing path */
		}
		if (!slash || !S_ISDIR(st.st_mode))
			return 0;
		*slash++ = '/';
	}
	rc = layer_parent(d, buf, &dir);
	if (rc < 0)
		return rc;
	if (fstatat(dir, base_name(buf), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    fs_layer_is_whiteout(&st)) {
		rc = 0; /* an earlier path of that directory made it */
	} else if ((rc = fs_layer_whiteout_at(dir, base_name(buf))) < 0) {
		rc = util_err(rc, "--dirty: cannot record the deletion of %s: %s", buf,
			      strerror(-rc));
	}
	close(dir);
	return rc;
}

/* Gives `rel` in the layer the state it has in the origin's working tree. */
static int carry(struct dirty *d, const char *rel)
{
	struct stat st;

	if (!rel || !*rel || !strcmp(rel, ".arborinth") || !strncmp(rel, ".arborinth/", 11))
		return 0;
	if (fstatat(d->src, rel, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return util_err(-errno, "--dirty: cannot stat %s: %s", rel,
					strerror(errno));
		return in_base(d, rel) ? whiteout(d, rel) : 0;
	}
	if (S_ISREG(st.st_mode))
		return copy_file(d, rel, &st);
	if (S_ISLNK(st.st_mode))
		return copy_symlink(d, rel);
	if (S_ISDIR(st.st_mode))
		return make_dir(d, rel); /* a base file that became a directory */
	return 0;			 /* fifos, sockets: git does not track them */
}

static int carry_delta(struct dirty *d, const git_diff_delta *delta)
{
	int rc;

	if (!delta)
		return 0;
	rc = carry(d, delta->old_file.path);
	if (rc == 0 && delta->new_file.path &&
	    (!delta->old_file.path || strcmp(delta->old_file.path, delta->new_file.path)))
		rc = carry(d, delta->new_file.path);
	return rc;
}

int core_dirty_copy(struct core_project *p, const git_oid *base, const char *layer)
{
	git_status_options opts = GIT_STATUS_OPTIONS_INIT;
	struct dirty d = {.src = -1, .layer = -1};
	git_status_list *list = NULL;
	git_commit *commit = NULL;
	git_repository *repo = core_project_repo(p);
	int rc = -EIO;

	if (!repo)
		return -EIO;
	if (git_commit_lookup(&commit, repo, base) < 0 || git_commit_tree(&d.base, commit) < 0) {
		rc = util_err(-EIO, "--dirty: cannot read the base tree: %s",
			      git_error_last()->message);
		goto out;
	}
	d.src = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d.layer = open(layer, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d.src < 0 || d.layer < 0) {
		rc = util_err(-errno, "--dirty: cannot open %s: %s", d.src < 0 ? p->root : layer,
			      strerror(errno));
		goto out;
	}
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
	opts.baseline = d.base; /* differences from the base, not from the origin's HEAD */
	if (git_status_list_new(&list, repo, &opts) < 0) {
		rc = util_err(-EIO, "--dirty: cannot read the origin's status: %s",
			      git_error_last()->message);
		goto out;
	}
	rc = 0;
	for (size_t i = 0; rc == 0 && i < git_status_list_entrycount(list); i++) {
		const git_status_entry *e = git_status_byindex(list, i);

		rc = carry_delta(&d, e->head_to_index);
		if (rc == 0)
			rc = carry_delta(&d, e->index_to_workdir);
	}
out:
	git_status_list_free(list);
	git_tree_free(d.base);
	git_commit_free(commit);
	if (d.src >= 0)
		close(d.src);
	if (d.layer >= 0)
		close(d.layer);
	return rc;
}
