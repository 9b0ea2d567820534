/* tests/unit/check_reapi.c: the reapi backend's parts: its specification, the method
 * allow-list and the instance check on hostile first messages. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/reapi_internal.h"

static const char *const V2 = "/build.bazel.remote.execution.v2.ContentAddressableStorage/"
			      "FindMissingBlobs";
static const char *const BSR = "/google.bytestream.ByteStream/Read";

/* A gRPC frame (uncompressed) holding field 1 = s, then field 2 = "x". */
static size_t frame(unsigned char *out, const char *s)
{
	size_t n = strlen(s), m = 2 + n + 3;

	out[0] = 0;
	out[1] = out[2] = 0;
	out[3] = (unsigned char)(m >> 8);
	out[4] = (unsigned char)m;
	out[5] = 0x0a;
	out[6] = (unsigned char)n;
	memcpy(out + 7, s, n);
	memcpy(out + 7 + n, "\x12\x01x", 3);
	return 5 + m;
}

/* The scan of m[0..n) in one go: 0 passed (the upstream may open), -EAGAIN more, -EPERM. */
static int check(const struct proxy_reapi *r, const char *path, const unsigned char *m, size_t n,
		 bool complete)
{
	struct proxy_reapi_scan sc;
	size_t ok = 0;

	proxy_reapi_scan_init(&sc, r, path);
	if (proxy_reapi_scan(&sc, r, m, n, complete, &ok) < 0)
		return -EPERM;
	return sc.ready ? 0 : -EAGAIN;
}

static struct proxy_backend *parse(const char *spec)
{
	struct proxy_backend *b = NULL;

	ck_assert_int_eq(proxy_backend_parse(&b, spec), 0);
	return b;
}

START_TEST(reapi_spec)
{
	struct proxy_backend *b = parse("reapi=grpc://build.example:8980,instance=main");

	ck_assert_ptr_nonnull(b->reapi);
	ck_assert_str_eq(b->reapi->authority, "build.example:8980");
	ck_assert(!b->reapi->tls);
	ck_assert_uint_eq(b->port, PROXY_REAPI_PORT);
	ck_assert_str_eq(b->reapi->instance, "main");
	proxy_backend_free(b);
	b = parse("reapi=remotebuildexecution.googleapis.com");
	ck_assert(b->reapi->tls);
	ck_assert_str_eq(b->reapi->authority, "remotebuildexecution.googleapis.com:443");
	proxy_backend_free(b);
	b = parse("reapi=grpcs://[::1]:8443,token-command=helper --x");
	ck_assert_str_eq(b->reapi->authority, "[::1]:8443");
	ck_assert(proxy_reapi_uses_command(b));
	proxy_backend_free(b);
	/* Bad input: refused with a message. */
	{
		static const char *const bad[] = {"reapi",
						  "reapi=",
						  "reapi=host:0",
						  "reapi=host:x",
						  "reapi=ho/st:1",
						  "reapi=h:1,allow=POST:/x",
						  "reapi=h:1,tls-port=9",
						  "reapi=h:1,instance=a b",
						  "reapi=h:1,instance=a/../b",
						  "reapi=[::1",
						  "reapi=h:1,token-command="};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			b = NULL;
			ck_assert_msg(proxy_backend_parse(&b, bad[i]) == -EINVAL, "%s", bad[i]);
			ck_assert_ptr_null(b);
		}
	}
}
END_TEST

START_TEST(reapi_methods)
{
	ck_assert_int_ge(proxy_reapi_method(V2), 0);
	ck_assert_int_ge(proxy_reapi_method(BSR), 0);
	ck_assert_int_ge(proxy_reapi_method("/google.longrunning.Operations/WaitOperation"), 0);
	ck_assert_int_eq(
	    proxy_reapi_method("/build.bazel.remote.execution.v2.ActionCache/UpdateActionResult"),
	    -1);
	ck_assert_int_eq(proxy_reapi_method("/google.bytestream.ByteStream/Read/"), -1);
	ck_assert_int_eq(proxy_reapi_method("/google.bytestream.bytestream/Read"), -1);
	ck_assert_int_eq(proxy_reapi_method(""), -1);
}
END_TEST

START_TEST(reapi_instance)
{
	struct proxy_backend *b = parse("reapi=grpc://h:1,instance=main");
	const struct proxy_reapi *r = b->reapi;
	unsigned char m[512];
	size_t n;

	n = frame(m, "main");
	ck_assert_int_eq(check(r, V2, m, n, false), 0);
	/* Every prefix of a good message asks for more; complete, it is refused. */
	for (size_t k = 0; k < 11; k++) {
		ck_assert_int_eq(check(r, V2, m, k, false), -EAGAIN);
		ck_assert_int_eq(check(r, V2, m, k, true), -EPERM);
	}
	n = frame(m, "mainx");
	ck_assert_int_eq(check(r, V2, m, n, false), -EPERM);
	n = frame(m, "mai");
	ck_assert_int_eq(check(r, V2, m, n, false), -EPERM);
	n = frame(m, "main");
	m[0] = 1; /* compressed: cannot be read */
	ck_assert_int_eq(check(r, V2, m, n, false), -EPERM);
	n = frame(m, "main");
	m[6] = 200; /* field longer than the message */
	ck_assert_int_eq(check(r, V2, m, n, true), -EPERM);
	n = frame(m, "main");
	m[5] = 0x12; /* field 1 absent: the empty instance */
	ck_assert_int_eq(check(r, V2, m, n, false), -EPERM);
	memcpy(m, "\0\0\0\0\x0b\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 16);
	ck_assert_int_eq(check(r, V2, m, 16, false), -EPERM);
	/* ByteStream resource names. */
	n = frame(m, "main/blobs/abc/3");
	ck_assert_int_eq(check(r, BSR, m, n, false), 0);
	n = frame(m, "main/uploads/u/blobs/abc/3");
	ck_assert_int_eq(check(r, BSR, m, n, false), 0);
	n = frame(m, "other/blobs/abc/3");
	ck_assert_int_eq(check(r, BSR, m, n, false), -EPERM);
	n = frame(m, "main/../other/blobs/abc/3");
	ck_assert_int_eq(check(r, BSR, m, n, false), -EPERM);
	n = frame(m, "mainblobs/abc/3");
	ck_assert_int_eq(check(r, BSR, m, n, false), -EPERM);
	n = frame(m, "main/etc/passwd");
	ck_assert_int_eq(check(r, BSR, m, n, false), -EPERM);
	/* Operation names are not checked. */
	ck_assert_int_eq(check(r, "/google.longrunning.Operations/GetOperation", m, 0, false), 0);
	proxy_backend_free(b);
	/* Without instance=, nothing is checked. */
	b = parse("reapi=grpc://h:1");
	n = frame(m, "other/blobs/abc/3");
	ck_assert_int_eq(check(b->reapi, BSR, m, n, false), 0);
	proxy_backend_free(b);
}
END_TEST

/* A gRPC frame of the given protobuf body. */
static size_t wrap(unsigned char *out, const void *body, size_t n)
{
	out[0] = 0;
	out[1] = out[2] = 0;
	out[3] = (unsigned char)(n >> 8);
	out[4] = (unsigned char)n;
	memcpy(out + 5, body, n);
	return 5 + n;
}

/* Fed one byte at a time: the bytes released never pass a refused field 1. */
static int check_bytewise(const struct proxy_reapi *r, const char *path, const unsigned char *m,
			  size_t n, size_t *released)
{
	struct proxy_reapi_scan sc;
	size_t done = 0, ok;

	proxy_reapi_scan_init(&sc, r, path);
	*released = 0;
	for (size_t k = 1; k <= n; k++) {
		if (proxy_reapi_scan(&sc, r, m + done, k - done, k == n, &ok) < 0)
			return -EPERM;
		done += ok;
		*released = done;
	}
	return 0;
}

START_TEST(reapi_instance_repeated)
{
	struct proxy_backend *b = parse("reapi=grpc://h:1,instance=main");
	const struct proxy_reapi *r = b->reapi;
	unsigned char m[512];
	size_t n, rel;

	/* Protobuf keeps the last of a repeated field 1: "main" then "other" is "other". */
	n = wrap(m, "\x0a\x04main\x0a\x05other", 13);
	ck_assert_int_eq(check(r, V2, m, n, true), -EPERM);
	ck_assert_int_eq(check_bytewise(r, V2, m, n, &rel), -EPERM);
	ck_assert_uint_lt(rel, n); /* the message's end never went upstream */
	/* ... also after other fields, or with field 1 of another wire type. */
	n = wrap(m, "\x0a\x04main\x12\x01x\x0a\x05other", 16);
	ck_assert_int_eq(check(r, V2, m, n, true), -EPERM);
	n = wrap(m, "\x0a\x04main\x08\x01", 8);
	ck_assert_int_eq(check(r, V2, m, n, true), -EPERM);
	/* A tag past 32 bits that a truncating parser reads as field 1. */
	n = wrap(m, "\x0a\x04main\x8a\x80\x80\x80\x10\x05other", 17);
	ck_assert_int_eq(check(r, V2, m, n, true), -EPERM);
	/* Control: the same shapes with the allowed instance pass, byte by byte too. */
	n = wrap(m, "\x0a\x04main\x12\x01x\x0a\x04main", 15);
	ck_assert_int_eq(check(r, V2, m, n, true), 0);
	ck_assert_int_eq(check_bytewise(r, V2, m, n, &rel), 0);
	ck_assert_uint_eq(rel, n);
	/* A second message (ByteStream Write) naming another instance. */
	n = wrap(m, "\x0a\x18main/uploads/u/blobs/0/1\x52\x01x", 29);
	n += wrap(m + n, "\x0a\x19other/uploads/u/blobs/0/1\x52\x01x", 30);
	ck_assert_int_eq(check(r, "/google.bytestream.ByteStream/Write", m, n, true), -EPERM);
	n = wrap(m, "\x0a\x18main/uploads/u/blobs/0/1\x52\x01x", 29);
	n += wrap(m + n, "\x52\x01y", 3); /* control: later messages without field 1 */
	ck_assert_int_eq(check(r, "/google.bytestream.ByteStream/Write", m, n, true), 0);
	/* Keywords out of place: a server reading the instance by the last one. */
	{
		static const char *const bad[] = {"main/blobs/other/blobs/h/3",
						  "main/uploads/u/blobs/h/3/other/blobs/h/3",
						  "main/uploads/blobs/h/3",
						  "main/blobs/h/3/",
						  "main//blobs/h/3",
						  "main/blobs/h",
						  "main/uploads/u",
						  "main/compressed-blobs/zstd/h/3"};
		static const char *const good[] = {
		    "main/blobs/h/3", "main/blobs/sha256/h/3", "main/uploads/u/blobs/h/3",
		    "main/uploads/u/compressed-blobs/zstd/h/3", "main/uploads/u/blobs/h/3/meta"};

		for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
			n = frame(m, bad[i]);
			ck_assert_msg(check(r, BSR, m, n, true) == -EPERM, "%s", bad[i]);
		}
		for (size_t i = 0; i < ARB_ARRAY_LEN(good); i++) {
			n = frame(m, good[i]);
			ck_assert_msg(check(r, BSR, m, n, true) == 0, "%s", good[i]);
		}
	}
	/* A length prefix that lies (longer than what came) at the request's end. */
	n = wrap(m, "\x0a\x04main", 6);
	m[4] = 9;
	ck_assert_int_eq(check(r, V2, m, n, true), -EPERM);
	/* A nested length past the message's end. */
	n = wrap(m, "\x0a\x04main\x12\x7fx", 9);
	ck_assert_int_eq(check(r, V2, m, n, true), -EPERM);
	proxy_backend_free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reapi");
	TCase *tc = tcase_create("reapi");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, reapi_spec);
	tcase_add_test(tc, reapi_methods);
	tcase_add_test(tc, reapi_instance);
	tcase_add_test(tc, reapi_instance_repeated);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
