/*
 * core/ws_unsaved.c: what deleting a workspace would lose: commits of its branches (and of a
 * detached HEAD) that no ref of the origin reaches, and files of its view that differ from
 * its branch arborinth/NAME's tree. Trust boundary: the gitdir is the box's. It is checked
 * (core_wsgit_open), the branch arborinth/NAME exported (core_ws_export), the other
 * branches listed without following a link (openat2 beneath the gitdir, bounded) and each
 * resolved as a plain ref file; their objects are copied one by one, hashes checked, into the
 * host-owned NAME/export.git, where the commits are walked. The view's tree is built from the
 * layer by the checkpoint code and compared with the branch's tree in the checkpoint store.
 * Overlays' upper layers (what boxes wrote over host folders, kept in the workspace) are
 * counted entry by entry.
 */
#include "core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BRANCHES_MAX  4096 /* branches looked at: bounded, so is the time */
#define BRANCH_DEPTH  16   /* refs/heads/a/b/... */
#define PACKED_MAX_SZ (64u << 20)

/* The tips to walk from, each once. */
struct tips {
	git_oid *v;
	size_t n;
	struct core_wsgit *g;
	git_odb *odb; /* the export's: where each tip's objects are copied */
	size_t seen;
};

/* refname's commit, from the gitdir as a plain ref, and its objects into the export. */
static int tips_add(struct tips *t, const char *refname)
{
	git_oid id, *v;
	int rc;

	if (++t->seen > BRANCHES_MAX)
		return util_err(-E2BIG, "the workspace has more than %d branches", BRANCHES_MAX);
	rc = core_wsgit_ref(t->g, refname, &id);
	if (rc == -ELOOP && !strcmp(refname, "HEAD")) {
		util_err_clear(); /* HEAD on a branch: the branch counts */
		return 0;
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < t->n; i++)
		if (git_oid_equal(&t->v[i], &id))
			return 0;
	rc = core_wsgit_copy(t->g, t->odb, &id, GIT_OBJECT_COMMIT, refname, NULL);
	if (rc < 0)
		return rc;
	v = realloc(t->v, (t->n + 1) * sizeof(*v));
	if (!v)
		return util_err(-ENOMEM, "out of memory");
	t->v = v;
	git_oid_cpy(&v[t->n++], &id);
	return 0;
}

/* A name under refs/heads that cannot be read as a branch (named quoted: the box chose it). */
static int refused(const char *name, int err)
{
	char *q = util_quote(name);
	int rc = util_err(-err, "workspace gitdir: %s: %s", q ? q : "?", strerror(err));

	free(q);
	return rc;
}

/* Loose branches under dir (rel: its refname), each a tip. */
static int tips_loose(struct tips *t, int dir, const char *rel, int depth)
{
	DIR *d = fdopendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		close(dir);
		return refused(rel, errno);
	}
	while (rc == 0 && (e = readdir(d))) {
		char *sub;
		int fd;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sub = util_asprintf("%s/%s", rel, e->d_name);
		if (!sub) {
			rc = util_err(-ENOMEM, "out of memory");
			break;
		}
		fd = core_open_read_beneath(dirfd(d), e->d_name, true);
		if (fd >= 0 && depth < BRANCH_DEPTH)
			rc = tips_loose(t, fd, sub, depth + 1);
		else if (fd >= 0)
			rc = (close(fd), refused(sub, ELOOP));
		else if (errno == ENOTDIR)
			rc = tips_add(t, sub); /* a file: read (and refused) as a ref */
		else if (errno != ENOENT)
			rc = refused(sub, errno);
		free(sub);
	}
	closedir(d);
	return rc;
}

/* Branches only packed-refs names (its lines "<id> refs/heads/..."), each a tip. */
static int tips_packed(struct tips *t, int git)
{
	int fd = core_open_read_beneath(git, "packed-refs", false);
	char *buf = NULL, *save = NULL;
	struct stat st;
	ssize_t len;
	int rc = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : util_err(-errno, "packed-refs: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_size > PACKED_MAX_SZ ||
	    !(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return util_err(-EFBIG, "packed-refs: too big");
	}
	len = read(fd, buf, (size_t)st.st_size);
	close(fd);
	buf[len > 0 ? len : 0] = '\0';
	for (char *l = strtok_r(buf, "\n", &save); rc == 0 && l; l = strtok_r(NULL, "\n", &save)) {
		char *name = strchr(l, ' ');

		if (l[0] != '#' && l[0] != '^' && name &&
		    util_str_has_prefix(name + 1, "refs/heads/"))
			rc = tips_add(t, name + 1);
	}
	free(buf);
	return rc;
}

/* Every branch of the workspace and a detached HEAD, their objects in the export. */
static int tips_collect(struct core_project *p, const struct core_ws *ws, git_odb *odb,
			struct tips *t)
{
	int git = -1, heads = -1, refs = -1;
	int rc = core_wsgit_open(&t->g, p, ws);

	t->odb = odb;
	if (rc < 0)
		return rc;
	git = open(ws->gitdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (git < 0)
		rc = util_err(-errno, "%s: %s", ws->gitdir, strerror(errno));
	if (rc == 0 && (refs = core_open_read_beneath(git, "refs", true)) >= 0 &&
	    (heads = core_open_read_beneath(refs, "heads", true)) >= 0) {
		rc = tips_loose(t, heads, "refs/heads", 0);
		heads = -1; /* closed by tips_loose */
	}
	rc = rc ?: tips_packed(t, git);
	rc = rc ?: tips_add(t, "HEAD");
	if (refs >= 0)
		close(refs);
	if (git >= 0)
		close(git);
	return rc;
}

/* The workspace's own names in the origin, which go with it: they save nothing. */
struct hide_ctx {
	git_repository *origin;
	git_revwalk *walk;
	const char *ref, *remote_prefix;
};

static int hide_ref(const char *refname, void *arg)
{
	struct hide_ctx *h = arg;
	git_reference *ref = NULL;
	git_object *commit = NULL;

	if (!strcmp(refname, h->ref) || util_str_has_prefix(refname, h->remote_prefix))
		return 0;
	/* Refs that name no commit (a tag of a blob, a broken ref) save no commit either. */
	if (git_reference_lookup(&ref, h->origin, refname) == 0 &&
	    git_reference_peel(&commit, ref, GIT_OBJECT_COMMIT) == 0)
		(void)git_revwalk_hide(h->walk, git_object_id(commit));
	git_object_free(commit);
	git_reference_free(ref);
	return 0;
}

/* Commits reachable from the tips (in the export) but from neither base nor an origin ref. */
static int count_commits(struct core_project *p, const struct core_ws *ws, git_repository *ex,
			 const struct tips *t, size_t *out)
{
	char *ref = util_asprintf("refs/arborinth/%s", ws->name);
	char *prefix = util_asprintf("refs/remotes/arborinth/%s/", ws->name);
	struct hide_ctx h = {.origin = core_project_repo(p), .ref = ref, .remote_prefix = prefix};
	git_oid base, id;
	int rc = ref && prefix ? 0 : -ENOMEM;

	*out = 0;
	if (rc == 0 && !h.origin)
		rc = -EIO;
	if (rc == 0 && git_revwalk_new(&h.walk, ex) < 0)
		rc = util_err(-EIO, "revwalk: %s", git_error_last()->message);
	for (size_t i = 0; rc == 0 && i < t->n; i++)
		if (git_revwalk_push(h.walk, &t->v[i]) < 0)
			rc =
			    util_err(-EIO, "workspace %s: %s", ws->name, git_error_last()->message);
	if (rc == 0 && git_oid_fromstr(&base, ws->base_commit) == 0)
		(void)git_revwalk_hide(h.walk, &base);
	if (rc == 0 && git_reference_foreach_name(h.origin, hide_ref, &h) < 0)
		rc = util_err(-EIO, "cannot read the origin's refs: %s", git_error_last()->message);
	while (rc == 0 && git_revwalk_next(&id, h.walk) == 0)
		(*out)++;
	git_revwalk_free(h.walk);
	free(ref);
	free(prefix);
	return rc;
}

/* Entries (files, links, whiteouts; not folders) in NAME/overlay/ * /upper, links not
 * followed; overlays that never got a write count nothing. */
static size_t overlay_changes(const struct core_ws *ws)
{
	char *dir = util_path_join(ws->root, "overlay");
	char *const roots[] = {dir, NULL};
	FTS *fts = dir ? fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR | FTS_XDEV, NULL) : NULL;
	size_t n = 0;
	FTSENT *e;

	while (fts && (e = fts_read(fts))) {
		/* Depth 1: one overlay; only its upper layer holds what the box wrote. */
		if (e->fts_level == 2 && e->fts_info == FTS_D && strcmp(e->fts_name, "upper") != 0)
			(void)fts_set(fts, e, FTS_SKIP);
		else if (e->fts_level >= 3 && e->fts_info != FTS_D && e->fts_info != FTS_DP &&
			 e->fts_info != FTS_DNR && e->fts_info != FTS_ERR)
			n++;
	}
	if (fts)
		fts_close(fts);
	free(dir);
	return n;
}

int core_ws_unsaved(struct core_project *p, const struct core_ws *ws, struct core_unsaved *u)
{
	struct core_diffstat ds = {0};
	char hex[GIT_OID_HEXSZ + 1];
	git_oid tip, head_tree, view_tree;
	struct tips t = {0};
	git_repository *ex = NULL;
	git_odb *odb = NULL;
	int rc;

	memset(u, 0, sizeof(*u));
	core_git_ready();
	rc = core_ws_export(p, ws, &tip, NULL);
	rc = rc ?: core_export_open(p, ws, &ex);
	if (rc == 0 && git_repository_odb(&odb, ex) < 0)
		rc = util_err(-EIO, "export: %s", git_error_last()->message);
	rc = rc ?: tips_collect(p, ws, odb, &t);
	rc = rc ?: count_commits(p, ws, ex, &t, &u->commits);
	core_wsgit_free(t.g);
	free(t.v);
	git_odb_free(odb);
	git_repository_free(ex);
	if (rc < 0)
		return rc;
	git_oid_tostr(hex, sizeof(hex), &tip);
	rc = core_ws_tree(p, ws, hex, &head_tree);
	rc = rc ?: core_ws_tree(p, ws, "view", &view_tree);
	rc = rc ?: core_ws_diffstat(p, ws, &head_tree, &view_tree, &ds);
	if (rc == 0) {
		u->files = ds.files;
		u->overlay = overlay_changes(ws);
	}
	return rc;
}
