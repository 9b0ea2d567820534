/*
 * proxy/url_lite.c: the check of an upstream URL, without libcurl, in the launcher and in
 * arborinth_proxy (which opens libcurl only when the box's first request goes upstream, so
 * the check before the box starts cannot be libcurl's). It takes a narrow grammar that
 * libcurl parses the same way (tests/unit/check_proxy.c compares them): http or https, a
 * host of letters, digits and "-._~" or an IP literal in brackets, a port of 1 to 65535, a
 * path of printable ASCII with no space, quote, backslash, angle bracket, brace, bar, caret
 * or backquote; no credentials, query or fragment.
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* The host (reg-name or [IP literal]) and the port of [s, end), as libcurl reads them. */
static bool authority_ok(const char *s, const char *end)
{
	const char *colon;
	long port = 0;

	if (*s == '[') {
		const char *close = memchr(s, ']', (size_t)(end - s));

		if (!close || close == s + 1 ||
		    strspn(s + 1, "0123456789abcdefABCDEF:.") != (size_t)(close - s - 1))
			return false;
		colon = close + 1 < end ? close + 1 : NULL;
		if (colon && *colon != ':')
			return false;
	} else {
		size_t host = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					"0123456789-._~");

		if (host == 0 || host > 253)
			return false;
		colon = s + host < end ? s + host : NULL;
		if (colon && *colon != ':')
			return false;
	}
	if (!colon)
		return true;
	if (end - colon < 2 || end - colon > 6)
		return false;
	for (const char *d = colon + 1; d < end; d++) {
		if (*d < '0' || *d > '9')
			return false;
		port = port * 10 + (*d - '0');
	}
	return port >= 1 && port <= 65535;
}

int proxy_url_check(const char *name, const char *url)
{
	const char *rest = !strncmp(url, "https://", 8)	 ? url + 8
			   : !strncmp(url, "http://", 7) ? url + 7
							 : NULL;
	size_t host = rest ? strcspn(rest, "/") : 0;

	if (!strstr(url, "://") || (rest && host == 0))
		return util_err(-EINVAL, "backend %s: '%s' is not a URL", name, url);
	if (!rest)
		return util_err(-EINVAL, "backend %s: URL scheme must be http or https", name);
	if (strpbrk(url, "@?#,"))
		return util_err(
		    -EINVAL, "backend %s: URL must not have credentials, query or fragment", name);
	for (const char *c = rest; *c; c++)
		if (*c <= ' ' || *c >= 0x7f || strchr("\"\\<>{}|^`", *c))
			return util_err(-EINVAL, "backend %s: '%s' is not a URL", name, url);
	if (!authority_ok(rest, rest + host))
		return util_err(-EINVAL, "backend %s: '%s' is not a URL (host or port)", name, url);
	return 0;
}
