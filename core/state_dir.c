/*
 * core/state_dir.c: where a project's state lives, and which project a folder inside a
 * workspace view belongs to.
 *
 * The state (state.db, blobs, caches, every workspace's layer, gitdir, home and view) lives in
 * the origin's git directory, where no git command deletes or walks: `git clean` never enters
 * .git, `git gc` and `git worktree prune` touch only what they know.
 * - the main worktree: <commondir>/arborinth;
 * - a linked worktree: <commondir>/arborinth/worktrees/<id>, <id> being the name git gives it
 *   (its gitdir <commondir>/worktrees/<id>). Not under that gitdir: `git worktree prune`
 *   deletes it once the worktree's folder is gone, and unmerged work would go with it. The
 *   state outlives the worktree; a worktree added again under the same name finds it.
 * Views are at <state>/workspaces/NAME/workdir: a short path with no ids in it, as the box
 * sees its workdir at the same path.
 *
 * ARBORINTH_TEST_OLD_LAYOUT (tests only) keeps an older version's <root>/.arborinth, so the
 * tests can show what git did to it and upgrade it (core/state_move.c).
 */
#include "core/core_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *core_state_dir_of(const char *root, const char *gitdir, const char *commondir)
{
	const char *id = strrchr(gitdir, '/');

	if (getenv("ARBORINTH_TEST_OLD_LAYOUT"))
		return util_path_join(root, CORE_OLD_STATE_NAME);
	if (!strcmp(gitdir, commondir))
		return util_path_join(commondir, "arborinth");
	return util_asprintf("%s/arborinth/worktrees/%s", commondir, id ? id + 1 : gitdir);
}

/* Whether path (made of resolved parts) is a directory, not a link; a regular file with reg. */
static bool is(const char *path, bool reg)
{
	struct stat st;

	return lstat(path, &st) == 0 && (reg ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode));
}

/*
 * The origin's root for state directory `top`/worktrees/`id` (a linked worktree): the folder
 * of the `.git` file git recorded in <commondir>/worktrees/<id>/gitdir, git's own record (the
 * origin's, never a box's).
 */
static char *worktree_root(const char *commondir, const char *id)
{
	char *path = util_asprintf("%s/worktrees/%s/gitdir", commondir, id), *text = NULL;
	char *root = NULL;
	size_t len;

	if (path && util_read_file(path, &text, &len) == 0 && len < 4096 && !memchr(text, 0, len)) {
		text[strcspn(text, "\n")] = '\0';
		len = strlen(text);
		if (text[0] == '/' && len > 5 && !strcmp(text + len - 5, "/.git"))
			root = strndup(text, len - 5);
	}
	util_err_clear();
	free(text);
	free(path);
	return root;
}

/*
 * One candidate: real[0..at) is <commondir>, real[at..] starts "/arborinth/". Fills v when
 * the rest is workspaces/NAME/workdir[/...] or worktrees/ID/workspaces/NAME/workdir[/...] of a
 * state directory that exists (a state.db) and whose folders are folders.
 */
static int candidate(const char *real, size_t at, struct core_view_of *v)
{
	const char *rest = real + at + strlen("/arborinth/");
	char *commondir = strndup(real, at), *id = NULL, *name = NULL, *db = NULL, *ws = NULL;
	size_t state_len = (size_t)(rest - real) - 1, n;
	int rc = -ENOENT;

	if (!commondir)
		return -ENOMEM;
	if (util_str_has_prefix(rest, "worktrees/")) {
		n = strcspn(rest + 10, "/");
		id = strndup(rest + 10, n);
		state_len += 10 + n + 1;
		rest += 10 + n + (rest[10 + n] == '/');
	}
	if (!util_str_has_prefix(rest, "workspaces/"))
		goto out;
	n = strcspn(rest + 11, "/");
	name = strndup(rest + 11, n);
	if (!name || strncmp(rest + 11 + n, "/workdir", 8) ||
	    (rest[19 + n] != '\0' && rest[19 + n] != '/'))
		goto out;
	if (id && (!*id || id[0] == '.'))
		goto out;
	if (core_ws_name_check(name) < 0) {
		util_err_clear();
		goto out;
	}
	v->state = strndup(real, state_len);
	db = v->state ? util_path_join(v->state, "state.db") : NULL;
	ws = v->state ? util_asprintf("%s/workspaces/%s/workdir", v->state, name) : NULL;
	if (!db || !ws || !is(commondir, false) || !is(v->state, false) || !is(db, true) ||
	    !is(ws, false))
		goto out;
	if (id) {
		v->root = worktree_root(commondir, id);
	} else {
		n = strlen(commondir);
		if (n > 5 && !strcmp(commondir + n - 5, "/.git"))
			v->root = strndup(commondir, n - 5);
	}
	if (!v->root) {
		rc = util_err(-EINVAL,
			      "%s: inside a view of a repository whose git directory is not "
			      "<root>/.git; name the repository with --workdir",
			      real);
		goto out;
	}
	v->name = name;
	name = NULL;
	rc = 0;
out:
	if (rc < 0) {
		free(v->state);
		v->state = NULL;
	}
	free(ws);
	free(db);
	free(name);
	free(id);
	free(commondir);
	return rc;
}

int core_view_of(const char *real, struct core_view_of *v)
{
	*v = (struct core_view_of){0};
	/*
	 * The leftmost match: what is to its right may be the box's (a folder it made in its
	 * view called .git/arborinth/workspaces/...), what is to its left is the host's.
	 */
	for (const char *s = strstr(real, "/arborinth/"); s; s = strstr(s + 1, "/arborinth/")) {
		int rc = candidate(real, (size_t)(s - real), v);

		if (rc != -ENOENT)
			return rc;
	}
	return -ENOENT;
}

void core_view_of_free(struct core_view_of *v)
{
	free(v->root);
	free(v->name);
	free(v->state);
	*v = (struct core_view_of){0};
}

int core_state_dir_share(const struct core_project *p)
{
	char *top = util_path_join(p->commondir, "arborinth");
	char *wts = top ? util_path_join(top, "worktrees") : NULL;
	const char *dirs[] = {top, wts, p->state_dir};
	size_t first = 2;
	int rc = 0;

	if (!wts) {
		rc = -ENOMEM;
		goto out;
	}
	/* A linked worktree's: its parents too, when they are the layout's (not the old one). */
	if (util_path_under(p->state_dir, wts) && strcmp(p->state_dir, wts))
		first = 0;
	for (size_t i = first; rc == 0 && i < ARB_ARRAY_LEN(dirs); i++)
		if (chmod(dirs[i], 0711) < 0)
			rc = util_err(-errno, "%s: %s", dirs[i], strerror(errno));
out:
	free(wts);
	free(top);
	return rc;
}
