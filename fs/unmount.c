/* fs/unmount.c: unmounting a view from outside the daemon. */
#include "fs/fs.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

int fs_unmount(const char *mountpoint, bool lazy)
{
	pid_t pid;
	int status = 0;

	/* Root can unmount directly; anyone else goes through the setuid fusermount3. */
	if (umount2(mountpoint, UMOUNT_NOFOLLOW | (lazy ? MNT_DETACH : 0)) == 0)
		return 0;
	if (errno == EINVAL)
		return util_err(-EINVAL, "%s is not mounted", mountpoint);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (lazy)
			execlp("fusermount3", "fusermount3", "-u", "-q", "-z", "--", mountpoint,
			       (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "-q", "--", mountpoint,
			       (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return util_err(-EBUSY, "cannot unmount %s (busy?)", mountpoint);
	return 0;
}
