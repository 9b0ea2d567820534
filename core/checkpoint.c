/*
 * core/checkpoint.c: checkpoints. Each is a commit in the checkpoint store (ckpt_store.c,
 * NAME/checkpoints.git, out of the box's reach) whose tree is the whole view (ckpt_tree.c),
 * on refs/arborinth/checkpoints/N there (N counts from 1, its commit id also in state.db),
 * its parent the previous checkpoint (the base commit for the first), its message the
 * user's, with trailers Arborinth-Kind (manual, start, end, rewind) and Arborinth-Session.
 * The workspace's branch, index and HEAD are never touched. Also: naming trees of a
 * workspace (base, view, N, a revision) and diffs between them through libgit2.
 */
#include "core/ckpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_SIG_NAME "arborinth"
#define CKPT_SIG_MAIL "arborinth@localhost"

void core_ckpt_clear(struct core_ckpt *c)
{
	free(c->message);
	memset(c, 0, sizeof(*c));
}

void core_ckpts_free(struct core_ckpt *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		core_ckpt_clear(&v[i]);
	free(v);
}

/* Fills c from checkpoint commit cm with sequence number seq. */
static int ckpt_fill(struct core_ckpt *c, unsigned seq, git_commit *cm)
{
	git_message_trailer_array tr = {0};
	const char *msg = git_commit_message(cm);

	memset(c, 0, sizeof(*c));
	c->seq = seq;
	git_oid_tostr(c->commit, sizeof(c->commit), git_commit_id(cm));
	git_oid_tostr(c->tree, sizeof(c->tree), git_commit_tree_id(cm));
	c->time_ns = (int64_t)git_commit_time(cm) * 1000000000;
	c->message =
	    strndup(git_commit_summary(cm) ? git_commit_summary(cm) : "", CORE_CKPT_MESSAGE_MAX);
	if (!c->message)
		return util_err(-ENOMEM, "out of memory");
	snprintf(c->kind, sizeof(c->kind), "manual");
	if (msg && git_message_trailers(&tr, msg) == 0) {
		for (size_t i = 0; i < tr.count; i++) {
			if (!strcmp(tr.trailers[i].key, "Arborinth-Kind"))
				snprintf(c->kind, sizeof(c->kind), "%s", tr.trailers[i].value);
			else if (!strcmp(tr.trailers[i].key, "Arborinth-Session"))
				c->session = strtoll(tr.trailers[i].value, NULL, 10);
			else if (!strcmp(tr.trailers[i].key, "Arborinth-Time"))
				c->time_ns = strtoll(tr.trailers[i].value, NULL, 10);
		}
		git_message_trailer_array_free(&tr);
	}
	return 0;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct core_ckpt *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Every checkpoint of the store, oldest first, each checked against state.db. */
static int list(struct core_project *p, const struct core_ws *ws, git_repository *repo,
		struct core_ckpt **out, size_t *n)
{
	git_reference_iterator *it = NULL;
	git_reference *ref;
	struct core_ckpt *v = NULL;
	struct ckpt_ids ids;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = ckpt_ids_load(p, ws, 0, &ids);
	if (rc < 0)
		return rc;
	if (git_reference_iterator_glob_new(&it, repo, CKPT_REF_PREFIX "*") < 0) {
		ckpt_ids_free(&ids);
		return util_err(-EIO, "cannot list checkpoints: %s", git_error_last()->message);
	}
	while (rc == 0 && git_reference_next(&ref, it) == 0) {
		const char *num = git_reference_name(ref) + strlen(CKPT_REF_PREFIX);
		char *end;
		unsigned long seq = strtoul(num, &end, 10);
		git_commit *cm = NULL;

		if (*end || seq == 0 || git_reference_target(ref) == NULL ||
		    git_commit_lookup(&cm, repo, git_reference_target(ref)) < 0) {
			git_reference_free(ref);
			continue; /* not one of ours */
		}
		rc = ckpt_ids_match(&ids, ws, (unsigned)seq, git_commit_id(cm));
		if (rc == 0 && *n == cap) {
			struct core_ckpt *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*nv));

			if (!nv)
				rc = util_err(-ENOMEM, "out of memory");
			else
				v = nv;
		}
		if (rc == 0 && (rc = ckpt_fill(&v[*n], (unsigned)seq, cm)) == 0)
			(*n)++;
		git_commit_free(cm);
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	ckpt_ids_free(&ids);
	if (rc < 0) {
		core_ckpts_free(v, *n);
		*n = 0;
		return rc;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_seq);
	*out = v;
	return 0;
}

static void seq_max(const char *num, unsigned *seq)
{
	char *end;
	unsigned long n = strtoul(num, &end, 10);

	if (*num >= '1' && *num <= '9' && (!*end || *end == '\n') && n > *seq && n < UINT_MAX)
		*seq = (unsigned)n;
}

/*
 * The highest checkpoint number from the names alone: the loose refs' directory (one read,
 * however many checkpoints) and packed-refs (where a `git pack-refs` in the view moves them);
 * libgit2's reference iterator read every ref file, a cost that grew by two files a session.
 */
static void scan_ckpts(const char *store, unsigned *seq)
{
	char *dir = util_path_join(store, CKPT_REF_PREFIX), *packed = NULL, *text = NULL;
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	size_t len = 0;

	*seq = 0;
	while (d && (de = readdir(d)))
		seq_max(de->d_name, seq);
	if (d)
		closedir(d);
	packed = util_path_join(store, "packed-refs");
	if (packed && util_read_file(packed, &text, &len) == 0) {
		for (char *l = strstr(text, " " CKPT_REF_PREFIX); l;
		     l = strstr(l + 1, " " CKPT_REF_PREFIX))
			seq_max(l + 1 + strlen(CKPT_REF_PREFIX), seq);
	}
	free(text);
	free(packed);
	free(dir);
}

static int ckpt_id(git_repository *repo, unsigned seq, git_oid *commit)
{
	char ref[64];

	snprintf(ref, sizeof(ref), CKPT_REF_PREFIX "%u", seq);
	return git_reference_name_to_id(commit, repo, ref);
}

/* NAME/checkpoint.last: the number the last checkpoint took, or 0. */
static unsigned read_hint(const struct core_ws *ws)
{
	char *path = util_path_join(ws->root, CKPT_LAST_FILE), *text = NULL, *end;
	size_t len = 0;
	unsigned long n = 0;

	if (path && util_read_file(path, &text, &len) == 0 && len < 16) {
		n = strtoul(text, &end, 10);
		if (end == text || (*end && *end != '\n') || n >= UINT_MAX)
			n = 0;
	}
	free(text);
	free(path);
	return (unsigned)n;
}

/*
 * Best effort, no fsync: a lost or older hint only costs last_ckpt() a scan or a few more
 * probes. Beside the gitdir, where the box (which writes the view's .git) cannot reach it.
 */
static void write_hint(const struct core_ws *ws, unsigned seq)
{
	char *path = util_path_join(ws->root, CKPT_LAST_FILE);
	char *tmp = path ? util_asprintf("%s.%d", path, (int)getpid()) : NULL;
	char text[16];
	int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
	int n = snprintf(text, sizeof(text), "%u\n", seq);

	if (fd >= 0) {
		bool ok = write(fd, text, (size_t)n) == n;

		close(fd);
		if (!ok || rename(tmp, path) < 0)
			unlink(tmp);
	}
	free(tmp);
	free(path);
}

/*
 * The highest checkpoint number and its commit. From the hint the last checkpoint left, when
 * its ref is there: the numbers after it that exist are taken as well (another process's
 * checkpoints since); otherwise from the names of all refs (scan_ckpts).
 */
static int last_ckpt(git_repository *repo, const struct core_ws *ws, unsigned *seq, git_oid *commit)
{
	unsigned hint = read_hint(ws);
	char *store = NULL;
	git_oid next;

	*seq = 0;
	if (hint && ckpt_id(repo, hint, commit) == 0) {
		*seq = hint;
		while (*seq < UINT_MAX - 1 && ckpt_id(repo, *seq + 1, &next) == 0) {
			++*seq;
			git_oid_cpy(commit, &next);
		}
		return 0;
	}
	if (!(store = ckpt_store_path(ws)))
		return util_err(-ENOMEM, "out of memory");
	scan_ckpts(store, seq);
	free(store);
	if (*seq && ckpt_id(repo, *seq, commit) < 0)
		return util_err(-EIO, "checkpoint %u: %s", *seq, git_error_last()->message);
	return 0;
}

int core_ws_checkpoints(struct core_project *p, const struct core_ws *ws, struct core_ckpt **out,
			size_t *n)
{
	git_repository *repo = NULL;
	int rc = ckpt_repo_open(p, ws, &repo);

	*out = NULL;
	*n = 0;
	rc = rc ?: list(p, ws, repo, out, n);
	git_repository_free(repo);
	return rc;
}

int core_ws_lock(const struct core_ws *ws)
{
	char *path = util_path_join(ws->root, CKPT_LOCK_FILE);
	int fd, e;

	if (!path)
		return util_err(-ENOMEM, "out of memory");
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	while (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		e = errno;
		close(fd);
		fd = -1;
		errno = e;
	}
	if (fd < 0)
		fd = util_err(-errno, "cannot lock %s: %s", path, strerror(errno));
	free(path);
	return fd;
}

void core_ws_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* the lock goes with the last descriptor of it */
}

static int checkpoint_locked(struct core_project *p, const struct core_ws *ws,
			     const struct core_ckpt_opts *o, struct core_ckpt *out);

int core_ws_checkpoint(struct core_project *p, const struct core_ws *ws,
		       const struct core_ckpt_opts *o, struct core_ckpt *out)
{
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if (o->message && strlen(o->message) > CORE_CKPT_MESSAGE_MAX)
		return util_err(-EINVAL, "checkpoint message longer than %d bytes",
				CORE_CKPT_MESSAGE_MAX);
	/* The number it takes and the parent it names are the last one's, recorded. */
	fd = core_ws_lock(ws);
	if (fd < 0)
		return fd;
	rc = checkpoint_locked(p, ws, o, out);
	core_ws_unlock(fd);
	return rc;
}

static int checkpoint_locked(struct core_project *p, const struct core_ws *ws,
			     const struct core_ckpt_opts *o, struct core_ckpt *out)
{
	git_repository *repo = NULL;
	git_commit *parent = NULL, *cm = NULL;
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	struct ckpt_stats st = {0};
	unsigned last = 0;
	git_oid tid, pid, cid;
	char *msg = NULL, ref[64];
	int rc;

	/* No need to sync the view: a write() through it has reached the layer on return. */
	rc = ckpt_repo_open(p, ws, &repo);
	rc = rc ?: last_ckpt(repo, ws, &last, &pid);
	if (rc == 0 && last)
		rc = ckpt_ids_check(p, ws, last, &pid); /* the parent is what was recorded */
	rc = rc ?: ckpt_view_tree(repo, ws, &tid, &st);
	if (rc < 0)
		goto out;
	if (!last)
		git_oid_fromstr(&pid, ws->base_commit);
	msg = util_asprintf("%s\n\nArborinth-Kind: %s\nArborinth-Session: %lld\nArborinth-Time: "
			    "%lld\n",
			    o->message && *o->message ? o->message : "checkpoint",
			    o->kind ? o->kind : "manual", (long long)o->session,
			    (long long)util_now_ns());
	if (!msg) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (git_commit_lookup(&parent, repo, &pid) < 0 || git_tree_lookup(&tree, repo, &tid) < 0 ||
	    git_signature_now(&sig, CKPT_SIG_NAME, CKPT_SIG_MAIL) < 0 ||
	    git_commit_create(&cid, repo, NULL, sig, sig, NULL, msg, tree, 1,
			      (const git_commit **)&parent) < 0) {
		rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
		ckpt_cache_drop(ws); /* a tree it named missing? the next one builds afresh */
		goto out;
	}
	/* The next number; another process taking it first makes us try the one after. */
	for (unsigned seq = last + 1;; seq++) {
		git_reference *r = NULL;
		int e;

		snprintf(ref, sizeof(ref), CKPT_REF_PREFIX "%u", seq);
		e = git_reference_create(&r, repo, ref, &cid, 0, "checkpoint");
		git_reference_free(r);
		if (e == GIT_EEXISTS)
			continue;
		if (e < 0) {
			rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
			goto out;
		}
		rc = ckpt_ids_record(p, ws, seq, &cid);
		if (rc < 0) {
			/* Unrecorded, it would be refused: not kept. */
			r = NULL;
			if (git_reference_lookup(&r, repo, ref) == 0)
				(void)git_reference_delete(r);
			git_reference_free(r);
			goto out;
		}
		if (git_commit_lookup(&cm, repo, &cid) < 0) {
			rc = util_err(-EIO, "checkpoint: %s", git_error_last()->message);
			goto out;
		}
		rc = ckpt_fill(out, seq, cm);
		write_hint(ws, seq);
		break;
	}
	out->hashed = st.hashed;
	out->reused = st.reused;
out:
	git_commit_free(cm);
	git_signature_free(sig);
	git_tree_free(tree);
	git_commit_free(parent);
	git_repository_free(repo);
	free(msg);
	return rc;
}

/* Whether an older arborinth left checkpoint refs in the gitdir (lstat only: the box's). */
static bool legacy_ckpts(const struct core_ws *ws)
{
	char *dir = util_path_join(ws->gitdir, CKPT_REF_PREFIX);
	struct stat st;
	bool there = dir && lstat(dir, &st) == 0;

	free(dir);
	return there;
}

/* Checkpoint N's tree, its commit checked against state.db. */
static int ckpt_tree_by_seq(struct core_project *p, const struct core_ws *ws, git_repository *repo,
			    unsigned long seq, git_oid *tree)
{
	char ref[64];
	git_reference *r = NULL;
	git_commit *cm = NULL;
	int rc = 0;

	snprintf(ref, sizeof(ref), CKPT_REF_PREFIX "%lu", seq);
	if (git_reference_lookup(&r, repo, ref) < 0 || !git_reference_target(r) ||
	    git_commit_lookup(&cm, repo, git_reference_target(r)) < 0)
		rc = util_err(-ENOENT, "no checkpoint %lu%s", seq,
			      legacy_ckpts(ws)
				  ? " (checkpoints an older arborinth kept in the "
				    "workspace's gitdir, which its box can rewrite, are "
				    "not used)"
				  : "");
	else if ((rc = ckpt_ids_check(p, ws, (unsigned)seq, git_commit_id(cm))) == 0)
		git_oid_cpy(tree, git_commit_tree_id(cm));
	git_commit_free(cm);
	git_reference_free(r);
	return rc;
}

/*
 * Trust boundary: before libgit2 resolves a revision in the box's gitdir, the gitdir is checked
 * as merge checks it (core/ws_read.c): an alternate other than the origin's objects, a
 * commondir, a symlink or special file under refs/ or as packed-refs is refused in one line,
 * so no object of another repository is taken and no FIFO is opened.
 */
static int ws_gitdir_checked(struct core_project *p, const struct core_ws *ws)
{
	struct core_wsgit *g = NULL;
	int rc = core_wsgit_open(&g, p, ws);

	core_wsgit_free(g);
	return rc;
}

int core_ws_tree(struct core_project *p, const struct core_ws *ws, const char *spec, git_oid *tree)
{
	git_repository *repo = NULL, *wrepo = NULL;
	git_object *obj = NULL, *peeled = NULL;
	const char *num = spec[0] == '#' ? spec + 1 : spec;
	char *end;
	unsigned long seq = strtoul(num, &end, 10);
	int rc = ckpt_repo_open(p, ws, &repo);

	if (rc < 0)
		return rc;
	if (!strcmp(spec, "view")) {
		rc = ckpt_view_tree(repo, ws, tree, NULL);
	} else if (!strcmp(spec, "base")) {
		if (git_revparse_single(&obj, repo, ws->base_commit) < 0 ||
		    git_object_peel(&peeled, obj, GIT_OBJECT_TREE) < 0)
			rc = util_err(-EIO, "base %s: %s", ws->base_commit,
				      git_error_last()->message);
		else
			git_oid_cpy(tree, git_object_id(peeled));
	} else if (*num && !*end && num[0] != '0' && strlen(num) < 8) {
		rc = ckpt_tree_by_seq(p, ws, repo, seq, tree);
	} else if (strlen(spec) == GIT_OID_HEXSZ &&
		   strspn(spec, "0123456789abcdef") == GIT_OID_HEXSZ &&
		   git_revparse_single(&obj, repo, spec) == 0 &&
		   git_object_peel(&peeled, obj, GIT_OBJECT_TREE) == 0) {
		/* An id the store holds (a checkpoint's tree, as log names it). */
		git_oid_cpy(tree, git_object_id(peeled));
	} else if ((git_object_free(obj), obj = NULL, rc = ws_gitdir_checked(p, ws)) < 0 ||
		   (rc = ckpt_ws_repo_open(ws, &wrepo)) < 0) {
		/* its message stands */
	} else if (git_revparse_single(&obj, wrepo, spec) < 0 ||
		   git_object_peel(&peeled, obj, GIT_OBJECT_TREE) < 0) {
		rc = util_err(-ENOENT,
			      "'%s' is neither a checkpoint, 'base', 'view' nor a revision of "
			      "workspace %s",
			      spec, ws->name);
	} else {
		/*
		 * A revision of the workspace's repository: the box's commits, read from its
		 * gitdir. Its tree is copied into the store, every name checked, so that what
		 * uses it (diff, rewind, restore, fork) reads nothing more of the gitdir.
		 */
		git_oid_cpy(tree, git_object_id(peeled));
		rc = ckpt_store_import(repo, wrepo, tree);
	}
	git_object_free(peeled);
	git_object_free(obj);
	git_repository_free(wrepo);
	git_repository_free(repo);
	return rc;
}

int core_ws_session_ckpt(struct core_project *p, const struct core_ws *ws, int64_t session,
			 const char *kind, struct core_ckpt *out)
{
	struct core_ckpt *all = NULL;
	size_t n = 0;
	int rc = core_ws_checkpoints(p, ws, &all, &n);

	memset(out, 0, sizeof(*out));
	if (rc < 0)
		return rc;
	rc = util_err(-ENOENT, "session %lld of %s has no %s checkpoint", (long long)session,
		      ws->name, kind);
	for (size_t i = 0; i < n; i++)
		if (all[i].session == session && !strcmp(all[i].kind, kind)) {
			*out = all[i];
			all[i].message = NULL;
			rc = 0;
			break;
		}
	core_ckpts_free(all, n);
	return rc;
}

static int diff_new(git_repository *repo, const git_oid *from, const git_oid *to,
		    const char *const *paths, size_t n_paths, git_diff **out)
{
	git_diff_options opt = GIT_DIFF_OPTIONS_INIT;
	git_tree *a = NULL, *b = NULL;
	int rc = 0;

	opt.pathspec.strings = (char **)paths;
	opt.pathspec.count = n_paths;
	if (git_tree_lookup(&a, repo, from) < 0 || git_tree_lookup(&b, repo, to) < 0 ||
	    git_diff_tree_to_tree(out, repo, a, b, &opt) < 0)
		rc = util_err(-EIO, "diff: %s", git_error_last()->message);
	/* Renames shown as such, as `git diff -M` does. */
	if (rc == 0 && git_diff_find_similar(*out, NULL) < 0)
		rc = util_err(-EIO, "diff: %s", git_error_last()->message);
	git_tree_free(a);
	git_tree_free(b);
	return rc;
}

int core_ws_diff(struct core_project *p, const struct core_ws *ws, const git_oid *from,
		 const git_oid *to, const char *const *paths, size_t n_paths,
		 enum core_diff_format fmt, unsigned int flags, FILE *f)
{
	git_repository *repo = NULL;
	git_diff *diff = NULL;
	struct ckpt_patch_out tty = {f, (flags & CORE_DIFF_TERMINAL) != 0,
				     (flags & CORE_DIFF_COLOR) != 0};
	int rc = ckpt_repo_open(p, ws, &repo);

	rc = rc ?: diff_new(repo, from, to, paths, n_paths, &diff);
	if (rc == 0 && fmt == CORE_DIFF_STAT) {
		rc = ckpt_stat_print(diff, (flags & CORE_DIFF_COLOR) != 0, f);
	} else if (rc == 0 && fmt == CORE_DIFF_NAME_STATUS) {
		/* As `git diff --name-status -M`, paths quoted as git quotes them. */
		rc = ckpt_name_status_print(diff, f);
	} else if (rc == 0 &&
		   git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, ckpt_patch_line, &tty) < 0) {
		rc = util_err(-EIO, "diff: %s", git_error_last()->message);
	}
	git_diff_free(diff);
	git_repository_free(repo);
	return rc;
}

void core_diff_files_free(struct core_diff_file *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].path);
		free(v[i].old_path);
	}
	free(v);
}

int core_ws_diff_files(struct core_project *p, const struct core_ws *ws, const git_oid *from,
		       const git_oid *to, const char *const *paths, size_t n_paths,
		       struct core_diff_file **out, size_t *n)
{
	git_repository *repo = NULL;
	git_diff *diff = NULL;
	struct core_diff_file *v = NULL;
	size_t nd = 0;
	int rc = ckpt_repo_open(p, ws, &repo);

	*out = NULL;
	*n = 0;
	rc = rc ?: diff_new(repo, from, to, paths, n_paths, &diff);
	if (rc == 0) {
		nd = git_diff_num_deltas(diff);
		v = calloc(nd ? nd : 1, sizeof(*v));
		rc = v ? 0 : util_err(-ENOMEM, "out of memory");
	}
	if (rc == 0)
		rc = ckpt_diff_files_fill(diff, v, nd);
	git_diff_free(diff);
	git_repository_free(repo);
	if (rc < 0) {
		core_diff_files_free(v, nd);
		return rc;
	}
	*out = v;
	*n = nd;
	return 0;
}

int core_ws_diffstat(struct core_project *p, const struct core_ws *ws, const git_oid *from,
		     const git_oid *to, struct core_diffstat *out)
{
	git_repository *repo = NULL;
	git_diff *diff = NULL;
	git_diff_stats *stats = NULL;
	int rc = ckpt_repo_open(p, ws, &repo);

	memset(out, 0, sizeof(*out));
	rc = rc ?: diff_new(repo, from, to, NULL, 0, &diff);
	if (rc == 0 && git_diff_get_stats(&stats, diff) < 0)
		rc = util_err(-EIO, "diff: %s", git_error_last()->message);
	if (rc == 0) {
		out->files = git_diff_stats_files_changed(stats);
		out->insertions = git_diff_stats_insertions(stats);
		out->deletions = git_diff_stats_deletions(stats);
	}
	git_diff_stats_free(stats);
	git_diff_free(diff);
	git_repository_free(repo);
	return rc;
}
