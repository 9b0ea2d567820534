/* jail/path.c: destination paths: normalising, containment, host resolution, mount order. */
#include "jail/jail_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int jail_path_norm(const char *path, char **out)
{
	size_t len = strlen(path), o = 0;
	char *buf;

	*out = NULL;
	if (path[0] != '/')
		return -EINVAL;
	buf = malloc(len + 2);
	if (!buf)
		return -ENOMEM;
	for (const char *p = path; *p;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			free(buf);
			return -EINVAL;
		}
		buf[o++] = '/';
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	if (o == 0)
		buf[o++] = '/';
	buf[o] = '\0';
	*out = buf;
	return 0;
}

char *jail_path_real(const char *path)
{
	char *copy = strdup(path), *res = NULL;
	char real[PATH_MAX];
	size_t len;

	if (!copy)
		return NULL;
	/* Shorten to the longest prefix that exists, resolve it, append the rest. */
	len = strlen(copy);
	for (;;) {
		if (realpath(copy, real)) {
			const char *rest = path + len;

			if (!strcmp(real, "/") && *rest == '/')
				res = strdup(rest);
			else
				res = util_asprintf("%s%s", real, rest);
			break;
		}
		char *slash = strrchr(copy, '/');

		if (!slash || slash == copy) {
			res = strdup(path);
			break;
		}
		*slash = '\0';
		len = (size_t)(slash - copy);
	}
	free(copy);
	return res;
}

int jail_path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; *x && *x == *y; x++, y++)
		;
	if (*x == *y)
		return 0;
	/* NUL < '/' < everything else: a directory, then its subtree, then its siblings. */
	int cx = *x == '/' ? 1 : *x ? *x + 1 : 0;
	int cy = *y == '/' ? 1 : *y ? *y + 1 : 0;

	return cx - cy;
}
