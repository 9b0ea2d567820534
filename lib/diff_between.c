/* lib/diff_between.c: the diff between the views of two workspaces (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>

#include "core/core.h"

int arb_diff_between(arb_project *p, const char *a_name, const char *b_name, int fd)
{
	struct core_ws *a = NULL, *b = NULL;
	FILE *f = NULL;
	int rc;

	lib_err_reset();
	rc = core_ws_get(p->core, a_name, &a);
	if (rc == 0)
		rc = core_ws_get(p->core, b_name, &b);
	if (rc == -ENOENT || rc == -EINVAL)
		rc = lib_input_err(rc);
	if (rc == 0)
		rc = lib_fd_stream(fd, "diff", &f);
	if (rc == 0)
		rc = core_ws_diff_between(p->core, a, b, f);
	if (f && fclose(f) != 0 && rc == 0)
		rc = util_err(-EIO, "diff: cannot write the output");
	core_ws_free(a);
	core_ws_free(b);
	return rc;
}
