/*
 * proxy/flock.c: how the proxy's processes take turns on a file they share (a login file,
 * a token cache): an exclusive flock on the open file, re-opened while another process
 * replaced the file under us (writers replace it whole by rename, util_write_file_at), so
 * the holder always holds the file the name shows now, and a reader never sees half of one.
 * A holder that dies, even by SIGKILL, lets go with its last descriptor.
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int proxy_flock_open(int dfd, const char *name, const char *shown, int flags, mode_t mode,
		     int wait_ms, int *out)
{
	int64_t deadline = util_now_ns() + (int64_t)wait_ms * 1000000;
	struct stat a, b;
	int fd, rc;

	*out = -1;
	for (;;) {
		fd = openat(dfd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
		if (fd < 0)
			return util_err(-errno, "cannot open %s: %s", shown, strerror(errno));
		while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno != EWOULDBLOCK && errno != EINTR) {
				rc = util_err(-errno, "cannot lock %s: %s", shown, strerror(errno));
				goto fail;
			}
			if (util_now_ns() > deadline) {
				rc = util_err(-ETIMEDOUT, "%s stayed locked for %d s", shown,
					      wait_ms / 1000);
				goto fail;
			}
			usleep(20 * 1000);
		}
		if (fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			*out = fd;
			return 0;
		}
		close(fd); /* replaced while we waited: lock the new file */
	}
fail:
	close(fd);
	return rc;
}
