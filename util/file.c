/* util/file.c: file and directory helpers that never follow symlinks they did not expect. */
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/random.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int util_mkdir_p(const char *path, mode_t mode)
{
	char *buf = strdup(path);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (char *p = buf + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST) {
			rc = util_err(-errno, "cannot create directory %s: %s", buf,
				      strerror(errno));
			goto out;
		}
		*p = c;
		if (c == '\0')
			break;
	}
out:
	free(buf);
	return rc;
}

static int rm_at(int dirfd, const char *name, const struct stat *parent);

/*
 * Whether dirfd/name, a directory, is another mount than its parent's (another file system,
 * or a bind mount of the same one): rm -rf stays on one, as `rm --one-file-system` does, so
 * that nothing mounted into a folder being removed is emptied through it.
 */
static bool mount_root(int dirfd, const char *name, const struct stat *st,
		       const struct stat *parent)
{
	struct statx sx;

	if (parent && st->st_dev != parent->st_dev)
		return true;
#ifdef STATX_ATTR_MOUNT_ROOT
	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) == 0 &&
	    (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return true;
#else
	(void)dirfd, (void)name, (void)sx;
#endif
	return false;
}

static int rm_children(int dfd, const struct stat *self)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = rm_at(dirfd(d), de->d_name, self);
		if (rc < 0)
			break;
	}
	closedir(d);
	return rc;
}

/*
 * A directory of ours whose mode lets not even us read it (overlayfs leaves work/work at mode
 * 0, owned by the user who mounted it in a user namespace): made 0700 through a handle that
 * names that very directory (O_PATH, no link followed), then opened. Root never needs this.
 */
static int open_unreadable_dir(int dirfd, const char *name)
{
	int path = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd = -1;
	char proc[64];

	if (path < 0)
		return -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path);
	if (chmod(proc, 0700) == 0)
		fd = openat(path, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		errno = EACCES;
	close(path);
	return fd;
}

/* parent: the folder's stat (NULL for the top, whose parent is the caller's business). */
static int rm_at(int dirfd, const char *name, const struct stat *parent)
{
	struct stat st;
	int fd;
	int rc;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (mount_root(dirfd, name, &st, parent))
		return -EXDEV;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES)
		fd = open_unreadable_dir(dirfd, name);
	if (fd < 0)
		return -errno;
	/* A directory we cannot list (mode 0) is still ours to remove. */
	(void)fchmod(fd, 0700);
	rc = rm_children(fd, &st);
	if (rc < 0)
		return rc;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int util_rm_rf_at(int dirfd, const char *name)
{
	return rm_at(dirfd, name, NULL);
}

int util_rm_rf(const char *path)
{
	return util_rm_rf_at(AT_FDCWD, path);
}

int util_rename_dir_noreplace(int olddir, const char *old, int newdir, const char *new)
{
	struct stat st;

	if (renameat2(olddir, old, newdir, new, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* EINVAL is also "new inside old": the plain rename says so again. */
	if (fstatat(newdir, new, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	if (errno != ENOENT)
		return -errno;
	return renameat(olddir, old, newdir, new) < 0 ? -errno : 0;
}

int util_read_file(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *buf = NULL;
	int rc = 0;

	*out = NULL;
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	buf = NULL;
	if (len)
		*len = n;
out:
	free(buf);
	close(fd);
	return rc;
}

int util_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int util_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	char *tmp = util_asprintf("%s.tmp.%d", path, (int)getpid());
	int fd = -1;
	int rc;

	if (!tmp)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = util_write_all(fd, data, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	fd = -1;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
out:
	if (rc < 0) {
		int saved = errno;

		unlink(tmp);
		errno = saved;
		util_err(rc, "cannot write %s: %s", path, strerror(-rc));
	}
	free(tmp);
	return rc;
}

int util_write_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		       uid_t uid, gid_t gid)
{
	unsigned char rnd[6];
	char tmp[NAME_MAX + 1];
	int fd = -1, rc, n;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return util_err(-EIO, "cannot write %s: no random bytes", name);
	n = snprintf(tmp, sizeof(tmp), ".%.200s.arb-%02x%02x%02x%02x%02x%02x", name, rnd[0], rnd[1],
		     rnd[2], rnd[3], rnd[4], rnd[5]);
	if (n < 0 || (size_t)n >= sizeof(tmp) || strchr(name, '/'))
		return util_err(-EINVAL, "cannot write %s: bad name", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return util_err(-errno, "cannot write %s: %s", name, strerror(errno));
	rc = fchmod(fd, mode) < 0 ? -errno : 0;
	if (rc == 0 && uid != (uid_t)-1 && fchown(fd, uid, gid) < 0)
		rc = -errno;
	rc = rc ?: util_write_all(fd, data, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		rc = -errno;
	if (rc < 0) {
		unlinkat(dirfd, tmp, 0);
		return util_err(rc, "cannot write %s: %s", name, strerror(-rc));
	}
	fsync(dirfd);
	return 0;
}

int util_append_line_once(const char *path, const char *line)
{
	char *buf = NULL;
	size_t len = 0;
	size_t ll = strlen(line);
	int fd = -1;
	int rc = util_read_file(path, &buf, &len);

	if (rc < 0 && rc != -ENOENT)
		return rc;
	for (char *p = buf; p && *p;) {
		char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n == ll && !memcmp(p, line, ll)) {
			rc = 0;
			goto out;
		}
		p = nl ? nl + 1 : p + n;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = 0;
	if (len > 0 && buf[len - 1] != '\n')
		rc = util_write_all(fd, "\n", 1);
	if (rc == 0)
		rc = util_write_all(fd, line, ll);
	if (rc == 0)
		rc = util_write_all(fd, "\n", 1);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int util_copy_fd(int dst, int src)
{
	char buf[65536];
	ssize_t r;

	if (ioctl(dst, FICLONE, src) == 0)
		return 0;
	for (;;) {
		r = copy_file_range(src, NULL, dst, NULL, 1 << 30, 0);
		if (r == 0)
			return 0;
		if (r < 0)
			break;
	}
	if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return -errno;
	while ((r = read(src, buf, sizeof(buf))) > 0) {
		int rc = util_write_all(dst, buf, (size_t)r);

		if (rc < 0)
			return rc;
	}
	return r < 0 ? -errno : 0;
}

char *util_which(const char *name)
{
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : ""), *found = NULL;

	for (char *save = NULL, *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *full = d[0] == '/' ? util_path_join(d, name) : NULL;
		struct stat st;

		if (full && stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
			found = full;
		else
			free(full);
	}
	free(dirs);
	return found;
}
