/*
 * binds/backends.c: a bind file's backends = [...] entries. Each is a credential proxy
 * backend's specification as `--backend SPEC` takes it (the proxy checks the rest); here its
 * name, its shape, and the paths of its file options, which follow the bind file's rules for
 * paths (absolute or "~/", no "." or ".." components) and are written back expanded.
 */
#include "binds/binds_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The options whose value is a host path (key-json=: FILE#/pointer). */
static const char *const path_opts[] = {"key-file", "token-file", "ca-file", "adc", "key-json"};

static bool is_path_opt(const char *key, size_t n)
{
	for (size_t i = 0; i < ARB_ARRAY_LEN(path_opts); i++)
		if (strlen(path_opts[i]) == n && !memcmp(path_opts[i], key, n))
			return true;
	return false;
}

static int name_check(const char *spec, size_t n)
{
	if (n == 0 || n > 32 || spec[0] < 'a' || spec[0] > 'z' ||
	    strspn(spec, "abcdefghijklmnopqrstuvwxyz0123456789-") < n)
		return util_err(-EINVAL, "'%.*s' is not a backend name (1-32 of a-z, 0-9, '-')",
				(int)(n > 64 ? 64 : n), spec);
	return 0;
}

/* Appends option `opt` (n bytes, KEY=VALUE) to out, its path expanded when it has one. */
static int add_option(char **out, const char *opt, size_t n, const char *home)
{
	const char *eq = memchr(opt, '=', n);
	char *value = NULL, *path = NULL, *more = NULL, *hash;
	size_t kl = eq ? (size_t)(eq - opt) : 0;
	int rc = 0;

	if (!eq || kl == 0 || strspn(opt, "abcdefghijklmnopqrstuvwxyz-") < kl)
		return util_err(-EINVAL, "option '%.*s' is not KEY=VALUE", (int)n, opt);
	value = strndup(eq + 1, n - kl - 1);
	if (!value)
		return util_err(-ENOMEM, "out of memory");
	hash = kl == 8 && !memcmp(opt, "key-json", 8) ? strrchr(value, '#') : NULL;
	if (hash)
		*hash = '\0';
	if (is_path_opt(opt, kl)) {
		rc = binds_path_expand(value, home, NULL, &path);
		if (rc < 0)
			rc = binds_err_prefix(rc, "%.*s: ", (int)kl, opt);
	}
	if (rc == 0) {
		more = util_asprintf("%s,%.*s=%s%s%s", *out, (int)kl, opt, path ? path : value,
				     hash ? "#" : "", hash ? hash + 1 : "");
		rc = more ? 0 : util_err(-ENOMEM, "out of memory");
	}
	if (more) {
		free(*out);
		*out = more;
	}
	free(path);
	free(value);
	return rc;
}

int binds_backend_check(const char *value, const char *home, char **name, char **spec)
{
	size_t n = strcspn(value, "=,"), len = strlen(value);
	const char *opts = strchr(value, ',');
	int rc = 0;

	*name = *spec = NULL;
	if (len > 4096)
		return util_err(-EINVAL, "a backend longer than 4096 bytes");
	for (const char *p = value; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return util_err(-EINVAL, "a control character in a backend");
	rc = name_check(value, n);
	if (rc < 0)
		return rc;
	*name = strndup(value, n);
	*spec = strndup(value, opts ? (size_t)(opts - value) : len);
	if (!*name || !*spec)
		rc = util_err(-ENOMEM, "out of memory");
	while (rc == 0 && opts) {
		const char *o = opts + 1, *next = strchr(o, ',');

		rc = add_option(spec, o, next ? (size_t)(next - o) : strlen(o), home);
		opts = next;
	}
	if (rc < 0) {
		free(*name);
		free(*spec);
		*name = *spec = NULL;
	}
	return rc;
}
