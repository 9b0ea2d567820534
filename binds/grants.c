/*
 * binds/grants.c: the built-in grants (node, python, rust, go).
 *
 * A grant makes a toolchain the host already has usable in a box with no network: its
 * installation read-only at its host path, its bin directories on PATH, and variables that
 * send every cache and build output into the workspace's own cache ($XDG_CACHE_HOME in the
 * box, which persists per workspace). Host caches are never mounted writable: a box that
 * could write the host's pip or npm cache could plant code the host runs later.
 */
#include "binds/binds_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * Entries: "ro ~/PATH" (a host path, read-only, skipped when missing), "path DIR" (put on
 * PATH when it exists), "env NAME=VALUE" ({home} and {cache} are replaced by $HOME and the
 * box's $XDG_CACHE_HOME).
 */
static const char *const node_items[] = {
    "ro ~/.nvm",
    "ro ~/.volta",
    "ro ~/.local/share/fnm",
    "ro ~/.local/share/pnpm",
    "ro ~/.npm-global/bin",
    "ro ~/.npm-global/lib",
    "ro ~/.bun/bin",
    "path ~/.volta/bin",
    "path ~/.local/share/pnpm",
    "path ~/.npm-global/bin",
    "path ~/.bun/bin",
    "env npm_config_cache={cache}/npm",
    "env npm_config_store_dir={cache}/pnpm-store",
    "env YARN_CACHE_FOLDER={cache}/yarn",
    "env COREPACK_HOME={cache}/corepack",
    "env npm_config_update_notifier=false",
    "env npm_config_fund=false",
    "env npm_config_audit=false",
    NULL,
};

static const char *const python_items[] = {
    "ro ~/.local/lib",
    "ro ~/.local/bin",
    "ro ~/.local/share/uv",
    "ro ~/.pyenv",
    "path ~/.local/bin",
    "path ~/.pyenv/shims",
    "path ~/.pyenv/bin",
    "env PIP_CACHE_DIR={cache}/pip",
    "env UV_CACHE_DIR={cache}/uv",
    "env PYENV_ROOT={home}/.pyenv",
    "env PIP_DISABLE_PIP_VERSION_CHECK=1",
    "env PIP_NO_INPUT=1",
    NULL,
};

static const char *const rust_items[] = {
    "ro ~/.rustup",
    "ro ~/.cargo/bin",
    "ro ~/.cargo/registry",
    "ro ~/.cargo/git",
    "path ~/.cargo/bin",
    "env RUSTUP_HOME={home}/.rustup",
    "env CARGO_HOME={home}/.cargo",
    "env CARGO_TARGET_DIR={cache}/cargo-target",
    "env CARGO_NET_OFFLINE=true",
    NULL,
};

static const char *const go_items[] = {
    "ro ~/go/pkg/mod",
    "ro ~/go/bin",
    "ro ~/sdk",
    "path ~/go/bin",
    "path /usr/local/go/bin",
    "env GOPATH={home}/go",
    "env GOMODCACHE={home}/go/pkg/mod",
    "env GOCACHE={cache}/go-build",
    "env GOPROXY=off",
    "env GOTOOLCHAIN=local",
    "env GOTELEMETRY=off",
    NULL,
};

static const struct binds_grant_info grants[] = {
    {"node",
     "Node.js: nvm/volta/fnm/pnpm/bun installs read-only; npm, yarn, pnpm and corepack "
     "caches in the workspace's cache",
     node_items},
    {"python",
     "Python: user site (~/.local/lib), pyenv and uv installs read-only; pip and uv "
     "caches in the workspace's cache",
     python_items},
    {"rust",
     "Rust: rustup toolchains and cargo's registry read-only; a writable target "
     "directory in the workspace's cache; cargo offline",
     rust_items},
    {"go",
     "Go: module cache and toolchains read-only; build cache in the workspace's cache; "
     "no module proxy",
     go_items},
};

const struct binds_grant_info *binds_grants(size_t *n)
{
	*n = ARB_ARRAY_LEN(grants);
	return grants;
}

/* Replaces {home} and {cache} in s. Caller frees. */
static char *subst(const char *s, const struct binds_grant_ctx *ctx)
{
	char *out = strdup(s);

	for (int pass = 0; out && pass < 2; pass++) {
		const char *tok = pass ? "{cache}" : "{home}", *val = pass ? ctx->cache : ctx->home;
		char *at = strstr(out, tok);

		if (at) {
			char *n =
			    util_asprintf("%.*s%s%s", (int)(at - out), out, val, at + strlen(tok));

			free(out);
			out = n;
		}
	}
	return out;
}

static int add_item(struct binds_set *s, const char *item, const char *origin,
		    const struct binds_grant_ctx *ctx, struct binds_dir *block, size_t *nb)
{
	const char *arg = strchr(item, ' ') + 1;
	char *path = NULL;
	struct stat st;
	int rc = 0;

	if (util_str_has_prefix(item, "env ")) {
		const char *eq = strchr(arg, '=');
		char *name = strndup(arg, (size_t)(eq - arg)), *value = subst(eq + 1, ctx);

		rc = name && value ? binds_set_add_env(s, name, value, origin)
				   : util_err(-ENOMEM, "out of memory");
		free(name);
		free(value);
		return rc;
	}
	rc = binds_path_expand(arg, ctx->home, NULL, &path);
	if (rc < 0)
		return rc;
	if (stat(path, &st) < 0) {
		free(path);
		return 0; /* the host has no such installation: nothing to grant */
	}
	if (util_str_has_prefix(item, "ro ")) {
		char *secret = NULL;

		if (util_secret_path(path, ctx->home, &secret))
			rc = binds_set_note(s, util_asprintf("%s: %s not mounted: it would expose "
							     "credentials (%s)",
							     origin, path, secret));
		else
			rc = binds_set_add_mount(s, BINDS_RO, path, origin);
		free(secret);
		free(path);
		return rc;
	}
	block[*nb].dir = path;
	block[*nb].origin = strdup(origin);
	if (!block[(*nb)++].origin)
		return util_err(-ENOMEM, "out of memory");
	return 0;
}

int binds_grant_add(struct binds_set *s, const char *name, const struct binds_grant_ctx *ctx)
{
	const struct binds_grant_info *g = NULL;
	struct binds_dir block[16] = {{0}};
	char *origin = NULL;
	size_t nb = 0;
	int rc = 0;

	for (size_t i = 0; i < ARB_ARRAY_LEN(grants) && !g; i++)
		if (!strcmp(grants[i].name, name))
			g = &grants[i];
	if (!g)
		return util_err(-ENOENT,
				"unknown grant '%s' (available: node, python, rust, go; see "
				"'arborinth grant list')",
				name);
	origin = util_asprintf("grant %s", name);
	if (!origin)
		return util_err(-ENOMEM, "out of memory");
	for (const char *const *it = g->items; *it && rc == 0; it++)
		rc = add_item(s, *it, origin, ctx, block, &nb);
	if (rc == 0 && nb)
		rc = binds_set_prepend_path(s, block, nb);
	for (size_t i = 0; i < nb; i++) {
		free((char *)block[i].dir);
		free((char *)block[i].origin);
	}
	free(origin);
	return rc;
}
