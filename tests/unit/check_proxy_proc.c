/* tests/unit/check_proxy_proc.c: arborinth_proxy's command line and ready message, each made
 * and read by one pair of functions (proxy/args.c, proxy/ready.c): every field survives the
 * round trip, and bad input is an error naming it. The ready pipe's two parts (proxy/proc.c)
 * against a stand-in program. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/proxy.h"

static int argc_of(char **argv)
{
	int n = 0;

	while (argv[n])
		n++;
	return n;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

START_TEST(args_round_trip)
{
	const char *backends[] = {"anthropic=http://127.0.0.1:9,key-file=/k ey", "openai"};
	const char *hosts[] = {"example.com:8443", "[::1]"};
	const int fds[] = {7, -1}, tls_fds[] = {-1, 9};
	struct proxy_args a = {
	    .backends = backends,
	    .n_backends = 2,
	    .key_file = NULL,
	    .login_backend = "openai",
	    .login_path = "/home/u/.codex/auth.json",
	    .login_token_url = "http://127.0.0.1:1/token",
	    .login_kind = 1,
	    .allow_hosts = hosts,
	    .n_allow_hosts = 2,
	    .socket_path = "/run/p/proxy.sock",
	    .egress_socket_path = "/run/p/egress.sock",
	    .tls_socket_path = "/run/p/tls.sock",
	    .tcp = true,
	    .tcp_fds = fds,
	    .tcp_tls_fds = tls_fds,
	    .serve = true,
	    .audit_db = "/r/.git/arborinth/state.db",
	    .ws_id = "abc123",
	    .ws_name = "w --serve",
	    .ready_fd = 5,
	    .control_fd = 6,
	};
	struct proxy_args b;
	char **argv = NULL;

	ck_assert_int_eq(proxy_args_format(&a, "/x/arborinth_proxy", &argv), 0);
	ck_assert_str_eq(argv[0], "/x/arborinth_proxy");
	ck_assert_int_eq(proxy_args_parse(&b, argc_of(argv), argv), 0);
	ck_assert_uint_eq(b.n_backends, 2);
	ck_assert_str_eq(b.backends[0], backends[0]);
	ck_assert_str_eq(b.backends[1], backends[1]);
	ck_assert_ptr_null(b.key_file);
	ck_assert_str_eq(b.login_backend, "openai");
	ck_assert_str_eq(b.login_path, a.login_path);
	ck_assert_str_eq(b.login_token_url, a.login_token_url);
	ck_assert_int_eq(b.login_kind, 1);
	ck_assert_uint_eq(b.n_allow_hosts, 2);
	ck_assert_str_eq(b.allow_hosts[1], "[::1]");
	ck_assert_str_eq(b.socket_path, a.socket_path);
	ck_assert_str_eq(b.egress_socket_path, a.egress_socket_path);
	ck_assert_str_eq(b.tls_socket_path, a.tls_socket_path);
	ck_assert(b.tcp && b.serve);
	ck_assert_int_eq(b.tcp_fds[0], 7);
	ck_assert_int_eq(b.tcp_fds[1], -1);
	ck_assert_int_eq(b.tcp_tls_fds[0], -1);
	ck_assert_int_eq(b.tcp_tls_fds[1], 9);
	ck_assert_str_eq(b.audit_db, a.audit_db);
	ck_assert_str_eq(b.ws_id, "abc123");
	ck_assert_str_eq(b.ws_name, "w --serve"); /* a value, never an option */
	ck_assert_int_eq(b.ready_fd, 5);
	ck_assert_int_eq(b.control_fd, 6);
	proxy_args_release(&b);
	strv_free(argv);

	/* The smallest: a key check, no listener. */
	a = (struct proxy_args){.backends = backends,
				.n_backends = 1,
				.key_file = "/k",
				.ready_fd = 3,
				.control_fd = 4};
	ck_assert_int_eq(proxy_args_format(&a, "p", &argv), 0);
	ck_assert_int_eq(proxy_args_parse(&b, argc_of(argv), argv), 0);
	ck_assert(!b.tcp && !b.serve);
	ck_assert_str_eq(b.key_file, "/k");
	ck_assert_ptr_null(b.socket_path);
	ck_assert_ptr_null(b.login_backend);
	ck_assert_ptr_null(b.tcp_fds);
	proxy_args_release(&b);
	strv_free(argv);
}
END_TEST

START_TEST(args_errors)
{
	struct proxy_args b;
	char *unknown[] = {"p", "--bogus", "x", "--ready-fd", "3", "--control-fd", "4", NULL};
	char *no_value[] = {"p", "--ready-fd", "3", "--control-fd", NULL};
	char *no_fds[] = {"p", "--backend", "anthropic", NULL};
	char *bad_fd[] = {"p", "--ready-fd", "3x", "--control-fd", "4", NULL};
	char *tcp_count[] = {"p", "--backend",	  "anthropic", "--tcp", "--ready-fd",
			     "3", "--control-fd", "4",	       NULL};

	ck_assert_int_eq(proxy_args_parse(&b, 7, unknown), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "--bogus"));
	ck_assert_int_eq(proxy_args_parse(&b, 4, no_value), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "--control-fd needs a value"));
	ck_assert_int_eq(proxy_args_parse(&b, 3, no_fds), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "--ready-fd"));
	ck_assert_int_eq(proxy_args_parse(&b, 5, bad_fd), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "'3x'"));
	ck_assert_int_eq(proxy_args_parse(&b, 8, tcp_count), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "--tcp-fd"));
}
END_TEST

START_TEST(ready_round_trip)
{
	char *env0[] = {"ANTHROPIC_BASE_URL=http://127.0.0.1:8713"};
	char *env1[] = {"OPENAI_BASE_URL=http://127.0.0.1:8714/v1",
			"OPENAI_TLS_BASE_URL=https://127.0.0.1:8715/v1"};
	char *about1[] = {"upstream", "https://api.openai.com", "credential", "login /h/auth.json"};
	struct proxy_ready_backend bs[2] = {
	    {.name = "anthropic",
	     .placeholder = "arb-anthropic-placeholder-00",
	     .key_source = "/k",
	     .env = env0,
	     .n_env = 1,
	     .key_var = "ANTHROPIC_API_KEY",
	     .port = 8713},
	    {.name = "openai",
	     .placeholder = "arb-openai-placeholder-11",
	     .login_path = "/h/auth.json",
	     .login_box = "{\"tokens\": 1}\n",
	     .env = env1,
	     .n_env = 2,
	     .about = about1,
	     .n_about = 2,
	     .port = 8714,
	     .tls_port = 8715},
	};
	char *hosts[] = {"example.com:443"};
	uint16_t ports[] = {8713, 8714};
	struct proxy_ready r = {.backends = bs,
				.n_backends = 2,
				.ports = ports,
				.allow_hosts = hosts,
				.n_allow_hosts = 1,
				.tls_ca = "-----BEGIN CERTIFICATE-----\nx\n"};
	struct proxy_ready *q = NULL;
	char *text = proxy_ready_format(&r), **e1 = NULL, **e2 = NULL, **e3 = NULL;

	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_null(strchr(text, '\n')); /* one line */
	ck_assert_int_eq(proxy_ready_parse(&q, text), 0);
	ck_assert_uint_eq(q->n_backends, 2);
	ck_assert_str_eq(q->backends[0].placeholder, bs[0].placeholder);
	ck_assert_str_eq(q->backends[0].key_source, "/k");
	ck_assert_str_eq(q->backends[0].key_var, "ANTHROPIC_API_KEY");
	ck_assert_ptr_null(q->backends[0].login_path);
	ck_assert_uint_eq(q->backends[0].n_about, 0);
	ck_assert_ptr_null(q->backends[1].key_var);
	ck_assert_uint_eq(q->backends[1].n_env, 2);
	ck_assert_str_eq(q->backends[1].env[1], env1[1]);
	ck_assert_uint_eq(q->backends[1].n_about, 2);
	ck_assert_str_eq(q->backends[1].about[2], "credential");
	ck_assert_str_eq(q->backends[1].about[3], "login /h/auth.json");
	ck_assert_str_eq(q->backends[1].login_box, bs[1].login_box);
	ck_assert_str_eq(q->backends[1].login_path, "/h/auth.json");
	ck_assert_int_eq(q->backends[1].tls_port, 8715);
	ck_assert_int_eq(q->ports[1], 8714);
	ck_assert_str_eq(q->allow_hosts[0], "example.com:443");
	ck_assert_str_eq(q->tls_ca, r.tls_ca);
	ck_assert_ptr_eq(proxy_ready_backend(q, "openai"), &q->backends[1]);
	ck_assert_ptr_null(proxy_ready_backend(q, "none"));
	/* The box's environment is the same from either side. */
	ck_assert_int_eq(proxy_ready_box_env(&r, "/home/.arborinth/proxy", &e1), 0);
	ck_assert_int_eq(proxy_ready_box_env(q, "/home/.arborinth/proxy", &e2), 0);
	for (size_t i = 0; e1[i] || e2[i]; i++) {
		ck_assert_ptr_nonnull(e1[i]);
		ck_assert_ptr_nonnull(e2[i]);
		ck_assert_str_eq(e1[i], e2[i]);
	}
	ck_assert_str_eq(e1[0], "HTTPS_PROXY=http://127.0.0.1:8712");
	ck_assert_str_eq(e1[6], "ANTHROPIC_BASE_URL=http://127.0.0.1:8713");
	ck_assert_str_eq(e1[7], "ANTHROPIC_API_KEY_FILE=/home/.arborinth/proxy/anthropic.key");
	ck_assert_str_eq(e1[8], env1[0]);
	ck_assert_str_eq(e1[9], env1[1]);
	ck_assert_ptr_null(e1[10]); /* a login's backend: no key variable */
	/* Without a key folder: the placeholder itself. */
	ck_assert_int_eq(proxy_ready_box_env(q, NULL, &e3), 0);
	ck_assert_str_eq(e3[7], "ANTHROPIC_API_KEY=arb-anthropic-placeholder-00");
	strv_free(e1);
	strv_free(e2);
	strv_free(e3);
	proxy_ready_free(q);
	free(text);
}
END_TEST

/* A backend of the answer with the given "env", "key_var" and "about" (JSON text). */
static int parse_backend(const char *env, const char *key_var, const char *about)
{
	struct proxy_ready *q = NULL;
	char *text = util_asprintf("{\"backends\": [{\"name\": \"reapi\", \"placeholder\": "
				   "\"p\", \"port\": 8717, \"tls_port\": 0, \"env\": %s, "
				   "\"key_var\": %s, \"about\": %s}], \"allow_hosts\": []}",
				   env, key_var, about);
	int rc = proxy_ready_parse(&q, text);

	if (rc == 0) {
		ck_assert_ptr_nonnull(q);
		ck_assert_uint_eq(q->backends[0].port, 8717);
	}
	proxy_ready_free(q);
	free(text);
	return rc;
}

/* The box's variables in the answer are read like any input: hostile ones are refused. */
START_TEST(ready_env_hostile)
{
	struct proxy_ready *q = NULL;
	char big[PROXY_READY_VALUE_MAX + 64];

	/* Control: the real form is read. */
	ck_assert_int_eq(parse_backend("[\"REAPI_REMOTE=grpc://127.0.0.1:8717\", "
				       "\"REAPI_INSTANCE=\"]",
				       "null",
				       "{\"upstream\": \"grpc://h:1\", \"token\": "
				       "\"file /t\"}"),
			 0);
	ck_assert_int_eq(parse_backend("[]", "\"X_API_KEY\"", "null"), 0);
	/* Names: [A-Za-z_][A-Za-z0-9_]* (a lower-case env= prefix is fine), none of the box's own.
	 */
	ck_assert_int_eq(parse_backend("[\"lower_BASE_URL=1\"]", "null", "null"), 0);
	ck_assert_int_eq(parse_backend("[\"1X=1\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"=1\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"NOEQUALS\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"A-B=1\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"PATH=/evil\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"HOME=/evil\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"LD_PRELOAD=/evil.so\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"A B=1\"]", "null", "null"), -EPROTO);
	/* Values: no NUL, no line break, no control character; bounded. */
	ck_assert_int_eq(parse_backend("[\"A=x\\u0000y\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"A=x\\ny\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"A=x\\u001b[2J\"]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[1]", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("{\"A\": \"1\"}", "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("null", "null", "null"), -EPROTO);
	memset(big, 'x', sizeof(big) - 1);
	big[0] = '[', big[1] = '"', big[2] = 'A', big[3] = '=';
	memcpy(big + sizeof(big) - 3, "\"]", 3);
	ck_assert_int_eq(parse_backend(big, "null", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[\"A=1\",\"A=1\",\"A=1\",\"A=1\",\"A=1\",\"A=1\","
				       "\"A=1\",\"A=1\",\"A=1\",\"A=1\",\"A=1\",\"A=1\","
				       "\"A=1\",\"A=1\",\"A=1\",\"A=1\",\"A=1\"]",
				       "null", "null"),
			 -EPROTO);
	/* The key variable: a name, the same rules. */
	ck_assert_int_eq(parse_backend("[]", "\"LD_PRELOAD\"", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[]", "\"K\\nX\"", "null"), -EPROTO);
	ck_assert_int_eq(parse_backend("[]", "7", "null"), -EPROTO);
	/* The name makes the box's key file's name. */
	ck_assert_int_eq(proxy_ready_parse(&q, "{\"backends\": [{\"name\": \"../x\", "
					       "\"placeholder\": \"p\", \"port\": 1, "
					       "\"tls_port\": 0, \"env\": []}], "
					       "\"allow_hosts\": []}"),
			 -EPROTO);
	/* About: an object of strings under [a-z-] keys. */
	ck_assert_int_eq(parse_backend("[]", "null", "[\"x\"]"), -EPROTO);
	ck_assert_int_eq(parse_backend("[]", "null", "{\"Up\": \"x\"}"), -EPROTO);
	ck_assert_int_eq(parse_backend("[]", "null", "{\"up\": 1}"), -EPROTO);
	ck_assert_int_eq(parse_backend("[]", "null", "{\"up\": \"a\\u001b]0;x\\u0007\"}"), -EPROTO);
}
END_TEST

START_TEST(ready_errors)
{
	struct proxy_ready *q = NULL;
	char *text = proxy_ready_format_error(-ENOKEY, "backend anthropic: key file /k is empty");

	ck_assert_int_eq(proxy_ready_parse(&q, text), -ENOKEY);
	ck_assert_str_eq(util_err_msg(), "backend anthropic: key file /k is empty");
	ck_assert_ptr_null(q);
	free(text);
	ck_assert_int_eq(proxy_ready_parse(&q, "not json"), -EPROTO);
	ck_assert_int_eq(proxy_ready_parse(&q, "{\"backends\": 1, \"allow_hosts\": []}"), -EPROTO);
	ck_assert_int_eq(proxy_ready_parse(&q, "{\"backends\": [{\"name\": \"a\"}], "
					       "\"allow_hosts\": []}"),
			 -EPROTO);
	ck_assert_int_eq(proxy_ready_parse(&q, "{\"backends\": [{\"name\": \"a\", \"placeholder\": "
					       "\"p\", \"env\": [], \"port\": 70000, "
					       "\"tls_port\": 0}], \"allow_hosts\": []}"),
			 -EPROTO);
	ck_assert_ptr_null(q);
}
END_TEST

/*
 * A stand-in for arborinth_proxy (a shell script given as the program): on its ready pipe it
 * writes $FAKE_OUT (printf's format, so "\\n" ends the answer's line), sleeping
 * $FAKE_SLEEP seconds after the line, then $FAKE_MORE.
 */
static void fake_run(const char *out, const char *more, int *wait_rc, int *confirm_rc)
{
	char dir[] = "/tmp/arb-fakeproxy.XXXXXX", *exe;
	const char *backends[] = {"anthropic"};
	struct proxy_args a = {.backends = backends, .n_backends = 1};
	struct proxy_proc *pp = NULL;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	exe = malloc(strlen(dir) + 8);
	ck_assert_ptr_nonnull(exe);
	sprintf(exe, "%s/fake", dir);
	f = fopen(exe, "w");
	ck_assert_ptr_nonnull(f);
	fputs("#!/bin/sh\n"
	      "while [ $# -gt 0 ]; do [ \"$1\" = --ready-fd ] && fd=$2; shift; done\n"
	      "eval \"exec 9>&$fd\"\n"
	      "printf \"$FAKE_OUT\" >&9\n"
	      "sleep 0.2\n"
	      "printf '%s' \"$FAKE_MORE\" >&9\n",
	      f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(exe, 0700), 0);
	setenv("FAKE_OUT", out, 1);
	setenv("FAKE_MORE", more, 1);
	ck_assert_int_eq(proxy_proc_spawn(&pp, exe, &a), 0);
	*wait_rc = proxy_proc_wait(pp);
	*confirm_rc = *wait_rc < 0 ? *wait_rc : proxy_proc_confirm(pp);
	proxy_proc_stop(pp);
	unlink(exe);
	rmdir(dir);
	free(exe);
}

START_TEST(ready_two_parts)
{
	uint16_t ports[] = {8713};
	struct proxy_ready_backend rb = {.name = "anthropic", .placeholder = "arb-p", .port = 8713};
	struct proxy_ready r = {.backends = &rb, .n_backends = 1, .ports = ports};
	char *ok = proxy_ready_format(&r), *line = NULL;
	char *bad = proxy_ready_format_error(-EIO, "cannot open the audit log for the proxy: x");
	int w, c;

	ck_assert_ptr_nonnull(ok);
	ck_assert_ptr_nonnull(bad);
	line = malloc(strlen(ok) + 4);
	ck_assert_ptr_nonnull(line);
	sprintf(line, "%s\\n", ok);
	/* The answer, then the log opened: nothing more. */
	fake_run(line, "", &w, &c);
	ck_assert_int_eq(w, 0);
	ck_assert_int_eq(c, 0);
	/* The answer, then (later) the log could not open: confirm fails with its message. */
	fake_run(line, bad, &w, &c);
	ck_assert_int_eq(w, 0);
	ck_assert_int_eq(c, -EIO);
	ck_assert_str_eq(util_err_msg(), "cannot open the audit log for the proxy: x");
	/* A failure before the answer (no line): wait fails with it. */
	fake_run(bad, "", &w, &c);
	ck_assert_int_eq(w, -EIO);
	/* The program says nothing: it exited without an answer. */
	fake_run("", "", &w, &c);
	ck_assert_int_eq(w, -EIO);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "without an answer"));
	/* A second answer is not a failure's: refused. */
	fake_run(line, ok, &w, &c);
	ck_assert_int_eq(w, 0);
	ck_assert_int_eq(c, -EPROTO);
	free(line);
	free(ok);
	free(bad);
}
END_TEST

static Suite *proxy_proc_suite(void)
{
	Suite *s = suite_create("proxy_proc");
	TCase *tc = tcase_create("messages");

	tcase_add_test(tc, args_round_trip);
	tcase_add_test(tc, args_errors);
	tcase_add_test(tc, ready_round_trip);
	tcase_add_test(tc, ready_errors);
	tcase_add_test(tc, ready_env_hostile);
	tcase_add_test(tc, ready_two_parts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proxy_proc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
