/* tests/unit/check_token_cache.c: the tokens one user's proxies share (proxy/token_cache.c,
 * flock.c): the cache file's parser against hostile content, one mint for many processes, a
 * refused token minted again once per 10 min, and what a crash, a corrupt file or a planted
 * link leave behind. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proxy/login_internal.h"
#include "proxy/token_cache.h"

#define KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const int64_t NOW = 1800000000000LL; /* ms: 2027 */

static int parse(const char *text, struct proxy_token *t)
{
	return proxy_token_parse(text, strlen(text), KEY, NOW, t);
}

START_TEST(parse_good_and_roundtrip)
{
	struct proxy_token t = {0}, in = {"ya29.a0-b_c~d+e/f==", NOW + 3600000, NOW};
	char *text = proxy_token_format(&in, KEY);

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(parse(text, &t), 0);
	ck_assert_str_eq(t.token, in.token);
	ck_assert(t.expires_ms == in.expires_ms && t.minted_ms == in.minted_ms);
	proxy_token_clear(&t);
	ck_assert_ptr_null(t.token);
	/* Every truncation of a good entry is refused (a crash mid-write, a full disk). */
	for (size_t n = 0; n < strlen(text); n++) {
		ck_assert_int_eq(proxy_token_parse(text, n, KEY, NOW, &t), -EINVAL);
		ck_assert_ptr_null(t.token);
	}
	/* Another credential's entry (a file copied under this name) is not this one's. */
	ck_assert_int_eq(
	    proxy_token_parse(text, strlen(text),
			      "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			      NOW, &t),
	    -EINVAL);
	free(text);
}
END_TEST

START_TEST(parse_hostile)
{
#define E(tok, exp, mint)                                                                          \
	"{\"version\":1,\"key\":\"" KEY "\",\"token\":" tok ",\"expires_ms\":" exp                 \
	",\"minted_ms\":" mint "}"
	static const char *const bad[] = {
	    "",
	    " ",
	    "null",
	    "[]",
	    "\"ya29\"",
	    "{}",
	    "{\"version\":1}",
	    E("\"ya29.x\\r\\nX-Evil: 1\"", "1800003600000", "1800000000000"), /* header injection */
	    E("\"ya29 x\"", "1800003600000", "1800000000000"),
	    E("\"\"", "1800003600000", "1800000000000"),
	    E("\"=abc\"", "1800003600000", "1800000000000"),
	    E("\"ab=c\"", "1800003600000", "1800000000000"),
	    E("\"ya29\\u0000x\"", "1800003600000", "1800000000000"),
	    E("\"ya29.\\u00e9\"", "1800003600000", "1800000000000"),
	    E("17", "1800003600000", "1800000000000"),
	    E("[\"ya29\"]", "1800003600000", "1800000000000"),
	    E("\"ya29\"", "\"1800003600000\"", "1800000000000"),
	    E("\"ya29\"", "1800003600000.5", "1800000000000"),
	    E("\"ya29\"", "1800000000000", "1800000000000"), /* expires when minted */
	    E("\"ya29\"", "1799999999999", "1800000000000"), /* expired before minted */
	    E("\"ya29\"", "1800043200001", "1800000000000"), /* lives more than 12 h */
	    E("\"ya29\"", "9223372036854775807", "1"),	     /* forever */
	    E("\"ya29\"", "1800003600000", "-5"),
	    E("\"ya29\"", "1800003600000", "0"),
	    E("\"ya29\"", "1800003720000", "1800000120000"), /* minted 2 min from now */
	    E("\"ya29\"", "99999999999999999999999", "1800000000000"),
	    "{\"version\":2,\"key\":\"" KEY "\",\"token\":\"ya29\",\"expires_ms\":1800003600000,"
	    "\"minted_ms\":1800000000000}",
	    "{\"version\":1,\"key\":\"" KEY "\",\"token\":\"ya29\",\"token\":\"ya30\","
	    "\"expires_ms\":1800003600000,\"minted_ms\":1800000000000}", /* duplicate key */
	    "{\"version\":1,\"key\":\"" KEY "\",\"token\":\"ya29\",\"expires_ms\":1800003600000}",
	    "{\"version\":1,\"key\":\"" KEY "\",\"token\":\"ya29\",\"expires_ms\":1800003600000,"
	    "\"minted_ms\":1800000000000",
	};
	struct proxy_token t = {0};
	char *big, *deep;
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i], &t) == -EINVAL, "accepted %s", bad[i]);
		ck_assert_ptr_null(t.token);
	}
	/* A NUL byte inside, a token longer than any bearer, a file over the limit, nesting. */
	ck_assert_int_eq(proxy_token_parse("{\0}", 3, KEY, NOW, &t), -EINVAL);
	n = PROXY_TOKEN_MAX + 1;
	big = malloc(n + 256);
	ck_assert_ptr_nonnull(big);
	n = (size_t)snprintf(big, 256, "{\"version\":1,\"key\":\"" KEY "\",\"token\":\"");
	memset(big + n, 'a', PROXY_TOKEN_MAX + 1);
	strcpy(big + n + PROXY_TOKEN_MAX + 1, "\",\"expires_ms\":1800003600000,\"minted_ms\":"
					      "1800000000000}");
	ck_assert_int_eq(parse(big, &t), -EINVAL);
	free(big);
	ck_assert_int_eq(proxy_token_parse("{}", PROXY_TOKEN_FILE_MAX + 1, KEY, NOW, &t), -EINVAL);
	deep = malloc(200001);
	ck_assert_ptr_nonnull(deep);
	memset(deep, '[', 100000);
	memset(deep + 100000, ']', 100000);
	deep[200000] = '\0';
	ck_assert_int_eq(proxy_token_parse(deep, 20000, KEY, NOW, &t), -EINVAL);
	free(deep);
#undef E
}
END_TEST

/* ---- the cache ---- */

static char dir[64];
static int mints;
static const char *counter; /* a file each mint appends a byte to (across processes) */

static int mint(void *ctx, struct proxy_token *t)
{
	char name[64];
	int fd;

	(void)ctx;
	usleep(150 * 1000); /* a token endpoint is slow: widens any race */
	mints++;
	if (counter && (fd = open(counter, O_WRONLY | O_APPEND | O_CREAT, 0600)) >= 0) {
		ck_assert_int_eq(write(fd, "m", 1), 1);
		close(fd);
	}
	snprintf(name, sizeof(name), "ya29.t-%d-%d", (int)getpid(), mints);
	t->token = strdup(name);
	t->expires_ms = util_now_ns() / 1000000 + 3600 * 1000;
	return t->token ? 0 : -ENOMEM;
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/check_token_cache.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(setenv("XDG_RUNTIME_DIR", dir, 1), 0);
	mints = 0;
	counter = NULL;
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct proxy_token_cache *cache(const char *id)
{
	struct proxy_token_cache *c = NULL;

	ck_assert_int_eq(proxy_token_cache_open(&c, "vertex", id, strlen(id)), 0);
	return c;
}

static void get(struct proxy_token_cache *c, struct proxy_token *have, bool refused, bool want_mint)
{
	struct proxy_token t = {0};
	bool minted = !want_mint;

	ck_assert_int_eq(proxy_token_cache_get(c, have, refused, mint, NULL, &t, &minted), 0);
	ck_assert_int_eq(minted, want_mint);
	ck_assert_ptr_nonnull(t.token);
	proxy_token_clear(have);
	*have = t;
}

static void rewrite(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(cache_shared_and_private)
{
	struct proxy_token_cache *a = cache("adc one"), *b = cache("adc one"),
				 *o = cache("adc two");
	struct proxy_token ta = {0}, tb = {0}, to = {0};
	struct stat st;
	char tokens[128];

	ck_assert_ptr_nonnull(proxy_token_cache_path(a));
	snprintf(tokens, sizeof(tokens), "%s/arborinth/tokens", dir);
	ck_assert(!strncmp(proxy_token_cache_path(a), tokens, strlen(tokens)));
	ck_assert_int_eq(stat(tokens, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	get(a, &ta, false, true);
	ck_assert_int_eq(stat(proxy_token_cache_path(a), &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	get(b, &tb, false, false); /* another process's cache of the same file: its token */
	ck_assert_str_eq(ta.token, tb.token);
	get(o, &to, false, true); /* another ADC content: never the first one's token */
	ck_assert_str_ne(to.token, ta.token);
	ck_assert_str_ne(proxy_token_cache_path(o), proxy_token_cache_path(a));
	proxy_token_clear(&ta), proxy_token_clear(&tb), proxy_token_clear(&to);
	proxy_token_cache_free(a), proxy_token_cache_free(b), proxy_token_cache_free(o);
}
END_TEST

START_TEST(cache_refused_once_per_10min)
{
	struct proxy_token_cache *a = cache("adc"), *b = cache("adc");
	struct proxy_token ta = {0}, tb = {0}, old = {0};
	char *text;

	get(a, &ta, false, true);
	get(b, &tb, false, false);
	/* Refused while young: kept (no second token for a box's every 401). */
	get(a, &ta, true, false);
	ck_assert_str_eq(ta.token, tb.token);
	/* Refused when 11 min old (the shared file says so): one new token for all. */
	old = ta;
	old.token = strdup(ta.token);
	old.minted_ms -= 11 * 60 * 1000;
	text = proxy_token_format(&old, strrchr(proxy_token_cache_path(a), '-') + 1);
	rewrite(proxy_token_cache_path(a), text);
	free(text);
	get(a, &ta, true, true);
	ck_assert_str_ne(ta.token, old.token);
	get(b, &tb, true, false); /* b's refused token was replaced: b takes a's new one */
	ck_assert_str_eq(ta.token, tb.token);
	proxy_token_clear(&ta), proxy_token_clear(&tb), proxy_token_clear(&old);
	proxy_token_cache_free(a), proxy_token_cache_free(b);
}
END_TEST

START_TEST(cache_corrupt_and_link)
{
	struct proxy_token_cache *a = cache("adc");
	struct proxy_token t = {0};
	char target[128], buf[64] = "";
	const char *p = proxy_token_cache_path(a);
	FILE *f;

	rewrite(p, "{\"version\":1,\"key\":\"trunc");
	get(a, &t, false, true); /* ignored, minted over */
	proxy_token_clear(&t);
	get(a, &t, false, false); /* and now read back */
	/* A link planted at the name is never followed: the token is minted, the target kept. */
	snprintf(target, sizeof(target), "%s/target", dir);
	rewrite(target, "mine");
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(symlink(target, p), 0);
	proxy_token_clear(&t);
	get(a, &t, false, true);
	f = fopen(target, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "mine");
	proxy_token_clear(&t);
	proxy_token_cache_free(a);
}
END_TEST

static int count_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (int)st.st_size : 0;
}

START_TEST(cache_processes_mint_once)
{
	char cnt[128], outs[128], line[256];
	pid_t pid[8];
	FILE *f;
	int n = 0, status;
	char first[256] = "";

	snprintf(cnt, sizeof(cnt), "%s/count", dir);
	snprintf(outs, sizeof(outs), "%s/outs", dir);
	counter = cnt;
	for (int i = 0; i < 8; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0) {
			struct proxy_token_cache *c = cache("adc");
			struct proxy_token t = {0};
			bool minted;
			FILE *o;

			if (proxy_token_cache_get(c, &t, false, mint, NULL, &t, &minted) < 0)
				_exit(1);
			o = fopen(outs, "a");
			fprintf(o, "%s\n", t.token);
			fclose(o);
			_exit(0);
		}
	}
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	ck_assert_int_eq(count_bytes(cnt), 1);
	f = fopen(outs, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		if (!n++)
			snprintf(first, sizeof(first), "%s", line);
		ck_assert_str_eq(line, first);
	}
	fclose(f);
	ck_assert_int_eq(n, 8);
}
END_TEST

/* A minter killed with -9 mid-write: its lock goes with it, its half file is never used. */
static int mint_and_die(void *ctx, struct proxy_token *t)
{
	const char *path = ctx;
	char tmp[256];
	int fd;

	(void)t;
	snprintf(tmp, sizeof(tmp), "%s/.%s.arb-0a0b0c0d0e0f", dir, strrchr(path, '/') + 1);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd >= 0 && write(fd, "{\"version\":1,\"key\"", 18) == 18)
		raise(SIGKILL);
	return -EIO;
}

START_TEST(cache_holder_killed)
{
	struct proxy_token_cache *a = cache("adc");
	struct proxy_token t = {0};
	int status, left = 0;
	struct dirent *e;
	char tokens[128], old[160], young[160];
	struct timespec times[2] = {{0}, {0}};
	DIR *d;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		bool minted;

		if (proxy_token_cache_get(a, &t, false, mint_and_die,
					  (void *)proxy_token_cache_path(a), &t, &minted) < 0)
			_exit(2);
		_exit(3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	get(a, &t, false, true); /* not locked out, nothing half-written taken */
	snprintf(tokens, sizeof(tokens), "%s/arborinth/tokens", dir);
	d = opendir(tokens);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		left += strstr(e->d_name, ".arb-") != NULL;
	closedir(d);
	ck_assert_int_eq(left, 0); /* the dead writer's temporary file was swept */
	/* Other entries: swept once older than any token lives, kept before. */
	snprintf(old, sizeof(old), "%s/vertex-old", tokens);
	snprintf(young, sizeof(young), "%s/vertex-young", tokens);
	rewrite(old, "{}");
	rewrite(young, "{}");
	times[0].tv_sec = times[1].tv_sec = time(NULL) - 13 * 3600;
	ck_assert_int_eq(utimensat(AT_FDCWD, old, times, 0), 0);
	proxy_token_clear(&t);
	ck_assert_int_eq(unlink(proxy_token_cache_path(a)), 0);
	get(a, &t, false, true);
	ck_assert_int_eq(access(old, F_OK), -1);
	ck_assert_int_eq(access(young, F_OK), 0);
	proxy_token_clear(&t);
	proxy_token_cache_free(a);
}
END_TEST

START_TEST(cache_no_folder)
{
	struct proxy_token_cache *a = NULL;
	struct proxy_token t = {0};
	char file[128];

	/* Neither folder can be made (HOME and XDG_RUNTIME_DIR are files): this process only. */
	snprintf(file, sizeof(file), "%s/file", dir);
	rewrite(file, "x");
	ck_assert_int_eq(setenv("XDG_RUNTIME_DIR", file, 1), 0);
	ck_assert_int_eq(setenv("HOME", file, 1), 0);
	ck_assert_int_eq(unsetenv("XDG_STATE_HOME"), 0);
	ck_assert_int_eq(proxy_token_cache_open(&a, "vertex", "x", 1), 0);
	ck_assert_ptr_null(proxy_token_cache_path(a));
	get(a, &t, false, true);
	get(a, &t, false, false); /* the caller's own token while it is fresh */
	get(a, &t, true, false);  /* refused young: kept */
	t.minted_ms -= 11 * 60 * 1000;
	get(a, &t, true, true); /* refused old: one new */
	proxy_token_clear(&t);
	proxy_token_cache_free(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("token_cache");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, parse_good_and_roundtrip);
	tcase_add_test(tc, parse_hostile);
	suite_add_tcase(s, tc);
	tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cache_shared_and_private);
	tcase_add_test(tc, cache_refused_once_per_10min);
	tcase_add_test(tc, cache_corrupt_and_link);
	tcase_add_test(tc, cache_processes_mint_once);
	tcase_add_test(tc, cache_holder_killed);
	tcase_add_test(tc, cache_no_folder);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
