/*
 * core/state_copy.c: a copy of a state folder to another file system, for the upgrade
 * (core/state_move.c) when rename(2) cannot move it (EXDEV: a .git file pointing elsewhere).
 *
 * The tree is arborinth's own (state.db, caches, layers the daemons wrote, home folders), but
 * layers and homes hold what boxes made: nothing is followed (symbolic links are copied as
 * links, every open is O_NOFOLLOW beneath a folder opened the same way). Copied: folders,
 * regular files (content, mode, user.* extended attributes such as the layer's opaque and tree
 * marks, times), symbolic links, 0/0 character devices (the layer's whiteouts) and FIFOs.
 * Sockets (a daemon's, in run/) are not state and are left out. Hard links become copies.
 * Then the copy is checked against the source (type, mode, size, content, link target).
 */
#include "core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static int copy_xattrs(int from, int to)
{
	char names[4096], value[4096];
	ssize_t n = flistxattr(from, names, sizeof(names));

	if (n < 0)
		return errno == ENOTSUP ? 0 : -errno;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		ssize_t v;

		if (strncmp(names + i, "user.", 5))
			continue;
		v = fgetxattr(from, names + i, value, sizeof(value));
		if (v < 0 || fsetxattr(to, names + i, value, (size_t)v, 0) < 0)
			return -errno;
	}
	return 0;
}

static int copy_dir(int from, int to);

static int copy_entry(int from, const char *fname, int to, const char *name, const struct stat *st)
{
	struct timespec times[2] = {st->st_atim, st->st_mtim};
	char target[4096];
	int in = -1, out = -1, rc = 0;
	ssize_t n;

	switch (st->st_mode & S_IFMT) {
	case S_IFDIR:
		if (mkdirat(to, name, 0700) < 0)
			return -errno;
		in = openat(from, fname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		out = openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = in < 0 || out < 0 ? -errno : copy_dir(in, out);
		break;
	case S_IFREG:
		in = openat(from, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		out = in < 0 ? -1
			     : openat(to, name,
				      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		rc = in < 0 || out < 0 ? -errno : util_copy_fd(out, in);
		break;
	case S_IFLNK:
		n = readlinkat(from, fname, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlinkat(target, to, name) < 0 ? -errno : 0;
	case S_IFCHR:
		if (st->st_rdev != makedev(0, 0))
			return -EPERM;
		return mknodat(to, name, S_IFCHR, makedev(0, 0)) < 0 ? -errno : 0;
	case S_IFIFO:
		return mkfifoat(to, name, st->st_mode & 07777) < 0 ? -errno : 0;
	default:
		return 0; /* a socket: runtime, not state */
	}
	rc = rc ?: copy_xattrs(in, out);
	if (rc == 0 && (fchmod(out, st->st_mode & 07777) < 0 || futimens(out, times) < 0))
		rc = -errno;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

static int copy_dir(int from, int to)
{
	int fd = dup(from);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while (rc == 0 && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		rc = fstatat(from, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
			 ? -errno
			 : copy_entry(from, e->d_name, to, e->d_name, &st);
	}
	closedir(d);
	return rc;
}

/* Whether the files at a and b (open, regular) hold the same bytes. */
static bool same_content(int a, int b)
{
	char x[65536], y[65536];

	for (;;) {
		ssize_t n = read(a, x, sizeof(x)),
			m = n > 0 ? read(b, y, (size_t)n) : read(b, y, 1);

		if (n < 0 || m != (n > 0 ? n : 0) || (n > 0 && memcmp(x, y, (size_t)n)))
			return false;
		if (n == 0)
			return true;
	}
}

static int verify_dir(int from, int to);

static int verify_entry(int from, const char *fname, int to, const char *name, const struct stat *s)
{
	char ta[4096], tb[4096];
	struct stat c;
	int a = -1, b = -1, rc = 0;
	ssize_t n, m;

	if (S_ISSOCK(s->st_mode))
		return 0;
	if (fstatat(to, name, &c, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (s->st_mode & S_IFMT) != (c.st_mode & S_IFMT) ||
	    (!S_ISLNK(s->st_mode) && (s->st_mode & 07777) != (c.st_mode & 07777)))
		return -EIO;
	if (S_ISLNK(s->st_mode)) {
		n = readlinkat(from, fname, ta, sizeof(ta));
		m = readlinkat(to, name, tb, sizeof(tb));
		return n >= 0 && n == m && !memcmp(ta, tb, (size_t)n) ? 0 : -EIO;
	}
	if (!S_ISDIR(s->st_mode) && !S_ISREG(s->st_mode))
		return 0;
	if (S_ISREG(s->st_mode) && s->st_size != c.st_size)
		return -EIO;
	a = openat(from, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	b = openat(to, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (a < 0 || b < 0)
		rc = -EIO;
	else
		rc = S_ISDIR(s->st_mode) ? verify_dir(a, b) : same_content(a, b) ? 0 : -EIO;
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	return rc;
}

static int verify_dir(int from, int to)
{
	int fd = dup(from);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	while (rc == 0 && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		rc = fstatat(from, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
			 ? -EIO
			 : verify_entry(from, e->d_name, to, e->d_name, &st);
	}
	closedir(d);
	return rc;
}

int core_state_copy(const char *from_dir, const char *name, const char *to_dir, const char *to_name)
{
	int from = open(from_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int to = open(to_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int rc;

	if (from < 0 || to < 0) {
		rc = -errno;
		goto out;
	}
	if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		goto out;
	}
	rc = copy_entry(from, name, to, to_name, &st);
	rc = rc ?: verify_entry(from, name, to, to_name, &st);
out:
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	return rc;
}
