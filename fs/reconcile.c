/*
 * fs/reconcile.c: after a crash, changes whose audit events were still queued or coalescing
 * in the killed daemon are found in the upper layer and recorded as "unattributed" rows
 * before the view is served again (the contract is audit_log_run_check() in audit.h).
 *
 * The upper layer (and the gitdir behind /.git) is walked without following links; every
 * entry whose ctime is at or after the moment from which events may be missing gets a row:
 * "unattributed" for an entry that is there (its st_mode, size of a regular file, mtime),
 * "unattributed-delete" for a whiteout. ctime, unlike mtime, cannot be set by the workload.
 * A rename shows as its new path (and a whiteout where the old path was in the base).
 */
#include "fs/fs_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"

#define DEPTH_MAX 512 /* deeper directories are not entered (each holds a descriptor) */

struct walk {
	struct fs *fs;
	int64_t since_ns;
	char *path; /* workspace-relative path of the directory being read */
	size_t len, cap;
};

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static int path_push(struct walk *w, const char *name)
{
	size_t n = strlen(name), need = w->len + n + 2;

	if (need > w->cap) {
		char *p = realloc(w->path, need * 2);

		if (!p)
			return -ENOMEM;
		w->path = p;
		w->cap = need * 2;
	}
	if (w->len)
		w->path[w->len++] = '/';
	memcpy(w->path + w->len, name, n + 1);
	w->len += n;
	return 0;
}

static void path_pop(struct walk *w, size_t len)
{
	w->len = len;
	w->path[len] = '\0';
}

static void record(struct walk *w, const struct stat *st)
{
	bool deleted = fs_upper_is_whiteout(st);
	struct audit_event ev = {
	    .time_ns = ts_ns(&st->st_ctim),
	    .op = deleted ? "unattributed-delete" : "unattributed",
	    .path = w->path,
	    .size = S_ISREG(st->st_mode) ? st->st_size : -1,
	    .mode = deleted ? 0 : st->st_mode,
	    .mtime_ns = deleted ? 0 : ts_ns(&st->st_mtim),
	};

	/* Only fails once the database has been unwritable for long: the gap row says so. */
	(void)audit_log_append(w->fs->audit, &ev);
}

static int walk_dir(struct walk *w, int dirfd, int depth);

static int walk_entry(struct walk *w, int dirfd, const char *name, int depth)
{
	size_t len = w->len;
	struct stat st;
	int rc, fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = path_push(w, name);
	if (rc < 0)
		return rc;
	if (ts_ns(&st.st_ctim) >= w->since_ns)
		record(w, &st);
	if (S_ISDIR(st.st_mode) && depth < DEPTH_MAX) {
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -errno : walk_dir(w, fd, depth + 1);
	}
	path_pop(w, len);
	return rc;
}

/* Reads dirfd (and closes it). */
static int walk_dir(struct walk *w, int dirfd, int depth)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(dirfd);
		return -errno;
	}
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = walk_entry(w, dirfd, de->d_name, depth);
	if (rc == 0 && errno)
		rc = -errno;
	closedir(d);
	return rc;
}

static int walk_root(struct walk *w, int root_fd, const char *prefix)
{
	int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	path_pop(w, 0);
	if (*prefix && path_push(w, prefix) < 0) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	return fd < 0 ? -errno : walk_dir(w, fd, 0);
}

int fs_reconcile(struct fs *fs)
{
	struct walk w = {.fs = fs};
	int rc;

	if (!fs->audit)
		return 0;
	rc = audit_log_run_check(fs->audit, &w.since_ns);
	if (rc == 0 && w.since_ns) {
		w.path = calloc(1, 256);
		w.cap = w.path ? 256 : 0;
		rc = w.path ? walk_root(&w, fs->layer_fd, "") : -ENOMEM;
		if (rc == 0)
			rc = walk_root(&w, fs->gitdir_fd, ".git");
		if (rc < 0)
			util_err(rc, "cannot reconcile the audit with the upper layer: %s",
				 strerror(-rc));
	}
	if (rc == 0)
		rc = audit_log_run_begin(fs->audit);
	free(w.path);
	return rc;
}
