/*
 * binds: what a box gets beyond its default profile from grants (--grant NAME) and bind files
 * (--binds FILE): mounts of host paths, directories prepended to the box's PATH, and
 * environment variables, each with the place it came from.
 *
 * A bind file is TOML, of which this module parses a strict subset (no C TOML library is
 * packaged for Debian 12):
 *
 *   include = ["common.toml"]        # other bind files, expanded in place before this file
 *   ro      = ["~/depot_tools"]      # host paths bound read-only at their own path
 *   rw      = ["/srv/data"]          # host paths bound read-write at their own path
 *   tmpfs   = ["~/.cache/thing"]     # fresh empty directories
 *   overlay = ["~/data"]             # host paths the box may change, the changes kept in
 *                                    # the workspace (the host's copy never changes)
 *   path    = ["~/depot_tools"]      # prepended to the box's PATH; each must lie at or
 *                                    # below an ro/rw/overlay/tmpfs entry of the same file
 *   env     = { GOFLAGS = "-mod=mod" }   # or a [env] table
 *   mcp     = ["docs", "/opt/mcp/bin/search"]   # the host client's local (stdio) MCP
 *                                    # servers started in the box: by server name, by
 *                                    # command as written or by its full path; "*" is all
 *   backends = ["reapi=grpcs://rbe.example,instance=main,token-file=~/.config/rbe.token"]
 *                                    # credential proxy backends, each as `--backend SPEC`
 *                                    # says it; the paths of key-file=, token-file=,
 *                                    # ca-file=, adc= and key-json= absolute or "~/"
 *
 * Values are basic ("...") or literal ('...') single-line strings, arrays of them (which
 * may span lines, with comments and a trailing comma) and, for env, a table of strings.
 * Everything else (other keys, other tables, numbers, booleans, dates, multi-line strings,
 * dotted keys, duplicate keys) is refused with "FILE:LINE:COL: message". Paths must be
 * absolute or start with "~/" ("~" alone is $HOME) and may not contain "." or "..";
 * include paths may also be relative to the including file. Includes nest at most
 * BINDS_MAX_DEPTH deep and may not form a cycle.
 *
 * Precedence: later sources win. Grants are applied before bind files, files in the order
 * given, an included file before the file including it. A mount at the destination of an
 * earlier one replaces it; a variable set again replaces the earlier value; a later
 * source's PATH entries come before an earlier one's; a backend of the same name as an
 * earlier one replaces it (and `--backend` on the command line wins over every file: the
 * caller's rule).
 *
 * The module only reads files; it never prints and knows nothing about bubblewrap.
 */
#ifndef ARB_BINDS_H
#define ARB_BINDS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

#define BINDS_MAX_DEPTH 8

enum binds_kind {
	BINDS_RO,
	BINDS_RW,
	BINDS_TMPFS,
	BINDS_OVERLAY, /* writes land in the workspace; the host path never changes */
};

/* Strings are owned by the set and valid while it lives (until the entry is replaced). */
struct binds_mount {
	enum binds_kind kind;
	const char *path;   /* absolute, normalised; the host path and the box path */
	const char *origin; /* "FILE:LINE:COL" or "grant NAME" */
};

struct binds_dir {
	const char *dir; /* absolute, normalised */
	const char *origin;
};

struct binds_var {
	const char *name, *value;
	const char *origin;
};

/* A bind file's mcp = [...] entry: which of the host client's MCP servers the box starts. */
struct binds_mcp {
	const char *select; /* a server name, a command, a full path, or "*" */
	const char *origin;
};

/* A backends = [...] entry: a credential proxy backend's specification. */
struct binds_backend {
	const char *name;   /* the backend's name: the specification up to its first '=' or ',' */
	const char *spec;   /* the specification, its file options' paths expanded */
	const char *origin; /* "FILE:LINE:COL" */
	const char *file;   /* the real path of the bind file it came from (not an include's
			       includer): the caller decides whether that file is trusted */
};

struct binds_set;

int binds_set_new(struct binds_set **out) ARB_MUST_CHECK;
void binds_set_free(struct binds_set *s);

/* Mounts, one per path, in the order first added (a replaced entry keeps its place). */
const struct binds_mount *binds_set_mounts(const struct binds_set *s, size_t *n);
/* PATH entries in the order they go in front of the box's PATH (first = searched first). */
const struct binds_dir *binds_set_path(const struct binds_set *s, size_t *n);
/* Variables, one per name, in the order first set. */
const struct binds_var *binds_set_env(const struct binds_set *s, size_t *n);
/* The mcp = [...] entries of all bind files, in order, each once. */
const struct binds_mcp *binds_set_mcp(const struct binds_set *s, size_t *n);
/* The backends of all bind files, one per name, in the order first named. */
const struct binds_backend *binds_set_backends(const struct binds_set *s, size_t *n);
/* Adds everything of src to dst as if it had been added to dst directly (src later). */
int binds_set_copy_into(struct binds_set *dst, const struct binds_set *src) ARB_MUST_CHECK;
/* Notes for --explain (grant entries skipped because the host lacks them, ...). */
const char *const *binds_set_notes(const struct binds_set *s, size_t *n);

/*
 * Loads bind file `file` (and its includes) into s. `home` expands "~" (absolute). On
 * failure (-EINVAL syntax or rule, -ELOOP include cycle or depth, -errno reading) the
 * message starts with "FILE:LINE:COL: " where the problem is, and s is left as it was.
 */
int binds_file_load(struct binds_set *s, const char *file, const char *home) ARB_MUST_CHECK;
/*
 * The same for text already in memory (`len` bytes, NUL bytes refused), named `name` in
 * messages; includes are resolved relative to name's directory. The fuzz target's entry.
 */
int binds_text_load(struct binds_set *s, const char *name, const char *text, size_t len,
		    const char *home) ARB_MUST_CHECK;

/* ---- grants ----------------------------------------------------------------------------- */

/* A named bundle of mounts, PATH entries and variables for a toolchain. */
struct binds_grant_info {
	const char *name;
	const char *summary;
	const char *const *items; /* human-readable entries, NULL-terminated, for `grant list` */
};

/* The built-in grants; borrowed, static. */
const struct binds_grant_info *binds_grants(size_t *n);

/* Where the box's paths are, for grant entries. Strings borrowed. */
struct binds_grant_ctx {
	const char *home;  /* $HOME (the same path in the box as on the host) */
	const char *cache; /* the box's $XDG_CACHE_HOME (writable, the workspace's cache) */
};

/*
 * Adds grant `name` to s. Entries naming host paths that do not exist are skipped with a
 * note. -ENOENT with a message listing the grants when there is no such grant.
 */
int binds_grant_add(struct binds_set *s, const char *name,
		    const struct binds_grant_ctx *ctx) ARB_MUST_CHECK;

/*
 * Credential paths (util_secret_path in util/util.h: ~/.ssh, ~/.npmrc, ...): bind files and
 * grants may not mount one, nor a folder containing one (tmpfs may cover one).
 */

#endif
