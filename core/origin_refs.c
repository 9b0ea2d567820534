/*
 * core/origin_refs.c: the origin's branches and tags, shown read-only in a workspace.
 *
 * The origin's refs/heads/X become refs/remotes/origin/X in the workspace's gitdir and its
 * refs/tags/X stay refs/tags/X, so `git log origin/main`, `git rebase origin/main` and
 * `git describe` work in the box; create also makes a local branch of the origin's current
 * one (`git log main`), refs/remotes/origin/HEAD, and sets it as the workspace branch's
 * upstream (core/gitdir.c). Create writes them as one packed-refs (git.git's 1,008 tags as
 * loose files took 15 s of fsyncs); each box start (core_ws_origin_refresh, once its session
 * is in the audit) writes loose refs where they changed: branches set again, tags added when
 * new since the last refresh (NAME/origin-refs.last: a tag the box moved stays the box's).
 * A start when neither the origin's refs nor the box's refs/remotes/origin changed since
 * (NAME/origin-refs.stamp, stat() only) does nothing. Before any ref is written, the objects
 * they reach are put in the workspace's own read-only store NAME/origin-objects
 * (core_objects_tips), the second line of the gitdir's alternates; the base's store has the
 * rest.
 *
 * Nothing flows back: what the box does to these refs stays in its gitdir, and host commands
 * read only the branch arborinth/NAME from it (core/ws_read.c). The gitdir is the box's, so at
 * refresh it is written through the mounted view (the daemon sees every write), one
 * component at a time without following a symlink (core_open_beneath).
 */
#include "core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void core_origin_refs_clear(struct core_origin_refs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->names[i]);
	free(r->names);
	free(r->ids);
	free(r->head);
	memset(r, 0, sizeof(*r));
}

static int refs_push(struct core_origin_refs *r, const char *name, const git_oid *id)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		char **names = realloc(r->names, cap * sizeof(*names));
		git_oid *ids = names ? realloc(r->ids, cap * sizeof(*ids)) : NULL;

		if (names)
			r->names = names;
		if (!ids)
			return -ENOMEM;
		r->ids = ids;
		r->cap = cap;
	}
	if (!(r->names[r->n] = strdup(name)))
		return -ENOMEM;
	r->ids[r->n++] = *id;
	return 0;
}

static int refs_glob(git_repository *repo, const char *glob, struct core_origin_refs *r)
{
	git_reference_iterator *it = NULL;
	git_reference *ref;
	int rc = git_reference_iterator_glob_new(&it, repo, glob) < 0 ? -EIO : 0;

	while (rc == 0 && git_reference_next(&ref, it) == 0) {
		git_reference *res = NULL;

		/* A symbolic ref under refs/heads is shown as what it names (or left out). */
		if (git_reference_resolve(&res, ref) == 0 && git_reference_target(res))
			rc = refs_push(r, git_reference_name(ref), git_reference_target(res));
		git_reference_free(res);
		git_reference_free(ref);
	}
	git_reference_iterator_free(it);
	if (rc == -EIO)
		return util_err(rc, "cannot list the origin's %s: %s", glob,
				git_error_last()->message);
	return rc < 0 ? util_err(rc, "out of memory") : 0;
}

int core_origin_refs_read(struct core_project *p, struct core_origin_refs *out)
{
	git_repository *repo = core_project_repo(p);
	struct core_head head = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (!repo)
		return -EIO;
	rc = refs_glob(repo, "refs/heads/*", out);
	rc = rc ?: refs_glob(repo, "refs/tags/*", out);
	/* The origin's current branch, for a local branch of its name and the upstream. */
	if (rc == 0 && core_project_head(p, &head) == 0 && head.branch && !head.unborn &&
	    strncmp(head.branch, "arborinth/", 10) && strcmp(head.branch, "arborinth"))
		out->head = strdup(head.branch);
	free(head.branch);
	if (rc < 0)
		core_origin_refs_clear(out);
	return rc;
}

/* The directory of refname's last component beneath gitfd, made when missing: fd or -errno. */
static int ref_dir(int gitfd, const char *refname, const char **leaf)
{
	char comp[256];
	int cur = fcntl(gitfd, F_DUPFD_CLOEXEC, 0);
	const char *s = refname;

	if (cur < 0)
		return -errno;
	for (const char *sl; cur >= 0 && (sl = strchr(s, '/')); s = sl + 1) {
		size_t n = (size_t)(sl - s);
		int fd;

		if (n == 0 || n >= sizeof(comp)) {
			close(cur);
			return -EINVAL;
		}
		memcpy(comp, s, n);
		comp[n] = '\0';
		fd = core_open_beneath(cur, comp, O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0 && errno == ENOENT && mkdirat(cur, comp, 0755) == 0)
			fd = core_open_beneath(cur, comp, O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0)
			fd = -errno;
		close(cur);
		cur = fd;
	}
	*leaf = s;
	return cur;
}

/* Whether dir/leaf is a regular file holding exactly text (read without blocking). */
static bool holds(int dir, const char *leaf, const char *text)
{
	char buf[128];
	size_t len = strlen(text);
	int fd = core_open_read_beneath(dir, leaf, false);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

	if (fd >= 0)
		close(fd);
	return n >= 0 && (size_t)n == len && !memcmp(buf, text, len);
}

/*
 * gitfd/refname = text, unless it holds that already; with keep, an existing name (whatever it
 * is) is left alone.
 */
static int put_ref(int gitfd, const char *refname, const char *text, bool keep)
{
	const char *leaf = NULL;
	struct stat st;
	int dir = ref_dir(gitfd, refname, &leaf), rc = 0;

	if (dir < 0)
		return dir;
	if (!core_entry_name_ok(leaf, strlen(leaf)))
		rc = -EINVAL;
	else if (keep ? fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 : !holds(dir, leaf, text))
		rc = util_write_file_at(dir, leaf, text, strlen(text), 0644, (uid_t)-1, (gid_t)-1);
	close(dir);
	return rc;
}

/* Where name (refs/heads/X or refs/tags/X) goes in the workspace; caller frees. */
static char *dest_of(const char *name)
{
	if (!strncmp(name, "refs/heads/", 11))
		return util_asprintf("refs/remotes/origin/%s", name + 11);
	return strdup(name);
}

struct line {
	char *dest;
	const git_oid *id;
};

static int line_order(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->dest, ((const struct line *)b)->dest);
}

/*
 * At create, in one file: packed-refs (sorted, as git writes it) with every branch as
 * refs/remotes/origin/X, every tag, and the local branch of the origin's current one.
 */
static int write_packed(int gitfd, const struct core_origin_refs *r)
{
	struct line *v = calloc(r->n + 1, sizeof(*v)); /* + the local branch */
	size_t n = 0, len = 0;
	char *text = NULL;
	FILE *f = NULL;
	int rc = v ? 0 : -ENOMEM;

	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		const char *name = r->names[i];

		if (!(v[n++] = (struct line){dest_of(name), &r->ids[i]}).dest)
			rc = -ENOMEM;
		else if (r->head && !strncmp(name, "refs/heads/", 11) &&
			 !strcmp(name + 11, r->head) &&
			 !(v[n++] = (struct line){strdup(name), &r->ids[i]}).dest)
			rc = -ENOMEM; /* `git log main` */
	}
	if (rc == 0 && n)
		qsort(v, n, sizeof(*v), line_order);
	if (rc == 0 && !(f = open_memstream(&text, &len)))
		rc = -ENOMEM;
	if (f) {
		fputs("# pack-refs with: sorted \n", f);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s %s\n", git_oid_tostr_s(v[i].id), v[i].dest);
		if (fclose(f) != 0)
			rc = -ENOMEM;
	}
	if (rc == 0)
		rc =
		    util_write_file_at(gitfd, "packed-refs", text, len, 0644, (uid_t)-1, (gid_t)-1);
	for (size_t i = 0; v && i < n; i++)
		free(v[i].dest);
	free(v);
	free(text);
	return rc;
}

static int name_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int core_origin_refs_write(int gitfd, const struct core_origin_refs *r,
			   const struct core_origin_refs *last)
{
	char line[GIT_OID_HEXSZ + 2];
	char **known = NULL;
	int rc = 0;

	if (!last) { /* create */
		rc = write_packed(gitfd, r);
		if (rc == 0 && r->head) {
			char *sym = util_asprintf("ref: refs/remotes/origin/%s\n", r->head);

			rc = sym ? put_ref(gitfd, "refs/remotes/origin/HEAD", sym, false) : -ENOMEM;
			free(sym);
		}
		return rc < 0 ? util_err(rc,
					 "cannot write the origin's refs in the workspace's "
					 "gitdir: %s",
					 strerror(-rc))
			      : 0;
	}
	/* The tags given before, to add only new ones (what the box did with those is its own). */
	if (last->n && !(known = malloc(last->n * sizeof(*known))))
		return util_err(-ENOMEM, "out of memory");
	if (known) {
		memcpy(known, last->names, last->n * sizeof(*known));
		qsort(known, last->n, sizeof(*known), name_order);
	}
	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		const char *name = r->names[i];
		bool branch = !strncmp(name, "refs/heads/", 11);
		char *dest;

		if (!branch && known && bsearch(&name, known, last->n, sizeof(*known), name_order))
			continue;
		snprintf(line, sizeof(line), "%s\n", git_oid_tostr_s(&r->ids[i]));
		if (!(dest = dest_of(name))) {
			rc = util_err(-ENOMEM, "out of memory");
			break;
		}
		rc = put_ref(gitfd, dest, line, !branch);
		if (rc < 0)
			rc = util_err(rc, "cannot write %s in the workspace's gitdir: %s", dest,
				      strerror(-rc));
		free(dest);
	}
	free(known);
	return rc;
}

int core_origin_refs_save(const char *path, const struct core_origin_refs *r)
{
	size_t len = 0;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);
	int rc = f ? 0 : -ENOMEM;

	for (size_t i = 0; f && i < r->n; i++)
		fprintf(f, "%s %s\n", git_oid_tostr_s(&r->ids[i]), r->names[i]);
	if (f && fclose(f) != 0)
		rc = -ENOMEM;
	rc = rc ?: util_write_file(path, text, len, 0644);
	free(text);
	return rc;
}

/* What core_origin_refs_save wrote (arborinth's own file); a missing one is empty. */
static int refs_load(const char *path, struct core_origin_refs *out)
{
	char *text = NULL, *save = NULL;
	size_t len = 0;
	int rc = util_read_file(path, &text, &len);

	memset(out, 0, sizeof(*out));
	if (rc < 0) {
		util_err_clear();
		return rc == -ENOENT ? 0 : rc;
	}
	for (char *l = strtok_r(text, "\n", &save); rc == 0 && l; l = strtok_r(NULL, "\n", &save)) {
		git_oid id;

		if (strlen(l) > GIT_OID_HEXSZ + 1 && l[GIT_OID_HEXSZ] == ' ' &&
		    git_oid_fromstrn(&id, l, GIT_OID_HEXSZ) == 0)
			rc = refs_push(out, l + GIT_OID_HEXSZ + 1, &id);
	}
	free(text);
	return rc;
}

/* FNV-1a over len bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ ((const unsigned char *)data)[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t fnv_stat(uint64_t h, const char *name, const struct stat *st)
{
	int64_t v[4] = {(int64_t)st->st_ino, (int64_t)st->st_size, (int64_t)st->st_mtim.tv_sec,
			(int64_t)st->st_mtim.tv_nsec};

	h = fnv(h, name, strlen(name) + 1);
	return fnv(h, v, sizeof(v));
}

/* Every directory under dir/name (depth bounded) into h: a ref written renames into one. */
static uint64_t fnv_dirs(uint64_t h, int dir, const char *name, int depth)
{
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return fnv(h, "-", 1);
	}
	if (fstat(dirfd(d), &st) == 0)
		h = fnv_stat(h, name, &st);
	while (depth < 16 && (e = readdir(d)))
		if (e->d_name[0] != '.' && e->d_type == DT_DIR)
			h = fnv_dirs(h, dirfd(d), e->d_name, depth + 1);
	closedir(d);
	return h;
}

/*
 * What the origin's refs look like from outside, without libgit2: HEAD, packed-refs,
 * reftable's list, and every directory under refs/heads and refs/tags (git writes a ref by
 * renaming its lock file into its directory). Equal to the last refresh's: nothing to do.
 */
static uint64_t origin_stamp(const struct core_project *p)
{
	static const char *const files[] = {"packed-refs", "reftable/tables.list"};
	int common = open(p->commondir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *head = util_path_join(p->gitdir, "HEAD");
	uint64_t h = 0xcbf29ce484222325ull;
	struct stat st;

	if (head && stat(head, &st) == 0)
		h = fnv_stat(h, "HEAD", &st);
	for (size_t i = 0; common >= 0 && i < ARB_ARRAY_LEN(files); i++)
		if (fstatat(common, files[i], &st, 0) == 0)
			h = fnv_stat(h, files[i], &st);
	if (common >= 0) {
		h = fnv_dirs(h, common, "refs", 16); /* refs/ itself: refs/tags made anew */
		h = fnv_dirs(h, common, "refs/heads", 0);
		h = fnv_dirs(h, common, "refs/tags", 0);
		close(common);
	}
	free(head);
	return h;
}

/* The box's refs/remotes/origin as the view shows it: one the box removed is written again. */
static uint64_t box_stamp(const struct core_ws *ws)
{
	char *path = util_asprintf("%s/.git/refs/remotes/origin", ws->workdir);
	struct stat st;
	uint64_t h = 0xcbf29ce484222325ull;

	if (path && lstat(path, &st) == 0)
		h = fnv_stat(h, "origin", &st);
	free(path);
	return h;
}

int core_ws_origin_refresh(struct core_project *p, const struct core_ws *ws)
{
	struct core_origin_refs r = {0};
	char *store = util_path_join(ws->root, CORE_ORIGIN_OBJECTS);
	char *git = util_path_join(ws->workdir, ".git");
	char *stamp_path = util_path_join(ws->root, "origin-refs.stamp"), *old = NULL;
	char *last_path = util_path_join(ws->root, CORE_ORIGIN_REFS_LAST);
	struct core_origin_refs last = {0};
	char stamp[40];
	struct stat st;
	size_t len;
	int rc = store && git && stamp_path && last_path ? 0 : -ENOMEM, gitfd = -1;

	/* A workspace made before its gitdir named the store has none: nothing to refresh. */
	if (rc < 0 || lstat(store, &st) < 0 || !S_ISDIR(st.st_mode))
		goto out;
	/* The origin's refs, and the box's copy of its branches, as at the last refresh. */
	snprintf(stamp, sizeof(stamp), "%016llx %016llx\n", (unsigned long long)origin_stamp(p),
		 (unsigned long long)box_stamp(ws));
	if (util_read_file(stamp_path, &old, &len) == 0 && !strcmp(old, stamp))
		goto out;
	core_git_ready();
	rc = core_origin_refs_read(p, &r);
	rc = rc ?: core_objects_tips(p, ws->base_commit, store, r.ids, r.n);
	if (rc == 0 && (gitfd = open(git, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		rc = util_err(-errno, "cannot open %s: %s", git, strerror(errno));
	rc = rc ?: refs_load(last_path, &last);
	rc = rc ?: core_origin_refs_write(gitfd, &r, &last);
	rc = rc ?: core_origin_refs_save(last_path, &r);
	if (rc == 0) /* a hint only: without it, the next start refreshes */
		snprintf(stamp + 17, sizeof(stamp) - 17, "%016llx\n",
			 (unsigned long long)box_stamp(ws));
	if (rc == 0 && util_write_file(stamp_path, stamp, strlen(stamp), 0644) < 0)
		util_err_clear();
out:
	free(stamp_path);
	free(old);
	if (gitfd >= 0)
		close(gitfd);
	core_origin_refs_clear(&r);
	core_origin_refs_clear(&last);
	free(last_path);
	free(store);
	free(git);
	return rc < 0 ? rc : 0;
}
