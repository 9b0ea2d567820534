/*
 * core/ws_unsaved.c: what deleting a workspace would lose: commits of its branch that no ref
 * of the origin reaches, and files of its view that differ from that branch's tree. Trust
 * boundary: the gitdir is the box's. The branch is read through core_ws_export (the gitdir
 * checked, the branch's objects copied one by one, hashes checked, into the host-owned
 * NAME/export.git), and the commits are walked there; the view's tree is built from the layer
 * by the checkpoint code and compared with the branch's tree in the checkpoint store.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* Commits reachable from tip (in the export) but from neither base nor an origin ref. */
static int count_commits(struct core_project *p, const struct core_ws *ws, const git_oid *tip,
			 size_t *out)
{
	char *ref = util_asprintf("refs/arborinth/%s", ws->name);
	char *prefix = util_asprintf("refs/remotes/arborinth/%s/", ws->name);
	struct hide_ctx h = {.origin = core_project_repo(p), .ref = ref, .remote_prefix = prefix};
	git_repository *ex = NULL;
	git_oid base, id;
	int rc = ref && prefix ? 0 : -ENOMEM;

	*out = 0;
	if (rc == 0 && !h.origin)
		rc = -EIO;
	rc = rc ?: core_export_open(p, ws, &ex);
	if (rc == 0 && git_revwalk_new(&h.walk, ex) < 0)
		rc = util_err(-EIO, "revwalk: %s", git_error_last()->message);
	if (rc == 0 && git_revwalk_push(h.walk, tip) < 0)
		rc = util_err(-EIO, "workspace %s: %s", ws->name, git_error_last()->message);
	if (rc == 0 && git_oid_fromstr(&base, ws->base_commit) == 0)
		(void)git_revwalk_hide(h.walk, &base);
	if (rc == 0 && git_reference_foreach_name(h.origin, hide_ref, &h) < 0)
		rc = util_err(-EIO, "cannot read the origin's refs: %s", git_error_last()->message);
	while (rc == 0 && git_revwalk_next(&id, h.walk) == 0)
		(*out)++;
	git_revwalk_free(h.walk);
	git_repository_free(ex);
	free(ref);
	free(prefix);
	return rc;
}

int core_ws_unsaved(struct core_project *p, const struct core_ws *ws, size_t *commits,
		    size_t *files)
{
	struct core_diffstat ds = {0};
	char hex[GIT_OID_HEXSZ + 1];
	git_oid tip, head_tree, view_tree;
	int rc;

	*commits = *files = 0;
	core_git_ready();
	rc = core_ws_export(p, ws, &tip, NULL);
	rc = rc ?: count_commits(p, ws, &tip, commits);
	if (rc < 0)
		return rc;
	git_oid_tostr(hex, sizeof(hex), &tip);
	rc = core_ws_tree(p, ws, hex, &head_tree);
	rc = rc ?: core_ws_tree(p, ws, "view", &view_tree);
	rc = rc ?: core_ws_diffstat(p, ws, &head_tree, &view_tree, &ds);
	if (rc == 0)
		*files = ds.files;
	return rc;
}
