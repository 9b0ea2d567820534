/*
 * jail/diskguard.c: the box's disk guard. The box's tmp, cache and home (NAME/tmp, NAME/cache,
 * NAME/home) are bound into the box directly, not through the view, so the daemon's disk
 * budget and reserve (fs/disk.c) do not see what the box writes there. While the box runs, a
 * thread of the process that waits for it checks every POLL_MS the free space of the
 * filesystems holding the three folders (statvfs), and every WALK_MIN_MS or more (a walk's
 * cost times 100: about 1% of a core, at most WALK_MAX_MS apart, so up to 10% for a walk of
 * ENTRIES_MAX names) how much the three hold: always once at the start, then only with a
 * budget, or below the reserve (then every ten walks' cost). When a filesystem's
 * free space falls below the reserve the daemon keeps, or the three together hold more than the
 * workspace's disk budget (NAME/disk, given by jail_box_set_disk()), it stops the box as
 * --timeout does (SIGKILL to box-init, pid 1 of the box) and says why. What the box wrote
 * stays.
 *
 * The walk counts as fs/disk.c does (a regular file at the larger of its size and its
 * allocation, a file with several names once), follows no link, goes at most DEPTH_MAX deep
 * and looks at at most ENTRIES_MAX names: beyond, what it saw stands.
 */
#include "jail/box_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define POLL_MS	    50
#define WALK_MIN_MS 200
#define WALK_MAX_MS 2000
#define DEPTH_MAX   64
#define ENTRIES_MAX 200000
#define GROWTH_MIN  (1LL << 20)
/* The reserve, as fs/disk.c computes it: 2% of the filesystem, within these bounds. */
#define RESERVE_MIN (16LL << 20)
#define RESERVE_MAX (512LL << 20)

int jail_box_set_disk(struct jail_box *b, int64_t budget)
{
	if (budget < 0)
		return util_err(-EINVAL, "jail: a negative disk budget");
	b->disk_budget = budget;
	return 0;
}

static int64_t charge_of(const struct stat *st)
{
	int64_t alloc = (int64_t)st->st_blocks * 512;

	if (!S_ISREG(st->st_mode))
		return alloc;
	return st->st_size > alloc ? st->st_size : alloc;
}

/* Adds what dirfd (closed here) holds to *sum; *left: names still to look at. */
static void walk(int dirfd, int depth, int64_t *sum, long *left)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;

	if (!d) {
		close(dirfd);
		return;
	}
	while (*left > 0 && (e = readdir(d))) {
		struct stat st;
		int fd;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		(*left)--;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (!S_ISDIR(st.st_mode)) {
			*sum += charge_of(&st) / (st.st_nlink ? (int64_t)st.st_nlink : 1);
			continue;
		}
		*sum += charge_of(&st);
		if (depth >= DEPTH_MAX)
			continue;
		fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			walk(fd, depth + 1, sum, left);
	}
	closedir(d);
}

/* What the three hold; *most: the one that holds the most. */
static int64_t usage(const struct jail_diskguard *g, int *most)
{
	int64_t sum = 0, top = -1;
	long left = ENTRIES_MAX;

	for (int i = 0; i < 3; i++) {
		int fd = open(g->dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int64_t one = 0;

		if (fd >= 0)
			walk(fd, 0, &one, &left);
		if (one > top) {
			top = one;
			*most = i;
		}
		sum += one;
	}
	return sum;
}

static int64_t free_of(const char *dir, int64_t *reserve)
{
	struct statvfs sv;
	int64_t total;

	if (statvfs(dir, &sv) < 0)
		return -1;
	total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	*reserve = total / 50;
	if (*reserve < RESERVE_MIN)
		*reserve = RESERVE_MIN;
	if (*reserve > RESERVE_MAX)
		*reserve = RESERVE_MAX;
	return (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
}

int64_t jail_diskguard_fsize(const struct jail_box *b)
{
	const char *dirs[] = {b->tmp, b->cache_src, b->home_src};
	int64_t cap = 0;

	for (int i = 0; i < 3; i++) {
		int64_t reserve = 0, avail = free_of(dirs[i], &reserve);
		int64_t one = avail > reserve ? avail - reserve / 2 : avail / 2;

		if (avail >= 0 && (cap == 0 || one < cap))
			cap = one > 0 ? one : 1;
	}
	return cap;
}

static void trip(struct jail_diskguard *g, int why, int dir, int64_t n)
{
	g->tripped = why;
	g->dir = dir;
	g->n = n;
	g->stop_box(g->stop_ctx);
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * One look; true when it tripped. Below the reserve, the box is stopped only if its tmp,
 * cache and home grew by more than GROWTH_MIN since the guard's first look (the mount points
 * bwrap makes in the home are not growth): the view's own writes are the daemon's to refuse,
 * and it lets the free space dip a little below the reserve while its cached figure is fresh.
 * final: the box's command is over; every walk that may trip is due.
 */
static bool look(struct jail_diskguard *g, bool final)
{
	int64_t now = util_now_ns(), reserve = 0;
	int below = -1;

	for (int i = 0; i < 3 && below < 0; i++) {
		int64_t r = 0, avail = free_of(g->dirs[i], &r);

		if (avail >= 0 && avail < g->floor[i]) {
			below = i;
			reserve = r;
		}
	}
	if (g->base < 0 || (g->budget > 0 && (final || now >= g->next_walk)) ||
	    (below >= 0 && (final || now >= g->next_below))) {
		int most = 0;
		int64_t used = usage(g, &most), took = util_now_ns() - now;

		if (g->base < 0)
			g->base = used;
		if (g->budget > 0 && used > g->budget) {
			trip(g, JAIL_DISK_BUDGET, most, used);
			return true;
		}
		if (below >= 0 && used > g->base + GROWTH_MIN) {
			trip(g, JAIL_DISK_RESERVE, below, reserve);
			return true;
		}
		g->next_walk =
		    now + clamp(took * 100, WALK_MIN_MS * 1000000LL, WALK_MAX_MS * 1000000LL);
		g->next_below = now + clamp(took * 10, 0, WALK_MAX_MS * 1000000LL);
	}
	return false;
}

static void *guard_main(void *arg)
{
	struct jail_diskguard *g = arg;
	struct pollfd p = {.fd = g->stop[0], .events = POLLIN};

	while (!look(g, false))
		if (poll(&p, 1, POLL_MS) > 0)
			break; /* stopped */
	return NULL;
}

int jail_diskguard_start(struct jail_diskguard *g, const struct jail_box *b,
			 void (*stop_box)(void *ctx), void *ctx)
{
	sigset_t all, old;
	int rc;

	*g = (struct jail_diskguard){
	    .stop = {-1, -1}, .dir = -1, .stop_box = stop_box, .stop_ctx = ctx, .base = -1};
	g->dirs[0] = b->tmp;
	g->dirs[1] = b->cache_src;
	g->dirs[2] = b->home_src;
	g->budget = b->disk_budget;
	for (int i = 0; i < 3; i++) {
		int64_t reserve = 0, avail = free_of(g->dirs[i], &reserve);

		/* Below the reserve already: the box may still use half of what is left. */
		g->floor[i] = avail < 0 ? 0 : avail >= reserve ? reserve : avail / 2;
	}
	if (pipe2(g->stop, O_CLOEXEC) < 0)
		return util_err(-errno, "cannot create a pipe: %s", strerror(errno));
	/* The box's signals (forwarding, --timeout) stay with the thread that waits for it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&g->thread, NULL, guard_main, g);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		close(g->stop[0]);
		close(g->stop[1]);
		g->stop[0] = g->stop[1] = -1;
		return util_err(rc, "cannot start the disk guard: %s", strerror(-rc));
	}
	g->running = true;
	return 0;
}

void jail_diskguard_stop(struct jail_diskguard *g)
{
	if (!g->running)
		return;
	close(g->stop[1]); /* the thread's poll sees the end of the pipe */
	pthread_join(g->thread, NULL);
	/* A write that outran the poll, by a command that ended before the next look. */
	if (!g->tripped && look(g, true))
		g->late = true;
	close(g->stop[0]);
	g->stop[0] = g->stop[1] = -1;
	g->running = false;
}

static const char *ended(const struct jail_diskguard *g)
{
	return g->late ? "stopped as its command ended" : "stopped";
}

int jail_diskguard_error(const struct jail_diskguard *g)
{
	static const char *const names[] = {"tmp", "cache", "home"};
	const char *dir = g->dirs[g->dir < 0 ? 0 : g->dir];

	if (g->tripped == JAIL_DISK_RESERVE)
		return util_err(-ENOSPC,
				"--disk: the disk holding %s (the box's %s) fell below its reserve "
				"of %lld MiB; the box was %s; what it wrote stays (rm -rf "
				"'%s'/* or `workspace delete` frees it)",
				dir, names[g->dir], (long long)(g->n >> 20), ended(g), dir);
	return util_err(-ENOSPC,
			"--disk: the box filled %s (its %s) past the workspace's budget of %lld "
			"MiB (its tmp, cache and home held %lld MiB); the box was %s; what it "
			"wrote stays (rm -rf '%s'/* or `workspace delete` frees it)",
			dir, names[g->dir], (long long)(g->budget >> 20), (long long)(g->n >> 20),
			ended(g), dir);
}
