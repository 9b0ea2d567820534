/*
 * lib/box_walls.c: the credentials a box's proxy holds stay off the box's walls. Every host
 * file a backend reads its key from (key-file=, the file of key-json=), every login file and
 * the --api-key-file given are hidden wherever the box would show them (jail_box_hide: under
 * a system folder, a --mount, a grant or bind file that names a folder above them), and in
 * every box the folders where the proxies share the Vertex tokens they mint.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jail/jail.h"
#include "proxy/proxy.h"

/* Hides `path` (for key-json: up to its '#'); relative paths are the proxy's to refuse. */
static int hide(struct jail_box *b, const char *path, const char *why)
{
	char *file;
	int rc;

	if (!path || path[0] != '/')
		return 0;
	file = strndup(path, strcspn(path, "#"));
	rc = file ? jail_box_hide(b, file, why) : util_err(-ENOMEM, "out of memory");
	free(file);
	return rc;
}

/* The folders where the user's proxies share the tokens they mint (proxy/token_dir.c). */
static int hide_token_dirs(struct jail_box *b)
{
	char *rt = NULL, *st = NULL;
	int rc = proxy_token_dirs(&rt, &st);

	rc = rc ?: hide(b, rt, "the tokens the proxies share");
	rc = rc ?: hide(b, st, "the tokens the proxies share");
	free(rt);
	free(st);
	return rc;
}

int lib_box_hide_credentials(struct jail_box *b, struct proxy_proc *px, const char *key_file)
{
	const struct proxy_ready *r = proxy_proc_ready(px);
	int rc = hide(b, key_file, "the key file given to --api-key-file");

	for (size_t i = 0; r && rc == 0 && i < r->n_backends; i++) {
		const struct proxy_ready_backend *be = &r->backends[i];

		rc = hide(b, be->key_source, "a backend's key file (the proxy's)");
		if (rc == 0 && be->login_path)
			rc = hide(b, be->login_path, "a login the proxy holds");
	}
	/* In every box, with or without a vertex backend: a box whose bind file shows
	 * ~/.local/state must not read the tokens other boxes' proxies minted. */
	return rc ?: hide_token_dirs(b);
}
