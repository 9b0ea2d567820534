/*
 * proxy/args.c: arborinth_proxy's command line, made by the launcher and read by the program
 * with this one pair of functions (the only owner of its options), so they cannot drift.
 * Every option takes one value ("--tcp" and "--serve" none); repeated options keep their order.
 */
#include "proxy/proxy.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The options with a string value: name, and where it goes in struct proxy_args. */
#define STR_OPT(n, field)                                                                          \
	{                                                                                          \
		n, offsetof(struct proxy_args, field)                                              \
	}
static const struct {
	const char *name;
	size_t off;
} str_opts[] = {
    STR_OPT("--key-file", key_file),
    STR_OPT("--login-backend", login_backend),
    STR_OPT("--login-path", login_path),
    STR_OPT("--login-token-url", login_token_url),
    STR_OPT("--socket", socket_path),
    STR_OPT("--egress-socket", egress_socket_path),
    STR_OPT("--tls-socket", tls_socket_path),
    STR_OPT("--audit-db", audit_db),
    STR_OPT("--ws-id", ws_id),
    STR_OPT("--ws-name", ws_name),
};

static const char **str_field(struct proxy_args *a, size_t i)
{
	return (const char **)((char *)a + str_opts[i].off);
}

/* Appends one string (copied) to the growing argv; -ENOMEM. */
static int push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = s ? strdup(s) : NULL;
	if (!nv[*n])
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

static int push_int(char ***v, size_t *n, const char *opt, long x)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%ld", x);
	return push(v, n, opt) ?: push(v, n, buf);
}

int proxy_args_format(const struct proxy_args *a, const char *exe, char ***argv)
{
	char **v = NULL;
	size_t n = 0;
	int rc = push(&v, &n, exe);

	for (size_t i = 0; rc == 0 && i < a->n_backends; i++)
		rc = push(&v, &n, "--backend") ?: push(&v, &n, a->backends[i]);
	for (size_t i = 0; rc == 0 && i < a->n_allow_hosts; i++)
		rc = push(&v, &n, "--allow-host") ?: push(&v, &n, a->allow_hosts[i]);
	for (size_t i = 0; rc == 0 && i < ARB_ARRAY_LEN(str_opts); i++) {
		const char *s = *str_field((struct proxy_args *)a, i);

		if (s)
			rc = push(&v, &n, str_opts[i].name) ?: push(&v, &n, s);
	}
	if (rc == 0 && a->login_backend)
		rc = push_int(&v, &n, "--login-kind", a->login_kind);
	if (rc == 0 && a->tcp)
		rc = push(&v, &n, "--tcp");
	for (size_t i = 0; rc == 0 && a->tcp && i < a->n_backends; i++)
		rc = push_int(&v, &n, "--tcp-fd", a->tcp_fds ? a->tcp_fds[i] : -1)
			 ?: push_int(&v, &n, "--tcp-tls-fd",
				     a->tcp_tls_fds ? a->tcp_tls_fds[i] : -1);
	if (rc == 0 && a->serve)
		rc = push(&v, &n, "--serve");
	if (rc == 0)
		rc = push_int(&v, &n, "--ready-fd", a->ready_fd)
			 ?: push_int(&v, &n, "--control-fd", a->control_fd);
	if (rc < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return util_err(-ENOMEM, "out of memory");
	}
	*argv = v;
	return 0;
}

static int parse_int(const char *opt, const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	if (errno || end == s || *end || *out < min || *out > max)
		return util_err(-EINVAL, "%s: '%s' is not a number from %ld to %ld", opt, s, min,
				max);
	return 0;
}

/* Appends x to a growing array of elements of size sz. */
static int grow(void *arr, size_t *n, size_t sz, const void *x)
{
	char *nv = realloc(*(void **)arr, (*n + 1) * sz);

	if (!nv)
		return util_err(-ENOMEM, "out of memory");
	memcpy(nv + *n * sz, x, sz);
	*(void **)arr = nv;
	++*n;
	return 0;
}

int proxy_args_parse(struct proxy_args *a, int argc, char **argv)
{
	size_t n_tcp = 0, n_tls = 0;
	int rc = 0;
	long x;

	memset(a, 0, sizeof(*a));
	a->ready_fd = a->control_fd = -1;
	for (int i = 1; rc == 0 && i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool done = false;

		if (!strcmp(o, "--tcp") || !strcmp(o, "--serve")) {
			*(o[2] == 't' ? &a->tcp : &a->serve) = true;
			continue;
		}
		if (!v) {
			rc = util_err(-EINVAL, "%s needs a value", o);
			break;
		}
		i++;
		for (size_t k = 0; !done && k < ARB_ARRAY_LEN(str_opts); k++)
			if (!strcmp(o, str_opts[k].name)) {
				*str_field(a, k) = v;
				done = true;
			}
		if (done)
			continue;
		if (!strcmp(o, "--backend"))
			rc = grow(&a->backends, &a->n_backends, sizeof(char *), &v);
		else if (!strcmp(o, "--allow-host"))
			rc = grow(&a->allow_hosts, &a->n_allow_hosts, sizeof(char *), &v);
		else if (!strcmp(o, "--login-kind"))
			rc = parse_int(o, v, 0, INT_MAX, &x) ?: (a->login_kind = (int)x, 0);
		else if (!strcmp(o, "--ready-fd") || !strcmp(o, "--control-fd"))
			rc = parse_int(o, v, 0, INT_MAX, &x)
				 ?: (*(o[2] == 'r' ? &a->ready_fd : &a->control_fd) = (int)x, 0);
		else if (!strcmp(o, "--tcp-fd") || !strcmp(o, "--tcp-tls-fd")) {
			int fd;

			rc = parse_int(o, v, -1, INT_MAX, &x);
			fd = (int)x;
			if (rc == 0 && o[6] == 'f')
				rc = grow(&a->tcp_fds, &n_tcp, sizeof(int), &fd);
			else if (rc == 0)
				rc = grow(&a->tcp_tls_fds, &n_tls, sizeof(int), &fd);
		} else
			rc = util_err(-EINVAL, "unknown option %s", o);
	}
	if (rc == 0 && a->tcp && (n_tcp != a->n_backends || n_tls != a->n_backends))
		rc = util_err(-EINVAL, "--tcp needs one --tcp-fd and --tcp-tls-fd per --backend");
	if (rc == 0 && (a->ready_fd < 0 || a->control_fd < 0))
		rc = util_err(-EINVAL, "--ready-fd and --control-fd are needed");
	if (rc < 0)
		proxy_args_release(a);
	return rc;
}

void proxy_args_release(struct proxy_args *a)
{
	free((void *)a->backends);
	free((void *)a->allow_hosts);
	free((void *)a->tcp_fds);
	free((void *)a->tcp_tls_fds);
	a->backends = a->allow_hosts = NULL;
	a->tcp_fds = a->tcp_tls_fds = NULL;
}
