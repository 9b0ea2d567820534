/*
 * binds/file.c: loading bind files: paths expanded and checked, includes expanded in place
 * before the including file's own keys (cycles and depth refused), every `path` entry
 * covered by a mount of the same file.
 */
#include "binds/binds_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Normalises absolute `path` into a new string; -EINVAL for "." or ".." components. */
static int norm(const char *path, char **out)
{
	size_t o = 0;
	char *buf = malloc(strlen(path) + 2);

	if (!buf)
		return util_err(-ENOMEM, "out of memory");
	for (const char *p = path; *p;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			free(buf);
			return util_err(-EINVAL, "path '%s' must not contain '.' or '..'", path);
		}
		buf[o++] = '/';
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	if (!o)
		buf[o++] = '/';
	buf[o] = '\0';
	*out = buf;
	return 0;
}

int binds_path_expand(const char *value, const char *home, const char *base_dir, char **out)
{
	char *joined = NULL;
	int rc;

	*out = NULL;
	if (!*value)
		return util_err(-EINVAL, "empty path");
	if (value[0] == '~') {
		if (value[1] && value[1] != '/')
			return util_err(-EINVAL,
					"'%s': only '~' and '~/...' are expanded (~user is not)",
					value);
		if (!home || home[0] != '/')
			return util_err(-EINVAL, "'%s': no absolute $HOME to expand '~'", value);
		joined = util_asprintf("%s/%s", home, value + 1);
	} else if (value[0] == '/') {
		joined = strdup(value);
	} else if (base_dir) {
		joined = util_asprintf("%s/%s", base_dir, value);
	} else {
		return util_err(-EINVAL, "'%s' is not an absolute path (write /... or ~/...)",
				value);
	}
	if (!joined)
		return util_err(-ENOMEM, "out of memory");
	/* Include paths are resolved with realpath(): "." and ".." are fine there. */
	if (base_dir) {
		*out = joined;
		return 0;
	}
	rc = norm(joined, out);
	if (rc == -EINVAL)
		rc = util_err(-EINVAL, "'%s' must not contain '.' or '..' components", value);
	free(joined);
	return rc;
}

/* The files being loaded, outermost first: their real paths (cycle detection). */
struct stack {
	char *real[BINDS_MAX_DEPTH + 1];
	size_t n;
};

static int load(struct binds_set *s, const char *name, const char *text, size_t len,
		const char *home, struct stack *st);

/* The directory of a file name, for relative includes; "." when it has none. */
static char *dir_of(const char *name)
{
	const char *slash = strrchr(name, '/');

	if (!slash)
		return strdup(".");
	if (slash == name)
		return strdup("/");
	return strndup(name, (size_t)(slash - name));
}

static int load_include(struct binds_set *s, const struct binds_item *it, const char *name,
			const char *home, struct stack *st)
{
	char *dir = dir_of(name), *abs_dir = NULL, *path = NULL, *text = NULL;
	char real[PATH_MAX];
	size_t len = 0;
	int rc;

	if (!dir)
		return util_err(-ENOMEM, "out of memory");
	/* Relative includes are relative to the including file's directory. */
	if (dir[0] != '/') {
		char cwd[PATH_MAX];

		abs_dir = getcwd(cwd, sizeof(cwd)) ? util_path_join(cwd, dir) : NULL;
	} else {
		abs_dir = strdup(dir);
	}
	rc = abs_dir ? binds_path_expand(it->value, home, abs_dir, &path)
		     : util_err(-ENOMEM, "cannot resolve the directory of %s", name);
	if (rc < 0) {
		rc = binds_err_prefix(rc, "%s:%u:%u: include ", name, it->line, it->col);
		goto out;
	}
	if (!realpath(path, real)) {
		rc = util_err(-errno, "%s:%u:%u: include '%s': %s", name, it->line, it->col, path,
			      strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < st->n; i++)
		if (!strcmp(st->real[i], real)) {
			rc = util_err(-ELOOP,
				      "%s:%u:%u: include cycle: '%s' is already being loaded", name,
				      it->line, it->col, it->value);
			goto out;
		}
	if (st->n >= BINDS_MAX_DEPTH) {
		rc = util_err(-ELOOP, "%s:%u:%u: includes nest more than %d deep", name, it->line,
			      it->col, BINDS_MAX_DEPTH);
		goto out;
	}
	rc = util_read_file(path, &text, &len);
	if (rc < 0) {
		rc = util_err(rc, "%s:%u:%u: include '%s': %s", name, it->line, it->col, path,
			      strerror(-rc));
		goto out;
	}
	rc = load(s, path, text, len, home, st);
out:
	free(text);
	free(path);
	free(abs_dir);
	free(dir);
	return rc;
}

static enum binds_kind kind_of(enum binds_key k)
{
	return k == BINDS_KEY_RO	? BINDS_RO
	       : k == BINDS_KEY_RW	? BINDS_RW
	       : k == BINDS_KEY_OVERLAY ? BINDS_OVERLAY
					: BINDS_TMPFS;
}

/*
 * An mcp = [...] entry: "*", a server name, a command as the client's config writes it, or
 * its full path ("~/" allowed; the launcher expands it when it matches). Not empty, no
 * control characters, at most 255 bytes.
 */
static int mcp_select_check(const char *v)
{
	if (!*v)
		return util_err(-EINVAL, "an empty entry (use \"*\" for all local servers)");
	if (strlen(v) > 255)
		return util_err(-EINVAL, "an entry longer than 255 bytes");
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return util_err(-EINVAL, "a control character in '%s'", v);
	return 0;
}

/* This file's backends = [...]: each name once in a file; real: the file's real path. */
static int own_backends(struct binds_set *s, const struct binds_doc *d, const char *name,
			const char *home, const char *real)
{
	int rc = 0;

	for (size_t i = 0; i < d->n && rc == 0; i++) {
		const struct binds_item *it = &d->v[i];
		char *bname = NULL, *spec = NULL, *origin = NULL;

		if (it->key != BINDS_KEY_BACKENDS)
			continue;
		rc = binds_backend_check(it->value, home, &bname, &spec);
		if (rc < 0) {
			rc = binds_err_prefix(rc, "%s:%u:%u: backends: ", name, it->line, it->col);
			break;
		}
		for (size_t j = 0; j < i && rc == 0; j++)
			if (d->v[j].key == BINDS_KEY_BACKENDS &&
			    !strncmp(d->v[j].value, bname, strlen(bname)) &&
			    strchr("=,", d->v[j].value[strlen(bname)]))
				rc = util_err(-EINVAL,
					      "%s:%u:%u: backends: backend %s is listed twice in "
					      "this file",
					      name, it->line, it->col, bname);
		origin = util_asprintf("%s:%u:%u", name, it->line, it->col);
		if (rc == 0)
			rc = origin ? binds_set_add_backend(s, bname, spec, origin, real)
				    : util_err(-ENOMEM, "out of memory");
		free(origin);
		free(spec);
		free(bname);
	}
	return rc;
}

/* This file's own mounts, PATH entries (each covered by one of its mounts) and variables. */
static int own_keys(struct binds_set *s, const struct binds_doc *d, const char *name,
		    const char *home)
{
	struct binds_dir *block = calloc(d->n + 1, sizeof(*block));
	char **mounts = calloc(d->n + 1, sizeof(*mounts));
	size_t nb = 0, nm = 0;
	int rc = block && mounts ? 0 : util_err(-ENOMEM, "out of memory");

	/* Mounts first, so that a path entry may come before the mount covering it. */
	for (size_t i = 0; i < d->n && rc == 0; i++) {
		const struct binds_item *it = &d->v[i];
		char *p = NULL, *origin = NULL;

		if (it->key != BINDS_KEY_RO && it->key != BINDS_KEY_RW &&
		    it->key != BINDS_KEY_TMPFS && it->key != BINDS_KEY_OVERLAY)
			continue;
		rc = binds_path_expand(it->value, home, NULL, &p);
		if (rc < 0) {
			rc = binds_err_prefix(rc, "%s:%u:%u: %s: ", name, it->line, it->col,
					      binds_key_name(it->key));
			break;
		}
		for (size_t j = 0; j < nm && rc == 0; j++)
			if (!strcmp(mounts[j], p))
				rc = util_err(-EINVAL,
					      "%s:%u:%u: %s: %s is listed twice in this file", name,
					      it->line, it->col, binds_key_name(it->key), p);
		origin = util_asprintf("%s:%u:%u", name, it->line, it->col);
		if (rc == 0)
			rc = origin ? binds_set_add_mount(s, kind_of(it->key), p, origin)
				    : util_err(-ENOMEM, "out of memory");
		free(origin);
		if (rc == 0)
			mounts[nm++] = p;
		else
			free(p);
	}
	for (size_t i = 0; i < d->n && rc == 0; i++) {
		const struct binds_item *it = &d->v[i];
		char *p = NULL;
		bool covered = false;

		if (it->key != BINDS_KEY_PATH)
			continue;
		rc = binds_path_expand(it->value, home, NULL, &p);
		if (rc < 0) {
			rc = binds_err_prefix(rc, "%s:%u:%u: path: ", name, it->line, it->col);
			break;
		}
		for (size_t j = 0; j < nm && !covered; j++)
			covered = util_path_under(p, mounts[j]);
		if (!covered) {
			rc = util_err(-EINVAL,
				      "%s:%u:%u: path: %s is not covered by an ro, rw, overlay or "
				      "tmpfs entry "
				      "of this file (path grants no filesystem access by itself)",
				      name, it->line, it->col, p);
			free(p);
			break;
		}
		block[nb].dir = p;
		block[nb].origin = util_asprintf("%s:%u:%u", name, it->line, it->col);
		if (!block[nb++].origin)
			rc = util_err(-ENOMEM, "out of memory");
	}
	if (rc == 0 && nb)
		rc = binds_set_prepend_path(s, block, nb);
	for (size_t i = 0; i < d->n && rc == 0; i++) {
		const struct binds_item *it = &d->v[i];
		char *origin;

		if (it->key != BINDS_KEY_ENV)
			continue;
		origin = util_asprintf("%s:%u:%u", name, it->line, it->col);
		rc = origin ? binds_set_add_env(s, it->name, it->value, origin)
			    : util_err(-ENOMEM, "out of memory");
		free(origin);
	}
	for (size_t i = 0; i < d->n && rc == 0; i++) {
		const struct binds_item *it = &d->v[i];
		char *origin;

		if (it->key != BINDS_KEY_MCP)
			continue;
		rc = mcp_select_check(it->value);
		if (rc < 0) {
			rc = binds_err_prefix(rc, "%s:%u:%u: mcp: ", name, it->line, it->col);
			break;
		}
		origin = util_asprintf("%s:%u:%u", name, it->line, it->col);
		rc = origin ? binds_set_add_mcp(s, it->value, origin)
			    : util_err(-ENOMEM, "out of memory");
		free(origin);
	}
	for (size_t i = 0; block && i < nb; i++) {
		free((char *)block[i].dir);
		free((char *)block[i].origin);
	}
	for (size_t i = 0; mounts && i < nm; i++)
		free(mounts[i]);
	free(block);
	free(mounts);
	return rc;
}

static int load(struct binds_set *s, const char *name, const char *text, size_t len,
		const char *home, struct stack *st)
{
	struct binds_doc d;
	char real[PATH_MAX];
	int rc;

	if (memchr(text, '\0', len)) {
		const char *nul = memchr(text, '\0', len);
		unsigned line = 1, col = 1;

		for (const char *p = text; p < nul; p++) {
			if (*p == '\n')
				line++, col = 1;
			else if ((*p & 0xc0) != 0x80)
				col++;
		}
		return util_err(-EINVAL, "%s:%u:%u: NUL byte in a bind file", name, line, col);
	}
	rc = binds_toml_parse(name, text, len, &d);
	if (rc < 0)
		return rc;
	st->real[st->n] = realpath(name, real) ? strdup(real) : strdup(name);
	if (!st->real[st->n]) {
		binds_doc_clear(&d);
		return util_err(-ENOMEM, "out of memory");
	}
	st->n++;
	for (size_t i = 0; i < d.n && rc == 0; i++)
		if (d.v[i].key == BINDS_KEY_INCLUDE)
			rc = load_include(s, &d.v[i], name, home, st);
	if (rc == 0)
		rc = own_keys(s, &d, name, home);
	if (rc == 0)
		rc = own_backends(s, &d, name, home, st->real[st->n - 1]);
	free(st->real[--st->n]);
	binds_doc_clear(&d);
	return rc;
}

int binds_text_load(struct binds_set *s, const char *name, const char *text, size_t len,
		    const char *home)
{
	struct binds_set *scratch = NULL;
	struct stack st = {.n = 0};
	int rc = binds_set_new(&scratch);

	/* Into a scratch set first, so that a failure leaves s as it was. */
	if (rc == 0)
		rc = load(scratch, name, text, len, home, &st);
	if (rc == 0)
		rc = binds_set_copy_into(s, scratch);
	binds_set_free(scratch);
	return rc;
}

int binds_file_load(struct binds_set *s, const char *file, const char *home)
{
	char *text = NULL;
	size_t len = 0;
	int rc = util_read_file(file, &text, &len);

	if (rc < 0)
		return util_err(rc, "%s: cannot read: %s", file, strerror(-rc));
	rc = binds_text_load(s, file, text, len, home);
	free(text);
	return rc;
}
