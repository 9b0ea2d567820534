/*
 * fs/disk.c: the workspace's disk budget and the filesystem's reserve.
 *
 * What a workspace uses is what its upper layer and gitdir hold: for each regular file the
 * larger of its size and its allocation (st_blocks), so a sparse file counts at its size and
 * a file allocated past its end (fallocate KEEP_SIZE) at its allocation; for directories their
 * allocation, one block at least (tmpfs reports none), for symlinks their allocation; a file
 * with several names counts once. The sum is taken by
 * walking both trees when the view is mounted, then kept as the daemon changes files: the
 * node's charge is re-read (fstat) after every write, fallocate, truncate, copy-up and new
 * name in a directory, and given back when the last name goes.
 *
 * An operation that would make a file grow is refused with ENOSPC when the workspace would
 * go over its budget, or when the filesystem holding the layer has less free space than the
 * reserve (so that the audit database, the end checkpoint and other workspaces can always be
 * written); so is a new name (create, mkdir, mknod, symlink, link), counted as one block.
 * Writes inside a file's size never grow it and are always let through. Refusals
 * are audited as "disk-full" rows, one a second at most: the first refusal of a second is
 * recorded at once, the rest are counted into the next row.
 */
#include "fs/fs_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "audit/audit.h"

#define DEPTH_MAX      512	     /* as reconcile.c */
#define REFUSAL_NS     1000000000LL  /* one disk-full row a second at most */
#define FREE_CHECK_NS  100000000LL   /* statvfs at most every 100 ms */
#define RESERVE_MIN    (16LL << 20)  /* the reserve: 2% of the filesystem, */
#define RESERVE_MAX    (512LL << 20) /* within these bounds */
#define REASON_BUDGET  1	     /* a disk-full row's mode: over the budget */
#define REASON_RESERVE 2	     /* the filesystem's free space is below the reserve */
#define ENTRY_BYTES    4096	     /* what a new name is taken to cost */

static int walk(int dirfd, int depth, int64_t *sum)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (depth > DEPTH_MAX) {
		close(dirfd);
		return 0;
	}
	d = fdopendir(dirfd);
	if (!d) {
		rc = -errno;
		close(dirfd);
		return rc;
	}
	while (rc == 0 && (e = readdir(d))) {
		struct stat st;
		int fd;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (S_ISDIR(st.st_mode)) {
			*sum += fs_disk_charge_of(&st);
			fd = openat(dirfd, e->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				rc = walk(fd, depth + 1, sum);
		} else {
			/* Each name takes its share: a file with several counts once in all. */
			*sum += fs_disk_charge_of(&st) / (st.st_nlink ? (int64_t)st.st_nlink : 1);
		}
	}
	closedir(d);
	return rc;
}

/*
 * run/disk-used, beside the pidfile: "USED LAYER_DEV LAYER_INO GITDIR_INO", written at a clean
 * unmount and taken (removed) by the next mount, which then need not walk the trees. A rewind
 * swaps in a new layer directory (another inode): the file then does not count.
 */
static char *saved_path(const struct fs *fs)
{
	const char *pidfile = fs->cfg ? fs->cfg->pidfile : NULL, *slash;

	slash = pidfile ? strrchr(pidfile, '/') : NULL;
	return slash ? util_asprintf("%.*s/disk-used", (int)(slash - pidfile), pidfile) : NULL;
}

static void ids(const struct fs *fs, unsigned long long v[3])
{
	struct stat a, b;

	v[0] = v[1] = v[2] = 0;
	if (fstat(fs->layer_fd, &a) == 0 && fstat(fs->gitdir_fd, &b) == 0) {
		v[0] = (unsigned long long)a.st_dev;
		v[1] = (unsigned long long)a.st_ino;
		v[2] = (unsigned long long)b.st_ino;
	}
}

/* The usage the last clean unmount saved, if it is this layer's; the file is removed. */
static bool load_saved(struct fs *fs, int64_t *used)
{
	char *path = saved_path(fs), *buf = NULL;
	unsigned long long want[3], got[3];
	long long u;
	size_t len;
	bool ok = false;

	if (path && util_read_file(path, &buf, &len) == 0) {
		ids(fs, want);
		ok = sscanf(buf, "%lld %llu %llu %llu", &u, &got[0], &got[1], &got[2]) == 4 &&
		     u >= 0 && want[1] && !memcmp(want, got, sizeof(want));
		if (ok)
			*used = u;
		/* Taken: a crash of this run must not leave it to the next. */
		(void)unlink(path);
	}
	util_err_clear();
	free(buf);
	free(path);
	return ok;
}

void fs_disk_save(struct fs *fs)
{
	unsigned long long v[3];
	char *path, *line;

	if (!fs->disk_track)
		return;
	path = saved_path(fs);
	ids(fs, v);
	line = util_asprintf("%lld %llu %llu %llu\n", (long long)fs->disk_used, v[0], v[1], v[2]);
	if (path && line && v[1] && util_write_file(path, line, strlen(line), 0600) < 0)
		util_err_clear();
	free(line);
	free(path);
}

/* The bytes the regular files under dir_path_fd (an O_PATH directory) hold. */
static int usage_of(int pathfd, int64_t *sum)
{
	int fd = fs_upper_reopen(pathfd, O_RDONLY | O_DIRECTORY);

	return fd < 0 ? fd : walk(fd, 0, sum);
}

int fs_disk_parse(const char *s, int64_t *bytes)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	long long v;

	if (!strcmp(s, "none")) {
		*bytes = 0;
		return 0;
	}
	if (*s < '0' || *s > '9')
		goto bad; /* strtoll would take spaces and signs */
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		goto bad;
	if (*end) {
		u = strchr(units, *end == 'k' ? 'K' : *end);
		if (!u || !*u || (end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB")))
			goto bad;
		for (const char *x = units; x <= u; x++) {
			if (v > INT64_MAX / 1024)
				goto bad;
			v *= 1024;
		}
	}
	*bytes = v;
	return 0;
bad:
	return util_err(-EINVAL, "--disk '%s': expected a size such as 500M or 10G, or none", s);
}

int fs_disk_init(struct fs *fs, int64_t budget)
{
	struct statvfs sv;
	int64_t used = 0, start = util_now_ns(), total, avail;
	int rc;

	if (fstatvfs(fs->layer_fd, &sv) < 0)
		return -errno;
	total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	fs->disk_reserve = total / 50;
	if (fs->disk_reserve < RESERVE_MIN)
		fs->disk_reserve = RESERVE_MIN;
	if (fs->disk_reserve > RESERVE_MAX)
		fs->disk_reserve = RESERVE_MAX;
	fs->disk_free = avail;
	fs->disk_free_ns = start;
	fs->disk_track = budget != 0;
	if (!fs->disk_track)
		return 0;
	fs->disk_saved = load_saved(fs, &used);
	rc = fs->disk_saved ? 0 : usage_of(fs->layer_fd, &used);
	if (rc == 0 && !fs->disk_saved)
		rc = usage_of(fs->gitdir_fd, &used);
	if (rc < 0)
		return util_err(rc, "cannot measure the upper layer: %s", strerror(-rc));
	fs->disk_used = used;
	/* The default: what is used plus half of what is free. */
	fs->disk_budget = budget > 0 ? budget : used + avail / 2;
	fs->disk_walk_ns = util_now_ns() - start;
	return 0;
}

/* The filesystem's free space, read again when the last reading is old (fs->lock held). */
static int64_t free_space(struct fs *fs)
{
	int64_t now = util_now_ns();
	struct statvfs sv;

	if (now - fs->disk_free_ns >= FREE_CHECK_NS && fstatvfs(fs->layer_fd, &sv) == 0) {
		fs->disk_free = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
		fs->disk_free_ns = now;
	}
	return fs->disk_free;
}

/* Queues the pending refusals' row (fs->lock held). */
static void refusal_row(struct fs *fs)
{
	struct fs_refusal *r = &fs->refusal;
	struct audit_event ev = {.op = "disk-full",
				 .time_ns = r->t_first,
				 .result = ENOSPC,
				 .pid = r->pid,
				 .size = r->len,
				 .count = r->count,
				 .off_lo = r->off,
				 .off_hi = r->off + r->len,
				 .mode = (uint32_t)r->reason};

	if (r->count == 0)
		return;
	fs->refusal_last_ns = util_now_ns();
	fs_record_event(fs, &ev, r->path);
	*r = (struct fs_refusal){0};
}

/* A refusal of a's operation on n (or n/name, a new name there). */
static void refused(struct fs *fs, struct fs_node *n, const char *name, const struct fs_disk_ask *a,
		    int reason)
{
	struct fs_refusal *r = &fs->refusal;

	if (r->count++ == 0) {
		r->t_first = util_now_ns();
		r->pid = a->pid;
		r->off = a->off;
		r->len = a->len;
		r->reason = reason;
		r->path = fs_node_path(fs, n, name);
	}
	if (util_now_ns() - fs->refusal_last_ns >= REFUSAL_NS)
		refusal_row(fs);
}

void fs_disk_sweep(struct fs *fs, int64_t min_age)
{
	if (fs->refusal.count &&
	    (min_age == 0 || util_now_ns() - fs->refusal_last_ns >= REFUSAL_NS))
		refusal_row(fs);
}

/* How many bytes a's operation may add to n's charge at most. */
static int64_t growth(struct fs *fs, struct fs_node *n, const struct fs_disk_ask *a)
{
	int64_t have = n->fd >= 0 ? n->charge : 0, end = a->off + a->len, size = 0;

	if (a->mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE))
		return 0;
	if (n->fd < 0 && fs_lower_size(fs, n, &size) == 0 && size > end)
		end = size; /* a copy-up comes first */
	if (a->mode & FALLOC_FL_INSERT_RANGE)
		end = (have > size ? have : size) + a->len;
	return end > have ? end - have : 0;
}

/* 0, or -ENOSPC (refusal counted) when grow more bytes do not fit. */
static int fits(struct fs *fs, struct fs_node *n, const char *name, const struct fs_disk_ask *a,
		int64_t grow)
{
	if (grow <= 0)
		return 0;
	if (fs->disk_track && fs->disk_used + grow > fs->disk_budget) {
		refused(fs, n, name, a, REASON_BUDGET);
		return -ENOSPC;
	}
	if (free_space(fs) - grow < fs->disk_reserve) {
		refused(fs, n, name, a, REASON_RESERVE);
		return -ENOSPC;
	}
	fs->disk_free -= grow; /* until the next statvfs */
	return 0;
}

int fs_disk_check(struct fs *fs, struct fs_node *n, const struct fs_disk_ask *a)
{
	int64_t grow;

	if (!n || !S_ISREG(n->type))
		return 0;
	grow = growth(fs, n, a);
	/* Without a budget n->charge is not kept: the request's own length bounds it. */
	if (!fs->disk_track && grow > a->len)
		grow = a->len;
	return fits(fs, n, NULL, a, grow);
}

int fs_disk_check_new(struct fs *fs, pid_t pid, struct fs_node *p, const char *name)
{
	struct fs_disk_ask a = {.pid = pid, .len = ENTRY_BYTES};

	return p ? fits(fs, p, name, &a, ENTRY_BYTES) : 0;
}

void fs_disk_update(struct fs *fs, struct fs_node *n)
{
	struct stat st;
	int64_t c;

	if (!fs->disk_track || !n || n->fd < 0 || fstat(n->fd, &st) < 0)
		return;
	c = fs_disk_charge_of(&st);
	fs->disk_used += c - n->charge;
	n->charge = c;
}

void fs_disk_added(struct fs *fs, struct fs_node *n)
{
	if (fs->disk_track && n)
		fs->disk_used += n->charge;
}

void fs_disk_unlinked(struct fs *fs, struct fs_node *n)
{
	struct stat st;

	if (!fs->disk_track || !n || n->fd < 0)
		return;
	if (fstat(n->fd, &st) == 0 && st.st_nlink == 0) {
		fs->disk_used -= n->charge;
		n->charge = 0;
	}
}

void fs_disk_forget(struct fs *fs, struct fs_node *n)
{
	/* A file written after its last name went: its space goes with its last descriptor. */
	if (n->unlinked)
		fs_disk_unlinked(fs, n);
}
