/*
 * tests/unit/check_jail.c: paths, mount specs (every error), the mount tree (order, guards,
 * replacement, sealing, planted links), the environment rules, the seccomp export, the box's
 * profile and argv, and box-init with its hook table.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail/box_internal.h"

static char tmp[64];

static void tmp_setup(void)
{
	strcpy(tmp, "/var/tmp/check_jail.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void tmp_teardown(void)
{
	ck_assert_int_eq(util_rm_rf(tmp), 0);
}

static char *tpath(const char *rel)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", tmp, rel);
	return b;
}

static void mkdirs(const char *rel)
{
	ck_assert_int_eq(util_mkdir_p(tpath(rel), 0755), 0);
}

/* ---- paths ---------------------------------------------------------------------------- */

START_TEST(path_norm)
{
	static const struct {
		const char *in, *out;
	} ok[] = {{"/", "/"},		{"//", "/"},	    {"/a", "/a"},      {"/a/", "/a"},
		  {"//a//b//", "/a/b"}, {"/a/.b", "/a/.b"}, {"/a..b", "/a..b"}};
	static const char *const bad[] = {"a", "", "/a/./b", "/..", "/a/..", "/.", "./a"};
	char *out;

	for (size_t i = 0; i < ARB_ARRAY_LEN(ok); i++) {
		ck_assert_int_eq(jail_path_norm(ok[i].in, &out), 0);
		ck_assert_str_eq(out, ok[i].out);
		free(out);
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		ck_assert_int_eq(jail_path_norm(bad[i], &out), -EINVAL);
		ck_assert_ptr_null(out);
	}
}
END_TEST

START_TEST(path_under_and_order)
{
	const char *sorted[] = {"/", "/a", "/a/b", "/a/b/c", "/a-b", "/a0", "/ab", "/b"};

	ck_assert(util_path_under("/a/b", "/a"));
	ck_assert(util_path_under("/a", "/a"));
	ck_assert(util_path_under("/x", "/"));
	ck_assert(!util_path_under("/ab", "/a"));
	ck_assert(!util_path_under("/a", "/a/b"));
	/* jail_path_cmp: every directory right before its subtree, '/' lowest. */
	for (size_t i = 0; i + 1 < ARB_ARRAY_LEN(sorted); i++)
		ck_assert_msg(jail_path_cmp(sorted[i], sorted[i + 1]) < 0, "%s < %s", sorted[i],
			      sorted[i + 1]);
	ck_assert_int_eq(jail_path_cmp("/a", "/a"), 0);
}
END_TEST

START_TEST(path_real)
{
	char *r;

	mkdirs("d/e");
	ck_assert_int_eq(symlink(tpath("d"), tpath("link")), 0);
	r = jail_path_real(tpath("link/e/missing/x"));
	ck_assert_str_eq(r, tpath("d/e/missing/x"));
	free(r);
	r = jail_path_real("/");
	ck_assert_str_eq(r, "/");
	free(r);
	r = jail_path_real("/nonexistent-arb/x");
	ck_assert_str_eq(r, "/nonexistent-arb/x");
	free(r);
}
END_TEST

/* ---- mount specs ---------------------------------------------------------------------- */

START_TEST(spec_valid)
{
	struct jail_spec s;

	ck_assert_int_eq(jail_spec_parse("ro:/etc", &s), 0);
	ck_assert_int_eq(s.type, JAIL_MOUNT_RO);
	ck_assert_str_eq(s.src, "/etc");
	ck_assert_str_eq(s.dest, "/etc");
	jail_spec_clear(&s);
	ck_assert_int_eq(jail_spec_parse("rw://etc/:/x//y/", &s), 0);
	ck_assert_int_eq(s.type, JAIL_MOUNT_RW);
	ck_assert_str_eq(s.src, "/etc");
	ck_assert_str_eq(s.dest, "/x/y");
	jail_spec_clear(&s);
	ck_assert_int_eq(jail_spec_parse("tmpfs:/t", &s), 0);
	ck_assert_int_eq(s.type, JAIL_MOUNT_TMPFS);
	ck_assert_ptr_null(s.src);
	jail_spec_clear(&s);
	ck_assert_int_eq(jail_spec_parse("dev:/d", &s), 0);
	ck_assert_int_eq(s.type, JAIL_MOUNT_DEV);
	jail_spec_clear(&s);
	ck_assert_int_eq(jail_spec_parse("proc:/p", &s), 0);
	ck_assert_int_eq(s.type, JAIL_MOUNT_PROC);
	jail_spec_clear(&s);
}
END_TEST

START_TEST(spec_errors)
{
	static const struct {
		const char *spec, *msg;
	} bad[] = {
	    {"", "--mount '': empty spec (expected TYPE:dest or TYPE:source:dest)"},
	    {"ro", "--mount 'ro': missing ':' (expected TYPE:dest or TYPE:source:dest)"},
	    {"ro:/a:/b:/c", "--mount 'ro:/a:/b:/c': too many ':'"},
	    {":/x", "--mount ':/x': missing TYPE before ':'"},
	    {"RO:/x", "--mount 'RO:/x': unknown type 'RO' (expected one of ro, rw, overlay, tmpfs, "
		      "dev, proc)"},
	    {"dir:/x", "--mount 'dir:/x': unknown type 'dir'"},
	    {"tmpfs:/a:/b",
	     "--mount 'tmpfs:/a:/b': type 'tmpfs' takes only a destination (tmpfs:dest)"},
	    {"dev:/a:/b", "--mount 'dev:/a:/b': type 'dev' takes only a destination (dev:dest)"},
	    {"proc:/a:/b",
	     "--mount 'proc:/a:/b': type 'proc' takes only a destination (proc:dest)"},
	    {"ro::/x", "--mount 'ro::/x': empty source (write ro:dest to bind the destination path "
		       "itself)"},
	    {"ro:", "--mount 'ro:': empty destination"},
	    {"rw:/etc:", "--mount 'rw:/etc:': empty destination"},
	    {"ro:etc", "--mount 'ro:etc': destination 'etc' is not an absolute path"},
	    {"ro:etc:/x", "--mount 'ro:etc:/x': source 'etc' is not an absolute path"},
	    {"tmpfs:~/x", "--mount 'tmpfs:~/x': destination '~/x' is not an absolute path"},
	    {"ro:/a/../b",
	     "--mount 'ro:/a/../b': destination '/a/../b' must not contain '.' or '..'"},
	    {"ro:/etc/.:/x",
	     "--mount 'ro:/etc/.:/x': source '/etc/.' must not contain '.' or '..'"},
	    {"ro:/nonexistent-arb",
	     "--mount 'ro:/nonexistent-arb': path '/nonexistent-arb' does not "
	     "exist (TYPE:dest binds the destination path itself)"},
	    {"rw:/nonexistent-arb:/x", "--mount 'rw:/nonexistent-arb:/x': source "
				       "'/nonexistent-arb' does not exist"},
	};
	struct jail_spec s;

	for (size_t i = 0; i < ARB_ARRAY_LEN(bad); i++) {
		ck_assert_int_eq(jail_spec_parse(bad[i].spec, &s), -EINVAL);
		ck_assert_msg(util_str_has_prefix(util_err_msg(), bad[i].msg), "%s: got '%s'",
			      bad[i].spec, util_err_msg());
		ck_assert_ptr_null(s.src);
		ck_assert_ptr_null(s.dest);
	}
}
END_TEST

/* ---- the mount tree ------------------------------------------------------------------- */

static void add(struct jail_mounts *m, enum jail_mount_type t, enum jail_mount_origin o,
		unsigned flags, const char *src, const char *dest, const char *protects)
{
	struct jail_mount x = {.type = t,
			       .origin = o,
			       .flags = flags,
			       .src = (char *)src,
			       .dest = (char *)dest,
			       .protects = (char *)protects,
			       .why = (char *)"test"};

	ck_assert_int_eq(jail_mounts_add(m, &x), 0);
}

/* a's words joined by spaces into buf (the test fails if they do not fit). */
static const char *joined(const struct jail_strv *a, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < a->n; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", a->v[i]);

		ck_assert(n >= 0 && (size_t)n < len - used);
		used += (size_t)n;
	}
	return buf;
}

/* / ro, /proc, /tmp (replaceable), a guard at tmp/g with a default below it. */
static void sample_tree(struct jail_mounts *m)
{
	mkdirs("g/inner");
	mkdirs("src");
	add(m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/", "/", NULL);
	add(m, JAIL_MOUNT_PROC, JAIL_FROM_DEFAULT, 0, NULL, "/proc", "/proc");
	add(m, JAIL_MOUNT_TMPFS, JAIL_FROM_DEFAULT, JAIL_MOUNT_REPLACEABLE, NULL, "/tmp", NULL);
	add(m, JAIL_MOUNT_TMPFS, JAIL_FROM_GUARD, JAIL_MOUNT_SEAL, NULL, tpath("g"), tpath("g"));
	add(m, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT, 0, tpath("src"), tpath("g/inner"), NULL);
}

START_TEST(tree_guards_and_replacement)
{
	struct jail_mounts m = {0};
	char spec[512];
	const struct jail_mount *x;

	sample_tree(&m);
	/* At or below a guard: refused, naming it. */
	snprintf(spec, sizeof(spec), "tmpfs:%s", tpath("g"));
	ck_assert_int_eq(jail_mounts_add_user(&m, spec), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "at or below the guard at"));
	snprintf(spec, sizeof(spec), "ro:/etc:%s", tpath("g/inner/x"));
	ck_assert_int_eq(jail_mounts_add_user(&m, spec), -EINVAL);
	/* Through a host symlink into the guard: refused too. */
	ck_assert_int_eq(symlink(tpath("g"), tpath("glink")), 0);
	snprintf(spec, sizeof(spec), "tmpfs:%s", tpath("glink/y"));
	ck_assert_int_eq(jail_mounts_add_user(&m, spec), -EINVAL);
	/* A source containing what a mount hides: refused. */
	snprintf(spec, sizeof(spec), "ro:%s:/mnt", tmp);
	ck_assert_int_eq(jail_mounts_add_user(&m, spec), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "would expose"));
	ck_assert_int_eq(jail_mounts_add_user(&m, "ro:/proc:/mnt"), -EINVAL);
	/* A source that is a symlink into a hidden path: refused; its real path is explicit. */
	ck_assert_int_eq(symlink(tpath("g/inner"), tpath("ilink")), 0);
	snprintf(spec, sizeof(spec), "ro:%s:/mnt", tpath("ilink"));
	ck_assert_int_eq(jail_mounts_add_user(&m, spec), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "resolves through a symlink"));
	snprintf(spec, sizeof(spec), "ro:%s:/mnt", tpath("g/inner"));
	ck_assert_int_eq(jail_mounts_add_user(&m, spec), 0);
	/* Not replaceable: refused; the same mount again: accepted, unchanged. */
	ck_assert_int_eq(jail_mounts_add_user(&m, "tmpfs:/proc"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "/proc already has a default mount"));
	ck_assert_int_eq(jail_mounts_add_user(&m, "proc:/proc"), 0);
	ck_assert_int_eq(jail_mounts_find(&m, "/proc")->origin, JAIL_FROM_DEFAULT);
	ck_assert_int_eq(jail_mounts_add_user(&m, "rw:/"), -EINVAL);
	/* Replaceable: the user mount takes its place; a later user mount replaces that. */
	ck_assert_int_eq(jail_mounts_add_user(&m, "ro:/etc:/tmp"), 0);
	x = jail_mounts_find(&m, "/tmp");
	ck_assert_int_eq(x->origin, JAIL_FROM_USER);
	ck_assert_int_eq(x->type, JAIL_MOUNT_RO);
	ck_assert_ptr_nonnull(strstr(x->why, "replacing the default"));
	ck_assert_int_eq(jail_mounts_add_user(&m, "tmpfs:/tmp"), 0);
	x = jail_mounts_find(&m, "/tmp");
	ck_assert_int_eq(x->type, JAIL_MOUNT_TMPFS);
	ck_assert_ptr_null(x->src);
	/* Two different defaults at one destination are a programming error. */
	{
		struct jail_mount y = {
		    .type = JAIL_MOUNT_DEV, .dest = (char *)"/proc", .why = (char *)"x"};

		ck_assert_int_eq(jail_mounts_add(&m, &y), -EEXIST);
	}
	jail_mounts_clear(&m);
}
END_TEST

START_TEST(tree_order_and_args)
{
	struct jail_mounts m = {0};
	struct jail_strv a = {0};
	char want[2048];

	sample_tree(&m);
	ck_assert_int_eq(jail_mounts_add_user(&m, "tmpfs:/a-b"), 0);
	ck_assert_int_eq(jail_mounts_add_user(&m, "tmpfs:/a/b"), 0);
	jail_mounts_sort(&m);
	ck_assert_str_eq(m.v[0].dest, "/");
	ck_assert_int_eq(jail_mounts_depth(&m, 0), 0);
	for (size_t i = 1; i < m.n; i++) {
		ck_assert(jail_path_cmp(m.v[i - 1].dest, m.v[i].dest) < 0);
		ck_assert_uint_ge(jail_mounts_depth(&m, i), 1);
	}
	ck_assert_uint_eq(jail_mounts_depth(&m, m.n - 1), 2); /* g/inner below g */
	jail_mounts_args(&m, &a);
	ck_assert_int_eq(jail_strv_ok(&a), 0);
	/* The sealed guard is remounted read-only after what is below it is mounted. */
	snprintf(want, sizeof(want),
		 "--ro-bind / / --tmpfs /a/b --tmpfs /a-b --proc /proc --tmpfs /tmp --tmpfs %s "
		 "--bind %s %s --remount-ro %s",
		 tpath("g"), tpath("src"), tpath("g/inner"), tpath("g"));
	{
		char got[2048];

		ck_assert_str_eq(joined(&a, got, sizeof(got)), want);
	}
	jail_strv_clear(&a);
	jail_mounts_clear(&m);
}
END_TEST

START_TEST(tree_args_skip_shown)
{
	/* A read-only bind of what its ancestor's read-only bind shows there is not bound again. */
	struct jail_mounts m = {0};
	struct jail_strv a = {0};
	char got[1024];

	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/", "/", NULL);
	add(&m, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT, 0, "/w/home", "/h", NULL);
	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/h/tool", "/h/tool", NULL);
	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/h/tool/a/shims", "/h/tool/a/shims", NULL);
	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/elsewhere", "/h/tool/b", NULL);
	add(&m, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT, 0, "/h/tool/c", "/h/tool/c", NULL);
	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/h/tool/c/d", "/h/tool/c/d", NULL);
	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/h/toolx", "/h/tool/e", NULL);
	jail_mounts_sort(&m);
	jail_mounts_args(&m, &a);
	ck_assert_int_eq(jail_strv_ok(&a), 0);
	joined(&a, got, sizeof(got));
	/* Only /h/tool/a/shims goes: under a rw bind, another source or a sibling path stays. */
	ck_assert_str_eq(got, "--ro-bind / / --bind /w/home /h --ro-bind /h/tool /h/tool "
			      "--ro-bind /elsewhere /h/tool/b --bind /h/tool/c /h/tool/c "
			      "--ro-bind /h/tool/c/d /h/tool/c/d --ro-bind /h/toolx /h/tool/e");
	jail_strv_clear(&a);
	jail_mounts_clear(&m);
}
END_TEST

START_TEST(tree_args_nested_seal)
{
	/* A sealed tmpfs in a sealed tmpfs is left out (the outer one hides and seals it too). */
	struct jail_mounts m = {0};
	struct jail_strv a = {0};
	char got[1024];

	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/", "/", NULL);
	add(&m, JAIL_MOUNT_TMPFS, JAIL_FROM_GUARD, JAIL_MOUNT_SEAL, NULL, "/o", "/o");
	add(&m, JAIL_MOUNT_TMPFS, JAIL_FROM_GUARD, JAIL_MOUNT_SEAL, NULL, "/o/s", "/o/s");
	add(&m, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT, 0, "/ws/view", "/o/s/w/view", NULL);
	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/o/objects", "/o/objects", NULL);
	/* Controls: sealed but below a bind, and a tmpfs in a sealed one without a seal. */
	add(&m, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT, 0, "/b", "/b", NULL);
	add(&m, JAIL_MOUNT_TMPFS, JAIL_FROM_GUARD, JAIL_MOUNT_SEAL, NULL, "/b/s", "/b/s");
	add(&m, JAIL_MOUNT_TMPFS, JAIL_FROM_DEFAULT, 0, NULL, "/o/t", NULL);
	jail_mounts_sort(&m);
	jail_mounts_args(&m, &a);
	ck_assert_int_eq(jail_strv_ok(&a), 0);
	joined(&a, got, sizeof(got));
	ck_assert_str_eq(got,
			 "--ro-bind / / --bind /b /b --tmpfs /b/s --remount-ro /b/s "
			 "--tmpfs /o --ro-bind /o/objects /o/objects --bind /ws/view /o/s/w/view "
			 "--tmpfs /o/t --remount-ro /o");
	jail_strv_clear(&a);
	jail_mounts_clear(&m);
}
END_TEST

START_TEST(tree_planted_links)
{
	struct jail_mounts m = {0};

	mkdirs("home/dir");
	add(&m, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, "/", "/", NULL);
	add(&m, JAIL_MOUNT_RW, JAIL_FROM_GUARD, JAIL_MOUNT_BOX_WRITABLE, tpath("home"), "/h", "/h");
	add(&m, JAIL_MOUNT_TMPFS, JAIL_FROM_DEFAULT, 0, NULL, "/h/dir/sub", NULL);
	add(&m, JAIL_MOUNT_TMPFS, JAIL_FROM_DEFAULT, 0, NULL, "/h/missing/x", NULL);
	jail_mounts_sort(&m);
	ck_assert_int_eq(jail_mounts_check_links(&m), 0);
	/* The box replaces a directory on the way to a mount point with a symlink. */
	ck_assert_int_eq(rmdir(tpath("home/dir")), 0);
	ck_assert_int_eq(symlink("/etc", tpath("home/dir")), 0);
	ck_assert_int_eq(jail_mounts_check_links(&m), -ELOOP);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "refusing to mount at /h/dir/sub"));
	jail_mounts_clear(&m);
}
END_TEST

/* ---- environment ---------------------------------------------------------------------- */

START_TEST(env_rules)
{
	static const char *const secret[] = {"GITHUB_TOKEN",
					     "AWS_SECRET_ACCESS_KEY",
					     "ANTHROPIC_API_KEY",
					     "SSH_AUTH_SOCK",
					     "DBUS_SESSION_BUS_ADDRESS",
					     "GIT_ASKPASS",
					     "MY_KEY",
					     "db_password",
					     "LC_TOKEN",
					     "NPM_AUTH",
					     "OPENAI_APIKEY",
					     "DISPLAY"};
	static const char *const allowed[] = {"PATH",	  "HOME", "TERM",  "LANG", "LC_ALL",
					      "LC_CTYPE", "TZ",	  "SHELL", "USER"};
	static const char *const not_allowed[] = {"LD_PRELOAD", "PYTHONPATH",	   "OLDPWD",
						  "PS1",	"XDG_RUNTIME_DIR", "HTTP_PROXY"};
	struct jail_strv e = {0};

	for (size_t i = 0; i < ARB_ARRAY_LEN(secret); i++) {
		ck_assert_msg(jail_env_is_secret(secret[i]), "%s", secret[i]);
		ck_assert(!jail_env_is_allowed(secret[i]));
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(allowed); i++)
		ck_assert_msg(jail_env_is_allowed(allowed[i]), "%s", allowed[i]);
	for (size_t i = 0; i < ARB_ARRAY_LEN(not_allowed); i++)
		ck_assert_msg(!jail_env_is_allowed(not_allowed[i]), "%s", not_allowed[i]);
	ck_assert(jail_env_name_valid("A_1"));
	ck_assert(jail_env_name_valid("_x"));
	ck_assert(!jail_env_name_valid("1A"));
	ck_assert(!jail_env_name_valid(""));
	ck_assert(!jail_env_name_valid("A-B"));
	jail_env_set(&e, "A", "1");
	jail_env_set(&e, "AB", "2");
	jail_env_set(&e, "A", "3");
	ck_assert_int_eq(jail_strv_ok(&e), 0);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_str_eq(jail_env_get(e.v, "A"), "3");
	ck_assert_str_eq(jail_env_get(e.v, "AB"), "2");
	ck_assert_ptr_null(jail_env_get(e.v, "B"));
	jail_strv_clear(&e);
}
END_TEST

/* ---- seccomp -------------------------------------------------------------------------- */

START_TEST(seccomp_export)
{
	size_t n, found = 0;
	const struct jail_seccomp_rule *r = jail_seccomp_rules(&n);
	struct stat st;
	int fd;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].syscall, "ioctl")) {
			/* Masked to the 32 bits the kernel reads (CVE-2019-10063). */
			ck_assert_int_eq(r[i].arg, 1);
			ck_assert_uint_eq(r[i].mask, 0xffffffffu);
			found++;
		}
	ck_assert_uint_eq(found, 2);
	ck_assert_ptr_nonnull(jail_seccomp_arches()[0]);
#if defined(__x86_64__)
	ck_assert_str_eq(jail_seccomp_arches()[1], "x86");
#endif
	ck_assert_int_eq(jail_seccomp_export(&fd), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_gt(st.st_size, 8 * 20);
	ck_assert_int_eq(st.st_size % 8, 0); /* struct sock_filter */
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
	close(fd);
}
END_TEST

/* The filter compiled in at build time is what libseccomp makes of the rules now. */
START_TEST(seccomp_compiled_in)
{
	size_t len;
	const unsigned char *bpf = jail_seccomp_bpf(&len);
	int fd = memfd_create("fresh", MFD_CLOEXEC);
	unsigned char *fresh = malloc(len + 1);
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(fresh);
	ck_assert_int_eq(jail_seccomp_build(fd), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)len);
	ck_assert_int_eq(pread(fd, fresh, len + 1, 0), (ssize_t)len);
	ck_assert(memcmp(bpf, fresh, len) == 0);
	/* Control: the comparison tells a filter that differs in one instruction apart. */
	fresh[len - 8] ^= 1;
	ck_assert(memcmp(bpf, fresh, len) != 0);
	free(fresh);
	close(fd);
}
END_TEST

/* ---- the box -------------------------------------------------------------------------- */

/* make_box() without the tool-manager mounts. */
static bool no_tool_managers;

static struct jail_box *make_box(char *const *env, bool net)
{
	struct jail_box_config cfg = {
	    .ws_name = "w",
	    .ws_root = tpath("repo/.git/arborinth/workspaces/w"),
	    .net = net,
	    .no_tool_managers = no_tool_managers,
	    .host_env = env,
	    .bwrap = "/bin/true",
	    .box_init = "/bin/sh",
	};
	static char paths[8][256];
	const char *rel[] = {"repo/.git/arborinth/workspaces/w/workdir",
			     "repo/.git/arborinth/workspaces/w/tmp",
			     "repo/.git/arborinth/workspaces/w/cache",
			     "repo/.git/arborinth/workspaces/w/home",
			     "repo",
			     "repo/.git/objects",
			     "repo/.git/arborinth"};
	const char **slot[] = {&cfg.workdir,  &cfg.tmp,		&cfg.cache,
			       &cfg.home,     &cfg.origin_root, &cfg.origin_objects,
			       &cfg.state_dir};
	struct jail_box *b = NULL;

	for (size_t i = 0; i < ARB_ARRAY_LEN(rel); i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", tmp, rel[i]);
		ck_assert_int_eq(util_mkdir_p(paths[i], 0755), 0);
		*slot[i] = paths[i];
	}
	ck_assert_msg(jail_box_new(&b, &cfg) == 0, "%s", util_err_msg());
	return b;
}

static bool argv_has(const struct jail_box *b, const char *a, const char *next)
{
	char *const *v = jail_box_argv(b);

	for (size_t i = 0; v[i]; i++)
		if (!strcmp(v[i], a) && (!next || (v[i + 1] && !strcmp(v[i + 1], next))))
			return true;
	return false;
}

START_TEST(box_profile)
{
	char home[256], pathvar[1024], homevar[300];
	char *env[] = {homevar,	     pathvar,
		       "TERM=xterm", "GITHUB_TOKEN=ghp_x",
		       "LC_ALL=C",   "SSH_AUTH_SOCK=/run/x",
		       "EDITOR=vi",  NULL};
	char *cmd[] = {"make", "-j2", NULL};
	struct jail_box *b;
	char *text = NULL;
	char *const *envp;
	size_t n = 0;

	snprintf(home, sizeof(home), "%s/home", tmp);
	mkdirs("home/bin");
	mkdirs("tools/bin");
	ck_assert_int_eq(symlink(tpath("tools"), tpath("home/.tools")), 0);
	snprintf(homevar, sizeof(homevar), "HOME=%s", home);
	/* Under $HOME (kept), through a symlink (bound at the entry), $HOME itself (skipped). */
	snprintf(pathvar, sizeof(pathvar), "PATH=%s/bin:%s/.tools/bin:%s:/usr/bin", home, home,
		 home);
	b = make_box(env, false);
	ck_assert_int_eq(jail_box_add_env(b, "FOO=bar"), 0);
	ck_assert_int_eq(jail_box_add_env(b, "EDITOR"), 0);
	ck_assert_int_eq(jail_box_add_env(b, "NOPE_UNSET"), -EINVAL);
	ck_assert_int_eq(jail_box_add_env(b, "1X=2"), -EINVAL);
	ck_assert_int_eq(jail_box_add_mount(b, "tmpfs:/tmp"), 0);
	ck_assert_int_eq(jail_box_add_init_hook(b, "relay", "8080=/run/arborinth/p.sock"), 0);
	ck_assert_int_eq(jail_box_add_init_hook(b, "--bad", "x"), -EINVAL);
	ck_assert_int_eq(jail_box_finish(b), -EINVAL); /* no command yet */
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_int_eq(jail_box_finish(b), 0);
	ck_assert_int_eq(jail_box_add_mount(b, "tmpfs:/x"), -EBUSY);

	ck_assert(argv_has(b, "--unshare-net", NULL));
	ck_assert(argv_has(b, "--unshare-user", NULL));
	ck_assert(argv_has(b, "--unshare-pid", NULL));
	ck_assert(argv_has(b, "--unshare-ipc", NULL));
	ck_assert(argv_has(b, "--unshare-uts", NULL));
	ck_assert(argv_has(b, "--unshare-cgroup", NULL));
	ck_assert(argv_has(b, "--cap-drop", "ALL"));
	ck_assert(argv_has(b, "--disable-userns", NULL));
	ck_assert(argv_has(b, "--die-with-parent", NULL));
	ck_assert(argv_has(b, "--as-pid-1", NULL));
	ck_assert(argv_has(b, "--seccomp", "3"));
	ck_assert(!argv_has(b, "--new-session", NULL));
	ck_assert(argv_has(b, "--chdir", tpath("repo/.git/arborinth/workspaces/w/workdir")));
	ck_assert(argv_has(b, "--relay", "8080=/run/arborinth/p.sock"));
	ck_assert(argv_has(b, "--ro-bind", tpath("home/bin")));
	ck_assert(argv_has(b, "--ro-bind", tpath("tools/bin")));
	ck_assert(argv_has(b, tpath("tools/bin"), tpath("home/.tools/bin")));
	ck_assert(!argv_has(b, "--ro-bind", home));
	for (envp = jail_box_envp(b); envp[n]; n++)
		ck_assert_msg(!strstr(envp[n], "ghp_") && !strstr(envp[n], "SSH_AUTH"), "%s",
			      envp[n]);
	ck_assert_str_eq(jail_env_get(envp, "HOME"), home);
	ck_assert_str_eq(jail_env_get(envp, "FOO"), "bar");
	ck_assert_str_eq(jail_env_get(envp, "EDITOR"), "vi");
	ck_assert_str_eq(jail_env_get(envp, "ARBORINTH_WORKSPACE"), "w");
	ck_assert_ptr_nonnull(jail_env_get(envp, "XDG_RUNTIME_DIR"));
	{
		char cache[300];

		snprintf(cache, sizeof(cache), "%s/.cache", home);
		ck_assert_str_eq(jail_env_get(envp, "XDG_CACHE_HOME"), cache);
	}
	for (size_t i = 1; i < n; i++)
		ck_assert(strcmp(envp[i - 1], envp[i]) < 0);
	/* The command closes the argv, after box-init. */
	{
		char *const *v = jail_box_argv(b);
		size_t k = 0;

		while (v[k])
			k++;
		ck_assert_str_eq(v[k - 1], "-j2");
		ck_assert_str_eq(v[k - 2], "make");
		ck_assert_str_eq(v[k - 3], "--");
	}
	ck_assert_int_eq(jail_box_explain(b, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "== inputs =="));
	ck_assert_ptr_nonnull(strstr(text, "== mounts by destination"));
	ck_assert_ptr_nonnull(strstr(text, "== environment"));
	ck_assert_ptr_nonnull(
	    strstr(text, "withheld from the host (2): GITHUB_TOKEN SSH_AUTH_SOCK"));
	ck_assert_ptr_nonnull(strstr(text, "== seccomp"));
	ck_assert_ptr_nonnull(strstr(text, "== bwrap argv"));
	ck_assert_ptr_nonnull(strstr(text, "[user] --mount 'tmpfs:/tmp', replacing the default"));
	ck_assert_ptr_nonnull(strstr(text, "PATH entry"));
	ck_assert_ptr_nonnull(strstr(text, "not mounted"));
	ck_assert_ptr_nonnull(strstr(text, "--perms 0700 --tmpfs /run/user/"));
	free(text);
	jail_box_free(b);
}
END_TEST

/* tmp/rel with text (its folder made first). */
static void put(const char *rel, const char *text)
{
	char *dir = strdup(tpath(rel));

	*strrchr(dir, '/') = '\0';
	ck_assert_int_eq(util_mkdir_p(dir, 0755), 0);
	free(dir);
	ck_assert_int_eq(util_write_file(tpath(rel), text, strlen(text), 0755), 0);
}

/* A mask (walls.c) at dest: an empty sealed tmpfs (folder) or /dev/null (file). */
static bool masked(const struct jail_box *b, const char *dest, bool dir)
{
	const struct jail_mount *x = jail_mounts_find(jail_box_mounts(b), dest);

	return x && x->origin == JAIL_FROM_GUARD &&
	       (dir ? x->type == JAIL_MOUNT_TMPFS && (x->flags & JAIL_MOUNT_SEAL)
		    : x->type == JAIL_MOUNT_RO && x->src && !strcmp(x->src, "/dev/null"));
}

/*
 * The allow-list root and the masks: the host's / is not bound, the system folders are; a
 * hidden key file and a $CLAUDE_CONFIG_DIR under bound folders (at their path and elsewhere)
 * and a bind that names a credential get masks; a file beside them does not.
 */
START_TEST(box_walls)
{
	char homevar[300], cfgvar[300], spec[3][600], *cmd[] = {"true", NULL};
	char *env[] = {homevar, "PATH=/usr/bin:/bin", cfgvar, NULL};
	const struct jail_mount *root;
	struct stat st;
	struct jail_box *b;
	char dest[300];

	mkdirs("home");
	mkdirs("sec/keys");
	mkdirs("sec/cfg/claude");
	ck_assert_int_eq(util_write_file(tpath("sec/keys/k"), "K", 1, 0600), 0);
	ck_assert_int_eq(util_write_file(tpath("sec/keys/k2"), "K", 1, 0600), 0);
	ck_assert_int_eq(util_write_file(tpath("sec/keys/public"), "P", 1, 0644), 0);
	snprintf(homevar, sizeof(homevar), "HOME=%s", tpath("home"));
	snprintf(cfgvar, sizeof(cfgvar), "CLAUDE_CONFIG_DIR=%s", tpath("sec/cfg/claude"));
	snprintf(spec[0], sizeof(spec[0]), "ro:%s", tpath("sec"));
	snprintf(spec[1], sizeof(spec[1]), "rw:%s:/mnt/k", tpath("sec/keys"));
	snprintf(spec[2], sizeof(spec[2]), "ro:%s:/k2", tpath("sec/keys/k2"));
	b = make_box(env, false);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(jail_box_add_mount(b, spec[i]) == 0, "%s", util_err_msg());
	ck_assert_int_eq(jail_box_hide(b, "rel/key", "why"), -EINVAL);
	ck_assert_int_eq(jail_box_hide(b, tpath("sec/keys/k"), "a key"), 0);
	ck_assert_int_eq(jail_box_hide(b, tpath("sec/keys/k2"), "a key"), 0);
	ck_assert_int_eq(jail_box_hide(b, tpath("no/such/file"), "gone"), 0);
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_msg(jail_box_finish(b) == 0, "%s", util_err_msg());

	root = jail_mounts_find(jail_box_mounts(b), "/");
	ck_assert(root && root->type == JAIL_MOUNT_TMPFS && (root->flags & JAIL_MOUNT_SEAL));
	ck_assert(!argv_has(b, "--ro-bind", "/") && !argv_has(b, "--tmpfs", "/"));
	ck_assert(argv_has(b, "--remount-ro", "/"));
	ck_assert(argv_has(b, "--ro-bind", "/usr") && argv_has(b, "/usr", "/usr"));
	ck_assert(!jail_mounts_find(jail_box_mounts(b), "/var"));
	/* At its own path under the ro bind, under the rw bind elsewhere, and where it is named. */
	ck_assert(masked(b, tpath("sec/keys/k"), false));
	ck_assert(masked(b, "/mnt/k/k", false));
	ck_assert(masked(b, "/k2", false));
	ck_assert(masked(b, "/mnt/k/k2", false));
	ck_assert(masked(b, tpath("sec/cfg/claude"), true));
	ck_assert(!jail_mounts_find(jail_box_mounts(b), tpath("sec/keys/public")));
	ck_assert(!jail_mounts_find(jail_box_mounts(b), "/mnt/k/public"));
	snprintf(dest, sizeof(dest), "%s", tpath("no/such/file"));
	ck_assert(!jail_mounts_find(jail_box_mounts(b), dest));
	/* Root's box: what only root may read is masked (where this host has /etc/shadow so). */
	if (geteuid() == 0 && stat("/etc/shadow", &st) == 0 && !(st.st_mode & S_IROTH))
		ck_assert(masked(b, "/etc/shadow", false));
	jail_box_free(b);
}
END_TEST

/* A bind of path at itself in the argv. */
static bool bound(const struct jail_box *b, const char *rel)
{
	return argv_has(b, "--ro-bind", tpath(rel)) && argv_has(b, tpath(rel), tpath(rel));
}

/* pyenv and rustup in a fake $HOME: their roots found from the PATH entries. */
START_TEST(box_tool_managers)
{
	char pathvar[1024], homevar[300], *cmd[] = {"true", NULL};
	char *env[] = {homevar, pathvar, NULL};
	struct jail_box *b;
	char *text = NULL;

	mkdirs("home/.pyenv/shims");
	mkdirs("home/.pyenv/versions/3.99/bin");
	mkdirs("home/.rustup/toolchains/x/bin");
	mkdirs("home/.cargo/bin");
	put("home/.pyenv/libexec/pyenv", "#!/bin/sh\n");
	put("home/.pyenv/version", "3.99\n");
	put("home/.pyenv/.netrc", "secret\n");
	put("home/.rustup/settings.toml", "default_toolchain = \"x\"\n");
	put("home/.cargo/bin/rustup", "#!/bin/sh\n");
	put("home/.cargo/credentials.toml", "token\n");
	snprintf(homevar, sizeof(homevar), "HOME=%s/home", tmp);
	snprintf(pathvar, sizeof(pathvar), "PATH=%s/home/.pyenv/shims:%s/home/.cargo/bin:/usr/bin",
		 tmp, tmp);
	b = make_box(env, false);
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_int_eq(jail_box_finish(b), 0);
	ck_assert(bound(b, "home/.pyenv/versions"));
	ck_assert(bound(b, "home/.pyenv/libexec"));
	ck_assert(bound(b, "home/.pyenv/version"));
	ck_assert(!bound(b, "home/.pyenv"));
	ck_assert(bound(b, "home/.rustup/settings.toml"));
	ck_assert(bound(b, "home/.rustup/toolchains"));
	ck_assert(!argv_has(b, "--ro-bind", tpath("home/.cargo/credentials.toml")));
	ck_assert_str_eq(jail_env_get(jail_box_envp(b), "PYENV_ROOT"), tpath("home/.pyenv"));
	ck_assert_str_eq(jail_env_get(jail_box_envp(b), "CARGO_HOME"), tpath("home/.cargo"));
	ck_assert_str_eq(jail_env_get(jail_box_envp(b), "RUSTUP_HOME"), tpath("home/.rustup"));
	ck_assert_int_eq(jail_box_explain(b, &text), 0);
	ck_assert_ptr_nonnull(
	    strstr(text, "[default, replaceable] path entry ~/.pyenv/shims (pyenv)"));
	ck_assert_ptr_nonnull(strstr(text, "set for path entry ~/.cargo/bin (rustup)"));
	free(text);
	jail_box_free(b);

	/* A bind file's tmpfs above them drops them; the switch turns them all off. */
	b = make_box(env, false);
	ck_assert_int_eq(jail_box_add_extra_mount(b, JAIL_MOUNT_TMPFS, tpath("home/.pyenv"), "t"),
			 0);
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_int_eq(jail_box_finish(b), 0);
	ck_assert(!bound(b, "home/.pyenv/versions"));
	ck_assert(bound(b, "home/.rustup/toolchains"));
	jail_box_free(b);
	no_tool_managers = true;
	b = make_box(env, false);
	no_tool_managers = false;
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_int_eq(jail_box_finish(b), 0);
	ck_assert(!bound(b, "home/.pyenv/versions"));
	ck_assert(!bound(b, "home/.rustup/toolchains"));
	ck_assert(bound(b, "home/.pyenv/shims")); /* the entry itself still */
	ck_assert_ptr_null(jail_env_get(jail_box_envp(b), "PYENV_ROOT"));
	jail_box_free(b);
}
END_TEST

/* An overlay's folders in the workspace; a link planted in its upper layer; the timeout. */
START_TEST(box_overlay_and_timeout)
{
	char homevar[300], spec[512], *cmd[] = {"true", NULL}, *text = NULL;
	char *env[] = {homevar, "PATH=/usr/bin", NULL};
	const struct jail_mount *m;
	struct jail_box *b;

	snprintf(homevar, sizeof(homevar), "HOME=%s/home", tmp);
	mkdirs("home");
	mkdirs("data");
	snprintf(spec, sizeof(spec), "overlay:%s:/mnt", tpath("data"));
	b = make_box(env, false);
	ck_assert_int_eq(jail_box_add_mount(b, spec), 0);
	ck_assert_int_eq(jail_box_set_timeout(b, -1), -EINVAL);
	ck_assert_int_eq(jail_box_set_timeout(b, 1500), 0);
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_int_eq(jail_box_finish(b), 0);
	m = jail_mounts_find(jail_box_mounts(b), "/mnt");
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->type, JAIL_MOUNT_OVERLAY);
	ck_assert_str_eq(m->lower, tpath("data"));
	ck_assert(util_str_has_prefix(m->upper,
				      tpath("repo/.git/arborinth/workspaces/w/overlay/%2Fmnt.")));
	ck_assert_ptr_nonnull(strstr(m->upper, "/upper"));
	ck_assert(argv_has(b, "--bind", m->src));
	ck_assert_int_eq(jail_box_explain(b, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "timeout    1500 ms"));
	ck_assert_ptr_nonnull(strstr(text, "overlay "));
	free(text);
	jail_box_free(b);

	/* A mount inside the overlay whose path in the upper layer is a planted link. */
	b = make_box(env, false);
	ck_assert_int_eq(jail_box_add_mount(b, spec), 0);
	ck_assert_int_eq(jail_box_add_mount(b, "tmpfs:/mnt/x/y"), 0);
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_int_eq(jail_box_overlays_prepare(b), 0);
	m = jail_mounts_find(jail_box_mounts(b), "/mnt");
	ck_assert_int_eq(util_mkdir_p(m->upper, 0700), 0);
	{
		char *link = util_path_join(m->upper, "x");

		ck_assert_int_eq(symlink("/etc", link), 0);
		free(link);
	}
	ck_assert_int_eq(jail_box_finish(b), -ELOOP);
	jail_box_free(b);
}
END_TEST

START_TEST(box_net_and_guards)
{
	char homevar[300];
	char *env[] = {homevar, "PATH=/usr/bin", NULL};
	char *cmd[] = {"true", NULL};
	struct jail_box *b;
	char spec[512];
	char *text = NULL;

	snprintf(homevar, sizeof(homevar), "HOME=%s/home", tmp);
	mkdirs("home");
	b = make_box(env, true);
	snprintf(spec, sizeof(spec), "tmpfs:%s/home/.config", tmp);
	ck_assert_int_eq(jail_box_add_mount(b, spec), -EINVAL); /* $HOME guard */
	snprintf(spec, sizeof(spec), "tmpfs:%s", tpath("repo/src"));
	ck_assert_int_eq(jail_box_add_mount(b, spec), -EINVAL); /* origin guard */
	ck_assert_int_eq(jail_box_add_mount(b, "tmpfs:/run/x"), -EINVAL);
	ck_assert_int_eq(jail_box_set_command(b, cmd), 0);
	ck_assert_int_eq(jail_box_finish(b), 0);
	ck_assert(!argv_has(b, "--unshare-net", NULL));
	ck_assert_int_eq(jail_box_explain(b, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "host abstract unix sockets"));
	free(text);
	jail_box_free(b);
}
END_TEST

/* ---- box-init ------------------------------------------------------------------------- */

static int hook_log_fd = -1;

static int test_start(const char *arg, void **state)
{
	if (!strcmp(arg, "fail"))
		return util_err(-EIO, "hook failed on purpose");
	(void)!write(hook_log_fd, "start:", 6);
	(void)!write(hook_log_fd, arg, strlen(arg));
	(void)!write(hook_log_fd, ";", 1);
	*state = strdup(arg);
	return 0;
}

static void test_stop(void *state)
{
	(void)!write(hook_log_fd, "stop:", 5);
	(void)!write(hook_log_fd, state, strlen(state));
	(void)!write(hook_log_fd, ";", 1);
	free(state);
}

static const struct jail_init_hook test_hooks[] = {{"test", test_start, test_stop}, {0}};

static char *read_all(int fd)
{
	static char buf[512];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

START_TEST(init_runs_hooks_and_command)
{
	const char *names[] = {"test", "test", NULL}, *args[] = {"a", "b", NULL};
	char *cmd[] = {"sh", "-c", "echo ran >&9; exit 7", NULL};
	struct jail_init_opts o = {
	    .go_fd = -1, .hooks = test_hooks, .hook_names = names, .hook_args = args, .argv = cmd};
	int logp[2], ready[2], status = -1;

	ck_assert_int_eq(pipe(logp), 0);
	ck_assert_int_eq(pipe(ready), 0);
	hook_log_fd = logp[1];
	o.ready_fd = ready[1];
	/* fd 9 is closed on exec in the command: its echo must fail. */
	ck_assert_int_eq(dup2(logp[1], 9), 9);
	ck_assert_int_eq(jail_init_run(&o, &status), 0);
	ck_assert_int_eq(status, 7);
	ck_assert_str_eq(read_all(logp[0]), "start:a;start:b;stop:b;stop:a;");
	/* '1' when the command started, then 'd' and its status once it is over. */
	ck_assert_mem_eq(read_all(ready[0]), "1d\x07", 4);
}
END_TEST

START_TEST(init_statuses)
{
	char *killed[] = {"sh", "-c", "kill -USR1 $$", NULL};
	char *missing[] = {"arb-no-such-program", NULL};
	struct jail_init_opts o = {
	    .ready_fd = -1, .go_fd = -1, .hooks = test_hooks, .argv = killed};
	int status = -1;

	ck_assert_int_eq(jail_init_run(&o, &status), 0);
	ck_assert_int_eq(status, 128 + SIGUSR1);
	o.argv = missing;
	ck_assert_int_eq(jail_init_run(&o, &status), 0);
	ck_assert_int_eq(status, 127);
}
END_TEST

START_TEST(init_argv_roundtrip)
{
	/* The host's half builds what box-init's half parses; bad command lines are refused. */
	struct jail_strv a = {0}, hooks = {0}, cmd = {0};
	struct jail_init_opts o;

	jail_strv_push(&hooks, "--test");
	jail_strv_push(&hooks, "ARG 1");
	jail_strv_push(&cmd, "sh");
	jail_strv_push(&cmd, "--");
	jail_init_argv(&a, "/prog", 5, 6, &hooks, &cmd);
	ck_assert_int_eq(jail_strv_ok(&a), 0);
	ck_assert_str_eq(a.v[1], "__box-init");
	ck_assert_int_eq(jail_init_opts_parse(&o, (int)a.n - 1, a.v + 1, test_hooks), 0);
	ck_assert_int_eq(o.ready_fd, 5);
	ck_assert_int_eq(o.go_fd, 6);
	ck_assert_str_eq(o.hook_names[0], "test");
	ck_assert_str_eq(o.hook_args[0], "ARG 1");
	ck_assert_ptr_null(o.hook_names[1]);
	ck_assert_str_eq(o.argv[0], "sh");
	ck_assert_str_eq(o.argv[1], "--"); /* the command's own -- is its own */
	jail_init_opts_clear(&o);
	{
		static const struct {
			const char *argv[6];
			const char *msg;
		} bad[] = {
		    {{"__box-init", "--ready-fd", "x", "--", "sh"}, "bad --ready-fd 'x'"},
		    {{"__box-init", "--go-fd", "-1", "--", "sh"}, "bad --go-fd '-1'"},
		    {{"__box-init", "--nope", "a", "--", "sh"}, "unknown hook 'nope'"},
		    {{"__box-init", "ready", "1", "--", "sh"}, "bad argument 'ready'"},
		    {{"__box-init", "--ready-fd", "3", "--"}, "no command after --"},
		    {{"__box-init", "--test"}, "bad argument '--test'"},
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			int n = 0;

			while (n < 6 && bad[i].argv[n])
				n++;
			ck_assert_int_eq(
			    jail_init_opts_parse(&o, n, (char **)bad[i].argv, test_hooks), -EINVAL);
			ck_assert_msg(strstr(util_err_msg(), bad[i].msg), "%zu: %s", i,
				      util_err_msg());
			ck_assert_ptr_null(o.hook_names);
		}
	}
	jail_strv_clear(&a);
	jail_strv_clear(&hooks);
	jail_strv_clear(&cmd);
}
END_TEST

START_TEST(init_hook_failures)
{
	const char *unknown[] = {"nope", NULL}, *failing[] = {"test", "test", NULL};
	const char *args[] = {"a", "fail", NULL};
	char *cmd[] = {"sh", "-c", "echo ran >&2; exit 0", NULL};
	struct jail_init_opts o = {.ready_fd = -1,
				   .go_fd = -1,
				   .hooks = test_hooks,
				   .hook_names = unknown,
				   .hook_args = args,
				   .argv = cmd};
	int logp[2], status = -1;

	ck_assert_int_eq(pipe(logp), 0);
	hook_log_fd = logp[1];
	ck_assert_int_eq(jail_init_run(&o, &status), -EINVAL);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "unknown hook 'nope'"));
	o.hook_names = failing;
	ck_assert_int_eq(jail_init_run(&o, &status), -EIO);
	ck_assert_int_eq(status, -1);
	/* The hook that started is stopped again. */
	ck_assert_str_eq(read_all(logp[0]), "start:a;stop:a;");
}
END_TEST

START_TEST(init_waits_for_go)
{
	/* The command starts only after the host's byte; without it, never (hooks stopped). */
	const char *names[] = {"test", NULL}, *args[] = {"a", NULL};
	char *cmd[] = {"sh", "-c", "echo ran >&9; exit 3", NULL};
	struct jail_init_opts o = {.ready_fd = -1,
				   .hooks = test_hooks,
				   .hook_names = names,
				   .hook_args = args,
				   .argv = cmd};
	int logp[2], go[2], status = -1;

	ck_assert_int_eq(pipe(logp), 0);
	hook_log_fd = logp[1];
	ck_assert_int_eq(dup2(logp[1], 9), 9);
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(write(go[1], "1", 1), 1);
	close(go[1]);
	o.go_fd = go[0];
	ck_assert_int_eq(jail_init_run(&o, &status), 0);
	ck_assert_int_eq(status, 3);
	ck_assert_int_eq(fcntl(go[0], F_GETFD), -1); /* closed once read */
	ck_assert_int_eq(pipe(go), 0);
	close(go[1]);
	o.go_fd = go[0];
	status = -1;
	ck_assert_int_eq(jail_init_run(&o, &status), -ECANCELED);
	ck_assert_ptr_nonnull(strstr(util_err_msg(), "did not start the command"));
	ck_assert_int_eq(status, -1);
	close(9);
	close(logp[1]);
	/* fd 9 is closed on exec, so "ran" never shows; the hooks ran and stopped twice. */
	ck_assert_str_eq(read_all(logp[0]), "start:a;stop:a;start:a;stop:a;");
}
END_TEST

/* The budget: --pids/--inotify as given (--pids also as box-init's hook), else the defaults. */
START_TEST(box_budget)
{
	struct jail_box *b = make_box(NULL, false);
	struct jail_limits l = {.pids = 10, .inotify = 5};
	struct jail_budget bud;
	struct rlimit rl;
	bool hook = false;

	ck_assert_msg(jail_box_set_limits(b, &l) == 0, "%s", util_err_msg());
	ck_assert_int_eq(jail_budget_resolve(b, &bud), 0);
	ck_assert_int_eq(bud.box_nproc, 10);
	ck_assert_int_eq(bud.inotify, 5);
	ck_assert(bud.inotify_given);
	ck_assert_str_eq(bud.inotify_text, "5");
	for (size_t i = 0; i + 1 < b->hooks.n; i += 2)
		hook |= !strcmp(b->hooks.v[i], "--" JAIL_NPROC_HOOK) &&
			!strcmp(b->hooks.v[i + 1], "10");
	ck_assert_msg(hook, "--pids 10 asks box-init for RLIMIT_NPROC 10");
	jail_box_free(b);

	/* No --pids, no --inotify: a quarter of the user's limits left to the user. */
	b = make_box(NULL, false);
	l = (struct jail_limits){0};
	ck_assert_msg(jail_box_set_limits(b, &l) == 0, "%s", util_err_msg());
	ck_assert_int_eq(jail_budget_resolve(b, &bud), 0);
	ck_assert_int_eq(bud.box_nproc, 0);
	ck_assert(!bud.inotify_given);
	ck_assert_int_eq(bud.inotify, bud.user_inotify - bud.user_inotify / 4);
	ck_assert_int_eq(getrlimit(RLIMIT_NPROC, &rl), 0);
	if (rl.rlim_cur == RLIM_INFINITY)
		ck_assert_int_eq(bud.nproc, 1024);
	else
		ck_assert_int_eq(bud.nproc, bud.user_nproc - bud.user_nproc / 4);
	jail_box_free(b);

	/* box-init's hook: a number, and the limit it sets (lowering needs no privilege). */
	ck_assert_int_eq(jail_budget_nproc_hook("7x", &(void *){NULL}), -EINVAL);
	ck_assert_int_eq(jail_budget_nproc_hook("0", &(void *){NULL}), -EINVAL);
	ck_assert_int_eq(jail_budget_nproc_hook("77", &(void *){NULL}), 0);
	ck_assert_int_eq(getrlimit(RLIMIT_NPROC, &rl), 0);
	ck_assert_int_eq(rl.rlim_cur, 77);
	ck_assert_int_eq(rl.rlim_max, 77);
}
END_TEST

static Suite *jail_suite(void)
{
	Suite *s = suite_create("jail");
	TCase *tc = tcase_create("paths");

	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, path_norm);
	tcase_add_test(tc, path_under_and_order);
	tcase_add_test(tc, path_real);
	suite_add_tcase(s, tc);
	tc = tcase_create("specs");
	tcase_add_test(tc, spec_valid);
	tcase_add_test(tc, spec_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("tree");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, tree_guards_and_replacement);
	tcase_add_test(tc, tree_order_and_args);
	tcase_add_test(tc, tree_planted_links);
	tcase_add_test(tc, tree_args_skip_shown);
	tcase_add_test(tc, tree_args_nested_seal);
	suite_add_tcase(s, tc);
	tc = tcase_create("env");
	tcase_add_test(tc, env_rules);
	suite_add_tcase(s, tc);
	tc = tcase_create("seccomp");
	tcase_add_test(tc, seccomp_export);
	tcase_add_test(tc, seccomp_compiled_in);
	suite_add_tcase(s, tc);
	tc = tcase_create("box");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, box_profile);
	tcase_add_test(tc, box_net_and_guards);
	tcase_add_test(tc, box_tool_managers);
	tcase_add_test(tc, box_overlay_and_timeout);
	tcase_add_test(tc, box_walls);
	tcase_add_test(tc, box_budget);
	suite_add_tcase(s, tc);
	tc = tcase_create("init");
	tcase_add_test(tc, init_runs_hooks_and_command);
	tcase_add_test(tc, init_statuses);
	tcase_add_test(tc, init_hook_failures);
	tcase_add_test(tc, init_waits_for_go);
	tcase_add_test(tc, init_argv_roundtrip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(jail_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
