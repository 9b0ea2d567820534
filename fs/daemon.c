/* fs/daemon.c: the daemon: state set-up, the FUSE session, mount, serve, unmount. */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "audit/audit.h"

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

	/*
	 * Opening a file costs no round trip: the kernel opens by itself once OPEN answers
	 * ENOSYS, keeps the page cache and sends no RELEASE or FLUSH; reads and writes then come
	 * with fh 0 and find the file by its node. Without it, an unchanged file's read is an
	 * OPEN and a RELEASE for every open(). O_TRUNC must then come as a SETATTR, so the kernel
	 * must not expect OPEN to truncate (atomic_o_trunc off). A view with passthrough keeps
	 * OPEN: only an open the kernel sent can be given a backing file (passthrough.c).
	 */
	if ((conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) && !fs->pt_offered) {
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
		conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
		fs->no_open = true;
	}
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_opendir = true;
	}
	/* Reads of unmodified files are spliced from the blob cache file. */
	conn->want |= conn->capable & (FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	conn->want |= conn->capable & (FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_PARALLEL_DIROPS);
	conn->want |= conn->capable & FUSE_CAP_READDIRPLUS;
	/* ioctl on directories, for ARB_FS_IOC_AUDIT_SYNC on the root (libfuse's default too). */
	conn->want |= conn->capable & FUSE_CAP_IOCTL_DIR;
	/*
	 * No writeback cache: a write() must reach the upper file before it returns, so a killed
	 * daemon loses nothing that completed.
	 */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	conn->max_write = 1 << 20;
	conn->max_readahead = 1 << 20;
}

static const struct fuse_lowlevel_ops fs_ops = {
    .init = fs_init,
    .lookup = fs_op_lookup,
    .forget = fs_op_forget,
    .forget_multi = fs_op_forget_multi,
    .getattr = fs_op_getattr,
    .setattr = fs_op_setattr,
    .readlink = fs_op_readlink,
    .mknod = fs_op_mknod,
    .mkdir = fs_op_mkdir,
    .unlink = fs_op_unlink,
    .rmdir = fs_op_rmdir,
    .symlink = fs_op_symlink,
    .rename = fs_op_rename,
    .link = fs_op_link,
    .open = fs_op_open,
    .create = fs_op_create,
    .read = fs_op_read,
    .write_buf = fs_op_write_buf,
    .flush = fs_op_flush,
    .release = fs_op_release,
    .fsync = fs_op_fsync,
    .fallocate = fs_op_fallocate,
    .lseek = fs_op_lseek,
    .opendir = fs_op_opendir,
    .readdir = fs_op_readdir,
    .readdirplus = fs_op_readdirplus,
    .releasedir = fs_op_releasedir,
    .fsyncdir = fs_op_fsyncdir,
    .statfs = fs_op_statfs,
    .setxattr = fs_op_setxattr,
    .getxattr = fs_op_getxattr,
    .listxattr = fs_op_listxattr,
    .removexattr = fs_op_removexattr,
    .ioctl = fs_op_ioctl,
};

static int open_dir(const char *path, int flags, int *out)
{
	int fd = open(path, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return util_err(-errno, "cannot open %s: %s", path, strerror(errno));
	*out = fd;
	return 0;
}

/* Root = the upper layer's top directory over the base tree; /.git = the gitdir. */
static int fs_setup(struct fs *fs, const struct fs_config *cfg)
{
	struct stat st;
	int fd, rc;

	fs->cfg = cfg;
	fs->layer_fd = fs->gitdir_fd = fs->blobs_fd = fs->devfd = fs->lfs_store = -1;
	fs->uid = getuid();
	fs->gid = getgid();
	fs_house_limits(fs); /* after raise_nofile() */
	pthread_mutex_init(&fs->lock, NULL);
	rc = util_mkdir_p(cfg->blobs, 0755);
	if (rc == 0)
		rc = open_dir(cfg->layer, O_PATH, &fs->layer_fd);
	if (rc == 0)
		rc = open_dir(cfg->gitdir, O_PATH, &fs->gitdir_fd);
	if (rc == 0)
		rc = open_dir(cfg->blobs, O_RDONLY, &fs->blobs_fd);
	if (rc == 0)
		rc = fs_node_init_tables(fs);
	if (rc < 0)
		return rc;
	fs->repo_path = strdup(cfg->repo);
	fs->root = fs_node_new(fs, NULL, "", S_IFDIR);
	if (!fs->repo_path || !fs->root)
		return -ENOMEM;
	fd = fcntl(fs->layer_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	fs_node_set_upper(fs, fs->root, fd, &st);
	rc = fs_lower_init(fs);
	if (rc < 0)
		return rc;
	fs->gitnode = fs_node_new(fs, fs->root, ".git", S_IFDIR);
	if (!fs->gitnode)
		return -ENOMEM;
	fd = fcntl(fs->gitdir_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	fs_node_set_upper(fs, fs->gitnode, fd, &st);
	fs_fsmon_init(fs);
	fs_boxes_init(fs);
	if (cfg->db_path) {
		rc = audit_log_open(&fs->audit, cfg->db_path, cfg->ws_id, cfg->ws_name);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void fs_teardown(struct fs *fs)
{
	audit_log_close(fs->audit);
	if (fs->house_stuck)
		return; /* the process is exiting; that thread may still touch the rest */
	fs_node_free_all(fs);
	fs_fsmon_free(fs);
	fs_boxes_free(fs);
	git_repository_free(fs->repo);
	fs_lower_subs_free(fs);
	free(fs->repo_path);
	if (fs->layer_fd >= 0)
		close(fs->layer_fd);
	if (fs->gitdir_fd >= 0)
		close(fs->gitdir_fd);
	if (fs->blobs_fd >= 0)
		close(fs->blobs_fd);
	if (fs->lfs_store >= 0)
		close(fs->lfs_store);
	pthread_mutex_destroy(&fs->lock);
}

static void raise_nofile(void)
{
	struct rlimit rl;
	char *buf = NULL;
	size_t len;

	/*
	 * Every upper node known to the kernel holds an O_PATH descriptor: a workload that makes
	 * tens of thousands of files (npm install) needs that many. Root may go up to fs.nr_open;
	 * others get their hard limit (typically 524,288 or more under systemd).
	 */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (geteuid() == 0 && util_read_file("/proc/sys/fs/nr_open", &buf, &len) == 0) {
		rlim_t max = (rlim_t)strtoull(buf, NULL, 10);
		struct rlimit up = {max, max};

		free(buf);
		if (max > rl.rlim_max && setrlimit(RLIMIT_NOFILE, &up) == 0)
			return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * The one message to whoever started the daemon (core/mount.c): a status byte (FS_READY_*)
 * and, on failure, the reason in one line, so the caller can say it without reading the log.
 */
static void signal_ready(int *ready_fd, char status, const char *why)
{
	char msg[1024];
	size_t n;

	if (*ready_fd < 0)
		return;
	msg[0] = status;
	n = 1 + (size_t)snprintf(msg + 1, sizeof(msg) - 2, "%s", status ? why : "");
	if (n > sizeof(msg) - 2)
		n = sizeof(msg) - 2;
	if (status)
		msg[n++] = '\n';	 /* the reason's end */
	(void)!write(*ready_fd, msg, n); /* under PIPE_BUF: one piece */
	close(*ready_fd);
	*ready_fd = -1;
}

/*
 * What libfuse (and the fusermount3 it ran) printed to stderr, the log, since offset `from`:
 * its lines joined with "; ", into buf ("" when stderr is not a file).
 */
static void stderr_since(off_t from, char *buf, size_t len)
{
	char raw[512];
	struct stat st;
	ssize_t n;
	size_t j = 0;
	int fd;

	buf[0] = '\0';
	fflush(stderr);
	if (from < 0 || len < 2)
		return;
	/* stderr is the log, open for appending only: read it through a descriptor of its own. */
	if (fstat(2, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	fd = open("/proc/self/fd/2", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : pread(fd, raw, sizeof(raw), from);
	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; i < n && j + 3 < len; i++) {
		if (raw[i] != '\n')
			buf[j++] = raw[i] == '\r' ? ' ' : raw[i];
		else if (i + 1 < n)
			buf[j++] = ';', buf[j++] = ' ';
	}
	buf[j] = '\0';
}

static int write_pidfile(const char *path)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	return path ? util_write_file(path, buf, (size_t)n, 0644) : 0;
}

/*
 * The kernel's INIT, answered before the view is reported ready: what it settles (the I/O
 * path, the transport, their run files) is then known to whoever waited for the mount.
 */
static int serve_init(struct fs *fs)
{
	struct fuse_buf buf = {0};
	int n;

	do
		n = fuse_session_receive_buf(fs->se, &buf);
	while (n == -EINTR);
	if (n > 0)
		fuse_session_process_buf(fs->se, &buf);
	free(buf.mem);
	return n > 0 ? 0 : util_err(n < 0 ? n : -EIO, "the kernel sent no INIT");
}

static int serve(struct fs *fs, const struct fs_config *cfg, int *ready_fd)
{
	char *argv[] = {"arborinth-fs", "-o",
			cfg->allow_other
			    ? "default_permissions,allow_other,fsname=arborinth,subtype=arborinth"
			    : "default_permissions,fsname=arborinth,subtype=arborinth",
			"-d", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(cfg->debug ? 4 : 3, argv);
	struct fuse_loop_config *loop = NULL;
	off_t log_end;
	int rc = -EIO;

	fs->se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), fs);
	if (!fs->se) {
		fuse_opt_free_args(&args);
		return util_err(-EIO, "cannot start the FUSE session");
	}
	if (fuse_set_signal_handlers(fs->se) < 0)
		goto out;
	log_end = lseek(2, 0, SEEK_END);
	if (fuse_session_mount(fs->se, cfg->mountpoint) < 0) {
		char said[512], why[1024];

		stderr_since(log_end, said, sizeof(said));
		fs_mount_cause(why, sizeof(why), cfg->mountpoint, said);
		rc = util_err(-EIO, "%s", why);
		signal_ready(ready_fd, FS_READY_NO_MOUNT, why);
		goto out_signals;
	}
	rc = fs_devio_install(fs);
	if (rc == 0)
		rc = serve_init(fs);
	if (rc == 0)
		rc = write_pidfile(cfg->pidfile);
	if (rc < 0)
		goto out_unmount;
	signal_ready(ready_fd, FS_READY_OK, NULL);
	loop = fuse_loop_cfg_create();
	if (!loop) {
		rc = -ENOMEM;
		goto out_unmount;
	}
	/*
	 * Threads are made on demand; idle ones are kept (as many as the maximum): ending and
	 * starting threads under load (each with its own splice pipe) cost more than the
	 * requests they serve.
	 */
	fuse_loop_cfg_set_max_threads(loop, 16);
	fuse_loop_cfg_set_idle_threads(loop, 16);
	rc = fs_house_start(fs);
	if (rc == 0)
		rc = fuse_session_loop_mt(fs->se, loop) < 0 ? -EIO : 0;
	fs_ring_stop(fs);  /* the ring's threads end once the kernel let go of its entries */
	fs_house_stop(fs); /* records the writes still pending */
	if (rc == 0) {
		pthread_mutex_lock(&fs->lock);
		fs_fsmon_save(fs); /* the next mount of this layer goes on with the same tokens */
		fs_disk_save(fs);  /* and the same usage, unless the layer changed meanwhile */
		pthread_mutex_unlock(&fs->lock);
	}
	fuse_loop_cfg_destroy(loop);
out_unmount:
	fs_ring_stop(fs); /* (a no-op after the loop) its threads must not outlive the nodes */
	fuse_session_unmount(fs->se);
	if (cfg->pidfile)
		unlink(cfg->pidfile);
out_signals:
	fuse_remove_signal_handlers(fs->se);
out:
	fuse_session_destroy(fs->se);
	fuse_opt_free_args(&args);
	return rc;
}

/* The disk budget and reserve (fs/disk.c), said in the daemon's log. */
static int disk_setup(struct fs *fs, const struct fs_config *cfg)
{
	int64_t budget = -1;
	int rc = cfg->disk ? fs_disk_parse(cfg->disk, &budget) : 0;

	if (rc == 0)
		rc = fs_disk_init(fs, budget);
	if (rc < 0)
		return rc;
	if (fs->disk_track)
		fprintf(stderr,
			"arborinth-fs: disk budget %lld bytes%s, %lld used (%s %.1f ms), "
			"reserve %lld bytes free\n",
			(long long)fs->disk_budget, cfg->disk ? "" : " (default)",
			(long long)fs->disk_used, fs->disk_saved ? "saved; read in" : "measured in",
			(double)fs->disk_walk_ns / 1e6, (long long)fs->disk_reserve);
	else
		fprintf(stderr, "arborinth-fs: no disk budget, reserve %lld bytes free\n",
			(long long)fs->disk_reserve);
	return 0;
}

int fs_daemon_run(const struct fs_config *cfg, int ready_fd)
{
	struct fs fs = {
	    /* node.c calls up the stack only through these */
	    .hooks = {.fds_changed = fs_house_fds_changed,
		      .flush = fs_record_flush_node,
		      .forget = fs_disk_forget},
	};
	int rc;

	umask(0); /* the kernel already applied the caller's umask to every mode we get */
	raise_nofile();
	fs_git_init();
	rc = fs_setup(&fs, cfg);
	if (rc == 0)
		rc = fs_reconcile(&fs);
	if (rc == 0)
		rc = disk_setup(&fs, cfg);
	if (rc == 0)
		rc = serve(&fs, cfg, &ready_fd);
	signal_ready(&ready_fd, FS_READY_FAILED, util_err_msg());
	fs_teardown(&fs);
	git_libgit2_shutdown();
	return rc;
}
