/* tests/unit/check_util.c: util helpers. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
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

	/* A home too long for the stack buffer takes the allocating way, with the same answers. */
	static char home[PATH_MAX + 16], path[PATH_MAX + 64];

	memset(home, 'h', sizeof(home) - 1);
	home[0] = '/';
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", home);
	ck_assert(util_secret_path(path, home, &hit));
	ck_assert_int_eq(strlen(hit), strlen(home) + strlen("/.ssh"));
	ck_assert_str_eq(hit + strlen(home), "/.ssh");
	free(hit);
	snprintf(path, sizeof(path), "%s/.cargo/bin", home);
	ck_assert(!util_secret_path(path, home, &hit));
	ck_assert_ptr_null(hit);
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
	/* A prefix added to the current message, the message being an argument. */
	ck_assert_int_eq(util_err(-ENOENT, "--binds %s: %s", "f.toml", util_err_msg()), -ENOENT);
	ck_assert_str_eq(util_err_msg(), "--binds f.toml: bad thing");
}
END_TEST

/* The TOML text as compact JSON with sorted keys, or "ERR: message". */
static char *toml_json(const char *text)
{
	json_t *j = NULL;
	char *s;

	if (util_toml_parse("t.toml", text, strlen(text), &j) < 0)
		return util_asprintf("ERR: %s", util_err_msg());
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
	json_decref(j);
	return s;
}

#define TOML_EQ(text, want)                                                                        \
	do {                                                                                       \
		char *got_ = toml_json(text);                                                      \
		ck_assert_str_eq(got_, want);                                                      \
		free(got_);                                                                        \
	} while (0)

START_TEST(toml_values)
{
	TOML_EQ("", "{}");
	TOML_EQ("a = \"x\\ty\\u00e9\\U0001F600\" # c\nb='c:\\p'\n",
		"{\"a\":\"x\\ty\xc3\xa9\xf0\x9f\x98\x80\",\"b\":\"c:\\\\p\"}");
	TOML_EQ("i = 1_000\nh = 0xff\no = 0o17\nb = 0b101\nn = -7\np = +3\n",
		"{\"b\":5,\"h\":255,\"i\":1000,\"n\":-7,\"o\":15,\"p\":3}");
	TOML_EQ("f = 1.5\ne = 2e3\nt = true\nu = false\n",
		"{\"e\":2000.0,\"f\":1.5,\"t\":true,\"u\":false}");
	TOML_EQ("i = -inf\nn = nan\n", "{\"i\":\"-inf\",\"n\":\"nan\"}");
	TOML_EQ(
	    "d = 1979-05-27T07:32:00Z\ns = 1979-05-27 07:32:00\nt = 07:32:00\n",
	    "{\"d\":\"1979-05-27T07:32:00Z\",\"s\":\"1979-05-27 07:32:00\",\"t\":\"07:32:00\"}");
	TOML_EQ("m = \"\"\"\nline1\nline2 \\\n   joined\"\"\"\nl = '''\nraw\\n'''\n",
		"{\"l\":\"raw\\\\n\",\"m\":\"line1\\nline2 joined\"}");
	TOML_EQ("q = \"\"\"a\"\"\"\"\"\n", "{\"q\":\"a\\\"\\\"\"}");
	TOML_EQ("a = [1, [2, 3], \"x\",\n  # comment\n  {k = 'v'},\n]\n",
		"{\"a\":[1,[2,3],\"x\",{\"k\":\"v\"}]}");
	TOML_EQ("\xEF\xBB\xBFx = 1\r\ny = 2\r\n", "{\"x\":1,\"y\":2}");
}
END_TEST

START_TEST(toml_tables)
{
	/* Codex's config: dotted keys, sub-tables, inline tables, arrays of tables. */
	TOML_EQ("model = \"o3\"\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"d\"]\n"
		"env = { TOKEN = \"t\" }\nstartup_timeout_sec = 20\n"
		"[mcp_servers.\"my srv\".env]\nA = 'b'\n[mcp_servers.remote]\nurl = 'https://x'\n",
		"{\"mcp_servers\":{\"docs\":{\"args\":[\"-y\",\"d\"],\"command\":\"npx\","
		"\"env\":{\"TOKEN\":\"t\"},\"startup_timeout_sec\":20},\"my srv\":{\"env\":{\"A\":"
		"\"b\"}},\"remote\":{\"url\":\"https://x\"}},\"model\":\"o3\"}");
	TOML_EQ("a.b.c = 1\na.b.d = 2\n[x]\ny.z = true\n",
		"{\"a\":{\"b\":{\"c\":1,\"d\":2}},\"x\":{\"y\":{\"z\":true}}}");
	TOML_EQ("[[p]]\nn = 1\n[p.q]\nr = 2\n[[p]]\nn = 3\n",
		"{\"p\":[{\"n\":1,\"q\":{\"r\":2}},{\"n\":3}]}");
	TOML_EQ("t = { a = 1,\n b = 2, }\n", "{\"t\":{\"a\":1,\"b\":2}}");
}
END_TEST

static void toml_err(const char *text, const char *want)
{
	char *got = toml_json(text);

	ck_assert_msg(strstr(got, want), "%s: got %s, want %s", text, got, want);
	free(got);
}

START_TEST(toml_errors)
{
	char deep[400];

	toml_err("a = 1\na = 2\n", "t.toml:2:6: key 'a' is defined twice");
	toml_err("a = 1\n[a]\n", "t.toml:2:4: key 'a' is already a value");
	toml_err("a = \"open\n", "control character in a string");
	toml_err("a = \"open", "unterminated string");
	toml_err("a = \"x\\q\"\n", "unknown escape \\q");
	toml_err("a = 1 b = 2\n", "expected the end of the line");
	toml_err("a = 01\n", "bad number");
	toml_err("a = 1__0\n", "misplaced '_'");
	toml_err("a = [1 2]\n", "expected ',' or ']'");
	toml_err("a = \"\\uD800\"\n", "not a Unicode scalar value");
	toml_err("= 1\n", "expected a key");
	toml_err("a =\n", "expected a value");
	toml_err("a = \"\xff\"\n", "not valid UTF-8");
	toml_err("[[a]]\n[[a]\n", "expected ']]'");
	toml_err("a = 1\n[[a]]\n", "not an array of tables");
	memset(deep, '[', sizeof(deep));
	memcpy(deep, "a = ", 4);
	deep[sizeof(deep) - 1] = '\0';
	toml_err(deep, "nested too deep");
}
END_TEST

/* quote(in) is want, and unquote gives in back. */
static void quote_is(const char *in, size_t n, const char *want)
{
	char *q = util_quoten(in, n), *back = NULL;
	size_t len = 0;

	ck_assert_ptr_nonnull(q);
	ck_assert_str_eq(q, want);
	ck_assert_int_eq(util_unquote(q, &back, &len), 0);
	ck_assert_uint_eq(len, n);
	ck_assert_mem_eq(back, in, n);
	free(q);
	free(back);
}

START_TEST(quote_names)
{
	quote_is("plain/name.c", 12, "plain/name.c");
	quote_is("caf\xc3\xa9 \xe2\x82\xac", 9, "caf\xc3\xa9 \xe2\x82\xac"); /* UTF-8 kept */
	quote_is("a\nb", 3, "\"a\\nb\"");
	quote_is("\033[2K\r", 5, "\"\\033[2K\\r\"");
	quote_is("t\tq\"b\\", 6, "\"t\\tq\\\"b\\\\\"");
	quote_is("\xff\xfe", 2, "\"\\377\\376\""); /* not UTF-8 */
	quote_is("\xc2\x9b"
		 "1m",
		 4, "\"\\302\\2331m\""); /* C1 CSI */
	quote_is("a\xe2\x80\xae"
		 "b",
		 5, "\"a\\342\\200\\256b\"");		    /* RLO */
	quote_is("\xed\xa0\x80", 3, "\"\\355\\240\\200\""); /* a surrogate */
	quote_is("\xc0\xaf", 2, "\"\\300\\257\"");	    /* overlong '/' */
	quote_is("\x7f", 1, "\"\\177\"");
	quote_is("nul\0x", 5, "\"nul\\000x\"");
	quote_is("", 0, "");
	ck_assert(!util_quote_needed("ok \xc3\xa9", 5));
	ck_assert(util_quote_needed("\"", 1));
}
END_TEST

START_TEST(quote_unquote_rejects)
{
	static const char *const bad[] = {"\"open",    "\"a\"b",    "\"\\q\"", "\"\\38\"",
					  "\"\\400\"", "\"end\\\"", "\""};
	char *out = NULL;
	size_t n = 0;

	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		ck_assert_msg(util_unquote(bad[i], &out, &n) == -EINVAL, "%s", bad[i]);
		ck_assert_ptr_null(out);
	}
}
END_TEST

START_TEST(quote_shell_and_text)
{
	char *s = util_quote_shell("it's\n\033");
	char *t = util_quote_text("file 'a\nb' \"q\" \xff");
	char *u = util_quote_shell("a b");

	ck_assert_str_eq(s, "$'it\\'s\\n\\033'");
	ck_assert_str_eq(t, "file 'a\\nb' \"q\" \\377");
	ck_assert_str_eq(u, "'a b'");
	free(s);
	free(t);
	free(u);
}
END_TEST

START_TEST(json_bytes_exact)
{
	json_t *a = util_json_bytes("caf\xc3\xa9\n"), *b = util_json_bytes("a\xff"),
	       *c = util_json_bytes(NULL);

	ck_assert_str_eq(json_string_value(a), "caf\xc3\xa9\n");
	ck_assert_str_eq(json_string_value(json_object_get(b, "hex")), "61ff");
	ck_assert(json_is_null(c));
	json_decref(a);
	json_decref(b);
	json_decref(c);
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
	tcase_add_test(tc, quote_names);
	tcase_add_test(tc, quote_unquote_rejects);
	tcase_add_test(tc, quote_shell_and_text);
	tcase_add_test(tc, json_bytes_exact);
	tcase_add_test(tc, jsonc_strip);
	tcase_add_test(tc, toml_values);
	tcase_add_test(tc, toml_tables);
	tcase_add_test(tc, toml_errors);
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
