/*
 * compat/proxy_lazy.c: the credential proxy, loaded only when a command uses it.
 *
 * The proxy needs libcurl and OpenSSL's libssl, and with them about 25 more shared libraries
 * (GnuTLS, Kerberos, LDAP, ...) that every arborinth process loaded and relocated at start:
 * about 8 ms of each `checkpoint`, `shell` or `rewind`, and nearly half the instructions of
 * `shell --jail none -- true`. So arborinth links this file instead of proxy/: each proxy
 * function the commands call is defined here and forwards to the real one in
 * libarb_proxy.so (built from proxy/, next to this executable), opened on the first call.
 * Commands without --backend, --allow-host or a launcher never call one. The library takes
 * util_* from this executable (exported by a dynamic list), so its error messages are the
 * ones util_err_msg() reports here. The functions that can fail report a library that cannot
 * be opened as an error; the others are only called on objects the library made.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxy/proxy.h"
#include "util/util.h"

#define PROXY_DSO "libarb_proxy.so"

static void *lib;

/* Opens the library beside this executable once; -ELIBACC with a message when it cannot. */
static int lazy_open(void)
{
	char path[PATH_MAX];
	ssize_t n;
	char *slash;

	if (lib)
		return 0;
	n = readlink("/proc/self/exe", path, sizeof(path) - sizeof(PROXY_DSO));
	if (n <= 0)
		return util_err(-ELIBACC, "cannot find the proxy library: %s", strerror(errno));
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return util_err(-ELIBACC, "cannot find the proxy library beside %s", path);
	memcpy(slash + 1, PROXY_DSO, sizeof(PROXY_DSO));
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return util_err(-ELIBACC, "cannot load the proxy: %s", dlerror());
	return 0;
}

/* The real function name, from the library (opened already). */
static void *lazy_sym(const char *name)
{
	void *f = lib ? dlsym(lib, name) : NULL;

	if (!f) {
		/* Only after a call that opened the library: a build that does not match. */
		fprintf(stderr, "arborinth: the proxy library lacks %s\n", name);
		abort();
	}
	return f;
}

/* A function that may be the first proxy call: it opens the library, or fails. */
#define LAZY_FIRST(name, params, args)                                                             \
	int name params                                                                            \
	{                                                                                          \
		static int(*f) params;                                                             \
		int rc = lazy_open();                                                              \
		if (rc < 0)                                                                        \
			return rc;                                                                 \
		if (!f)                                                                            \
			*(void **)&f = lazy_sym(#name);                                            \
		return f args;                                                                     \
	}

/* A function called only on what the library made. */
#define LAZY(ret, name, params, args)                                                              \
	ret name params                                                                            \
	{                                                                                          \
		static ret(*f) params;                                                             \
		if (!f)                                                                            \
			*(void **)&f = lazy_sym(#name);                                            \
		return f args;                                                                     \
	}

/* Free functions accept NULL, before the library was ever needed. */
#define LAZY_FREE(name, type)                                                                      \
	void name(type *x)                                                                         \
	{                                                                                          \
		static void (*f)(type *);                                                          \
		if (!x)                                                                            \
			return;                                                                    \
		if (!f)                                                                            \
			*(void **)&f = lazy_sym(#name);                                            \
		f(x);                                                                              \
	}

LAZY_FIRST(proxy_allow_host_parse, (const char *spec, char **host, uint16_t *port),
	   (spec, host, port))
LAZY_FIRST(proxy_backend_parse, (struct proxy_backend * *out, const char *spec), (out, spec))
LAZY_FIRST(proxy_new, (struct proxy * *out, const struct proxy_config *cfg), (out, cfg))
LAZY_FIRST(proxy_login_open,
	   (struct proxy_login * *out, enum proxy_login_kind kind, const char *path,
	    const char *token_url, const char *ca_file),
	   (out, kind, path, token_url, ca_file))
LAZY_FIRST(proxy_listen_loopback, (uint16_t port, int *fd, uint16_t *bound), (port, fd, bound))
LAZY_FIRST(proxy_relay_hook_start, (const char *arg, void **state), (arg, state))

LAZY(int, proxy_backend_set, (struct proxy_backend * b, const char *key, const char *value),
     (b, key, value))
LAZY(const char *, proxy_backend_name, (const struct proxy_backend *b), (b))
LAZY(uint16_t, proxy_backend_port, (const struct proxy_backend *b), (b))
LAZY(const char *, proxy_backend_key_env, (const struct proxy_backend *b), (b))
LAZY(const char *, proxy_backend_key_source, (const struct proxy_backend *b), (b))
LAZY(const char *, proxy_login_path, (const struct proxy_login *l), (l))
LAZY(uint16_t, proxy_backend_tls_port, (const struct proxy_backend *b), (b))
LAZY(struct proxy_login *, proxy_backend_login, (const struct proxy_backend *b), (b))
LAZY(const struct proxy_backend *, proxy_backend_at, (const struct proxy *p, size_t i), (p, i))
LAZY(const uint16_t *, proxy_ports, (const struct proxy *p, size_t *n), (p, n))
LAZY(const char *const *, proxy_allowed_hosts, (const struct proxy *p, size_t *n), (p, n))
LAZY(int, proxy_box_env, (const struct proxy *p, const char *key_dir, char ***out),
     (p, key_dir, out))
LAZY(const char *, proxy_placeholder, (const struct proxy *p, const char *name), (p, name))
LAZY(const char *, proxy_tls_ca, (const struct proxy *p), (p))
LAZY(char *, proxy_relay_arg_format, (const uint16_t *ports, size_t n, const char *socket_path),
     (ports, n, socket_path))
LAZY(int, proxy_login_box_file, (const struct proxy *p, const char *backend, char **out),
     (p, backend, out))

void proxy_backend_set_login(struct proxy_backend *b, struct proxy_login *l)
{
	static void (*f)(struct proxy_backend *, struct proxy_login *);

	if (!f)
		*(void **)&f = lazy_sym("proxy_backend_set_login");
	f(b, l);
}

LAZY_FREE(proxy_backend_free, struct proxy_backend)
LAZY_FREE(proxy_free, struct proxy)
LAZY_FREE(proxy_relay_hook_stop, void)
