/* binds/set.c: the accumulated mounts, PATH entries and variables, with precedence rules. */
#include "binds/binds_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int binds_set_new(struct binds_set **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : util_err(-ENOMEM, "out of memory");
}

static void free_mounts(struct binds_mount *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)v[i].path);
		free((char *)v[i].origin);
	}
	free(v);
}

static void free_dirs(struct binds_dir *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)v[i].dir);
		free((char *)v[i].origin);
	}
	free(v);
}

static void free_vars(struct binds_var *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)v[i].name);
		free((char *)v[i].value);
		free((char *)v[i].origin);
	}
	free(v);
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void free_backend(struct binds_backend *b)
{
	free((char *)b->name);
	free((char *)b->spec);
	free((char *)b->origin);
	free((char *)b->file);
}

void binds_set_free(struct binds_set *s)
{
	if (!s)
		return;
	free_mounts(s->mounts, s->n_mounts);
	free_dirs(s->path, s->n_path);
	free_vars(s->env, s->n_env);
	free_strs(s->notes, s->n_notes);
	for (size_t i = 0; i < s->n_mcp; i++) {
		free((char *)s->mcp[i].select);
		free((char *)s->mcp[i].origin);
	}
	free(s->mcp);
	for (size_t i = 0; i < s->n_backends; i++)
		free_backend(&s->backends[i]);
	free(s->backends);
	free(s);
}

const struct binds_mount *binds_set_mounts(const struct binds_set *s, size_t *n)
{
	*n = s->n_mounts;
	return s->mounts;
}

const struct binds_dir *binds_set_path(const struct binds_set *s, size_t *n)
{
	*n = s->n_path;
	return s->path;
}

const struct binds_var *binds_set_env(const struct binds_set *s, size_t *n)
{
	*n = s->n_env;
	return s->env;
}

const struct binds_mcp *binds_set_mcp(const struct binds_set *s, size_t *n)
{
	*n = s->n_mcp;
	return s->mcp;
}

const struct binds_backend *binds_set_backends(const struct binds_set *s, size_t *n)
{
	*n = s->n_backends;
	return s->backends;
}

const char *const *binds_set_notes(const struct binds_set *s, size_t *n)
{
	*n = s->n_notes;
	return (const char *const *)s->notes;
}

/* Grows *v (of *n elements, element size `size`) by one; the new slot is zeroed. */
static void *grow(void *v, size_t n, size_t size)
{
	char *p = realloc(v, (n + 1) * size);

	if (p)
		memset(p + n * size, 0, size);
	return p;
}

int binds_set_add_mount(struct binds_set *s, enum binds_kind kind, const char *path,
			const char *origin)
{
	char *p = strdup(path), *o = strdup(origin);
	struct binds_mount *v;

	if (!p || !o)
		goto oom;
	for (size_t i = 0; i < s->n_mounts; i++)
		if (!strcmp(s->mounts[i].path, path)) {
			free((char *)s->mounts[i].path);
			free((char *)s->mounts[i].origin);
			s->mounts[i] = (struct binds_mount){kind, p, o};
			return 0;
		}
	v = grow(s->mounts, s->n_mounts, sizeof(*v));
	if (!v)
		goto oom;
	s->mounts = v;
	v[s->n_mounts++] = (struct binds_mount){kind, p, o};
	return 0;
oom:
	free(p);
	free(o);
	return util_err(-ENOMEM, "out of memory");
}

int binds_set_add_env(struct binds_set *s, const char *name, const char *value, const char *origin)
{
	char *n = strdup(name), *val = strdup(value), *o = strdup(origin);
	struct binds_var *v;

	if (!n || !val || !o)
		goto oom;
	for (size_t i = 0; i < s->n_env; i++)
		if (!strcmp(s->env[i].name, name)) {
			free((char *)s->env[i].name);
			free((char *)s->env[i].value);
			free((char *)s->env[i].origin);
			s->env[i] = (struct binds_var){n, val, o};
			return 0;
		}
	v = grow(s->env, s->n_env, sizeof(*v));
	if (!v)
		goto oom;
	s->env = v;
	v[s->n_env++] = (struct binds_var){n, val, o};
	return 0;
oom:
	free(n);
	free(val);
	free(o);
	return util_err(-ENOMEM, "out of memory");
}

int binds_set_add_backend(struct binds_set *s, const char *name, const char *spec,
			  const char *origin, const char *file)
{
	struct binds_backend b = {strdup(name), strdup(spec), strdup(origin), strdup(file)};
	struct binds_backend *v;

	if (!b.name || !b.spec || !b.origin || !b.file)
		goto oom;
	for (size_t i = 0; i < s->n_backends; i++)
		if (!strcmp(s->backends[i].name, name)) {
			free_backend(&s->backends[i]);
			s->backends[i] = b;
			return 0;
		}
	v = grow(s->backends, s->n_backends, sizeof(*v));
	if (!v)
		goto oom;
	s->backends = v;
	v[s->n_backends++] = b;
	return 0;
oom:
	free_backend(&b);
	return util_err(-ENOMEM, "out of memory");
}

int binds_set_prepend_path(struct binds_set *s, const struct binds_dir *block, size_t n)
{
	struct binds_dir *v = calloc(s->n_path + n + 1, sizeof(*v));
	size_t o = 0;

	if (!v)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		for (size_t j = 0; j < o && !dup; j++)
			dup = !strcmp(v[j].dir, block[i].dir);
		if (dup)
			continue;
		v[o].dir = strdup(block[i].dir);
		v[o].origin = strdup(block[i].origin);
		if (!v[o].dir || !v[o].origin) {
			free_dirs(v, o + 1);
			return util_err(-ENOMEM, "out of memory");
		}
		o++;
	}
	/* The earlier entries follow, minus those the block now puts in front. */
	size_t front = o;

	for (size_t i = 0; i < s->n_path; i++) {
		bool dup = false;

		for (size_t j = 0; j < front && !dup; j++)
			dup = !strcmp(v[j].dir, s->path[i].dir);
		if (dup) {
			free((char *)s->path[i].dir);
			free((char *)s->path[i].origin);
		} else {
			v[o++] = s->path[i];
		}
	}
	free(s->path);
	s->path = v;
	s->n_path = o;
	return 0;
}

int binds_set_add_mcp(struct binds_set *s, const char *select, const char *origin)
{
	struct binds_mcp *v;
	char *a, *b;

	for (size_t i = 0; i < s->n_mcp; i++)
		if (!strcmp(s->mcp[i].select, select))
			return 0;
	v = grow(s->mcp, s->n_mcp, sizeof(*v));
	if (!v)
		return util_err(-ENOMEM, "out of memory");
	s->mcp = v;
	a = strdup(select);
	b = strdup(origin);
	if (!a || !b) {
		free(a);
		free(b);
		return util_err(-ENOMEM, "out of memory");
	}
	s->mcp[s->n_mcp++] = (struct binds_mcp){.select = a, .origin = b};
	return 0;
}

int binds_set_note(struct binds_set *s, char *note)
{
	char **v;

	if (!note)
		return util_err(-ENOMEM, "out of memory");
	v = grow(s->notes, s->n_notes, sizeof(*v));
	if (!v) {
		free(note);
		return util_err(-ENOMEM, "out of memory");
	}
	s->notes = v;
	v[s->n_notes++] = note;
	return 0;
}

int binds_set_copy_into(struct binds_set *dst, const struct binds_set *src)
{
	int rc = 0;

	for (size_t i = 0; i < src->n_mounts && rc == 0; i++)
		rc = binds_set_add_mount(dst, src->mounts[i].kind, src->mounts[i].path,
					 src->mounts[i].origin);
	for (size_t i = 0; i < src->n_env && rc == 0; i++)
		rc =
		    binds_set_add_env(dst, src->env[i].name, src->env[i].value, src->env[i].origin);
	if (rc == 0 && src->n_path)
		rc = binds_set_prepend_path(dst, src->path, src->n_path);
	for (size_t i = 0; i < src->n_notes && rc == 0; i++)
		rc = binds_set_note(dst, strdup(src->notes[i]));
	for (size_t i = 0; i < src->n_mcp && rc == 0; i++)
		rc = binds_set_add_mcp(dst, src->mcp[i].select, src->mcp[i].origin);
	for (size_t i = 0; i < src->n_backends && rc == 0; i++)
		rc = binds_set_add_backend(dst, src->backends[i].name, src->backends[i].spec,
					   src->backends[i].origin, src->backends[i].file);
	return rc;
}

int binds_err_prefix(int rc, const char *fmt, ...)
{
	char prefix[512], msg[1024];
	va_list ap;

	snprintf(msg, sizeof(msg), "%s", util_err_msg());
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	return util_err(rc, "%s%s", prefix, msg);
}
