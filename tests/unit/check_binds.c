/* tests/unit/check_binds.c: bind files (the TOML subset, includes, rules) and grants. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binds/binds_internal.h"

#define HOME "/home/u"
/* A string literal and its length. */
#define T(lit) lit, strlen(lit)

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/check_binds.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	ck_assert_int_eq(util_rm_rf(tmpdir), 0);
}

/* Loads text as "t.toml" into a fresh set; *msg: the error message (static copy). */
static struct binds_set *load_text(const char *text, int *rc, char *msg, size_t msg_size)
{
	struct binds_set *s = NULL;

	ck_assert_int_eq(binds_set_new(&s), 0);
	util_err_clear();
	*rc = binds_text_load(s, "t.toml", text, strlen(text), HOME);
	snprintf(msg, msg_size, "%s", *rc < 0 ? util_err_msg() : "");
	return s;
}

/* Expects text to fail with message `want` exactly. */
static void expect_error(const char *text, const char *want)
{
	char msg[1024];
	int rc;
	struct binds_set *s = load_text(text, &rc, msg, sizeof(msg));
	size_t n;

	ck_assert_msg(rc < 0, "no error for: %s", text);
	ck_assert_str_eq(msg, want);
	/* A failed load leaves the set as it was: empty. */
	binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 0);
	binds_set_env(s, &n);
	ck_assert_uint_eq(n, 0);
	binds_set_path(s, &n);
	ck_assert_uint_eq(n, 0);
	binds_set_mcp(s, &n);
	ck_assert_uint_eq(n, 0);
	binds_set_free(s);
}

static struct binds_set *expect_ok(const char *text)
{
	char msg[1024];
	int rc;
	struct binds_set *s = load_text(text, &rc, msg, sizeof(msg));

	ck_assert_msg(rc == 0, "error %s for: %s", msg, text);
	return s;
}

static void write_file(const char *name, const char *text)
{
	char *p = util_path_join(tmpdir, name);

	ck_assert_int_eq(util_write_file(p, text, strlen(text), 0644), 0);
	free(p);
}

START_TEST(every_key)
{
	struct binds_set *s = expect_ok("# a bind file\n"
					"ro = [\"~/depot_tools\", '/opt/x']\n"
					"rw = [\"/srv/data\"]  # trailing comment\n"
					"tmpfs = [\"~/.cache/thing\"]\n"
					"path = [\"~/depot_tools/bin\", \"/opt/x\"]\n"
					"env = { A = \"1\", \"B\" = 'two words', C = \"\" }\n");
	const struct binds_mount *m;
	const struct binds_dir *d;
	const struct binds_var *v;
	size_t n;

	m = binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(m[0].kind, BINDS_RO);
	ck_assert_str_eq(m[0].path, HOME "/depot_tools");
	ck_assert_str_eq(m[0].origin, "t.toml:2:7");
	ck_assert_int_eq(m[1].kind, BINDS_RO);
	ck_assert_str_eq(m[1].path, "/opt/x");
	ck_assert_str_eq(m[1].origin, "t.toml:2:24");
	ck_assert_int_eq(m[2].kind, BINDS_RW);
	ck_assert_str_eq(m[2].path, "/srv/data");
	ck_assert_int_eq(m[3].kind, BINDS_TMPFS);
	ck_assert_str_eq(m[3].path, HOME "/.cache/thing");
	d = binds_set_path(s, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(d[0].dir, HOME "/depot_tools/bin");
	ck_assert_str_eq(d[1].dir, "/opt/x");
	ck_assert_str_eq(d[0].origin, "t.toml:5:9");
	v = binds_set_env(s, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[0].name, "A");
	ck_assert_str_eq(v[0].value, "1");
	ck_assert_str_eq(v[1].name, "B");
	ck_assert_str_eq(v[1].value, "two words");
	ck_assert_str_eq(v[2].name, "C");
	ck_assert_str_eq(v[2].value, "");
	binds_set_free(s);
}
END_TEST

START_TEST(env_table_and_multiline_arrays)
{
	struct binds_set *s = expect_ok("\xef\xbb\xbfro = [\r\n"
					"  \"/a\", # first\r\n"
					"\r\n"
					"  \"/b\",\r\n"
					"]\r\n"
					"[env]\n"
					"GOFLAGS = \"-mod=mod\"\n"
					"  'Q_1' = \"x\\ty\\u00e9\\U0001F600\\\"\\\\\"\n");
	const struct binds_var *v;
	const struct binds_mount *m;
	size_t n;

	m = binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(m[1].path, "/b");
	ck_assert_str_eq(m[1].origin, "t.toml:4:3");
	v = binds_set_env(s, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0].name, "GOFLAGS");
	ck_assert_str_eq(v[0].value, "-mod=mod");
	ck_assert_str_eq(v[1].value, "x\ty\xc3\xa9\xf0\x9f\x98\x80\"\\");
	ck_assert_str_eq(v[1].origin, "t.toml:8:11");
	binds_set_free(s);
}
END_TEST

START_TEST(mcp_entries)
{
	/* Names, commands and paths as written, each once, in order, with where they came from. */
	struct binds_set *s = expect_ok("mcp = [\"docs\", '~/bin/srv', \"docs\",\n \"*\"]\n");
	const struct binds_mcp *m;
	size_t n;

	m = binds_set_mcp(s, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(m[0].select, "docs");
	ck_assert_str_eq(m[0].origin, "t.toml:1:8");
	ck_assert_str_eq(m[1].select, "~/bin/srv");
	ck_assert_str_eq(m[2].select, "*");
	ck_assert_str_eq(m[2].origin, "t.toml:2:2");
	binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 0);
	binds_set_free(s);
}
END_TEST

START_TEST(tilde_and_normalising)
{
	struct binds_set *s = expect_ok("ro = [\"~\", \"//opt///y/\"]\n"
					"tmpfs = [\"~/x/\"]\n");
	const struct binds_mount *m;
	size_t n;

	m = binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(m[0].path, HOME);
	ck_assert_str_eq(m[1].path, "/opt/y");
	ck_assert_str_eq(m[2].path, HOME "/x");
	ck_assert_int_eq(m[2].kind, BINDS_TMPFS);
	binds_set_free(s);
	/* "~" and "~/" are the same destination. */
	expect_error("ro = ['~']\ntmpfs = ['~/']\n",
		     "t.toml:2:10: tmpfs: /home/u is listed twice in this file");
	/* Across files the later one replaces the earlier in place. */
	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(binds_text_load(s, "1", T("ro = ['~/a', '/b']\n"), HOME), 0);
	ck_assert_int_eq(binds_text_load(s, "2", T("tmpfs = ['~/a/']\n"), HOME), 0);
	m = binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(m[0].path, HOME "/a");
	ck_assert_int_eq(m[0].kind, BINDS_TMPFS);
	ck_assert_str_eq(m[0].origin, "2:1:10");
	binds_set_free(s);
}
END_TEST

START_TEST(empty_files)
{
	const char *texts[] = {"",	    "\n\n",	  "# only a comment",
			       "ro = []\n", "env = {}\n", "[env]\n"};

	for (size_t i = 0; i < ARB_ARRAY_LEN(texts); i++) {
		struct binds_set *s = expect_ok(texts[i]);
		size_t n;

		binds_set_mounts(s, &n);
		ck_assert_uint_eq(n, 0);
		binds_set_free(s);
	}
}
END_TEST

/* Every error, with its line and column. */
START_TEST(errors)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
	    {"foo = []\n",
	     "t.toml:1:1: unknown key 'foo' (bind files know ro, rw, overlay, tmpfs, path, env, "
	     "mcp, backends, include)"},
	    {"mcp = [\"\"]\n", "t.toml:1:8: mcp: an empty entry (use \"*\" for all local servers)"},
	    {"mcp = [\"a\\tb\"]\n", "t.toml:1:8: mcp: a control character in 'a\tb'"},
	    {"mcp = \"x\"\n", "t.toml:1:7: 'mcp' takes an array of strings, found a string"},
	    {"ro = []\nro = []\n", "t.toml:2:1: duplicate key 'ro' (first at 1:1)"},
	    {"ro = \"/a\"\n", "t.toml:1:6: 'ro' takes an array of strings, found a string"},
	    {"rw = [1]\n", "t.toml:1:7: 'rw' takes strings only, found a number or date"},
	    {"tmpfs = [true]\n", "t.toml:1:10: 'tmpfs' takes strings only, found a boolean"},
	    {"path = [[\"/a\"]]\n", "t.toml:1:9: 'path' takes strings only, found an array"},
	    {"include = {}\n", "t.toml:1:11: 'include' takes an array of strings, found a table"},
	    {"env = [\"A\"]\n", "t.toml:1:7: 'env' takes a table of strings, found an array"},
	    {"env = { A = 1 }\n", "t.toml:1:13: 'A' takes a string, found a number or date"},
	    {"ro =\n", "t.toml:1:5: 'ro' takes an array of strings, found nothing"},
	    {"ro = [\"/a\"", "t.toml:1:11: unterminated array (missing ']')"},
	    {"ro = [\"/a\" \"/b\"]\n", "t.toml:1:12: expected ',' or ']' in an array, found '\"'"},
	    {"ro = [\"/a]\n", "t.toml:1:7: unterminated string"},
	    {"ro = ['/a\n", "t.toml:1:7: unterminated string"},
	    {"ro = [\"\"\"/a\"\"\"]\n",
	     "t.toml:1:7: multi-line strings are not supported in bind files"},
	    {"ro = [\"/a\\q\"]\n", "t.toml:1:10: unknown escape sequence in a string"},
	    {"ro = [\"/a\\u12\"]\n", "t.toml:1:10: escape needs 4 hexadecimal digits"},
	    {"ro = [\"/a\\u0000\"]\n", "t.toml:1:10: NUL (\\u0000) is not allowed in a string"},
	    {"ro = [\"/a\\ud800\"]\n", "t.toml:1:10: escape is not a Unicode scalar value"},
	    {"ro = [\"/a\x01\"]\n", "t.toml:1:10: control character 0x01 in a string"},
	    {"ro = [\"/\xc3(\"]\n", "t.toml:1:9: invalid UTF-8 in a string"},
	    {"# \x7f\n", "t.toml:1:3: control character 0x7f in a comment"},
	    {"ro = [] x\n", "t.toml:1:9: expected the end of the line, found 'x'"},
	    {"ro = []\rrw = []\n", "t.toml:1:8: carriage return without a line feed"},
	    {"ro.x = []\n", "t.toml:1:3: dotted keys are not supported in bind files"},
	    {"= []\n", "t.toml:1:1: expected a key, found '='"},
	    {"ro []\n", "t.toml:1:4: expected '=' after the key"},
	    {"[tools]\n", "t.toml:1:1: unknown table [tools] (bind files know only [env])"},
	    {"[[env]]\n", "t.toml:1:1: arrays of tables are not supported in bind files"},
	    {"[env\n", "t.toml:1:5: expected ']' to close the table header"},
	    {"env = {}\n[env]\n", "t.toml:2:1: env defined twice (first at 1:1)"},
	    {"[env]\nA = \"1\"\nA = \"2\"\n",
	     "t.toml:3:1: env variable 'A' set twice (first at 2:5)"},
	    {"[env]\n1A = \"x\"\n",
	     "t.toml:2:1: '1A' is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)"},
	    {"env = { A = \"1\",\n B = \"2\" }\n",
	     "t.toml:1:17: an inline table must close with '}' on the same line"},
	    {"env = { A = \"1\", }\n", "t.toml:1:18: trailing comma in an inline table"},
	    {"env = { A = \"1\" B }\n",
	     "t.toml:1:17: expected ',' or '}' in an inline table, found 'B'"},
	    {"ro = [\"rel/x\"]\n",
	     "t.toml:1:7: ro: 'rel/x' is not an absolute path (write /... or ~/...)"},
	    {"rw = [\"~bob/x\"]\n",
	     "t.toml:1:7: rw: '~bob/x': only '~' and '~/...' are expanded (~user is not)"},
	    {"tmpfs = [\"/a/../b\"]\n",
	     "t.toml:1:10: tmpfs: '/a/../b' must not contain '.' or '..' components"},
	    {"ro = [\"\"]\n", "t.toml:1:7: ro: empty path"},
	    {"ro = [\"/a\", \"/a/\"]\n", "t.toml:1:13: ro: /a is listed twice in this file"},
	    {"ro = [\"/a\"]\nrw = [\"/a\"]\n", "t.toml:2:7: rw: /a is listed twice in this file"},
	    {"ro = [\"/opt/a\"]\npath = [\"/opt/ab/bin\"]\n",
	     "t.toml:2:9: path: /opt/ab/bin is not covered by an ro, rw, overlay or tmpfs entry of "
	     "this "
	     "file (path grants no filesystem access by itself)"},
	    {"path = [\"/usr/bin\"]\n", "t.toml:1:9: path: /usr/bin is not covered by an ro, rw, "
					"overlay or tmpfs entry of this file "
					"(path grants no filesystem access by itself)"},
	    {"include = [\"/nonexistent/x.toml\"]\n",
	     "t.toml:1:12: include '/nonexistent/x.toml': No such file or directory"},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(cases); i++)
		expect_error(cases[i].text, cases[i].msg);
}
END_TEST

START_TEST(nul_byte)
{
	struct binds_set *s = NULL;

	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(binds_text_load(s, "n.toml", "ro = []\nrw\0", 11, HOME), -EINVAL);
	ck_assert_str_eq(util_err_msg(), "n.toml:2:3: NUL byte in a bind file");
	binds_set_free(s);
}
END_TEST

START_TEST(include_order)
{
	struct binds_set *s = NULL;
	const struct binds_mount *m;
	const struct binds_var *v;
	const struct binds_dir *d;
	char *main_file = util_path_join(tmpdir, "main.toml");
	char *want;
	size_t n;

	char *sub = util_path_join(tmpdir, "sub");

	ck_assert_int_eq(mkdir(sub, 0755), 0);
	free(sub);
	write_file("sub/a.toml",
		   "ro = [\"/x\"]\npath = [\"/x/bin\"]\nenv = { V = \"a\", W = \"a\" }\n"
		   "include = [\"b.toml\"]\n");
	write_file("sub/b.toml", "tmpfs = [\"/y\"]\npath = [\"/y\"]\nenv = { V = \"b\" }\n");
	/* The include comes after the own keys in the text and is still expanded first. */
	write_file("main.toml", "rw = [\"/x\"]\nenv = { V = \"main\" }\npath = [\"/x\"]\n"
				"include = [\"sub/a.toml\"]\n");
	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(binds_file_load(s, main_file, HOME), 0);
	m = binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 2);
	/* b's /y (innermost include first), then a's /x replaced by main's rw /x in place. */
	ck_assert_str_eq(m[0].path, "/y");
	ck_assert_str_eq(m[1].path, "/x");
	ck_assert_int_eq(m[1].kind, BINDS_RW);
	want = util_asprintf("%s:1:7", main_file);
	ck_assert_str_eq(m[1].origin, want);
	free(want);
	v = binds_set_env(s, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0].name, "V");
	ck_assert_str_eq(v[0].value, "main");
	ck_assert_str_eq(v[1].name, "W");
	ck_assert_str_eq(v[1].value, "a");
	/* PATH: main's first, then a's, then b's (each later source in front). */
	d = binds_set_path(s, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(d[0].dir, "/x");
	ck_assert_str_eq(d[1].dir, "/x/bin");
	ck_assert_str_eq(d[2].dir, "/y");
	binds_set_free(s);
	free(main_file);
}
END_TEST

START_TEST(include_cycle_and_depth)
{
	struct binds_set *s = NULL;
	char *a = util_path_join(tmpdir, "a.toml"), *want;

	write_file("a.toml", "include = [\"b.toml\"]\n");
	write_file("b.toml", "\n include = [ \"./a.toml\" ]\n");
	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(binds_file_load(s, a, HOME), -ELOOP);
	want = util_asprintf("%s/b.toml:2:14: include cycle: './a.toml' is already being loaded",
			     tmpdir);
	ck_assert_str_eq(util_err_msg(), want);
	free(want);
	/* A file including itself. */
	write_file("self.toml", "include = ['self.toml']\n");
	free(a);
	a = util_path_join(tmpdir, "self.toml");
	ck_assert_int_eq(binds_file_load(s, a, HOME), -ELOOP);
	/* A chain deeper than the limit: d0 -> d1 -> ... */
	for (int i = 0; i <= BINDS_MAX_DEPTH + 1; i++) {
		char name[32], text[64];

		snprintf(name, sizeof(name), "d%d.toml", i);
		snprintf(text, sizeof(text), "include = [\"d%d.toml\"]\n", i + 1);
		write_file(name, i == BINDS_MAX_DEPTH + 1 ? "" : text);
	}
	free(a);
	a = util_path_join(tmpdir, "d0.toml");
	ck_assert_int_eq(binds_file_load(s, a, HOME), -ELOOP);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "includes nest more than 8 deep"));
	want = util_asprintf("%s/d7.toml:1:12:", tmpdir);
	ck_assert_msg(util_str_has_prefix(util_err_msg(), want), "%s", util_err_msg());
	free(want);
	/* Exactly at the limit is fine: d2 .. d9 is 8 files. */
	free(a);
	a = util_path_join(tmpdir, "d2.toml");
	ck_assert_int_eq(binds_file_load(s, a, HOME), 0);
	/* A diamond (the same file twice, no cycle) is fine. */
	write_file("leaf.toml", "ro = ['/leaf']\n");
	write_file("l.toml", "include = ['leaf.toml']\n");
	write_file("r.toml", "include = ['leaf.toml']\n");
	write_file("top.toml", "include = ['l.toml', 'r.toml']\n");
	free(a);
	a = util_path_join(tmpdir, "top.toml");
	ck_assert_int_eq(binds_file_load(s, a, HOME), 0);
	binds_set_free(s);
	free(a);
}
END_TEST

START_TEST(include_errors_name_the_included_file)
{
	struct binds_set *s = NULL;
	char *a = util_path_join(tmpdir, "top.toml"), *want;

	write_file("bad.toml", "\n\nro = [1]\n");
	write_file("top.toml", "ro = ['/ok']\ninclude = ['bad.toml']\n");
	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(binds_file_load(s, a, HOME), -EINVAL);
	want = util_asprintf("%s/bad.toml:3:7: 'ro' takes strings only, found a number or date",
			     tmpdir);
	ck_assert_str_eq(util_err_msg(), want);
	free(want);
	/* Nothing of top.toml was added. */
	size_t n;

	binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(binds_file_load(s, "/nonexistent.toml", HOME), -ENOENT);
	ck_assert_str_eq(util_err_msg(),
			 "/nonexistent.toml: cannot read: No such file or directory");
	binds_set_free(s);
	free(a);
}
END_TEST

START_TEST(later_files_win)
{
	struct binds_set *s = NULL;
	const struct binds_var *v;
	const struct binds_dir *d;
	size_t n;

	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(
	    binds_text_load(s, "1.toml",
			    T("ro = ['/p']\npath = ['/p/a', '/p/b']\nenv = {X = '1'}\n"), HOME),
	    0);
	ck_assert_int_eq(binds_text_load(s, "2.toml",
					 T("rw = ['/p']\npath = ['/p/b']\nenv = {X = '2'}\n"),
					 HOME),
			 0);
	d = binds_set_path(s, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(d[0].dir, "/p/b");
	ck_assert_str_eq(d[0].origin, "2.toml:2:9");
	ck_assert_str_eq(d[1].dir, "/p/a");
	v = binds_set_env(s, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0].value, "2");
	ck_assert_int_eq(binds_set_mounts(s, &n)[0].kind, BINDS_RW);
	binds_set_free(s);
}
END_TEST

/* backends = [...]: the specification with its file options' paths expanded. */
START_TEST(backends_entries)
{
	struct binds_set *s = NULL;
	const struct binds_backend *b;
	size_t n;

	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(
	    binds_text_load(
		s, "1.toml",
		T("backends = [\n  \"reapi=grpcs://rbe.example:443,instance=projects/p/i,"
		  "token-file=~/.config/rbe.token,ca-file=/etc//ca.pem\",\n"
		  "  'anthropic',\n"
		  "  'gem=https://g.example,port=9000,allow=POST:/v1/*,key-json=~/k.json#/a/b',\n"
		  "  'vertex,project=p,region=r,adc=~/adc.json',\n"
		  "  'r2=grpc://h:1,token-command=/usr/bin/helper --x=1',\n]\n"),
		HOME),
	    0);
	b = binds_set_backends(s, &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(b[0].name, "reapi");
	ck_assert_str_eq(b[0].spec, "reapi=grpcs://rbe.example:443,instance=projects/p/i,"
				    "token-file=/home/u/.config/rbe.token,ca-file=/etc/ca.pem");
	ck_assert_str_eq(b[0].origin, "1.toml:2:3");
	ck_assert_str_eq(b[1].name, "anthropic");
	ck_assert_str_eq(b[1].spec, "anthropic");
	ck_assert_str_eq(b[2].spec, "gem=https://g.example,port=9000,allow=POST:/v1/*,"
				    "key-json=/home/u/k.json#/a/b");
	ck_assert_str_eq(b[3].spec, "vertex,project=p,region=r,adc=/home/u/adc.json");
	/* A command is not a path: as written. */
	ck_assert_str_eq(b[4].spec, "r2=grpc://h:1,token-command=/usr/bin/helper --x=1");
	/* A later file's backend of the same name replaces it, in its place. */
	ck_assert_int_eq(
	    binds_text_load(s, "2.toml", T("backends = ['reapi=grpc://local:8980']\n"), HOME), 0);
	b = binds_set_backends(s, &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(b[0].spec, "reapi=grpc://local:8980");
	ck_assert_str_eq(b[0].origin, "2.toml:1:13");
	ck_assert_str_eq(b[1].name, "anthropic");
	binds_set_free(s);
}
END_TEST

START_TEST(backends_errors)
{
	expect_error("backends = ['reapi=grpc://h:1,token-file=rel/t']\n",
		     "t.toml:1:13: backends: token-file: 'rel/t' is not an absolute path (write "
		     "/... or ~/...)");
	expect_error("\nbackends = ['x,key-file=/a/../b']\n",
		     "t.toml:2:13: backends: key-file: '/a/../b' must not contain '.' or '..' "
		     "components");
	expect_error("backends = ['x,ca-file=~bob/ca']\n",
		     "t.toml:1:13: backends: ca-file: '~bob/ca': only '~' and '~/...' are expanded "
		     "(~user is not)");
	expect_error("backends = ['vertex,adc=adc.json']\n",
		     "t.toml:1:13: backends: adc: 'adc.json' is not an absolute path (write /... "
		     "or ~/...)");
	expect_error(
	    "backends = ['x,key-json=k.json#/a']\n",
	    "t.toml:1:13: backends: key-json: 'k.json' is not an absolute path (write /... "
	    "or ~/...)");
	expect_error("backends = ['Evil=https://x']\n",
		     "t.toml:1:13: backends: 'Evil' is not a backend name (1-32 of a-z, 0-9, '-')");
	expect_error("backends = ['=https://x']\n",
		     "t.toml:1:13: backends: '' is not a backend name (1-32 of a-z, 0-9, '-')");
	expect_error("backends = ['x,novalue']\n",
		     "t.toml:1:13: backends: option 'novalue' is not KEY=VALUE");
	expect_error("backends = ['x,,port=1']\n",
		     "t.toml:1:13: backends: option '' is not KEY=VALUE");
	expect_error("backends = [\"x,port=1\\u0007\"]\n",
		     "t.toml:1:13: backends: a control character in a backend");
	expect_error("backends = ['reapi=grpc://a:1', 'reapi,instance=x']\n",
		     "t.toml:1:33: backends: backend reapi is listed twice in this file");
	expect_error("backends = ['anthropic', 'anthropic']\n",
		     "t.toml:1:26: backends: backend anthropic is listed twice in this file");
	expect_error("backends = 'reapi'\n",
		     "t.toml:1:12: 'backends' takes an array of strings, found a string");
}
END_TEST

/* An included file's backends carry their own file and place; the includer's win. */
START_TEST(backends_include)
{
	struct binds_set *s = NULL;
	const struct binds_backend *b;
	char *top = util_path_join(tmpdir, "top.toml"), *want;
	char real[PATH_MAX];
	size_t n;

	write_file("inc.toml", "backends = ['reapi=grpc://inc:1', 'openai']\n");
	write_file("top.toml", "include = ['inc.toml']\nbackends = ['reapi=grpc://top:1']\n");
	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(binds_file_load(s, top, HOME), 0);
	b = binds_set_backends(s, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(b[0].spec, "reapi=grpc://top:1");
	want = util_asprintf("%s:2:13", top);
	ck_assert_str_eq(b[0].origin, want);
	free(want);
	ck_assert_ptr_nonnull(realpath(top, real));
	ck_assert_str_eq(b[0].file, real);
	ck_assert_str_eq(b[1].name, "openai");
	want = util_asprintf("%s/inc.toml", tmpdir);
	ck_assert_ptr_nonnull(realpath(want, real));
	ck_assert_str_eq(b[1].file, real);
	free(want);
	binds_set_free(s);
	free(top);
}
END_TEST

START_TEST(grants)
{
	struct binds_set *s = NULL;
	const struct binds_grant_info *g;
	const struct binds_mount *m;
	const struct binds_var *v;
	const struct binds_dir *d;
	char *home = util_path_join(tmpdir, "home"), *p;
	struct binds_grant_ctx ctx = {.home = home, .cache = "/box/cache"};
	size_t n;
	bool found = false;

	g = binds_grants(&n);
	ck_assert_uint_ge(n, 4);
	ck_assert_str_eq(g[0].name, "node");
	ck_assert_str_eq(g[1].name, "python");
	ck_assert_str_eq(g[2].name, "rust");
	ck_assert_str_eq(g[3].name, "go");
	/* A host with rustup and cargo's bin only. */
	p = util_path_join(home, ".rustup/toolchains");
	ck_assert_int_eq(util_mkdir_p(p, 0755), 0);
	free(p);
	p = util_path_join(home, ".cargo/bin");
	ck_assert_int_eq(util_mkdir_p(p, 0755), 0);
	free(p);
	ck_assert_int_eq(binds_set_new(&s), 0);
	ck_assert_int_eq(binds_grant_add(s, "rust", &ctx), 0);
	m = binds_set_mounts(s, &n);
	ck_assert_uint_eq(n, 2);
	p = util_path_join(home, ".rustup");
	ck_assert_str_eq(m[0].path, p);
	free(p);
	ck_assert_int_eq(m[0].kind, BINDS_RO);
	ck_assert_str_eq(m[0].origin, "grant rust");
	p = util_path_join(home, ".cargo/bin");
	ck_assert_str_eq(m[1].path, p);
	d = binds_set_path(s, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(d[0].dir, p);
	free(p);
	v = binds_set_env(s, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, "CARGO_TARGET_DIR")) {
			ck_assert_str_eq(v[i].value, "/box/cache/cargo-target");
			found = true;
		}
	ck_assert(found);
	/* A bind file loaded after a grant wins over it. */
	ck_assert_int_eq(
	    binds_text_load(s, "u.toml", T("env = { CARGO_NET_OFFLINE = 'false' }\n"), home), 0);
	v = binds_set_env(s, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, "CARGO_NET_OFFLINE"))
			ck_assert_str_eq(v[i].value, "false");
	ck_assert_int_eq(binds_grant_add(s, "cobol", &ctx), -ENOENT);
	ck_assert_str_eq(util_err_msg(),
			 "unknown grant 'cobol' (available: node, python, rust, go; "
			 "see 'arborinth grant list')");
	/* Every grant loads on a home that has none of it. */
	for (size_t i = 0; i < 4; i++)
		ck_assert_int_eq(binds_grant_add(s, g[i].name, &ctx), 0);
	binds_set_free(s);
	free(home);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("binds");
	TCase *tc = tcase_create("binds");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, every_key);
	tcase_add_test(tc, env_table_and_multiline_arrays);
	tcase_add_test(tc, tilde_and_normalising);
	tcase_add_test(tc, mcp_entries);
	tcase_add_test(tc, empty_files);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, nul_byte);
	tcase_add_test(tc, include_order);
	tcase_add_test(tc, include_cycle_and_depth);
	tcase_add_test(tc, include_errors_name_the_included_file);
	tcase_add_test(tc, later_files_win);
	tcase_add_test(tc, grants);
	tcase_add_test(tc, backends_entries);
	tcase_add_test(tc, backends_errors);
	tcase_add_test(tc, backends_include);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
