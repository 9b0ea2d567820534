/* core/ckpt_internal.h: what the checkpoint files of core/ share; not public. */
#ifndef ARB_CORE_CKPT_INTERNAL_H
#define ARB_CORE_CKPT_INTERNAL_H

#include "core/core_internal.h"

#define CKPT_REF_PREFIX "refs/arborinth/checkpoints/"
#define CKPT_CACHE_FILE "checkpoint.cache"
#define CKPT_BASE_FILE	"checkpoint.base"
#define CKPT_LAST_FILE	"checkpoint.last"
#define CKPT_LOCK_FILE	"checkpoint.lock"

struct ckpt_stats {
	size_t hashed, reused; /* layer files hashed, and known from the cache */
};

/*
 * The tree of ws's view as it is now (core/ckpt_tree.c), its objects written into repo (the
 * workspace's own store). stats optional. -errno with a message.
 */
int ckpt_view_tree(git_repository *repo, const struct core_ws *ws, git_oid *tree,
		   struct ckpt_stats *stats) ARB_MUST_CHECK;

/*
 * What the last checkpoint learnt (core/ckpt_cache.c): the blob ids of the layer's files by
 * their stat data, and the trees it built. Caller frees with ckpt_cache_free(). start_ns: when
 * this checkpoint started (files changed since shortly before are not kept). Not thread-safe.
 */
struct ckpt_cache;
struct ckpt_odb;
struct stat;
int ckpt_cache_open(struct ckpt_cache **out, const struct core_ws *ws,
		    int64_t start_ns) ARB_MUST_CHECK;
void ckpt_cache_free(struct ckpt_cache *c);
/* Tells store every object the cache names (they are stored): -ENOMEM. */
int ckpt_cache_tell(const struct ckpt_cache *c, struct ckpt_odb *store) ARB_MUST_CHECK;
/* The blob id of the file st describes, if the last checkpoint hashed it (borrowed), or NULL. */
const git_oid *ckpt_cache_find(const struct ckpt_cache *c, const struct stat *st);
/* Keeps for the next checkpoint: a file's blob id, a tree this one built. */
void ckpt_cache_keep(struct ckpt_cache *c, const struct stat *st, const git_oid *oid);
void ckpt_cache_keep_tree(struct ckpt_cache *c, const git_oid *oid);
/* Writes NAME/checkpoint.cache again if it changed (best effort, once the objects are stored). */
void ckpt_cache_save(struct ckpt_cache *c);
/* Removes NAME/checkpoint.cache (hashes and trees of the last checkpoint): the next builds afresh.
 */
void ckpt_cache_drop(const struct core_ws *ws);

/*
 * The object store checkpoints write through (core/ckpt_odb.c): new objects gathered into one
 * pack in NAME/checkpoints.git/objects/pack, written by ckpt_odb_flush(); objects too large
 * for it loose.
 * Caller frees with ckpt_odb_free() (which writes nothing). Not thread-safe.
 */
struct ckpt_odb;
int ckpt_odb_new(const struct core_ws *ws, struct ckpt_odb **out) ARB_MUST_CHECK;
/* The same over any objects directory (core/objects_view.c's stores). */
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

/*
 * The base's objects a checkpoint reads, kept between checkpoints in the file at path
 * (core/ckpt_base.c); what it lacks or holds wrong is read from odb (borrowed, outlives it).
 * Caller frees with ckpt_base_free(). Not thread-safe.
 */
struct ckpt_base;
int ckpt_base_open(struct ckpt_base **out, const char *path, git_odb *odb) ARB_MUST_CHECK;
void ckpt_base_free(struct ckpt_base *b);
/*
 * Object id's content (*data, *len: borrowed, valid while b lives), which must be of type.
 * -EIO with a message when it is missing or of another type.
 */
int ckpt_base_read(struct ckpt_base *b, const git_oid *id, git_object_t type,
		   const unsigned char **data, size_t *len) ARB_MUST_CHECK;
/* Writes the file again when objects were read that it lacked (best effort). */
void ckpt_base_save(struct ckpt_base *b);

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

/*
 * The checkpoint store (core/ckpt_store.c): NAME/checkpoints.git, made on first use, a bare
 * repository no box can reach whose one alternate is the origin's objects. Caller frees
 * *out. ckpt_store_path: its path, caller frees (NULL: out of memory).
 */
int ckpt_repo_open(struct core_project *p, const struct core_ws *ws,
		   git_repository **out) ARB_MUST_CHECK;
char *ckpt_store_path(const struct core_ws *ws);
/* The workspace's own repository (NAME/git: the box's, hostile), for its revisions only. */
int ckpt_ws_repo_open(const struct core_ws *ws, git_repository **out) ARB_MUST_CHECK;
/*
 * Copies tree (of wrepo, the workspace's repository) and what it holds into store, unless
 * there already, every entry name checked first (core_entry_name_ok): -EINVAL naming a
 * refused entry, -EIO. Objects are hashed as they are read.
 */
int ckpt_store_import(git_repository *store, git_repository *wrepo,
		      const git_oid *tree) ARB_MUST_CHECK;
/*
 * Checkpoint ids in state.db (table ckpt_ids, by workspace id and number): record one as it
 * is made; check one read from the store (-EIO with one line naming it when state.db holds
 * another commit or none); forget a workspace's (best effort).
 */
int ckpt_ids_record(struct core_project *p, const struct core_ws *ws, unsigned seq,
		    const git_oid *commit) ARB_MUST_CHECK;
int ckpt_ids_check(struct core_project *p, const struct core_ws *ws, unsigned seq,
		   const git_oid *commit) ARB_MUST_CHECK;
/* The recorded ids of ws (only: that number alone, or 0 for all); free with ckpt_ids_free. */
struct ckpt_id {
	unsigned seq;
	git_oid commit;
};
struct ckpt_ids {
	struct ckpt_id *v;
	size_t n;
};
int ckpt_ids_load(struct core_project *p, const struct core_ws *ws, unsigned only,
		  struct ckpt_ids *out) ARB_MUST_CHECK;
void ckpt_ids_free(struct ckpt_ids *ids);
/* ckpt_ids_check against ids loaded once (for a listing). */
int ckpt_ids_match(const struct ckpt_ids *ids, const struct core_ws *ws, unsigned seq,
		   const git_oid *commit) ARB_MUST_CHECK;

/*
 * `diff --name-status` and `--stat` of diff into f as git prints them, every path quoted with
 * util_quote (core/diff_print.c). -errno with a message.
 */
int ckpt_name_status_print(git_diff *diff, FILE *f) ARB_MUST_CHECK;
int ckpt_stat_print(git_diff *diff, bool color, FILE *f) ARB_MUST_CHECK;
/* core_ws_diff_files's entries v[0..n) for the n deltas of diff. */
int ckpt_diff_files_fill(git_diff *diff, struct core_diff_file *v, size_t n) ARB_MUST_CHECK;
/*
 * git_diff_print's line callback for the patch format into payload (a struct ckpt_patch_out).
 * The content of a line goes out as it is, so the patch applies, except on a terminal, where
 * its control characters but tabs are escaped (util_quote_text): a file's content cannot rewrite
 * the screen. Paths in headers are quoted by libgit2.
 */
struct ckpt_patch_out {
	FILE *f;
	bool terminal; /* escape the content's control characters */
	bool color;    /* git's colours: headers bold, hunks cyan, + green, - red */
};
int ckpt_patch_line(const git_diff_delta *d, const git_diff_hunk *h, const git_diff_line *l,
		    void *payload);

#endif
