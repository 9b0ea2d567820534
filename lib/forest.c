/*
 * lib/forest.c: which workspace a workspace was forked from (`create --from`), for the
 * review page's forest. A fork's base is a commit arborinth wrote into the origin's store
 * (core/fork.c): one parent (the source's base) and the message "arborinth: NAME forked from
 * FROM at CKPT". Both are checked, so an ordinary commit of the origin is no fork.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

int arb_workspace_forked_from(char **from, arb_project *p, const char *name)
{
	struct core_ws *ws = NULL;
	git_commit *c = NULL;
	git_oid id;
	const char *msg, *rest, *at;
	char *prefix = NULL;
	int rc;

	lib_err_reset();
	*from = NULL;
	rc = core_ws_get(p->core, name, &ws);
	if (rc == -ENOENT || rc == -EINVAL)
		return lib_input_err(rc);
	if (rc < 0)
		return rc;
	prefix = util_asprintf("arborinth: %s forked from ", name);
	if (!prefix) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (!core_project_repo(p->core) || git_oid_fromstr(&id, ws->base_commit) < 0 ||
	    git_commit_lookup(&c, core_project_repo(p->core), &id) < 0 ||
	    git_commit_parentcount(c) != 1)
		goto out;
	msg = git_commit_message(c);
	if (!msg || strncmp(msg, prefix, strlen(prefix)) != 0)
		goto out;
	rest = msg + strlen(prefix);
	at = strstr(rest, " at ");
	if (at && at > rest && !(*from = strndup(rest, (size_t)(at - rest))))
		rc = util_err(-ENOMEM, "out of memory");
out:
	git_commit_free(c);
	free(prefix);
	core_ws_free(ws);
	return rc;
}
