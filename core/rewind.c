/*
 * core/rewind.c: undo. rewind gives the whole view a checkpoint's tree: a checkpoint first
 * (so the rewind can be undone), then, with the view unmounted, a new upper layer written
 * from the difference between the base tree and the target (costs what differs, like the
 * layer it replaces), swapped in by rename, the view mounted again, and the replaced layer
 * removed. It refuses while a session of the workspace runs, so no process in a box sees
 * the tree change under it.
 * restore gives single paths back through the mounted view, so each change is audited.
 */
#include "core/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "fs/fs.h"

/*
 * Whether the process that led a session that began at start_ns still runs: pid alive and
 * started no later than the session (a pid reused since a killed shell is not it).
 */
static bool leader_alive(pid_t pid, int64_t start_ns)
{
	char path[64], buf[1024], *rp;
	unsigned long long ticks = 0, btime = 0;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;
	bool alive = kill(pid, 0) == 0 || errno == EPERM;

	if (!alive || hz <= 0)
		return alive;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	rp = f && fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	if (f)
		fclose(f);
	/* After "comm)": state, then fields 4..21, then starttime (22). */
	if (!rp || sscanf(rp + 2,
			  "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			  "%*s %*s %*s %*s %llu",
			  &ticks) != 1)
		return alive;
	f = fopen("/proc/stat", "re");
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	if (f)
		fclose(f);
	if (!btime)
		return alive;
	/* Start times are in clock ticks since boot: a second of slack for the rounding. */
	return (int64_t)(btime + ticks / (unsigned long long)hz) <= start_ns / 1000000000 + 1;
}

int core_ws_session_running(struct core_project *p, const struct core_ws *ws, int64_t *session)
{
	struct audit_open_session open[16];
	sqlite3 *db = NULL;
	int64_t key = 0, deleted = 0;
	size_t n = 0;
	int rc = core_project_db(p, false, &db);

	*session = 0;
	if (rc == -ENOENT)
		return 0;
	rc = rc ?: audit_ws_resolve(db, ws->name, &key, &deleted);
	if (rc == -ENOENT)
		return 0;
	/* Newest first; an older one still open is a shell killed before it could end it. */
	rc = rc ?: audit_sessions_open(db, key, open, ARB_ARRAY_LEN(open), &n);
	for (size_t i = 0; rc == 0 && i < n && !*session; i++)
		if (open[i].leader > 0 && leader_alive(open[i].leader, open[i].start_ns))
			*session = open[i].id;
	return rc;
}

/*
 * Writes blob e of repo as dir/name (a file with git's mode, or a symlink). dir is a folder
 * this process made (a new layer) or opened in the view without following links; name was
 * checked (core_entry_name_check) and is created, never opened if there (O_EXCL), never
 * through a symbolic link.
 */
static int write_blob(git_repository *repo, int dir, const char *name, const git_tree_entry *e)
{
	git_blob *blob = NULL;
	const char *data;
	size_t len;
	int fd = -1, rc = 0;

	if (git_blob_lookup(&blob, repo, git_tree_entry_id(e)) < 0)
		return util_err(-EIO, "cannot write %s: missing blob", name);
	data = git_blob_rawcontent(blob);
	len = (size_t)git_blob_rawsize(blob);
	if (git_tree_entry_filemode(e) == GIT_FILEMODE_LINK) {
		char *target = strndup(data, len);

		rc = target && symlinkat(target, dir, name) == 0
			 ? 0
			 : util_err(-errno, "cannot write %s: %s", name, strerror(errno));
		free(target);
	} else {
		mode_t mode =
		    git_tree_entry_filemode(e) == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644;

		fd = core_open_beneath(dir, name, O_WRONLY | O_CREAT | O_EXCL, mode);
		rc = fd >= 0 && util_write_all(fd, data, len) == 0 && fchmod(fd, mode) == 0
			 ? 0
			 : util_err(-errno, "rewind: %s: %s", name, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	git_blob_free(blob);
	return rc;
}

static int layer_write(git_repository *repo, int dir, const git_tree *lower, const git_tree *want);

/* dir/name as entry e of the target (lower: what the view would show there otherwise). */
static int write_entry(git_repository *repo, int dir, const char *name, const git_tree_entry *e,
		       const git_tree *lower_sub, bool opaque)
{
	git_tree *sub = NULL;
	int fd, rc;

	/*
	 * Trust boundary: the tree may be the box's (a revision of its repository, imported
	 * with its names checked) and is checked again here, before any filesystem call, so
	 * that no name climbs out of dir ("..", "a/b") or lands in a .git.
	 */
	rc = core_entry_name_check(name, "rewind");
	if (rc < 0)
		return rc;
	if (git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT)
		return 0; /* a submodule's commit: nothing a layer can hold */
	if (git_tree_entry_filemode(e) != GIT_FILEMODE_TREE)
		return write_blob(repo, dir, name, e);
	if (mkdirat(dir, name, 0755) < 0)
		return util_err(-errno, "rewind: %s: %s", name, strerror(errno));
	fd = core_open_read_beneath(dir, name, true);
	if (fd < 0)
		return util_err(-errno, "rewind: %s: %s", name, strerror(errno));
	rc = opaque ? fs_layer_set_opaque(fd) : 0;
	if (rc < 0)
		rc = util_err(rc, "rewind: %s: %s", name, strerror(-rc));
	if (rc == 0 && git_tree_lookup(&sub, repo, git_tree_entry_id(e)) < 0)
		rc = util_err(-EIO, "rewind: missing tree %s", name);
	rc = rc ?: layer_write(repo, fd, opaque ? NULL : lower_sub, sub);
	git_tree_free(sub);
	close(fd);
	return rc;
}

/*
 * Writes into layer directory dir what makes want appear over lower (NULL: nothing below):
 * entries only in lower become whiteouts, entries that differ are written (directories that
 * are trees on both sides recurse), equal ones are left to the lower layer.
 */
static int layer_write(git_repository *repo, int dir, const git_tree *lower, const git_tree *want)
{
	size_t nl = lower ? git_tree_entrycount(lower) : 0, nw = git_tree_entrycount(want);
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < nl; i++) {
		const git_tree_entry *l = git_tree_entry_byindex(lower, i);
		const char *name = git_tree_entry_name(l);

		if (!git_tree_entry_byname(want, name) &&
		    (rc = fs_layer_whiteout_at(dir, name)) < 0)
			rc = util_err(rc, "rewind: %s: %s", name, strerror(-rc));
	}
	for (size_t i = 0; rc == 0 && i < nw; i++) {
		const git_tree_entry *w = git_tree_entry_byindex(want, i);
		const char *name = git_tree_entry_name(w);
		const git_tree_entry *l = lower ? git_tree_entry_byname(lower, name) : NULL;
		bool l_tree = l && git_tree_entry_filemode(l) == GIT_FILEMODE_TREE;
		bool w_tree = git_tree_entry_filemode(w) == GIT_FILEMODE_TREE;
		git_tree *ls = NULL;

		if (l && git_tree_entry_filemode(l) == git_tree_entry_filemode(w) &&
		    git_oid_equal(git_tree_entry_id(l), git_tree_entry_id(w)))
			continue; /* the lower layer shows it as it should be */
		if (l_tree && w_tree && git_tree_lookup(&ls, repo, git_tree_entry_id(l)) < 0)
			rc = util_err(-EIO, "rewind: missing tree %s", name);
		/* A directory where the lower has none, or has a file: nothing below shows. */
		rc = rc ?: write_entry(repo, dir, name, w, ls, w_tree && l && !l_tree);
		git_tree_free(ls);
	}
	return rc;
}

/* NAME/layer.rewind with tree over the base; caller swaps it in. */
static int layer_build(git_repository *repo, const struct core_ws *ws, const char *path,
		       const git_oid *tree)
{
	git_object *base = NULL, *lower = NULL;
	git_tree *want = NULL;
	int fd = -1, rc = 0;

	(void)util_rm_rf(path);
	if (mkdir(path, 0755) < 0)
		return util_err(-errno, "rewind: cannot make %s: %s", path, strerror(errno));
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || git_revparse_single(&base, repo, ws->base_commit) < 0 ||
	    git_object_peel(&lower, base, GIT_OBJECT_TREE) < 0 ||
	    git_tree_lookup(&want, repo, tree) < 0)
		rc = util_err(-EIO, "rewind: %s",
			      fd < 0 ? strerror(errno) : git_error_last()->message);
	rc = rc ?: layer_write(repo, fd, (git_tree *)lower, want);
	git_tree_free(want);
	git_object_free(lower);
	git_object_free(base);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* How the view is shared now (core/mount.c makes the folder 0711 for --allow-other). */
static unsigned view_sharing(const struct core_ws *ws)
{
	struct stat st;

	return stat(ws->root, &st) == 0 && (st.st_mode & 0001) ? CORE_WS_ALLOW_OTHER : 0;
}

/*
 * Removes NAME/layer.old* (the replaced layer, and any an interrupted rewind or an older
 * arborinth's "layer.old" left). Here, not in a detached process: removed in the background,
 * the deletions' journal traffic on ext4 stalled the next rewind's fsyncs (rewinds of 5-10 s
 * back to back), so the cost is paid where it is caused.
 */
static void old_layers_sweep(const char *root)
{
	int dir = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
	struct dirent *de;

	if (!d) {
		if (dir >= 0)
			close(dir);
		return;
	}
	while ((de = readdir(d)))
		if (util_str_has_prefix(de->d_name, "layer.old"))
			(void)util_rm_rf_at(dirfd(d), de->d_name);
	closedir(d);
}

int core_ws_rewind(struct core_project *p, struct core_ws *ws, const git_oid *tree,
		   struct core_ckpt *before)
{
	struct core_ckpt_opts o = {.message = "before rewind", .kind = "rewind"};
	char *fresh = util_asprintf("%s.rewind", ws->layer),
	     *old = util_asprintf("%s.old.%d.%lld", ws->layer, (int)getpid(),
				  (long long)util_now_ns());
	git_repository *repo = NULL;
	int64_t running = 0;
	bool was_mounted = fs_is_mounted(ws->workdir) == 1;
	unsigned shared = view_sharing(ws);
	int rc = fresh && old ? 0 : util_err(-ENOMEM, "out of memory");

	memset(before, 0, sizeof(*before));
	rc = rc ?: core_ws_session_running(p, ws, &running);
	if (rc == 0 && running)
		rc = util_err(-EBUSY,
			      "session %lld of %s is running; rewind when it has ended (the tree "
			      "must not change under a box)",
			      (long long)running, ws->name);
	rc = rc ?: core_ws_checkpoint(p, ws, &o, before);
	rc = rc ?: ckpt_repo_open(p, ws, &repo);
	/* Built beside the layer before anything changes: a failure leaves the view as it was. */
	rc = rc ?: layer_build(repo, ws, fresh, tree);
	rc = rc ?: core_ws_unmount(p, ws);
	if (rc == 0 && rename(ws->layer, old) < 0)
		rc = util_err(-errno, "rewind: cannot move %s aside: %s", ws->layer,
			      strerror(errno));
	if (rc == 0 && rename(fresh, ws->layer) < 0) {
		rc = util_err(-errno, "rewind: cannot put the new layer in place: %s",
			      strerror(errno));
		if (rename(old, ws->layer) < 0) {
			/* the old layer stays at layer.old.*; the message above says what failed */
		}
	}
	/* After the swap: what cannot be carried stays in layer.old.*, which is then not swept. */
	char carry_err[512] = "";

	if (rc == 0 && core_submodules_carry(p, ws, old, ws->layer, repo, tree) < 0)
		snprintf(carry_err, sizeof(carry_err), "%s", util_err_msg());
	if (rc == 0) {
		/* Hashes of the old layer's files are of no use any more. */
		char *cache = util_path_join(ws->root, CKPT_CACHE_FILE);

		if (cache)
			unlink(cache);
		free(cache);
	} else if (fresh) {
		(void)util_rm_rf(fresh);
	}
	if (was_mounted && core_ws_mount(p, ws, shared) < 0 && rc == 0)
		rc = -EIO; /* the mount's message stands */
	if (rc == 0 && carry_err[0])
		rc = util_err(-EIO, "%s (they are in %s)", carry_err, old);
	else if (rc == 0)
		old_layers_sweep(ws->root); /* after the view is back */
	git_repository_free(repo);
	free(old);
	free(fresh);
	return rc;
}

/* A path for restore: relative, canonical, not in .git. */
static int path_check(const char *path)
{
	if (!*path || path[0] == '/' || strstr(path, "//") || !strcmp(path, ".") ||
	    !strncmp(path, "./", 2) || !strcmp(path, "..") || !strncmp(path, "../", 3) ||
	    strstr(path, "/../") || strstr(path, "/./") ||
	    (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/..")) ||
	    !strcmp(path, ".git") || !strncmp(path, ".git/", 5))
		return util_err(-EINVAL,
				"'%s' is not a path inside the workdir (relative, without . or .., "
				"not in .git)",
				path);
	return 0;
}

/* Opens the directory of path in the view (creating missing ones), its last name in *base. */
static int view_parent(const struct core_ws *ws, char *path, int *out, const char **base)
{
	char *slash = strrchr(path, '/');
	int fd = -1;

	*base = slash ? slash + 1 : path;
	if (slash)
		*slash = '\0';
	fd = open(ws->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (char *c = slash ? path : NULL, *next; fd >= 0 && c; c = next) {
		int nfd;

		next = strchr(c, '/');
		if (next)
			*next++ = '\0';
		if (mkdirat(fd, c, 0755) < 0 && errno != EEXIST)
			break;
		/* The view is the box's: no component followed if a link, none a FIFO. */
		nfd = core_open_read_beneath(fd, c, true);
		close(fd);
		fd = nfd;
	}
	if (slash)
		*slash = '/';
	if (fd < 0)
		return util_err(-errno, "restore: %s: %s", path, strerror(errno));
	*out = fd;
	return 0;
}

/* Removes dir/name in the view (the box's): never followed if a link, folders emptied by fd. */
static int remove_at(int dir, const char *name)
{
	struct stat st;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dir, name, 0) < 0 ? -errno : 0;
	return util_rm_rf_at(dir, name);
}

/* Whether path is in the view now: no component followed if a link (the view is the box's). */
static bool view_has(const struct core_ws *ws, const char *path)
{
	char *copy = strdup(path);
	const char *base = NULL;
	struct stat st;
	bool has = false;
	int fd = copy ? open(ws->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	char *c = copy, *slash;

	while (fd >= 0 && (slash = strchr(c, '/'))) {
		int nfd;

		*slash = '\0';
		nfd = core_open_read_beneath(fd, c, true);
		close(fd);
		fd = nfd;
		c = slash + 1;
	}
	base = c;
	if (fd >= 0)
		has = fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (fd >= 0)
		close(fd);
	free(copy);
	return has;
}

int core_ws_restore(struct core_project *p, struct core_ws *ws, const git_oid *tree,
		    const char *const *paths, size_t n)
{
	git_repository *repo = NULL;
	git_tree *t = NULL;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = path_check(paths[i]);
	rc = rc ?: core_ws_mount(p, ws, view_sharing(ws));
	rc = rc ?: ckpt_repo_open(p, ws, &repo);
	if (rc == 0 && git_tree_lookup(&t, repo, tree) < 0)
		rc = util_err(-EIO, "restore: %s", git_error_last()->message);
	/* A path in neither the tree nor the view never existed: refused before any change. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		git_tree_entry *e = NULL;

		if (git_tree_entry_bypath(&e, t, paths[i]) < 0 && !view_has(ws, paths[i]))
			rc = util_err(-ENOENT, "%s", paths[i]);
		git_tree_entry_free(e);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		git_tree_entry *e = NULL;
		char *path = strdup(paths[i]);
		const char *base;
		int dir = -1;

		if (!path) {
			rc = util_err(-ENOMEM, "out of memory");
			break;
		}
		if (git_tree_entry_bypath(&e, t, path) < 0)
			e = NULL; /* not in the tree: the path goes */
		rc = view_parent(ws, path, &dir, &base);
		if (rc == 0 && (rc = remove_at(dir, base)) < 0)
			rc = util_err(rc, "restore: cannot remove %s: %s", paths[i], strerror(-rc));
		rc = rc ?: e ? write_entry(repo, dir, base, e, NULL, false) : 0;
		if (dir >= 0)
			close(dir);
		git_tree_entry_free(e);
		free(path);
	}
	git_tree_free(t);
	git_repository_free(repo);
	return rc;
}
