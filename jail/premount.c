/*
 * jail/premount.c: the box's home assembled before bwrap. The binds below $HOME (the cache,
 * PATH entries, what tool managers need) are mounted into the workspace's home folder in the
 * child's private mount namespace (the one overlays use, overlay.c) just before it execs
 * bwrap, which then binds the home once with all of them. bwrap 0.8 rereads the whole
 * /proc/self/mountinfo after every bind, so each bind it is spared saves it that read.
 *
 * The home folder is writable from inside the box (by an earlier run, or another box of the
 * same workspace running now), so every path into it is walked without following a symlink
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS from a descriptor of the home folder, missing
 * folders made one component at a time), and each tree is attached onto that descriptor
 * (open_tree, move_mount), never by a path. Read-only binds are read-only recursively, as
 * bwrap's are (mount_setattr AT_RECURSIVE): the new mount API, Linux 5.12. Without it, or
 * without the namespaces it needs, bwrap binds them as before (jail_premount_supported).
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#define CAP_SYS_ADMIN_BIT 21

static int sys_open_tree(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static int sys_move_mount(int from, const char *from_path, int to, const char *to_path,
			  unsigned flags)
{
	return (int)syscall(SYS_move_mount, from, from_path, to, to_path, flags);
}

static int sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, attr ? sizeof(*attr) : 0);
}

static int sys_openat2(int dfd, const char *path, struct open_how *how)
{
	return (int)syscall(SYS_openat2, dfd, path, how, sizeof(*how));
}

/* A system call this kernel (or a filter around us) refuses outright. */
static bool refused(long rc)
{
	return rc < 0 && (errno == ENOSYS || errno == EPERM);
}

/* The first line of a /proc/sys file, as a number; -1 when absent or unreadable. */
static long proc_number(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/* Whether CAP_SYS_ADMIN is in our effective set (root in a container may lack it). */
static bool have_sys_admin(void)
{
	char buf[2048];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	const char *p;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strstr(buf, "\nCapEff:");
	return p && (strtoull(p + 8, NULL, 16) >> CAP_SYS_ADMIN_BIT & 1);
}

bool jail_premount_supported(const char *bwrap)
{
	struct stat st;

	/* Bad descriptors: EBADF where the call exists. */
	if (refused(sys_open_tree(-1, "", 0)) || refused(sys_move_mount(-1, "", -1, "", 0)) ||
	    refused(sys_mount_setattr(-1, "", 0, NULL)) || refused(sys_openat2(-1, "", NULL)))
		return false;
	if (geteuid() == 0)
		return have_sys_admin();
	/* Not root: a user namespace of our own, as bwrap makes one (not when it is setuid). */
	return proc_number("/proc/sys/user/max_user_namespaces") != 0 &&
	       proc_number("/proc/sys/kernel/unprivileged_userns_clone") != 0 &&
	       proc_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != 1 &&
	       stat(bwrap, &st) == 0 && !(st.st_mode & S_ISUID);
}

void jail_premounts_clear(struct jail_premounts *p)
{
	jail_strv_clear(&p->srcs);
	jail_strv_clear(&p->rels);
	jail_strv_clear(&p->dests);
	free(p->flags);
	free(p->home_src);
	*p = (struct jail_premounts){0};
}

int jail_premounts_plan(const struct jail_box *b, struct jail_premounts *p)
{
	const struct jail_mounts *m = &b->mounts;
	size_t hl = strlen(b->home);
	int rc = 0;

	*p = (struct jail_premounts){0};
	for (size_t i = 0; i < m->n; i++)
		p->n += jail_mounts_premounted(m, i);
	if (!p->n)
		return 0;
	p->flags = calloc(p->n, sizeof(*p->flags));
	p->home_src = strdup(b->home_src);
	if (!p->flags || !p->home_src) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0, k = 0; i < m->n; i++) {
		const struct jail_mount *x = &m->v[i];
		struct stat st;

		if (!jail_mounts_premounted(m, i))
			continue;
		/* The source is the host's (or the workspace's merged overlay), not the box's. */
		if (stat(x->src, &st) < 0) {
			rc = util_err(-errno, "cannot mount %s at %s: %s", x->src, x->dest,
				      strerror(errno));
			goto out;
		}
		p->flags[k++] = (x->type == JAIL_MOUNT_RO ? JAIL_PRE_RO : 0) |
				(S_ISDIR(st.st_mode) ? JAIL_PRE_DIR : 0);
		jail_strv_push(&p->srcs, x->src);
		jail_strv_push(&p->rels, x->dest + hl + 1);
		jail_strv_push(&p->dests, x->dest);
	}
	if (jail_strv_ok(&p->srcs) < 0 || jail_strv_ok(&p->rels) < 0 ||
	    jail_strv_ok(&p->dests) < 0)
		rc = util_err(-ENOMEM, "out of memory");
out:
	if (rc < 0)
		jail_premounts_clear(p);
	return rc;
}

/* ---- in the forked child: no allocation, one line and JAIL_EXIT_SETUP on failure -------- */

static void die(const char *dest, const char *what)
{
	int e = errno;

	if (e == ELOOP || e == EXDEV)
		fprintf(stderr,
			"arborinth: refusing to mount at %s: a symlink on the way to it inside the "
			"workspace's home (the box can write there; remove it)\n",
			dest);
	else
		fprintf(stderr, "arborinth: cannot mount at %s before bwrap: %s: %s\n", dest, what,
			strerror(e));
	_exit(JAIL_EXIT_SETUP);
}

static int open_beneath(int at, const char *name, bool dir)
{
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC | O_NOFOLLOW | (dir ? O_DIRECTORY : 0),
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return sys_openat2(at, name, &how);
}

/*
 * The mount point rel below the home folder `home`, opened O_PATH without following any
 * symlink; missing components are made (folders 0755, the last one an empty 0444 file when
 * the source is a file), as bwrap makes them.
 */
static int open_target(int home, const char *rel, bool dir, const char *dest)
{
	char path[PATH_MAX];
	int at, fd = open_beneath(home, rel, dir);

	if (fd >= 0 || errno != ENOENT)
		return fd;
	if (strlen(rel) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(path, rel);
	at = open_beneath(home, ".", true);
	for (char *c = path, *next; at >= 0 && c; c = next) {
		bool last;

		next = strchr(c, '/');
		if (next)
			*next++ = '\0';
		last = !next;
		fd = open_beneath(at, c, dir || !last);
		if (fd < 0 && errno == ENOENT) {
			int made = dir || !last ? mkdirat(at, c, 0755)
						: openat(at, c,
							 O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW |
							     O_CLOEXEC,
							 0444);

			if (made < 0 && errno != EEXIST)
				die(dest, "cannot create its mount point");
			if (made >= 0 && !dir && last)
				close(made);
			fd = open_beneath(at, c, dir || !last);
		}
		close(at);
		at = fd;
	}
	return at;
}

void jail_premounts_enter(const struct jail_premounts *p)
{
	int home;

	if (!p->n)
		return;
	home = open(p->home_src, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (home < 0)
		die(p->dests.v[0], "cannot open the workspace's home");
	for (size_t i = 0; i < p->n; i++) {
		const char *dest = p->dests.v[i];
		bool ro = p->flags[i] & JAIL_PRE_RO, dir = p->flags[i] & JAIL_PRE_DIR;
		struct mount_attr attr = {
		    .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (ro ? MOUNT_ATTR_RDONLY : 0),
		};
		int tree = sys_open_tree(AT_FDCWD, p->srcs.v[i],
					 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
					     AT_SYMLINK_NOFOLLOW);
		int target;

		if (tree < 0)
			die(dest, p->srcs.v[i]);
		/* Read-only before it is attached: never writable, not for a moment. */
		if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) < 0)
			die(dest, "cannot set its flags");
		target = open_target(home, p->rels.v[i], dir, dest);
		if (target < 0)
			die(dest, "cannot open its mount point");
		if (sys_move_mount(tree, "", target, "",
				   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			die(dest, "cannot attach it");
		close(target);
		close(tree);
	}
	close(home);
}
