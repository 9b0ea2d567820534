/*
 * jail/cgroup2.c: where a box's cgroup goes on the unified hierarchy (cgroup v2), and the v2
 * names of the limit files. On v2 a cgroup with processes cannot hand controllers to its
 * children (the "no internal processes" rule), and moving a process needs write access to the
 * common ancestor's cgroup.procs; so the box's cgroup is a sibling of ours, below our parent,
 * when that parent is ours to write: root's own cgroup on a host without systemd, or a subtree
 * systemd delegated to the user (user@UID.service and what is below it). The controller is
 * switched on in the parent's cgroup.subtree_control when it is not already. Where the parent
 * is not ours, the systemd user manager delegates a scope to us (cgscope.c): we move into a
 * leaf of it and the scope is the parent.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define CGROUP2_MAGIC 0x63677270

bool jail_cg2_is(const char *dir)
{
	struct statfs fs;

	return dir && statfs(dir, &fs) == 0 && fs.f_type == CGROUP2_MAGIC;
}

/* Where the unified hierarchy is mounted (caller frees), or NULL. */
static char *cg2_mount(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[1024];
	char *out = NULL;

	while (f && !out && fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") && sscanf(line, "%*s %*s %*s %*s %1023s", mnt) == 1)
			out = strdup(mnt);
	if (f)
		fclose(f);
	return out;
}

/* Our cgroup on the unified hierarchy ("/user.slice/..."; caller frees), or NULL. */
static char *cg2_own(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	char *out = NULL;

	while (f && !out && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			out = strdup(line + 3);
		}
	if (f)
		fclose(f);
	return out;
}

/* Whether word is one of the space-separated words of dir/file. */
static bool cg2_lists(const char *dir, const char *file, const char *word)
{
	char *path = util_path_join(dir, file), *text = NULL, *save = NULL;
	bool found = false;
	size_t len;

	if (path && util_read_file(path, &text, &len) == 0)
		for (char *t = strtok_r(text, " \n", &save); t && !found;
		     t = strtok_r(NULL, " \n", &save))
			found = !strcmp(t, word);
	free(text);
	free(path);
	return found;
}

/* Switches controller on for dir's children; 0, or -errno. */
static int cg2_enable(const char *dir, const char *controller)
{
	char *path = util_path_join(dir, "cgroup.subtree_control"), word[64];
	int fd = path ? open(path, O_WRONLY | O_CLOEXEC) : -1, rc = 0;

	snprintf(word, sizeof(word), "+%s", controller);
	if (fd < 0 || write(fd, word, strlen(word)) < 0)
		rc = path ? -errno : -ENOMEM;
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

int jail_cg2_base(const char *controller, const char *option, char **out)
{
	char *mnt = cg2_mount(), *own = mnt ? cg2_own() : NULL, *parent = NULL, *procs = NULL;
	int rc = 0;

	*out = NULL;
	if (!mnt || !own) {
		rc = util_err(-ENOTSUP,
			      "%s needs the %s cgroup controller (this host mounts neither cgroup "
			      "v1's nor the unified hierarchy)",
			      option, controller);
		goto out;
	}
	if (!cg2_lists(mnt, "cgroup.controllers", controller)) {
		rc = util_err(-ENOTSUP,
			      "%s needs the %s cgroup controller, which this host's "
			      "cgroup v2 does not offer",
			      option, controller);
		goto out;
	}
	/* The parent of our cgroup: the root's, when we are in the root itself. */
	if (strcmp(own, "/")) {
		char *slash = strrchr(own, '/');

		*slash = '\0';
	}
	parent = util_asprintf("%s%s", mnt, strcmp(own, "/") && *own ? own : "");
	procs = parent ? util_path_join(parent, "cgroup.procs") : NULL;
	if (!procs) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (access(parent, W_OK) < 0 || access(procs, W_OK) < 0) {
		rc = util_err(-EACCES,
			      "%s: cannot place limits on cgroup v2: no writable cgroup (%s is "
			      "not this user's) and no systemd user manager (run inside "
			      "'systemd-run --user --scope -p Delegate=yes', or see arborinth "
			      "doctor)",
			      option, parent);
		goto out;
	}
	*out = parent;
	parent = NULL;
out:
	free(mnt);
	free(own);
	free(parent);
	free(procs);
	return rc;
}

/* Moves this process into a leaf "supervisor" of the cgroup it is in (a delegated scope). */
static int cg2_into_leaf(const char *option)
{
	char *mnt = cg2_mount(), *own = mnt ? cg2_own() : NULL;
	char *leaf = own ? util_asprintf("%s%s/supervisor", mnt, own) : NULL;
	int rc = 0;

	if (!leaf)
		rc = util_err(-ENOENT, "%s: this process has no cgroup v2", option);
	else if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		rc = util_err(-errno, "%s: cannot create %s in the delegated scope: %s", option,
			      leaf, strerror(errno));
	if (rc == 0)
		rc = jail_cg_write(leaf, "cgroup.procs", "0", false);
	free(leaf);
	free(own);
	free(mnt);
	return rc;
}

int jail_cg2_scope_base(const char *controller, const char *option, char **out)
{
	int rc = jail_cg2_base(controller, option, out);

	if (rc != -EACCES || !jail_cg2_manager())
		return rc;
	util_err_clear();
	rc = jail_cg2_scope(option);
	if (rc == 0)
		rc = cg2_into_leaf(option);
	return rc < 0 ? rc : jail_cg2_base(controller, option, out);
}

int jail_cg2_prepare(const char *base, const char *controller, const char *option)
{
	int rc = 0;

	if (!cg2_lists(base, "cgroup.subtree_control", controller) &&
	    (rc = cg2_enable(base, controller)) < 0)
		rc = util_err(rc,
			      "%s: cannot switch the %s controller on in %s/cgroup.subtree_control "
			      "(%s; the cgroup above it must offer it, and it must hold no "
			      "processes of its own)",
			      option, controller, base, strerror(-rc));
	return rc;
}

int jail_cg2_write_limit(const char *dir, const char *controller, int64_t value)
{
	char text[64];
	int rc;

	if (!strcmp(controller, "memory")) {
		snprintf(text, sizeof(text), "%lld", (long long)value);
		rc = jail_cg_write(dir, "memory.max", text, false);
		/* No swap beyond the limit, as memory.memsw does on v1 (absent without swap). */
		return rc == 0 ? jail_cg_write(dir, "memory.swap.max", "0", true) : rc;
	}
	if (!strcmp(controller, "pids")) {
		snprintf(text, sizeof(text), "%lld", (long long)value);
		return jail_cg_write(dir, "pids.max", text, false);
	}
	snprintf(text, sizeof(text), "%lld 100000", (long long)value * 100);
	return jail_cg_write(dir, "cpu.max", text, false);
}
