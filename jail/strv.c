/* jail/strv.c: growable NULL-terminated string vectors (argv, environments). */
#include "jail/jail_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void jail_strv_take(struct jail_strv *s, char *str)
{
	if (!str) {
		s->oom = true;
		return;
	}
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			free(str);
			s->oom = true;
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
}

void jail_strv_push(struct jail_strv *s, const char *str)
{
	jail_strv_take(s, strdup(str));
}

void jail_strv_pushf(struct jail_strv *s, const char *fmt, ...)
{
	va_list ap;
	char *str = NULL;

	va_start(ap, fmt);
	if (vasprintf(&str, fmt, ap) < 0)
		str = NULL;
	va_end(ap);
	jail_strv_take(s, str);
}

int jail_strv_ok(const struct jail_strv *s)
{
	return s->oom ? util_err(-ENOMEM, "out of memory") : 0;
}

void jail_strv_clear(struct jail_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct jail_strv){0};
}
