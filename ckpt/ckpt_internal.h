/* ckpt/ckpt_internal.h: the pack in memory, shared by ckpt/odb.c, pack.c and merge.c; not public.
 */
#ifndef ARB_CKPT_CKPT_INTERNAL_H
#define ARB_CKPT_CKPT_INTERNAL_H

#include "ckpt/ckpt.h"

/* One pack being gathered in memory (ckpt/pack.c). */
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
/* An entry of another pack, as its index gives it: id (20 bytes), offset, CRC-32. */
struct ckpt_pack_in {
	const unsigned char *id;
	uint64_t off;
	uint32_t crc;
};
/*
 * Takes in another pack's entries whole (no entry is copied or read): len bytes at off in buf
 * (buf_len bytes from ckpt_pack_buf_new, which pk frees once this returns 0), holding the n
 * entries in. -EEXIST (nothing taken in) when pk holds one of them already, -ENOMEM.
 */
int ckpt_pack_add_body(struct ckpt_pack *pk, unsigned char *buf, size_t buf_len, size_t off,
		       size_t len, const struct ckpt_pack_in *in, size_t n) ARB_MUST_CHECK;
/* A buffer of len bytes for ckpt_pack_add_body, its pages in place; NULL. Freed by the next. */
unsigned char *ckpt_pack_buf_new(size_t len);
void ckpt_pack_buf_free(unsigned char *buf, size_t len);
/* Whether id is in the pack. */
bool ckpt_pack_has(const struct ckpt_pack *pk, const git_oid *id);
/* The pack's size so far. */
size_t ckpt_pack_bytes(const struct ckpt_pack *pk);
/*
 * Takes into pk the smaller packs of pack_dir, geometrically, up to max_bytes in all
 * (ckpt/merge.c); *taken (n_taken names "pack-SUM") to remove with ckpt_pack_remove()
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

#endif
