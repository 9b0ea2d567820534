/*
 * core/ws_names.c: the workspace names of every checkout of a repository. The main checkout
 * and each linked worktree keep their workspaces in state directories of their own
 * (<commondir>/arborinth[/worktrees/ID]/workspaces/NAME, core/state_dir.c), each with its own
 * database, but they share the origin's refs/arborinth/NAME and remotes arborinth/NAME. So a
 * name is known across checkouts by its folder: NAME, or .new-NAME.* while it is created (the
 * folder exists before the ref is written, core/ws_create.c). Names read from the disk are
 * only compared, never joined to a path.
 */
#include "core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The workspace name an entry of a workspaces/ folder stands for (new string), or NULL. */
static char *name_of_entry(const char *e)
{
	const char *dot;

	if (!strncmp(e, ".new-", 5) && (dot = strrchr(e + 5, '.')))
		return strndup(e + 5, (size_t)(dot - (e + 5)));
	return e[0] == '.' ? NULL : strdup(e);
}

/* The names of dir's workspaces, added to *v (*n of them). 0, or -ENOMEM. */
static int add_from(const char *dir, char ***v, size_t *n)
{
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int rc = dir ? 0 : -ENOMEM;

	while (d && rc == 0 && (e = readdir(d))) {
		char *name = name_of_entry(e->d_name), **nv;

		if (!name || !*name) {
			free(name);
			continue;
		}
		nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			free(name);
			rc = -ENOMEM;
			break;
		}
		*v = nv;
		(*v)[(*n)++] = name;
	}
	if (d)
		closedir(d);
	return rc;
}

int core_ws_names_all(const struct core_project *p, bool others_only, char ***out, size_t *n)
{
	char *top = util_asprintf("%s/arborinth", p->commondir);
	char *wts = top ? util_path_join(top, "worktrees") : NULL;
	char *dir = top ? util_path_join(top, "workspaces") : NULL;
	DIR *d = NULL;
	struct dirent *e;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!wts || !dir) {
		rc = -ENOMEM;
		goto out;
	}
	if (!others_only || strcmp(p->state_dir, top))
		rc = add_from(dir, out, n);
	d = opendir(wts);
	while (d && rc == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		free(dir);
		dir = util_asprintf("%s/%s", wts, e->d_name);
		if (dir && others_only && !strcmp(dir, p->state_dir))
			continue;
		free(dir);
		dir = util_asprintf("%s/%s/workspaces", wts, e->d_name);
		rc = add_from(dir, out, n);
	}
out:
	if (d)
		closedir(d);
	if (rc < 0) {
		core_ws_names_free(*out, *n);
		*out = NULL;
		*n = 0;
		rc = util_err(rc, "out of memory");
	}
	free(dir);
	free(wts);
	free(top);
	return rc;
}

void core_ws_names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

bool core_ws_names_has(char *const *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}
