/*
 * core/ws_busy.c: the processes that keep a view busy (an unmount fails with EBUSY): those
 * whose working directory, root, an open file or a mapped file is in the view. Read from
 * /proc with readlink only (no link is followed, nothing in the view is opened or stat'ed),
 * so a hung or hostile view cannot stall the scan. A process in another mount namespace (a
 * box) names the view by the path it has there: its mountinfo says which mounts are the
 * view's file system (the same device), and paths under those count too. Names (comm) are
 * chosen by the processes: shown quoted.
 */
#include "core/core_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define BUSY_SHOWN    8	 /* processes named; more are counted */
#define BUSY_PREFIXES 16 /* where one process sees the view */

struct busy_proc {
	char *prefix[BUSY_PREFIXES];
	size_t n;
};

static bool under_any(const struct busy_proc *b, const char *path)
{
	for (size_t i = 0; i < b->n; i++)
		if (util_path_under(path, b->prefix[i]))
			return true;
	return false;
}

static void busy_proc_clear(struct busy_proc *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->prefix[i]);
	b->n = 0;
}

/* mountinfo's octal escapes (\040 for a space, ...) decoded in place. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/*
 * Each mount of /proc/PID/mountinfo: fn(arg, dev, mount point). "ID PARENT MAJ:MIN ROOT
 * MOUNTPOINT ...". Stops when fn returns false.
 */
static void mounts_each(const char *pid, bool (*fn)(void *, dev_t, const char *), void *arg)
{
	char path[300], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/mountinfo", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char mnt[PATH_MAX];

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mnt) != 3)
			continue;
		unescape(mnt);
		if (!fn(arg, makedev(maj, min), mnt))
			break;
	}
	free(line);
	fclose(f);
}

struct view_dev {
	const char *workdir;
	dev_t dev;
	bool found;
};

static bool view_dev_one(void *arg, dev_t dev, const char *mnt)
{
	struct view_dev *v = arg;

	/* The last mount there is the one on top (a view mounted twice: the newer). */
	if (!strcmp(mnt, v->workdir)) {
		v->dev = dev;
		v->found = true;
	}
	return true;
}

struct prefix_ctx {
	struct busy_proc *b;
	dev_t dev;
};

/* The mount points of a process's namespace that are the view's file system. */
static bool prefix_one(void *arg, dev_t dev, const char *mnt)
{
	struct prefix_ctx *c = arg;
	char *copy;

	if (dev != c->dev)
		return true;
	copy = strdup(mnt);
	if (copy)
		c->b->prefix[c->b->n++] = copy;
	return c->b->n < BUSY_PREFIXES;
}

/* readlink of /proc/PID/what: true when it names something in the view. */
static bool link_in_view(const struct busy_proc *b, int dir, const char *what)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dir, what, target, sizeof(target) - 1);

	if (n <= 0)
		return false;
	target[n] = '\0';
	return under_any(b, target);
}

static bool fds_in_view(const struct busy_proc *b, int procdir)
{
	int fd = openat(procdir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	bool hit = false;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!hit && (e = readdir(d)))
		if (e->d_name[0] != '.')
			hit = link_in_view(b, dirfd(d), e->d_name);
	closedir(d);
	return hit;
}

static bool maps_in_view(const struct busy_proc *b, const char *pid)
{
	char path[300], *line = NULL;
	size_t cap = 0;
	bool hit = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!hit && getline(&line, &cap, f) > 0) {
		char *slash = strchr(line, '/');

		if (slash) {
			slash[strcspn(slash, "\n")] = '\0';
			hit = under_any(b, slash);
		}
	}
	free(line);
	fclose(f);
	return hit;
}

static bool proc_busy(dev_t dev, const char *pid)
{
	struct busy_proc b = {0};
	char path[300];
	bool hit = false;
	int dir;

	snprintf(path, sizeof(path), "/proc/%s", pid);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return false;
	mounts_each(pid, prefix_one, &(struct prefix_ctx){&b, dev});
	hit = b.n > 0 && (link_in_view(&b, dir, "cwd") || link_in_view(&b, dir, "root") ||
			  fds_in_view(&b, dir) || maps_in_view(&b, pid));
	busy_proc_clear(&b);
	close(dir);
	return hit;
}

static void proc_comm(const char *pid, char *out, size_t size)
{
	char path[300];
	char *buf = NULL;
	size_t len = 0;

	snprintf(out, size, "?");
	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	if (util_read_file(path, &buf, &len) == 0 && len > 0) {
		char *q;

		buf[strcspn(buf, "\n")] = '\0';
		q = util_quote(buf);
		if (q)
			snprintf(out, size, "%s", q);
		free(q);
	}
	util_err_clear();
	free(buf);
}

int core_ws_busy(const struct core_ws *ws, char **out)
{
	struct util_buf b = {0};
	char self[24];
	struct dirent *e;
	struct view_dev v = {.workdir = ws->workdir};
	size_t found = 0;
	int rc = 0;
	DIR *d;

	*out = NULL;
	/* The view's device, from this namespace's mount table: nothing asks the view itself,
	 * which may be the thing that hangs. */
	mounts_each("self", view_dev_one, &v);
	if (!v.found)
		return 0;
	snprintf(self, sizeof(self), "%d", (int)getpid());
	d = opendir("/proc");
	if (!d)
		return util_err(-errno, "/proc: %s", strerror(errno));
	while (rc == 0 && (e = readdir(d))) {
		char comm[96], item[400];

		if (!isdigit((unsigned char)e->d_name[0]) || !strcmp(e->d_name, self) ||
		    !proc_busy(v.dev, e->d_name))
			continue;
		if (++found > BUSY_SHOWN)
			continue;
		proc_comm(e->d_name, comm, sizeof(comm));
		snprintf(item, sizeof(item), "%spid %s (%s)", found > 1 ? ", " : "", e->d_name,
			 comm);
		rc = util_buf_put(&b, item, strlen(item));
	}
	closedir(d);
	if (rc == 0 && found > BUSY_SHOWN) {
		char more[48];

		snprintf(more, sizeof(more), " and %zu more", found - BUSY_SHOWN);
		rc = util_buf_put(&b, more, strlen(more));
	}
	if (rc < 0 || found == 0) {
		free(b.s);
		return rc;
	}
	*out = b.s;
	return (int)(found > 1000000 ? 1000000 : found);
}
