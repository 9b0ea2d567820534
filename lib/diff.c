/* lib/diff.c: what changed between two states of a workspace (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"

/* ws and the trees named from and to. */
static int open_trees(arb_project *p, const char *name, const char *from, const char *to,
		      struct core_ws **ws, git_oid *a, git_oid *b)
{
	int rc = core_ws_get(p->core, name, ws);

	if (rc == -ENOENT || rc == -EINVAL)
		return lib_input_err(rc);
	if (rc == 0 && (rc = core_ws_tree(p->core, *ws, from, a)) == 0)
		rc = core_ws_tree(p->core, *ws, to, b);
	return rc < 0 && rc != -ENOMEM && rc != -EIO ? lib_input_err(rc) : rc;
}

int arb_diffstat(struct arb_diffstat *out, arb_project *p, const char *ws_name, const char *from,
		 const char *to)
{
	struct core_diffstat st = {0};
	struct core_ws *ws = NULL;
	git_oid a, b;
	int rc;

	lib_err_reset();
	*out = (struct arb_diffstat){0};
	rc = open_trees(p, ws_name, from, to, &ws, &a, &b);
	if (rc == 0)
		rc = core_ws_diffstat(p->core, ws, &a, &b, &st);
	if (rc == 0)
		*out = (struct arb_diffstat){st.files, st.insertions, st.deletions};
	core_ws_free(ws);
	return rc;
}

int arb_diff(arb_project *p, const char *ws_name, const char *from, const char *to,
	     const char *const *paths, size_t n, enum arb_diff_format fmt, int fd)
{
	return arb_diff_flags(p, ws_name, from, to, paths, n, fmt,
			      isatty(fd) ? ARB_DIFF_TERMINAL : 0, fd);
}

int arb_diff_flags(arb_project *p, const char *ws_name, const char *from, const char *to,
		   const char *const *paths, size_t n, enum arb_diff_format fmt, unsigned int flags,
		   int fd)
{
	struct core_ws *ws = NULL;
	FILE *f = NULL;
	git_oid a, b;
	int rc;

	lib_err_reset();
	if (fmt != ARB_DIFF_PATCH && fmt != ARB_DIFF_NAME_STATUS && fmt != ARB_DIFF_STAT)
		return lib_input_err(util_err(-EINVAL, "unknown diff format %d", (int)fmt));
	rc = open_trees(p, ws_name, from, to, &ws, &a, &b);
	if (rc == 0)
		rc = lib_fd_stream(fd, "diff", &f);
	if (rc == 0)
		rc = core_ws_diff(p->core, ws, &a, &b, paths, n,
				  fmt == ARB_DIFF_STAT		? CORE_DIFF_STAT
				  : fmt == ARB_DIFF_NAME_STATUS ? CORE_DIFF_NAME_STATUS
								: CORE_DIFF_PATCH,
				  (flags & ARB_DIFF_TERMINAL ? CORE_DIFF_TERMINAL : 0) |
				      (flags & ARB_DIFF_COLOR ? CORE_DIFF_COLOR : 0),
				  f);
	if (f && fclose(f) != 0 && rc == 0)
		rc = util_err(-EIO, "diff: cannot write the output");
	core_ws_free(ws);
	return rc;
}

void arb_diff_files_free(struct arb_diff_file *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].path);
		free(v[i].old_path);
	}
	free(v);
}

int arb_diff_files(struct arb_diff_file **out, size_t *n, arb_project *p, const char *ws_name,
		   const char *from, const char *to, const char *const *paths, size_t n_paths)
{
	struct core_diff_file *cf = NULL;
	struct arb_diff_file *v = NULL;
	struct core_ws *ws = NULL;
	size_t nf = 0;
	git_oid a, b;
	int rc;

	lib_err_reset();
	*out = NULL;
	*n = 0;
	rc = open_trees(p, ws_name, from, to, &ws, &a, &b);
	if (rc == 0)
		rc = core_ws_diff_files(p->core, ws, &a, &b, paths, n_paths, &cf, &nf);
	if (rc == 0 && !(v = calloc(nf ? nf : 1, sizeof(*v))))
		rc = util_err(-ENOMEM, "out of memory");
	/* The strings move over; cf keeps none. */
	for (size_t i = 0; rc == 0 && i < nf; i++) {
		v[i] = (struct arb_diff_file){cf[i].status,   cf[i].binary,	cf[i].path,
					      cf[i].old_path, cf[i].insertions, cf[i].deletions};
		cf[i].path = cf[i].old_path = NULL;
	}
	core_diff_files_free(cf, nf);
	core_ws_free(ws);
	if (rc < 0)
		return rc;
	*out = v;
	*n = nf;
	return 0;
}
