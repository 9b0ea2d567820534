/*
 * ckpt/ckpt.h: the checkpoint store, a git object and pack writer. Objects are hashed (SHA-1,
 * as git names them) and gathered into one pack per flush (ckpt/odb.c), written with its index
 * (ckpt/pack.c) after taking in the smaller packs beside it (ckpt/merge.c); objects too large
 * for a pack are written loose. It knows nothing of workspaces: core/ opens it over a
 * workspace's NAME/checkpoints.git (core/ckpt_store.c) and over the view's objects stores.
 */
#ifndef ARB_CKPT_CKPT_H
#define ARB_CKPT_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <git2.h>

#include "util/util.h"

/*
 * The object store checkpoints write through (ckpt/odb.c): new objects gathered into one
 * pack in NAME/checkpoints.git/objects/pack, written by ckpt_odb_flush(); objects too large
 * for it loose.
 * Made by ckpt_odb_open() (core: ckpt_odb_new() for a workspace); caller frees with ckpt_odb_free()
 * (which writes nothing). Not thread-safe.
 */
struct ckpt_odb;
/* Over objects (an objects directory: a workspace's checkpoint store, core/objects_view.c's). */
int ckpt_odb_open(const char *objects, struct ckpt_odb **out) ARB_MUST_CHECK;
void ckpt_odb_free(struct ckpt_odb *f);
/*
 * Stores an object of type, len bytes of data: its id (git's, hashed with ckpt_sha1) into
 * *id; written unless this store holds it or was told of it (ckpt_odb_know). -errno, message.
 */
int ckpt_odb_put(struct ckpt_odb *f, git_object_t type, const void *data, size_t len,
		 git_oid *id) ARB_MUST_CHECK;
/*
 * Stores a whole (not delta) pack entry of another pack as it is: header and deflated data,
 * len bytes, its CRC-32. -E2BIG (no message) when the pack is full: ckpt_odb_put instead.
 */
int ckpt_odb_put_entry(struct ckpt_odb *f, const git_oid *id, const unsigned char *entry,
		       size_t len, uint32_t crc) ARB_MUST_CHECK;
/* Tells the store that id is stored already (an earlier checkpoint's): not written again. */
int ckpt_odb_know(struct ckpt_odb *f, const git_oid *id) ARB_MUST_CHECK;
/* Writes the pack of what was written since ckpt_odb_new (nothing when nothing was). */
int ckpt_odb_flush(struct ckpt_odb *f) ARB_MUST_CHECK;
/* SHA-1 (plain, not collision-detecting) of head (hl bytes, may be 0) then data. -EIO. */
int ckpt_sha1(const void *head, size_t hl, const void *data, size_t len,
	      unsigned char out[20]) ARB_MUST_CHECK;
/* SHA-1 of the n parts of iov, in order. -EIO. */
struct iovec;
int ckpt_sha1_iov(const struct iovec *iov, size_t n, unsigned char out[20]) ARB_MUST_CHECK;
/* The git id of an object of type with len bytes of data. -EIO. */
int ckpt_object_id(git_object_t type, const void *data, size_t len, git_oid *id) ARB_MUST_CHECK;

#endif
