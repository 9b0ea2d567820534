/*
 * core/registry.c: the user's projects, for `workspace list --all` and `gc`: the file
 * $XDG_STATE_HOME/arborinth/projects (default ~/.local/state/arborinth/projects), a line
 * "STATE_DIR<TAB>ROOT" per project, appended (one write, O_APPEND, under flock) when a
 * project's state database is opened for writing. Entries are checked on read: the state
 * directory must be a real directory (not a link) owned by this user and hold state.db, the
 * root a directory; others are skipped, and core_registry_prune drops them. The file and its
 * folder are this user's (0600, 0700, opened without following links).
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define REGISTRY_MAX (4u << 20)

/* The registry's folder (caller frees), or NULL without XDG_STATE_HOME and HOME. */
static char *registry_dir(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	/* The XDG spec: a relative value is ignored. */
	if (xdg && xdg[0] == '/')
		return util_asprintf("%s/arborinth", xdg);
	if (home && home[0] == '/')
		return util_asprintf("%s/.local/state/arborinth", home);
	return NULL;
}

/* The registry opened (flock'ed: exclusive for writing), or -errno. */
static int registry_open(bool write, char **path_out)
{
	char *dir = registry_dir(), *path = dir ? util_path_join(dir, "projects") : NULL;
	struct stat st;
	int fd = -ENOENT;

	if (path_out)
		*path_out = NULL;
	if (!path)
		goto out;
	if (write && util_mkdir_p(dir, 0700) < 0) {
		fd = -EACCES;
		goto out;
	}
	fd = open(path, (write ? O_RDWR | O_CREAT | O_APPEND : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		fd = -errno;
		goto out;
	}
	/* Only a file of this user's: another's could list projects this user does not own. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    flock(fd, write ? LOCK_EX : LOCK_SH) < 0) {
		close(fd);
		fd = -EPERM;
		goto out;
	}
	if (path_out) {
		*path_out = path;
		path = NULL;
	}
out:
	util_err_clear();
	free(path);
	free(dir);
	return fd;
}

static int registry_read(int fd, char **out)
{
	struct stat st;
	char *buf;
	ssize_t n;

	*out = NULL;
	if (fstat(fd, &st) < 0 || st.st_size > REGISTRY_MAX)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n < 0) {
		free(buf);
		return -errno;
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

/* Whether state_dir and root name a live project of this user's. */
static bool entry_ok(const char *state_dir, const char *root)
{
	char *db = util_path_join(state_dir, "state.db");
	struct stat st;
	bool ok = state_dir[0] == '/' && root[0] == '/' && lstat(state_dir, &st) == 0 &&
		  S_ISDIR(st.st_mode) && st.st_uid == geteuid() && db && lstat(db, &st) == 0 &&
		  S_ISREG(st.st_mode) && st.st_uid == geteuid() && stat(root, &st) == 0 &&
		  S_ISDIR(st.st_mode);

	free(db);
	return ok;
}

/* Calls fn for each line "STATE\tROOT" of buf (modified in place) that is well formed. */
static void registry_each(char *buf, void (*fn)(void *, const char *, const char *), void *arg)
{
	char *save = NULL;

	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (!tab || strchr(tab + 1, '\t'))
			continue;
		*tab = '\0';
		fn(arg, line, tab + 1);
		*tab = '\t';
	}
}

struct seen {
	const char *state_dir;
	bool found;
};

static void seen_one(void *arg, const char *state_dir, const char *root)
{
	struct seen *s = arg;

	(void)root;
	if (!strcmp(state_dir, s->state_dir))
		s->found = true;
}

void core_registry_add(const char *state_dir, const char *root)
{
	struct seen s = {.state_dir = state_dir};
	char *buf = NULL, *line = NULL;
	int fd;

	/* A name with a newline or tab cannot be a line: such a project is not listed. */
	if (strpbrk(state_dir, "\t\n") || strpbrk(root, "\t\n"))
		return;
	fd = registry_open(true, NULL);
	if (fd < 0)
		return;
	if (registry_read(fd, &buf) == 0)
		registry_each(buf, seen_one, &s);
	line = s.found ? NULL : util_asprintf("%s\t%s\n", state_dir, root);
	if (line && util_write_all(fd, line, strlen(line)) < 0) {
		/* Best effort: the project works without being listed. */
	}
	util_err_clear();
	free(line);
	free(buf);
	close(fd);
}

struct list_ctx {
	struct core_registry_entry *v;
	size_t n;
	int rc;
};

static void list_one(void *arg, const char *state_dir, const char *root)
{
	struct list_ctx *c = arg;
	struct core_registry_entry *v;

	if (c->rc < 0 || !entry_ok(state_dir, root))
		return;
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].state_dir, state_dir))
			return;
	v = realloc(c->v, (c->n + 1) * sizeof(*v));
	if (!v) {
		c->rc = -ENOMEM;
		return;
	}
	c->v = v;
	v[c->n].state_dir = strdup(state_dir);
	v[c->n].root = strdup(root);
	if (!v[c->n].state_dir || !v[c->n].root) {
		free(v[c->n].state_dir);
		free(v[c->n].root);
		c->rc = -ENOMEM;
		return;
	}
	c->n++;
}

void core_registry_free(struct core_registry_entry *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].state_dir);
		free(v[i].root);
	}
	free(v);
}

int core_registry_list(struct core_registry_entry **out, size_t *n)
{
	struct list_ctx c = {0};
	char *buf = NULL;
	int fd = registry_open(false, NULL);

	*out = NULL;
	*n = 0;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return util_err(fd, "cannot read the list of projects: %s", strerror(-fd));
	c.rc = registry_read(fd, &buf);
	close(fd);
	if (c.rc == 0)
		registry_each(buf, list_one, &c);
	free(buf);
	if (c.rc < 0) {
		core_registry_free(c.v, c.n);
		return util_err(c.rc, "cannot read the list of projects: %s", strerror(-c.rc));
	}
	*out = c.v;
	*n = c.n;
	return 0;
}

/* Whether lines (as keep_one writes them) has one for state_dir. */
static bool has_state(const char *lines, const char *state_dir)
{
	size_t n = strlen(state_dir);

	for (const char *l = lines; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, state_dir, n) && l[n] == '\t')
			return true;
	return false;
}

static void keep_one(void *arg, const char *state_dir, const char *root)
{
	struct util_buf *b = arg;

	if (entry_ok(state_dir, root) && !has_state(b->s, state_dir)) {
		if (util_buf_put(b, state_dir, strlen(state_dir)) < 0 ||
		    util_buf_put(b, "\t", 1) < 0 || util_buf_put(b, root, strlen(root)) < 0 ||
		    util_buf_put(b, "\n", 1) < 0) {
			/* Out of memory: the file is then rewritten short of nothing (below). */
		}
	}
}

int core_registry_prune(size_t *dropped)
{
	struct util_buf keep = {0};
	char *buf = NULL, *path = NULL;
	size_t before = 0, after = 0;
	int fd = registry_open(true, &path), rc;

	*dropped = 0;
	if (fd < 0)
		return fd == -ENOENT ? 0 : util_err(fd, "cannot update the list of projects");
	rc = registry_read(fd, &buf);
	for (char *c = buf; rc == 0 && *c; c++)
		before += *c == '\n';
	if (rc == 0)
		registry_each(buf, keep_one, &keep);
	for (char *c = keep.s; c && *c; c++)
		after += *c == '\n';
	/* Rewritten in place under the lock, so appenders wait (a crash here loses entries: the
	 * next create of each project adds its own back). */
	if (rc == 0 && after < before) {
		if (ftruncate(fd, 0) < 0 || (keep.n && util_write_all(fd, keep.s, keep.n) < 0))
			rc = util_err(-EIO, "cannot update %s", path);
		else
			*dropped = before - after;
	}
	free(keep.s);
	free(buf);
	free(path);
	close(fd);
	return rc;
}
