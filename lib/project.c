/* lib/project.c: projects (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>
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

const char *arb_project_git_dir(const arb_project *p)
{
	return core_project_gitdir(p->core);
}

const char *arb_project_state_dir(const arb_project *p)
{
	return core_project_state_dir(p->core);
}

int arb_project_head(struct arb_head *out, const arb_project *p)
{
	struct core_head h = {0};
	int rc;

	lib_err_reset();
	*out = (struct arb_head){0};
	rc = core_project_head(p->core, &h);
	if (rc == 0) {
		snprintf(out->commit, sizeof(out->commit), "%s", h.unborn ? "" : h.commit);
		snprintf(out->branch, sizeof(out->branch), "%s", h.branch ? h.branch : "");
		out->unborn = h.unborn;
	}
	free(h.branch);
	return rc;
}

int arb_project_set_disk(arb_project *p, const char *size)
{
	lib_err_reset();
	return size ? lib_input_err(core_project_set_disk(p->core, size))
		    : lib_input_err(util_err(-EINVAL, "--disk: no size"));
}

int arb_project_workspace_count(size_t *out, arb_project *p)
{
	lib_err_reset();
	*out = 0;
	return core_ws_count(p->core, out);
}
