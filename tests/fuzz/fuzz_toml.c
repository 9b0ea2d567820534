/*
 * tests/fuzz/fuzz_toml.c: the TOML reader's fuzz target (util/toml.c, which reads Codex's
 * config.toml for the launchers). Each input is parsed; a document that parses is dumped
 * as JSON, so every string, number and nesting it built is walked. Built as a libFuzzer
 * binary when the compiler supports -fsanitize=fuzzer, and always as fuzz_toml_replay over
 * the seed corpus (a CTest).
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL;
	char *text;
	int bad = 0;

	if (util_toml_parse("fuzz.toml", (const char *)data, size, &doc) == 0) {
		text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
		bad = text == NULL;
		free(text);
		json_decref(doc);
	}
	return bad;
}
