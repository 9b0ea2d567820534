/*
 * lib/box_home.c: what the host hands the box besides its mounts: files written into the
 * workspace's home (the box's $HOME; the proxy's key files and CA, a launcher's login and
 * config files) and variables. The box can write its
 * home too, so every step goes through a directory descriptor and no link is followed: a link
 * the box planted is refused (a directory) or replaced (the file), never written through.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail/jail.h"

int lib_home_dir_open(const char *home, const char *sub, int *out)
{
	char *copy = strdup(sub), *save = NULL;
	int dir = -1, rc = 0;

	*out = -1;
	if (!copy)
		return util_err(-ENOMEM, "out of memory");
	dir = open(home, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (dir < 0) {
		rc = util_err(-errno, "cannot open %s: %s", home, strerror(errno));
		goto out;
	}
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int next;

		if (!strcmp(c, ".") || !strcmp(c, "..")) {
			rc = util_err(-EINVAL, "bad directory %s in %s", sub, home);
			break;
		}
		if (mkdirat(dir, c, 0700) < 0 && errno != EEXIST) {
			rc =
			    util_err(-errno, "cannot create %s/%s: %s", home, sub, strerror(errno));
			break;
		}
		next = openat(dir, c, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (next < 0) {
			rc = util_err(-errno, "%s/%s is not a directory of the workspace (%s)",
				      home, sub, strerror(errno));
			break;
		}
		close(dir);
		dir = next;
	}
	if (rc == 0) {
		*out = dir;
		dir = -1;
	}
out:
	if (dir >= 0)
		close(dir);
	free(copy);
	return rc;
}

int lib_home_write(const char *home, const char *sub, const char *name, const char *data)
{
	int dir = -1, rc = lib_home_dir_open(home, sub, &dir);

	if (rc == 0)
		rc = util_write_file_at(dir, name, data, strlen(data), 0600, (uid_t)-1, 0);
	if (dir >= 0)
		close(dir);
	return rc;
}

int lib_box_env(struct jail_box *b, const char *name, const char *value)
{
	char *kv = util_asprintf("%s=%s", name, value);
	int rc = kv ? jail_box_add_env(b, kv) : util_err(-ENOMEM, "out of memory");

	free(kv);
	return rc;
}
