/*
 * tests/unit/check_core.c: names, revisions, the state database, the gitdir and its index,
 * making a mounted view's audit current, the user's list of projects, where state lives and
 * which project a folder in a view belongs to.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "core/core_internal.h"
#include "fs/fs.h"

static char repo[64];

static void repo_setup(void)
{
	char cmd[512];

	strcpy(repo, "/tmp/check_core.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(repo));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && git init -q -b main && git config user.email t@e && "
		 "git config user.name t && mkdir -p d/e && printf 'abc' > a && "
		 "printf '#!/bin/sh\\n' > d/x && chmod +x d/x && printf 12345 > d/e/f && "
		 "ln -s a l && git add -A && GIT_COMMITTER_DATE=@1700000000 git commit -qm one && "
		 "git tag v1 && printf more >> a && git commit -qam two",
		 repo);
	ck_assert_int_eq(system(cmd), 0);
}

static void repo_teardown(void)
{
	ck_assert_int_eq(util_rm_rf(repo), 0);
}

START_TEST(name_rules)
{
	static const char *const good[] = {"w1", "feature-x", "a_b.c", "caf\xc3\xa9", "x@y"};
	static const struct {
		const char *name;
		const char *why;
	} bad[] = {
	    {"", "empty"},
	    {".hidden", "starts with '.'"},
	    {"a..b", "'..'"},
	    {"a/b", "'/'"},
	    {"a\\b", "'\\'"},
	    {"a b", "whitespace"},
	    {"a\tb", "whitespace"},
	    {"a\xc2\xa0"
	     "b",
	     "whitespace"},
	    {"a\x01", "control"},
	    {"a<b", "'<'"},
	    {"a>b", "'>'"},
	    {"a:b", "':'"},
	    {"a\"b", "'\"'"},
	    {"a|b", "'|'"},
	    {"a?b", "'?'"},
	    {"a*b", "'*'"},
	    {"\xff", "UTF-8"},
	    {"a~b", "git branch name"},
	    {"a^b", "git branch name"},
	    {"a[b", "git branch name"},
	    {"a@{b", "git branch name"},
	    {"ab.", "git branch name"},
	    {"a.lock", "git branch name"},
	    {"x0123456789012345678901234567890123456789012345678901234567890123", "64 bytes"},
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(good); i++) {
		ck_assert_msg(core_ws_name_check(good[i]) == 0, "%s: %s", good[i], util_err_msg());
		/* libgit2 agrees with the rules checked without it. */
		ck_assert_msg(core_ws_name_check_new(good[i]) == 0, "%s: %s", good[i],
			      util_err_msg());
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		ck_assert_int_eq(core_ws_name_check(bad[i].name), -EINVAL);
		ck_assert_msg(strstr(util_err_msg(), bad[i].why), "%s: message '%s' lacks '%s'",
			      bad[i].name, util_err_msg(), bad[i].why);
		ck_assert_int_eq(core_ws_name_check_new(bad[i].name), -EINVAL);
	}
	/* Exactly 64 bytes is allowed. */
	ck_assert_int_eq(core_ws_name_check("0123456789012345678901234567890123456789012345678901"
					    "234567890123"),
			 0);
}
END_TEST

/*
 * The name rules checked without libgit2 are never looser than libgit2's for the branch
 * refs/heads/arborinth/NAME: every ASCII character at the start, middle and end of a name,
 * and the sequences git treats specially.
 */
START_TEST(name_rules_vs_libgit2)
{
	static const char *const seqs[] = {"@{", "..", ".lock", ".", "@", "//", "/."};
	char names[128 * 3 + 4 * ARB_ARRAY_LEN(seqs)][32];
	size_t n = 0;

	for (int c = 1; c < 128; c++) {
		snprintf(names[n++], sizeof(names[0]), "%cab", c);
		snprintf(names[n++], sizeof(names[0]), "a%cb", c);
		snprintf(names[n++], sizeof(names[0]), "ab%c", c);
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(seqs); i++) {
		snprintf(names[n++], sizeof(names[0]), "%sab", seqs[i]);
		snprintf(names[n++], sizeof(names[0]), "a%sb", seqs[i]);
		snprintf(names[n++], sizeof(names[0]), "ab%s", seqs[i]);
		snprintf(names[n++], sizeof(names[0]), "%s", seqs[i]);
	}
	git_libgit2_init();
	for (size_t i = 0; i < n; i++) {
		char ref[sizeof(names[0]) + 32];
		int valid = 0;

		snprintf(ref, sizeof(ref), "refs/heads/arborinth/%.31s", names[i]);
		ck_assert_int_eq(git_reference_name_is_valid(&valid, ref), 0);
		if (core_ws_name_check(names[i]) == 0)
			ck_assert_msg(valid, "'%s' passes the rules, libgit2 refuses it", names[i]);
	}
	git_libgit2_shutdown();
}
END_TEST

START_TEST(rev_resolution)
{
	struct core_project *p = NULL;
	git_oid a, b;

	ck_assert_int_eq(core_project_open(&p, repo), 0);
	ck_assert_int_eq(core_rev_resolve(p, "HEAD", &a), 0);
	ck_assert_int_eq(core_rev_resolve(p, "main", &b), 0);
	ck_assert(git_oid_equal(&a, &b));
	ck_assert_int_eq(core_rev_resolve(p, "v1", &b), 0);
	ck_assert(!git_oid_equal(&a, &b));
	ck_assert_int_eq(core_rev_resolve(p, "HEAD~1", &a), 0);
	ck_assert(git_oid_equal(&a, &b));
	ck_assert_int_eq(core_rev_resolve(p, "nope", &a), -ENOENT);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "unknown revision 'nope'"));
	ck_assert_int_eq(core_rev_resolve(p, "HEAD:a", &a), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "does not name a commit"));
	core_project_free(p);
}
END_TEST

START_TEST(state_db_migrates_and_refuses_newer)
{
	char path[128];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	snprintf(path, sizeof(path), "%s/state.db", repo);
	ck_assert_int_eq(audit_db_open(&db, path), 0);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(st, 0), audit_db_schema_version());
	sqlite3_finalize(st);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	/* Reopening an up-to-date database changes nothing. */
	audit_db_close(db);
	ck_assert_int_eq(audit_db_open(&db, path), 0);
	ck_assert_int_eq(audit_db_exec(db, "PRAGMA user_version = 999"), 0);
	audit_db_close(db);
	ck_assert_int_eq(audit_db_open(&db, path), -EPROTO);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "newer"));
	ck_assert_ptr_null(db);
}
END_TEST

START_TEST(create_writes_gitdir_and_index)
{
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	git_repository *wr = NULL;
	git_index *idx = NULL;
	const git_index_entry *e;
	char *head = NULL;

	ck_assert_int_eq(core_project_open(&p, repo), 0);
	ck_assert_msg(core_ws_create(p, "w", "v1", &ws) == 0, "%s", util_err_msg());
	ck_assert_int_eq(util_read_file("/dev/null", &head, NULL), 0);
	free(head);
	{
		char *hp = util_path_join(ws->gitdir, "HEAD");

		ck_assert_int_eq(util_read_file(hp, &head, NULL), 0);
		free(hp);
	}
	ck_assert_str_eq(head, "ref: refs/heads/arborinth/w\n");
	ck_assert_int_eq(git_repository_open(&wr, ws->gitdir), 0);
	ck_assert_int_eq(git_repository_index(&idx, wr), 0);
	ck_assert_uint_eq(git_index_entrycount(idx), 4);
	e = git_index_get_bypath(idx, "a", 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->mtime.seconds, 1700000000);
	ck_assert_int_eq(e->ctime.seconds, 1700000000);
	ck_assert_uint_eq(e->file_size, 3);
	ck_assert_uint_eq(e->mode, GIT_FILEMODE_BLOB);
	e = git_index_get_bypath(idx, "d/x", 0);
	ck_assert_uint_eq(e->mode, GIT_FILEMODE_BLOB_EXECUTABLE);
	e = git_index_get_bypath(idx, "d/e/f", 0);
	ck_assert_uint_eq(e->file_size, 5);
	e = git_index_get_bypath(idx, "l", 0);
	ck_assert_uint_eq(e->mode, GIT_FILEMODE_LINK);
	ck_assert_uint_eq(e->file_size, 1);
	/* The branch points at the base, and the origin's objects are reachable. */
	{
		git_reference *ref = NULL;
		git_oid v1;

		ck_assert_int_eq(git_reference_lookup(&ref, wr, "refs/heads/arborinth/w"), 0);
		ck_assert_int_eq(core_rev_resolve(p, "v1", &v1), 0);
		ck_assert(git_oid_equal(git_reference_target(ref), &v1));
		ck_assert_str_eq(ws->base_commit, git_oid_tostr_s(&v1));
		git_reference_free(ref);
	}
	git_index_free(idx);
	git_repository_free(wr);
	free(head);
	core_ws_free(ws);
	ck_assert_int_eq(core_ws_delete(p, "w"), 0);
	ck_assert_int_eq(core_ws_get(p, "w", &ws), -ENOENT);
	core_project_free(p);
}
END_TEST

/* Audit rows of writes to `path` committed so far. */
static int write_rows(struct core_project *p, const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int n;

	ck_assert_int_eq(core_project_db(p, false, &db), 0);
	ck_assert_int_eq(sqlite3_prepare_v2(db,
					    "SELECT count(*) FROM audit_events "
					    "WHERE op = 'write' AND path = ?",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Writes `name` through the view: the daemon coalesces the write for up to a second. */
static void view_write(const struct core_ws *ws, const char *name)
{
	char *path = util_path_join(ws->workdir, name);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	ck_assert_int_eq(close(fd), 0);
	free(path);
}

/*
 * The audit sync test's repository, set up and removed in the test runner's own process (an
 * unchecked fixture): a failed assertion ends the test's process, and its view is still
 * unmounted (waiting for its daemon) before the repository is removed.
 */
static void view_teardown(void)
{
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;

	if (core_project_open(&p, repo) == 0 && core_ws_get(p, "w", &ws) == 0 &&
	    core_ws_unmount(p, ws) < 0)
		fprintf(stderr, "check_core: %s\n", util_err_msg());
	core_ws_free(ws);
	core_project_free(p);
	repo_teardown();
}

START_TEST(audit_sync_asks_the_daemon_then_falls_back)
{
	struct core_project *p = NULL;
	struct core_ws *ws = NULL;
	bool fsynced = true;

	ck_assert_int_eq(core_project_open(&p, repo), 0);
	ck_assert_msg(core_ws_create(p, "w", "v1", &ws) == 0, "%s", util_err_msg());
	/* The request: the pending write recorded at once, no fsync. */
	view_write(ws, "asked");
	ck_assert_int_eq(write_rows(p, "asked"), 0); /* control: still being coalesced */
	ck_assert_msg(core_ws_audit_sync_cmd(&fsynced, ws, ARB_FS_IOC_AUDIT_SYNC) == 0, "%s",
		      util_err_msg());
	ck_assert(!fsynced);
	ck_assert_int_eq(write_rows(p, "asked"), 1);
	/*
	 * A command the daemon does not know is answered ENOTTY, as a daemon older than the
	 * request answers it: then fsync of the root, which records it as well.
	 */
	view_write(ws, "fallback");
	ck_assert_int_eq(write_rows(p, "fallback"), 0);
	ck_assert_msg(core_ws_audit_sync_cmd(&fsynced, ws, _IO(0xA7, 0xfe)) == 0, "%s",
		      util_err_msg());
	ck_assert(fsynced);
	ck_assert_int_eq(write_rows(p, "fallback"), 1);
	/* The public entry point. */
	view_write(ws, "public");
	ck_assert_int_eq(write_rows(p, "public"), 0);
	ck_assert_msg(core_ws_audit_sync(ws) == 0, "%s", util_err_msg());
	ck_assert_int_eq(write_rows(p, "public"), 1);
	/* Not mounted: nothing to do. */
	ck_assert_int_eq(core_ws_unmount(p, ws), 0);
	ck_assert_int_eq(core_ws_audit_sync_cmd(&fsynced, ws, ARB_FS_IOC_AUDIT_SYNC), 0);
	ck_assert(!fsynced);
	core_ws_free(ws);
	ck_assert_int_eq(core_ws_delete(p, "w"), 0);
	core_project_free(p);
}
END_TEST

/* Tree entry names host-side code may turn into file names (core/entry_name.c). */
START_TEST(entry_names)
{
	static const char *const good[] = {
	    "a",
	    "README",
	    ".gitignore",
	    ".gitmodules",
	    ".github",
	    "git",
	    "git~2",
	    "..a",
	    "a..",
	    "...",
	    ".git~1x",
	    "x.git",
	    ".gitx",
	    "gi7",
	    "\xe2\x80\x8c"
	    "a",
	    ".g\xc3\xaft",
	    "-",
	    " ",
	};
	static const char *const bad[] = {
	    "",
	    ".",
	    "..",
	    "a/b",
	    "/",
	    "../../../../../.bash_aliases",
	    "..\xe2\x80\x8c/x",
	    ".git",
	    ".GIT",
	    ".Git",
	    ".git.",
	    ".git..",
	    ".git ",
	    ".git . .",
	    ".git::$INDEX_ALLOCATION",
	    ".git:x",
	    "git~1",
	    "GIT~1",
	    "git~1.",
	    "git~1 ",
	    ".git\\x",
	    ".g\xe2\x80\x8cit",
	    "\xe2\x80\x8d.git",
	    ".git\xef\xbb\xbf",
	    ".G\xe2\x81\xaaIT",
	    ".gi\xe2\x80\xaet",
	};

	for (size_t i = 0; i < ARB_ARRAY_LEN(good); i++) {
		ck_assert_msg(core_entry_name_ok(good[i], strlen(good[i])), "'%s' refused",
			      good[i]);
		ck_assert_int_eq(core_entry_name_check(good[i], "t"), 0);
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		ck_assert_msg(!core_entry_name_ok(bad[i], strlen(bad[i])), "'%s' taken", bad[i]);
		ck_assert_int_eq(core_entry_name_check(bad[i], "t"), -EINVAL);
		ck_assert(!strchr(util_err_msg(), '\n'));
	}
	/* A NUL inside the name, and the escaped message of a name with control bytes. */
	ck_assert(!core_entry_name_ok("a\0b", 3));
	ck_assert(core_entry_name_ok("a\0b", 1));
	ck_assert_int_eq(core_entry_name_check("../\x1b[2J", "rewind"), -EINVAL);
	ck_assert_msg(strstr(util_err_msg(), "rewind: refusing a tree entry named '../\\x1b[2J'"),
		      "%s", util_err_msg());
}
END_TEST

/* Opening beneath a folder: no symbolic link followed, no FIFO opened for reading. */
START_TEST(open_beneath)
{
	char dir[] = "/tmp/arb-beneath.XXXXXX";
	int d, fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	d = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(d, 0);
	ck_assert_int_eq(symlinkat("/etc", d, "link"), 0);
	ck_assert_int_eq(mkfifoat(d, "fifo", 0600), 0);
	ck_assert_int_eq(mkdirat(d, "sub", 0700), 0);
	/* Controls: plain openat follows the link; a file and a folder open. */
	fd = openat(d, "link", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = core_open_beneath(d, "new", O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = core_open_read_beneath(d, "new", false);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = core_open_read_beneath(d, "sub", true);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* Refused: the link (as a folder, or created through), the FIFO at once, bad names. */
	ck_assert_int_lt(core_open_read_beneath(d, "link", true), 0);
	ck_assert_int_lt(core_open_beneath(d, "link", O_WRONLY | O_CREAT, 0600), 0);
	ck_assert_int_lt(core_open_read_beneath(d, "fifo", false), 0);
	ck_assert_int_lt(core_open_read_beneath(d, "sub", false), 0);
	ck_assert_int_lt(core_open_beneath(d, "..", O_RDONLY, 0), 0);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_lt(core_open_beneath(d, "sub/../new", O_RDONLY, 0), 0);
	ck_assert_int_lt(core_open_beneath(d, ".git", O_WRONLY | O_CREAT, 0600), 0);
	ck_assert_int_eq(faccessat(d, ".git", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	close(d);
	ck_assert_int_eq(util_rm_rf(dir), 0);
}
END_TEST

/* Counts the objects of an odb (git_odb_foreach). */
static int count_one(const git_oid *id, void *n)
{
	(void)id;
	(*(size_t *)n)++;
	return 0;
}

/* git hash-object of text (-w: also written into repo's store). */
static void hash_text(const char *text, bool write, git_oid *id)
{
	char cmd[512], hex[64] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd), "cd %s && printf '%s' | git hash-object %s--stdin", repo, text,
		 write ? "-w " : "");
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(hex, sizeof(hex), f));
	pclose(f);
	ck_assert_int_eq(git_oid_fromstrn(id, hex, GIT_OID_HEXSZ), 0);
}

START_TEST(objects_view_holds_only_the_history)
{
	struct core_project *p = NULL;
	git_odb *odb = NULL;
	git_oid dangling, stashed, old_blob, loose;
	char *store = NULL, *alt = NULL, cmd[512], head[GIT_OID_HEXSZ + 1];
	struct stat st;
	size_t n = 0;

	hash_text("DANGLING", true, &dangling);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && printf STASHED > u && git stash -q -u && git gc -q && "
		 "printf 'three' >> a && git commit -qam three",
		 repo);
	ck_assert_int_eq(system(cmd), 0);
	hash_text("STASHED", false, &stashed);
	hash_text("abc", false, &old_blob);	  /* a in commit one: packed by gc */
	hash_text("abcmorethree", false, &loose); /* a in commit three: loose */
	ck_assert_int_eq(core_project_open(&p, repo), 0);
	{
		struct core_head h = {0};

		ck_assert_int_eq(core_project_head(p, &h), 0);
		snprintf(head, sizeof(head), "%s", h.commit);
		free(h.branch);
	}
	ck_assert_msg(core_objects_view(p, head, &store) == 0, "%s", util_err_msg());
	ck_assert_int_eq(git_odb_open(&odb, store), 0);
	ck_assert(git_odb_exists(odb, &old_blob));
	ck_assert(git_odb_exists(odb, &loose));
	ck_assert(!git_odb_exists(odb, &dangling));
	ck_assert(!git_odb_exists(odb, &stashed));
	/*
	 * Three commits; trees: a root for each, d/ and d/e/ the same in all; blobs: three of a,
	 * d/x, d/e/f and the link's target: nothing else.
	 */
	ck_assert_int_eq(git_odb_foreach(odb, count_one, &n), 0);
	ck_assert_uint_eq(n, 3 + 5 + 6);
	alt = util_path_join(store, "info/alternates");
	ck_assert_int_eq(lstat(alt, &st), -1);
	/* Again: the same store, nothing built. */
	free(store);
	ck_assert_int_eq(core_objects_view(p, head, &store), 0);
	/* Not an id: refused before any path is made of it. */
	ck_assert_int_eq(core_objects_view(p, "../../etc", NULL), -EINVAL);
	git_odb_free(odb);
	free(alt);
	free(store);
	core_project_free(p);
}
END_TEST

START_TEST(submodule_names)
{
	static const char *const good[] = {"lib", "a/b", "a.b", "x..y", "lib-2", "..a", "a.."};
	static const char *const bad[] = {"",	      ".",     "..",   "../x", "a/../b",
					  "a\\..\\b", "..\\x", "a//b", "/abs", "a/",
					  "./a",      "a\nb",  "a/..", "\x7f"};

	for (size_t i = 0; i < ARB_ARRAY_LEN(good); i++)
		ck_assert_msg(fs_submodule_name_ok(good[i]), "refused '%s'", good[i]);
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++)
		ck_assert_msg(!fs_submodule_name_ok(bad[i]), "accepted '%s'", bad[i]);
}
END_TEST

/* .gitmodules as git writes and reads it; hostile names refused before a path is made. */
START_TEST(submodules_from_gitmodules)
{
	struct fs_submodule *v = NULL;
	char cmd[2048], head[GIT_OID_HEXSZ + 1] = "";
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "cd %s && c=$(git rev-parse HEAD) && git clone -q --bare . .git/modules/ok && "
		 "git clone -q --bare . etc && "
		 "printf '# c\n[submodule \"ok\"]\n\tpath = ok ; note\n\turl = x\n"
		 "[submodule \"quo\\\"ted\"]\n\tPath = \"sp ace\"\n"
		 "[submodule \"../../etc\"]\n\tpath = evil\n"
		 "[submodule \"notlink\"]\n\tpath = a\n"
		 "[submodule \"dotgit\"]\n\tpath = .git/x\n[other]\n\tpath = ok2\n' "
		 "> .gitmodules && for p in ok 'sp ace' evil ok2; do "
		 "git update-index --add --cacheinfo \"160000,$c,$p\"; done && "
		 "git add .gitmodules && git commit -qm subs && git rev-parse HEAD",
		 repo);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(head, sizeof(head), f));
	ck_assert_int_eq(pclose(f), 0);
	snprintf(cmd, sizeof(cmd), "%s/.git", repo);
	core_git_ready();
	ck_assert_msg(fs_submodules_find(cmd, head, &v, &n) == 0, "%s", util_err_msg());
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[0].path, "ok");
	ck_assert_int_eq(v[0].state, FS_SUBMODULE_PRESENT);
	ck_assert_str_eq(v[0].gitdir, "modules/ok");
	ck_assert_str_eq(v[1].path, "sp ace");
	ck_assert_str_eq(v[1].name, "quo\"ted");
	ck_assert_int_eq(v[1].state, FS_SUBMODULE_ABSENT);
	ck_assert_str_eq(v[2].path, "evil");
	ck_assert_int_eq(v[2].state, FS_SUBMODULE_REFUSED);
	ck_assert_ptr_null(v[2].gitdir);

	/* What create records reads back the same (spaces, quotes, a refused name). */
	struct core_project *p = NULL;
	struct fs_submodule *r = NULL;
	size_t nr = 0;

	snprintf(cmd, sizeof(cmd), "%s/record", repo);
	ck_assert_int_eq(mkdir(cmd, 0755), 0);
	ck_assert_int_eq(core_submodules_record(cmd, v, n), 0);
	ck_assert_int_eq(core_project_open(&p, repo), 0);
	ck_assert_msg(core_ws_submodules(p, cmd, head, &r, &nr) == 0, "%s", util_err_msg());
	ck_assert_uint_eq(nr, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(r[i].path, v[i].path);
		ck_assert_str_eq(r[i].name, v[i].name);
		ck_assert_str_eq(r[i].commit, v[i].commit);
		ck_assert_int_eq(r[i].state, v[i].state);
		ck_assert_int_eq(r[i].depth, v[i].depth);
		if (v[i].gitdir)
			ck_assert_str_eq(r[i].gitdir, v[i].gitdir);
		else
			ck_assert_ptr_null(r[i].gitdir);
	}
	fs_submodules_free(r, nr);
	/* An empty list is a record too; a gitdir leaving modules/ is not trusted (the walk). */
	ck_assert_int_eq(core_submodules_record(cmd, v, 0), 0);
	ck_assert_int_eq(core_ws_submodules(p, cmd, head, &r, &nr), 0);
	ck_assert_uint_eq(nr, 0);
	snprintf(cmd, sizeof(cmd), "%s/record/submodules", repo);
	f = fopen(cmd, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "arborinth-submodules 1\np 0 %s ok ok modules/../../etc\n", v[0].commit);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "%s/record", repo);
	ck_assert_int_eq(core_ws_submodules(p, cmd, head, &r, &nr), 0);
	ck_assert_uint_eq(nr, 3); /* the walk's answer */
	ck_assert_str_eq(r[0].gitdir, "modules/ok");
	fs_submodules_free(r, nr);
	core_project_free(p);
	fs_submodules_free(v, n);
}
END_TEST

/* Lines in the registry file. */
static int registry_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	ck_assert_ptr_nonnull(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

START_TEST(registry_lists_live_projects_once)
{
	struct core_project *p = NULL, *q = NULL;
	struct core_registry_entry *v = NULL;
	char xdg[128], file[192], cmd[1024];
	size_t n = 99, dropped = 0;
	sqlite3 *db = NULL;
	FILE *f;

	snprintf(xdg, sizeof(xdg), "%s/xdg", repo);
	snprintf(file, sizeof(file), "%s/arborinth/projects", xdg);
	ck_assert_int_eq(setenv("XDG_STATE_HOME", xdg, 1), 0);
	ck_assert_int_eq(core_registry_list(&v, &n), 0);
	ck_assert_uint_eq(n, 0); /* no file yet: none */
	ck_assert_int_eq(core_project_open(&p, repo), 0);
	ck_assert_int_eq(core_project_db(p, true, &db), 0);
	ck_assert_int_eq(core_project_open(&q, repo), 0);
	ck_assert_int_eq(core_project_db(q, true, &db), 0);
	ck_assert_int_eq(registry_lines(file), 1); /* once, however often it is opened */
	ck_assert_int_eq(core_registry_list(&v, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0].state_dir, core_project_state_dir(p));
	ck_assert_str_eq(v[0].root, core_project_root(p));
	core_registry_free(v, n);
	/* What the list skips: malformed lines, a relative path, a folder with no state.db, a
	 * gone one; a link as the state dir. */
	snprintf(cmd, sizeof(cmd), "ln -s %s %s/linked", core_project_state_dir(p), repo);
	ck_assert_int_eq(system(cmd), 0);
	f = fopen(file, "a");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "no tab here\nrel/ative\t%s\n%s\t%s\n/nonexistent/x\t/\n%s/linked\t%s\n", repo,
		repo, repo, repo, repo);
	fclose(f);
	ck_assert_int_eq(core_registry_list(&v, &n), 0);
	ck_assert_uint_eq(n, 1);
	core_registry_free(v, n);
	ck_assert_int_eq(core_registry_prune(&dropped), 0);
	ck_assert_uint_eq(dropped, 5);
	ck_assert_int_eq(registry_lines(file), 1);
	ck_assert_int_eq(core_registry_list(&v, &n), 0);
	ck_assert_uint_eq(n, 1);
	core_registry_free(v, n);
	/* The registry itself as a link is refused, not followed. */
	snprintf(cmd, sizeof(cmd), "mv %s %s.real && ln -s %s.real %s", file, file, file, file);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_lt(core_registry_list(&v, &n), 0);
	ck_assert_int_eq(unsetenv("XDG_STATE_HOME"), 0);
	core_project_free(q);
	core_project_free(p);
}
END_TEST

/* Objects in the store dir/part (an objects directory). */
static size_t part_count(const char *dir, const char *part)
{
	char *path = util_path_join(dir, part);
	git_odb *odb = NULL;
	size_t n = 0;

	ck_assert_int_eq(git_odb_open(&odb, path), 0);
	ck_assert_int_eq(git_odb_foreach(odb, count_one, &n), 0);
	git_odb_free(odb);
	free(path);
	return n;
}

START_TEST(objects_tips_copy_what_branches_add)
{
	struct core_project *p = NULL;
	struct core_head h = {0};
	git_oid tips[2], side_blob, old_blob;
	char cmd[512], *store = util_asprintf("%s/.tips", repo), *alt = NULL, *text = NULL;
	char part[GIT_OID_HEXSZ + 1];
	git_odb *odb = NULL;
	size_t len = 0;

	snprintf(cmd, sizeof(cmd),
		 "cd %s && git checkout -qb side && printf SIDE > s && git add s && "
		 "git commit -qm side && git checkout -q -",
		 repo);
	ck_assert_int_eq(system(cmd), 0);
	hash_text("SIDE", false, &side_blob);
	hash_text("abc", false, &old_blob);
	ck_assert_int_eq(core_project_open(&p, repo), 0);
	ck_assert_int_eq(core_project_head(p, &h), 0);
	ck_assert_int_eq(core_rev_resolve(p, "side", &tips[0]), 0);
	ck_assert_int_eq(core_rev_resolve(p, "HEAD", &tips[1]), 0);
	ck_assert_msg(core_objects_tips(p, h.commit, store, tips, 1) == 0, "%s", util_err_msg());
	/* One part, named relatively (the store is made in a staging directory). */
	alt = util_path_join(store, "info/alternates");
	ck_assert_int_eq(util_read_file(alt, &text, &len), 0);
	ck_assert_uint_eq(len, GIT_OID_HEXSZ + 1);
	snprintf(part, sizeof(part), "%.*s", GIT_OID_HEXSZ, text);
	/* What side adds beyond the base: its commit, its root tree, the new blob; no more. */
	ck_assert_uint_eq(part_count(store, part), 3);
	{
		char *path = util_path_join(store, part);

		ck_assert_int_eq(git_odb_open(&odb, path), 0);
		free(path);
	}
	ck_assert(git_odb_exists(odb, &side_blob));
	ck_assert(git_odb_exists(odb, &tips[0]));
	ck_assert(!git_odb_exists(odb, &old_blob));
	/* The same tips again: nothing new. More tips, all there already: an empty part. */
	ck_assert_int_eq(core_objects_tips(p, h.commit, store, tips, 1), 0);
	free(text);
	ck_assert_int_eq(util_read_file(alt, &text, &len), 0);
	ck_assert_uint_eq(len, GIT_OID_HEXSZ + 1);
	ck_assert_int_eq(core_objects_tips(p, h.commit, store, tips, 2), 0);
	free(text);
	ck_assert_int_eq(util_read_file(alt, &text, &len), 0);
	ck_assert_uint_eq(len, 2 * (GIT_OID_HEXSZ + 1));
	git_odb_free(odb);
	free(h.branch);
	free(text);
	free(alt);
	free(store);
	core_project_free(p);
}
END_TEST

/* The state directory's place, and the project of a folder in a view found from its path. */
START_TEST(state_dir_and_view_paths)
{
	struct core_view_of v;
	char *s, path[512], ws[256];

	s = core_state_dir_of("/r", "/r/.git", "/r/.git");
	ck_assert_str_eq(s, "/r/.git/arborinth");
	free(s);
	s = core_state_dir_of("/wt", "/r/.git/worktrees/wt", "/r/.git");
	ck_assert_str_eq(s, "/r/.git/arborinth/worktrees/wt");
	free(s);
	/* Not in a view: no state directory there. */
	snprintf(path, sizeof(path), "%s/d/e", repo);
	ck_assert_int_eq(core_view_of(path, &v), -ENOENT);
	/* The path's shape alone is not enough: the state.db and folders must be there. */
	snprintf(ws, sizeof(ws), "%s/.git/arborinth/workspaces/w1/workdir", repo);
	snprintf(path, sizeof(path), "%s/src", ws);
	ck_assert_int_eq(core_view_of(path, &v), -ENOENT);
	ck_assert_int_eq(util_mkdir_p(path, 0700), 0);
	ck_assert_int_eq(core_view_of(path, &v), -ENOENT);
	snprintf(path, sizeof(path), "%s/.git/arborinth/state.db", repo);
	ck_assert_int_eq(util_write_file(path, "", 0, 0600), 0);
	/* Control: now it is a view of repo, at the workdir and below it. */
	ck_assert_int_eq(core_view_of(ws, &v), 0);
	ck_assert_str_eq(v.root, repo);
	ck_assert_str_eq(v.name, "w1");
	core_view_of_free(&v);
	snprintf(path, sizeof(path), "%s/src", ws);
	ck_assert_int_eq(core_view_of(path, &v), 0);
	ck_assert_str_eq(v.root, repo);
	snprintf(path, sizeof(path), "%s/.git/arborinth", repo);
	ck_assert_str_eq(v.state, path);
	core_view_of_free(&v);
	/* workdirX, a bad name, a workspace folder but not its workdir: not a view. */
	snprintf(path, sizeof(path), "%sX", ws);
	ck_assert_int_eq(util_mkdir_p(path, 0700), 0);
	ck_assert_int_eq(core_view_of(path, &v), -ENOENT);
	snprintf(path, sizeof(path), "%s/.git/arborinth/workspaces/.w/workdir", repo);
	ck_assert_int_eq(util_mkdir_p(path, 0700), 0);
	ck_assert_int_eq(core_view_of(path, &v), -ENOENT);
	snprintf(path, sizeof(path), "%s/.git/arborinth/workspaces/w1", repo);
	ck_assert_int_eq(core_view_of(path, &v), -ENOENT);
	/* A decoy further right (what a box made in its view): the leftmost, the host's, wins. */
	snprintf(path, sizeof(path), "%s/x/.git/arborinth/workspaces/w2/workdir", ws);
	ck_assert_int_eq(util_mkdir_p(path, 0700), 0);
	ck_assert_int_eq(core_view_of(path, &v), 0);
	ck_assert_str_eq(v.name, "w1");
	core_view_of_free(&v);
	/* A linked worktree's: its root from git's own record, <commondir>/worktrees/ID/gitdir. */
	snprintf(path, sizeof(path), "%s/.git/arborinth/worktrees/lw/workspaces/l/workdir", repo);
	ck_assert_int_eq(util_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.git/arborinth/worktrees/lw/state.db", repo);
	ck_assert_int_eq(util_write_file(path, "", 0, 0600), 0);
	snprintf(path, sizeof(path), "%s/.git/worktrees/lw", repo);
	ck_assert_int_eq(util_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.git/worktrees/lw/gitdir", repo);
	ck_assert_int_eq(util_write_file(path, "/elsewhere/lw/.git\n", 19, 0600), 0);
	snprintf(path, sizeof(path), "%s/.git/arborinth/worktrees/lw/workspaces/l/workdir", repo);
	ck_assert_int_eq(core_view_of(path, &v), 0);
	ck_assert_str_eq(v.root, "/elsewhere/lw");
	ck_assert_str_eq(v.name, "l");
	core_view_of_free(&v);
	util_err_clear();
}
END_TEST

/* fs_lfs_parse takes a pointer exactly as git-lfs writes it, and nothing like it. */
START_TEST(lfs_pointers)
{
	static const char good[] =
	    "version https://git-lfs.github.com/spec/v1\n"
	    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca2"
	    "4d17e2393\nsize 12345\n";
	static const char *const bad[] = {
	    /* CRLF, upper-case hex, a short oid, a leading zero, a sign, no size, no newline */
	    "version https://git-lfs.github.com/spec/v1\r\noid sha256:4d7a214614ab2935c943f9e0ff"
	    "69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1\n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4D7A214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1\n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e239\nsize 1\n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 01\n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize -1\n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize \n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1",
	    /* more lines: an extension (its content needs another filter), trailing text */
	    "version https://git-lfs.github.com/spec/v1\next-0-foo sha256:4d7a214614ab2935c943f9e"
	    "0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\noid sha256:4d7a214614ab2935c943f9e0ff69d"
	    "22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1\n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1\nx y\n",
	    /* another version, or a too large size */
	    "version https://hawser.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d2"
	    "2eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1\n",
	    "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69"
	    "d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 99999999999999999999\n",
	};
	struct fs_lfs_ptr p;
	char big[FS_LFS_POINTER_MAX + 8];

	ck_assert_int_eq(fs_lfs_parse(good, strlen(good), &p), 0);
	ck_assert_str_eq(p.oid, "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393");
	ck_assert_int_eq(p.size, 12345);
	ck_assert_int_eq(fs_lfs_parse(good, strlen(good) - 1, &p), -EINVAL);
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++)
		ck_assert_msg(fs_lfs_parse(bad[i], strlen(bad[i]), &p) == -EINVAL, "accepted #%zu",
			      i);
	/* The right form padded past the limit: a pointer is under 1024 bytes. */
	memset(big, '\n', sizeof(big));
	memcpy(big, good, strlen(good));
	ck_assert_int_eq(fs_lfs_parse(big, sizeof(big), &p), -EINVAL);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, name_rules);
	tcase_add_test(tc, name_rules_vs_libgit2);
	suite_add_tcase(s, tc);
	tc = tcase_create("tree entry names");
	tcase_add_test(tc, entry_names);
	tcase_add_test(tc, open_beneath);
	tcase_add_test(tc, submodule_names);
	suite_add_tcase(s, tc);
	tc = tcase_create("lfs pointers");
	tcase_add_test(tc, lfs_pointers);
	suite_add_tcase(s, tc);
	tc = tcase_create("repository");
	tcase_add_checked_fixture(tc, repo_setup, repo_teardown);
	tcase_add_test(tc, rev_resolution);
	tcase_add_test(tc, state_db_migrates_and_refuses_newer);
	tcase_add_test(tc, create_writes_gitdir_and_index);
	tcase_add_test(tc, objects_view_holds_only_the_history);
	tcase_add_test(tc, submodules_from_gitmodules);
	tcase_add_test(tc, registry_lists_live_projects_once);
	tcase_add_test(tc, state_dir_and_view_paths);
	tcase_add_test(tc, objects_tips_copy_what_branches_add);
	suite_add_tcase(s, tc);
	tc = tcase_create("audit sync");
	tcase_add_unchecked_fixture(tc, repo_setup, view_teardown);
	tcase_add_test(tc, audit_sync_asks_the_daemon_then_falls_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(core_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
