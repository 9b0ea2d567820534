/*
 * lib/box_binds.c: --grant NAME and --binds FILE for `shell` and the agent launchers:
 * grants first, then bind files in the order given (a user's file wins), applied to the box
 * as extra mounts, PATH entries and variables, and the files' backends for the box's proxy.
 * Host credential files are never mounted.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binds/binds.h"
#include "jail/jail.h"
#include "proxy/proxy.h"

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
		    const struct lib_binds *lb)
{
	struct binds_grant_ctx ctx = {.home = jail_box_home(b), .cache = jail_box_cache_dir(b)};
	struct binds_set *s = NULL;
	int rc = 0;

	if (!n_grants && !lb->files)
		return 0;
	if (binds_set_new(&s) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n_grants && rc == 0; i++)
		if ((rc = binds_grant_add(s, grants[i], &ctx)) < 0 && rc != -ENOMEM)
			rc = lib_input_err(util_err(-EINVAL, "--grant: %s", util_err_msg()));
	/* The files after the grants: a file wins. */
	if (rc == 0 && lb->files)
		rc = binds_set_copy_into(s, lb->files);
	if (rc == 0)
		rc = apply_mounts(b, s, ctx.home);
	if (rc == 0)
		rc = apply_rest(b, s);
	binds_set_free(s);
	return rc;
}

/* $HOME as the box will have it (jail/box.c: the variable, else the password entry). */
static const char *host_home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h && h[0] == '/')
		return h;
	pw = getpwuid(getuid());
	return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

static int push(char ***v, size_t *n, char *s)
{
	char **grown = s ? realloc(*v, (*n + 2) * sizeof(**v)) : NULL;

	if (!grown) {
		free(s);
		return util_err(-ENOMEM, "out of memory");
	}
	*v = grown;
	grown[(*n)++] = s;
	grown[*n] = NULL;
	return 0;
}

/* rc, with the message "ORIGIN: MSG". */
static int prefixed(int rc, const char *origin, const char *msg)
{
	char *copy = strdup(msg);

	if (copy)
		util_err(rc, "%s: %s", origin, copy);
	free(copy);
	return rc;
}

/* A backend's specification and origin (both taken; NULL: -ENOMEM). */
static int add_backend(struct lib_binds *lb, char *spec, char *origin)
{
	size_t n = lb->n_backends;
	int rc = push(&lb->backends, &n, spec);

	if (rc < 0) {
		free(origin);
		return rc;
	}
	n = lb->n_backends;
	rc = push(&lb->origins, &n, origin);
	if (rc < 0) {
		free(lb->backends[lb->n_backends]);
		lb->backends[lb->n_backends] = NULL;
		return rc;
	}
	lb->n_backends = n;
	return 0;
}

/* Whether real path f is at or below dir (or dir's real path). */
static bool under(const char *f, const char *dir)
{
	char real[PATH_MAX];

	return util_path_under(f, dir) || (realpath(dir, real) && util_path_under(f, real));
}

/* Whether the box may write the file at real path f: under one of the writable folders
 * (the state folder, --mount rw sources) or an rw or overlay entry of the files. */
static bool box_writable(const struct binds_set *s, const char *f, const char *const *writable,
			 size_t n_writable)
{
	size_t n;
	const struct binds_mount *m = binds_set_mounts(s, &n);

	for (size_t i = 0; i < n_writable; i++)
		if (writable[i] && under(f, writable[i]))
			return true;
	for (size_t i = 0; i < n; i++)
		if ((m[i].kind == BINDS_RW || m[i].kind == BINDS_OVERLAY) && under(f, m[i].path))
			return true;
	return false;
}

/* A file's backend: trusted, a specification the proxy takes, not one given already. */
static int add_file_backend(struct lib_binds *lb, const struct binds_backend *fb,
			    const char *const *writable, size_t n_writable)
{
	struct proxy_backend *pb = NULL;
	int rc;

	if (box_writable(lb->files, fb->file, writable, n_writable))
		return lib_input_err(util_err(
		    -EPERM,
		    "--binds %s: backends: %s is a file the box can write; a backend from it "
		    "could send host credentials anywhere (give it with --backend, or keep the "
		    "bind file outside the workspace)",
		    fb->origin, fb->file));
	rc = proxy_backend_parse(&pb, fb->spec);
	proxy_backend_free(pb);
	if (rc < 0)
		return rc == -ENOMEM ? rc
				     : lib_input_err(util_err(rc, "--binds %s: backends: %s",
							      fb->origin, util_err_msg()));
	for (size_t i = 0; i < lb->n_given; i++) {
		const char *g = lb->backends[i];
		size_t gl = strcspn(g, "=,");

		if (gl == strlen(fb->name) && !memcmp(g, fb->name, gl))
			return push(&lb->notes, &lb->n_notes,
				    util_asprintf("%s of --binds %s: replaced by --backend "
						  "%s (the command line wins)",
						  fb->name, fb->origin, fb->name));
	}
	return add_backend(lb, strdup(fb->spec), util_asprintf("--binds %s", fb->origin));
}

int lib_binds_load(struct lib_binds *lb, const char *const *files, size_t n_files,
		   const char *const *given, size_t n_given, const char *const *writable,
		   size_t n_writable)
{
	const struct binds_backend *fb;
	size_t n = 0;
	int rc = 0;

	*lb = (struct lib_binds){0};
	for (size_t i = 0; rc == 0 && i < n_given; i++)
		rc = add_backend(lb, strdup(given[i]), strdup("--backend"));
	lb->n_given = lb->n_backends;
	if (rc == 0 && n_files)
		rc = binds_set_new(&lb->files);
	for (size_t i = 0; i < n_files && rc == 0; i++)
		if ((rc = binds_file_load(lb->files, files[i], host_home())) < 0 && rc != -ENOMEM)
			rc = lib_input_err(util_err(-EINVAL, "--binds %s", util_err_msg()));
	fb = rc == 0 && lb->files ? binds_set_backends(lb->files, &n) : NULL;
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = add_file_backend(lb, &fb[i], writable, n_writable);
	if (rc < 0)
		lib_binds_release(lb);
	return rc;
}

int lib_binds_blame(const struct lib_binds *lb, int rc)
{
	const char *msg = util_err_msg();

	if (!util_str_has_prefix(msg, "backend "))
		return rc;
	for (size_t i = lb->n_given; i < lb->n_backends; i++) {
		const char *spec = lb->backends[i];
		size_t n = strcspn(spec, "=,");

		if (!strncmp(msg + 8, spec, n) && msg[8 + n] && strchr(": ", msg[8 + n]))
			return prefixed(rc, lb->origins[i], msg);
	}
	return rc;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void lib_binds_release(struct lib_binds *lb)
{
	binds_set_free(lb->files);
	strv_free(lb->backends);
	strv_free(lb->origins);
	strv_free(lb->notes);
	free(lb->explain_json);
	*lb = (struct lib_binds){0};
}
