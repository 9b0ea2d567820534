/* binds/binds_internal.h: what the files of binds/ share (and the unit tests reach). */
#ifndef ARB_BINDS_INTERNAL_H
#define ARB_BINDS_INTERNAL_H

#include "binds/binds.h"

struct binds_set {
	struct binds_mount *mounts;
	size_t n_mounts;
	struct binds_dir *path;
	size_t n_path;
	struct binds_var *env;
	size_t n_env;
	char **notes;
	size_t n_notes;
	struct binds_mcp *mcp;
	size_t n_mcp;
	struct binds_backend *backends;
	size_t n_backends;
};

/* Precedence rules of the set (binds.h); strings copied. 0 or -ENOMEM. */
int binds_set_add_mount(struct binds_set *s, enum binds_kind kind, const char *path,
			const char *origin) ARB_MUST_CHECK;
/* An mcp = [...] entry; one already there keeps its place and first origin. */
int binds_set_add_mcp(struct binds_set *s, const char *select, const char *origin) ARB_MUST_CHECK;
/* A backend: one of the same name already there is replaced (it keeps its place). */
int binds_set_add_backend(struct binds_set *s, const char *name, const char *spec,
			  const char *origin, const char *file) ARB_MUST_CHECK;
int binds_set_add_env(struct binds_set *s, const char *name, const char *value,
		      const char *origin) ARB_MUST_CHECK;
/* Puts block (in its order) in front of the PATH entries; duplicates keep the first place. */
int binds_set_prepend_path(struct binds_set *s, const struct binds_dir *block,
			   size_t n) ARB_MUST_CHECK;
/* Takes ownership of note (NULL: -ENOMEM). */
int binds_set_note(struct binds_set *s, char *note) ARB_MUST_CHECK;

/*
 * Replaces the current message (util_err_msg) with PREFIX + that message, where PREFIX is
 * formatted from fmt. Returns rc.
 */
int binds_err_prefix(int rc, const char *fmt, ...) ARB_PRINTF(2, 3);

/* ---- the TOML subset ------------------------------------------------------------------ */

enum binds_key {
	BINDS_KEY_RO,
	BINDS_KEY_RW,
	BINDS_KEY_TMPFS,
	BINDS_KEY_OVERLAY,
	BINDS_KEY_PATH,
	BINDS_KEY_INCLUDE,
	BINDS_KEY_MCP,
	BINDS_KEY_BACKENDS,
	BINDS_KEY_ENV, /* last: the parser sizes its tables by it */
};

/* One string of a document, in file order, with where its value starts (1-based). */
struct binds_item {
	enum binds_key key;
	char *name;  /* BINDS_KEY_ENV: the variable; else NULL */
	char *value; /* decoded, NUL-free */
	unsigned line, col;
};

struct binds_doc {
	struct binds_item *v;
	size_t n;
};

/*
 * Parses `len` bytes of `text` (named `name` in messages) into doc, in file order. Syntax
 * and schema errors: -EINVAL with "NAME:LINE:COL: message". Clear with binds_doc_clear().
 */
int binds_toml_parse(const char *name, const char *text, size_t len,
		     struct binds_doc *doc) ARB_MUST_CHECK;
void binds_doc_clear(struct binds_doc *doc);
/* "ro", "rw", "tmpfs", "overlay", "path", "include", "mcp", "backends", "env". */
const char *binds_key_name(enum binds_key k);

/*
 * Expands and checks a path value: "~" and "~/..." against home, absolute otherwise
 * (relative allowed only when `base_dir` is given: then it is joined to it, and left for
 * realpath() to resolve). Otherwise repeated and trailing slashes collapse and "." and ".."
 * components are refused. *out: caller frees.
 * -EINVAL with a message (no location: the caller adds it).
 */
int binds_path_expand(const char *value, const char *home, const char *base_dir,
		      char **out) ARB_MUST_CHECK;

/*
 * A backends = [...] entry (binds/backends.c): *name the backend's name, *spec the
 * specification with the paths of its file options expanded (home: "~"). Both malloc'd.
 * -EINVAL with a message (no location: the caller adds it).
 */
int binds_backend_check(const char *value, const char *home, char **name,
			char **spec) ARB_MUST_CHECK;

#endif
