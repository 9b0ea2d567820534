/*
 * core/ref_parse.c: the two ref file formats git writes, parsed as hostile input: a loose ref
 * (40 hex digits and a newline) and the lines of packed-refs ("<40 hex> <refname>", with
 * "# pack-refs" headers and "^<40 hex>" peeled lines). Both are written by the box (the
 * workspace's gitdir is its `.git`), so nothing here trusts a length, a terminator or a
 * character. No allocation, no libgit2: tests/fuzz/fuzz_refs.c runs these on any bytes.
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
