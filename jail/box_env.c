/*
 * jail/box_env.c: the box's environment. Cleared, then rebuilt: allowlisted host variables
 * that do not look secret, the box's own paths, and what --env adds explicitly.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int jail_box_env_defaults(struct jail_box *b)
{
	for (size_t i = 0; i < b->host.n; i++) {
		const char *kv = b->host.v[i], *eq = strchr(kv, '=');
		char *name = eq ? strndup(kv, (size_t)(eq - kv)) : NULL;

		if (!eq)
			continue;
		if (!name)
			return util_err(-ENOMEM, "out of memory");
		if (jail_env_is_allowed(name))
			jail_env_set(&b->env, name, eq + 1);
		else
			jail_strv_take(&b->withheld, name), name = NULL;
		free(name);
	}
	if (!jail_env_get(b->env.v, "PATH"))
		jail_env_set(&b->env, "PATH", "/usr/local/bin:/usr/bin:/bin");
	jail_env_set(&b->env, "HOME", b->home);
	jail_env_set(&b->env, "XDG_CACHE_HOME", b->cache_dest);
	jail_env_set(&b->env, "XDG_RUNTIME_DIR", b->runtime_dir);
	jail_env_set(&b->env, "ARBORINTH_WORKSPACE", b->ws_name);
	return jail_strv_ok(&b->env) < 0 ? -ENOMEM : jail_strv_ok(&b->withheld);
}

int jail_box_add_env(struct jail_box *b, const char *arg)
{
	const char *eq = strchr(arg, '='), *value;
	char *name = eq ? strndup(arg, (size_t)(eq - arg)) : strdup(arg);
	int rc = 0;

	if (b->finished)
		rc = util_err(-EBUSY, "jail: the box is already finished");
	else if (!name)
		rc = util_err(-ENOMEM, "out of memory");
	else if (!jail_env_name_valid(name))
		rc = util_err(-EINVAL, "--env '%s': '%s' is not a valid variable name", arg, name);
	if (rc < 0)
		goto out;
	value = eq ? eq + 1 : jail_env_get(b->host.v, name);
	if (!value) {
		rc = util_err(-EINVAL,
			      "--env '%s': %s is not set in the host environment (write "
			      "%s=VALUE to set it)",
			      arg, name, name);
		goto out;
	}
	jail_env_set(&b->env, name, value);
	rc = jail_strv_ok(&b->env);
out:
	free(name);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts both lists; drops withheld names that --env passed after all, and duplicates. */
int jail_box_env_finish(struct jail_box *b)
{
	size_t o = 0;

	if (b->env.n)
		qsort(b->env.v, b->env.n, sizeof(char *), cmp_str);
	if (b->withheld.n)
		qsort(b->withheld.v, b->withheld.n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < b->withheld.n; i++) {
		char *w = b->withheld.v[i];

		if (jail_env_get(b->env.v, w) || (o > 0 && !strcmp(b->withheld.v[o - 1], w)))
			free(w);
		else
			b->withheld.v[o++] = w;
	}
	b->withheld.n = o;
	if (b->withheld.v)
		b->withheld.v[o] = NULL;
	return 0;
}
