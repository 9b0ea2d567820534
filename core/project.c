/* core/project.c: finding the origin repository and its state directory. */
#include "core/core.h"
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "fs/fs.h"

static char *strip_slash(const char *path)
{
	char *s = strdup(path);
	size_t n;

	if (!s)
		return NULL;
	n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

void core_git_ready(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fs_git_init);
}

/* root, gitdir and commondir known: the paths made from them. */
static int project_paths(struct core_project *p)
{
	char *objects = util_path_join(p->commondir, "objects");

	p->objects = objects ? strip_slash(objects) : NULL;
	free(objects);
	p->state_dir = core_state_dir_of(p->root, p->gitdir, p->commondir);
	return p->objects && p->state_dir ? 0 : -ENOMEM;
}

/* libgit2's way: discovery from `real` upwards, then the cache for the next time. */
static int project_discover(struct core_project *p, const char *real, const char *workdir)
{
	int rc;

	core_git_ready();
	rc = git_repository_open_ext(&p->repo, real, 0, NULL);
	if (rc == GIT_ENOTFOUND)
		return util_err(-ENOENT, "%s: not inside a git repository", real);
	else if (rc < 0)
		return util_err(-EIO, "%s: %s", workdir, git_error_last()->message);
	if (git_repository_is_bare(p->repo))
		return util_err(-EINVAL, "%s: a bare repository (arborinth needs a working tree)",
				real);
	p->root = strip_slash(git_repository_workdir(p->repo));
	p->gitdir = strip_slash(git_repository_path(p->repo));
	p->commondir = strip_slash(git_repository_commondir(p->repo));
	if (!p->root || !p->gitdir || !p->commondir)
		return -ENOMEM;
	rc = project_paths(p);
	if (rc == 0)
		core_project_cache_write(p);
	return rc;
}

int core_project_open(struct core_project **out, const char *workdir)
{
	struct core_project *p = NULL;
	struct core_view_of view = {0};
	char real[PATH_MAX];
	struct stat st;
	int rc;

	*out = NULL;
	if (stat(workdir, &st) < 0)
		return util_err(-errno, "%s: %s", workdir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return util_err(-ENOTDIR, "%s: not a directory", workdir);
	if (!realpath(workdir, real))
		return util_err(-errno, "%s: %s", workdir, strerror(errno));
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* Inside a view: its origin, never the repository the box made of the view. */
	rc = core_view_of(real, &view);
	if (rc == 0 && strlen(view.root) < sizeof(real)) {
		memcpy(real, view.root, strlen(view.root) + 1);
		p->view_ws = view.name;
		view.name = NULL;
	} else if (rc != -ENOENT) {
		goto out;
	}
	rc = core_project_cached(p, real);
	if (rc == 0)
		rc = project_paths(p);
	else if (rc == -ENOENT)
		rc = project_discover(p, real, workdir);
	if (rc == 0 && view.state && strcmp(view.state, p->state_dir))
		rc = util_err(-EINVAL,
			      "%s: a workspace view whose origin %s keeps its state elsewhere",
			      workdir, view.root);
	if (rc == 0)
		rc = core_state_upgrade(p);
	if (rc < 0)
		goto out;
	*out = p;
	p = NULL;
out:
	core_view_of_free(&view);
	core_project_free(p);
	return rc;
}

void core_project_free(struct core_project *p)
{
	if (!p)
		return;
	audit_db_close(p->db);
	git_repository_free(p->repo);
	free(p->root);
	free(p->gitdir);
	free(p->commondir);
	free(p->objects);
	free(p->state_dir);
	free(p->disk);
	free(p->note);
	free(p->view_ws);
	free(p);
}

int core_project_set_disk(struct core_project *p, const char *size)
{
	int64_t bytes;
	char *copy;
	int rc = fs_disk_parse(size, &bytes);

	if (rc < 0)
		return rc;
	copy = strdup(size);
	if (!copy)
		return util_err(-ENOMEM, "out of memory");
	free(p->disk);
	p->disk = copy;
	return 0;
}

const char *core_project_root(const struct core_project *p)
{
	return p->root;
}

const char *core_project_gitdir(const struct core_project *p)
{
	return p->gitdir;
}

const char *core_project_objects_dir(const struct core_project *p)
{
	return p->objects;
}

const char *core_project_state_dir(const struct core_project *p)
{
	return p->state_dir;
}

const char *core_project_note(const struct core_project *p)
{
	return p->note;
}

const char *core_project_view_ws(const struct core_project *p)
{
	return p->view_ws;
}

git_repository *core_project_repo(const struct core_project *p)
{
	/* A cache of the project, like its paths: set once, on the first call that needs it. */
	struct core_project *mp = (struct core_project *)p;
	git_repository *repo = NULL;

	if (p->repo)
		return p->repo;
	core_git_ready();
	/* Exactly the root found (from the cache): no search upwards. */
	if (git_repository_open_ext(&repo, p->root, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0) {
		util_err(-EIO, "%s: %s", p->root, git_error_last()->message);
		return NULL;
	}
	mp->repo = repo;
	return repo;
}

int core_project_head(const struct core_project *p, struct core_head *out)
{
	git_reference *head = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!core_project_repo(p))
		return -EIO;
	rc = git_repository_head(&head, p->repo);
	if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND) {
		git_reference *sym = NULL;

		out->unborn = true;
		if (git_reference_lookup(&sym, p->repo, "HEAD") == 0 &&
		    git_reference_type(sym) == GIT_REFERENCE_SYMBOLIC) {
			const char *t = git_reference_symbolic_target(sym);

			out->branch = strdup(util_str_has_prefix(t, "refs/heads/") ? t + 11 : t);
		}
		git_reference_free(sym);
		return 0;
	}
	if (rc < 0)
		return util_err(-EIO, "cannot read HEAD: %s", git_error_last()->message);
	git_oid_tostr(out->commit, sizeof(out->commit), git_reference_target(head));
	if (git_reference_is_branch(head))
		out->branch = strdup(git_reference_shorthand(head));
	git_reference_free(head);
	return 0;
}

/*
 * The state directory is its owner's only (0700, whatever the umask): it holds state.db, with
 * every session's argv and paths. One an older version made 0755 is closed when this user owns
 * it. 0711 (search only) is left as it is: core/mount.c opens it so for a view shared with
 * --allow-other, whose users pass through it to NAME/workdir and can list nothing.
 */
static int state_dir_private(const struct core_project *p)
{
	int fd = open(p->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int rc = 0;

	if (fd < 0)
		return errno == ENOENT ? 0
				       : util_err(-errno, "%s: %s", p->state_dir, strerror(errno));
	if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 066) &&
	    fchmod(fd, 0700) < 0)
		rc = util_err(-errno, "cannot make %s private: %s", p->state_dir, strerror(errno));
	close(fd);
	return rc;
}

/*
 * In the git directory, where no git command deletes or walks (core/state_dir.c): nothing to
 * exclude from git status. A `/.arborinth/` line an older version put in info/exclude stays,
 * harmless.
 */
static int state_dir_init(struct core_project *p)
{
	char *parent = strdup(p->state_dir);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	int rc = parent ? 0 : -ENOMEM;

	if (slash && slash != parent) {
		*slash = '\0';
		rc = util_mkdir_p(parent, 0700); /* arborinth/worktrees for a linked worktree */
	}
	free(parent);
	if (rc < 0)
		return util_err(rc, "%s: %s", p->state_dir, strerror(-rc));
	if (mkdir(p->state_dir, 0700) < 0 ? errno != EEXIST : chmod(p->state_dir, 0700) < 0)
		return util_err(-errno, "%s: %s", p->state_dir, strerror(errno));
	rc = state_dir_private(p);
	/* The old layout (tests): as an older version made it, excluded from git status. */
	if (rc == 0 && getenv("ARBORINTH_TEST_OLD_LAYOUT")) {
		char *exclude = util_path_join(p->commondir, "info/exclude");
		char *info = util_path_join(p->commondir, "info");

		rc = exclude && info ? util_mkdir_p(info, 0755) : -ENOMEM;
		rc = rc ?: util_append_line_once(exclude, "/" CORE_OLD_STATE_NAME "/");
		free(exclude);
		free(info);
	}
	return rc;
}

int core_project_db(struct core_project *p, bool create, sqlite3 **out)
{
	char *path = NULL;
	struct stat st;
	int rc = 0;

	*out = NULL;
	if (p->db) {
		*out = p->db;
		return 0;
	}
	path = util_path_join(p->state_dir, "state.db");
	if (!path)
		return -ENOMEM;
	if (!create && stat(path, &st) < 0) {
		rc = -ENOENT;
		goto out;
	}
	rc = create ? state_dir_init(p) : state_dir_private(p);
	if (rc < 0)
		goto out;
	rc = audit_db_open(&p->db, path);
	if (rc == 0)
		*out = p->db;
	/* The user's list of projects (workspace list --all, gc) learns of this one. */
	if (rc == 0 && create)
		core_registry_add(p->state_dir, p->root);
out:
	free(path);
	return rc;
}

int core_rev_resolve(const struct core_project *p, const char *rev, git_oid *out)
{
	git_object *obj = NULL;
	git_object *commit = NULL;
	int rc;

	if (!core_project_repo(p))
		return -EIO;
	rc = git_revparse_single(&obj, p->repo, rev);
	if (rc < 0) {
		rc = util_err(-ENOENT, "unknown revision '%s'", rev);
		goto out;
	}
	if (git_object_peel(&commit, obj, GIT_OBJECT_COMMIT) < 0) {
		rc = util_err(-EINVAL, "revision '%s' does not name a commit", rev);
		goto out;
	}
	git_oid_cpy(out, git_object_id(commit));
	rc = 0;
out:
	git_object_free(commit);
	git_object_free(obj);
	return rc;
}

int core_fault(const char *point)
{
	const char *want = getenv("ARBORINTH_FAULT");

	if (want && !strcmp(want, point))
		return util_err(-EIO, "injected failure at %s", point);
	return 0;
}
