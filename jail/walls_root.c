/*
 * jail/walls_root.c: root's box. bwrap maps the box's user to the caller's, so a box started
 * by root acts on host files as root's uid (without capabilities): whatever only root may read
 * (owner root, or group root, and no read for others: /etc/shadow, SSH host keys, TLS keys) it
 * could read through the system folders it shows. Those files are hidden: every entry of the
 * configuration folders the box shows (/etc, /opt) that others may not read and that root's
 * uid or group may, gets an empty mount over it (walls.c's masks).
 *
 * Finding them reads each folder (about 1,400 entries in a usual /etc); the result is cached
 * in the origin's state directory with the change and modification times of every folder read,
 * and reused while none of them changed (an entry added, removed, renamed, a folder's mode
 * or owner changed) and the cache is younger than ROOT_CACHE_MAX_AGE: a start stats the
 * folders (about 150) instead of every entry. The program folders (/usr, /bin, /sbin, /lib*)
 * are the package manager's and hold no host secrets; /sys is the kernel's, with its own modes.
 */
#include "jail/box_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The folders scanned: configuration, where a host keeps its keys. */
static const char *const root_scan[] = {"/etc", "/opt"};

/* A cache older than this is rescanned (bounds how long a mode change in place goes unseen). */
#define ROOT_CACHE_MAX_AGE 300
#define ROOT_CACHE_NAME	   "walls-root-only"
#define ROOT_SCAN_DEPTH	   32

struct root_scan {
	struct jail_strv dirs;	 /* "MTIME CTIME PATH" of every folder read */
	struct jail_strv hidden; /* root-only paths */
	bool uncachable;	 /* a name with a newline: not written to the cache */
};

/* Others may not read it (or enter it), root's uid or group may. */
static bool root_only(const struct stat *st)
{
	bool others = (st->st_mode & S_IROTH) && (!S_ISDIR(st->st_mode) || (st->st_mode & S_IXOTH));

	return !others && (st->st_uid == 0 || st->st_gid == 0);
}

static void dir_line(struct root_scan *s, const struct stat *st, const char *path)
{
	jail_strv_pushf(&s->dirs, "%lld.%09ld %lld.%09ld %s", (long long)st->st_mtim.tv_sec,
			st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec,
			path);
}

/* Reads folder fd (path `path`, on device dev); closes fd. */
static void scan_dir(struct root_scan *s, int fd, const char *path, dev_t dev, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	struct stat st;

	if (!d) {
		close(fd);
		return;
	}
	if (fstat(fd, &st) == 0)
		dir_line(s, &st, path);
	while ((e = readdir(d))) {
		char *sub;
		int cfd;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    S_ISLNK(st.st_mode))
			continue;
		if (!root_only(&st) &&
		    (!S_ISDIR(st.st_mode) || st.st_dev != dev || depth >= ROOT_SCAN_DEPTH))
			continue;
		sub = util_asprintf("%s/%s", path, e->d_name);
		if (!sub) {
			s->hidden.oom = true;
			break;
		}
		s->uncachable |= strchr(e->d_name, '\n') != NULL;
		if (root_only(&st)) {
			jail_strv_take(&s->hidden, sub);
			continue;
		}
		cfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd >= 0)
			scan_dir(s, cfd, sub, dev, depth + 1);
		free(sub);
	}
	closedir(d);
}

static int scan(struct root_scan *s)
{
	for (size_t i = 0; i < ARB_ARRAY_LEN(root_scan); i++) {
		int fd = open(root_scan[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;

		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		scan_dir(s, fd, root_scan[i], st.st_dev, 0);
	}
	return jail_strv_ok(&s->dirs) < 0 || jail_strv_ok(&s->hidden) < 0
		   ? util_err(-ENOMEM, "out of memory")
		   : 0;
}

/* The whole of a regular file of ours (root's, mode 0600) at dirfd/name, or NULL. */
static char *cache_read(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	ssize_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 077) && st.st_size < (1 << 24) &&
	    time(NULL) - st.st_mtim.tv_sec <= ROOT_CACHE_MAX_AGE &&
	    (buf = malloc((size_t)st.st_size + 1))) {
		got = read(fd, buf, (size_t)st.st_size);
		if (got != st.st_size) {
			free(buf);
			buf = NULL;
		} else {
			buf[got] = '\0';
		}
	}
	close(fd);
	return buf;
}

/* The cached list when every folder it read is unchanged and it is recent; false otherwise. */
static bool cache_load(int dirfd, struct root_scan *s)
{
	char *buf = cache_read(dirfd, ROOT_CACHE_NAME), *save = NULL;
	bool ok = true;

	if (!buf)
		return false;
	for (char *line = strtok_r(buf, "\n", &save); line && ok;
	     line = strtok_r(NULL, "\n", &save)) {
		char *p;
		struct stat st;
		char want[96];

		if (line[0] == 'H' && line[1] == ' ') {
			jail_strv_push(&s->hidden, line + 2);
			continue;
		}
		p = line[0] == 'D' && line[1] == ' ' ? strchr(line + 2, ' ') : NULL;
		p = p ? strchr(p + 1, ' ') : NULL;
		if (!p || lstat(p + 1, &st) < 0) {
			ok = false;
			break;
		}
		snprintf(want, sizeof(want), "%lld.%09ld %lld.%09ld", (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
		ok = (size_t)(p - (line + 2)) == strlen(want) &&
		     !strncmp(line + 2, want, strlen(want));
	}
	free(buf);
	return ok && jail_strv_ok(&s->hidden) == 0;
}

/*
 * Best effort: a cache that cannot be written only costs the next start a scan. A new file
 * (O_EXCL, random name) renamed into place: the folder may be another user's project.
 */
static void cache_store(int dirfd, const struct root_scan *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = s->uncachable ? NULL : open_memstream(&buf, &len);

	if (!f)
		return;
	for (size_t i = 0; i < s->dirs.n; i++)
		fprintf(f, "D %s\n", s->dirs.v[i]);
	for (size_t i = 0; i < s->hidden.n; i++)
		fprintf(f, "H %s\n", s->hidden.v[i]);
	if (fclose(f) == 0 &&
	    util_write_file_at(dirfd, ROOT_CACHE_NAME, buf, len, 0600, (uid_t)-1, (gid_t)-1) < 0)
		util_err_clear();
	free(buf);
}

int jail_box_root_only(struct jail_box *b, size_t n)
{
	struct root_scan s = {0};
	char *cache;
	bool cached;
	int rc = 0, dirfd;

	if (geteuid() != 0)
		return 0;
	cache = util_path_join(b->state_dir, ROOT_CACHE_NAME);
	if (!cache)
		return util_err(-ENOMEM, "out of memory");
	dirfd = open(b->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cached = dirfd >= 0 && cache_load(dirfd, &s);
	if (!cached) {
		jail_strv_clear(&s.hidden);
		rc = scan(&s);
		if (rc == 0 && dirfd >= 0)
			cache_store(dirfd, &s);
	}
	if (dirfd >= 0)
		close(dirfd);
	for (size_t i = 0; i < s.hidden.n && rc == 0; i++)
		rc = jail_box_mask(b, n, s.hidden.v[i], "only root may read it on the host");
	if (rc == 0)
		jail_strv_pushf(
		    &b->notes,
		    "caller is root: the box keeps uid 0 (the host's root, without "
		    "capabilities); the %zu entries of /etc and /opt that only root may read "
		    "are hidden (list %s in %s)",
		    s.hidden.n, cached ? "cached" : "made now", cache);
	jail_strv_clear(&s.dirs);
	jail_strv_clear(&s.hidden);
	free(cache);
	return rc < 0 ? rc : jail_strv_ok(&b->notes);
}
