/*
 * fs: the workspace view, a copy-on-write FUSE filesystem. The lower layer is the tree of the
 * pinned base commit, read lazily through libgit2 (file content materialised once into the
 * shared blob cache); the upper layer is a real directory holding everything written. The
 * view's `.git` is the workspace's own gitdir, passed through.
 */
#ifndef ARB_FS_H
#define ARB_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#include "util/util.h"

struct fs_config {
	const char *mountpoint; /* NAME/workdir */
	const char *layer;	/* NAME/layer: upper layer */
	const char *gitdir;	/* NAME/git: shown as .git */
	const char *repo;	/* origin gitdir (libgit2 reads objects from it) */
	const char *blobs;	/* <state dir>/blobs: shared content cache */
	const char *base;	/* base commit id (hex) */
	const char *pidfile;	/* written once mounted; removed at exit */
	const char *db_path;	/* state.db, for the audit; NULL: no audit */
	const char *ws_id;	/* workspace id and name, for the audit */
	const char *ws_name;
	/* the disk budget (fs_disk_parse); NULL: the default, what is used + half the free space */
	const char *disk;
	bool allow_other; /* other users may use the view (FUSE allow_other) */
	bool passthrough; /* created files are written through FUSE passthrough where possible */
	bool lfs;	  /* git LFS files show their objects (fs/lfs_view.c); else pointers */
	int debug;	  /* libfuse debug output to stderr */
};

/*
 * Mounts the view and serves it until unmounted (fusermount3 -u, umount) or SIGTERM/SIGINT/
 * SIGHUP. When ready_fd >= 0, writes one byte there once the mount is live (0 = ok) and
 * closes it, so a parent can wait for readiness. Returns 0 after a clean unmount.
 * Not thread-safe: one view per process.
 */
int fs_daemon_run(const struct fs_config *cfg, int ready_fd) ARB_MUST_CHECK;

/*
 * The daemon's command line (fs/config_argv.c), both halves. fs_config_argv: PROGRAM
 * FS_DAEMON_VERB and cfg's options, then "--ready-fd READY_FD" when ready_fd is not NULL
 * (last, so a caller may put the descriptor's number in the final slot); NULL-terminated,
 * strings borrowed, the array the caller's to free; *argc its length. fs_config_parse: the
 * same read back from argv (argv[0] the verb) into cfg (strings borrowed) and *ready_fd (-1:
 * none). -EINVAL with a message.
 */
#define FS_DAEMON_VERB "__fs-daemon"
char **fs_config_argv(const struct fs_config *cfg, const char *program, const char *ready_fd,
		      size_t *argc);
int fs_config_parse(struct fs_config *cfg, int *ready_fd, int argc, char **argv) ARB_MUST_CHECK;

/*
 * Unmounts the view at mountpoint (root: umount2; others: fusermount3). lazy detaches it even
 * while busy: for the dead mount a killed daemon leaves behind.
 */
int fs_unmount(const char *mountpoint, bool lazy) ARB_MUST_CHECK;

/*
 * A disk budget as given to --disk: bytes, with an optional K, M, G or T (powers of 1024),
 * or "0" / "none" for no budget (*bytes 0). -EINVAL with a message otherwise.
 */
int fs_disk_parse(const char *s, int64_t *bytes) ARB_MUST_CHECK;

/*
 * The daemon's first byte on its ready pipe (--ready-fd); a failure's is followed by its reason
 * in one line, then the pipe closes: the view came up; the view could not be mounted (the
 * cause as fs_mount_cause says it); the daemon failed before or after mounting.
 */
enum { FS_READY_OK = 0, FS_READY_FAILED = 1, FS_READY_NO_MOUNT = 2 };

/* True when path is the root of a FUSE mount (not merely a folder on a FUSE file system). */
int fs_is_mounted(const char *path);

/*
 * What mounting a view needs (fs/fuse_env.c). Each check returns 0 or -errno and puts one line
 * in why: fs_fuse_device_check, /dev/fuse is FUSE's device and opens read-write (-ENOENT
 * none, -ENODEV something else is there, else open's error); fs_fusermount_check, fusermount3
 * (where libfuse finds it: /usr/bin, then PATH) is installed (-ENOENT) and setuid root on a
 * mount that honours it (-EPERM); fs_mount_preflight, what this process needs of those two
 * (fusermount3 only when not root). fs_fusermount_path: malloc'd, NULL when there is none.
 * fs_host_root: uid 0 of the initial user namespace.
 */
int fs_fuse_device_check(char *why, size_t len);
int fs_fusermount_check(char *why, size_t len);
int fs_mount_preflight(char *why, size_t len);
char *fs_fusermount_path(void);
bool fs_host_root(void);
/*
 * Why a mount at mountpoint failed, in one line into buf: the first check above that fails,
 * else the kernel's refusal, with `said` (what libfuse or fusermount3 printed; may be NULL).
 */
void fs_mount_cause(char *buf, size_t len, const char *mountpoint, const char *said);

/*
 * ioctl(fd, ARB_FS_IOC_AUDIT_SYNC) on a descriptor of the view's root directory (no argument):
 * the daemon records the writes it is still coalescing and returns 0 once the audit has
 * committed them (fs/ops_ioctl.c); EIO when the audit could not be written. fsync of the root
 * does that too, and also flushes the upper layer's root directory to disk, which costs about
 * a millisecond on a journaled ext4 and is not what a caller that only wants the audit
 * current needs. Any other command, or this one on another directory or file: ENOTTY. A
 * daemon older than this request answers ENOTTY as well (the kernel's answer for a daemon
 * without ioctls): a caller then falls back to fsync (core_ws_audit_sync).
 */
#define ARB_FS_IOC_AUDIT_SYNC _IO(0xA7, 0x01)

/*
 * ioctl(fd, ARB_FS_IOC_BOX_ADD, &pid) on the view's root (pid: int32_t, the box's pid 1 on
 * the host): callers in that process's pid namespace are the box's, and see the gitdir's
 * config, hooks and nested repositories as the box wrote them; every other caller gets the
 * daemon's own config and none of those (fs/hostgit.c). ARB_FS_IOC_BOX_DEL takes it back.
 * Only the daemon's user (or root) in the daemon's pid namespace may: else EPERM.
 */
#define ARB_FS_IOC_BOX_ADD _IOW(0xA7, 0x02, int32_t)
#define ARB_FS_IOC_BOX_DEL _IOW(0xA7, 0x03, int32_t)

/*
 * The upper layer's format (fs/layer.c), for whoever reads or writes a layer besides the
 * daemon (core: --dirty, checkpoints, rewind). fs_layer_is_whiteout: st is a whiteout (the
 * lower entry of its name is gone). fs_layer_whiteout_at: makes one (-errno).
 * fs_layer_dir_lower: where the lower part of the layer directory dirfd comes from: the same
 * name in its parent's lower tree, none (opaque), or the tree whose hex id goes to hex.
 * fs_layer_set_opaque: marks dirfd as hiding any lower part (-errno).
 */
struct stat;
enum fs_layer_lower { FS_LAYER_LOWER_SAME, FS_LAYER_LOWER_NONE, FS_LAYER_LOWER_TREE };
bool fs_layer_is_whiteout(const struct stat *st);
int fs_layer_whiteout_at(int dirfd, const char *name) ARB_MUST_CHECK;
enum fs_layer_lower fs_layer_dir_lower(int dirfd, char hex[41]);
/* The same for fd open for reading (not O_PATH): one system call for a directory without any. */
enum fs_layer_lower fs_layer_dir_lower_fd(int fd, char hex[41]);
int fs_layer_set_opaque(int dirfd) ARB_MUST_CHECK;
/*
 * What the view reports of an unmodified lower file (fs/lookup.c) and what the index a
 * workspace starts with says of it (core/gitdir.c), so that `git status` finds it clean
 * without reading it: its size, and modification and change times at the base commit's
 * time, to the second.
 */
struct fs_lower_stat {
	int64_t size;
	int64_t mtime_sec, ctime_sec; /* nanoseconds: 0 */
};
void fs_lower_stat_of(int64_t base_time, int64_t blob_size, struct fs_lower_stat *out);

/*
 * The submodules of a base commit (fs/submods.c): the gitlinks its .gitmodules names, and
 * theirs when the origin has them, in .gitmodules order, a submodule before its own.
 * PRESENT: the origin's <gitdir>/modules/... holds the recorded commit; the view shows its
 * tree there, with a `.git` file naming `gitdir`. ABSENT: not initialised in the origin (an
 * empty directory). REFUSED: a name that would leave modules/ (an empty directory; nothing
 * read). fs_submodules_find: gitdir is the origin's git common dir; *out (caller frees with
 * fs_submodules_free), *n. -errno with a message.
 */
#define FS_SUBMODULES_DEPTH 8
enum fs_submodule_state { FS_SUBMODULE_PRESENT, FS_SUBMODULE_ABSENT, FS_SUBMODULE_REFUSED };
struct fs_submodule {
	char *path;   /* in the view: "lib/a", "lib/a/nested" */
	char *name;   /* as .gitmodules names it */
	char *gitdir; /* under the superproject's gitdir: "modules/a/modules/n"; NULL if refused */
	char commit[41]; /* the commit the superproject records (hex) */
	enum fs_submodule_state state;
	int depth; /* 0: a submodule of the base itself */
};
int fs_submodules_find(const char *gitdir, const char *base_hex, struct fs_submodule **out,
		       size_t *n) ARB_MUST_CHECK;
void fs_submodules_free(struct fs_submodule *v, size_t n);
/* A submodule name git would accept and that stays under modules/ (fs/submods.c). */
bool fs_submodule_name_ok(const char *name);

/*
 * git LFS (fs/lfs.c). A file whose base blob is an LFS pointer and whose path the base
 * commit's .gitattributes marks filter=lfs is shown with the object's content when the
 * origin's store has it (verified against the pointer's sha256), else as the pointer.
 * fs_lfs_parse: buf is a pointer exactly as git-lfs writes it (spec v1, no extensions; under
 * FS_LFS_POINTER_MAX bytes): 0 and *out, else -EINVAL. fs_lfs_tracked: the attribute filter
 * of path is "lfs" at commit (its .gitattributes, the origin's info/attributes).
 * fs_lfs_store_open: an O_PATH fd of the origin's object store (<common dir>/lfs/objects, or
 * lfs.storage from its config), -errno (-ENOENT: none). fs_lfs_object_open: the object of p
 * for reading, opened beneath store following no link: 0, *out (caller closes) and its stat;
 * -ENOENT when absent, -EINVAL when not a regular file of p's size. fs_lfs_verify: fd's
 * content hashes to p's oid (0) or not (-EINVAL).
 */
#define FS_LFS_POINTER_MAX 1024
struct git_repository;
struct git_oid;
struct fs_lfs_ptr {
	char oid[65]; /* sha256, lowercase hex */
	int64_t size;
};
int fs_lfs_parse(const char *buf, size_t len, struct fs_lfs_ptr *out) ARB_MUST_CHECK;
bool fs_lfs_tracked(struct git_repository *repo, const struct git_oid *commit, const char *path);
int fs_lfs_store_open(struct git_repository *repo, int *out) ARB_MUST_CHECK;
int fs_lfs_object_open(int store, const struct fs_lfs_ptr *p, int *out,
		       struct stat *st) ARB_MUST_CHECK;
int fs_lfs_verify(int fd, const struct fs_lfs_ptr *p) ARB_MUST_CHECK;
/*
 * fs_lfs_object_open and fs_lfs_verify, the hash checked once: a marker in the blob cache
 * (blobs: its directory fd; lfs-ok/<oid>) records the identity (device, inode, size, ctime)
 * of the object file found good, so later checks of that file only compare it (fstat). 0 and
 * *st, -ENOENT, or -EINVAL (not a regular file of the size, or another content).
 */
int fs_lfs_object_check(int store, int blobs, const struct fs_lfs_ptr *p,
			struct stat *st) ARB_MUST_CHECK;

/*
 * git_libgit2_init() for arborinth's processes: the same, minus libssh2's OpenSSL set-up
 * (arborinth never uses libgit2's SSH transport). Pair with git_libgit2_shutdown().
 */
void fs_git_init(void);

#endif
