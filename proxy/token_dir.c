/*
 * proxy/token_dir.c: where one user's proxies share the tokens they mint (token_cache.c):
 * $XDG_RUNTIME_DIR/arborinth/tokens (the session's tmpfs: gone at logout, never on disk),
 * else $XDG_STATE_HOME/arborinth/tokens (default ~/.local/state/arborinth/tokens: batch
 * boxes run from cron or CI have no session). The launcher hides both from every box with a
 * vertex backend (lib/box_walls.c); the proxy uses the first it can keep private. No
 * libcurl and no TLS: the launcher links this file.
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

int proxy_token_dirs(char **runtime, char **state)
{
	const char *rt = getenv("XDG_RUNTIME_DIR"), *st = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	bool oom;

	*runtime = *state = NULL;
	if (rt && rt[0] == '/')
		*runtime = util_asprintf("%s/arborinth/tokens", rt);
	if (st && st[0] == '/')
		*state = util_asprintf("%s/arborinth/tokens", st);
	else if (home && home[0] == '/')
		*state = util_asprintf("%s/.local/state/arborinth/tokens", home);
	oom = (rt && rt[0] == '/' && !*runtime) ||
	      (((st && st[0] == '/') || (home && home[0] == '/')) && !*state);
	if (!oom)
		return 0;
	free(*runtime);
	free(*state);
	*runtime = *state = NULL;
	return util_err(-ENOMEM, "out of memory");
}
