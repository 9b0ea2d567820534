/*
 * proxy/url_lite.c: the launcher's check of an upstream URL, without libcurl (proxy/url.c is
 * the proxy's, with it; arborinth_proxy checks every URL again before the box starts). It
 * takes what url.c takes, and may take more: the launcher only reads ports and names from a
 * backend.
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <string.h>

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
	return 0;
}
