/* lib/project.c: projects (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "core/core.h"

int arb_project_open(arb_project **out, const char *workdir)
{
	arb_project *p;
	int rc;

	lib_err_reset();
	*out = NULL;
	lib_helper_dir(); /* before any view is mounted */
	p = calloc(1, sizeof(*p));
	if (!p)
		return util_err(-ENOMEM, "out of memory");
	rc = core_project_open(&p->core, workdir ? workdir : ".");
	if (rc < 0) {
		free(p);
		return rc == -ENOMEM ? rc : lib_input_err(rc);
	}
	*out = p;
	return 0;
}

void arb_project_free(arb_project *p)
{
	if (!p)
		return;
	core_project_free(p->core);
	free(p);
}

const char *arb_project_root(const arb_project *p)
{
	return core_project_root(p->core);
}
