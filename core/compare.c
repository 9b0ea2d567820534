/*
 * core/compare.c: several workspaces of one origin against their common base (the merge base
 * of their base commits): each one's files changed with lines added and deleted (its view:
 * committed and not, as `diff base view` has it), what of that is not committed, the paths
 * more than one touched and whether their changes conflict. Trust boundary: the workspaces'
 * gitdirs are the boxes'; nothing here opens one. Each branch is exported first (core_ws_export:
 * the gitdir read beneath, objects copied into the host-owned NAME/export.git) and each view's
 * tree written into the host-owned checkpoint store; the comparison reads those through one
 * in-memory object database (alternates added in memory, nothing written to any repository)
 * and merges each pair of views in memory (git_merge_trees into an index that is never
 * written), so the origin stays as it was.
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int git_fail(const char *what)
{
	const git_error *e = git_error_last();

	return util_err(-EIO, "compare: %s: %s", what, e && e->message ? e->message : "libgit2");
}

static char delta_status(git_delta_t s)
{
	switch (s) {
	case GIT_DELTA_ADDED:
	case GIT_DELTA_COPIED:
		return 'A';
	case GIT_DELTA_DELETED:
		return 'D';
	case GIT_DELTA_RENAMED:
		return 'R';
	default:
		return 'M';
	}
}

static void files_free(struct core_cmp_file *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].path);
		free(v[i].old_path);
	}
	free(v);
}

void core_cmp_free(struct core_cmp *c)
{
	for (size_t i = 0; c->w && i < c->n; i++) {
		files_free(c->w[i].files, c->w[i].n_files);
		files_free(c->w[i].unc, c->w[i].n_unc);
	}
	for (size_t i = 0; c->ov && i < c->n_ov; i++) {
		free(c->ov[i].path);
		free(c->ov[i].in);
	}
	free(c->w);
	free(c->ov);
	memset(c, 0, sizeof(*c));
}

/* The files of the diff from tree a to tree b, with line counts when lines is set. */
static int tree_files(git_repository *repo, const git_oid *a, const git_oid *b, bool lines,
		      struct core_cmp_file **out, size_t *n)
{
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	git_diff_options o = GIT_DIFF_OPTIONS_INIT;
	size_t nd = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (git_tree_lookup(&ta, repo, a) < 0 || git_tree_lookup(&tb, repo, b) < 0 ||
	    git_diff_tree_to_tree(&diff, repo, ta, tb, &o) < 0 ||
	    git_diff_find_similar(diff, NULL) < 0) {
		rc = git_fail("diff");
		goto out;
	}
	nd = git_diff_num_deltas(diff);
	if (nd && !(*out = calloc(nd, sizeof(**out)))) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nd; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		struct core_cmp_file *f = &(*out)[i];
		git_patch *patch = NULL;
		size_t ctx = 0;

		f->status = delta_status(d->status);
		f->path =
		    strdup(d->status == GIT_DELTA_DELETED ? d->old_file.path : d->new_file.path);
		f->old_path = f->status == 'R' ? strdup(d->old_file.path) : NULL;
		*n = i + 1;
		if (!f->path || (f->status == 'R' && !f->old_path)) {
			rc = util_err(-ENOMEM, "out of memory");
			goto out;
		}
		if (lines && !(d->flags & GIT_DIFF_FLAG_BINARY)) {
			if (git_patch_from_diff(&patch, diff, i) < 0) {
				rc = git_fail("patch");
				goto out;
			}
			if (patch)
				(void)git_patch_line_stats(&ctx, &f->added, &f->deleted, patch);
			git_patch_free(patch);
		}
	}
out:
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	return rc;
}

static int commit_tree(git_repository *repo, const git_oid *commit, git_oid *tree)
{
	git_commit *c = NULL;

	if (git_commit_lookup(&c, repo, commit) < 0)
		return git_fail("commit");
	git_oid_cpy(tree, git_commit_tree_id(c));
	git_commit_free(c);
	return 0;
}

/* Adds dir/objects to repo's object database, in memory only. */
static int add_alternate(git_repository *repo, const char *dir)
{
	git_odb *odb = NULL;
	char *objects = dir ? util_path_join(dir, "objects") : NULL;
	int rc = objects ? 0 : util_err(-ENOMEM, "out of memory");

	if (rc == 0 &&
	    (git_repository_odb(&odb, repo) < 0 || git_odb_add_disk_alternate(odb, objects) < 0))
		rc = git_fail("object store");
	git_odb_free(odb);
	free(objects);
	return rc;
}

/* One entry per (path, workspace) touched: for finding overlaps. */
struct touch {
	const char *path;
	size_t ws;
};

static int touch_cmp(const void *a, const void *b)
{
	const struct touch *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (x->ws > y->ws) - (x->ws < y->ws);
}

/* The paths more than one workspace touched. */
static int find_overlaps(struct core_cmp *c)
{
	struct touch *t = NULL;
	size_t nt = 0, cap = 0;
	int rc = 0;

	for (size_t i = 0; i < c->n; i++)
		cap += 2 * c->w[i].n_files;
	if (cap && !(t = calloc(cap, sizeof(*t))))
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < c->n; i++)
		for (size_t j = 0; j < c->w[i].n_files; j++) {
			t[nt++] = (struct touch){c->w[i].files[j].path, i};
			if (c->w[i].files[j].old_path)
				t[nt++] = (struct touch){c->w[i].files[j].old_path, i};
		}
	if (nt)
		qsort(t, nt, sizeof(*t), touch_cmp);
	for (size_t i = 0; i < nt;) {
		size_t j = i, k = 0;
		struct core_cmp_overlap *o, *nv;

		while (j < nt && !strcmp(t[j].path, t[i].path))
			j++;
		for (size_t m = i; m < j; m++)
			k += m == i || t[m].ws != t[m - 1].ws;
		if (k < 2) {
			i = j;
			continue;
		}
		nv = realloc(c->ov, (c->n_ov + 1) * sizeof(*c->ov));
		if (!nv) {
			rc = util_err(-ENOMEM, "out of memory");
			break;
		}
		c->ov = nv;
		o = &c->ov[c->n_ov];
		*o = (struct core_cmp_overlap){strdup(t[i].path), calloc(c->n, 1), false};
		c->n_ov++;
		if (!o->path || !o->in) {
			rc = util_err(-ENOMEM, "out of memory");
			break;
		}
		for (size_t m = i; m < j; m++)
			o->in[t[m].ws] = 1;
		i = j;
	}
	free(t);
	return rc;
}

static bool index_conflicts_at(git_index *idx, const char *path)
{
	const git_index_entry *a, *o, *t;
	git_index_conflict_iterator *it = NULL;
	bool hit = false;

	if (git_index_conflict_get(&a, &o, &t, idx, path) == 0)
		return true;
	/* A rename on either side: the conflict may be recorded under another path. */
	if (git_index_conflict_iterator_new(&it, idx) < 0)
		return false;
	while (!hit && git_index_conflict_next(&a, &o, &t, it) == 0)
		hit = (a && !strcmp(a->path, path)) || (o && !strcmp(o->path, path)) ||
		      (t && !strcmp(t->path, path));
	git_index_conflict_iterator_free(it);
	return hit;
}

/* Each pair of workspaces sharing an overlap merged in memory over the common base. */
static int find_conflicts(git_repository *repo, struct core_cmp *c)
{
	git_tree *base = NULL, *x = NULL, *y = NULL;
	git_oid bt;
	int rc = commit_tree(repo, &c->base, &bt);

	if (rc == 0 && git_tree_lookup(&base, repo, &bt) < 0)
		rc = git_fail("base tree");
	for (size_t i = 0; rc == 0 && i < c->n; i++)
		for (size_t j = i + 1; rc == 0 && j < c->n; j++) {
			git_index *idx = NULL;
			bool shared = false;

			for (size_t k = 0; k < c->n_ov; k++)
				shared |= c->ov[k].in[i] && c->ov[k].in[j];
			if (!shared)
				continue;
			if (git_tree_lookup(&x, repo, &c->w[i].view) < 0 ||
			    git_tree_lookup(&y, repo, &c->w[j].view) < 0 ||
			    git_merge_trees(&idx, repo, base, x, y, NULL) < 0)
				rc = git_fail("merge");
			for (size_t k = 0; rc == 0 && k < c->n_ov; k++)
				if (c->ov[k].in[i] && c->ov[k].in[j] &&
				    index_conflicts_at(idx, c->ov[k].path))
					c->ov[k].conflict = true;
			git_index_free(idx);
			git_tree_free(x);
			git_tree_free(y);
			x = y = NULL;
		}
	git_tree_free(base);
	return rc;
}

int core_compare(struct core_project *p, struct core_ws *const *ws, size_t n, struct core_cmp *out)
{
	git_repository *repo = NULL;
	git_oid *bases = NULL;
	char *dir = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (n == 0 || n > CORE_CMP_MAX)
		return util_err(-EINVAL, "compare: give 1 to %d workspaces", CORE_CMP_MAX);
	out->w = calloc(n, sizeof(*out->w));
	bases = calloc(n, sizeof(*bases));
	if (!out->w || !bases) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	out->n = n;
	/* Everything compared copied into host-owned repositories first. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		out->w[i].ws = ws[i];
		if (git_oid_fromstr(&bases[i], ws[i]->base_commit) < 0)
			rc = util_err(-EIO, "workspace %s: bad base commit", ws[i]->name);
		rc = rc ?: core_ws_export(p, ws[i], &out->w[i].head, NULL);
		rc = rc ?: core_ws_tree(p, ws[i], "view", &out->w[i].view);
	}
	if (rc < 0)
		goto out;
	rc = ckpt_repo_open(p, ws[0], &repo);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (i > 0) {
			dir = ckpt_store_path(ws[i]);
			rc = add_alternate(repo, dir);
			free(dir);
		}
		dir = core_export_path(ws[i]);
		rc = rc ?: add_alternate(repo, dir);
		free(dir);
		dir = NULL;
	}
	if (rc < 0)
		goto out;
	if (n == 1)
		git_oid_cpy(&out->base, &bases[0]);
	else if (git_merge_base_many(&out->base, repo, n, bases) < 0) {
		rc = util_err(-EINVAL, "compare: the workspaces have no common base (not of one "
				       "origin history)");
		goto out;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct core_cmp_ws *w = &out->w[i];
		git_oid bt, ht;

		rc = commit_tree(repo, &out->base, &bt);
		rc = rc ?: commit_tree(repo, &w->head, &ht);
		rc = rc ?: tree_files(repo, &bt, &w->view, true, &w->files, &w->n_files);
		rc = rc ?: tree_files(repo, &ht, &w->view, false, &w->unc, &w->n_unc);
	}
	rc = rc ?: find_overlaps(out);
	rc = rc ?: find_conflicts(repo, out);
out:
	if (rc < 0)
		core_cmp_free(out);
	free(bases);
	git_repository_free(repo);
	return rc;
}
