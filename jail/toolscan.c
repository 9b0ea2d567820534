/*
 * jail/toolscan.c: what the programs in a PATH entry under $HOME lead to. A link elsewhere
 * under $HOME (~/.local/bin/ruff -> ~/.local/share/uv/tools/ruff/bin/ruff, a mise shim ->
 * the mise binary) and a script's interpreter under $HOME (#!~/.local/share/pipx/venvs/x/
 * bin/python, itself a link into ~/.pyenv/versions/3.12.1) are mounted read-only: the
 * install prefix they sit in (the folder above their bin/), or the file alone when that
 * prefix is shallow (~/.local) or holds a credential.
 */
#include "jail/box_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Programs looked at per PATH entry: a bound on the work for huge folders. */
#define SCAN_MAX 1024

/* Components of path below $HOME's real path (path lies below it). */
static unsigned depth_below(const struct jail_box *b, const char *path)
{
	unsigned d = 0;

	for (const char *p = path + strlen(b->home_real); *p; p++)
		d += *p == '/';
	return d;
}

/* "path entry ENTRY (ENTRY/NAME)": what a mount is for. Caller frees; NULL on ENOMEM. */
static char *say_why(const char *entry, const char *name)
{
	return util_asprintf("path entry %s (%s/%s)", entry, entry, name);
}

/* Mounts the install prefix of `real` (a file under $HOME), or the file alone. */
static int add_target(struct jail_box *b, const char *real, const char *why)
{
	char *dir = strdup(real), *slash, *prefix = NULL;
	int rc;

	if (!dir || !why) {
		free(dir);
		return util_err(-ENOMEM, "out of memory");
	}
	slash = strrchr(dir, '/');
	*slash = '\0';
	slash = strrchr(dir, '/');
	if (slash && !strcmp(slash, "/bin")) {
		*slash = '\0';
		if (util_path_under(dir, b->home_real) && depth_below(b, dir) >= 2 &&
		    !util_secret_path(dir, b->home_real, NULL) && !util_secret_inside(dir, NULL))
			prefix = dir;
	}
	rc = jail_box_tool_mount(b, prefix ? prefix : real, why);
	free(dir);
	return rc;
}

/* The interpreter a "#!" line names, or NULL. Caller frees. */
static char *shebang(int dirfd, const char *name)
{
	char buf[256];
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	size_t start = 2;

	if (fd >= 0)
		close(fd);
	if (n < 3 || buf[0] != '#' || buf[1] != '!')
		return NULL;
	buf[n] = '\0';
	while (buf[start] == ' ' || buf[start] == '\t')
		start++;
	return buf[start] == '/' ? strndup(buf + start, strcspn(buf + start, " \t\r\n")) : NULL;
}

/*
 * Where the link real_dir/name leads, resolved. real_dir is resolved already, so a target
 * that is a plain name in the same folder and not itself a link (rustup's cargo -> rustup)
 * needs only a readlink and an lstat; anything else goes through realpath(). NULL: dangling.
 */
static char *link_target(int dirfd, const char *real_dir, const char *name, const char *full)
{
	char buf[NAME_MAX + 1], *cand;
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf) - 1);
	struct stat st;

	if (n <= 0 || n >= (ssize_t)sizeof(buf) - 1)
		return realpath(full, NULL);
	buf[n] = '\0';
	if (strchr(buf, '/') || !strcmp(buf, ".") || !strcmp(buf, ".."))
		return realpath(full, NULL);
	if (fstatat(dirfd, buf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL; /* dangling */
	if (S_ISLNK(st.st_mode))
		return realpath(full, NULL);
	cand = util_path_join(real_dir, buf);
	return cand;
}

/* The link's target and the script's interpreter, when they lie elsewhere under $HOME. */
static int scan_one(struct jail_box *b, int dirfd, const char *real_dir, const char *name,
		    unsigned char type, const char *entry)
{
	char *full = util_path_join(real_dir, name), *target = NULL, *interp = NULL, *why = NULL;
	char *ireal = NULL;
	struct stat st;
	bool link, reg;
	int rc = 0;

	if (!full)
		return util_err(-ENOMEM, "out of memory");
	/* readdir's type says it for most file systems; lstat only when it does not. */
	if (type == DT_UNKNOWN) {
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			goto out;
		type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
	}
	link = type == DT_LNK;
	reg = type == DT_REG;
	if (link) {
		/* real_dir is resolved already: only a link needs resolving. */
		target = link_target(dirfd, real_dir, name, full);
		if (!target)
			goto out; /* a dangling link: nothing to show */
		/* Only a regular file is read: opening a device or a FIFO may do something. */
		reg = stat(target, &st) == 0 && S_ISREG(st.st_mode);
	}
	if (link && strcmp(full, target) && util_path_under(target, b->home_real) &&
	    !util_path_under(target, real_dir))
		rc = add_target(b, target, (why = say_why(entry, name)));
	interp = rc == 0 && reg ? shebang(dirfd, name) : NULL;
	if (interp && util_path_under(interp, b->home)) {
		rc = add_target(b, interp, why ? why : (why = say_why(entry, name)));
		ireal = rc == 0 ? realpath(interp, NULL) : NULL;
		if (ireal && strcmp(ireal, interp) && util_path_under(ireal, b->home_real))
			rc = add_target(b, ireal, why);
	}
out:
	free(ireal);
	free(interp);
	free(why);
	free(target);
	free(full);
	return rc;
}

int jail_box_tool_scan(struct jail_box *b, const char *norm, const char *real)
{
	char *entry = jail_box_tilde(b, norm);
	DIR *d = opendir(real);
	struct dirent *de;
	int rc = entry ? 0 : util_err(-ENOMEM, "out of memory");
	unsigned n = 0;

	while (d && rc == 0 && n < SCAN_MAX && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (de->d_type != DT_REG && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
			continue;
		n++;
		rc = scan_one(b, dirfd(d), real, de->d_name, de->d_type, entry);
	}
	if (d)
		closedir(d);
	free(entry);
	return rc;
}
