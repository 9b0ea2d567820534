/* core/ckpt_internal.h: what the checkpoint files of core/ share; not public. */
#ifndef ARB_CORE_CKPT_INTERNAL_H
#define ARB_CORE_CKPT_INTERNAL_H

#include "core/core_internal.h"

#define CKPT_REF_PREFIX "refs/arborinth/checkpoints/"
#define CKPT_CACHE_FILE "checkpoint.cache"

struct ckpt_stats {
	size_t hashed, reused; /* layer files hashed, and known from the cache */
};

/*
 * The tree of ws's view as it is now (core/ckpt_tree.c), its objects written into repo (the
 * workspace's own store). stats optional. -errno with a message.
 */
int ckpt_view_tree(git_repository *repo, const struct core_ws *ws, git_oid *tree,
		   struct ckpt_stats *stats) ARB_MUST_CHECK;

/* The object store checkpoints write through (core/ckpt_odb.c): NAME/git/objects, loose. */
struct git_odb_backend;
int ckpt_odb_new(const struct core_ws *ws, struct git_odb_backend **out) ARB_MUST_CHECK;

/* The workspace's own repository (NAME/git, its objects and the origin's). */
int ckpt_repo_open(const struct core_ws *ws, git_repository **out) ARB_MUST_CHECK;

#endif
