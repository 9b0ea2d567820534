/*
 * core/boxlist.c: tells the workspace's view which pid namespace is a box's (fs/boxes.c), so
 * that git in the box sees its own .git/config and hooks and git on the host does not.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fs/fs.h"

int core_ws_box_list(const struct core_ws *ws, pid_t pid, bool add)
{
	int32_t arg = (int32_t)pid;
	int fd, rc = 0;

	if (pid <= 0 || !fs_is_mounted(ws->workdir))
		return 0;
	fd = open(ws->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return util_err(-errno, "%s: %s", ws->workdir, strerror(errno));
	if (ioctl(fd, add ? ARB_FS_IOC_BOX_ADD : ARB_FS_IOC_BOX_DEL, &arg) < 0)
		rc = util_err(-errno, "cannot %s the box %s the view of %s: %s",
			      add ? "add" : "remove", add ? "to" : "from", ws->name,
			      strerror(errno));
	close(fd);
	return rc;
}
