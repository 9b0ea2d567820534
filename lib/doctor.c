/*
 * lib/doctor.c: the checks' list behind arb_doctor() (agents/doctor.c), what arborinth needs of
 * this machine and whether it is there. Each check is ok, degraded (arborinth works without it,
 * with less) or missing; a missing required check means workspaces or boxes cannot work here.
 * Nothing here changes the machine, and no credential is ever read beyond its existence.
 */
#include "lib/doctor_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/lib_internal.h"

int doctor_add(struct doctor *d, const char *name, enum arb_check_status st, bool required,
	       const char *fix, const char *fmt, ...)
{
	struct arb_check *c;
	va_list ap;
	char *detail;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct arb_check *v = realloc(d->v, cap * sizeof(*v));

		if (!v)
			return util_err(-ENOMEM, "out of memory");
		d->v = v;
		d->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&detail, fmt, ap) < 0)
		detail = NULL;
	va_end(ap);
	c = &d->v[d->n];
	*c = (struct arb_check){name, st, required, detail, NULL};
	if (fix && st != ARB_CHECK_OK)
		c->fix = strdup(fix);
	if (!detail || (fix && st != ARB_CHECK_OK && !c->fix)) {
		free(detail);
		free(c->fix);
		return util_err(-ENOMEM, "out of memory");
	}
	d->n++;
	return 0;
}

void arb_checks_free(struct arb_check *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].detail);
		free(v[i].fix);
	}
	free(v);
}
