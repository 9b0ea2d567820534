/* audit/summary.c: `arborinth audit --summary`: what became of each path. */
#include "audit/audit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct path_state {
	struct audit_summary_entry e;
	char *path, *renamed_to;
	bool seen_ok;	     /* a successful operation decided existed_before */
	bool existed_before; /* before the first successful operation */
	bool exists;	     /* after the last one */
};

struct audit_summary {
	struct path_state **items;
	size_t n, cap;
	size_t *table; /* open addressing: index + 1, 0 empty */
	size_t tcap;
	struct audit_summary_entry *out;
};

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int table_grow(struct audit_summary *s)
{
	size_t ncap = s->tcap ? s->tcap * 2 : 256;
	size_t *nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		size_t h = hash_str(s->items[i]->path) & (ncap - 1);

		while (nt[h])
			h = (h + 1) & (ncap - 1);
		nt[h] = i + 1;
	}
	free(s->table);
	s->table = nt;
	s->tcap = ncap;
	return 0;
}

static struct path_state *lookup(struct audit_summary *s, const char *path)
{
	struct path_state *p;
	size_t h;

	if ((s->n + 1) * 2 > s->tcap && table_grow(s) < 0)
		return NULL;
	for (h = hash_str(path) & (s->tcap - 1); s->table[h]; h = (h + 1) & (s->tcap - 1))
		if (!strcmp(s->items[s->table[h] - 1]->path, path))
			return s->items[s->table[h] - 1];
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct path_state **ni = realloc(s->items, ncap * sizeof(*ni));

		if (!ni)
			return NULL;
		s->items = ni;
		s->cap = ncap;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		free(p);
		return NULL;
	}
	p->e.first_ns = INT64_MAX;
	s->items[s->n++] = p;
	s->table[h] = s->n;
	return p;
}

int audit_summary_new(struct audit_summary **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

enum effect { KEEP, CREATE, REMOVE };

/* Applies one operation on path p; `created`/`removed` say what it did to the name. */
static void apply(struct path_state *p, const struct audit_row *r, enum effect eff,
		  const char *renamed_to)
{
	p->e.ops++;
	if (r->time_ns < p->e.first_ns)
		p->e.first_ns = r->time_ns;
	if (r->time_ns > p->e.last_ns)
		p->e.last_ns = r->time_ns;
	if (r->result != 0)
		return;
	if (!p->seen_ok) {
		p->seen_ok = true;
		p->existed_before = eff != CREATE;
	}
	p->exists = eff != REMOVE;
	if (eff == REMOVE && renamed_to) {
		char *copy = strdup(renamed_to);

		if (copy) {
			free(p->renamed_to);
			p->renamed_to = copy;
		}
	} else if (eff != KEEP) {
		free(p->renamed_to);
		p->renamed_to = NULL;
	}
	if (!strcmp(r->op, "write") && r->size > 0)
		p->e.bytes += r->size;
}

/* p's operations and bytes into dst; p is as if never seen (entries skip it). */
static void fold_into(struct path_state *dst, struct path_state *p)
{
	dst->e.ops += p->e.ops - 1; /* the rename counted in both */
	dst->e.bytes += p->e.bytes;
	if (p->e.first_ns < dst->e.first_ns)
		dst->e.first_ns = p->e.first_ns;
	dst->seen_ok = true;
	dst->existed_before = false;
	free(p->renamed_to);
	p->renamed_to = NULL;
	p->e = (struct audit_summary_entry){.first_ns = INT64_MAX};
	p->seen_ok = p->existed_before = p->exists = false;
}

int audit_summary_add(struct audit_summary *s, const struct audit_row *r)
{
	static const char *const creating[] = {"create", "mkdir", "symlink", "mknod", "link", NULL};
	enum effect eff = KEEP;
	struct path_state *p, *p2 = NULL;

	if (strcmp(r->kind, "fs") != 0 || !strcmp(r->op, "gap") || !r->path)
		return 0;
	for (size_t i = 0; creating[i]; i++)
		if (!strcmp(r->op, creating[i]))
			eff = CREATE;
	if (!strcmp(r->op, "unlink") || !strcmp(r->op, "rmdir") || !strcmp(r->op, "rename") ||
	    !strcmp(r->op, "unattributed-delete"))
		eff = REMOVE;
	p = lookup(s, r->path);
	if (!p)
		return -ENOMEM;
	/*
	 * rename: path2 is the new name; link: path2 is the existing file, path the new name;
	 * exchange: both names stay, each with the other's file (both modified).
	 */
	if ((!strcmp(r->op, "rename") || !strcmp(r->op, "link") || !strcmp(r->op, "exchange")) &&
	    r->path2) {
		p2 = lookup(s, r->path2);
		if (!p2)
			return -ENOMEM;
		/* lookup may have moved the array, not the items: p stays valid. */
		apply(p2, r, !strcmp(r->op, "rename") ? CREATE : KEEP, NULL);
	}
	apply(p, r, eff, !strcmp(r->op, "rename") ? r->path2 : NULL);
	/*
	 * A file made in this window and then moved is one file: the destination's entry ("added")
	 * takes its operations, and the name it had is not listed (unless made again).
	 */
	if (p2 && !strcmp(r->op, "rename") && r->result == 0 && p->seen_ok && !p->existed_before &&
	    p != p2)
		fold_into(p2, p);
	return 0;
}

static const char *status_of(const struct path_state *p)
{
	if (!p->seen_ok)
		return "unchanged";
	if (!p->exists)
		return p->renamed_to ? "renamed" : "deleted";
	return p->existed_before ? "modified" : "added";
}

static int by_path(const void *a, const void *b)
{
	const struct audit_summary_entry *x = a, *y = b;

	return strcmp(x->path, y->path);
}

size_t audit_summary_entries(struct audit_summary *s, const struct audit_summary_entry **out)
{
	size_t n = 0;

	free(s->out);
	s->out = calloc(s->n ? s->n : 1, sizeof(*s->out));
	if (!s->out) {
		*out = NULL;
		return 0;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct path_state *p = s->items[i];

		if (!p->e.ops) /* folded into where it moved */
			continue;
		s->out[n] = p->e;
		s->out[n].path = p->path;
		s->out[n].status = status_of(p);
		s->out[n].renamed_to = p->exists ? NULL : p->renamed_to;
		n++;
	}
	qsort(s->out, n, sizeof(*s->out), by_path);
	*out = s->out;
	return n;
}

void audit_summary_free(struct audit_summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->items[i]->path);
		free(s->items[i]->renamed_to);
		free(s->items[i]);
	}
	free(s->items);
	free(s->table);
	free(s->out);
	free(s);
}
