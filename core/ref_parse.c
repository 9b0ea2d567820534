/*
 * core/ref_parse.c: what a workspace's gitdir holds that names objects, parsed as hostile
 * input: a loose ref (40 hex digits and a newline), the lines of packed-refs ("<40 hex>
 * <refname>", with "# pack-refs" headers and "^<40 hex>" peeled lines), and the links of a
 * commit (tree, parents) or a tree (entries). All are written by the box (the workspace's
 * gitdir is its `.git`; an object's hash proves only that its bytes are the ones named), so
 * nothing here trusts a length, a terminator or a character. No allocation, no libgit2 call:
 * tests/fuzz/fuzz_refs.c runs these on any bytes.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <string.h>

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* git writes lower case only */
}

/* 40 lower-case hex digits at s (at least 40 bytes) into id. */
static int hex40(const unsigned char *s, unsigned char id[20])
{
	for (size_t i = 0; i < 20; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		id[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

int core_ref_parse_loose(const void *buf, size_t len, unsigned char id[20])
{
	const unsigned char *s = buf;

	if (len >= 5 && memcmp(s, "ref: ", 5) == 0)
		return -ELOOP; /* a symbolic ref: names another ref, which is not followed */
	if (len != 40 && !(len == 41 && s[40] == '\n'))
		return -EINVAL;
	return hex40(s, id);
}

int core_ref_parse_packed(const void *buf, size_t len, const char *refname, unsigned char id[20])
{
	const unsigned char *s = buf, *end = s + len;
	size_t rl = strlen(refname);
	int found = -ENOENT;

	while (s < end) {
		const unsigned char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = (size_t)((nl ? nl : end) - s);

		if (n == 0 || s[0] == '#' || s[0] == '^') {
			/* header, peeled line: nothing of the ref's own target */
		} else if (n < 42 || s[40] != ' ' || memchr(s, '\0', n)) {
			return -EINVAL; /* git would refuse the file too */
		} else if (n - 41 == rl && memcmp(s + 41, refname, rl) == 0) {
			if (found == 0)
				return -EINVAL; /* one ref twice: which one git takes is not ours to
						   guess */
			if (hex40(s, id) < 0)
				return -EINVAL;
			found = 0;
		}
		s += n + (nl ? 1 : 0);
	}
	return found;
}

/* "<40 hex>\n" at s (end: past the object): given to fn as want. */
static int child_hex(const char *s, const char *end, git_object_t want, core_child_fn *fn,
		     void *arg)
{
	unsigned char id[20];

	if (end - s < 41 || s[40] != '\n' || hex40((const unsigned char *)s, id) < 0)
		return -EINVAL;
	return fn(arg, id, want);
}

/* A commit's header, up to the first empty line: "tree" first, then any "parent" lines. */
static int commit_children(const char *s, size_t len, core_child_fn *fn, void *arg)
{
	const char *end = s + len;
	bool tree = false;
	int rc = 0;

	while (rc == 0 && s < end && *s != '\n') {
		const char *nl = memchr(s, '\n', (size_t)(end - s));

		if (!nl)
			return -EINVAL;
		if (!tree) {
			rc = end - s < 5 || memcmp(s, "tree ", 5)
				 ? -EINVAL
				 : child_hex(s + 5, end, GIT_OBJECT_TREE, fn, arg);
			tree = true;
		} else if (end - s >= 7 && !memcmp(s, "parent ", 7)) {
			rc = child_hex(s + 7, end, GIT_OBJECT_COMMIT, fn, arg);
		}
		s = nl + 1;
	}
	return tree ? rc : -EINVAL;
}

/* A tree's entries ("<octal mode> <name>\0<20 bytes>"), gitlinks (160000) left out. */
static int tree_children(const unsigned char *s, size_t len, core_child_fn *fn, void *arg)
{
	const unsigned char *end = s + len;
	int rc = 0;

	while (rc == 0 && s < end) {
		const unsigned char *sp = memchr(s, ' ', (size_t)(end - s)), *nul;
		unsigned mode = 0;

		if (!sp || sp == s || !(nul = memchr(sp, '\0', (size_t)(end - sp))) ||
		    nul == sp + 1 || (size_t)(end - nul - 1) < 20)
			return -EINVAL;
		for (const unsigned char *c = s; c < sp; c++) {
			if (*c < '0' || *c > '7' || mode > 0777777)
				return -EINVAL;
			mode = mode * 8 + (unsigned)(*c - '0');
		}
		if (mode == 040000)
			rc = fn(arg, nul + 1, GIT_OBJECT_TREE);
		else if (mode != 0160000)
			rc = fn(arg, nul + 1, GIT_OBJECT_BLOB);
		s = nul + 1 + 20;
	}
	return rc;
}

int core_object_children(git_object_t type, const void *data, size_t len, core_child_fn *fn,
			 void *arg)
{
	if (type == GIT_OBJECT_COMMIT)
		return commit_children(data, len, fn, arg);
	if (type == GIT_OBJECT_TREE)
		return tree_children(data, len, fn, arg);
	return 0; /* a blob names nothing; a tag is refused before it gets here */
}
