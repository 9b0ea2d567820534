/*
 * core/ws_copy.c: copying what one object of a workspace reaches into a host-owned store
 * (the workspace's export repository, or the origin's store for a fork), object by object.
 * Trust boundary: the objects come from the box's store (core/ws_read.c reads them without
 * following anything); each is parsed (core/ref_parse.c), and only what it names is taken: a
 * commit's tree and parents, a tree's entries (gitlinks skipped). What the destination has (it sees
 * the origin's objects) is not read at all; an object that is in neither the workspace's own store
 * nor the destination is refused, so an object only some planted alternate could give never comes
 * over. Children are stored before their parents, so the destination never holds an object whose
 * children it lacks, and an interrupted copy leaves no hole. core_odb_copy walks the same way
 * between two host-owned stores (a fork: from the export, once checked, into the origin).
 */
#include "core/core_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct item {
	git_oid id;
	git_object_t want; /* the type its referrer says it has */
	void *data;	   /* set once expanded: stored when popped again */
	size_t len;
	git_object_t type;
};

/* Reads object id from src: -ENOENT (no message) when src lacks it. */
typedef int read_fn(void *src, const git_oid *id, git_object_t *type, void **data, size_t *len);

struct walk {
	read_fn *read;
	void *src;
	git_odb *dst;
	struct item *v;
	size_t n, cap;
	size_t copied;
	const char *what; /* what the walk started from, for messages */
};

static int push(struct walk *w, const unsigned char *raw, git_object_t want)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct item *nv = realloc(w->v, cap * sizeof(*nv));

		if (!nv)
			return util_err(-ENOMEM, "out of memory");
		w->v = nv;
		w->cap = cap;
	}
	memset(&w->v[w->n], 0, sizeof(w->v[0]));
	memcpy(w->v[w->n].id.id, raw, GIT_OID_RAWSZ);
	w->v[w->n++].want = want;
	return 0;
}

/* core_child_fn: what an object names, pushed. */
static int push_child(void *arg, const unsigned char id[20], git_object_t want)
{
	return push(arg, id, want);
}

/* Reads the object on top (not in dst): stores a blob, else keeps it and pushes what it names. */
static int expand(struct walk *w)
{
	struct item it = w->v[w->n - 1];
	char hex[GIT_OID_HEXSZ + 1];
	int rc = w->read(w->src, &it.id, &it.type, &it.data, &it.len);

	git_oid_tostr(hex, sizeof(hex), &it.id);
	if (rc == -ENOENT)
		return util_err(
		    -EPERM,
		    "object %s (reached from %s) is in neither the workspace's own store "
		    "nor the origin's: refused, nothing was taken",
		    hex, w->what);
	if (rc < 0)
		return rc;
	if (it.type != it.want) {
		free(it.data);
		return util_err(
		    -EINVAL, "object %s (reached from %s) is a %s where a %s belongs: refused", hex,
		    w->what, git_object_type2string(it.type), git_object_type2string(it.want));
	}
	w->v[w->n - 1] = it;
	rc = core_object_children(it.type, it.data, it.len, push_child, w);
	if (rc == -EINVAL)
		rc = util_err(-EINVAL, "object %s (reached from %s) is a malformed %s: refused",
			      hex, w->what, git_object_type2string(it.type));
	return rc;
}

/* Stores the expanded item on top into dst and pops it. */
static int store(struct walk *w)
{
	struct item *it = &w->v[w->n - 1];
	git_oid out;
	int rc = 0;

	if (git_odb_write(&out, w->dst, it->data, it->len, it->type) < 0)
		rc = util_err(-EIO, "cannot store an object: %s", git_error_last()->message);
	else
		w->copied++;
	free(it->data);
	w->n--;
	return rc;
}

static int walk_copy(read_fn *rd, void *src, git_odb *dst, const git_oid *root, git_object_t type,
		     const char *what, size_t *copied)
{
	struct walk w = {.read = rd, .src = src, .dst = dst, .what = what};
	int rc = push(&w, root->id, type);

	while (rc == 0 && w.n) {
		struct item *top = &w.v[w.n - 1];
		size_t below = w.n;

		if (top->data) {
			rc = store(&w);
		} else if (git_odb_exists(dst, &top->id)) {
			w.n--; /* dst's objects are whole: what it has, it has below too */
		} else if ((rc = expand(&w)) == 0 && w.v[below - 1].type == GIT_OBJECT_BLOB) {
			/* A blob names nothing: stored at once. Children pushed above stay. */
			rc = store(&w);
		}
	}
	for (size_t i = 0; i < w.n; i++)
		free(w.v[i].data);
	free(w.v);
	if (copied)
		*copied = w.copied;
	return rc;
}

static int wsgit_read(void *src, const git_oid *id, git_object_t *type, void **data, size_t *len)
{
	return core_wsgit_read(src, id, type, data, len);
}

int core_wsgit_copy(struct core_wsgit *g, git_odb *dst, const git_oid *root, git_object_t type,
		    const char *what, size_t *copied)
{
	return walk_copy(wsgit_read, g, dst, root, type, what, copied);
}

/* A host-owned store (the export), read through libgit2. */
static int odb_read(void *src, const git_oid *id, git_object_t *type, void **data, size_t *len)
{
	git_odb_object *obj = NULL;
	int rc = git_odb_read(&obj, src, id);

	if (rc == GIT_ENOTFOUND)
		return -ENOENT;
	if (rc < 0)
		return util_err(-EIO, "%s", git_error_last()->message);
	*type = git_odb_object_type(obj);
	*len = git_odb_object_size(obj);
	*data = malloc(*len ? *len : 1);
	if (*data)
		memcpy(*data, git_odb_object_data(obj), *len);
	git_odb_object_free(obj);
	return *data ? 0 : util_err(-ENOMEM, "out of memory");
}

int core_odb_copy(git_odb *src, git_odb *dst, const git_oid *root, git_object_t type,
		  const char *what, size_t *copied)
{
	return walk_copy(odb_read, src, dst, root, type, what, copied);
}
