/*
 * fs/house.c: the daemon's housekeeping thread.
 *
 * Every quarter second, or when woken:
 * - pending handle-less writes a second old become audit events (record.c);
 * - descriptors: every upper node holds an O_PATH descriptor for as long as the kernel knows
 *   the inode, and the kernel forgets inodes only under memory pressure. A workload that makes
 *   more files than RLIMIT_NOFILE allows (npm install, on a machine with a low hard limit)
 *   would then get EMFILE from the view. Past three quarters of the limit, the thread asks the
 *   kernel to drop the dentries of upper files nobody has open (FUSE_NOTIFY_INVAL_ENTRY);
 *   their inodes go, FORGET follows and the nodes and descriptors with it. Looking them up
 *   again finds them in the upper layer as before.
 *
 * Notifications are sent without fs->lock: the kernel may wait for a request in the same
 * directory, whose handler may be waiting for that lock.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SWEEP_AGE_NS 1000000000LL /* pending writes are recorded within about this long */
#define PERIOD_MS    250
#define TRIM_BATCH   4096 /* notifications per pass, at most */

struct victim {
	fuse_ino_t parent;
	char *name;
};

static size_t total_fds(const struct fs *fs)
{
	return fs->nupper_fds + fs->ndata_fds;
}

/* Past fs->fd_high the thread is woken again every this many new descriptors. */
#define WAKE_STEP 32

void fs_house_fds_changed(struct fs *fs)
{
	size_t n = total_fds(fs);

	/*
	 * At the mark, and again every WAKE_STEP beyond it: a burst (an `ls` of a folder of
	 * thousands of new files, readdirplus looking each up) can take more descriptors between
	 * two passes than the quarter left above the mark, when the thread ran late or its
	 * invalidations have not come back as FORGETs yet.
	 */
	if (fs->house_running && fs->fd_high && n >= fs->fd_high &&
	    (n - fs->fd_high) % WAKE_STEP == 0) {
		fs->house_kick = true; /* seen even while the thread is not waiting */
		pthread_cond_signal(&fs->house_cv);
	}
}

static bool trimmable(const struct fs *fs, const struct fs_node *n)
{
	return n != fs->root && n != fs->gitnode && n->parent && !n->unlinked &&
	       !S_ISDIR(n->type) && n->fd >= 0 && n->refs == 0 && n->nlookup > 0;
}

/* Picks up to max unused upper files, round robin over the inode table (fs->lock held). */
static size_t pick(struct fs *fs, struct victim *v, size_t max)
{
	size_t got = 0, size = fs->by_ino.size;

	for (size_t step = 0; step < size && got < max; step++) {
		size_t slot = (fs->trim_cursor + step) % size;

		for (struct fs_node *n = fs->by_ino.slots[slot]; n && got < max; n = n->next_ino) {
			if (!trimmable(fs, n))
				continue;
			v[got].name = strdup(n->name);
			if (!v[got].name)
				return got;
			v[got++].parent = n->parent->ino;
		}
		fs->trim_cursor = slot + 1;
	}
	return got;
}

/*
 * Closes the kept data descriptors of nodes not in use once the budget is reached, so that
 * recently used files get one again (fs->lock held).
 */
static void release_data_fds(struct fs *fs)
{
	size_t size = fs->by_ino.size;

	if (fs->ndata_fds < fs->data_fds_max)
		return;
	for (size_t slot = 0; slot < size && fs->ndata_fds > fs->data_fds_max / 2; slot++) {
		for (struct fs_node *n = fs->by_ino.slots[slot]; n; n = n->next_ino) {
			if (n->data_fd < 0 || n->refs > 0 || !n->parent || n->unlinked)
				continue; /* an unlinked copy lives only through its descriptor */
			close(n->data_fd);
			n->data_fd = -1;
			fs->ndata_fds--;
		}
	}
}

static void trim(struct fs *fs)
{
	struct victim *v;
	size_t want, n;

	pthread_mutex_lock(&fs->lock);
	if (!fs->fd_high || total_fds(fs) < fs->fd_high || fs->stopping ||
	    total_fds(fs) <= fs->trim_floor) {
		/*
		 * Not needed, or the last pass could not get below this: what is left is in use
		 * (open files, directories). Try again once more descriptors have been taken.
		 */
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	/* Down to half the limit, so that bursts of new files have room before the next pass. */
	want = total_fds(fs) - fs->fd_high * 2 / 3;
	if (want > TRIM_BATCH)
		want = TRIM_BATCH;
	v = calloc(want, sizeof(*v));
	n = v ? pick(fs, v, want) : 0;
	/* Too little to drop: stay away until the count grows past what it is now. */
	fs->trim_floor = n < want / 8 ? total_fds(fs) : 0;
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < n; i++) {
		/* Never once the request loop has ended: nobody would answer what it waits for. */
		if (!__atomic_load_n(&fs->stopping, __ATOMIC_ACQUIRE))
			(void)fuse_lowlevel_notify_inval_entry(fs->se, v[i].parent, v[i].name,
							       strlen(v[i].name));
		free(v[i].name);
	}
	free(v);
}

static void *house_main(void *arg)
{
	struct fs *fs = arg;
	struct timespec until;

	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		util_deadline(&until, CLOCK_MONOTONIC, PERIOD_MS);
		if (!fs->house_kick)
			(void)pthread_cond_timedwait(&fs->house_cv, &fs->lock, &until);
		fs->house_kick = false;
		if (fs->stopping)
			break;
		fs_record_sweep(fs, SWEEP_AGE_NS);
		release_data_fds(fs);
		fs_unlock(fs); /* records what the sweep queued */
		trim(fs);
		pthread_mutex_lock(&fs->lock);
	}
	fs_record_sweep(fs, 0);
	fs_unlock(fs);
	return NULL;
}

void fs_house_limits(struct fs *fs)
{
	struct rlimit rl;
	size_t quarter;

	fs->fd_high = 0; /* no limit: never trimmed */
	fs->data_fds_max = FS_DATA_FDS_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	/*
	 * Three quarters of the limit, leaving the rest to libfuse, SQLite, libgit2 and pipes.
	 * Data descriptors are a cache each of which doubles a node's cost: at most a quarter of
	 * the limit, so that under a low limit (1,024) a burst of new files while this thread is
	 * late to run (a loaded machine) still has room before EMFILE.
	 */
	quarter = (size_t)rl.rlim_cur / 4;
	fs->fd_high = quarter * 3;
	if (quarter < FS_DATA_FDS_MAX)
		fs->data_fds_max = quarter ? quarter : 1;
}

int fs_house_start(struct fs *fs)
{
	pthread_condattr_t ca;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = -pthread_cond_init(&fs->house_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc < 0)
		return rc;
	rc = -pthread_create(&fs->house, NULL, house_main, fs);
	if (rc == 0)
		(void)pthread_setname_np(fs->house, "arb-house");
	if (rc < 0) {
		pthread_cond_destroy(&fs->house_cv);
		return rc;
	}
	pthread_mutex_lock(&fs->lock);
	fs->house_running = true;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

void fs_house_stop(struct fs *fs)
{
	struct timespec until;

	if (!fs->house_running)
		return;
	pthread_mutex_lock(&fs->lock);
	__atomic_store_n(&fs->stopping, true, __ATOMIC_RELEASE);
	fs->house_running = false;
	pthread_cond_signal(&fs->house_cv);
	pthread_mutex_unlock(&fs->lock);
	/*
	 * A notification sent just before the request loop ended can wait in the kernel for a
	 * request nobody will answer now. Then the thread is left there (it holds no lock) and
	 * the daemon exits without freeing what that thread could still touch.
	 */
	util_deadline(&until, CLOCK_REALTIME, 5000);
	if (pthread_timedjoin_np(fs->house, NULL, &until) != 0) {
		fs->house_stuck = true;
		fprintf(stderr, "arborinth-fs: housekeeping thread stuck in a notification; "
				"exiting without it\n");
	} else {
		pthread_cond_destroy(&fs->house_cv);
	}
	/* Whatever the thread did not record (it records everything when it ends normally). */
	pthread_mutex_lock(&fs->lock);
	fs_record_sweep(fs, 0);
	fs_unlock(fs);
}
