/*
 * cli/mhd_lazy.c: libmicrohttpd, opened when `arborinth review` first serves, never linked.
 * The review page (cli/review_http.c) is the only user; linking the library would load it,
 * and GnuTLS behind it, into every arborinth command, which is promised to map no TLS
 * library (the credential proxy, arborinth_proxy, is the one that does). Each function the
 * page calls is defined here with its header's prototype (the compiler checks them) and
 * forwards to the library's, looked up on the first call. A library that cannot be opened
 * ends the process as the dynamic linker would have at start (127, the reason on stderr).
 */
#include <dlfcn.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void *handle;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void open_library(void)
{
	handle = dlopen(ARB_MHD_SONAME, RTLD_LAZY | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "arborinth: error while loading shared libraries: %s\n", dlerror());
		_exit(127);
	}
}

static void *sym(const char *name)
{
	void *f;

	pthread_once(&once, open_library);
	f = dlsym(handle, name);
	if (!f) {
		fprintf(stderr, "arborinth: %s: undefined symbol %s\n", ARB_MHD_SONAME, name);
		_exit(127);
	}
	return f;
}

/* fn: the library's function name, as a pointer of the type of p (looked up once). */
#define LAZY(fn, p)                                                                                \
	do {                                                                                       \
		static void *cached;                                                               \
		void *got = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);                            \
		if (!got) {                                                                        \
			got = sym(fn);                                                             \
			__atomic_store_n(&cached, got, __ATOMIC_RELEASE);                          \
		}                                                                                  \
		*(void **)&(p) = got;                                                              \
	} while (0)

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
					const char *content)
{
	enum MHD_Result (*f)(struct MHD_Response *, const char *, const char *);

	LAZY("MHD_add_response_header", f);
	return f(response, header, content);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *(*f)(size_t, void *, enum MHD_ResponseMemoryMode);

	LAZY("MHD_create_response_from_buffer", f);
	return f(size, buffer, mode);
}

void MHD_destroy_response(struct MHD_Response *response)
{
	void (*f)(struct MHD_Response *);

	LAZY("MHD_destroy_response", f);
	f(response);
}

int MHD_get_connection_values(struct MHD_Connection *connection, enum MHD_ValueKind kind,
			      MHD_KeyValueIterator iterator, void *iterator_cls)
{
	int (*f)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIterator, void *);

	LAZY("MHD_get_connection_values", f);
	return f(connection, kind, iterator, iterator_cls);
}

/* The page asks only for types that take no further argument (the port it listens on). */
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
						enum MHD_DaemonInfoType info_type, ...)
{
	const union MHD_DaemonInfo *(*f)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);

	LAZY("MHD_get_daemon_info", f);
	return f(daemon, info_type);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
					const char *key)
{
	const char *(*f)(struct MHD_Connection *, enum MHD_ValueKind, const char *);

	LAZY("MHD_lookup_connection_value", f);
	return f(connection, kind, key);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
				   struct MHD_Response *response)
{
	enum MHD_Result (*f)(struct MHD_Connection *, unsigned int, struct MHD_Response *);

	LAZY("MHD_queue_response", f);
	return f(connection, status_code, response);
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
				    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	struct MHD_Daemon *(*f)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
				MHD_AccessHandlerCallback, void *, va_list);
	struct MHD_Daemon *d;
	va_list ap;

	LAZY("MHD_start_daemon_va", f);
	va_start(ap, dh_cls);
	d = f(flags, port, apc, apc_cls, dh, dh_cls, ap);
	va_end(ap);
	return d;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
	void (*f)(struct MHD_Daemon *);

	LAZY("MHD_stop_daemon", f);
	f(daemon);
}
