/*
 * core/project_cache.c: finding a project without libgit2.
 *
 * Opening the origin with libgit2 costs its start (arborinth opens libgit2 on first use,
 * compat/git2_lazy.c: about 3 ms) and a read of three git config files. Most commands only need
 * the paths: the origin's root, its gitdir and common dir. So after libgit2 has found them,
 * they are written to <root>/.git/arborinth/repo.cache (in the state directory, core/state_dir.c)
 * together with what they depend on, and
 * the next open takes them from there when all of it still holds:
 * - walking up from the (resolved) directory, the first folder with a `.git` is the cached
 *   root, on the same file system (libgit2 stops at a file system's boundary), and no folder
 *   on the way looks like a gitdir itself (a HEAD file) or is inside one;
 * - that `.git` is a directory (not a worktree's or submodule's `.git` file), the same one
 *   (device and inode), owned by the same user, who is also the one running now (libgit2's
 *   ownership check passed for that user);
 * - its `config` is unchanged (device, inode, size, mtime and ctime): `core.worktree` or
 *   `core.bare` set later makes libgit2 decide again.
 * Anything else (no cache, a mismatch, a layout other than <root>/.git) takes libgit2's way,
 * which writes a new cache. The cache is only written into an existing state directory.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_NAME  "repo.cache"
#define CACHE_MAGIC "arborinth-repo-cache 1"

/* What the cached paths depend on: the .git folder and its config file. */
struct cache_key {
	uint64_t git_dev, git_ino, uid, cfg_dev, cfg_ino, cfg_size;
	int64_t cfg_mtime_s, cfg_mtime_ns, cfg_ctime_s, cfg_ctime_ns;
};

static int key_of(const char *gitdir, struct cache_key *k)
{
	char *cfg = util_path_join(gitdir, "config");
	struct stat g, c;
	int rc = -ENOENT;

	if (cfg && lstat(gitdir, &g) == 0 && S_ISDIR(g.st_mode) && lstat(cfg, &c) == 0 &&
	    S_ISREG(c.st_mode)) {
		*k = (struct cache_key){.git_dev = g.st_dev,
					.git_ino = g.st_ino,
					.uid = g.st_uid,
					.cfg_dev = c.st_dev,
					.cfg_ino = c.st_ino,
					.cfg_size = (uint64_t)c.st_size,
					.cfg_mtime_s = c.st_mtim.tv_sec,
					.cfg_mtime_ns = c.st_mtim.tv_nsec,
					.cfg_ctime_s = c.st_ctim.tv_sec,
					.cfg_ctime_ns = c.st_ctim.tv_nsec};
		rc = 0;
	}
	free(cfg);
	return rc;
}

/* Whether dir/name exists (any type, not followed). */
static bool has(const char *dir, const char *name)
{
	char *p = util_path_join(dir, name);
	struct stat st;
	bool yes = p && lstat(p, &st) == 0;

	free(p);
	return yes;
}

/*
 * The folder libgit2 would take as the working tree, if it is a plain <root>/.git layout
 * reached the plain way; NULL otherwise (or on ENOMEM: the slow way then says so).
 */
static char *find_root(const char *real)
{
	char *dir = strdup(real);
	struct stat top, st;

	if (!dir || strstr(dir, "/.git/") ||
	    (strlen(dir) >= 5 && !strcmp(dir + strlen(dir) - 5, "/.git")) || stat(dir, &top) < 0)
		goto no;
	for (;;) {
		char *slash;

		if (has(dir, ".git"))
			return dir;
		/* A gitdir of its own (bare, or a .git folder by another name): libgit2's call. */
		if (has(dir, "HEAD"))
			goto no;
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			goto no; /* up to / without a repository: libgit2 says what is wrong */
		*slash = '\0';
		if (stat(dir, &st) < 0 || st.st_dev != top.st_dev)
			goto no;
	}
no:
	free(dir);
	return NULL;
}

/* "name value" line `name` of buf, a copy of its value; NULL when missing. */
static char *field(const char *buf, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, name, n) && l[n] == ' ')
			return strndup(l + n + 1, strcspn(l + n + 1, "\n"));
	return NULL;
}

static int key_parse(const char *buf, struct cache_key *k)
{
	char *v = field(buf, "key");
	int n =
	    v ? sscanf(v,
		       "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		       " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64,
		       &k->git_dev, &k->git_ino, &k->uid, &k->cfg_dev, &k->cfg_ino, &k->cfg_size,
		       &k->cfg_mtime_s, &k->cfg_mtime_ns, &k->cfg_ctime_s, &k->cfg_ctime_ns)
	      : 0;

	free(v);
	return n == 10 ? 0 : -EINVAL;
}

int core_project_cached(struct core_project *p, const char *real)
{
	char *root = find_root(real), *path = NULL, *buf = NULL, *croot = NULL, *dotgit = NULL;
	char *state = NULL;
	struct cache_key want, have;
	size_t len;
	int rc = -ENOENT;

	if (!root)
		return -ENOENT;
	dotgit = util_path_join(root, ".git");
	state = dotgit ? core_state_dir_of(root, dotgit, dotgit) : NULL;
	path = state ? util_path_join(state, CACHE_NAME) : NULL;
	if (!path || util_read_file(path, &buf, &len) < 0)
		goto out;
	croot = field(buf, "root");
	if (strncmp(buf, CACHE_MAGIC "\n", strlen(CACHE_MAGIC) + 1) || !croot ||
	    strcmp(croot, root) || key_parse(buf, &want) < 0 || want.uid != geteuid())
		goto out;
	p->gitdir = field(buf, "gitdir");
	p->commondir = field(buf, "commondir");
	if (!p->gitdir || !p->commondir || strcmp(p->gitdir, dotgit) ||
	    strcmp(p->commondir, dotgit) || key_of(p->gitdir, &have) < 0 ||
	    memcmp(&want, &have, sizeof(want)))
		goto out;
	p->root = root;
	root = NULL;
	rc = 0;
out:
	if (rc < 0) {
		free(p->gitdir);
		free(p->commondir);
		p->gitdir = p->commondir = NULL;
	}
	free(state);
	free(dotgit);
	free(croot);
	free(buf);
	free(path);
	free(root);
	return rc;
}

void core_project_cache_write(const struct core_project *p)
{
	char *dotgit = util_path_join(p->root, ".git"), *path = NULL, *text = NULL;
	struct cache_key k;
	struct stat st;

	/* Only the plain layout, into a state directory that exists; paths on one line each. */
	if (!dotgit || strcmp(dotgit, p->gitdir) || strcmp(p->gitdir, p->commondir) ||
	    strchr(p->root, '\n') || strchr(p->commondir, '\n') || lstat(p->state_dir, &st) < 0 ||
	    !S_ISDIR(st.st_mode) || key_of(p->gitdir, &k) < 0)
		goto out;
	path = util_path_join(p->state_dir, CACHE_NAME);
	text = util_asprintf(CACHE_MAGIC "\nroot %s\ngitdir %s\ncommondir %s\nkey %" PRIu64
					 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
					 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
			     p->root, p->gitdir, p->commondir, k.git_dev, k.git_ino, k.uid,
			     k.cfg_dev, k.cfg_ino, k.cfg_size, k.cfg_mtime_s, k.cfg_mtime_ns,
			     k.cfg_ctime_s, k.cfg_ctime_ns);
	/* Best effort: without it the next open takes libgit2's way again. */
	if (path && text && k.uid == geteuid() &&
	    util_write_file(path, text, strlen(text), 0644) < 0)
		util_err_clear();
out:
	free(text);
	free(path);
	free(dotgit);
}
