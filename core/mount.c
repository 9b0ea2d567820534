/* core/mount.c: starting and stopping a workspace's view daemon. */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

#define READY_TIMEOUT_MS 30000

/* The last line of the daemon's log: the reason it did not come up. */
static void log_reason(const char *log, char *buf, size_t size)
{
	char *text = NULL, *line, *end;

	snprintf(buf, size, "see %s", log);
	if (util_read_file(log, &text, NULL) < 0)
		return;
	end = text + strlen(text);
	while (end > text && end[-1] == '\n')
		*--end = '\0';
	line = strrchr(text, '\n');
	line = line ? line + 1 : text;
	if (*line)
		snprintf(buf, size, "%s", line);
	free(text);
}

/*
 * The executable that serves the view: ARBORINTH_EXE when set (unit tests, which are not
 * arborinth themselves), else the one core_set_daemon_exe() named (libarborinth, whose
 * process may be any program), else the lean arborinth_fs next to this binary, else this
 * binary.
 * Borrowed static storage.
 */
static char daemon_exe_set[PATH_MAX];

void core_set_daemon_exe(const char *path)
{
	snprintf(daemon_exe_set, sizeof(daemon_exe_set), "%s", path ? path : "");
}

static const char *daemon_exe(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("ARBORINTH_EXE");
	ssize_t n;
	char *slash;

	if (env && *env)
		return env;
	if (daemon_exe_set[0])
		return daemon_exe_set;
	n = readlink("/proc/self/exe", path, sizeof(path) - sizeof("arborinth_fs"));
	if (n > 0) {
		path[n] = '\0';
		slash = strrchr(path, '/');
		if (slash) {
			memcpy(slash + 1, "arborinth_fs", sizeof("arborinth_fs"));
			if (access(path, X_OK) == 0)
				return path;
		}
	}
	return "/proc/self/exe";
}

static void daemon_child(char **argv, const char *log, int ready_fd)
{
	int fd;

	setsid();
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		dup2(fd, 0);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	/* Only the ready pipe is inherited. */
	for (int i = 3; i < 1024; i++)
		if (i != ready_fd)
			close(i);
	execv(daemon_exe(), argv);
	fprintf(stderr, "cannot start the view daemon: %s\n", strerror(errno));
	_exit(127);
}

/*
 * The daemon's answer on the ready pipe: a status byte, on failure followed by its reason
 * (fs/daemon.c). A daemon that died without a word is explained by its log's last line.
 */
static int wait_ready(int fd, const char *log)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char msg[1024], reason[1024];
	size_t got = 0;
	ssize_t n = 1;
	int r = 1;

	/* Up to the end of the reason's line: a child of the daemon may hold the pipe open. */
	while (got < sizeof(msg) - 1 && n > 0 && !(got >= 1 && msg[0] == FS_READY_OK) &&
	       !(got > 1 && msg[got - 1] == '\n')) {
		r = poll(&pfd, 1, READY_TIMEOUT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n = read(fd, msg + got, sizeof(msg) - 1 - got);
		if (n < 0 && errno == EINTR)
			n = 1;
		else if (n > 0)
			got += (size_t)n;
	}
	msg[got] = '\0';
	if (got >= 1 && msg[0] == FS_READY_OK)
		return 0;
	msg[strcspn(msg, "\n")] = '\0';
	if (got > 1 && msg[1])
		snprintf(reason, sizeof(reason), "%s", msg + 1);
	else
		log_reason(log, reason, sizeof(reason));
	return util_err(r == 0 ? -ETIMEDOUT : -EIO,
			"%s: %s ('arborinth doctor' checks what views need)",
			got >= 1 && msg[0] == FS_READY_NO_MOUNT ? "cannot mount the view"
								: "the view did not come up",
			reason);
}

/* argv must end with "--ready-fd", a slot for the number, NULL. */
static int spawn(char **argv, int argc, const char *log)
{
	char fdbuf[16];
	int pipefd[2];
	pid_t pid;
	int status = 0, rc;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return rc;
	}
	if (pid == 0) {
		/* Fork again so the daemon is nobody's child here and never a zombie. */
		close(pipefd[0]);
		fcntl(pipefd[1], F_SETFD, 0);
		snprintf(fdbuf, sizeof(fdbuf), "%d", pipefd[1]);
		argv[argc - 1] = fdbuf;
		if (fork() == 0)
			daemon_child(argv, log, pipefd[1]);
		_exit(0);
	}
	close(pipefd[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	rc = wait_ready(pipefd[0], log);
	close(pipefd[0]);
	return rc;
}

/*
 * A view whose daemon died leaves a dead mount ("transport endpoint is not connected").
 * statfs always asks the daemon, where stat may be answered from the kernel's cache. Over
 * io_uring, a request that meets the dying daemon's ring ends with ECANCELED instead.
 */
static void clear_stale_mount(const char *workdir)
{
	struct statfs sf;

	if (statfs(workdir, &sf) < 0 &&
	    (errno == ENOTCONN || errno == ECONNABORTED || errno == ECANCELED) &&
	    fs_unmount(workdir, true) < 0) {
		/* Left for the caller's mount attempt to report. */
	}
}

int core_mount_preflight(void)
{
	char why[512];
	int rc = fs_mount_preflight(why, sizeof(why));

	return rc < 0 ? util_err(rc,
				 "cannot mount views here: %s ('arborinth doctor' checks what "
				 "views need)",
				 why)
		      : 0;
}

/* True when /etc/fuse.conf has a user_allow_other line (what fusermount3 reads). */
static bool fuse_conf_allows_other(void)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len;
	bool found = false;

	if (util_read_file("/etc/fuse.conf", &buf, &len) < 0)
		return false;
	for (line = strtok_r(buf, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save))
		found = !strncmp(line + strspn(line, " \t"), "user_allow_other", 16);
	free(buf);
	return found;
}

/*
 * Who may reach the view: the workspace folder is 0700 for a private view and 0711 (search
 * only) when others may use it, so they can reach workdir/ and list nothing beside it.
 */
static int set_share(const struct core_ws *ws, bool allow_other)
{
	if (allow_other && geteuid() != 0 && !fuse_conf_allows_other())
		return util_err(-EPERM,
				"--allow-other: /etc/fuse.conf has no 'user_allow_other' line "
				"(needed when not root)");
	if (chmod(ws->root, allow_other ? 0711 : 0700) < 0)
		return util_err(-errno, "%s: %s", ws->root, strerror(errno));
	return 0;
}

/* Records the I/O path flags ask for; true when the view is to use passthrough. */
static int io_choice(const struct core_ws *ws, unsigned int flags, bool *passthrough)
{
	char *path = util_path_join(ws->root, "io-passthrough");
	int rc = 0;

	if (!path)
		return -ENOMEM;
	if (flags & CORE_WS_IO_PASSTHROUGH)
		rc = util_write_file(path, "", 0, 0644);
	else if ((flags & CORE_WS_IO_DAEMON) && unlink(path) < 0 && errno != ENOENT)
		rc = util_err(-errno, "%s: %s", path, strerror(errno));
	*passthrough = access(path, F_OK) == 0;
	free(path);
	return rc;
}

/* The budget this mount gives its daemon (*out NULL: the default), kept as NAME/disk. */
static int disk_choice(const struct core_project *p, const struct core_ws *ws, char **out)
{
	char *path = util_path_join(ws->root, "disk"), *buf = NULL;
	int64_t bytes;
	size_t len = 0;
	int rc = 0;

	*out = NULL;
	if (!path)
		return -ENOMEM;
	if (p->disk)
		rc = util_write_file(path, p->disk, strlen(p->disk), 0644);
	if (rc == 0 && util_read_file(path, &buf, &len) == 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (fs_disk_parse(buf, &bytes) < 0) {
			free(buf); /* not one: the default, rather than no view */
			buf = NULL;
		}
		*out = buf;
	}
	util_err_clear();
	free(path);
	return rc;
}

int core_ws_mount(struct core_project *p, struct core_ws *ws, unsigned int flags)
{
	char *blobs = NULL, *pidfile = NULL, *log = NULL, *db = NULL, *commondir = NULL;
	char *disk = NULL;
	char **argv = NULL;
	bool allow_other = flags & CORE_WS_ALLOW_OTHER, passthrough = false;
	struct fs_config cfg;
	size_t argc = 0;
	int rc;

	clear_stale_mount(ws->workdir);
	if (fs_is_mounted(ws->workdir)) {
		ws->mounted = true;
		return 0;
	}
	rc = core_mount_preflight();
	if (rc == 0)
		rc = set_share(ws, allow_other);
	/* Others reach NAME/workdir through the state directory: search only for them. */
	if (rc == 0 && allow_other)
		rc = core_state_dir_share(p);
	if (rc == 0)
		rc = io_choice(ws, flags, &passthrough);
	if (rc == 0)
		rc = disk_choice(p, ws, &disk);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	blobs = util_path_join(p->state_dir, "blobs");
	pidfile = util_path_join(ws->run, "daemon.pid");
	log = util_path_join(ws->run, "fs.log");
	db = util_path_join(p->state_dir, "state.db");
	commondir = strdup(p->commondir);
	if (!blobs || !pidfile || !log || !db || !commondir)
		goto out;
	cfg = (struct fs_config){.mountpoint = ws->workdir,
				 .layer = ws->layer,
				 .gitdir = ws->gitdir,
				 .repo = commondir,
				 .blobs = blobs,
				 .base = ws->base_commit,
				 .pidfile = pidfile,
				 .db_path = db,
				 .ws_id = ws->id,
				 .ws_name = ws->name,
				 .disk = disk,
				 .allow_other = allow_other,
				 .passthrough = passthrough,
				 .lfs = core_lfs_view(ws)};
	/* The descriptor's number goes in the last slot (spawn). */
	argv = fs_config_argv(&cfg, "arborinth", "", &argc);
	if (!argv)
		goto out;
	rc = spawn(argv, (int)argc, log);
	if (rc == 0) {
		ws->mounted = true;
		ws->daemon_pid = core_ws_daemon_pid(ws);
	}
out:
	free(argv);
	free(blobs);
	free(pidfile);
	free(log);
	free(db);
	free(commondir);
	free(disk);
	return rc;
}

/* Waits up to 30 s for pid to exit, when the kernel gives a pidfd for it. */
static void daemon_wait_exit(pid_t pid)
{
	struct pollfd pfd = {.events = POLLIN};

	if (pid <= 0)
		return;
	pfd.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd.fd < 0)
		return; /* gone already, or an old kernel: the naps below */
	while (poll(&pfd, 1, 30000) < 0 && errno == EINTR)
		;
	close(pfd.fd);
}

int core_ws_unmount(struct core_project *p, struct core_ws *ws)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	pid_t pid = core_ws_daemon_pid(ws);
	int rc;

	(void)p;
	clear_stale_mount(ws->workdir);
	if (!fs_is_mounted(ws->workdir))
		return 0;
	rc = fs_unmount(ws->workdir, false);
	if (rc < 0)
		return rc;
	/*
	 * The daemon writes its last audit events as it exits: wait for it, woken by its exit
	 * (a pidfd) rather than by 10 ms naps, which cost a rewind 5 ms on average.
	 */
	daemon_wait_exit(pid);
	for (int i = 0; i < 3000 && util_pid_alive(pid); i++)
		nanosleep(&ts, NULL);
	ws->mounted = false;
	ws->daemon_pid = 0;
	return 0;
}

/* A daemon's answer to an ioctl it does not know (older than ARB_FS_IOC_AUDIT_SYNC). */
static bool unknown_request(int err)
{
	return err == ENOTTY || err == ENOSYS || err == EINVAL;
}

int core_ws_audit_sync_cmd(bool *fsynced, const struct core_ws *ws, unsigned long cmd)
{
	int fd, rc = 0;

	if (fsynced)
		*fsynced = false;
	if (!fs_is_mounted(ws->workdir))
		return 0;
	fd = open(ws->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return util_err(-errno, "%s: %s", ws->workdir, strerror(errno));
	/*
	 * The daemon's own request, not fsync of the root: fsync also flushes the upper layer's
	 * root directory to disk, most of its round trip on a journaled ext4 (about a
	 * millisecond), at every session's end, and the audit needs none of it. A daemon started
	 * before an upgrade does not know the request: then fsync, which makes the audit current
	 * as well.
	 */
	if (ioctl(fd, cmd) < 0) {
		rc = -errno;
		if (unknown_request(errno)) {
			if (fsynced)
				*fsynced = true;
			rc = fsync(fd) < 0 ? -errno : 0;
		}
	}
	if (rc < 0)
		rc = util_err(rc, "cannot bring the audit of %s up to date: %s", ws->name,
			      strerror(-rc));
	close(fd);
	return rc;
}

int core_ws_audit_sync(const struct core_ws *ws)
{
	return core_ws_audit_sync_cmd(NULL, ws, ARB_FS_IOC_AUDIT_SYNC);
}
