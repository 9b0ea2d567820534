/*
 * core/fork.c: `workspace create NEW --from NAME[@CKPT]`. The new workspace's base is a commit
 * in the origin's object store whose tree is NAME's checkpoint and whose parent is NAME's
 * base: the objects the checkpoint has beyond the origin (the trees and blobs of what NAME
 * changed; a subtree the origin already has is skipped whole) are copied into the origin's
 * store, where refs/arborinth/NEW keeps them reachable. From then on NEW is independent of
 * NAME (deleting NAME loses nothing of NEW), and as cheap to create as from any commit.
 * Trust boundary: NAME's checkpoints live in its host-owned store (core/ckpt_store.c), whose
 * only alternate is the origin's: the objects are copied from there and the origin's alone.
 * NAME's gitdir is its box's: it is checked first (core/ws_read.c), and a fork from a
 * workspace whose gitdir carries a planted alternate, a symlinked ref or a FIFO is refused.
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int core_ws_fork(struct core_project *p, const char *name, const char *from, const char *ckpt,
		 unsigned int flags, struct core_ws **out)
{
	struct core_ws *src = NULL;
	struct core_wsgit *g = NULL;
	git_repository *srepo = NULL;
	git_odb *oodb = NULL, *sodb = NULL;
	git_commit *parent = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	struct core_ckpt c = {0};
	git_oid tid, pid, cid;
	char hex[GIT_OID_HEXSZ + 1], *msg = NULL;
	size_t copied = 0;
	int rc;

	*out = NULL;
	rc = core_project_repo(p) ? 0 : -EIO;
	rc = rc ?: core_ws_name_check_new(name);
	/* Taken names fail before anything is written into the origin's store. */
	if (rc == 0 && core_ws_get(p, name, out) == 0) {
		core_ws_free(*out);
		*out = NULL;
		rc = util_err(-EEXIST, "workspace '%s' already exists", name);
	}
	rc = rc ?: core_ws_get(p, from, &src);
	/* FROM's gitdir is the box's: checked before anything reads it. */
	rc = rc ?: core_wsgit_open(&g, p, src);
	if (rc == 0 && !ckpt) {
		/* The view now, recorded in the source so the fork names a state it has. */
		struct core_ckpt_opts o = {.kind = "fork"};
		char m[CORE_WS_NAME_MAX + 32];

		snprintf(m, sizeof(m), "forked as %s", name);
		o.message = m;
		rc = core_ws_checkpoint(p, src, &o, &c);
		if (rc == 0)
			rc = git_oid_fromstr(&tid, c.tree) < 0 ? util_err(-EIO, "bad tree") : 0;
	} else if (rc == 0) {
		rc = core_ws_tree(p, src, ckpt, &tid);
	}
	rc = rc ?: ckpt_repo_open(p, src, &srepo);
	if (rc == 0 && (git_repository_odb(&sodb, srepo) < 0 ||
			git_repository_odb(&oodb, core_project_repo(p)) < 0))
		rc = util_err(-EIO, "fork: %s", git_error_last()->message);
	/* Only the checkpoint store's objects and the origin's, never an alternate the box
	 * planted (the store's only alternate is the origin's). */
	rc = rc
		 ?: core_odb_copy(sodb, oodb, &tid, GIT_OBJECT_TREE, "the fork's checkpoint",
				  &copied);
	msg = rc == 0 ? util_asprintf("arborinth: %s forked from %s at %s\n", name, from,
				      ckpt ? ckpt : "its view")
		      : NULL;
	if (rc == 0 && !msg)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0 && (git_oid_fromstr(&pid, src->base_commit) < 0 ||
			git_commit_lookup(&parent, core_project_repo(p), &pid) < 0 ||
			git_tree_lookup(&tree, core_project_repo(p), &tid) < 0 ||
			git_signature_now(&sig, "arborinth", "arborinth@localhost") < 0 ||
			git_commit_create(&cid, core_project_repo(p), NULL, sig, sig, NULL, msg,
					  tree, 1, (const git_commit **)&parent) < 0))
		rc = util_err(-EIO, "fork: %s", git_error_last()->message);
	if (rc == 0) {
		git_oid_tostr(hex, sizeof(hex), &cid);
		rc = core_ws_create_opts(p, name, hex, flags, out);
	}
	free(msg);
	git_signature_free(sig);
	git_tree_free(tree);
	git_commit_free(parent);
	git_odb_free(oodb);
	git_odb_free(sodb);
	git_repository_free(srepo);
	core_wsgit_free(g);
	core_ckpt_clear(&c);
	core_ws_free(src);
	return rc;
}
