/*
 * core/stale.c: a stale fork. A workspace made from an older commit than the origin's HEAD
 * brings changes made against that older state; merge and apply refuse it when a path it
 * changes was also changed in the origin since (between the workspace's fork point and the
 * origin's HEAD), naming those paths. Also merge --check: the same refusals as merge, with the
 * merge made in memory only. Trust boundary: the workspace's branch is read from its
 * host-owned export (core_ws_export) and its view from the host-owned checkpoint store; the
 * box's gitdir is not opened here. Nothing is written to the origin.
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int git_fail(const char *what)
{
	const git_error *e = git_error_last();

	return util_err(-EIO, "%s: %s", what, e && e->message ? e->message : "libgit2 error");
}

/* The checkpoint store of ws with its export's objects added in memory. */
static int side_repo(struct core_project *p, const struct core_ws *ws, git_repository **out)
{
	char *exp = core_export_path(ws), *objects = exp ? util_path_join(exp, "objects") : NULL;
	git_odb *odb = NULL;
	int rc = objects ? 0 : util_err(-ENOMEM, "out of memory");

	rc = rc ?: ckpt_repo_open(p, ws, out);
	if (rc == 0 &&
	    (git_repository_odb(&odb, *out) < 0 || git_odb_add_disk_alternate(odb, objects) < 0))
		rc = git_fail("object store");
	git_odb_free(odb);
	free(objects);
	free(exp);
	return rc;
}

/* The paths the diff from tree a to tree b touches (both sides of a rename), sorted. */
static int paths_of(git_repository *repo, const git_oid *a, const git_oid *b, char ***out,
		    size_t *n)
{
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (git_tree_lookup(&ta, repo, a) < 0 || git_tree_lookup(&tb, repo, b) < 0 ||
	    git_diff_tree_to_tree(&diff, repo, ta, tb, NULL) < 0 ||
	    git_diff_find_similar(diff, NULL) < 0)
		rc = git_fail("diff");
	if (rc == 0 && !(*out = calloc(2 * git_diff_num_deltas(diff) + 1, sizeof(char *))))
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		(*out)[(*n)++] = d->old_file.path ? strdup(d->old_file.path) : NULL;
		if (d->new_file.path && d->old_file.path &&
		    strcmp(d->new_file.path, d->old_file.path))
			(*out)[(*n)++] = strdup(d->new_file.path);
		if (!(*out)[*n - 1])
			rc = util_err(-ENOMEM, "out of memory");
	}
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	return rc;
}

static void paths_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int tree_of(git_repository *repo, const git_oid *commit, git_oid *tree)
{
	git_commit *c = NULL;

	if (git_commit_lookup(&c, repo, commit) < 0)
		return git_fail("commit");
	git_oid_cpy(tree, git_commit_tree_id(c));
	git_commit_free(c);
	return 0;
}

int core_ws_stale(struct core_project *p, const struct core_ws *ws, bool view, char **paths)
{
	git_repository *origin = core_project_repo(p), *repo = NULL;
	git_reference *head = NULL;
	git_oid base, tip, mb, theirs, mine_from, mine_to, ours;
	char **a = NULL, **b = NULL;
	size_t na = 0, nb = 0, len = 0;
	int rc = origin ? 0 : -EIO;

	*paths = NULL;
	if (rc == 0 && git_oid_fromstr(&base, ws->base_commit) < 0)
		rc = util_err(-EIO, "workspace %s: bad base commit", ws->name);
	if (rc == 0 && (git_repository_head(&head, origin) < 0 || !git_reference_target(head))) {
		/* An unborn origin: nothing of it can have changed. */
		*paths = strdup("");
		goto out;
	}
	if (rc < 0)
		goto out;
	git_oid_cpy(&ours, git_reference_target(head));
	/* From the base for apply (the view's changes), from the branch head for merge (what a
	 * merge brings: after a merge, the origin's HEAD has that head in its history). */
	rc = view ? 0 : core_ws_export(p, ws, &tip, NULL);
	rc = rc ?: view ? core_ws_tree(p, ws, "view", &mine_to) : 0;
	rc = rc ?: side_repo(p, ws, &repo);
	if (rc == 0 && git_merge_base(&mb, repo, view ? &base : &tip, &ours) < 0)
		rc = util_err(-EINVAL, "workspace %s shares no history with the origin's HEAD",
			      ws->name);
	if (rc < 0)
		goto out;
	if (git_oid_equal(&mb, &ours)) { /* the origin has not moved since */
		*paths = strdup("");
		goto out;
	}
	rc = tree_of(repo, view ? &base : &mb, &mine_from);
	rc = rc ?: view ? 0 : tree_of(repo, &tip, &mine_to);
	rc = rc ?: tree_of(repo, &mb, &base);
	rc = rc ?: tree_of(repo, &ours, &theirs);
	rc = rc ?: paths_of(repo, &mine_from, &mine_to, &a, &na);
	rc = rc ?: paths_of(repo, &base, &theirs, &b, &nb);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (!strcmp(a[i], b[j])) {
				len += strlen(a[i]) + 1;
				break;
			}
	if (!(*paths = calloc(1, len + 1))) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	len = 0;
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (!strcmp(a[i], b[j])) {
				size_t k = strlen(a[i]);

				if (len)
					(*paths)[len++] = ' ';
				memcpy(*paths + len, a[i], k);
				len += k;
				break;
			}
out:
	if (rc == 0 && !*paths)
		rc = util_err(-ENOMEM, "out of memory");
	paths_free(a, na);
	paths_free(b, nb);
	git_reference_free(head);
	git_repository_free(repo);
	return rc;
}

int core_ws_stale_refuse(struct core_project *p, const struct core_ws *ws, bool view)
{
	char *paths = NULL;
	int rc = core_ws_stale(p, ws, view, &paths);

	if (rc == 0 && *paths)
		rc = util_err(-EEXIST,
			      "workspace %s is stale: the origin changed since its base what it "
			      "changes too: %s; nothing was changed (merge the origin into it, or "
			      "fork it again from the origin's HEAD)",
			      ws->name, paths);
	free(paths);
	return rc;
}

/* The conflicting paths of idx, space-separated (caller frees). */
static char *conflicts_of(git_index *idx)
{
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *a, *o, *t;
	size_t len = 0;
	char *s = calloc(1, 1), *ns;

	if (!s || git_index_conflict_iterator_new(&it, idx) < 0)
		return s;
	while (git_index_conflict_next(&a, &o, &t, it) == 0) {
		const char *path = o ? o->path : t ? t->path : a->path;
		size_t k = strlen(path);

		if (!(ns = realloc(s, len + k + 2)))
			break;
		s = ns;
		if (len)
			s[len++] = ' ';
		memcpy(s + len, path, k + 1);
		len += k;
	}
	git_index_conflict_iterator_free(it);
	return s;
}

int core_ws_merge_check(struct core_project *p, const struct core_ws *ws, struct core_merge *out)
{
	git_repository *origin = core_project_repo(p), *repo = NULL;
	git_reference *head = NULL;
	git_commit *ours = NULL, *theirs = NULL;
	git_index *idx = NULL;
	git_oid tip, here;
	char *bad = NULL;
	int rc = origin ? 0 : -EIO;

	memset(out, 0, sizeof(*out));
	if (rc == 0 && (git_repository_head(&head, origin) < 0 || !git_reference_is_branch(head) ||
			!git_reference_target(head)))
		rc = util_err(-EINVAL, "the origin is not on a branch (detached or unborn HEAD): "
				       "nothing to merge into");
	rc = rc ?: core_ws_export(p, ws, &tip, NULL);
	rc = rc ?: side_repo(p, ws, &repo);
	if (rc < 0)
		goto out;
	snprintf(out->branch, sizeof(out->branch), "%s", git_reference_shorthand(head));
	git_oid_cpy(&here, git_reference_target(head));
	git_oid_tostr(out->commit, sizeof(out->commit), &here);
	if (git_oid_equal(&here, &tip) || git_graph_descendant_of(repo, &here, &tip) == 1) {
		out->kind = CORE_MERGE_UP_TO_DATE;
		goto out;
	}
	if (git_graph_descendant_of(repo, &tip, &here) == 1) {
		out->kind = CORE_MERGE_FAST_FORWARD;
		git_oid_tostr(out->commit, sizeof(out->commit), &tip);
		goto out;
	}
	out->kind = CORE_MERGE_COMMIT;
	if (git_commit_lookup(&ours, repo, &here) < 0 ||
	    git_commit_lookup(&theirs, repo, &tip) < 0 ||
	    git_merge_commits(&idx, repo, ours, theirs, NULL) < 0) {
		rc = git_fail("merge");
		goto out;
	}
	if (git_index_has_conflicts(idx)) {
		bad = conflicts_of(idx);
		rc = util_err(-EEXIST, "merging %s into %s conflicts in: %s; nothing was changed",
			      ws->branch, out->branch, bad ? bad : "?");
	}
	rc = rc ?: core_ws_stale_refuse(p, ws, false);
out:
	free(bad);
	git_index_free(idx);
	git_commit_free(ours);
	git_commit_free(theirs);
	git_reference_free(head);
	git_repository_free(repo);
	return rc;
}
