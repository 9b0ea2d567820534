/* core/ckpt_internal.h: what the checkpoint files of core/ share; not public. */
#ifndef ARB_CORE_CKPT_INTERNAL_H
#define ARB_CORE_CKPT_INTERNAL_H

#include "ckpt/ckpt.h"
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
 * The checkpoint store's object writer (ckpt/ckpt.h) over NAME/checkpoints.git/objects
 * (core/ckpt_store.c). Caller frees with ckpt_odb_free().
 */
int ckpt_odb_new(const struct core_ws *ws, struct ckpt_odb **out) ARB_MUST_CHECK;

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
