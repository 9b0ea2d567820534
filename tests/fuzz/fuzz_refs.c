/*
 * tests/fuzz/fuzz_refs.c: the fuzz target of core/ref_parse.c, which reads what a box wrote
 * in its gitdir. Each input is parsed as a loose ref, then as packed-refs looked up for two
 * names (the workspace branch a merge reads, and the name its first line gives, so lines that
 * match are reached too), then as a commit and as a tree whose links are listed. Every id
 * given back is read whole (ASan sees any overrun). Built as a libFuzzer binary when the compiler
 * supports -fsanitize=fuzzer, and always as fuzz_refs_replay, which runs the entry point over the
 * seed corpus in CTest.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink;

static void use(const unsigned char id[20])
{
	for (size_t i = 0; i < 20; i++)
		sink += id[i];
}

static int child(void *arg, const unsigned char id[20], git_object_t want)
{
	(void)arg;
	use(id);
	sink += (unsigned)want;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char id[20];
	char name[256];
	const uint8_t *nl = memchr(data, '\n', size);
	size_t n = nl ? (size_t)(nl - data) : size;

	if (core_ref_parse_loose(data, size, id) == 0)
		use(id);
	if (core_ref_parse_packed(data, size, "refs/heads/arborinth/w", id) == 0)
		use(id);
	/* "<40 hex> <name>" on the first line: look that name up. */
	if (n > 41 && n - 41 < sizeof(name)) {
		memcpy(name, data + 41, n - 41);
		name[n - 41] = '\0';
		if (core_ref_parse_packed(data, size, name, id) == 0)
			use(id);
	}
	if (core_object_children(GIT_OBJECT_COMMIT, data, size, child, NULL) < 0)
		sink++;
	if (core_object_children(GIT_OBJECT_TREE, data, size, child, NULL) < 0)
		sink++;
	return 0;
}
