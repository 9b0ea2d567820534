/* fs/fs_internal.h: the daemon's state, nodes and handles, shared by the files of fs/. */
#ifndef ARB_FS_INTERNAL_H
#define ARB_FS_INTERNAL_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <git2.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"

/* Upper-layer directory xattrs (hidden from and refused to the workload). */
#define FS_XATTR_PREFIX "user.arborinth."
#define FS_XATTR_OPAQUE "user.arborinth.opaque" /* lower entries of this path don't show */
#define FS_XATTR_TREE	"user.arborinth.tree"	/* lower entries come from this tree id */

#define FS_TIMEOUT 86400.0 /* all changes go through the kernel: cache long */

/* fsmon.c: the names under the view's .git that the daemon answers git's fsmonitor with. */
#define FS_FSMON_NAME	   "arborinth-fsmonitor"
#define FS_FSMON_ANSWERS   64		 /* answers kept in memory, at most, */
#define FS_FSMON_ANSWER_NS 60000000000LL /* for at least this long, unless more come */

/*
 * Descriptors of upper files kept open on their nodes for handle-less I/O. Bounded: every
 * upper node also holds an O_PATH descriptor, and RLIMIT_NOFILE is finite (20,000 here).
 */
#define FS_DATA_FDS_MAX 1024

/*
 * A file object of the view. Identity: the node id is the FUSE inode number and st_ino.
 * A node has a lower part (an entry of the base tree), an upper part (an O_PATH fd into the
 * upper layer), or both (a lower directory that also exists in the upper layer). Files and
 * symlinks are either lower or upper (copy-up moves them). All fields are guarded by fs->lock.
 */
struct fs_node {
	fuse_ino_t ino;
	uint64_t nlookup; /* kernel references */
	uint32_t refs;	  /* open handles */
	struct fs_node *parent;
	char *name;
	mode_t type; /* S_IFDIR, S_IFREG, S_IFLNK, ... */
	bool unlinked;

	/* lower */
	bool has_lower;
	git_oid lower_oid;    /* blob or tree id */
	uint32_t lower_mode;  /* git filemode */
	int64_t lower_size;   /* blob size; -1 until known */
	git_tree *lower_tree; /* directories: loaded on demand */
	/* directories: entries' generation (bumped by every change) and the readdir listing */
	uint64_t gen;
	struct fs_listing *listing;
	bool lower_from_xattr; /* directory's lower tree set by FS_XATTR_TREE (moved dir) */
	/* lfs_view.c: a file shown with this LFS object's content; NULL: its blob's */
	struct fs_lfs_node *lfs;

	/* upper */
	int fd;	     /* O_PATH|O_NOFOLLOW, -1 when lower only */
	int data_fd; /* upper file opened read-write for I/O without a handle; -1 until used */
	struct fs_wpend *wpend; /* audit: writes without a handle, not yet recorded */
	int32_t backing_id;	/* passthrough.c: registered upper file (0: none) */
	uint32_t backing_opens; /* handles using backing_id */
	uint32_t cached_opens;	/* handles whose I/O goes through the page cache and us */
	uint32_t pt_writers;	/* passthrough handles open for writing (fsmon.c) */
	/*
	 * Passthrough writes never reach the daemon: the upper file's ctime and size when the
	 * first writer opened it or the daemon last changed it (pt_settle), and whether it changed
	 * between (pt_dirty). The workload can set mtime back, never ctime.
	 */
	struct timespec pt_ctime;
	int64_t pt_size;
	bool pt_dirty;
	/*
	 * The last process that wrote n, truncated it, or opened it for writing where the daemon
	 * sees opens: writes the kernel sends on nobody's behalf (pid 0: shared-mmap writeback)
	 * are its.
	 */
	pid_t last_writer;
	/* disk.c: the bytes n's upper file is counted for (regular files; set at attach) */
	int64_t charge;
	bool charged;
	uint64_t fsmon_seq; /* fsmon.c: journaled at this sequence number */
	bool fsmon_linked;  /* fsmon.c: hard-linked through the view once */
	/* fsmon.c: a file the daemon makes up (synth_mode != 0): its content */
	char *synth;
	size_t synth_len;
	mode_t synth_mode;
	dev_t upper_dev;
	ino_t upper_ino;

	struct fs_node *next_ino;   /* hash chain by ino */
	struct fs_node *next_name;  /* hash chain by (parent, name) */
	struct fs_node *next_upper; /* hash chain by upper inode */
	bool in_name_table, in_upper_table;
};

/*
 * Writes that arrive without a handle (the kernel sends no OPEN or RELEASE, see fs->no_open)
 * are coalesced per node and writer; record.c turns them into one audit event when another
 * process writes, when the node is renamed, removed, truncated or forgotten, or when they are
 * a second old (house.c). Guarded by fs->lock.
 */
/* Writes coalesced into one audit event: who, how many, how many bytes, which range. */
struct fs_wstats {
	pid_t pid;
	uint64_t count;
	int64_t bytes, lo, hi;
};

/* Adds a write of len bytes at off; true when it is the first. */
static inline bool fs_wstats_add(struct fs_wstats *w, off_t off, size_t len)
{
	if (w->count == 0 || off < w->lo)
		w->lo = off;
	if (w->count == 0 || off + (int64_t)len > w->hi)
		w->hi = off + (int64_t)len;
	w->bytes += (int64_t)len;
	return ++w->count == 1;
}

struct fs_wpend {
	struct fs_node *node;
	struct fs_wpend *prev, *next; /* fs->wdirty */
	int64_t t_first;
	struct fs_wstats w;
};

struct fs_table {
	struct fs_node **slots;
	size_t size;
};

/* fsmon.c: the journal of changed paths git's fsmonitor hook asks about. Under fs->lock. */
struct fs_fsmon {
	uint64_t epoch; /* tokens are "arb:EPOCH:SEQ" */
	uint64_t seq;	/* the last change's */
	uint64_t floor; /* tokens before it are answered "/" */
	uint64_t asked; /* seq of the last answer */
	size_t nlive;	/* nodes with pt_writers */
	/* answers given (made-up files' inode numbers and times), oldest first, to drop */
	struct fs_fsmon_ans {
		fuse_ino_t ino;
		int64_t t;
	} answers[FS_FSMON_ANSWERS];
	size_t nanswers;
	struct fs_fsmon_ent {
		uint64_t seq;
		char *path;
	} * ents;
	size_t n, cap;
};

/* boxes.c: a box's pid namespace, as the launcher gave it (ARB_FS_IOC_BOX_ADD). */
#define FS_BOXES_MAX 64
struct fs_box {
	pid_t pid; /* its pid 1, as given */
	dev_t dev; /* the namespace's identity */
	ino_t ino;
	int nsfd;  /* kept open: the inode number stays its own */
	int pidfd; /* readable once pid 1 is gone; -1 when unknown */
};

/* disk.c: refusals for want of space not yet recorded (one row a second at most). */
struct fs_refusal {
	int64_t t_first, count, off, len;
	pid_t pid;
	int reason;
	char *path;
};

struct fs {
	struct fuse_session *se;
	pthread_mutex_t lock;
	struct fs_table by_ino, by_name, by_upper;
	fuse_ino_t next_ino;
	size_t nnodes;
	struct fs_node *root;
	struct fs_node *gitnode; /* /.git */
	struct fs_fsmon fsmon;
	/* boxes.c, hostgit.c: the boxes' pid namespaces; the config hosts read as .git/config */
	struct fs_box boxes[FS_BOXES_MAX];
	size_t nboxes;
	bool self_ns_ok;
	dev_t self_ns_dev;
	ino_t self_ns_ino;
	struct fs_node *hostcfg;

	int layer_fd;
	int gitdir_fd;
	int blobs_fd;
	git_repository *repo; /* under lock */
	char *repo_path;      /* for per-thread handles */
	int lfs_store;	      /* the origin's LFS objects (fs_lfs_store_open); -1: none */
	git_oid base;
	int64_t base_time;	   /* committer time of the base commit */
	struct fs_submodule *subs; /* lower_sub.c: the base's submodules (read-only once set) */
	size_t nsubs;
	uid_t uid;
	gid_t gid;

	struct audit_log *audit; /* NULL when off */
	/*
	 * What node.c, the bottom of the stack, tells the layers above it (fs_daemon_run sets
	 * them; each may be NULL): a node took a descriptor (house.c wakes its trimmer); a node
	 * is about to move or go (record.c records its pending writes under the old name); a
	 * node is freed (disk.c releases an unlinked file's charge).
	 */
	struct fs_hooks {
		void (*fds_changed)(struct fs *fs);
		void (*flush)(struct fs *fs, struct fs_node *n);
		void (*forget)(struct fs *fs, struct fs_node *n);
	} hooks;
	const struct fs_config *cfg;

	/*
	 * The kernel opens files without asking (FUSE_CAP_NO_OPEN_SUPPORT): no OPEN, RELEASE or
	 * FLUSH round trip per open(); reads and writes arrive with fh 0 and use the node.
	 * Handles (fh != 0) remain for files made by CREATE.
	 */
	bool no_open;
	bool no_opendir; /* likewise for directories: no OPENDIR or RELEASEDIR (ops_readdir.c) */
	/* passthrough.c: created files are read and written inside the kernel */
	bool passthrough;     /* negotiated and a backing file could be registered */
	bool pt_offered;      /* the kernel offered it and this process may register files */
	const char *pt_why;   /* when not: why (static string) */
	bool pt_asked;	      /* the INIT reply asked for it */
	bool pt_init_done;    /* INIT answered (atomic) */
	uint64_t init_unique; /* devio.c: the INIT request's, to know its reply */
	int devfd;	      /* /dev/fuse, for the backing-file ioctls */
	/* uring.c: requests over io_uring, one queue per CPU */
	bool ur_offered;      /* the kernel offered FUSE_OVER_IO_URING in INIT */
	const char *ur_why;   /* when not used: why (static string) */
	struct fs_ring *ring; /* asked for in the INIT reply and running; NULL: /dev/fuse */
	struct fs_wpend *wdirty, *wdirty_tail; /* pending handle-less writes, oldest first */
	size_t ndata_fds;		       /* nodes' data_fd in use (<= data_fds_max) */
	size_t data_fds_max;		       /* house.c: that budget */
	size_t nupper_fds;		       /* nodes' O_PATH descriptors (n->fd) */
	size_t fd_high;			       /* house.c trims descriptors above this */

	/* disk.c: the budget (bytes), the layer's use, the filesystem's reserve; under lock */
	bool disk_track; /* a budget is set: disk_used is kept */
	int64_t disk_budget, disk_used, disk_reserve;
	int64_t disk_free, disk_free_ns; /* free space at the last statvfs, and when */
	int64_t disk_walk_ns;		 /* what measuring the layer at mount took */
	bool disk_saved;		 /* disk_used came from the last clean unmount */
	struct fs_refusal refusal;
	int64_t refusal_last_ns;

	/* house.c: the housekeeping thread */
	pthread_t house;
	bool house_running, stopping, house_stuck;
	bool house_kick; /* house.c: woken while busy; run again without waiting */
	pthread_cond_t house_cv;
	size_t trim_cursor;
	size_t trim_floor; /* no trimming until the descriptors exceed this (0: none) */
};

/* A file handle (fi->fh; 0 for files the kernel opened without asking, and directories). */
struct fs_handle {
	struct fs_node *node;
	int fd;	    /* data fd: blob cache (read-only) or upper file; -1 for dirs */
	bool lower; /* fd is the blob cache file */
	bool writable;
	/*
	 * Passthrough (a CREATE reply with the node's backing id): the kernel writes the upper
	 * file itself; at release the open is recorded as one write by its opener when the
	 * file's ctime or size moved (node->pt_ctime, pt_size, pt_dirty).
	 */
	bool passthrough;
	bool cached;  /* counted in node->cached_opens */
	pid_t opener; /* the process that opened it */
	/* audit: writes coalesced until release, under wlock */
	pthread_mutex_t wlock;
	struct fs_wstats w;
};

struct fs_dirent {
	char *name;
	mode_t type;
};

/*
 * A directory's listing as readdir serves it (ops_readdir.c). Each name keeps its cookie (its
 * readdir offset) for as long as it stays in the directory, so a reader that resumes at an
 * offset after the directory changed neither skips nor repeats an entry that did not change.
 */
struct fs_listing {
	uint64_t gen;	      /* dir->gen it was built at */
	uint64_t next_cookie; /* for names not seen before */
	size_t n;
	struct fs_lentry {
		char *name;
		mode_t type;
		uint64_t cookie;
	} * e; /* by cookie */
};

/* Marks dir's entries as changed (fs->lock held). */
static inline void fs_dir_changed(struct fs_node *dir)
{
	if (dir)
		dir->gen++;
}

/* node.c: the node tables. All require fs->lock held. */
void fs_listing_free(struct fs_listing *l);
/* What a file's upper copy counts against the disk budget (disk.c): its allocation, or size. */
int64_t fs_disk_charge_of(const struct stat *st);
/* Tells the upper layer (fs->hooks.fds_changed, house.c) that a node took a descriptor. */
static inline void fs_node_fds_changed(struct fs *fs)
{
	if (fs->hooks.fds_changed)
		fs->hooks.fds_changed(fs);
}
int fs_node_init_tables(struct fs *fs) ARB_MUST_CHECK;
void fs_node_free_all(struct fs *fs);
struct fs_node *fs_node_get(struct fs *fs, fuse_ino_t ino);
struct fs_node *fs_node_by_name(struct fs *fs, struct fs_node *parent, const char *name);
struct fs_node *fs_node_by_upper(struct fs *fs, dev_t dev, ino_t ino);
/* A new node (nlookup 0) linked under parent/name in the tables. */
struct fs_node *fs_node_new(struct fs *fs, struct fs_node *parent, const char *name, mode_t type);
void fs_node_set_upper(struct fs *fs, struct fs_node *n, int fd, const struct stat *st);
/* Moves n to parent/name (rename), or detaches it from the namespace (name NULL). */
int fs_node_move(struct fs *fs, struct fs_node *n, struct fs_node *parent, const char *name);
/* Drops n if no one references it any more. */
void fs_node_maybe_free(struct fs *fs, struct fs_node *n);
/* "a/b/c" relative to the view root, for messages and the audit. Caller frees. */
char *fs_node_path(struct fs *fs, struct fs_node *n, const char *child);

/*
 * boxes.c. fs_boxes_has_caller: req comes from a process in one of the workspace's boxes
 * (fs->lock held). fs_boxes_ioctl: ARB_FS_IOC_BOX_ADD/DEL with its argument; the errno to
 * answer, 0 when done (takes fs->lock).
 */
void fs_boxes_init(struct fs *fs);
void fs_boxes_free(struct fs *fs);
bool fs_boxes_has_caller(struct fs *fs, fuse_req_t req);
int fs_boxes_ioctl(struct fs *fs, fuse_req_t req, unsigned int cmd, const void *in, size_t len);

/*
 * hostgit.c, all with fs->lock held. fs_hostgit_volatile: dir/name may be answered
 * differently to boxes and hosts (the kernel must not cache it). fs_hostgit_entry: e's name
 * timeout 0 for such a name. fs_hostgit_lookup, once dir/name was found as *out: 0 when
 * req's caller sees it so, -ENOENT when it is hidden from it, 1 with *out the host's config
 * in its place.
 * fs_hostgit_rename_check: 0, or -EXDEV for a rename that would let the kernel cache one.
 */
bool fs_hostgit_volatile(struct fs *fs, const struct fs_node *dir, const char *name);
void fs_hostgit_entry(struct fs *fs, const struct fs_node *dir, const char *name,
		      struct fuse_entry_param *e);
int fs_hostgit_lookup(struct fs *fs, fuse_req_t req, struct fs_node *dir, const char *name,
		      struct fs_node **out) ARB_MUST_CHECK;
int fs_hostgit_rename_check(struct fs *fs, struct fs_node *p, const char *name, struct fs_node *np,
			    const char *newname, unsigned int flags) ARB_MUST_CHECK;

/* lower.c: the base tree. Require fs->lock. */
int fs_lower_init(struct fs *fs) ARB_MUST_CHECK;

/*
 * lower_sub.c: submodules the origin initialised, shown at their gitlinks. subs_init finds
 * them (fs->subs) and adds their stores to fs->repo; subs_attach adds them to another handle
 * of the origin. sub_tree: dir->lower_tree for a gitlink directory (left NULL when the
 * origin has not initialised it). sub_root: dir is a submodule's root in the view.
 * sub_gitfile: 1 when dir is none, else its made-up read-only `.git` (a new node, 0) or
 * -errno. All but subs_attach require fs->lock.
 */
int fs_lower_subs_init(struct fs *fs) ARB_MUST_CHECK;
int fs_lower_subs_attach(struct fs *fs, git_repository *r) ARB_MUST_CHECK;
void fs_lower_subs_free(struct fs *fs);
int fs_lower_sub_tree(struct fs *fs, struct fs_node *dir) ARB_MUST_CHECK;
bool fs_lower_sub_root(struct fs *fs, struct fs_node *dir);
int fs_lower_sub_gitfile(struct fs *fs, struct fs_node *dir, struct fs_node **out) ARB_MUST_CHECK;

/*
 * reconcile.c: before serving, when the last run of the daemon crashed, records every entry
 * of the upper layer changed since its events may be missing as an "unattributed" row; then
 * begins this run's record (audit_log_run_check/run_begin). No-op without audit.
 */
int fs_reconcile(struct fs *fs) ARB_MUST_CHECK;
/* The directory's lower tree (NULL when it has none). */
int fs_lower_tree(struct fs *fs, struct fs_node *dir, git_tree **out) ARB_MUST_CHECK;
/* Looks name up in dir's lower tree; 0 and *entry (borrowed) or -ENOENT. */
int fs_lower_child(struct fs *fs, struct fs_node *dir, const char *name,
		   const git_tree_entry **entry) ARB_MUST_CHECK;
int fs_lower_size(struct fs *fs, struct fs_node *n, int64_t *size) ARB_MUST_CHECK;
/* Read-only fd of the blob cache file for a lower file; materialises it if needed. No lock. */
int fs_lower_open_blob(struct fs *fs, const git_oid *oid, int *fd) ARB_MUST_CHECK;
/* Symlink target of a lower symlink. Caller frees. */
int fs_lower_readlink(struct fs *fs, const git_oid *oid, char **out) ARB_MUST_CHECK;
mode_t fs_lower_type(uint32_t git_mode);

/*
 * lfs_view.c: a lower file that git LFS tracks, shown with the object's content.
 * fs_lfs_view_probe (fs->lock held): when n's blob of *size bytes is an LFS pointer that the
 * origin's store resolves to a good object, sets n->lfs and *size to the object's size.
 * fs_lfs_view_open (no lock): the object for reading, if it is still the file verified.
 */
struct fs_lfs_node {
	struct fs_lfs_ptr ptr;
	dev_t dev;
	ino_t ino;
	struct timespec ctime;
};
void fs_lfs_view_probe(struct fs *fs, struct fs_node *n, size_t *size);
int fs_lfs_view_open(struct fs *fs, const struct fs_lfs_node *l, int *out) ARB_MUST_CHECK;

/* upper.c: copy-up, whiteouts and markers. Require fs->lock. */
int fs_upper_dir(struct fs *fs, struct fs_node *dir) ARB_MUST_CHECK; /* ensure dir exists */
int fs_upper_copy_up(struct fs *fs, struct fs_node *n) ARB_MUST_CHECK;
int fs_upper_whiteout(struct fs *fs, struct fs_node *dir, const char *name) ARB_MUST_CHECK;
bool fs_upper_is_whiteout(const struct stat *st);
int fs_upper_set_opaque(struct fs *fs, int dirfd) ARB_MUST_CHECK;
/*
 * owner.c: gives the new upper entry p/name (just made with mode) to the caller of req: its
 * fsuid, and its fsgid unless p is set-group-ID. Requires fs->lock.
 */
int fs_upper_own(struct fs *fs, fuse_req_t req, struct fs_node *p, const char *name,
		 mode_t mode) ARB_MUST_CHECK;
/* Reopens an O_PATH fd with flags (through /proc/self/fd). */
int fs_upper_reopen(int fd, int flags);
/*
 * n's upper regular file open read-write for I/O that comes without a handle. Up to
 * fs->data_fds_max of them are kept on their nodes (n->data_fd; borrowed: valid while n lives,
 * hold n->refs to use it unlocked); beyond that *owned is set and the caller closes it.
 */
int fs_upper_data_fd(struct fs *fs, struct fs_node *n, int *out, bool *owned) ARB_MUST_CHECK;
/* Takes fd (n's upper file, open read-write) as n's data descriptor, or closes it. */
void fs_upper_adopt_data_fd(struct fs *fs, struct fs_node *n, int fd);
/* Truncates n's upper regular file (copied up already) to size, through its data descriptor. */
int fs_upper_truncate(struct fs *fs, struct fs_node *n, off_t size) ARB_MUST_CHECK;

/* lookup.c */
/* Finds parent/name in the merged view; -ENOENT when absent. Requires fs->lock. */
int fs_lookup_child(struct fs *fs, struct fs_node *parent, const char *name,
		    struct fs_node **out) ARB_MUST_CHECK;
/*
 * Finds name in parent's upper directory: 0 with *out, -ENOENT for a whiteout, 1 when the
 * upper layer has no such entry. Requires fs->lock and parent->fd >= 0.
 */
int fs_lookup_upper(struct fs *fs, struct fs_node *parent, const char *name,
		    struct fs_node **out) ARB_MUST_CHECK;
int fs_node_stat(struct fs *fs, struct fs_node *n, struct stat *st) ARB_MUST_CHECK;
/* Checks a single name component: -EINVAL, -ENAMETOOLONG. */
int fs_name_check(const char *name) ARB_MUST_CHECK;
/* Fills e for n and counts one kernel lookup. Requires fs->lock. */
int fs_entry_fill(struct fs *fs, struct fs_node *n, struct fuse_entry_param *e) ARB_MUST_CHECK;
/* Lists the merged children of dir. Requires fs->lock. Caller frees with fs_dirents_free. */
int fs_dir_list(struct fs *fs, struct fs_node *dir, struct fs_dirent **out,
		size_t *n) ARB_MUST_CHECK;
void fs_dirents_free(struct fs_dirent *ents, size_t n);

/* ops_dir.c: shared with rename and create. Require fs->lock. */
/*
 * Gets parent ready for a new entry `name`: -EEXIST when the view has it; the parent gets an
 * upper directory; a whiteout there is removed. *covered: the base has that name (a new
 * directory there must be opaque).
 */
int fs_prepare_new(struct fs *fs, struct fs_node *parent, const char *name,
		   bool *covered) ARB_MUST_CHECK;
/* Removes p/name (looked up as n): upper entry and, where the base has it, a whiteout. */
int fs_remove_entry(struct fs *fs, struct fs_node *p, const char *name,
		    struct fs_node *n) ARB_MUST_CHECK;

/*
 * record.c: audit events (no-ops when the audit is off). rc is 0 or a negative errno. Called
 * with fs->lock held; the events go to the recorder when fs_unlock() releases it.
 */
void fs_record(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *parent,
	       const char *name, const char *path2, int rc);
void fs_record_mode(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *parent,
		    const char *name, uint32_t mode, int rc);
void fs_record_node(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *n,
		    const char *path2, int64_t size, uint32_t mode, int rc);
/* Unlocks fs->lock, then records what this thread queued while holding it. */
void fs_unlock(struct fs *fs);
/* Notes the first writer of a handle (its coalesced event is recorded at release). */
void fs_record_first_write(struct fs *fs, pid_t pid);
/* The coalesced writes of handle h, at release (fs->lock not held). */
void fs_record_writes(struct fs *fs, struct fs_handle *h);
/*
 * A handle-less write of len bytes at off to n by pid (fs->lock held). True when it starts a
 * new coalesced event: then call fs_record_first_write(pid) after unlocking.
 */
bool fs_record_node_write(struct fs *fs, struct fs_node *n, pid_t pid, off_t off, size_t len);
/*
 * An operation on a range of n (fallocate: its FALLOC_FL_* mode; a refusal for want of
 * space): off and len as the row's off_lo, off_hi = off + len and size = len.
 */
void fs_record_range(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *n,
		     uint32_t mode, off_t off, off_t len, int rc);
/*
 * Who a write to n by pid is recorded as (fs->lock held): pid, which becomes n's last
 * writer, or for a write the kernel sends on nobody's behalf (pid 0: shared-mmap
 * writeback) n's last writer, else fallback.
 */
pid_t fs_record_writer(struct fs_node *n, pid_t pid, pid_t fallback);
/*
 * ops_file.c: before (before true) and after the daemon changes n itself (setattr, rename,
 * link: they move its ctime too) while passthrough writers have it open, so that a change
 * made before is taken as theirs and its own is not. fs->lock held.
 */
void fs_pt_settle(struct fs_node *n, bool before);
/* Records n's pending handle-less writes now (fs->lock held; no-op when none). */
void fs_record_flush_node(struct fs *fs, struct fs_node *n);
/* Records every pending write and waits until the audit committed them (fs->lock not held). */
int fs_record_sync(struct fs *fs) ARB_MUST_CHECK;
/* Records the pending writes at least min_age ns old, oldest first (fs->lock held). */
void fs_record_sweep(struct fs *fs, int64_t min_age);

struct audit_event;
/* An event built by the caller (pid, time set), path owned; fs->lock held. */
void fs_record_event(struct fs *fs, const struct audit_event *ev, char *path);

/*
 * disk.c (fs->lock held unless said). fs_disk_init: before serving, measures the upper layer
 * and gitdir when budget != 0 (budget < 0: the default, what is used plus half the free
 * space; the usage a clean unmount saved is taken instead of walking) and sets the reserve.
 * fs_disk_check: 0, or -ENOSPC (and an audit row, rate limited) when the operation a asks for would
 * grow n over the budget or the filesystem's free space below the reserve. fs_disk_update: n's file
 * changed: its charge read again. fs_disk_added: n's file is new in the layer (copy-up, a
 * new name).
 * fs_disk_unlinked: a name of n went (its charge goes when it was the last). fs_disk_forget: n is
 * being freed. fs_disk_sweep: records the counted refusals once a second passed (min_age 0: now).
 */
struct fs_disk_ask {
	pid_t pid;
	int64_t off, len;
	int mode; /* fallocate's FALLOC_FL_* flags, else 0 */
};
int fs_disk_init(struct fs *fs, int64_t budget) ARB_MUST_CHECK;
int fs_disk_check(struct fs *fs, struct fs_node *n, const struct fs_disk_ask *a) ARB_MUST_CHECK;
/* The same for a new name in directory p (a block's worth), by process pid. */
int fs_disk_check_new(struct fs *fs, pid_t pid, struct fs_node *p, const char *name) ARB_MUST_CHECK;
void fs_disk_update(struct fs *fs, struct fs_node *n);
void fs_disk_added(struct fs *fs, struct fs_node *n);
void fs_disk_unlinked(struct fs *fs, struct fs_node *n);
void fs_disk_forget(struct fs *fs, struct fs_node *n);
void fs_disk_sweep(struct fs *fs, int64_t min_age);
/* At a clean unmount: the usage, for the next mount of this layer (run/disk-used). */
void fs_disk_save(struct fs *fs);

/*
 * house.c: the housekeeping thread, started once the view is mounted: records pending writes
 * a second old, and keeps the descriptors the nodes hold within RLIMIT_NOFILE by asking the
 * kernel to forget unused upper files. fs_house_stop records whatever is still pending.
 */
int fs_house_start(struct fs *fs) ARB_MUST_CHECK;
/* Sets fs->fd_high and fs->data_fds_max from RLIMIT_NOFILE; before the first request. */
void fs_house_limits(struct fs *fs);
void fs_house_stop(struct fs *fs);
/* Wakes the thread when the nodes' descriptors passed fs->fd_high (fs->lock held). */
void fs_house_fds_changed(struct fs *fs);

/*
 * The FUSE messages where the daemon reads or edits them itself (transport/: devio.c,
 * passthrough.c, uring.c; Debian 12's <linux/fuse.h> is protocol 7.38): sizes and byte offsets in
 * fuse_in_header and fuse_out_header, and in INIT's reply (struct fuse_init_out).
 * fs_msg_get32/fs_msg_put32: a 32-bit field at off.
 */
#define FS_MSG_IN_HEADER   40 /* sizeof(struct fuse_in_header) */
#define FS_MSG_OUT_HEADER  16 /* sizeof(struct fuse_out_header) */
#define FS_MSG_UNIQUE	   8  /* .unique, in both headers */
#define FS_INIT_OUT_FLAGS2 32
#define FS_INIT_OUT_SIZE   64 /* struct fuse_init_out in 7.38 and later */
static inline uint32_t fs_msg_get32(const void *base, size_t off)
{
	uint32_t v;

	memcpy(&v, (const char *)base + off, sizeof(v));
	return v;
}

static inline void fs_msg_put32(void *base, size_t off, uint32_t v)
{
	memcpy((char *)base + off, &v, sizeof(v));
}

/*
 * devio.c: fs_devio_install: after mounting, takes over the /dev/fuse I/O, so the INIT reply
 * can ask for passthrough and io_uring and replies to ring requests go to the ring.
 */
int fs_devio_install(struct fs *fs) ARB_MUST_CHECK;
/* Writes run/transport: io_uring, or /dev/fuse and why (why != NULL). */
void fs_devio_transport(struct fs *fs, const char *why);

/*
 * passthrough.c, for devio.c: fs_pt_peek_init: INIT's flags2, what the kernel offers
 * (fs->pt_offered, pt_why); fs_pt_patch_init: INIT's reply (its fuse_init_out, NULL when
 * unreadable) asks for passthrough when offered; fs_pt_patch_reply:
 * an OPEN/CREATE reply gets this thread's backing id, if any; fs_pt_after_init: probes the
 * connection and sets fs->devfd and fs->passthrough: NULL when on, else why (in why or
 * static). For fs/: fs_passthrough_get: the backing id for one more passthrough open of n
 * (fs->lock held);
 * 0 when n cannot have one (then the open goes through the daemon). fs_passthrough_put:
 * the end of such an open (fs->lock held). fs_passthrough_reply_create: fuse_reply_create()
 * (e != NULL) or fuse_reply_open() with backing_id in the reply when > 0.
 */
void fs_pt_peek_init(struct fs *fs, uint32_t flags2);
void fs_pt_patch_init(struct fs *fs, void *init_out);
void fs_pt_patch_reply(struct iovec *iov, int count);
const char *fs_pt_after_init(struct fs *fs, int devfd, char *why, size_t len);
int32_t fs_passthrough_get(struct fs *fs, struct fs_node *n);
void fs_passthrough_put(struct fs *fs, struct fs_node *n);
int fs_passthrough_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
				struct fuse_file_info *fi, int32_t backing_id);

/*
 * uring.c, FUSE over io_uring (for devio.c and daemon.c). fs_ring_peek_init: INIT's flags2
 * (fs->ur_offered, ur_why). fs_ring_patch_init: when offered, makes the io_urings and asks
 * for the ring in INIT's reply (its fuse_init_out, NULL when unreadable; fs->ring, on
 * failure fs->ur_why).
 * fs_ring_start: after the reply, each queue's thread registers its entries and serves
 * requests (-errno when a queue failed: the kernel then keeps /dev/fuse). fs_ring_stop: ends
 * the threads and frees the ring. fs_ring_queues: their number. fs_ring_serving: this thread
 * is serving a ring request. fs_ring_reply: a reply written by libfuse, into the entry of the
 * request this thread serves: bytes taken, or FS_RING_NOT_MINE for one that goes to /dev/fuse.
 * fs_ring_reply_pipe: the same for a reply spliced into a pipe (len bytes).
 */
#define FS_RING_NOT_MINE ((ssize_t)-2)
struct iovec;
void fs_ring_peek_init(struct fs *fs, uint32_t flags2);
void fs_ring_patch_init(struct fs *fs, void *init_out);
int fs_ring_start(struct fs *fs) ARB_MUST_CHECK;
void fs_ring_stop(struct fs *fs);
unsigned fs_ring_queues(const struct fs *fs);
bool fs_ring_serving(void);
ssize_t fs_ring_reply(const struct iovec *iov, int count);
ssize_t fs_ring_reply_pipe(int pipefd, size_t len);

/*
 * fsmon.c (fs->lock held unless said): fs_fsmon_init/save/free: the journal at start, at a
 * clean unmount, at exit. fs_fsmon_note: parent/name changed; fs_fsmon_note_node: n changed
 * (once per answer); fs_fsmon_reset: everything may have changed (a directory moved).
 * fs_fsmon_lookup: the made-up file `name` (FS_FSMON_NAME...) under .git: a new node.
 * fs_fsmon_stat: its attributes. fs_fsmon_read: a copy of its bytes (caller frees).
 */
void fs_fsmon_init(struct fs *fs);
void fs_fsmon_save(struct fs *fs);
void fs_fsmon_free(struct fs *fs);
void fs_fsmon_note(struct fs *fs, struct fs_node *parent, const char *name);
void fs_fsmon_note_node(struct fs *fs, struct fs_node *n);
void fs_fsmon_reset(struct fs *fs);
int fs_fsmon_lookup(struct fs *fs, const char *name, struct fs_node **out) ARB_MUST_CHECK;
int fs_fsmon_stat(struct fs *fs, const struct fs_node *n, struct stat *st) ARB_MUST_CHECK;
int fs_fsmon_read(struct fs_node *n, size_t size, off_t off, char **out,
		  size_t *len) ARB_MUST_CHECK;

/* The operation tables' entries, one file per group. */
void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);
void fs_op_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		  const char *newname, unsigned int flags);
void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
		     struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		     struct fuse_file_info *fi);
void fs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fs_op_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags);
void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void fs_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		 size_t out_bufsz);

static inline struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

#endif
