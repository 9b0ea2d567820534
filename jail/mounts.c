/*
 * jail/mounts.c: the mount tree. One mount per destination; sorted so that an ancestor
 * precedes its descendants (the deeper mount wins); guards refuse user mounts at or below
 * them; compiled into bwrap options.
 */
#include "jail/jail_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void mount_free(struct jail_mount *x)
{
	free(x->src);
	free(x->lower);
	free(x->upper);
	free(x->dest);
	free(x->protects);
	free(x->why);
	*x = (struct jail_mount){0};
}

void jail_mounts_clear(struct jail_mounts *m)
{
	for (size_t i = 0; i < m->n; i++)
		mount_free(&m->v[i]);
	free(m->v);
	*m = (struct jail_mounts){0};
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

static int mount_copy(struct jail_mount *dst, const struct jail_mount *src)
{
	bool oom = false;

	*dst = *src;
	dst->src = dup_or_null(src->src, &oom);
	dst->lower = dup_or_null(src->lower, &oom);
	dst->upper = dup_or_null(src->upper, &oom);
	dst->dest = dup_or_null(src->dest, &oom);
	dst->protects = dup_or_null(src->protects, &oom);
	dst->why = dup_or_null(src->why, &oom);
	if (oom) {
		mount_free(dst);
		return util_err(-ENOMEM, "out of memory");
	}
	return 0;
}

static int push(struct jail_mounts *m, const struct jail_mount *x)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 32;
		struct jail_mount *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return util_err(-ENOMEM, "out of memory");
		m->v = v;
		m->cap = cap;
	}
	return mount_copy(&m->v[m->n++], x) < 0 ? (m->n--, -ENOMEM) : 0;
}

static struct jail_mount *find(const struct jail_mounts *m, const char *dest)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].dest, dest))
			return &m->v[i];
	return NULL;
}

void jail_mounts_drop_below(struct jail_mounts *m, const char *dest, unsigned flag)
{
	size_t o = 0;

	for (size_t i = 0; i < m->n; i++) {
		if ((m->v[i].flags & flag) && util_path_under(m->v[i].dest, dest) &&
		    strcmp(m->v[i].dest, dest))
			mount_free(&m->v[i]);
		else
			m->v[o++] = m->v[i];
	}
	m->n = o;
}

void jail_mounts_drop(struct jail_mounts *m, const char *dest)
{
	struct jail_mount *x = find(m, dest);

	if (!x)
		return;
	mount_free(x);
	memmove(x, x + 1, (size_t)(m->v + m->n - (x + 1)) * sizeof(*x));
	m->n--;
}

const struct jail_mount *jail_mounts_find(const struct jail_mounts *m, const char *dest)
{
	return find(m, dest);
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_mount(const struct jail_mount *a, const struct jail_mount *b)
{
	return a->type == b->type && a->perms == b->perms && same_str(a->src, b->src) &&
	       same_str(a->lower, b->lower);
}

int jail_mounts_add(struct jail_mounts *m, const struct jail_mount *mnt)
{
	struct jail_mount *old = find(m, mnt->dest);

	if (old && same_mount(old, mnt))
		return 0;
	if (old)
		return util_err(-EEXIST, "two mounts at %s: %s, and %s", mnt->dest, old->why,
				mnt->why);
	return push(m, mnt);
}

const struct jail_mount *jail_mounts_guard_for(const struct jail_mounts *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct jail_mount *g = &m->v[i];

		if (g->origin == JAIL_FROM_GUARD &&
		    (util_path_under(path, g->dest) ||
		     (g->protects && util_path_under(path, g->protects))))
			return g;
	}
	return NULL;
}

/* The mount whose hidden host path lies at or below `src` (binding src would reopen it). */
static const struct jail_mount *hidden_below(const struct jail_mounts *m, const char *src)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].protects && util_path_under(m->v[i].protects, src))
			return &m->v[i];
	return NULL;
}

static const struct jail_mount *hidden_above(const struct jail_mounts *m, const char *src)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].protects && util_path_under(src, m->v[i].protects))
			return &m->v[i];
	return NULL;
}

/* A bind source must not contain (or lead by a symlink into) what a mount hides. */
static int source_check(const struct jail_mounts *m, const char *text, const struct jail_spec *s)
{
	const struct jail_mount *g;
	char *real;
	int rc = 0;

	if (!s->src)
		return 0;
	real = jail_path_real(s->src);
	if (!real)
		return util_err(-ENOMEM, "out of memory");
	if ((g = hidden_below(m, real)))
		rc =
		    util_err(-EINVAL,
			     "--mount '%s': source %s would expose %s, which the mount at %s hides "
			     "(%s)",
			     text, real, g->protects, g->dest, g->why);
	else if (strcmp(real, s->src) && (g = hidden_above(m, real)) && !hidden_above(m, s->src))
		rc =
		    util_err(-EINVAL,
			     "--mount '%s': source %s resolves through a symlink to %s, inside %s, "
			     "which the mount at %s hides (%s); name the real path if you mean it",
			     text, s->src, real, g->protects, g->dest, g->why);
	free(real);
	return rc;
}

/* The guard over the destination, then the source: what the box hides stays hidden. */
static int dest_check(const struct jail_mounts *m, const char *text, const struct jail_spec *s)
{
	char *real = jail_path_real(s->dest);
	const struct jail_mount *g;
	int rc = 0;

	if (!real)
		return util_err(-ENOMEM, "out of memory");
	g = jail_mounts_guard_for(m, s->dest);
	if (!g)
		g = jail_mounts_guard_for(m, real);
	if (g)
		rc = util_err(-EINVAL,
			      "--mount '%s': destination %s is at or below the guard at %s (%s); a "
			      "user mount cannot open a guard, mount it somewhere else",
			      text, strcmp(real, s->dest) ? real : s->dest, g->dest, g->why);
	free(real);
	return rc;
}

int jail_mounts_add_user(struct jail_mounts *m, const char *text)
{
	struct jail_spec s;
	struct jail_mount x = {.origin = JAIL_FROM_USER}, *old;
	int rc = jail_spec_parse(text, &s);

	if (rc < 0)
		return rc;
	rc = dest_check(m, text, &s);
	if (rc < 0)
		goto out;
	x.type = s.type;
	x.dest = s.dest;
	x.src = s.src ? jail_path_real(s.src) : NULL;
	if (s.src && !x.src) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (x.type == JAIL_MOUNT_OVERLAY)
		x.lower = x.src, x.src = NULL; /* the workspace's merged dir, once finished */
	if (x.type != JAIL_MOUNT_RO)
		x.flags |= JAIL_MOUNT_BOX_WRITABLE;
	old = find(m, s.dest);
	if (old && old->origin != JAIL_FROM_USER && !(old->flags & JAIL_MOUNT_REPLACEABLE)) {
		if (same_mount(old, &x))
			goto out; /* says again what the default already does */
		rc = util_err(
		    -EINVAL,
		    "--mount '%s': %s already has a default mount (%s %s) that a user mount "
		    "cannot replace",
		    text, s.dest, jail_mount_type_name(old->type), old->why);
		goto out;
	}
	rc = source_check(m, text, &s);
	if (rc < 0)
		goto out;
	if (old && old->origin != JAIL_FROM_USER)
		x.why = util_asprintf("--mount '%s', replacing the default (%s)", text, old->why);
	else
		x.why = util_asprintf("--mount '%s'", text);
	if (!x.why) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (old) {
		struct jail_mount copy;

		rc = mount_copy(&copy, &x);
		if (rc == 0) {
			mount_free(old);
			*old = copy;
		}
	} else {
		rc = push(m, &x);
	}
out:
	free(x.src);
	free(x.lower);
	free(x.why);
	jail_spec_clear(&s);
	return rc;
}

static int cmp_mount(const void *a, const void *b)
{
	return jail_path_cmp(((const struct jail_mount *)a)->dest,
			     ((const struct jail_mount *)b)->dest);
}

void jail_mounts_sort(struct jail_mounts *m)
{
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), cmp_mount);
}

/* Index of the nearest mounted ancestor of v[i] (sorted), or -1. */
static ssize_t parent_of(const struct jail_mounts *m, size_t i)
{
	for (size_t j = i; j-- > 0;)
		if (util_path_under(m->v[i].dest, m->v[j].dest))
			return (ssize_t)j;
	return -1;
}

size_t jail_mounts_depth(const struct jail_mounts *m, size_t i)
{
	size_t d = 0;

	for (ssize_t p = parent_of(m, i); p >= 0; p = parent_of(m, (size_t)p))
		d++;
	return d;
}

/* lstat()s each component of base/rel; -ELOOP at the first symlink. */
static int check_path_links(const char *base, const char *rel, const char *dest)
{
	char *path = util_asprintf("%s%s", base, rel);
	size_t blen = strlen(base);
	int rc = 0;

	if (!path)
		return util_err(-ENOMEM, "out of memory");
	for (char *p = path + blen; p && *p && rc == 0;) {
		struct stat st;
		char *next = strchr(p + 1, '/');

		if (next)
			*next = '\0';
		if (lstat(path, &st) < 0)
			break; /* missing: bwrap creates it as a directory */
		if (S_ISLNK(st.st_mode))
			rc =
			    util_err(-ELOOP,
				     "refusing to mount at %s: %s is a symlink inside a folder the "
				     "box can write (remove it, or replace it with a directory)",
				     dest, path);
		if (next)
			*next = '/';
		p = next;
	}
	free(path);
	return rc;
}

int jail_mounts_check_links(const struct jail_mounts *m)
{
	for (size_t i = 0; i < m->n; i++) {
		ssize_t p = parent_of(m, i);
		const struct jail_mount *a = p >= 0 ? &m->v[p] : NULL;
		int rc;

		if (!a || !a->src || !(a->flags & JAIL_MOUNT_BOX_WRITABLE))
			continue;
		/* In an overlay the box writes (and plants links) in the upper layer. */
		rc = check_path_links(a->type == JAIL_MOUNT_OVERLAY ? a->upper : a->src,
				      m->v[i].dest + (strcmp(a->dest, "/") ? strlen(a->dest) : 0),
				      m->v[i].dest);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int jail_mounts_check_dests(const struct jail_mounts *m)
{
	for (size_t i = 0; i < m->n; i++) {
		ssize_t p = parent_of(m, i);
		const struct jail_mount *a = p >= 0 ? &m->v[p] : NULL;
		const char *rel;
		char *path;
		struct stat st;
		bool missing;

		if (!a || a->type != JAIL_MOUNT_RO || !a->src)
			continue;
		/* Where the destination is in the read-only bind above it. */
		rel = m->v[i].dest + (strcmp(a->dest, "/") ? strlen(a->dest) : 0);
		path = util_asprintf("%s%s", strcmp(a->src, "/") ? a->src : "", rel);
		if (!path)
			return util_err(-ENOMEM, "out of memory");
		missing = lstat(path, &st) < 0 && errno == ENOENT;
		free(path);
		if (missing)
			return util_err(
			    -EINVAL,
			    "cannot mount at %s: it does not exist in the box, where %s "
			    "is read-only (bwrap cannot create it there); use a folder "
			    "that exists, such as /mnt, or one under $HOME or /tmp",
			    m->v[i].dest, a->dest);
	}
	return 0;
}

static void mount_args(const struct jail_mount *x, struct jail_strv *a)
{
	/* bwrap's root is a fresh tmpfs already: the box's root only needs sealing (walls.c). */
	if (x->type == JAIL_MOUNT_TMPFS && !strcmp(x->dest, "/"))
		return;
	if (x->perms && (x->type == JAIL_MOUNT_TMPFS || x->type == JAIL_MOUNT_DIR)) {
		jail_strv_push(a, "--perms");
		jail_strv_pushf(a, "%04o", x->perms);
	}
	switch (x->type) {
	case JAIL_MOUNT_RO:
	case JAIL_MOUNT_RW:
	case JAIL_MOUNT_OVERLAY: /* mounted before bwrap (overlay.c), bound here */
		jail_strv_push(a, x->type == JAIL_MOUNT_RO ? "--ro-bind" : "--bind");
		jail_strv_push(a, x->src);
		break;
	case JAIL_MOUNT_TMPFS:
		jail_strv_push(a, "--tmpfs");
		break;
	case JAIL_MOUNT_DEV:
		jail_strv_push(a, "--dev");
		break;
	case JAIL_MOUNT_PROC:
		jail_strv_push(a, "--proc");
		break;
	case JAIL_MOUNT_DIR:
		jail_strv_push(a, "--dir");
		break;
	case JAIL_MOUNT_SYMLINK:
		jail_strv_push(a, "--symlink");
		jail_strv_push(a, x->src);
		break;
	}
	jail_strv_push(a, x->dest);
}

/*
 * Whether v[i] shows exactly what its nearest ancestor mount shows there already: a
 * read-only bind of the same host tree (sources are resolved, so no link lies between them),
 * as a PATH entry under a tool manager's folder; or a sealed tmpfs in a sealed tmpfs. bwrap
 * would mount it again for nothing, and each bind or remount costs it a read of the whole
 * mount table.
 */
/* A sealed tmpfs with the default mode: empty and read-only but for what is mounted in it. */
static bool plain_seal(const struct jail_mount *x)
{
	return x->type == JAIL_MOUNT_TMPFS && (x->flags & JAIL_MOUNT_SEAL) && !x->perms;
}

static bool shown_by_ancestor(const struct jail_mounts *m, size_t i)
{
	const struct jail_mount *x = &m->v[i];
	bool sealed = plain_seal(x);

	if (x->type != JAIL_MOUNT_RO && !sealed)
		return false;
	for (size_t j = i; j-- > 0;) {
		const struct jail_mount *up = &m->v[j];
		const char *rest = x->dest + strlen(up->dest);

		if (!util_path_under(x->dest, up->dest))
			continue;
		/*
		 * The nearest ancestor decides: sorted, so the first one found walking back.
		 * A sealed tmpfs in a sealed tmpfs (the origin's state directory in the origin
		 * checkout's guard): both empty and read-only but for the mount points of what
		 * is below them, so the outer one alone shows the same.
		 */
		if (sealed)
			return plain_seal(up);
		if (up->type != JAIL_MOUNT_RO || !strcmp(up->dest, "/"))
			return false;
		return !strncmp(x->src, up->src, strlen(up->src)) &&
		       !strcmp(x->src + strlen(up->src), rest);
	}
	return false;
}

void jail_mounts_args(const struct jail_mounts *m, struct jail_strv *a)
{
	/* Sealed tmpfs mounts still open above the current one, innermost last. */
	const struct jail_mount **open = calloc(m->n + 1, sizeof(*open));
	size_t depth = 0;

	if (!open) {
		a->oom = true;
		return;
	}
	for (size_t i = 0; i <= m->n; i++) {
		while (depth > 0 &&
		       (i == m->n || !util_path_under(m->v[i].dest, open[depth - 1]->dest))) {
			jail_strv_push(a, "--remount-ro");
			jail_strv_push(a, open[--depth]->dest);
		}
		if (i == m->n)
			break;
		if (shown_by_ancestor(m, i))
			continue;
		mount_args(&m->v[i], a);
		if (m->v[i].type == JAIL_MOUNT_TMPFS && (m->v[i].flags & JAIL_MOUNT_SEAL))
			open[depth++] = &m->v[i];
	}
	free(open);
}
