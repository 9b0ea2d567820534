/*
 * core/beneath.c: opening a name beneath a directory without following any symbolic link,
 * for host-side code that writes or reads where a box has written (a rewound layer, the
 * view). openat2() with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has it, else
 * openat() with O_NOFOLLOW, which is as strict here because every name is one component
 * (core_entry_name_ok, checked by the callers). A read never blocks on a FIFO, socket or
 * device: it is opened O_NONBLOCK and refused unless it is a regular file or a directory.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int core_open_beneath(int dir, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (unsigned long long)(flags | O_NOFOLLOW | O_CLOEXEC),
	    .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (!core_entry_name_ok(name, strlen(name))) {
		errno = EINVAL;
		return -1;
	}
#ifdef SYS_openat2
	fd = (int)syscall(SYS_openat2, dir, name, &how, sizeof(how));
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd; /* EPERM: a seccomp filter that does not know openat2 */
#endif
	return openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

int core_open_read_beneath(int dir, const char *name, bool want_dir)
{
	struct stat st;
	int fd =
	    core_open_beneath(dir, name, O_RDONLY | O_NONBLOCK | (want_dir ? O_DIRECTORY : 0), 0);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
		close(fd);
		errno = want_dir ? ENOTDIR : EINVAL;
		return -1;
	}
	return fd;
}
