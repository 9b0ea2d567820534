/*
 * fs/submods.c: the submodules of a base commit, as the view shows them. Read from the
 * commit's own .gitmodules (never a file of the origin's work tree): each `[submodule "NAME"]`
 * whose `path` is a gitlink of the commit's tree. The origin has initialised one when
 * <gitdir>/modules/NAME is a repository holding the commit the superproject records; then its
 * own submodules are read the same way, from that commit, down to FS_SUBMODULES_DEPTH.
 *
 * Trust: .gitmodules is the origin's (host) data, but a name is joined to a path under the
 * origin's gitdir, so it is checked first, as git's check_submodule_name() does and stricter:
 * no empty, "." or ".." component (with '/' or '\' as separators), no control characters. A
 * path must be plain relative components, none of them ".git". A refused one is listed as
 * such (the view shows an empty directory) and nothing is read for it.
 */
#include "fs/fs_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* One `[submodule "NAME"] path = PATH` pair of a .gitmodules. */
struct pair {
	char *name, *path;
};

struct pairs {
	struct pair *v;
	size_t n, cap;
};

struct found {
	struct fs_submodule *v;
	size_t n, cap;
};

static void pairs_free(struct pairs *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].name);
		free(p->v[i].path);
	}
	free(p->v);
}

/* The pair of section name, made when new. NULL: out of memory. */
static struct pair *pair_of(struct pairs *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].name, name))
			return &p->v[i];
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 8;
		struct pair *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n] = (struct pair){strdup(name), NULL};
	return p->v[p->n].name ? &p->v[p->n++] : NULL;
}

/*
 * A config value (git's syntax: quotes, \" \\ \n \t escapes, # or ; outside quotes ends it,
 * outer blanks dropped) from s to end, into a new string. NULL: malformed or out of memory.
 */
static char *parse_value(const char *s, const char *end)
{
	char *out = malloc((size_t)(end - s) + 1), *o = out;
	bool quoted = false;
	char *last = out; /* after the last character that is not a blank outside quotes */

	if (!out)
		return NULL;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	for (; s < end; s++) {
		if (*s == '"') {
			quoted = !quoted;
			last = o;
			continue;
		}
		if (!quoted && (*s == '#' || *s == ';'))
			break;
		if (*s == '\\') {
			if (++s == end)
				break;
			*o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
			last = o;
			continue;
		}
		*o++ = *s;
		if (quoted || (*s != ' ' && *s != '\t'))
			last = o;
	}
	*last = '\0';
	if (quoted) {
		free(out);
		return NULL;
	}
	return out;
}

/* `[submodule "NAME"]`: the name (new string), or NULL for any other header. */
static char *parse_header(const char *s, const char *end)
{
	char *name, *o;

	if (end - s < 12 || strncasecmp(s, "[submodule", 10) || (s[10] != ' ' && s[10] != '\t'))
		return NULL;
	for (s += 10; s < end && (*s == ' ' || *s == '\t'); s++)
		;
	if (s == end || *s++ != '"' || !(name = o = malloc((size_t)(end - s) + 1)))
		return NULL;
	for (; s < end && *s != '"'; s++) {
		if (*s == '\\' && s + 1 < end)
			s++;
		*o++ = *s;
	}
	*o = '\0';
	if (s == end || s[1] != ']') {
		free(name);
		return NULL;
	}
	return name;
}

/* The pairs of a .gitmodules text. Lines it cannot read are skipped, as git warns and goes on. */
static int parse_gitmodules(const char *text, size_t len, struct pairs *out)
{
	const char *p = text, *end = text + len;
	char *section = NULL;
	int rc = 0;

	while (p < end && rc == 0) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end, *s = p;

		p = eol ? eol + 1 : end;
		while (s < le && isspace((unsigned char)*s))
			s++;
		if (s == le || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			free(section);
			section = parse_header(s, le);
			continue;
		}
		if (!section || le - s < 4 || strncasecmp(s, "path", 4))
			continue;
		for (s += 4; s < le && (*s == ' ' || *s == '\t'); s++)
			;
		if (s < le && *s == '=') {
			struct pair *pr = pair_of(out, section);
			char *v = parse_value(s + 1, le);

			if (!pr || !v) {
				free(v);
				rc = pr ? 0 : -ENOMEM;
				continue;
			}
			free(pr->path);
			pr->path = v;
		}
	}
	free(section);
	return rc;
}

/* Each component of s (split at any of seps) is sound: not empty, ".", ".." or (dotgit) .git. */
static bool components_ok(const char *s, const char *seps, bool dotgit)
{
	size_t len = strlen(s);

	if (len == 0 || len > 1024)
		return false;
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	while (*s) {
		size_t l = strcspn(s, seps);

		if (l == 0 || l > 255 || (l == 1 && s[0] == '.') ||
		    (l == 2 && !strncmp(s, "..", 2)) ||
		    (dotgit && l == 4 && !strncasecmp(s, ".git", 4)))
			return false;
		s += l;
		if (*s && !*++s)
			return false; /* a trailing separator: an empty last component */
	}
	return true;
}

bool fs_submodule_name_ok(const char *name)
{
	return components_ok(name, "/\\", false);
}

static bool path_ok(const char *path)
{
	return components_ok(path, "/", true) && !strchr(path, '\\');
}

static struct fs_submodule *found_add(struct found *f)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 8;
		struct fs_submodule *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		f->v = v;
		f->cap = cap;
	}
	memset(&f->v[f->n], 0, sizeof(f->v[0]));
	return &f->v[f->n++];
}

/* Whether the repository at gitdir holds commit id: its tree id then, else NULL. */
static git_repository *store_with(const char *gitdir, const git_oid *id, git_oid *tree)
{
	git_repository *r = NULL;
	git_commit *c = NULL;
	struct stat st;

	if (lstat(gitdir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    git_repository_open_bare(&r, gitdir) < 0)
		return NULL;
	if (git_commit_lookup(&c, r, id) < 0) {
		git_repository_free(r);
		return NULL;
	}
	git_oid_cpy(tree, git_commit_tree_id(c));
	git_commit_free(c);
	return r;
}

static int find_in(git_repository *repo, const char *top, const git_oid *tree_id,
		   const char *prefix, const char *gitprefix, int depth, struct found *f);

/* One pair of a .gitmodules: listed, and read into when the origin has it. */
static int one(git_tree *tree, const char *top, const struct pair *pr, const char *prefix,
	       const char *gitprefix, int depth, struct found *f)
{
	git_tree_entry *e = NULL;
	git_repository *sub = NULL;
	struct fs_submodule *s;
	char *store = NULL;
	git_oid subtree;
	int rc = 0;

	if (!pr->path || !path_ok(pr->path) || git_tree_entry_bypath(&e, tree, pr->path) < 0)
		return 0; /* not a path of this tree: git ignores it too */
	if (git_tree_entry_filemode(e) != GIT_FILEMODE_COMMIT)
		goto out;
	if (!(s = found_add(f))) {
		rc = -ENOMEM;
		goto out;
	}
	s->depth = depth;
	git_oid_tostr(s->commit, sizeof(s->commit), git_tree_entry_id(e));
	s->path = util_asprintf("%s%s", prefix, pr->path);
	s->name = strdup(pr->name);
	if (!s->path || !s->name) {
		rc = -ENOMEM;
		goto out;
	}
	if (!fs_submodule_name_ok(pr->name)) {
		s->state = FS_SUBMODULE_REFUSED;
		goto out;
	}
	s->gitdir = util_asprintf("%smodules/%s", gitprefix, pr->name);
	store = s->gitdir ? util_asprintf("%s/%s", top, s->gitdir) : NULL;
	if (!store) {
		rc = -ENOMEM;
		goto out;
	}
	sub = store_with(store, git_tree_entry_id(e), &subtree);
	s->state = sub ? FS_SUBMODULE_PRESENT : FS_SUBMODULE_ABSENT;
	if (sub && depth + 1 < FS_SUBMODULES_DEPTH) {
		char *pre = util_asprintf("%s/", s->path), *gpre = util_asprintf("%s/", s->gitdir);

		/* s may move as f grows: only copies are passed on */
		rc = pre && gpre ? find_in(sub, top, &subtree, pre, gpre, depth + 1, f) : -ENOMEM;
		free(pre);
		free(gpre);
	}
out:
	git_repository_free(sub);
	git_tree_entry_free(e);
	free(store);
	return rc;
}

static int find_in(git_repository *repo, const char *top, const git_oid *tree_id,
		   const char *prefix, const char *gitprefix, int depth, struct found *f)
{
	git_tree *tree = NULL;
	git_tree_entry *gm = NULL;
	git_blob *blob = NULL;
	struct pairs pairs = {0};
	int rc = 0;

	if (git_tree_lookup(&tree, repo, tree_id) < 0)
		return util_err(-EIO, "submodules: cannot read tree %s: %s",
				git_oid_tostr_s(tree_id),
				git_error_last() ? git_error_last()->message : "?");
	/* No .gitmodules (or not a file): gitlinks stay empty directories, as git leaves them. */
	if (git_tree_entry_bypath(&gm, tree, ".gitmodules") < 0 ||
	    (git_tree_entry_filemode(gm) != GIT_FILEMODE_BLOB &&
	     git_tree_entry_filemode(gm) != GIT_FILEMODE_BLOB_EXECUTABLE) ||
	    git_blob_lookup(&blob, repo, git_tree_entry_id(gm)) < 0)
		goto out;
	rc = parse_gitmodules(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), &pairs);
	for (size_t i = 0; i < pairs.n && rc == 0; i++)
		rc = one(tree, top, &pairs.v[i], prefix, gitprefix, depth, f);
out:
	pairs_free(&pairs);
	git_blob_free(blob);
	git_tree_entry_free(gm);
	git_tree_free(tree);
	return rc;
}

void fs_submodules_free(struct fs_submodule *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].path);
		free(v[i].name);
		free(v[i].gitdir);
	}
	free(v);
}

int fs_submodules_find(const char *gitdir, const char *base_hex, struct fs_submodule **out,
		       size_t *n)
{
	git_repository *repo = NULL;
	git_commit *c = NULL;
	struct found f = {0};
	git_oid base;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (git_oid_fromstr(&base, base_hex) < 0 || git_repository_open_bare(&repo, gitdir) < 0 ||
	    git_commit_lookup(&c, repo, &base) < 0)
		rc = util_err(-EIO, "submodules: cannot read commit %s: %s", base_hex,
			      git_error_last() ? git_error_last()->message : "?");
	else
		rc = find_in(repo, gitdir, git_commit_tree_id(c), "", "", 0, &f);
	if (rc == -ENOMEM)
		rc = util_err(rc, "out of memory");
	git_commit_free(c);
	git_repository_free(repo);
	if (rc < 0) {
		fs_submodules_free(f.v, f.n);
		return rc;
	}
	*out = f.v;
	*n = f.n;
	return 0;
}
