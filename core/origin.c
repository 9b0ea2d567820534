/* core/origin.c: what a workspace adds to the origin repository: a ref and a remote. */
#include "core/core_internal.h"

#include <errno.h>
#include <stdlib.h>

int core_origin_add(struct core_project *p, const char *name, const git_oid *base, const char *url)
{
	char *refname = util_asprintf("refs/arborinth/%s", name);
	char *remote_name = util_asprintf("arborinth/%s", name);
	char *spec = util_asprintf("+refs/heads/*:refs/remotes/arborinth/%s/*", name);
	git_reference *ref = NULL;
	git_remote *remote = NULL;
	git_repository *repo = core_project_repo(p);
	int rc = -ENOMEM;

	if (!repo) {
		rc = -EIO;
		goto out;
	}
	if (!refname || !remote_name || !spec)
		goto out;
	rc = git_reference_create(&ref, repo, refname, base, 0, "arborinth: workspace create");
	if (rc == GIT_EEXISTS) {
		rc = util_err(-EEXIST, "the origin already has %s (left by an earlier workspace?)",
			      refname);
		goto out;
	} else if (rc < 0) {
		rc = util_err(-EIO, "cannot create %s: %s", refname, git_error_last()->message);
		goto out;
	}
	rc = core_fault("origin-ref");
	if (rc < 0)
		goto undo_ref;
	rc = git_remote_create_with_fetchspec(&remote, repo, remote_name, url, spec);
	if (rc == GIT_EEXISTS) {
		rc = util_err(-EEXIST, "the origin already has a remote %s", remote_name);
		goto undo_ref;
	} else if (rc < 0) {
		rc = util_err(-EIO, "cannot create remote %s: %s", remote_name,
			      git_error_last()->message);
		goto undo_ref;
	}
	rc = 0;
	goto out;
undo_ref:
	git_reference_delete(ref);
out:
	git_remote_free(remote);
	git_reference_free(ref);
	free(refname);
	free(remote_name);
	free(spec);
	return rc;
}

int core_origin_remove(struct core_project *p, const char *name)
{
	char *refname = util_asprintf("refs/arborinth/%s", name);
	char *remote_name = util_asprintf("arborinth/%s", name);
	git_repository *repo = core_project_repo(p);
	int rc = 0;

	if (!repo) {
		rc = -EIO;
		goto out;
	}
	if (!refname || !remote_name) {
		rc = -ENOMEM;
		goto out;
	}
	if (git_remote_delete(repo, remote_name) < 0) {
		git_remote *r = NULL;

		/* Only an error when the remote is still there. */
		if (git_remote_lookup(&r, repo, remote_name) == 0) {
			rc = util_err(-EIO, "cannot remove remote %s", remote_name);
			git_remote_free(r);
			goto out;
		}
	}
	if (git_reference_remove(repo, refname) < 0) {
		git_reference *ref = NULL;

		if (git_reference_lookup(&ref, repo, refname) == 0) {
			rc = util_err(-EIO, "cannot remove %s: %s", refname,
				      git_error_last()->message);
			git_reference_free(ref);
		}
	}
out:
	free(refname);
	free(remote_name);
	return rc;
}

int core_origin_clear_stale(struct core_project *p, const char *name, bool *cleared)
{
	char *refname = util_asprintf("refs/arborinth/%s", name);
	char *remote_name = util_asprintf("arborinth/%s", name);
	git_repository *repo = core_project_repo(p);
	git_reference *ref = NULL;
	git_remote *remote = NULL;
	int rc = 0;

	*cleared = false;
	if (!repo || !refname || !remote_name) {
		rc = repo ? -ENOMEM : -EIO;
		goto out;
	}
	if (git_reference_lookup(&ref, repo, refname) == 0 ||
	    git_remote_lookup(&remote, repo, remote_name) == 0) {
		*cleared = true;
		rc = core_origin_remove(p, name);
	}
	util_err_clear();
out:
	git_reference_free(ref);
	git_remote_free(remote);
	free(refname);
	free(remote_name);
	return rc;
}
