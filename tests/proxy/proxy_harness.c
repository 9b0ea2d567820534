/*
 * tests/proxy/proxy_harness.c: runs the real proxy (and optionally the real relay) on the
 * host for integration tests and benchmarks, until SIGTERM/SIGINT.
 *
 *   proxy_harness --socket PATH [--relay] [--records FILE] [--max-conns N] --backend SPEC...
 *                 [--login BACKEND=claude|codex:FILE[@TOKEN_URL]]...
 *
 * Prints one JSON line when ready: {"env": [...], "placeholders": {...}, "ports": [...],
 * "login_files": {backend: the box's login file}}; on SIGTERM, before exiting, one more:
 * {"refreshes": {backend: N}}. With --records, appends one JSON line per finished request
 * (the observer's record).
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

static void observe(void *ctx, const struct proxy_record *r)
{
	FILE *f = ctx;
	json_t *o =
	    json_pack("{s:I, s:s?, s:s, s:s, s:i, s:I, s:I, s:I, s:b, s:s}", "time_ns",
		      (json_int_t)r->time_ns, "backend", r->backend, "method", r->method, "path",
		      r->path, "status", r->status, "bytes_up", (json_int_t)r->bytes_up,
		      "bytes_down", (json_int_t)r->bytes_down, "duration_ns",
		      (json_int_t)r->duration_ns, "allowed", r->allowed, "reason", r->reason);

	pthread_mutex_lock(&rec_lock);
	if (o && json_dumpf(o, f, JSON_COMPACT) == 0)
		fputc('\n', f);
	fflush(f);
	pthread_mutex_unlock(&rec_lock);
	json_decref(o);
}

/* On the way out after a failure (the proxy owns them only once it started). */
static void free_backends(struct proxy_backend **b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		proxy_backend_free(b[i]);
}

/* BACKEND=KIND:FILE[@TOKEN_URL] on an already given --backend. */
static int login_arg(struct proxy_backend **b, size_t nb, const char *arg)
{
	char *copy = strdup(arg), *eq = copy ? strchr(copy, '=') : NULL, *colon, *at;
	struct proxy_login *l = NULL;
	int rc = 1;

	colon = eq ? strchr(eq, ':') : NULL;
	if (!colon) {
		free(copy);
		return util_err(-EINVAL, "--login wants BACKEND=KIND:FILE[@URL]");
	}
	*eq = *colon = '\0';
	at = strchr(colon + 1, '@');
	if (at)
		*at++ = '\0';
	for (size_t i = 0; i < nb; i++) {
		if (strcmp(proxy_backend_name(b[i]), copy))
			continue;
		rc = proxy_login_open(
		    &l, strcmp(eq + 1, "codex") ? PROXY_LOGIN_CLAUDE : PROXY_LOGIN_CODEX, colon + 1,
		    at, NULL);
		if (rc == 0)
			proxy_backend_set_login(b[i], l);
		break;
	}
	if (rc == 1)
		rc = util_err(-EINVAL, "--login %s: no such --backend before it", arg);
	free(copy);
	return rc;
}

int main(int argc, char **argv)
{
	struct proxy_backend *b[16];
	struct proxy_config cfg = {0};
	struct proxy *p = NULL;
	struct proxy_relay *relay = NULL;
	FILE *records = NULL;
	bool want_relay = false;
	size_t nb = 0;
	sigset_t set;
	char **env = NULL;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--relay")) {
			want_relay = true;
			continue;
		}
		if (!v) {
			fprintf(stderr, "proxy_harness: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--socket")) {
			cfg.socket_path = v;
		} else if (!strcmp(a, "--max-conns")) {
			cfg.max_conns = (unsigned)atoi(v);
		} else if (!strcmp(a, "--records")) {
			records = fopen(v, "a");
			if (!records) {
				perror(v);
				return 1;
			}
			cfg.observer = observe;
			cfg.observer_ctx = records;
		} else if (!strcmp(a, "--login")) {
			if (login_arg(b, nb, v) < 0) {
				fprintf(stderr, "proxy_harness: %s\n", util_err_msg());
				free_backends(b, nb);
				return 1;
			}
		} else if (!strcmp(a, "--backend") && nb < 16) {
			if (proxy_backend_parse(&b[nb], v) < 0) {
				fprintf(stderr, "proxy_harness: %s\n", util_err_msg());
				return 1;
			}
			nb++;
		} else {
			fprintf(stderr, "proxy_harness: unknown option %s\n", a);
			return 2;
		}
	}
	cfg.backends = calloc(nb, sizeof(*cfg.backends));
	memcpy(cfg.backends, b, nb * sizeof(*b));
	cfg.n_backends = nb;
	if (proxy_new(&p, &cfg) < 0) {
		fprintf(stderr, "proxy_harness: %s\n", util_err_msg());
		free_backends(b, nb);
		free(cfg.backends);
		return 1;
	}
	if (want_relay) {
		size_t n;
		const uint16_t *ports = proxy_ports(p, &n);

		if (proxy_relay_start(&relay, cfg.socket_path, ports, n) < 0) {
			fprintf(stderr, "proxy_harness: %s\n", util_err_msg());
			proxy_free(p);
			return 1;
		}
	}
	if (proxy_box_env(p, NULL, &env) == 0) {
		json_t *o = json_object(), *e = json_array(), *ph = json_object(),
		       *pa = json_array();
		size_t n;
		const uint16_t *ports = proxy_ports(p, &n);

		for (char **s = env; *s; s++) {
			json_array_append_new(e, json_string(*s));
			free(*s);
		}
		free(env);
		for (size_t i = 0; i < n; i++)
			json_array_append_new(pa, json_integer(ports[i]));
		for (size_t i = 0; i < nb; i++)
			json_object_set_new(
			    ph, proxy_backend_name(b[i]),
			    json_string(proxy_placeholder(p, proxy_backend_name(b[i]))));
		json_t *lf = json_object();

		for (size_t i = 0; i < nb; i++) {
			char *text = NULL;

			if (proxy_login_box_file(p, proxy_backend_name(b[i]), &text) == 0)
				json_object_set_new(lf, proxy_backend_name(b[i]),
						    json_string(text));
			free(text);
		}
		json_object_set_new(o, "login_files", lf);
		json_object_set_new(o, "env", e);
		json_object_set_new(o, "placeholders", ph);
		json_object_set_new(o, "ports", pa);
		json_dumpf(o, stdout, JSON_COMPACT);
		json_decref(o);
	}
	printf("\n");
	fflush(stdout);
	sigwait(&set, &sig);
	printf("{\"refreshes\":{");
	for (size_t i = 0, k = 0; i < nb; i++)
		if (proxy_backend_login(b[i]))
			printf("%s\"%s\":%u", k++ ? "," : "", proxy_backend_name(b[i]),
			       proxy_login_refreshes(proxy_backend_login(b[i])));
	printf("}}\n");
	fflush(stdout);
	proxy_relay_free(relay);
	proxy_free(p);
	if (records)
		fclose(records);
	return 0;
}
