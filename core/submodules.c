/*
 * core/submodules.c: a workspace's submodules. The view shows each submodule the origin
 * initialised at its gitlink (fs/lower_sub.c) with a `.git` file naming its gitdir inside the
 * workspace's: <ws gitdir>/modules/NAME (nested: modules/NAME/modules/NAME2), made here at
 * create like the workspace gitdir itself (core/gitdir.c): HEAD detached at the commit the
 * superproject records, an index whose stat data matches what the view reports (so `git
 * status` is clean without reading content), objects through an alternate to the origin's
 * store of the submodule, and core.worktree relative, as git writes it. In a box that store's
 * path shows only what the recorded commit reaches (core_objects_view_sub), as the origin's
 * own store is shown there (jail/box_defaults.c).
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

static const char sub_config[] = "[core]\n"
				 "\trepositoryformatversion = 0\n"
				 "\tfilemode = true\n"
				 "\tbare = false\n"
				 "\tlogallrefupdates = true\n"
				 "\tworktree = %s%s\n"
				 "\tcheckStat = minimal\n"
				 "\ttrustctime = false\n";

int core_submodules(struct core_project *p, const char *base_hex, struct fs_submodule **out,
		    size_t *n)
{
	core_git_ready();
	return fs_submodules_find(p->commondir, base_hex, out, n);
}

/* "../" n times. Caller frees. */
static char *ups(size_t n)
{
	char *s = malloc(3 * n + 1);

	for (size_t i = 0; s && i < n; i++)
		memcpy(s + 3 * i, "../", 3);
	if (s)
		s[3 * n] = '\0';
	return s;
}

static int put(const char *dir, const char *name, const char *text)
{
	char *path = text ? util_path_join(dir, name) : NULL;
	int rc = path ? util_write_file(path, text, strlen(text), 0644) : -ENOMEM;

	free(path);
	return rc;
}

/*
 * An index depends on the submodule's commit and the base's time only: workspaces share a
 * host-side copy in index-cache/modules/<commit>-<time> (copied, not linked: the daemon
 * unshares only the workspace's own index before a write). Pruned with the objects views.
 */
static char *index_cached(struct core_project *p, const struct fs_submodule *s, int64_t base_time)
{
	return util_asprintf("%s/index-cache/modules/%s-%lld", p->state_dir, s->commit,
			     (long long)base_time);
}

/*
 * The cached index from into to, a new file of the staging gitdir (no fsync: create's
 * rename publishes the workspace). 0, or -errno.
 */
static int copy_cached(const char *from, const char *to)
{
	int src = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), dst = -1, rc;

	if (src < 0)
		return -errno;
	dst = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	rc = dst < 0 ? -errno : util_copy_fd(dst, src);
	if (dst >= 0 && close(dst) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0 && dst >= 0)
		unlink(to);
	close(src);
	return rc;
}

/* from into to, atomically (a temporary file renamed over): 0, or -errno. */
static int copy_whole(const char *from, const char *to)
{
	char *data = NULL;
	size_t len = 0;
	int rc = util_read_file(from, &data, &len);

	if (rc == 0)
		rc = util_write_file(to, data, len, 0644);
	free(data);
	return rc;
}

/* The index of s's tree at gd/index, stat data as the view (based at base_time) reports. */
static int sub_index(struct core_project *p, const char *store, const char *gd,
		     const struct fs_submodule *s, int64_t base_time)
{
	char *path = util_path_join(gd, "index");
	char *cached = index_cached(p, s, base_time);
	git_repository *repo = NULL;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_index *idx = NULL;
	git_odb *odb = NULL;
	git_oid id;
	int rc = -EIO;

	if (!path || !cached) {
		rc = -ENOMEM;
		goto out;
	}
	if (copy_cached(cached, path) == 0) {
		rc = core_index_not_racy(path, base_time);
		goto out;
	}
	if (git_oid_fromstr(&id, s->commit) < 0 || git_repository_open_bare(&repo, store) < 0 ||
	    git_commit_lookup(&commit, repo, &id) < 0 || git_commit_tree(&tree, commit) < 0 ||
	    git_repository_odb(&odb, repo) < 0 || git_index_open(&idx, path) < 0 ||
	    git_index_read_tree(idx, tree) < 0) {
		rc = util_err(-EIO, "submodule %s: cannot build its index: %s", s->path,
			      git_error_last() ? git_error_last()->message : "?");
		goto out;
	}
	rc = core_index_fill_stat(idx, odb, base_time);
	if (rc == 0 && git_index_write(idx) < 0)
		rc = util_err(-EIO, "submodule %s: cannot write its index: %s", s->path,
			      git_error_last()->message);
	if (rc == 0)
		rc = core_index_not_racy(path, base_time);
	/* Published for the next workspace; a failure here only costs that reuse. */
	if (rc == 0) {
		char *dir = util_asprintf("%s/index-cache/modules", p->state_dir);

		if (dir && util_mkdir_p(dir, 0755) == 0)
			(void)copy_whole(path, cached);
		free(dir);
	}
out:
	git_index_free(idx);
	git_odb_free(odb);
	git_tree_free(tree);
	git_commit_free(commit);
	git_repository_free(repo);
	free(path);
	free(cached);
	return rc;
}

/* One submodule's gitdir in the workspace gitdir wsgit. */
static int sub_write(struct core_project *p, const char *wsgit, const struct fs_submodule *s,
		     int64_t base_time)
{
	static const char *const dirs[] = {"objects/info", "objects/pack", "refs/heads",
					   "refs/tags", "info"};
	char *gd = util_path_join(wsgit, s->gitdir);
	char *store = util_path_join(p->commondir, s->gitdir);
	char *head = util_asprintf("%s\n", s->commit);
	char *alt = store ? util_asprintf("%s/objects\n", store) : NULL;
	char *config = NULL, *up = NULL;
	size_t depth = 1; /* ".git" */
	int rc = gd && store && head && alt ? 0 : -ENOMEM;

	/* core.worktree from gd: up over ".git/<gitdir>", down to the path. */
	for (const char *c = s->gitdir; c && *c; c++)
		depth += *c == '/';
	depth++;
	if (rc == 0 && (!(up = ups(depth)) || !(config = util_asprintf(sub_config, up, s->path))))
		rc = -ENOMEM;
	for (size_t i = 0; i < ARB_ARRAY_LEN(dirs) && rc == 0; i++) {
		char *d = util_path_join(gd, dirs[i]);

		rc = d ? util_mkdir_p(d, 0755) : -ENOMEM;
		free(d);
	}
	if (rc == 0)
		rc = put(gd, "HEAD", head);
	if (rc == 0)
		rc = put(gd, "config", config);
	if (rc == 0)
		rc = put(gd, "objects/info/alternates", alt);
	if (rc == 0)
		rc = put(gd, "description", "arborinth workspace submodule\n");
	if (rc == 0)
		rc = sub_index(p, store, gd, s, base_time);
	if (rc == -ENOMEM)
		rc = util_err(rc, "out of memory");
	else if (rc < 0 && rc != -EIO)
		rc = util_err(rc, "submodule %s: cannot write %s: %s", s->path, gd ? gd : "",
			      strerror(-rc));
	free(gd);
	free(store);
	free(head);
	free(alt);
	free(config);
	free(up);
	return rc;
}

/*
 * `submodule.NAME.active = true` in the config of the repository holding s (the workspace's,
 * or its parent submodule's gitdir, written before it): git counts a submodule as initialised
 * (`git submodule status` without '-') when active. No url: the box fetches nothing.
 */
static int mark_active(const char *wsgit, const struct fs_submodule *s)
{
	size_t plen = strlen(s->gitdir) - strlen("modules/") - strlen(s->name);
	char *cfg = util_asprintf("%s/%.*sconfig", wsgit, (int)plen, s->gitdir);
	char *text = malloc(2 * strlen(s->name) + 40), *o = text;
	int fd = -1, rc = cfg && text ? 0 : -ENOMEM;

	if (rc == 0) {
		o += snprintf(o, 20, "[submodule \"");
		for (const char *c = s->name; *c; c++) {
			if (*c == '"' || *c == '\\')
				*o++ = '\\';
			*o++ = *c;
		}
		snprintf(o, 20, "\"]\n\tactive = true\n");
		fd = open(cfg, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? util_err(-errno, "cannot write %s: %s", cfg, strerror(errno))
			    : util_write_all(fd, text, strlen(text));
	}
	if (fd >= 0)
		close(fd);
	free(cfg);
	free(text);
	return rc;
}

int core_submodules_write(struct core_project *p, const char *gitdir, const git_oid *base)
{
	char hex[GIT_OID_HEXSZ + 1];
	struct fs_submodule *v = NULL;
	git_commit *commit = NULL;
	size_t n = 0;
	int rc;

	git_oid_tostr(hex, sizeof(hex), base);
	rc = core_submodules(p, hex, &v, &n);
	/* The one walk: recorded beside gitdir (the workspace's root) for later readers. */
	if (rc == 0) {
		char *root = strdup(gitdir), *slash = root ? strrchr(root, '/') : NULL;

		if (slash)
			*slash = '\0';
		rc =
		    slash ? core_submodules_record(root, v, n) : util_err(-ENOMEM, "out of memory");
		free(root);
	}
	if (rc < 0 || n == 0)
		goto out;
	if (git_commit_lookup(&commit, core_project_repo(p), base) < 0) {
		rc = util_err(-EIO, "cannot read commit %s: %s", hex, git_error_last()->message);
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		if (v[i].state == FS_SUBMODULE_PRESENT) {
			rc = sub_write(p, gitdir, &v[i], git_commit_committer(commit)->when.time);
			rc = rc ?: mark_active(gitdir, &v[i]);
		}
out:
	git_commit_free(commit);
	fs_submodules_free(v, n);
	return rc;
}

int core_submodule_binds(struct core_project *p, const char *ws_root, const char *base_hex,
			 char ***src, char ***dest, size_t *n)
{
	struct fs_submodule *v = NULL;
	size_t nv = 0, k = 0;
	int rc;

	*src = *dest = NULL;
	*n = 0;
	rc = core_ws_submodules(p, ws_root, base_hex, &v, &nv);
	if (rc < 0 || nv == 0)
		goto out;
	*src = calloc(nv, sizeof(char *));
	*dest = calloc(nv, sizeof(char *));
	if (!*src || !*dest)
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < nv && rc == 0; i++) {
		if (v[i].state != FS_SUBMODULE_PRESENT)
			continue;
		rc = core_objects_view_sub(p, v[i].gitdir, v[i].commit, &(*src)[k]);
		if (rc == 0 &&
		    !((*dest)[k++] = util_asprintf("%s/%s/objects", p->commondir, v[i].gitdir)))
			rc = util_err(-ENOMEM, "out of memory");
	}
	*n = k;
	if (rc < 0) {
		for (size_t i = 0; i < nv && *src && *dest; i++) {
			free((*src)[i]);
			free((*dest)[i]);
		}
		free(*src);
		free(*dest);
		*src = *dest = NULL;
		*n = 0;
	}
out:
	fs_submodules_free(v, nv);
	return rc;
}

/*
 * Opens the directory of path (its components but the last, each one the box could have
 * made: no symlink followed, names checked) beneath dir; made when mkdirs. Last name: *last.
 */
static int parent_beneath(int dir, char *path, bool mkdirs, int *out, const char **last)
{
	int fd = dup(dir);
	char *c = path, *slash;

	for (; fd >= 0 && (slash = strchr(c, '/')); c = slash + 1) {
		int next;

		*slash = '\0';
		if (mkdirs && mkdirat(fd, c, 0755) < 0 && errno != EEXIST)
			next = -1;
		else
			next = core_open_read_beneath(fd, c, true);
		*slash = '/';
		close(fd);
		fd = next;
	}
	if (fd < 0)
		return -errno;
	*out = fd;
	*last = c;
	return 0;
}

/* One submodule's directory from layer `from` into layer `to`, when it is the base's still. */
static int carry_one(int from, int to, const struct fs_submodule *s)
{
	char *pf = strdup(s->path), *pt = strdup(s->path), hex[GIT_OID_HEXSZ + 1];
	const char *lf = NULL, *lt = NULL;
	int df = -1, dt = -1, sub = -1, rc = pf && pt ? 0 : -ENOMEM;
	struct stat st;

	rc = rc ?: parent_beneath(from, pf, false, &df, &lf);
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP)
		rc = 0; /* the box changed no file of it (or replaced a parent): nothing to carry */
	else if (rc == 0 && core_entry_name_ok(lf, strlen(lf)) &&
		 fstatat(df, lf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
		 (sub = core_open_read_beneath(df, lf, true)) >= 0 &&
		 fs_layer_dir_lower_fd(sub, hex) == FS_LAYER_LOWER_SAME) {
		rc = parent_beneath(to, pt, true, &dt, &lt);
		if (rc == 0 && renameat2(df, lf, dt, lt, RENAME_NOREPLACE) < 0)
			rc = -errno;
	}
	if (sub >= 0)
		close(sub);
	if (df >= 0)
		close(df);
	if (dt >= 0)
		close(dt);
	free(pf);
	free(pt);
	return rc;
}

int core_submodules_carry(struct core_project *p, const struct core_ws *ws, const char *from,
			  const char *to, git_repository *repo, const git_oid *tree)
{
	struct fs_submodule *v = NULL;
	git_tree *t = NULL;
	size_t n = 0;
	int f = -1, d = -1;
	int rc = core_ws_submodules(p, ws->root, ws->base_commit, &v, &n);

	if (rc < 0 || n == 0)
		goto out;
	f = open(from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = open(to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (f < 0 || d < 0 || git_tree_lookup(&t, repo, tree) < 0) {
		rc = util_err(-EIO, "rewind: submodules: %s",
			      f < 0 || d < 0 ? strerror(errno) : git_error_last()->message);
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		git_tree_entry *e = NULL;
		char hex[GIT_OID_HEXSZ + 1] = "";

		/* Top-level ones (theirs move with them), where the target has the same gitlink. */
		if (v[i].depth || v[i].state != FS_SUBMODULE_PRESENT ||
		    git_tree_entry_bypath(&e, t, v[i].path) < 0)
			continue;
		if (git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT)
			git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(e));
		git_tree_entry_free(e);
		if (!strcmp(hex, v[i].commit) && (rc = carry_one(f, d, &v[i])) < 0)
			rc = util_err(rc, "rewind: cannot carry the files of submodule %s over: %s",
				      v[i].path, strerror(-rc));
	}
out:
	git_tree_free(t);
	if (f >= 0)
		close(f);
	if (d >= 0)
		close(d);
	fs_submodules_free(v, n);
	return rc;
}
