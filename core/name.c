/* core/name.c: workspace name rules. */
#include "core/core.h"
#include "core/core_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int not_a_branch(const char *name)
{
	return util_err(-EINVAL,
			"invalid workspace name '%s': not usable in a git branch name "
			"(refs/heads/arborinth/%s)",
			name, name);
}

int core_ws_name_check(const char *name)
{
	size_t len = strlen(name);

	if (len == 0)
		return util_err(-EINVAL, "invalid workspace name: it is empty");
	if (len > CORE_WS_NAME_MAX)
		return util_err(-EINVAL, "invalid workspace name: longer than %d bytes",
				CORE_WS_NAME_MAX);
	if (!util_utf8_valid(name, len))
		return util_err(-EINVAL, "invalid workspace name: not valid UTF-8");
	if (name[0] == '.')
		return util_err(-EINVAL, "invalid workspace name '%s': starts with '.'", name);
	if (strstr(name, ".."))
		return util_err(-EINVAL, "invalid workspace name '%s': contains '..'", name);
	for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
		if (*c == '/' || *c == '\\')
			return util_err(-EINVAL, "invalid workspace name '%s': contains '%c'", name,
					*c);
		if (*c < 0x20 || *c == 0x7f || *c == ' ')
			return util_err(-EINVAL,
					"invalid workspace name: contains whitespace or a control "
					"character");
		if (strchr("<>:\"|?*", *c))
			return util_err(-EINVAL, "invalid workspace name '%s': contains '%c'", name,
					*c);
	}
	/* Unicode whitespace (NBSP, U+2000..U+200A, U+2028/9, U+3000, ...) counts too. */
	static const char *const wide_spaces[] = {
	    "\xc2\x85",	    "\xc2\xa0",	    "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81",
	    "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86",
	    "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8",
	    "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80", "\xef\xbb\xbf",
	};
	for (size_t i = 0; i < ARB_ARRAY_LEN(wide_spaces); i++)
		if (strstr(name, wide_spaces[i]))
			return util_err(-EINVAL,
					"invalid workspace name: contains whitespace or a control "
					"character");
	/*
	 * The name also becomes refs/heads/arborinth/NAME and the remote arborinth/NAME: git's
	 * rules for one component of a ref name not checked above (git-check-ref-format(1)).
	 */
	if (strpbrk(name, "~^[") || strstr(name, "@{") || name[len - 1] == '.' ||
	    (len >= 5 && !strcmp(name + len - 5, ".lock")))
		return not_a_branch(name);
	return 0;
}

int core_ws_name_check_new(const char *name)
{
	char ref[CORE_WS_NAME_MAX + 32];
	int valid = 0;
	int rc = core_ws_name_check(name);

	if (rc < 0)
		return rc;
	snprintf(ref, sizeof(ref), "refs/heads/arborinth/%s", name);
	core_git_ready();
	rc = git_reference_name_is_valid(&valid, ref);
	return rc < 0 || !valid ? not_a_branch(name) : 0;
}
