/*
 * proxy/hostspec.c: the --allow-host specification, HOST[:PORT] (also read by the launcher,
 * which checks a box's options before the proxy starts; proxy/egress.c serves the tunnels).
 */
#include "proxy/proxy_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define HOST_MAX 253

static bool dns_name_ok(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > HOST_MAX || h[0] == '.' || h[0] == '-' || strstr(h, ".."))
		return false;
	for (const char *s = h; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-._", *s))
			return false;
	return true;
}

int proxy_port_parse(const char *s, uint16_t *out)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

int proxy_allow_host_parse(const char *spec, char **host, uint16_t *port)
{
	const char *end, *colon;
	char *h = NULL;
	struct in6_addr a6;
	int rc = 0;

	*host = NULL;
	*port = 443;
	if (spec[0] == '[') {
		end = strchr(spec, ']');
		if (!end || (end[1] && end[1] != ':'))
			return util_err(-EINVAL, "allowed host '%s' is not [IPV6]:PORT", spec);
		h = strndup(spec + 1, (size_t)(end - spec - 1));
		if (h && inet_pton(AF_INET6, h, &a6) != 1)
			rc = util_err(-EINVAL, "allowed host '%s': bad IPv6 address", spec);
		colon = end[1] ? end + 1 : NULL;
	} else {
		colon = strchr(spec, ':');
		if (colon && strchr(colon + 1, ':'))
			return util_err(-EINVAL,
					"allowed host '%s': put an IPv6 address in brackets", spec);
		h = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
		if (h && !dns_name_ok(h))
			rc = util_err(-EINVAL,
				      "allowed host '%s' is not HOST[:PORT] (HOST a DNS name or "
				      "an IP address)",
				      spec);
		for (char *s = h; s && *s; s++)
			*s = (char)tolower((unsigned char)*s);
	}
	if (!h)
		return util_err(-ENOMEM, "out of memory");
	if (rc == 0 && colon && proxy_port_parse(colon + 1, port) < 0)
		rc = util_err(-EINVAL, "allowed host '%s': port is not 1..65535", spec);
	if (rc < 0) {
		free(h);
		return rc;
	}
	*host = h;
	return 0;
}
