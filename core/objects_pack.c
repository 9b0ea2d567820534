/*
 * core/objects_pack.c: a base's object store (core/objects_view.c) written by the host's own
 * git: `git pack-objects --revs` run on the origin's repository (host data, trusted; never a
 * directory a box wrote) with the base commit as its only tip on stdin, and `^ANCESTOR` when
 * an ancestor's store is there already. git walks the commit's history, trees and blobs and
 * packs those alone; a delta is reused from the origin's packs only when its base is packed
 * too (no --thin), so the pack is whole and names nothing beyond the base's history. Replace
 * refs are not followed (GIT_NO_REPLACE_OBJECTS) and no GIT_* variable of the caller reaches
 * git. On git.git the walker that re-stores deltas whole wrote 4.9 GB in 363 s; this writes
 * about the origin's pack (bench/objects_view.sh). When git cannot do it (not installed, a
 * partial clone's missing objects), the caller falls back to that walker.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The caller's environment without GIT_*, plus GIT_NO_REPLACE_OBJECTS=1 (caller frees). */
static char **git_env(void)
{
	size_t n = 0, k = 0;
	char **v;

	while (environ[n])
		n++;
	if (!(v = calloc(n + 2, sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "GIT_", 4))
			v[k++] = environ[i];
	v[k++] = "GIT_NO_REPLACE_OBJECTS=1";
	v[k] = NULL;
	return v;
}

int core_objects_pack(const char *gitdir, const char *tmp, const git_oid *tip, const git_oid * not )
{
	char *gd = util_asprintf("--git-dir=%s", gitdir), *pack = util_path_join(tmp, "pack");
	char *prefix = pack ? util_path_join(pack, "pack") : NULL;
	char line[2 * (GIT_OID_HEXSZ + 2) + 1];
	char **env = git_env();
	int in[2] = {-1, -1}, rc = 0, status = 0;
	pid_t pid = -1;
	size_t len;

	if (!gd || !prefix || !env) {
		rc = -ENOMEM;
		goto out;
	}
	if ((mkdir(pack, 0755) < 0 && errno != EEXIST) || pipe2(in, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	if (pid == 0) {
		char *const argv[] = {
		    "git", gd, "pack-objects", "--revs", "--delta-base-offset", "-q", prefix, NULL};
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (dup2(in[0], 0) < 0 || null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(127);
		execvpe("git", argv, env);
		_exit(127);
	}
	close(in[0]);
	in[0] = -1;
	len = (size_t)snprintf(line, sizeof(line), "%s\n", git_oid_tostr_s(tip));
	if (not )
		len += (size_t)snprintf(line + len, sizeof(line) - len, "^%s\n",
					git_oid_tostr_s(not ));
	{
		void (*old)(int) = signal(SIGPIPE, SIG_IGN);

		if (write(in[1], line, len) != (ssize_t)len)
			rc = -EIO;
		signal(SIGPIPE, old);
	}
	close(in[1]);
	in[1] = -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			rc = -errno;
			break;
		}
	if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		rc = -EIO;
out:
	if (in[0] >= 0)
		close(in[0]);
	if (in[1] >= 0)
		close(in[1]);
	free(env);
	free(prefix);
	free(pack);
	free(gd);
	return rc;
}
