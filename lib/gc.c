/* lib/gc.c: reclaiming space and the user's projects (arborinth.h): gc, projects list. */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

struct gc_fwd {
	arb_gc_fn *fn;
	void *arg;
};

static void gc_forward(void *arg, bool removed, const char *what, const char *path, uint64_t bytes)
{
	struct gc_fwd *f = arg;

	if (f->fn)
		f->fn(f->arg, removed, what, path, bytes);
}

int arb_project_gc(arb_project *p, unsigned flags, arb_gc_fn *fn, void *arg, uint64_t *bytes)
{
	struct gc_fwd f = {fn, arg};
	uint64_t total = 0;
	int rc;

	lib_err_reset();
	if (flags & ~(unsigned)(ARB_GC_DRY_RUN | ARB_GC_PURGE))
		return lib_input_err(util_err(-EINVAL, "unknown gc flags 0x%x", flags));
	rc = core_gc(p->core,
		     (flags & ARB_GC_DRY_RUN ? CORE_GC_DRY_RUN : 0) |
			 (flags & ARB_GC_PURGE ? CORE_GC_PURGE : 0),
		     gc_forward, &f, &total);
	if (bytes)
		*bytes = total;
	return rc;
}

const char *arb_project_note(const arb_project *p)
{
	return core_project_note(p->core);
}

/* Whether root opens as the project whose state is state_dir (not another one since). */
static bool project_is(const char *root, const char *state_dir)
{
	struct core_project *p = NULL;
	bool yes =
	    core_project_open(&p, root) == 0 && !strcmp(core_project_state_dir(p), state_dir);

	core_project_free(p);
	util_err_clear();
	return yes;
}

int arb_projects_list(char ***roots, size_t *n)
{
	struct core_registry_entry *v = NULL;
	size_t count = 0;
	char **out;
	int rc;

	lib_err_reset();
	*roots = NULL;
	*n = 0;
	rc = core_registry_list(&v, &count);
	if (rc < 0)
		return rc;
	out = calloc(count + 1, sizeof(*out));
	for (size_t i = 0; out && i < count; i++) {
		if (!project_is(v[i].root, v[i].state_dir))
			continue;
		out[*n] = strdup(v[i].root);
		if (!out[*n]) {
			arb_projects_free(out, *n);
			out = NULL;
			break;
		}
		(*n)++;
	}
	core_registry_free(v, count);
	if (!out) {
		*n = 0;
		return util_err(-ENOMEM, "out of memory");
	}
	*roots = out;
	return 0;
}

void arb_projects_free(char **roots, size_t n)
{
	for (size_t i = 0; roots && i < n; i++)
		free(roots[i]);
	free(roots);
}

int arb_projects_prune(size_t *dropped)
{
	size_t d = 0;
	int rc;

	lib_err_reset();
	rc = core_registry_prune(&d);
	if (dropped)
		*dropped = d;
	return rc;
}
