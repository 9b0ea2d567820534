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

/* The mount points of pid's namespace that are the view's file system (dev). */
static void busy_mounts(struct busy_proc *b, const char *pid, dev_t dev)
{
	char path[300], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/mountinfo", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (b->n < BUSY_PREFIXES && getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char mnt[PATH_MAX];

		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": octal escapes are left as they are. */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mnt) == 3 &&
		    makedev(maj, min) == dev && strcmp(mnt, "/") != 0)
			b->prefix[b->n++] = strdup(mnt);
	}
	free(line);
	fclose(f);
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

static bool proc_busy(const char *workdir, dev_t dev, const char *pid)
{
	struct busy_proc b = {0};
	char path[300];
	bool hit = false;
	int dir;

	snprintf(path, sizeof(path), "/proc/%s", pid);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return false;
	b.prefix[b.n++] = strdup(workdir);
	busy_mounts(&b, pid, dev);
	hit = link_in_view(&b, dir, "cwd") || link_in_view(&b, dir, "root") ||
	      fds_in_view(&b, dir) || maps_in_view(&b, pid);
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
	struct stat st;
	size_t found = 0;
	int rc = 0;
	DIR *d;

	*out = NULL;
	/* The view's device: stat of the mount point itself, which this process made. */
	if (lstat(ws->workdir, &st) < 0)
		return 0;
	snprintf(self, sizeof(self), "%d", (int)getpid());
	d = opendir("/proc");
	if (!d)
		return util_err(-errno, "/proc: %s", strerror(errno));
	while (rc == 0 && (e = readdir(d))) {
		char comm[96], item[400];

		if (!isdigit((unsigned char)e->d_name[0]) || !strcmp(e->d_name, self) ||
		    !proc_busy(ws->workdir, st.st_dev, e->d_name))
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
