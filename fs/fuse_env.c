/*
 * fs/fuse_env.c: what this machine lets a view mount: FUSE's device, the setuid fusermount3
 * that mounts for users other than root, and why a mount failed, in one line. `arborinth
 * doctor` (lib/doctor_sys.c) and `workspace create` (before anything is made, and from the
 * daemon's failed mount through the ready pipe) say the same thing from these checks.
 */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "util/util.h"

#define FUSE_SUPER_MAGIC 0x65735546
/* /dev/fuse is the misc device 10:229 (Documentation/admin-guide/devices.txt). */
#define FUSE_DEV_MAJOR 10
#define FUSE_DEV_MINOR 229
/* Where libfuse 3 looks for fusermount3 before PATH (its FUSERMOUNT_DIR on Debian). */
#define FUSERMOUNT_SYS "/usr/bin/fusermount3"

int fs_is_mounted(const char *path)
{
	struct statfs sf;
	struct statx sx;
	struct stat a, b;
	char *up;
	int r;

	if (statfs(path, &sf) < 0 || sf.f_type != FUSE_SUPER_MAGIC)
		return 0;
	/*
	 * Only a mount's root is a view: a folder of a repository kept on a FUSE file system
	 * (bindfs, sshfs) is on FUSE too, and must not pass for a view that is mounted.
	 */
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) ==
		0 &&
	    (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
	/* Kernels before 5.8: a mount's root is on another device than its parent. */
	up = util_path_join(path, "..");
	r = up && lstat(path, &a) == 0 && lstat(up, &b) == 0 && a.st_dev != b.st_dev;
	free(up);
	return r;
}

bool fs_host_root(void)
{
	unsigned long inner = 1, outer = 1, count = 0;
	FILE *f = geteuid() == 0 ? fopen("/proc/self/uid_map", "re") : NULL;
	bool root = false;

	/* uid 0 in the initial user namespace, whose map holds all of 0..4294967294 */
	if (f && fscanf(f, "%lu %lu %lu", &inner, &outer, &count) == 3)
		root = inner == 0 && outer == 0 && count == 4294967295UL;
	if (f)
		fclose(f);
	return root;
}

int fs_fuse_device_check(char *why, size_t len)
{
	struct stat st;
	int fd;

	if (stat("/dev/fuse", &st) < 0) {
		snprintf(why, len, "no /dev/fuse (%s)", strerror(errno));
		return errno == ENOENT ? -ENOENT : -errno;
	}
	/* A container may bind /dev/null (or anything) there: it opens, and mounts nothing. */
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != FUSE_DEV_MAJOR ||
	    minor(st.st_rdev) != FUSE_DEV_MINOR) {
		snprintf(why, len, "no /dev/fuse (what is there is not FUSE's device 10:229)");
		return -ENODEV;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		snprintf(why, len, "cannot open /dev/fuse: %s", strerror(err));
		return -err;
	}
	close(fd);
	snprintf(why, len, "/dev/fuse opens read-write");
	return 0;
}

char *fs_fusermount_path(void)
{
	return access(FUSERMOUNT_SYS, X_OK) == 0 ? strdup(FUSERMOUNT_SYS)
						 : util_which("fusermount3");
}

int fs_fusermount_check(char *why, size_t len)
{
	char *fm = fs_fusermount_path();
	struct statvfs sv;
	struct stat st;
	int rc = 0;

	if (!fm) {
		snprintf(why, len,
			 "fusermount3 is not installed (ordinary users mount views with it)");
		return -ENOENT;
	}
	if (stat(fm, &st) < 0 || st.st_uid != 0 || !(st.st_mode & S_ISUID)) {
		snprintf(why, len, "fusermount3 is not setuid root (%s)", fm);
		rc = -EPERM;
	} else if (statvfs(fm, &sv) == 0 && (sv.f_flag & ST_NOSUID)) {
		snprintf(why, len, "fusermount3 is on a nosuid mount, so not setuid root (%s)", fm);
		rc = -EPERM;
	} else {
		snprintf(why, len, "%s, setuid root", fm);
	}
	free(fm);
	return rc;
}

int fs_mount_preflight(char *why, size_t len)
{
	int rc = fs_fuse_device_check(why, len);

	/* Root of the host mounts itself; anyone else (root of a user namespace too) may need
	 * fusermount3, unless the kernel lets its namespace mount FUSE directly. */
	if (rc == 0 && !fs_host_root() && geteuid() != 0)
		rc = fs_fusermount_check(why, len);
	return rc;
}

void fs_mount_cause(char *buf, size_t len, const char *mountpoint, const char *said)
{
	char why[512];

	if (fs_mount_preflight(why, sizeof(why)) < 0)
		snprintf(buf, len, "%s", why);
	else
		snprintf(buf, len, "mount refused at %s%s%s%s", mountpoint,
			 said && *said ? " (" : "", said && *said ? said : "",
			 said && *said ? ")" : "");
}
