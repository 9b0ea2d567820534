/*
 * proxy/url.c: an upstream URL checked with libcurl's own parser, in the proxy (the program
 * and the tests). The launcher links proxy/url_lite.c instead: it never loads libcurl, and the
 * proxy checks every URL again, with this one, before the box starts.
 */
#include "proxy/proxy_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <string.h>

int proxy_url_check(const char *name, const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *x = NULL;
	int rc = -EINVAL;

	if (!u)
		return util_err(-ENOMEM, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		rc = util_err(-EINVAL, "backend %s: '%s' is not a URL", name, url);
		goto out;
	}
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		rc = util_err(-EINVAL, "backend %s: URL scheme must be http or https", name);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &x, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_QUERY, &x, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_FRAGMENT, &x, 0) == CURLUE_OK || strchr(url, ',')) {
		rc = util_err(-EINVAL,
			      "backend %s: URL must not have credentials, query or fragment", name);
		goto out;
	}
	rc = 0;
out:
	curl_free(x);
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}
