/*
 * cli/shell_proxy.c: `shell --backend`: the credential proxy for one box. The proxy runs in
 * this process (threads) for as long as the box does; the box gets the proxy's socket
 * directory read-only, a relay hook for box-init and the backends' base URLs and placeholders.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "jail/jail.h"
#include "proxy/proxy.h"

#define BOX_PROXY_DIR "/run/arborinth-proxy"

int cli_proxy_start(struct proxy **out, const struct core_ws *ws, const char *const *specs,
		    size_t n, const char *key_file, bool listen)
{
	struct proxy_config cfg = {0};
	char *dir = NULL, *sock = NULL;
	size_t made = 0;
	int rc = -ENOMEM;

	*out = NULL;
	if (n == 0)
		return 0;
	if (key_file && n != 1)
		return util_err(-EINVAL, "--api-key-file needs exactly one --backend (else give "
					 "key-file= in each)");
	cfg.backends = calloc(n, sizeof(*cfg.backends));
	if (!cfg.backends)
		goto out;
	for (; made < n; made++) {
		rc = proxy_backend_parse(&cfg.backends[made], specs[made]);
		if (rc < 0)
			goto out;
	}
	if (key_file) {
		rc = proxy_backend_set(cfg.backends[0], "key-file", key_file);
		if (rc < 0)
			goto out;
	}
	cfg.n_backends = n;
	if (listen) {
		dir = util_path_join(ws->run, "proxy");
		sock = dir ? util_path_join(dir, "proxy.sock") : NULL;
		rc = sock ? util_mkdir_p(dir, 0700) : util_err(-ENOMEM, "out of memory");
		if (rc < 0)
			goto out;
		cfg.socket_path = sock;
	}
	rc = proxy_new(out, &cfg);
	if (rc == 0)
		cfg.backends = NULL; /* the proxy owns them now */
out:
	if (cfg.backends) {
		for (size_t i = 0; i < made; i++)
			proxy_backend_free(cfg.backends[i]);
		free(cfg.backends);
	}
	free(sock);
	free(dir);
	return rc;
}

int cli_proxy_box_setup(struct proxy *px, struct jail_box *b, const struct core_ws *ws)
{
	char *dir = util_path_join(ws->run, "proxy"), *relay = NULL, **env = NULL;
	size_t n = 0, off = 0, cap = 64;
	const uint16_t *ports = proxy_ports(px, &n);
	int rc = dir ? 0 : util_err(-ENOMEM, "out of memory");

	relay = calloc(1, cap + 8 * n);
	if (rc == 0 && !relay)
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++)
		off += (size_t)sprintf(relay + off, "%s%u", i ? "," : "", ports[i]);
	if (rc == 0)
		sprintf(relay + off, "=%s/proxy.sock", BOX_PROXY_DIR);
	if (rc == 0)
		rc = jail_box_add_default_mount(b, JAIL_MOUNT_RO, dir, BOX_PROXY_DIR,
						"the credential proxy's socket (relayed to "
						"127.0.0.1 by box-init)");
	if (rc == 0)
		rc = jail_box_add_init_hook(b, "relay", relay);
	if (rc == 0)
		rc = proxy_box_env(px, &env);
	for (char **e = env; e && *e; e++) {
		if (rc == 0)
			rc = jail_box_add_env(b, *e);
		free(*e);
	}
	free(env);
	free(relay);
	free(dir);
	return rc;
}
