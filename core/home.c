/*
 * core/home.c: bringing a workspace's work home. merge brings the workspace's branch into the
 * origin's current branch (fast-forward, or a merge commit made in memory first, so that a
 * conflict changes nothing); apply puts the workspace's changes against its base (committed
 * and not) into the origin's working tree as unstaged changes, checked whole before anything
 * is written. Both go through libgit2, which runs no hooks. Trust boundary: the workspace's
 * gitdir is the box's, so neither reads it through libgit2: merge exports the branch first
 * (core/export.c: the gitdir checked, objects copied one by one from the workspace's own
 * store) and fetches from the export through the remote arborinth/NAME; apply copies the
 * trees it diffs into the export the same way and diffs them there.
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int git_fail(const char *what)
{
	const git_error *e = git_error_last();

	return util_err(-EIO, "%s: %s", what, e && e->message ? e->message : "libgit2 error");
}

/* Exports the workspace's branch, fetches it from the export; *head: its commit there. */
static int fetch_ws(struct core_project *p, const struct core_ws *ws, git_oid *head)
{
	git_remote *r = NULL;
	git_reference *ref = NULL;
	git_fetch_options fo = GIT_FETCH_OPTIONS_INIT;
	char *remote = util_asprintf("arborinth/%s", ws->name);
	char *name = util_asprintf("refs/remotes/arborinth/%s/%s", ws->name, ws->branch);
	int rc = remote && name ? 0 : util_err(-ENOMEM, "out of memory");

	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	if (rc == 0 && !core_project_repo(p))
		rc = -EIO;
	rc = rc ?: core_ws_export(p, ws, head, NULL);
	if (rc == 0 && (git_remote_lookup(&r, core_project_repo(p), remote) < 0 ||
			git_remote_fetch(r, NULL, &fo, "arborinth: merge") < 0))
		rc = git_fail("cannot fetch the workspace's branch");
	if (rc == 0 && (git_reference_lookup(&ref, core_project_repo(p), name) < 0 ||
			!git_reference_target(ref)))
		rc = util_err(-ENOENT, "workspace %s has no branch %s", ws->name, ws->branch);
	if (rc == 0)
		git_oid_cpy(head, git_reference_target(ref));
	git_reference_free(ref);
	git_remote_free(r);
	free(name);
	free(remote);
	return rc;
}

/* The origin's identity for commits it makes (its user.name/email), else arborinth's. */
static int signature(git_repository *repo, git_signature **out)
{
	if (git_signature_default(out, repo) == 0)
		return 0;
	return git_signature_now(out, "arborinth", "arborinth@localhost") < 0
		   ? git_fail("signature")
		   : 0;
}

/* Conflicting paths of idx, one per line into *list (caller frees). */
static int conflict_list(git_index *idx, char **list)
{
	git_index_conflict_iterator *it = NULL;
	const git_index_entry *a, *o, *t;
	size_t len = 0, cap = 256;
	char *s = malloc(cap);

	if (!s || git_index_conflict_iterator_new(&it, idx) < 0) {
		free(s);
		return util_err(-ENOMEM, "out of memory");
	}
	s[0] = '\0';
	while (git_index_conflict_next(&a, &o, &t, it) == 0) {
		const char *path = o ? o->path : t ? t->path : a->path;
		size_t need = strlen(path) + 2;

		if (len + need >= cap) {
			char *ns = realloc(s, cap = 2 * (len + need));

			if (!ns)
				break;
			s = ns;
		}
		len += (size_t)snprintf(s + len, cap - len, "%s%s", len ? " " : "", path);
	}
	git_index_conflict_iterator_free(it);
	*list = s;
	return 0;
}

int core_ws_merge(struct core_project *p, const struct core_ws *ws, unsigned int flags,
		  struct core_merge *out)
{
	git_repository *repo = core_project_repo(p);
	git_reference *head = NULL, *moved = NULL;
	git_annotated_commit *theirs = NULL;
	git_commit *ours = NULL, *their_c = NULL, *merged = NULL;
	git_index *idx = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	git_merge_analysis_t an;
	git_merge_preference_t pref;
	git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
	git_oid their, tid, cid;
	char *msg = NULL, *conflicts = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!repo)
		return -EIO;
	if (flags & CORE_HOME_CHECK)
		return core_ws_merge_check(p, ws, out);
	/* Checked in memory first (a conflict, a stale workspace): a refusal leaves the origin
	 * as it was, refs of the remote arborinth/NAME too. */
	if ((rc = core_ws_merge_check(p, ws, out)) < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	co.checkout_strategy = GIT_CHECKOUT_SAFE;
	if (git_repository_head(&head, repo) < 0 || !git_reference_is_branch(head)) {
		git_reference_free(head);
		return util_err(-EINVAL, "the origin is not on a branch (detached or unborn HEAD): "
					 "nothing to merge into");
	}
	rc = fetch_ws(p, ws, &their);
	if (rc == 0 && (git_annotated_commit_lookup(&theirs, repo, &their) < 0 ||
			git_merge_analysis_for_ref(&an, &pref, repo, head,
						   (const git_annotated_commit **)&theirs, 1) < 0))
		rc = git_fail("merge");
	if (rc < 0)
		goto out;
	snprintf(out->branch, sizeof(out->branch), "%s", git_reference_shorthand(head));
	if (an & GIT_MERGE_ANALYSIS_UP_TO_DATE) {
		out->kind = CORE_MERGE_UP_TO_DATE;
		goto out;
	}
	if (git_commit_lookup(&ours, repo, git_reference_target(head)) < 0 ||
	    git_commit_lookup(&their_c, repo, &their) < 0) {
		rc = git_fail("merge");
		goto out;
	}
	if (an & GIT_MERGE_ANALYSIS_FASTFORWARD && !(pref & GIT_MERGE_PREFERENCE_NO_FASTFORWARD)) {
		out->kind = CORE_MERGE_FAST_FORWARD;
		git_oid_cpy(&cid, &their);
		if (git_commit_tree(&tree, their_c) < 0)
			rc = git_fail("merge");
	} else {
		/* In memory first: a conflict leaves the origin as it was. */
		out->kind = CORE_MERGE_COMMIT;
		if (git_merge_commits(&idx, repo, ours, their_c, NULL) < 0) {
			rc = git_fail("merge");
			goto out;
		}
		if (git_index_has_conflicts(idx)) {
			rc = conflict_list(idx, &conflicts);
			rc = rc
				 ?: util_err(
					-EEXIST,
					"merging %s into %s conflicts in: %s; nothing was changed",
					ws->branch, out->branch, conflicts);
			goto out;
		}
		msg = util_asprintf("Merge workspace %s (%s) into %s\n", ws->name, ws->branch,
				    out->branch);
		if (!msg || git_index_write_tree_to(&tid, idx, repo) < 0 ||
		    git_tree_lookup(&tree, repo, &tid) < 0 || signature(repo, &sig) < 0 ||
		    git_commit_create(&cid, repo, NULL, sig, sig, NULL, msg, tree, 2,
				      (const git_commit *[]){ours, their_c}) < 0) {
			rc = msg ? git_fail("merge") : util_err(-ENOMEM, "out of memory");
			goto out;
		}
	}
	/* The working tree and index first (refused whole when a local change is in the way),
	 * then the branch. */
	if (rc == 0 && git_checkout_tree(repo, (const git_object *)tree, &co) < 0) {
		rc = util_err(-EBUSY,
			      "the origin's working tree has changes in the way of the merge (%s); "
			      "commit or stash them first; nothing was changed",
			      git_error_last() ? git_error_last()->message : "conflict");
		goto out;
	}
	if (rc == 0 && git_reference_set_target(&moved, head, &cid, "arborinth: merge") < 0)
		rc = git_fail("cannot move the origin's branch");
	if (rc == 0)
		git_oid_tostr(out->commit, sizeof(out->commit), &cid);
out:
	free(conflicts);
	free(msg);
	git_signature_free(sig);
	git_tree_free(tree);
	git_index_free(idx);
	git_commit_free(merged);
	git_commit_free(their_c);
	git_commit_free(ours);
	git_annotated_commit_free(theirs);
	git_reference_free(moved);
	git_reference_free(head);
	return rc;
}

/* True when the origin's working tree has at path exactly blob id (a file or symlink). */
static bool origin_has(struct core_project *p, const char *path, const git_oid *id)
{
	char *full = util_path_join(core_project_root(p), path);
	char target[4096];
	struct stat st;
	git_oid got;
	ssize_t n;
	bool same = false;

	if (full && lstat(full, &st) == 0) {
		if (S_ISREG(st.st_mode))
			same = git_odb_hashfile(&got, full, GIT_OBJECT_BLOB) == 0 &&
			       git_oid_equal(&got, id);
		else if (S_ISLNK(st.st_mode) && (n = readlink(full, target, sizeof(target))) >= 0 &&
			 (size_t)n < sizeof(target))
			same = git_odb_hash(&got, target, (size_t)n, GIT_OBJECT_BLOB) == 0 &&
			       git_oid_equal(&got, id);
	}
	free(full);
	return same;
}

/*
 * Every path the changes touch must be in the origin's working tree exactly as the base has
 * it, and every path they add must be absent there: else the paths in the way, in *bad.
 */
static int check_origin(struct core_project *p, git_diff *diff, char **bad)
{
	size_t len = 0, cap = 1;
	char *s = calloc(1, cap);

	for (size_t i = 0; s && i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		bool adds = d->status == GIT_DELTA_ADDED || d->status == GIT_DELTA_RENAMED ||
			    d->status == GIT_DELTA_COPIED;
		bool reads = d->status != GIT_DELTA_ADDED && d->status != GIT_DELTA_COPIED;
		const char *in_way = NULL;
		char *full = adds ? util_path_join(core_project_root(p), d->new_file.path) : NULL;
		struct stat st;

		if (reads && !origin_has(p, d->old_file.path, &d->old_file.id))
			in_way = d->old_file.path;
		else if (adds && full && lstat(full, &st) == 0 &&
			 (d->status != GIT_DELTA_RENAMED ||
			  strcmp(d->old_file.path, d->new_file.path)))
			in_way = d->new_file.path;
		free(full);
		if (in_way) {
			size_t need = strlen(in_way) + 2;
			char *ns = realloc(s, cap = cap + need);

			if (!ns)
				break;
			s = ns;
			len += (size_t)snprintf(s + len, cap - len, "%s%s", len ? " " : "", in_way);
		}
	}
	if (!s)
		return util_err(-ENOMEM, "out of memory");
	*bad = s;
	return 0;
}

/* Each delta's path, into the count (for the summary). */
static int count_delta(const git_diff_delta *d, void *payload)
{
	(void)d;
	(*(size_t *)payload)++;
	return 0;
}

int core_ws_apply(struct core_project *p, const struct core_ws *ws, unsigned int flags,
		  size_t *files)
{
	git_repository *wrepo = NULL;
	struct core_wsgit *g = NULL;
	git_diff *diff = NULL;
	git_tree *a = NULL, *b = NULL;
	git_diff_options dopt = GIT_DIFF_OPTIONS_INIT;
	git_apply_options aopt = GIT_APPLY_OPTIONS_INIT;
	git_oid from, to;
	char *bad = NULL;
	int rc;

	*files = 0;
	dopt.flags = GIT_DIFF_SHOW_BINARY;
	rc = core_project_repo(p) ? 0 : -EIO;
	/* The box's gitdir checked first (a planted alternate, symlinked ref or FIFO refuses);
	 * the trees diffed come from the host-owned checkpoint store (core/ckpt_store.c). */
	rc = rc ?: core_wsgit_open(&g, p, ws);
	rc = rc ?: core_ws_stale_refuse(p, ws, true);
	rc = rc ?: core_ws_tree(p, ws, "base", &from);
	rc = rc ?: core_ws_tree(p, ws, "view", &to);
	rc = rc ?: ckpt_repo_open(p, ws, &wrepo);
	if (rc == 0 &&
	    (git_tree_lookup(&a, wrepo, &from) < 0 || git_tree_lookup(&b, wrepo, &to) < 0 ||
	     git_diff_tree_to_tree(&diff, wrepo, a, b, &dopt) < 0 ||
	     git_diff_find_similar(diff, NULL) < 0))
		rc = git_fail("apply");
	if (rc == 0 && git_diff_num_deltas(diff) == 0)
		goto out;
	/* Checked whole first: a file that is not as the base has it (modified in the origin),
	 * or a new path the origin already has, refuses the lot. */
	rc = rc ?: check_origin(p, diff, &bad);
	if (rc == 0 && *bad)
		rc =
		    util_err(-EEXIST,
			     "the origin's working tree is not as %s's base has it at: %s; nothing "
			     "was changed (commit, stash or remove those first)",
			     ws->name, bad);
	aopt.flags = GIT_APPLY_CHECK;
	if (rc == 0 && git_apply(core_project_repo(p), diff, GIT_APPLY_LOCATION_WORKDIR, &aopt) < 0)
		rc = util_err(-EEXIST,
			      "the changes of %s do not apply to the origin's working tree (%s); "
			      "nothing was changed",
			      ws->name, git_error_last() ? git_error_last()->message : "conflict");
	if (rc == 0 && flags & CORE_HOME_CHECK) {
		*files = git_diff_num_deltas(diff);
		goto out;
	}
	aopt.flags = 0;
	aopt.delta_cb = count_delta;
	aopt.payload = files;
	if (rc == 0 && git_apply(core_project_repo(p), diff, GIT_APPLY_LOCATION_WORKDIR, &aopt) < 0)
		rc = git_fail("apply");
out:
	free(bad);
	git_diff_free(diff);
	git_tree_free(a);
	git_tree_free(b);
	git_repository_free(wrepo);
	core_wsgit_free(g);
	return rc;
}
