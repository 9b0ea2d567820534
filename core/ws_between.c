/*
 * core/ws_between.c: the diff between the views of two workspaces (the review page's "A
 * against B"). Each view's tree is recorded in its own host-owned checkpoint store (both
 * stores reach the origin's objects), so the diff reads A's store with B's objects added as
 * an alternate: no object is copied, and nothing the boxes wrote in their gitdirs is read.
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int core_ws_diff_between(struct core_project *p, const struct core_ws *a, const struct core_ws *b,
			 FILE *f)
{
	struct ckpt_patch_out out = {f, isatty(fileno(f))};
	git_repository *repo = NULL;
	git_odb *odb = NULL;
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	git_oid ia, ib;
	char *store = ckpt_store_path(b),
	     *objects = store ? util_asprintf("%s/objects", store) : NULL;
	int rc = objects ? 0 : util_err(-ENOMEM, "out of memory");

	rc = rc ?: core_ws_tree(p, a, "view", &ia);
	rc = rc ?: core_ws_tree(p, b, "view", &ib);
	rc = rc ?: ckpt_repo_open(p, a, &repo);
	if (rc == 0 &&
	    (git_repository_odb(&odb, repo) < 0 || git_odb_add_disk_alternate(odb, objects) < 0 ||
	     git_tree_lookup(&ta, repo, &ia) < 0 || git_tree_lookup(&tb, repo, &ib) < 0 ||
	     git_diff_tree_to_tree(&diff, repo, ta, tb, NULL) < 0 ||
	     git_diff_find_similar(diff, NULL) < 0 ||
	     git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, ckpt_patch_line, &out) < 0))
		rc = util_err(-EIO, "diff %s %s: %s", a->name, b->name, git_error_last()->message);
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	git_odb_free(odb);
	git_repository_free(repo);
	free(objects);
	free(store);
	return rc;
}
