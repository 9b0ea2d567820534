/* lib/submodules.c: a workspace's submodules (arborinth.h), as its view shows them. */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "core/core.h"
#include "fs/fs.h"
#include "jail/jail.h"

static const char *state_name(enum fs_submodule_state s)
{
	return s == FS_SUBMODULE_PRESENT  ? "present"
	       : s == FS_SUBMODULE_ABSENT ? "absent"
					  : "refused";
}

void arb_submodules_free(arb_submodule *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].path);
		free(v[i].name);
		free(v[i].commit);
	}
	free(v);
}

int arb_workspace_submodules(arb_submodule **out, size_t *n, arb_project *p,
			     const arb_workspace *ws)
{
	struct fs_submodule *v = NULL;
	arb_submodule *r = NULL;
	size_t nv = 0;
	int rc;

	lib_err_reset();
	*out = NULL;
	*n = 0;
	rc = core_ws_submodules(p->core, arb_workspace_root(ws), arb_workspace_base_commit(ws), &v,
				&nv);
	if (rc == 0 && nv && !(r = calloc(nv, sizeof(*r))))
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < nv && rc == 0; i++) {
		r[i].path = strdup(v[i].path);
		r[i].name = strdup(v[i].name);
		r[i].commit = strdup(v[i].commit);
		r[i].state = state_name(v[i].state);
		if (!r[i].path || !r[i].name || !r[i].commit)
			rc = util_err(-ENOMEM, "out of memory");
	}
	fs_submodules_free(v, nv);
	if (rc < 0) {
		arb_submodules_free(r, nv);
		return rc;
	}
	*out = r;
	*n = nv;
	return 0;
}

int lib_box_submodules(struct jail_box *b, struct core_project *p, const char *ws_root,
		       const char *base_hex, const char *gitdir)
{
	char **src = NULL, **dest = NULL, *modules = util_path_join(gitdir, "modules");
	struct stat st;
	size_t n = 0;
	int rc = 0;

	/*
	 * Create makes gitdir/modules only for a base with submodules the origin initialised.
	 * Without it, no lookup: libgit2 stays unloaded (`shell --explain`). The box may make
	 * or remove the folder: the lookup itself reads only the origin's data.
	 */
	if (!modules)
		return util_err(-ENOMEM, "out of memory");
	if (lstat(modules, &st) == 0 && S_ISDIR(st.st_mode))
		rc = core_submodule_binds(p, ws_root, base_hex, &src, &dest, &n);
	free(modules);

	for (size_t i = 0; i < n && rc == 0; i++)
		rc = jail_box_add_default_mount(b, JAIL_MOUNT_RO, src[i], dest[i],
						"at a submodule's store in the origin, the objects "
						"of the commit the base records only");
	for (size_t i = 0; i < n; i++) {
		free(src[i]);
		free(dest[i]);
	}
	free(src);
	free(dest);
	return rc;
}
