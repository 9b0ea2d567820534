/*
 * tests/fuzz/fuzz_binds.c: the bind-file parser's fuzz target. Each input is a bind file
 * loaded into a fresh set (includes resolve against a directory that does not exist, so they
 * fail cleanly); a loaded set is walked so its strings are read. Built as a libFuzzer binary
 * when the compiler supports -fsanitize=fuzzer, and always as fuzz_binds_replay, which runs
 * the same entry point over files (the seed corpus in CTest).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "binds/binds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct binds_set *s = NULL;
	size_t n, total = 0;

	if (binds_set_new(&s) < 0)
		return 0;
	if (binds_text_load(s, "/nonexistent-fuzz/f.toml", (const char *)data, size,
			    "/home/fuzz") == 0) {
		const struct binds_mount *m = binds_set_mounts(s, &n);

		for (size_t i = 0; i < n; i++)
			total += strlen(m[i].path) + strlen(m[i].origin);
		const struct binds_dir *d = binds_set_path(s, &n);

		for (size_t i = 0; i < n; i++)
			total += strlen(d[i].dir);
		const struct binds_var *v = binds_set_env(s, &n);

		for (size_t i = 0; i < n; i++)
			total += strlen(v[i].name) + strlen(v[i].value);
	}
	binds_set_free(s);
	return total == (size_t)-1;
}
