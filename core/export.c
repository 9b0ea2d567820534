/*
 * core/export.c: a workspace's export repository, NAME/export.git, the place the origin's
 * remote arborinth/NAME points at. Trust boundary: git (and libgit2) follow alternates,
 * symlinked refs, packed-refs and commondir of the repository they fetch from, and the
 * workspace's gitdir is the box's `.git`: so no fetch ever reads it. The export is bare,
 * written only by arborinth, out of the box's reach (beside NAME/git, which is the only part
 * of NAME/ the view shows), its objects borrowed from the origin through an alternates file
 * arborinth wrote. core_ws_export fills it: the gitdir checked (core/ws_read.c), the branch
 * arborinth/NAME read as a plain ref file, and the objects that branch reaches beyond the
 * origin copied one by one from the workspace's own store (core/ws_copy.c); its ref is set
 * last. A refusal leaves the export as the last export left it.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char export_config[] = "[core]\n"
				    "\trepositoryformatversion = 0\n"
				    "\tfilemode = true\n"
				    "\tbare = true\n";

static int put(const char *dir, const char *name, const char *text)
{
	char *path = util_path_join(dir, name);
	int rc = path ? util_write_file(path, text, strlen(text), 0644) : -ENOMEM;

	free(path);
	return rc;
}

int core_export_write(struct core_project *p, const char *dir, const char *name,
		      const git_oid *base)
{
	static const char *const dirs[] = {"objects/info", "objects/pack", "refs/heads/arborinth",
					   "refs/tags"};
	char hex[GIT_OID_HEXSZ + 1];
	char *alt = util_asprintf("%s\n", p->objects), *ref = NULL, *head = NULL;
	int rc = alt ? 0 : -ENOMEM;

	git_oid_tostr(hex, sizeof(hex), base);
	for (size_t i = 0; rc == 0 && i < ARB_ARRAY_LEN(dirs); i++) {
		char *d = util_path_join(dir, dirs[i]);

		rc = d ? util_mkdir_p(d, 0755) : -ENOMEM;
		free(d);
	}
	ref = util_asprintf("refs/heads/arborinth/%s", name);
	head = util_asprintf("ref: refs/heads/arborinth/%s\n", name);
	if (rc == 0 && (!ref || !head))
		rc = -ENOMEM;
	rc = rc ?: put(dir, "HEAD", head);
	rc = rc ?: put(dir, "config", export_config);
	rc = rc ?: put(dir, "objects/info/alternates", alt);
	rc = rc ?: put(dir, "description", "arborinth workspace export\n");
	if (rc == 0) {
		char *line = util_asprintf("%s\n", hex);

		rc = line ? put(dir, ref, line) : -ENOMEM;
		free(line);
	}
	if (rc < 0)
		rc = util_err(rc, "cannot write %s: %s", dir, strerror(-rc));
	free(ref);
	free(head);
	free(alt);
	return rc;
}

char *core_export_path(const struct core_ws *ws)
{
	return util_path_join(ws->root, "export.git");
}

/* The export exists (written now, at the base, for a workspace made before exports). */
static int export_ready(struct core_project *p, const struct core_ws *ws, const char *dir)
{
	struct stat st;
	git_oid base;

	if (lstat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : util_err(-EEXIST, "%s is not a directory", dir);
	if (git_oid_fromstr(&base, ws->base_commit) < 0)
		return util_err(-EINVAL, "workspace %s: bad base commit", ws->name);
	return core_export_write(p, dir, ws->name, &base);
}

int core_export_open(struct core_project *p, const struct core_ws *ws, git_repository **out)
{
	char *dir = core_export_path(ws);
	int rc = dir ? export_ready(p, ws, dir) : util_err(-ENOMEM, "out of memory");

	*out = NULL;
	if (rc == 0 && git_repository_open_bare(out, dir) < 0)
		rc = util_err(-EIO, "%s: %s", dir, git_error_last()->message);
	free(dir);
	return rc;
}

/* The origin's remote arborinth/NAME points at the export (re-pointed from the gitdir). */
static int remote_repoint(struct core_project *p, const struct core_ws *ws, const char *dir)
{
	git_remote *r = NULL;
	int rc = 0;

	if (git_remote_lookup(&r, core_project_repo(p), ws->remote) < 0)
		return util_err(-ENOENT, "the origin has no remote %s", ws->remote);
	if (!git_remote_url(r) || strcmp(git_remote_url(r), dir) != 0) {
		if (git_remote_set_url(core_project_repo(p), ws->remote, dir) < 0)
			rc = util_err(-EIO, "cannot point remote %s at %s: %s", ws->remote, dir,
				      git_error_last()->message);
	}
	git_remote_free(r);
	return rc;
}

int core_ws_export(struct core_project *p, const struct core_ws *ws, git_oid *tip, size_t *copied)
{
	char *dir = core_export_path(ws);
	char *ref = util_asprintf("refs/heads/%s", ws->branch);
	struct core_wsgit *g = NULL;
	git_repository *ex = NULL;
	git_reference *r = NULL;
	git_odb *odb = NULL;
	int rc = dir && ref ? 0 : util_err(-ENOMEM, "out of memory"), lock = -1;

	if (copied)
		*copied = 0;
	core_git_ready();
	/* Boxes of one workspace that end at once export one after the other. */
	if (rc == 0 && (lock = core_ws_lock(ws)) < 0)
		rc = lock;
	if (rc == 0 && !core_project_repo(p))
		rc = -EIO;
	rc = rc ?: export_ready(p, ws, dir);
	/* Re-pointed before anything is read: even a refused export leaves `git fetch` safe. */
	rc = rc ?: remote_repoint(p, ws, dir);
	rc = rc ?: core_wsgit_open(&g, p, ws);
	rc = rc ?: core_wsgit_ref(g, ref, tip);
	rc = rc ?: core_export_open(p, ws, &ex);
	if (rc == 0 && git_repository_odb(&odb, ex) < 0)
		rc = util_err(-EIO, "%s: %s", dir, git_error_last()->message);
	rc = rc ?: core_wsgit_copy(g, odb, tip, GIT_OBJECT_COMMIT, ref, copied);
	if (rc == 0 && git_reference_create(&r, ex, ref, tip, 1, "arborinth: export") < 0)
		rc = util_err(-EIO, "%s: cannot set %s: %s", dir, ref, git_error_last()->message);
	git_reference_free(r);
	git_odb_free(odb);
	git_repository_free(ex);
	core_wsgit_free(g);
	core_ws_unlock(lock);
	free(ref);
	free(dir);
	return rc;
}
