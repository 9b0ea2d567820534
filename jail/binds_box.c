/*
 * jail/binds_box.c: what grants, bind files and the agent launchers add to a box: mounts of
 * host paths at their own path (allowed below the $HOME guard, where toolchains live, never
 * at $HOME or under another guard), PATH entries in front, and the box's $HOME and cache.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int jail_box_add_input(struct jail_box *b, const char *label, const char *text)
{
	jail_strv_pushf(&b->inputs, "%-10s %s", label, text);
	return jail_strv_ok(&b->inputs);
}

const char *jail_box_home(const struct jail_box *b)
{
	return b->home;
}

const char *jail_box_cache_dir(const struct jail_box *b)
{
	return b->cache_dest;
}

static bool is_home_guard(const struct jail_box *b, const struct jail_mount *g)
{
	return g->origin == JAIL_FROM_GUARD && !strcmp(g->dest, b->home);
}

/* A guard other than $HOME's over path (as a destination or as a hidden host path). */
static const struct jail_mount *other_guard(const struct jail_box *b, const char *path)
{
	const struct jail_mounts *m = &b->mounts;

	for (size_t i = 0; i < m->n; i++) {
		const struct jail_mount *g = &m->v[i];

		if (g->origin != JAIL_FROM_GUARD || is_home_guard(b, g))
			continue;
		if (util_path_under(path, g->dest) ||
		    (g->protects && util_path_under(path, g->protects)))
			return g;
	}
	return NULL;
}

/* A mount whose hidden host path `real` would reopen: at or below it, or (but for $HOME's) above.
 */
static const struct jail_mount *exposes(const struct jail_box *b, const char *real)
{
	const struct jail_mounts *m = &b->mounts;

	for (size_t i = 0; i < m->n; i++) {
		const struct jail_mount *x = &m->v[i];

		if (!x->protects)
			continue;
		if (util_path_under(x->protects, real))
			return x;
		if (util_path_under(real, x->protects) && !is_home_guard(b, x))
			return x;
	}
	return NULL;
}

static int checks(const struct jail_box *b, enum jail_mount_type type, const char *dest,
		  const char *real)
{
	const struct jail_mount *g;

	if (!strcmp(dest, b->home) || !strcmp(real, b->home_real) || !strcmp(dest, "/"))
		return util_err(-EINVAL, "%s: cannot replace %s itself", dest,
				!strcmp(dest, "/") ? "/" : "$HOME");
	if ((g = other_guard(b, dest)) || (g = other_guard(b, real)))
		return util_err(-EINVAL, "%s is at or below the guard at %s (%s)", dest, g->dest,
				g->why);
	if (type != JAIL_MOUNT_TMPFS && (g = exposes(b, real)))
		return util_err(-EINVAL, "%s would expose %s, which the mount at %s hides (%s)",
				real, g->protects, g->dest, g->why);
	return 0;
}

int jail_box_add_extra_mount(struct jail_box *b, enum jail_mount_type type, const char *path,
			     const char *why)
{
	struct jail_mount x = {.type = type, .origin = JAIL_FROM_USER};
	struct jail_mount *old;
	char *real = NULL;
	int rc = b->finished ? util_err(-EBUSY, "jail: the box is already finished") : 0;

	if (rc < 0)
		return rc;
	if (type != JAIL_MOUNT_RO && type != JAIL_MOUNT_RW && type != JAIL_MOUNT_TMPFS &&
	    type != JAIL_MOUNT_OVERLAY)
		return util_err(-EINVAL, "jail: extra mounts are ro, rw, overlay or tmpfs");
	if (path[0] != '/' || jail_path_norm(path, &x.dest) < 0)
		return util_err(-EINVAL, "%s is not a plain absolute path", path);
	real = jail_path_real(x.dest);
	if (!real) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	rc = checks(b, type, x.dest, real);
	if (rc < 0)
		goto out;
	if (type == JAIL_MOUNT_OVERLAY)
		x.lower = real, real = NULL; /* the workspace's merged dir, once finished */
	else if (type != JAIL_MOUNT_TMPFS)
		x.src = real, real = NULL;
	if (type != JAIL_MOUNT_RO)
		x.flags |= JAIL_MOUNT_BOX_WRITABLE;
	x.why = (char *)why;
	old = (struct jail_mount *)jail_mounts_find(&b->mounts, x.dest);
	if (!old) {
		rc = jail_mounts_add(&b->mounts, &x);
	} else if (old->origin == JAIL_FROM_USER || (old->flags & JAIL_MOUNT_REPLACEABLE)) {
		char *src = x.src ? strdup(x.src) : NULL, *w = strdup(why);
		char *lower = x.lower ? strdup(x.lower) : NULL;

		if ((x.src && !src) || (x.lower && !lower) || !w) {
			free(src);
			free(lower);
			free(w);
			rc = util_err(-ENOMEM, "out of memory");
			goto out;
		}
		free(old->src);
		free(old->lower);
		free(old->upper);
		free(old->why);
		free(old->protects);
		old->src = src;
		old->lower = lower;
		old->upper = NULL;
		old->why = w;
		old->protects = NULL;
		old->type = type;
		old->origin = JAIL_FROM_USER;
		old->flags = x.flags;
		old->perms = 0;
	} else if (old->type != type || (x.src && (!old->src || strcmp(old->src, x.src))) ||
		   x.lower) {
		rc = util_err(-EINVAL,
			      "%s already has a default mount (%s: %s) that cannot be replaced",
			      x.dest, jail_mount_type_name(old->type), old->why);
	}
	if (rc == 0)
		jail_mounts_drop_below(&b->mounts, x.dest, JAIL_MOUNT_TOOL);
out:
	free(x.src);
	free(x.lower);
	free(x.dest);
	free(real);
	return rc;
}

int jail_box_path_prepend(struct jail_box *b, const char *dir)
{
	const char *cur = jail_env_get(b->env.v, "PATH");
	char *v;

	if (b->finished)
		return util_err(-EBUSY, "jail: the box is already finished");
	if (dir[0] != '/' || strchr(dir, ':'))
		return util_err(-EINVAL, "PATH entry '%s' must be absolute and free of ':'", dir);
	v = cur && *cur ? util_asprintf("%s:%s", dir, cur) : strdup(dir);
	if (!v)
		return util_err(-ENOMEM, "out of memory");
	jail_env_set(&b->env, "PATH", v);
	free(v);
	return jail_strv_ok(&b->env);
}
