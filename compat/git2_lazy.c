/*
 * compat/git2_lazy.c: libgit2, loaded on the first call that needs it.
 *
 * libgit2 brings about fifteen shared libraries (mbedTLS, libssh2 and OpenSSL's libcrypto,
 * Kerberos, PCRE2, ...) that the dynamic linker loads and relocates before main(): about
 * 3 ms of every arborinth process. `shell` does not need it before the box starts: its first
 * checkpoint is taken while bubblewrap builds the box (lib/box.c), and a project is found
 * without libgit2 when its cache is current (core/project_cache.c). So arborinth does not
 * link it: each libgit2 function the modules call is defined here and forwards to the real
 * one, in the library opened (dlopen) on the first call. arborinth_fs, libarborinth.so and
 * the tests link it.
 *
 * A library that cannot be opened ends the process as the dynamic linker would have at
 * start (status 127, the reason on stderr): the build named it, so the installation is
 * broken. The function list is made by compat/gen-lazy-git2.py from libgit2's headers; the
 * compiler checks each prototype against them, and a libgit2 function called elsewhere but
 * missing here fails arborinth's link. compat/git_nocerts.c still replaces mbedTLS's CA-bundle
 * loader for the libgit2 opened here (arborinth.dynlist exports it).
 */
#include <dlfcn.h>
#include <git2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ARB_GIT2_SONAME: from the library the build found (cli/CMakeLists.txt). */
static void *handle;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void open_git2(void)
{
	void *h = dlopen(ARB_GIT2_SONAME, RTLD_LAZY | RTLD_GLOBAL);

	if (!h) {
		fprintf(stderr, "arborinth: error while loading shared libraries: %s\n", dlerror());
		_exit(127);
	}
	__atomic_store_n(&handle, h, __ATOMIC_RELEASE);
}

/* Whether libgit2 is open: before that, no object of it exists. */
static bool loaded(void)
{
	return __atomic_load_n(&handle, __ATOMIC_ACQUIRE) != NULL;
}

/* name in libgit2, which is opened first if it is not yet. */
static void *lazy_sym(const char *name)
{
	void *f;

	pthread_once(&once, open_git2);
	f = dlsym(handle, name);
	if (!f) {
		fprintf(stderr,
			"arborinth: " ARB_GIT2_SONAME " lacks %s (a build against another "
			"version)\n",
			name);
		_exit(127);
	}
	return f;
}

/* The address of `name`, looked up once; the pointer is shared by every thread. */
#define LAZY_PTR(name, f)                                                                          \
	do {                                                                                       \
		void *p_ = __atomic_load_n(&f, __ATOMIC_ACQUIRE);                                  \
		if (!p_) {                                                                         \
			p_ = lazy_sym(#name);                                                      \
			__atomic_store_n(&f, p_, __ATOMIC_RELEASE);                                \
		}                                                                                  \
		*(void **)&fn = p_;                                                                \
	} while (0)

/* A function that returns a value (it may be the first call: it opens the library). */
#define GIT_FWD(ret, name, params, args)                                                           \
	ret name params                                                                            \
	{                                                                                          \
		static void *f;                                                                    \
		ret(*fn) params;                                                                   \
		LAZY_PTR(name, f);                                                                 \
		return fn args;                                                                    \
	}

/* A function that frees what the library made: nothing to do while it is not open. */
#define GIT_FREE(name, params, arg)                                                                \
	void name params                                                                           \
	{                                                                                          \
		static void *f;                                                                    \
		void(*fn) params;                                                                  \
		if (!loaded())                                                                     \
			return;                                                                    \
		LAZY_PTR(name, f);                                                                 \
		fn(arg);                                                                           \
	}

/* libgit2: compat/gen-lazy-git2.py's list, one line per function arborinth calls. */
GIT_FREE(git_annotated_commit_free, (git_annotated_commit * commit), commit)
GIT_FWD(int, git_annotated_commit_lookup,
	(git_annotated_commit * *out, git_repository *repo, const git_oid *id), (out, repo, id))
GIT_FWD(int, git_apply,
	(git_repository * repo, git_diff *diff, git_apply_location_t location,
	 const git_apply_options *options),
	(repo, diff, location, options))
GIT_FWD(int, git_attr_get_ext,
	(const char **value_out, git_repository *repo, git_attr_options *opts, const char *path,
	 const char *name),
	(value_out, repo, opts, path, name))
GIT_FREE(git_blob_free, (git_blob * blob), blob)
GIT_FWD(int, git_blob_lookup, (git_blob * *blob, git_repository *repo, const git_oid *id),
	(blob, repo, id))
GIT_FWD(const void *, git_blob_rawcontent, (const git_blob *blob), (blob))
GIT_FWD(git_object_size_t, git_blob_rawsize, (const git_blob *blob), (blob))
GIT_FREE(git_buf_dispose, (git_buf * buffer), buffer)
GIT_FWD(int, git_checkout_tree,
	(git_repository * repo, const git_object *treeish, const git_checkout_options *opts),
	(repo, treeish, opts))
GIT_FWD(const git_signature *, git_commit_committer, (const git_commit *commit), (commit))
GIT_FWD(int, git_commit_create,
	(git_oid * id, git_repository *repo, const char *update_ref, const git_signature *author,
	 const git_signature *committer, const char *message_encoding, const char *message,
	 const git_tree *tree, size_t parent_count, const git_commit *parents[]),
	(id, repo, update_ref, author, committer, message_encoding, message, tree, parent_count,
	 parents))
GIT_FREE(git_commit_free, (git_commit * commit), commit)
GIT_FWD(const git_oid *, git_commit_id, (const git_commit *commit), (commit))
GIT_FWD(int, git_commit_lookup, (git_commit * *commit, git_repository *repo, const git_oid *id),
	(commit, repo, id))
GIT_FWD(const char *, git_commit_message, (const git_commit *commit), (commit))
GIT_FWD(unsigned int, git_commit_parentcount, (const git_commit *commit), (commit))
GIT_FWD(const char *, git_commit_summary, (git_commit * commit), (commit))
GIT_FWD(git_time_t, git_commit_time, (const git_commit *commit), (commit))
GIT_FWD(int, git_commit_tree, (git_tree * *tree_out, const git_commit *commit), (tree_out, commit))
GIT_FWD(const git_oid *, git_commit_tree_id, (const git_commit *commit), (commit))
GIT_FREE(git_config_free, (git_config * cfg), cfg)
GIT_FWD(int, git_config_get_string, (const char **out, const git_config *cfg, const char *name),
	(out, cfg, name))
GIT_FWD(int, git_config_get_string_buf, (git_buf * out, const git_config *cfg, const char *name),
	(out, cfg, name))
GIT_FWD(int, git_diff_find_similar, (git_diff * diff, const git_diff_find_options *options),
	(diff, options))
GIT_FREE(git_diff_free, (git_diff * diff), diff)
GIT_FWD(const git_diff_delta *, git_diff_get_delta, (const git_diff *diff, size_t idx), (diff, idx))
GIT_FWD(int, git_diff_get_stats, (git_diff_stats * *out, git_diff *diff), (out, diff))
GIT_FWD(size_t, git_diff_num_deltas, (const git_diff *diff), (diff))
GIT_FWD(int, git_diff_print,
	(git_diff * diff, git_diff_format_t format, git_diff_line_cb print_cb, void *payload),
	(diff, format, print_cb, payload))
GIT_FWD(size_t, git_diff_stats_deletions, (const git_diff_stats *stats), (stats))
GIT_FWD(size_t, git_diff_stats_files_changed, (const git_diff_stats *stats), (stats))
GIT_FREE(git_diff_stats_free, (git_diff_stats * stats), stats)
GIT_FWD(size_t, git_diff_stats_insertions, (const git_diff_stats *stats), (stats))
GIT_FWD(int, git_diff_stats_to_buf,
	(git_buf * out, const git_diff_stats *stats, git_diff_stats_format_t format, size_t width),
	(out, stats, format, width))
GIT_FWD(char, git_diff_status_char, (git_delta_t status), (status))
GIT_FWD(int, git_diff_tree_to_tree,
	(git_diff * *diff, git_repository *repo, git_tree *old_tree, git_tree *new_tree,
	 const git_diff_options *opts),
	(diff, repo, old_tree, new_tree, opts))
GIT_FWD(const git_error *, git_error_last, (void), ())
GIT_FWD(int, git_graph_descendant_of,
	(git_repository * repo, const git_oid *commit, const git_oid *ancestor),
	(repo, commit, ancestor))
GIT_FREE(git_index_conflict_iterator_free, (git_index_conflict_iterator * iterator), iterator)
GIT_FWD(int, git_index_conflict_iterator_new,
	(git_index_conflict_iterator * *iterator_out, git_index *index), (iterator_out, index))
GIT_FWD(int, git_index_conflict_next,
	(const git_index_entry **ancestor_out, const git_index_entry **our_out,
	 const git_index_entry **their_out, git_index_conflict_iterator *iterator),
	(ancestor_out, our_out, their_out, iterator))
GIT_FWD(size_t, git_index_entrycount, (const git_index *index), (index))
GIT_FREE(git_index_free, (git_index * index), index)
GIT_FWD(const git_index_entry *, git_index_get_byindex, (git_index * index, size_t n), (index, n))
GIT_FWD(int, git_index_has_conflicts, (const git_index *index), (index))
GIT_FWD(int, git_index_open, (git_index * *out, const char *index_path), (out, index_path))
GIT_FWD(int, git_index_read_tree, (git_index * index, const git_tree *tree), (index, tree))
GIT_FWD(int, git_index_write, (git_index * index), (index))
GIT_FWD(int, git_index_write_tree_to, (git_oid * out, git_index *index, git_repository *repo),
	(out, index, repo))
GIT_FWD(int, git_libgit2_init, (void), ())
GIT_FWD(int, git_libgit2_version, (int *major, int *minor, int *rev), (major, minor, rev))
GIT_FWD(int, git_merge_analysis_for_ref,
	(git_merge_analysis_t * analysis_out, git_merge_preference_t *preference_out,
	 git_repository *repo, git_reference *our_ref, const git_annotated_commit **their_heads,
	 size_t their_heads_len),
	(analysis_out, preference_out, repo, our_ref, their_heads, their_heads_len))
GIT_FWD(int, git_merge_commits,
	(git_index * *out, git_repository *repo, const git_commit *our_commit,
	 const git_commit *their_commit, const git_merge_options *opts),
	(out, repo, our_commit, their_commit, opts))
GIT_FREE(git_message_trailer_array_free, (git_message_trailer_array * arr), arr)
GIT_FWD(int, git_message_trailers, (git_message_trailer_array * arr, const char *message),
	(arr, message))
GIT_FREE(git_object_free, (git_object * object), object)
GIT_FWD(const git_oid *, git_object_id, (const git_object *obj), (obj))
GIT_FWD(int, git_object_peel,
	(git_object * *peeled, const git_object *object, git_object_t target_type),
	(peeled, object, target_type))
GIT_FWD(const char *, git_object_type2string, (git_object_t type), (type))
GIT_FWD(int, git_odb_add_disk_alternate, (git_odb * odb, const char *path), (odb, path))
GIT_FWD(int, git_odb_exists, (git_odb * db, const git_oid *id), (db, id))
GIT_FREE(git_odb_free, (git_odb * db), db)
GIT_FWD(int, git_odb_hash, (git_oid * out, const void *data, size_t len, git_object_t type),
	(out, data, len, type))
GIT_FWD(int, git_odb_hashfile, (git_oid * out, const char *path, git_object_t type),
	(out, path, type))
GIT_FWD(int, git_odb_new, (git_odb * *out), (out))
GIT_FWD(const void *, git_odb_object_data, (git_odb_object * object), (object))
GIT_FREE(git_odb_object_free, (git_odb_object * object), object)
GIT_FWD(size_t, git_odb_object_size, (git_odb_object * object), (object))
GIT_FWD(git_object_t, git_odb_object_type, (git_odb_object * object), (object))
GIT_FWD(int, git_odb_open, (git_odb * *out, const char *objects_dir), (out, objects_dir))
GIT_FWD(int, git_odb_read, (git_odb_object * *out, git_odb *db, const git_oid *id), (out, db, id))
GIT_FWD(int, git_odb_read_header,
	(size_t * len_out, git_object_t *type_out, git_odb *db, const git_oid *id),
	(len_out, type_out, db, id))
GIT_FWD(int, git_odb_write,
	(git_oid * out, git_odb *odb, const void *data, size_t len, git_object_t type),
	(out, odb, data, len, type))
GIT_FWD(int, git_oid_cmp, (const git_oid *a, const git_oid *b), (a, b))
GIT_FWD(int, git_oid_cpy, (git_oid * out, const git_oid *src), (out, src))
GIT_FWD(int, git_oid_equal, (const git_oid *a, const git_oid *b), (a, b))
GIT_FWD(int, git_oid_fromraw, (git_oid * out, const unsigned char *raw), (out, raw))
GIT_FWD(int, git_oid_fromstr, (git_oid * out, const char *str), (out, str))
GIT_FWD(int, git_oid_fromstrn, (git_oid * out, const char *str, size_t length), (out, str, length))
GIT_FWD(char *, git_oid_tostr, (char *out, size_t n, const git_oid *id), (out, n, id))
GIT_FWD(char *, git_oid_tostr_s, (const git_oid *oid), (oid))
GIT_FWD(int, git_reference_create,
	(git_reference * *out, git_repository *repo, const char *name, const git_oid *id, int force,
	 const char *log_message),
	(out, repo, name, id, force, log_message))
GIT_FWD(int, git_reference_delete, (git_reference * ref), (ref))
GIT_FWD(int, git_reference_foreach_name,
	(git_repository * repo, git_reference_foreach_name_cb callback, void *payload),
	(repo, callback, payload))
GIT_FREE(git_reference_free, (git_reference * ref), ref)
GIT_FWD(int, git_reference_is_branch, (const git_reference *ref), (ref))
GIT_FREE(git_reference_iterator_free, (git_reference_iterator * iter), iter)
GIT_FWD(int, git_reference_iterator_glob_new,
	(git_reference_iterator * *out, git_repository *repo, const char *glob), (out, repo, glob))
GIT_FWD(int, git_reference_lookup, (git_reference * *out, git_repository *repo, const char *name),
	(out, repo, name))
GIT_FWD(const char *, git_reference_name, (const git_reference *ref), (ref))
GIT_FWD(int, git_reference_name_is_valid, (int *valid, const char *refname), (valid, refname))
GIT_FWD(int, git_reference_name_to_id, (git_oid * out, git_repository *repo, const char *name),
	(out, repo, name))
GIT_FWD(int, git_reference_next, (git_reference * *out, git_reference_iterator *iter), (out, iter))
GIT_FWD(int, git_reference_peel, (git_object * *out, const git_reference *ref, git_object_t type),
	(out, ref, type))
GIT_FWD(int, git_reference_remove, (git_repository * repo, const char *name), (repo, name))
GIT_FWD(int, git_reference_resolve, (git_reference * *out, const git_reference *ref), (out, ref))
GIT_FWD(int, git_reference_set_target,
	(git_reference * *out, git_reference *ref, const git_oid *id, const char *log_message),
	(out, ref, id, log_message))
GIT_FWD(const char *, git_reference_shorthand, (const git_reference *ref), (ref))
GIT_FWD(const char *, git_reference_symbolic_target, (const git_reference *ref), (ref))
GIT_FWD(const git_oid *, git_reference_target, (const git_reference *ref), (ref))
GIT_FWD(git_reference_t, git_reference_type, (const git_reference *ref), (ref))
GIT_FWD(int, git_remote_create_with_fetchspec,
	(git_remote * *out, git_repository *repo, const char *name, const char *url,
	 const char *fetch),
	(out, repo, name, url, fetch))
GIT_FWD(int, git_remote_delete, (git_repository * repo, const char *name), (repo, name))
GIT_FWD(int, git_remote_fetch,
	(git_remote * remote, const git_strarray *refspecs, const git_fetch_options *opts,
	 const char *reflog_message),
	(remote, refspecs, opts, reflog_message))
GIT_FREE(git_remote_free, (git_remote * remote), remote)
GIT_FWD(int, git_remote_list, (git_strarray * out, git_repository *repo), (out, repo))
GIT_FWD(int, git_remote_lookup, (git_remote * *out, git_repository *repo, const char *name),
	(out, repo, name))
GIT_FWD(int, git_remote_set_url, (git_repository * repo, const char *remote, const char *url),
	(repo, remote, url))
GIT_FWD(const char *, git_remote_url, (const git_remote *remote), (remote))
GIT_FWD(const char *, git_repository_commondir, (const git_repository *repo), (repo))
GIT_FWD(int, git_repository_config_snapshot, (git_config * *out, git_repository *repo), (out, repo))
GIT_FREE(git_repository_free, (git_repository * repo), repo)
GIT_FWD(int, git_repository_head, (git_reference * *out, git_repository *repo), (out, repo))
GIT_FWD(int, git_repository_is_bare, (const git_repository *repo), (repo))
GIT_FWD(int, git_repository_odb, (git_odb * *out, git_repository *repo), (out, repo))
GIT_FWD(int, git_repository_open_bare, (git_repository * *out, const char *bare_path),
	(out, bare_path))
GIT_FWD(int, git_repository_open_ext,
	(git_repository * *out, const char *path, unsigned int flags, const char *ceiling_dirs),
	(out, path, flags, ceiling_dirs))
GIT_FWD(const char *, git_repository_path, (const git_repository *repo), (repo))
GIT_FWD(const char *, git_repository_workdir, (const git_repository *repo), (repo))
GIT_FWD(int, git_revparse_single, (git_object * *out, git_repository *repo, const char *spec),
	(out, repo, spec))
GIT_FREE(git_revwalk_free, (git_revwalk * walk), walk)
GIT_FWD(int, git_revwalk_hide, (git_revwalk * walk, const git_oid *commit_id), (walk, commit_id))
GIT_FWD(int, git_revwalk_new, (git_revwalk * *out, git_repository *repo), (out, repo))
GIT_FWD(int, git_revwalk_next, (git_oid * out, git_revwalk *walk), (out, walk))
GIT_FWD(int, git_revwalk_push, (git_revwalk * walk, const git_oid *id), (walk, id))
GIT_FWD(int, git_signature_default, (git_signature * *out, git_repository *repo), (out, repo))
GIT_FREE(git_signature_free, (git_signature * sig), sig)
GIT_FWD(int, git_signature_now, (git_signature * *out, const char *name, const char *email),
	(out, name, email))
GIT_FWD(const git_status_entry *, git_status_byindex, (git_status_list * statuslist, size_t idx),
	(statuslist, idx))
GIT_FWD(size_t, git_status_list_entrycount, (git_status_list * statuslist), (statuslist))
GIT_FREE(git_status_list_free, (git_status_list * statuslist), statuslist)
GIT_FWD(int, git_status_list_new,
	(git_status_list * *out, git_repository *repo, const git_status_options *opts),
	(out, repo, opts))
GIT_FREE(git_strarray_dispose, (git_strarray * array), array)
GIT_FWD(const git_tree_entry *, git_tree_entry_byindex, (const git_tree *tree, size_t idx),
	(tree, idx))
GIT_FWD(const git_tree_entry *, git_tree_entry_byname, (const git_tree *tree, const char *filename),
	(tree, filename))
GIT_FWD(int, git_tree_entry_bypath, (git_tree_entry * *out, const git_tree *root, const char *path),
	(out, root, path))
GIT_FWD(git_filemode_t, git_tree_entry_filemode, (const git_tree_entry *entry), (entry))
GIT_FREE(git_tree_entry_free, (git_tree_entry * entry), entry)
GIT_FWD(const git_oid *, git_tree_entry_id, (const git_tree_entry *entry), (entry))
GIT_FWD(const char *, git_tree_entry_name, (const git_tree_entry *entry), (entry))
GIT_FWD(size_t, git_tree_entrycount, (const git_tree *tree), (tree))
GIT_FREE(git_tree_free, (git_tree * tree), tree)
GIT_FWD(int, git_tree_lookup, (git_tree * *out, git_repository *repo, const git_oid *id),
	(out, repo, id))
/* compare and the stale-fork check (core/compare.c, core/stale.c). */
GIT_FWD(int, git_index_conflict_get,
	(const git_index_entry **ancestor_out, const git_index_entry **our_out,
	 const git_index_entry **their_out, git_index *index, const char *path),
	(ancestor_out, our_out, their_out, index, path))
GIT_FWD(int, git_merge_base,
	(git_oid * out, git_repository *repo, const git_oid *one, const git_oid *two),
	(out, repo, one, two))
GIT_FWD(int, git_merge_base_many,
	(git_oid * out, git_repository *repo, size_t length, const git_oid input_array[]),
	(out, repo, length, input_array))
GIT_FWD(int, git_merge_trees,
	(git_index * *out, git_repository *repo, const git_tree *ancestor_tree,
	 const git_tree *our_tree, const git_tree *their_tree, const git_merge_options *opts),
	(out, repo, ancestor_tree, our_tree, their_tree, opts))
GIT_FREE(git_patch_free, (git_patch * patch), patch)
GIT_FWD(int, git_patch_from_diff, (git_patch * *out, git_diff *diff, size_t idx), (out, diff, idx))
GIT_FWD(int, git_patch_line_stats,
	(size_t * total_context, size_t *total_additions, size_t *total_deletions,
	 const git_patch *patch),
	(total_context, total_additions, total_deletions, patch))
int git_libgit2_shutdown(void)
{
	static void *f;
	int (*fn)(void);

	if (!loaded())
		return 0;
	LAZY_PTR(git_libgit2_shutdown, f);
	return fn();
}
