/* tests/unit/check_util.c: util helpers. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

START_TEST(utf8_accepts_valid)
{
	ck_assert(util_utf8_valid("plain", 5));
	ck_assert(util_utf8_valid("caf\xc3\xa9", 5));
	ck_assert(util_utf8_valid("\xe2\x82\xac", 3));
	ck_assert(util_utf8_valid("\xf0\x9f\x98\x80", 4));
}
END_TEST

START_TEST(utf8_rejects_invalid)
{
	ck_assert(!util_utf8_valid("\xc3", 1));		    /* truncated */
	ck_assert(!util_utf8_valid("\xc0\xaf", 2));	    /* overlong '/' */
	ck_assert(!util_utf8_valid("\xed\xa0\x80", 3));	    /* surrogate */
	ck_assert(!util_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	ck_assert(!util_utf8_valid("\xff", 1));
	ck_assert(!util_utf8_valid("a\x80", 2));
}
END_TEST

START_TEST(path_join)
{
	char *a = util_path_join("/x", "y");
	char *b = util_path_join("/x/", "y");

	ck_assert_str_eq(a, "/x/y");
	ck_assert_str_eq(b, "/x/y");
	free(a);
	free(b);
}
END_TEST

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/check_util.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

START_TEST(shell_quote)
{
	static const char *const cases[][2] = {
	    {"/home/u/.arborinth/proxy/a.key", "/home/u/.arborinth/proxy/a.key"},
	    {"", "''"},
	    {"a b", "'a b'"},
	    {"it's", "'it'\\''s'"},
	    {"$HOME;rm -rf /", "'$HOME;rm -rf /'"},
	    {"'", "''\\'''"},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(cases); i++) {
		char *q = util_shell_quote(cases[i][0]);

		ck_assert_ptr_nonnull(q);
		ck_assert_str_eq(q, cases[i][1]);
		free(q);
	}
}
END_TEST

/* JSONC: comments and trailing commas become spaces, strings are left alone. */
START_TEST(jsonc_strip)
{
	static const char *const cases[][2] = {
	    {"{\"a\": 1, // one\n\"b\": [1, 2,],}", "{\"a\": 1,       \n\"b\": [1, 2 ] }"},
	    {"/* head */{\"u\": \"http://x//y /* no */\"}",
	     "          {\"u\": \"http://x//y /* no */\"}"},
	    {"{\"q\": \"a\\\"//b\", /* x\ny */ \"c\": 3}",
	     "{\"q\": \"a\\\"//b\",     \n     \"c\": 3}"},
	    {"[1, /* , */ ]", "[1          ]"},
	    {"{\"s\": \",}\"}", "{\"s\": \",}\"}"},
	    {"[1] /* open", "[1]        "},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(cases); i++) {
		char *s = strdup(cases[i][0]);

		ck_assert_ptr_nonnull(s);
		util_jsonc_strip(s, strlen(s));
		ck_assert_str_eq(s, cases[i][1]);
		free(s);
	}
}
END_TEST

#define HOME "/home/u"

START_TEST(secrets)
{
	char *hit = NULL;

	ck_assert(util_secret_path(HOME "/.ssh", HOME, &hit));
	ck_assert_str_eq(hit, HOME "/.ssh");
	free(hit);
	ck_assert(util_secret_path(HOME "/.ssh/id_ed25519", HOME, NULL));
	ck_assert(util_secret_path(HOME "/.claude", HOME, &hit)); /* contains the credentials */
	ck_assert_str_eq(hit, HOME "/.claude/.credentials.json");
	free(hit);
	ck_assert(util_secret_path(HOME, HOME, NULL));
	ck_assert(util_secret_path("/", HOME, NULL));
	ck_assert(util_secret_path(HOME "/.codex/auth.json", HOME, NULL));
	ck_assert(util_secret_path(HOME "/.cargo", HOME, NULL));
	ck_assert(!util_secret_path(HOME "/.cargo/bin", HOME, NULL));
	ck_assert(!util_secret_path(HOME "/.claude/settings.json", HOME, &hit));
	ck_assert_ptr_null(hit);
	ck_assert(!util_secret_path(HOME "/.sshx", HOME, NULL));
	ck_assert(!util_secret_path("/opt", HOME, NULL));
	ck_assert(util_path_under("/a/b", "/a") && util_path_under("/a", "/"));
	ck_assert(!util_path_under("/ab", "/a"));
}
END_TEST

/* A credential name of the list, found relative to a tool's own folder. */
START_TEST(secrets_inside)
{
	char dir[] = "/tmp/check_util.XXXXXX", *p, *hit = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert(!util_secret_inside(dir, &hit));
	ck_assert_ptr_null(hit);
	p = util_path_join(dir, ".netrc");
	ck_assert_int_eq(util_write_file(p, "x", 1, 0600), 0);
	ck_assert(util_secret_inside(dir, &hit));
	ck_assert_str_eq(hit, p);
	free(hit);
	free(p);
	ck_assert_int_eq(util_rm_rf(dir), 0);
}
END_TEST

START_TEST(files_roundtrip_and_rm_rf_no_follow)
{
	char *buf = NULL, *p, *outside, *link;
	size_t len = 0;

	mk_tmp();
	p = util_asprintf("%s/a/b/c", tmpdir);
	ck_assert_int_eq(util_mkdir_p(p, 0755), 0);
	ck_assert_int_eq(util_mkdir_p(p, 0755), 0);
	free(p);
	p = util_asprintf("%s/a/b/c/f", tmpdir);
	ck_assert_int_eq(util_write_file(p, "data", 4, 0600), 0);
	ck_assert_int_eq(util_read_file(p, &buf, &len), 0);
	ck_assert_uint_eq(len, 4);
	ck_assert_str_eq(buf, "data");
	free(buf);
	/* rm -rf must not follow a symlink out of the tree. */
	outside = util_asprintf("%s-outside", tmpdir);
	ck_assert_int_eq(util_mkdir_p(outside, 0755), 0);
	free(p);
	p = util_asprintf("%s/keep", outside);
	ck_assert_int_eq(util_write_file(p, "k", 1, 0644), 0);
	link = util_asprintf("%s/a/escape", tmpdir);
	ck_assert_int_eq(symlink(outside, link), 0);
	ck_assert_int_eq(util_rm_rf(tmpdir), 0);
	ck_assert_int_eq(access(tmpdir, F_OK), -1);
	ck_assert_int_eq(access(p, F_OK), 0);
	ck_assert_int_eq(util_rm_rf(outside), 0);
	ck_assert_int_eq(util_read_file(p, &buf, &len), -ENOENT);
	free(p);
	free(outside);
	free(link);
}
END_TEST

START_TEST(append_line_once)
{
	char *p, *buf = NULL;

	mk_tmp();
	p = util_asprintf("%s/exclude", tmpdir);
	ck_assert_int_eq(util_write_file(p, "# comment", 9, 0644), 0);
	ck_assert_int_eq(util_append_line_once(p, "/.arborinth/"), 0);
	ck_assert_int_eq(util_append_line_once(p, "/.arborinth/"), 0);
	ck_assert_int_eq(util_read_file(p, &buf, NULL), 0);
	ck_assert_str_eq(buf, "# comment\n/.arborinth/\n");
	free(buf);
	free(p);
	ck_assert_int_eq(util_rm_rf(tmpdir), 0);
}
END_TEST

START_TEST(copy_fd_whole_file)
{
	char *a, *b, *buf = NULL;
	size_t len = 0, n = 200000;
	char *data = malloc(n);
	int src, dst;

	mk_tmp();
	for (size_t i = 0; i < n; i++)
		data[i] = (char)(i * 7 + i / 1000);
	a = util_asprintf("%s/a", tmpdir);
	b = util_asprintf("%s/b", tmpdir);
	ck_assert_int_eq(util_write_file(a, data, n, 0644), 0);
	src = open(a, O_RDONLY);
	dst = open(b, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(src, 0);
	ck_assert_int_ge(dst, 0);
	ck_assert_int_eq(util_copy_fd(dst, src), 0);
	close(src);
	close(dst);
	ck_assert_int_eq(util_read_file(b, &buf, &len), 0);
	ck_assert_uint_eq(len, n);
	ck_assert(memcmp(buf, data, n) == 0);
	free(buf);
	free(a);
	free(b);
	free(data);
	ck_assert_int_eq(util_rm_rf(tmpdir), 0);
}
END_TEST

START_TEST(exit_status)
{
	ck_assert_int_eq(util_wait_status_to_exit(3 << 8), 3);
	ck_assert_int_eq(util_wait_status_to_exit(9), 137);
}
END_TEST

START_TEST(err_message)
{
	ck_assert_int_eq(util_err(-EINVAL, "bad %s", "thing"), -EINVAL);
	ck_assert_str_eq(util_err_msg(), "bad thing");
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("strings");

	tcase_add_test(tc, utf8_accepts_valid);
	tcase_add_test(tc, utf8_rejects_invalid);
	tcase_add_test(tc, path_join);
	tcase_add_test(tc, shell_quote);
	tcase_add_test(tc, jsonc_strip);
	tcase_add_test(tc, err_message);
	tcase_add_test(tc, secrets);
	suite_add_tcase(s, tc);
	tc = tcase_create("files");
	tcase_add_test(tc, files_roundtrip_and_rm_rf_no_follow);
	tcase_add_test(tc, append_line_once);
	tcase_add_test(tc, copy_fd_whole_file);
	tcase_add_test(tc, secrets_inside);
	suite_add_tcase(s, tc);
	tc = tcase_create("process");
	tcase_add_test(tc, exit_status);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(util_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
