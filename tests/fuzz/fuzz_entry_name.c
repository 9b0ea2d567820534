/*
 * tests/fuzz/fuzz_entry_name.c: the tree entry name check's fuzz target (core/entry_name.c),
 * which stands between names a box may have written into a tree and every filesystem call
 * of rewind and restore. Each input is one name (NUL bytes included); an accepted name must
 * hold none of what climbs out of a folder or reaches a .git, and the check must agree with
 * its message form. Built as a libFuzzer binary when the compiler supports -fsanitize=fuzzer,
 * and always as fuzz_entry_name_replay over the seed corpus (a CTest).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ".git" once every byte that is not ASCII is left out (a superset of HFS+'s ignorables). */
static int ascii_dotgit(const char *s, size_t n)
{
	char k[8];
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] >= 0x80)
			continue;
		if (m == 4)
			return 0;
		k[m++] = s[i];
	}
	return m == 4 && !strncasecmp(k, ".git", 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	char *z;
	bool ok = core_entry_name_ok(s, size);

	if (ok && (size == 0 || memchr(s, '/', size) || memchr(s, '\0', size) ||
		   (size == 1 && s[0] == '.') || (size == 2 && !memcmp(s, "..", 2)) ||
		   (size >= 4 && !strncasecmp(s, ".git", 4) && strspn(s + 4, ". ") == size - 4) ||
		   (size == 5 && !strncasecmp(s, "git~1", 5))))
		abort();
	/* A name made only of ASCII and HFS+ ignorables that spells .git must be refused. */
	if (ok && ascii_dotgit(s, size)) {
		bool only_ignorables = true;

		for (size_t i = 0; i < size; i++)
			if ((unsigned char)s[i] >= 0x80) {
				only_ignorables = i + 2 < size && (unsigned char)s[i] == 0xef &&
						  (unsigned char)s[i + 1] == 0xbb &&
						  (unsigned char)s[i + 2] == 0xbf;
				if (!only_ignorables)
					break;
				i += 2;
			}
		if (only_ignorables)
			abort();
	}
	/* The string form agrees with the counted one. */
	if (!memchr(s, '\0', size) && (z = strndup(s, size))) {
		if ((core_entry_name_check(z, "fuzz") == 0) != ok)
			abort();
		free(z);
	}
	return 0;
}
