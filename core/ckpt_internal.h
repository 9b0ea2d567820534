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

/* Removes NAME/checkpoint.cache (hashes and trees of the last checkpoint): the next builds afresh.
 */
void ckpt_cache_drop(const struct core_ws *ws);

/*
 * The object store checkpoints write through (core/ckpt_odb.c): new objects gathered into one
 * pack in NAME/git/objects/pack, written by ckpt_odb_flush(); objects too large for it loose.
 * lookup (borrowed, may be NULL): the workspace's whole store, asked what exists already.
 */
struct git_odb_backend;
int ckpt_odb_new(const struct core_ws *ws, git_odb *lookup,
		 struct git_odb_backend **out) ARB_MUST_CHECK;
/*
 * Stores an object of type, len bytes of data: its id (git's, hashed with ckpt_sha1) into
 * *id; written unless this store holds it or was told of it (ckpt_odb_know). -errno, message.
 */
int ckpt_odb_put(struct git_odb_backend *be, git_object_t type, const void *data, size_t len,
		 git_oid *id) ARB_MUST_CHECK;
/* SHA-1 (plain, not collision-detecting) of head (hl bytes, may be 0) then data. -EIO. */
int ckpt_sha1(const void *head, size_t hl, const void *data, size_t len,
	      unsigned char out[20]) ARB_MUST_CHECK;
/* The git id of an object of type with len bytes of data. -EIO. */
int ckpt_object_id(git_object_t type, const void *data, size_t len, git_oid *id) ARB_MUST_CHECK;
/* Tells the store that id is stored already (an earlier checkpoint's): not written again. */
int ckpt_odb_know(struct git_odb_backend *be, const git_oid *id) ARB_MUST_CHECK;
/* Writes the pack of what was written since ckpt_odb_new (nothing when nothing was). */
int ckpt_odb_flush(struct git_odb_backend *be) ARB_MUST_CHECK;

/* One pack being gathered in memory (core/ckpt_pack.c). */
struct ckpt_pack;
int ckpt_pack_new(struct ckpt_pack **out) ARB_MUST_CHECK;
void ckpt_pack_free(struct ckpt_pack *pk);
/* Adds object id (type, len bytes) whose data, zlib-deflated, is z (zl bytes). -ENOMEM. */
int ckpt_pack_add(struct ckpt_pack *pk, const git_oid *id, git_object_t type, size_t len,
		  const unsigned char *z, size_t zl) ARB_MUST_CHECK;
/*
 * Adds a whole entry of another pack (its header, then its deflated data) whose CRC-32 (as
 * that pack's index gives it) is crc: -EINVAL for a delta or a malformed header.
 */
int ckpt_pack_add_entry(struct ckpt_pack *pk, const git_oid *id, const unsigned char *entry,
			size_t entry_len, uint32_t crc) ARB_MUST_CHECK;
/* Whether id is in the pack; its type and size when it is (each optional). */
bool ckpt_pack_has(const struct ckpt_pack *pk, const git_oid *id, git_object_t *type, size_t *len);
/* The pack's size so far. */
size_t ckpt_pack_bytes(const struct ckpt_pack *pk);
/*
 * Takes into pk the smaller packs of pack_dir, geometrically, up to max_bytes in all
 * (core/ckpt_merge.c); *taken (n_taken names "pack-SUM") to remove with ckpt_pack_remove()
 * once pk is written. Best effort: a pack that cannot be taken in stays.
 */
int ckpt_pack_absorb(struct ckpt_pack *pk, int pack_dir, size_t max_bytes, char ***taken,
		     size_t *n_taken) ARB_MUST_CHECK;
/* Removes the packs taken in but the one written ("pack-SUM"), and frees taken. */
void ckpt_pack_remove(int pack_dir, const char *written, char **taken, size_t n);
/*
 * Writes objects_dir/pack/pack-SUM.{pack,idx}, having taken in smaller packs (up to
 * max_bytes); nothing for an empty pack. -errno, message.
 */
int ckpt_pack_write(struct ckpt_pack *pk, int objects_dir, size_t max_bytes) ARB_MUST_CHECK;

/* The workspace's own repository (NAME/git, its objects and the origin's). */
int ckpt_repo_open(const struct core_ws *ws, git_repository **out) ARB_MUST_CHECK;

#endif
