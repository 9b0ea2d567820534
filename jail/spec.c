/* jail/spec.c: --mount SPEC: TYPE:dest or TYPE:source:dest (the seed's rules). */
#include "jail/jail_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const type_names[] = {
    [JAIL_MOUNT_RO] = "ro",	      [JAIL_MOUNT_RW] = "rw",
    [JAIL_MOUNT_TMPFS] = "tmpfs",     [JAIL_MOUNT_DEV] = "dev",
    [JAIL_MOUNT_PROC] = "proc",	      [JAIL_MOUNT_DIR] = "dir",
    [JAIL_MOUNT_OVERLAY] = "overlay", [JAIL_MOUNT_SYMLINK] = "symlink",
};

/* What a user may write ("dir" is internal), in the order messages list them. */
static const enum jail_mount_type user_types[] = {
    JAIL_MOUNT_RO,    JAIL_MOUNT_RW,  JAIL_MOUNT_OVERLAY,
    JAIL_MOUNT_TMPFS, JAIL_MOUNT_DEV, JAIL_MOUNT_PROC,
};
#define USER_TYPES "ro, rw, overlay, tmpfs, dev, proc"

const char *jail_mount_type_name(enum jail_mount_type t)
{
	return (size_t)t < ARB_ARRAY_LEN(type_names) ? type_names[t] : "?";
}

void jail_spec_clear(struct jail_spec *s)
{
	free(s->src);
	free(s->dest);
	s->src = s->dest = NULL;
}

#define SPEC_FORMS "expected TYPE:dest or TYPE:source:dest"

static int parse_type(const char *text, const char *type, size_t len, enum jail_mount_type *out)
{
	for (size_t i = 0; i < ARB_ARRAY_LEN(user_types); i++) {
		const char *name = type_names[user_types[i]];

		if (strlen(name) == len && !strncmp(type, name, len)) {
			*out = user_types[i];
			return 0;
		}
	}
	if (len == 0)
		return util_err(-EINVAL, "--mount '%s': missing TYPE before ':' (one of %s)", text,
				USER_TYPES);
	return util_err(-EINVAL, "--mount '%s': unknown type '%.*s' (expected one of %s)", text,
			(int)len, type, USER_TYPES);
}

/* what: "source" or "destination". */
static int parse_path(const char *text, const char *what, const char *path, char **out)
{
	int rc;

	if (!*path)
		return util_err(-EINVAL, "--mount '%s': empty %s (%s)", text, what, SPEC_FORMS);
	if (path[0] != '/')
		return util_err(-EINVAL, "--mount '%s': %s '%s' is not an absolute path", text,
				what, path);
	rc = jail_path_norm(path, out);
	if (rc == -EINVAL)
		return util_err(-EINVAL, "--mount '%s': %s '%s' must not contain '.' or '..'", text,
				what, path);
	return rc == -ENOMEM ? util_err(rc, "out of memory") : rc;
}

static int check_source(const char *text, const char *src, bool implicit)
{
	struct stat st;

	if (stat(src, &st) == 0)
		return 0;
	if (errno == ENOENT)
		return util_err(-EINVAL, "--mount '%s': %s '%s' does not exist%s", text,
				implicit ? "path" : "source", src,
				implicit ? " (TYPE:dest binds the destination path itself)" : "");
	return util_err(-EINVAL, "--mount '%s': cannot use source '%s': %s", text, src,
			strerror(errno));
}

int jail_spec_parse(const char *text, struct jail_spec *out)
{
	const char *c1 = strchr(text, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	bool bind;
	int rc;

	*out = (struct jail_spec){0};
	if (!*text)
		return util_err(-EINVAL, "--mount '': empty spec (%s)", SPEC_FORMS);
	if (!c1)
		return util_err(-EINVAL, "--mount '%s': missing ':' (%s)", text, SPEC_FORMS);
	if (c2 && strchr(c2 + 1, ':'))
		return util_err(-EINVAL,
				"--mount '%s': too many ':' (%s; paths cannot contain ':')", text,
				SPEC_FORMS);
	rc = parse_type(text, text, (size_t)(c1 - text), &out->type);
	if (rc < 0)
		return rc;
	bind = out->type == JAIL_MOUNT_RO || out->type == JAIL_MOUNT_RW ||
	       out->type == JAIL_MOUNT_OVERLAY;
	if (c2 && !bind)
		return util_err(-EINVAL,
				"--mount '%s': type '%s' takes only a destination (%s:dest)", text,
				type_names[out->type], type_names[out->type]);
	if (c2) {
		char *src = strndup(c1 + 1, (size_t)(c2 - c1 - 1));

		if (!src)
			return util_err(-ENOMEM, "out of memory");
		if (!*src)
			rc = util_err(-EINVAL,
				      "--mount '%s': empty source (write %s:dest to bind the "
				      "destination path itself)",
				      text, type_names[out->type]);
		else
			rc = parse_path(text, "source", src, &out->src);
		free(src);
	}
	if (rc == 0)
		rc = parse_path(text, "destination", c2 ? c2 + 1 : c1 + 1, &out->dest);
	if (rc == 0 && bind && !out->src) {
		out->src = strdup(out->dest);
		rc = out->src ? check_source(text, out->src, true)
			      : util_err(-ENOMEM, "out of memory");
	} else if (rc == 0 && bind) {
		rc = check_source(text, out->src, false);
	}
	if (rc < 0)
		jail_spec_clear(out);
	return rc;
}
