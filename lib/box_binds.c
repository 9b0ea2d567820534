/*
 * lib/box_binds.c: --grant NAME and --binds FILE for `shell` and the agent launchers:
 * grants first, then bind files in the order given (a user's file wins), applied to the box
 * as extra mounts, PATH entries and variables. Host credential files are never mounted.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binds/binds.h"
#include "jail/jail.h"

static enum jail_mount_type mount_type(enum binds_kind k)
{
	static const enum jail_mount_type types[] = {[BINDS_RO] = JAIL_MOUNT_RO,
						     [BINDS_RW] = JAIL_MOUNT_RW,
						     [BINDS_TMPFS] = JAIL_MOUNT_TMPFS,
						     [BINDS_OVERLAY] = JAIL_MOUNT_OVERLAY};

	return types[k];
}

static int apply_mounts(struct jail_box *b, const struct binds_set *s, const char *home)
{
	size_t n;
	const struct binds_mount *m = binds_set_mounts(s, &n);

	for (size_t i = 0; i < n; i++) {
		const char *what = util_str_has_prefix(m[i].origin, "grant ") ? "" : "--binds ";
		char *secret = NULL, *why;
		int rc;

		if (m[i].kind != BINDS_TMPFS && util_secret_path(m[i].path, home, &secret)) {
			rc = util_err(-EINVAL,
				      "%s%s: %s would expose host credentials (%s); they are never "
				      "mounted into a box",
				      what, m[i].origin, m[i].path, secret);
			free(secret);
			return lib_input_err(rc);
		}
		if (m[i].kind != BINDS_TMPFS && access(m[i].path, F_OK) < 0)
			return lib_input_err(util_err(-EINVAL, "%s%s: %s does not exist", what,
						      m[i].origin, m[i].path));
		why = util_asprintf("%s%s", what, m[i].origin);
		if (!why)
			return util_err(-ENOMEM, "out of memory");
		rc = jail_box_add_extra_mount(b, mount_type(m[i].kind), m[i].path, why);
		free(why);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0)
			return lib_input_err(
			    util_err(rc, "%s%s: %s", what, m[i].origin, util_err_msg()));
	}
	return 0;
}

static int apply_rest(struct jail_box *b, const struct binds_set *s)
{
	size_t n;
	const struct binds_dir *d = binds_set_path(s, &n);
	const struct binds_var *v;

	/* The set lists PATH entries front first: prepend from the back. */
	for (size_t i = n; i-- > 0;)
		if (jail_box_path_prepend(b, d[i].dir) < 0)
			return lib_input_err(
			    util_err(-EINVAL, "%s: %s", d[i].origin, util_err_msg()));
	v = binds_set_env(s, &n);
	for (size_t i = 0; i < n; i++) {
		char *kv = util_asprintf("%s=%s", v[i].name, v[i].value);
		int rc = kv ? jail_box_add_env(b, kv) : -ENOMEM;

		free(kv);
		if (rc == -ENOMEM)
			return util_err(rc, "out of memory");
		if (rc < 0)
			return lib_input_err(
			    util_err(-EINVAL, "%s: %s", v[i].origin, util_err_msg()));
	}
	return 0;
}

int lib_binds_apply(struct jail_box *b, const char *const *grants, size_t n_grants,
		    const char *const *files, size_t n_files)
{
	struct binds_grant_ctx ctx = {.home = jail_box_home(b), .cache = jail_box_cache_dir(b)};
	struct binds_set *s = NULL;
	int rc = 0;

	if (!n_grants && !n_files)
		return 0;
	if (binds_set_new(&s) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n_grants && rc == 0; i++)
		if ((rc = binds_grant_add(s, grants[i], &ctx)) < 0 && rc != -ENOMEM)
			rc = lib_input_err(util_err(-EINVAL, "--grant: %s", util_err_msg()));
	for (size_t i = 0; i < n_files && rc == 0; i++)
		if ((rc = binds_file_load(s, files[i], ctx.home)) < 0 && rc != -ENOMEM)
			rc = lib_input_err(util_err(-EINVAL, "--binds %s", util_err_msg()));
	if (rc == 0)
		rc = apply_mounts(b, s, ctx.home);
	if (rc == 0)
		rc = apply_rest(b, s);
	binds_set_free(s);
	return rc;
}
