/*
 * tests/unit/check_fs.c: the view daemon's internals without a mount: names, the node tables
 * and the hooks through which node.c (the bottom of fs/) tells the layers above it, listings,
 * what a node's upper copy counts, and the FUSE transport's byte edits of INIT and OPEN
 * replies (fs/transport/), which a live kernel otherwise is the only test of.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fs_internal.h"

static struct fs fs;
static int fds_changed, flushed, forgotten;
static struct fs_node *last_flushed, *last_forgotten;

static void count_fds(struct fs *f)
{
	ck_assert_ptr_eq(f, &fs);
	fds_changed++;
}

static void count_flush(struct fs *f, struct fs_node *n)
{
	ck_assert_ptr_eq(f, &fs);
	flushed++;
	last_flushed = n;
}

static void count_forget(struct fs *f, struct fs_node *n)
{
	ck_assert_ptr_eq(f, &fs);
	forgotten++;
	last_forgotten = n;
}

static void tables_setup(void)
{
	memset(&fs, 0, sizeof(fs));
	fds_changed = flushed = forgotten = 0;
	last_flushed = last_forgotten = NULL;
	ck_assert_int_eq(fs_node_init_tables(&fs), 0);
	fs.root = fs_node_new(&fs, NULL, "", S_IFDIR);
	ck_assert_ptr_nonnull(fs.root);
}

static void tables_teardown(void)
{
	fs_node_free_all(&fs);
}

START_TEST(name_check)
{
	ck_assert_int_eq(fs_name_check("a"), 0);
	ck_assert_int_eq(fs_name_check(".hidden"), 0);
	ck_assert_int_eq(fs_name_check("..."), 0);
	ck_assert_int_eq(fs_name_check(""), -EINVAL);
	ck_assert_int_eq(fs_name_check("."), -EINVAL);
	ck_assert_int_eq(fs_name_check(".."), -EINVAL);
	ck_assert_int_eq(fs_name_check("a/b"), -EINVAL);

	char long_name[300];

	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ck_assert_int_eq(fs_name_check(long_name), -ENAMETOOLONG);
	long_name[255] = '\0';
	ck_assert_int_eq(fs_name_check(long_name), 0);
}
END_TEST

START_TEST(nodes_by_ino_name_and_path)
{
	struct fs_node *d = fs_node_new(&fs, fs.root, "dir", S_IFDIR);
	struct fs_node *f = fs_node_new(&fs, d, "file", S_IFREG);
	char *path;

	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_eq(fs_node_get(&fs, f->ino), f);
	ck_assert_ptr_eq(fs_node_get(&fs, FUSE_ROOT_ID), fs.root);
	ck_assert_ptr_eq(fs_node_by_name(&fs, fs.root, "dir"), d);
	ck_assert_ptr_eq(fs_node_by_name(&fs, d, "file"), f);
	ck_assert_ptr_null(fs_node_by_name(&fs, fs.root, "file")); /* names are per parent */
	path = fs_node_path(&fs, f, NULL);
	ck_assert_str_eq(path, "dir/file");
	free(path);
	path = fs_node_path(&fs, d, "new");
	ck_assert_str_eq(path, "dir/new");
	free(path);
	path = fs_node_path(&fs, fs.root, NULL);
	ck_assert_str_eq(path, "");
	free(path);

	/* Many nodes: the tables grow and still find each one. */
	for (int i = 0; i < 3000; i++) {
		char name[16];

		snprintf(name, sizeof(name), "n%d", i);
		ck_assert_ptr_nonnull(fs_node_new(&fs, d, name, S_IFREG));
	}
	ck_assert_ptr_eq(fs_node_by_name(&fs, d, "n2999"), fs_node_get(&fs, f->ino + 3000));
	ck_assert_ptr_eq(fs_node_by_name(&fs, d, "file"), f);
}
END_TEST

START_TEST(move_calls_the_flush_hook_first)
{
	struct fs_node *a = fs_node_new(&fs, fs.root, "a", S_IFDIR);
	struct fs_node *b = fs_node_new(&fs, fs.root, "b", S_IFDIR);
	struct fs_node *f = fs_node_new(&fs, a, "f", S_IFREG);
	uint64_t gen_a, gen_b;
	char *path;

	a->nlookup = b->nlookup = 1; /* the kernel holds both folders: neither goes when emptied */
	gen_a = a->gen;
	gen_b = b->gen;

	/* Without hooks (a test, or a layer not set up) node.c calls nothing above it. */
	ck_assert_int_eq(fs_node_move(&fs, f, b, "g"), 0);
	ck_assert_int_eq(flushed, 0);
	fs.hooks.flush = count_flush;
	ck_assert_int_eq(fs_node_move(&fs, f, a, "h"), 0);
	ck_assert_int_eq(flushed, 1);
	ck_assert_ptr_eq(last_flushed, f);
	ck_assert_ptr_eq(f->parent, a);
	ck_assert_ptr_null(fs_node_by_name(&fs, b, "g"));
	ck_assert_ptr_eq(fs_node_by_name(&fs, a, "h"), f);
	ck_assert_uint_gt(a->gen, gen_a); /* both listings change */
	ck_assert_uint_gt(b->gen, gen_b);
	path = fs_node_path(&fs, f, NULL);
	ck_assert_str_eq(path, "a/h");
	free(path);

	/* Detached (unlinked, still open): flushed again, out of the name table. */
	ck_assert_int_eq(fs_node_move(&fs, f, NULL, NULL), 0);
	ck_assert_int_eq(flushed, 2);
	ck_assert(f->unlinked);
	ck_assert_ptr_null(fs_node_by_name(&fs, a, "h"));
}
END_TEST

START_TEST(freeing_calls_flush_and_forget)
{
	struct fs_node *f = fs_node_new(&fs, fs.root, "f", S_IFREG);
	fuse_ino_t ino = f->ino;

	fs.hooks.flush = count_flush;
	fs.hooks.forget = count_forget;
	ck_assert_uint_eq(fs.root->refs, 1);
	fs_node_maybe_free(&fs, f); /* nlookup 0, refs 0: goes */
	ck_assert_ptr_null(fs_node_get(&fs, ino));
	ck_assert_int_eq(flushed, 1);
	ck_assert_int_eq(forgotten, 1);
	ck_assert_ptr_eq(last_forgotten, f); /* compared, never read: it is freed */
	ck_assert_uint_eq(fs.root->refs, 0);
	fs_node_maybe_free(&fs, fs.root); /* the root never goes */
	ck_assert_ptr_eq(fs_node_get(&fs, FUSE_ROOT_ID), fs.root);

	struct fs_node *kept = fs_node_new(&fs, fs.root, "kept", S_IFREG);

	kept->nlookup = 1; /* the kernel holds it */
	fs_node_maybe_free(&fs, kept);
	ck_assert_ptr_eq(fs_node_get(&fs, kept->ino), kept);
	ck_assert_int_eq(forgotten, 1);
}
END_TEST

START_TEST(upper_descriptor_tells_the_hook_once)
{
	char dir[] = "/tmp/check_fs.XXXXXX", path[64];
	struct fs_node *f = fs_node_new(&fs, fs.root, "f", S_IFREG);
	struct stat st;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "hello", 5), 5);
	ck_assert_int_eq(fstat(fd, &st), 0);
	fs.hooks.fds_changed = count_fds;
	fs_node_set_upper(&fs, f, fd, &st);
	ck_assert_int_eq(fds_changed, 1);
	ck_assert_uint_eq(fs.nupper_fds, 1);
	ck_assert_ptr_eq(fs_node_by_upper(&fs, st.st_dev, st.st_ino), f);
	ck_assert_int_eq(f->charge, fs_disk_charge_of(&st));
	fs_node_set_upper(&fs, f, fd, &st); /* the same descriptor again: no new one */
	ck_assert_int_eq(fds_changed, 1);
	ck_assert_uint_eq(fs.nupper_fds, 1);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(disk_charge)
{
	struct stat st = {.st_mode = S_IFREG | 0644, .st_size = 10, .st_blocks = 8};

	ck_assert_int_eq(fs_disk_charge_of(&st), 4096); /* allocation when larger */
	st.st_size = 1 << 20;
	st.st_blocks = 0; /* sparse, or not yet allocated: its size */
	ck_assert_int_eq(fs_disk_charge_of(&st), 1 << 20);
	st.st_mode = S_IFDIR | 0755;
	st.st_blocks = 8;
	ck_assert_int_eq(fs_disk_charge_of(&st), 4096); /* directories: allocation only */
	fs_listing_free(NULL);
}
END_TEST

START_TEST(msg_fields)
{
	unsigned char buf[16];

	memset(buf, 0xee, sizeof(buf));
	fs_msg_put32(buf, 3, 0x01020304u); /* unaligned */
	ck_assert_uint_eq(fs_msg_get32(buf, 3), 0x01020304u);
	ck_assert_uint_eq(buf[2], 0xee);
	ck_assert_uint_eq(buf[7], 0xee);
}
END_TEST

START_TEST(passthrough_init_patch)
{
	struct fs_config cfg = {.passthrough = false};
	unsigned char init_out[FS_INIT_OUT_SIZE], before[FS_INIT_OUT_SIZE];

	memset(&fs, 0, sizeof(fs));
	fs.cfg = &cfg;
	memset(init_out, 0, sizeof(init_out));
	fs_msg_put32(init_out, FS_INIT_OUT_FLAGS2, 1u << 1);
	memcpy(before, init_out, sizeof(init_out));

	/* Not chosen for this workspace: INIT's reply is left as it is. */
	fs_pt_peek_init(&fs, 1u << 5);
	ck_assert(!fs.pt_offered);
	ck_assert_ptr_nonnull(fs.pt_why);
	fs_pt_patch_init(&fs, init_out);
	ck_assert_mem_eq(init_out, before, sizeof(init_out));
	ck_assert(!fs.pt_asked);

	/* Chosen but not offered by the kernel: said why, reply untouched. */
	cfg.passthrough = true;
	fs.pt_why = NULL;
	fs_pt_peek_init(&fs, 1u << 1);
	ck_assert(!fs.pt_offered);
	ck_assert_str_eq(fs.pt_why, "passthrough unavailable: the kernel does not offer it");
	fs_pt_patch_init(&fs, init_out);
	ck_assert_mem_eq(init_out, before, sizeof(init_out));

	/* Offered (as devio.c found it): FUSE_PASSTHROUGH and a stack depth of 1 asked for,
	 * the other flags kept. */
	fs.pt_offered = true;
	fs_pt_patch_init(&fs, init_out);
	ck_assert(fs.pt_asked);
	ck_assert_uint_eq(fs_msg_get32(init_out, FS_INIT_OUT_FLAGS2), (1u << 1) | (1u << 5));
	ck_assert_uint_eq(fs_msg_get32(init_out, 36), 1);
	ck_assert_mem_eq(init_out, before, FS_INIT_OUT_FLAGS2);
	fs_pt_patch_init(&fs, NULL); /* an unreadable reply: nothing */
}
END_TEST

START_TEST(passthrough_reply_untouched_without_backing)
{
	unsigned char hdr[FS_MSG_OUT_HEADER] = {0}, open_out[16], before[16];
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {open_out, sizeof(open_out)}};

	memset(open_out, 0x5a, sizeof(open_out));
	memcpy(before, open_out, sizeof(open_out));
	fs_pt_patch_reply(iov, 2); /* no backing id on this thread: an ordinary OPEN reply */
	ck_assert_mem_eq(open_out, before, sizeof(open_out));
	fs_pt_patch_reply(iov, 1);
	ck_assert_mem_eq(open_out, before, sizeof(open_out));
}
END_TEST

static Suite *fs_suite(void)
{
	Suite *s = suite_create("fs");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, name_check);
	tcase_add_test(tc, disk_charge);
	suite_add_tcase(s, tc);
	tc = tcase_create("nodes");
	tcase_add_checked_fixture(tc, tables_setup, tables_teardown);
	tcase_add_test(tc, nodes_by_ino_name_and_path);
	tcase_add_test(tc, move_calls_the_flush_hook_first);
	tcase_add_test(tc, freeing_calls_flush_and_forget);
	tcase_add_test(tc, upper_descriptor_tells_the_hook_once);
	suite_add_tcase(s, tc);
	tc = tcase_create("transport");
	tcase_add_test(tc, msg_fields);
	tcase_add_test(tc, passthrough_init_patch);
	tcase_add_test(tc, passthrough_reply_untouched_without_backing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
