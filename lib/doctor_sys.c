/*
 * lib/doctor_sys.c: what the machine offers arborinth: bubblewrap and the namespaces it
 * needs (tried for real: a box that runs `true`), /dev/fuse and fusermount3, the cgroups
 * limits are placed in, FUSE passthrough and io_uring, and the file system the project is on.
 */
#include "lib/doctor_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"
#include "fs/fs.h"
#include "jail/jail.h"

#define FUSE_MAGIC    0x65735546
#define NFS_MAGIC     0x6969
#define CGROUP2_MAGIC 0x63677270
#define TMPFS_MAGIC   0x01021994

/*
 * Runs argv with stdin from /dev/null and stdout+stderr into buf (first line kept, at most
 * len-1 bytes). Returns the exit status, or -errno when it could not run.
 */
static int run_capture(char *const argv[], char *buf, size_t len)
{
	int fds[2], status = 0, rc;
	size_t used = 0;
	ssize_t got;
	pid_t pid;

	buf[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	while (used + 1 < len && (got = read(fds[0], buf + used, len - 1 - used)) > 0)
		used += (size_t)got;
	buf[used] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The first line of a /proc or /sys file as a number; -1 when it cannot be read. */
static long read_num(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f && fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	if (f)
		fclose(f);
	if (!strncmp(buf, "Y", 1))
		v = 1;
	else if (!strncmp(buf, "N", 1))
		v = 0;
	return v;
}

/* Whether this process is root of the host: root inside a user namespace mounts nothing. */
static bool host_root(void)
{
	return fs_host_root();
}

static int check_bwrap(struct doctor *d)
{
	char *path = util_which("bwrap"), out[512];
	char *ver[] = {"bwrap", "--version", NULL};
	char *box[] = {"bwrap",
		       "--unshare-all",
		       "--die-with-parent",
		       "--ro-bind",
		       "/",
		       "/",
		       "--proc",
		       "/proc",
		       "--dev",
		       "/dev",
		       "true",
		       NULL};
	long restrict_aa = read_num("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	long max_ns = read_num("/proc/sys/user/max_user_namespaces");
	long clone_ok = read_num("/proc/sys/kernel/unprivileged_userns_clone");
	int rc, st;

	if (!path)
		return doctor_add(d, "bubblewrap", ARB_CHECK_MISSING, true,
				  "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)",
				  "bwrap is not on PATH");
	rc = run_capture(ver, out, sizeof(out));
	rc = doctor_add(d, "bubblewrap", ARB_CHECK_OK, true, NULL, "%s (%s)", path,
			rc == 0 ? out : "version unknown");
	free(path);
	if (rc < 0)
		return rc;
	st = run_capture(box, out, sizeof(out));
	if (st == 0)
		return doctor_add(d, "user namespaces", ARB_CHECK_OK, true, NULL,
				  "bwrap made a box (user, pid, mount, network namespaces)");
	if (restrict_aa == 1)
		return doctor_add(d, "user namespaces", ARB_CHECK_MISSING, true,
				  "allow bwrap an AppArmor profile with 'userns' (Ubuntu 24.04: "
				  "apt-get install apparmor-profiles, or sysctl "
				  "kernel.apparmor_restrict_unprivileged_userns=0)",
				  "AppArmor restricts unprivileged user namespaces; bwrap said: %s",
				  out);
	if (max_ns == 0 || clone_ok == 0)
		return doctor_add(d, "user namespaces", ARB_CHECK_MISSING, true,
				  "sysctl user.max_user_namespaces=15000 and "
				  "kernel.unprivileged_userns_clone=1",
				  "unprivileged user namespaces are off; bwrap said: %s", out);
	return doctor_add(d, "user namespaces", ARB_CHECK_MISSING, true,
			  "run 'bwrap --unshare-all --ro-bind / / true' to see why",
			  "bwrap could not make a box (exit %d): %s", st, out);
}

/* The checks `workspace create` makes before it makes anything (fs/fuse_env.c). */
static int check_fuse(struct doctor *d)
{
	char why[512];
	int err = fs_fuse_device_check(why, sizeof(why)), rc;

	if (err == 0)
		rc = doctor_add(d, "/dev/fuse", ARB_CHECK_OK, true, NULL, "%s", why);
	else
		rc = doctor_add(
		    d, "/dev/fuse", ARB_CHECK_MISSING, true,
		    err == -ENOENT || err == -ENODEV
			? "load the fuse module (modprobe fuse); in a container, pass the "
			  "device (--device /dev/fuse)"
			: "chmod 0666 /dev/fuse (its usual mode)",
		    "%s", why);
	if (rc < 0)
		return rc;
	if (host_root())
		return doctor_add(d, "fusermount3", ARB_CHECK_OK, false, NULL,
				  "not needed: root mounts the view itself");
	err = fs_fusermount_check(why, sizeof(why));
	if (err == -ENOENT)
		return doctor_add(d, "fusermount3", ARB_CHECK_MISSING, true,
				  "install fuse3 (apt-get install fuse3)", "%s", why);
	if (err < 0)
		return doctor_add(d, "fusermount3", ARB_CHECK_MISSING, true,
				  "chmod u+s on fusermount3, owned by root, on a mount without "
				  "nosuid (reinstall fuse3)",
				  "%s", why);
	return doctor_add(d, "fusermount3", ARB_CHECK_OK, true, NULL, "%s", why);
}

static int check_allow_other(struct doctor *d)
{
	char *text = NULL;
	size_t len = 0;
	bool on = false;

	if (host_root())
		return doctor_add(d, "allow_other", ARB_CHECK_OK, false, NULL,
				  "root may use --allow-other");
	if (util_read_file("/etc/fuse.conf", &text, &len) == 0)
		for (char *line = text, *next; line && !on; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			line += strspn(line, " \t");
			on = !strncmp(line, "user_allow_other", 16);
		}
	free(text);
	return doctor_add(d, "allow_other", on ? ARB_CHECK_OK : ARB_CHECK_DEGRADED, false,
			  "add 'user_allow_other' to /etc/fuse.conf (only for --allow-other)",
			  on ? "user_allow_other is set in /etc/fuse.conf"
			     : "user_allow_other is not set: --allow-other views are refused");
}

static int check_cgroups(struct doctor *d)
{
	struct statfs fs;
	char why[512];
	const char *kind = "none";
	int rc;

	if (statfs("/sys/fs/cgroup", &fs) == 0)
		kind = fs.f_type == CGROUP2_MAGIC ? "cgroup v2 (unified)"
		       : fs.f_type == TMPFS_MAGIC ? "cgroup v1 (hybrid or legacy)"
						  : "unknown";
	rc = jail_limits_probe(why, sizeof(why));
	return doctor_add(d, "limits", rc == 0 ? ARB_CHECK_OK : ARB_CHECK_DEGRADED, false,
			  "run as root, from a delegated cgroup (systemd-run --user --scope -p "
			  "Delegate=yes), or where this user's systemd user manager runs",
			  "%s; %s", kind, why);
}

/* The running kernel's version as major*1000+minor. */
static long kernel_version(char *name, size_t len)
{
	struct utsname u;
	long major = 0, minor = 0;

	if (uname(&u) < 0)
		return 0;
	snprintf(name, len, "%s", u.release);
	if (sscanf(u.release, "%ld.%ld", &major, &minor) < 2)
		return 0;
	return major * 1000 + minor;
}

static int check_kernel_io(struct doctor *d)
{
	char rel[128] = "?";
	long v = kernel_version(rel, sizeof(rel));
	long uring = read_num("/sys/module/fuse/parameters/enable_uring");
	int rc;

	if (v < 6009)
		rc = doctor_add(d, "FUSE passthrough", ARB_CHECK_DEGRADED, false,
				"a kernel of 6.9 or later",
				"kernel %s has no FUSE passthrough: --io passthrough falls back to "
				"the daemon",
				rel);
	else if (!host_root())
		rc = doctor_add(d, "FUSE passthrough", ARB_CHECK_DEGRADED, false,
				"run as root for --io passthrough",
				"kernel %s has it, but it needs CAP_SYS_ADMIN: --io passthrough "
				"falls back to the daemon for this user",
				rel);
	else
		rc = doctor_add(d, "FUSE passthrough", ARB_CHECK_OK, false, NULL,
				"kernel %s, root: --io passthrough works", rel);
	if (rc < 0)
		return rc;
	if (uring < 0)
		return doctor_add(d, "FUSE over io_uring", ARB_CHECK_DEGRADED, false,
				  "a kernel of 6.14 or later with the fuse module loaded",
				  "kernel %s offers no FUSE over io_uring: views use /dev/fuse",
				  rel);
	return doctor_add(d, "FUSE over io_uring", uring ? ARB_CHECK_OK : ARB_CHECK_DEGRADED, false,
			  "as root: echo 1 > /sys/module/fuse/parameters/enable_uring",
			  uring ? "on: views use io_uring"
				: "the kernel has it but it is off: views use /dev/fuse");
}

static const char *fs_name(long type)
{
	switch (type) {
	case 0xEF53:
		return "ext2/3/4";
	case 0x9123683E:
		return "btrfs";
	case 0x58465342:
		return "xfs";
	case TMPFS_MAGIC:
		return "tmpfs";
	case 0x794c7630:
		return "overlayfs";
	case 0x2FC12FC1:
		return "zfs";
	case 0x01021997:
		return "9p";
	default:
		return NULL;
	}
}

static int check_project_fs(struct doctor *d)
{
	struct core_project *p = NULL;
	struct statfs fs;
	const char *name;
	int rc = core_project_open(&p, d->workdir ? d->workdir : ".");

	if (rc < 0)
		return doctor_add(d, "project file system", ARB_CHECK_OK, false, NULL,
				  "not in a git repository: nothing to check");
	if (statfs(core_project_root(p), &fs) < 0) {
		rc = doctor_add(d, "project file system", ARB_CHECK_DEGRADED, false,
				"check that the repository is readable", "cannot statfs %s: %s",
				core_project_root(p), strerror(errno));
		goto out;
	}
	name = fs_name((long)fs.f_type);
	/* As the README's list of tested file systems says (tests/integration/ws_filesystems.sh) */
	if (fs.f_type == FUSE_MAGIC)
		rc =
		    doctor_add(d, "project file system", ARB_CHECK_OK, false, NULL,
			       "%s is on a FUSE file system (tested on bindfs; it needs hard links "
			       "for a view's changes)",
			       core_project_root(p));
	else if (fs.f_type == NFS_MAGIC)
		rc = doctor_add(d, "project file system", ARB_CHECK_DEGRADED, false,
				"keep the repository on a local disk file system",
				"%s is on NFS: SQLite's locking there is unreliable",
				core_project_root(p));
	else
		rc = doctor_add(d, "project file system", ARB_CHECK_OK, false, NULL, "%s is on %s",
				core_project_root(p), name ? name : "a local file system");
out:
	core_project_free(p);
	return rc;
}

int doctor_sys(struct doctor *d)
{
	int rc = check_bwrap(d);

	if (rc == 0)
		rc = check_fuse(d);
	if (rc == 0)
		rc = check_allow_other(d);
	if (rc == 0)
		rc = check_cgroups(d);
	if (rc == 0)
		rc = check_kernel_io(d);
	if (rc == 0)
		rc = check_project_fs(d);
	return rc;
}
