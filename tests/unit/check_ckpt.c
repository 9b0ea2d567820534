/*
 * tests/unit/check_ckpt.c: the checkpoint store (ckpt/) on its own: object ids as git computes
 * them, packs and their indexes that git reads and verifies, objects stored once, objects too
 * large for a pack written loose, and small packs taken into the next one (merge.c). git
 * itself is the judge: cat-file, verify-pack and fsck on a bare repository.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt.h"

static char repo[64], objects[96];

static void repo_setup(void)
{
	char cmd[256];

	snprintf(repo, sizeof(repo), "/tmp/check_ckpt.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(repo));
	snprintf(cmd, sizeof(cmd), "git init -q --bare %s", repo);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(objects, sizeof(objects), "%s/objects", repo);
}

static void repo_teardown(void)
{
	ck_assert_int_eq(util_rm_rf(repo), 0);
}

/* The first line cmd (run in repo) prints, without its newline: caller frees. */
static char *git_line(const char *cmd)
{
	char full[512], line[256] = "";
	FILE *p;

	snprintf(full, sizeof(full), "cd %s && %s", repo, cmd);
	p = popen(full, "r");
	ck_assert_ptr_nonnull(p);
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	ck_assert_int_eq(pclose(p), 0);
	line[strcspn(line, "\n")] = '\0';
	return strdup(line);
}

/* git_line of "git cat-file OPT ID" / "git ls-tree ID". */
static char *git_show(const char *what, const git_oid *id)
{
	char hex[GIT_OID_HEXSZ + 1], cmd[128];

	git_oid_tostr(hex, sizeof(hex), id);
	snprintf(cmd, sizeof(cmd), "git %s %s", what, hex);
	return git_line(cmd);
}

static int run_in_repo(const char *fmt)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cd %s && %s", repo, fmt);
	return system(cmd);
}

static size_t count_packs(void)
{
	char dir[128];
	DIR *d;
	struct dirent *e;
	size_t n = 0;

	snprintf(dir, sizeof(dir), "%s/pack", objects);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".idx");
	closedir(d);
	return n;
}

static void put_blob(struct ckpt_odb *o, const char *data, size_t len, git_oid *id)
{
	ck_assert_int_eq(ckpt_odb_put(o, GIT_OBJECT_BLOB, data, len, id), 0);
}

START_TEST(ids_are_gits)
{
	git_oid id;
	char hex[GIT_OID_HEXSZ + 1], *want;

	ck_assert_int_eq(ckpt_object_id(GIT_OBJECT_BLOB, "hello\n", 6, &id), 0);
	git_oid_tostr(hex, sizeof(hex), &id);
	ck_assert_str_eq(hex, "ce013625030ba8dba906f756967f9e9ca394464a"); /* git hash-object */
	ck_assert_int_eq(ckpt_object_id(GIT_OBJECT_BLOB, "", 0, &id), 0);
	git_oid_tostr(hex, sizeof(hex), &id);
	ck_assert_str_eq(hex, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
	want = git_line("printf 'a\\0b' | git hash-object --stdin");
	ck_assert_int_eq(ckpt_object_id(GIT_OBJECT_BLOB, "a\0b", 3, &id), 0);
	git_oid_tostr(hex, sizeof(hex), &id);
	ck_assert_str_eq(hex, want);
	free(want);
}
END_TEST

START_TEST(pack_git_reads_and_verifies)
{
	struct ckpt_odb *o;
	git_oid blob, tree;
	char hex[GIT_OID_HEXSZ + 1], want[128], *got;
	unsigned char entry[64];
	size_t el;

	ck_assert_int_eq(ckpt_odb_open(objects, &o), 0);
	put_blob(o, "content\n", 8, &blob);
	/* A tree holding it, as git encodes one: "MODE NAME\0" and the raw id. */
	el = (size_t)snprintf((char *)entry, sizeof(entry), "100644 file.txt");
	entry[el++] = '\0';
	memcpy(entry + el, blob.id, GIT_OID_RAWSZ);
	el += GIT_OID_RAWSZ;
	ck_assert_int_eq(ckpt_odb_put(o, GIT_OBJECT_TREE, entry, el, &tree), 0);
	ck_assert_int_eq(count_packs(), 0); /* nothing on disk before the flush */
	ck_assert_int_eq(ckpt_odb_flush(o), 0);
	ckpt_odb_free(o);

	ck_assert_int_eq(count_packs(), 1);
	git_oid_tostr(hex, sizeof(hex), &blob);
	got = git_show("cat-file -p", &blob);
	ck_assert_str_eq(got, "content");
	free(got);
	snprintf(want, sizeof(want), "100644 blob %s\tfile.txt", hex);
	got = git_show("ls-tree", &tree);
	ck_assert_str_eq(got, want);
	free(got);
	ck_assert_int_eq(run_in_repo("git verify-pack objects/pack/*.idx >/dev/null"), 0);
	ck_assert_int_eq(run_in_repo("git fsck --strict --no-dangling 2>/dev/null"), 0);
}
END_TEST

START_TEST(stored_once)
{
	struct ckpt_odb *o;
	git_oid a, b, known;
	char *n;

	ck_assert_int_eq(ckpt_odb_open(objects, &o), 0);
	put_blob(o, "same", 4, &a);
	put_blob(o, "same", 4, &b);
	ck_assert(git_oid_equal(&a, &b));
	/* An object the store is told it holds is not written again. */
	ck_assert_int_eq(ckpt_object_id(GIT_OBJECT_BLOB, "elsewhere", 9, &known), 0);
	ck_assert_int_eq(ckpt_odb_know(o, &known), 0);
	put_blob(o, "elsewhere", 9, &b);
	ck_assert(git_oid_equal(&known, &b));
	ck_assert_int_eq(ckpt_odb_flush(o), 0);
	ckpt_odb_free(o);
	n = git_line("git count-objects -v | sed -n 's/^in-pack: //p'");
	ck_assert_str_eq(n, "1");
	free(n);

	/* A store with nothing new writes no pack. */
	ck_assert_int_eq(ckpt_odb_open(objects, &o), 0);
	ck_assert_int_eq(ckpt_odb_know(o, &a), 0);
	put_blob(o, "same", 4, &b);
	ck_assert_int_eq(ckpt_odb_flush(o), 0);
	ckpt_odb_free(o);
	ck_assert_int_eq(count_packs(), 1);
}
END_TEST

START_TEST(large_object_loose)
{
	size_t len = (16u << 20) + 1; /* over the largest object a pack takes */
	char *big = malloc(len), hex[GIT_OID_HEXSZ + 1], path[160], *size;
	struct ckpt_odb *o;
	struct stat st;
	git_oid id;

	ck_assert_ptr_nonnull(big);
	memset(big, 'z', len);
	ck_assert_int_eq(ckpt_odb_open(objects, &o), 0);
	put_blob(o, big, len, &id);
	ck_assert_int_eq(ckpt_odb_flush(o), 0);
	ckpt_odb_free(o);
	free(big);
	git_oid_tostr(hex, sizeof(hex), &id);
	snprintf(path, sizeof(path), "%s/%.2s/%s", objects, hex, hex + 2);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(count_packs(), 0);
	size = git_show("cat-file -s", &id);
	ck_assert_str_eq(size, "16777217");
	free(size);
	ck_assert_int_eq(run_in_repo("git fsck --strict --no-dangling 2>/dev/null"), 0);
}
END_TEST

START_TEST(small_packs_taken_in)
{
	git_oid ids[8];
	char *got;

	for (int i = 0; i < 8; i++) {
		struct ckpt_odb *o;
		char data[64];

		snprintf(data, sizeof(data), "checkpoint %d\n", i);
		ck_assert_int_eq(ckpt_odb_open(objects, &o), 0);
		put_blob(o, data, strlen(data), &ids[i]);
		ck_assert_int_eq(ckpt_odb_flush(o), 0);
		ckpt_odb_free(o);
	}
	/* Eight flushes of one object each: the older packs were taken into the newer ones. */
	ck_assert_uint_lt(count_packs(), 4);
	for (int i = 0; i < 8; i++) {
		char want[64];

		got = git_show("cat-file -p", &ids[i]);
		snprintf(want, sizeof(want), "checkpoint %d", i);
		ck_assert_str_eq(got, want);
		free(got);
	}
	ck_assert_int_eq(run_in_repo("git verify-pack objects/pack/*.idx >/dev/null"), 0);
	ck_assert_int_eq(run_in_repo("git fsck --strict --no-dangling 2>/dev/null"), 0);
}
END_TEST

static Suite *ckpt_suite(void)
{
	Suite *s = suite_create("ckpt");
	TCase *tc = tcase_create("store");

	tcase_add_checked_fixture(tc, repo_setup, repo_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ids_are_gits);
	tcase_add_test(tc, pack_git_reads_and_verifies);
	tcase_add_test(tc, stored_once);
	tcase_add_test(tc, large_object_loose);
	tcase_add_test(tc, small_packs_taken_in);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ckpt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
