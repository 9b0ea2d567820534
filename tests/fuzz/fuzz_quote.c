/*
 * tests/fuzz/fuzz_quote.c: the quoting of box-chosen text (util/quote.c). For any bytes:
 * util_quoten's output holds no control byte (C0, DEL), no C1 control, bidirectional override
 * or line separator, is valid UTF-8, and util_unquote gives the bytes back exactly; the shell
 * word and message forms hold no control byte and are valid UTF-8; util_json_bytes keeps
 * every byte (a string equal to the input, or hex of it). A broken property aborts, which
 * libFuzzer and the replay in CTest report. Built as fuzz_quote (libFuzzer) when the compiler
 * supports it, and always as fuzz_quote_replay over tests/fuzz/corpus/quote.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const uint8_t *data, size_t size)
{
	fprintf(stderr, "fuzz_quote: %s for input of %zu bytes:", what, size);
	for (size_t i = 0; i < size && i < 64; i++)
		fprintf(stderr, " %02x", data[i]);
	fputc('\n', stderr);
	abort();
}

/* Shown safely: valid UTF-8 and no code point a terminal acts on or that reorders text. */
static bool safe(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);

	if (!util_utf8_valid(s, n))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (u[i] < 0x20 || u[i] == 0x7f)
			return false;
		if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
			return false; /* C1 */
		if (u[i] == 0xe2 && i + 2 < n && u[i + 1] == 0x80 &&
		    ((u[i + 2] >= 0xa8 && u[i + 2] <= 0xae) || u[i + 2] == 0x8e ||
		     u[i + 2] == 0x8f))
			return false; /* U+200E/F, U+2028..U+202E */
		if (u[i] == 0xe2 && i + 2 < n && u[i + 1] == 0x81 && u[i + 2] >= 0xa6 &&
		    u[i + 2] <= 0xa9)
			return false; /* U+2066..U+2069 */
	}
	return true;
}

static void check_json(const char *s, const uint8_t *data, size_t size)
{
	json_t *j = util_json_bytes(s);
	const char *hex = json_string_value(json_object_get(j, "hex"));
	size_t n = strlen(s);

	if (!j)
		return; /* ENOMEM */
	if (json_is_string(j) && strcmp(json_string_value(j), s) != 0)
		fail("JSON string differs", data, size);
	if (!json_is_string(j)) {
		if (!hex || strlen(hex) != 2 * n)
			fail("JSON hex missing or of the wrong length", data, size);
		for (size_t i = 0; i < n; i++) {
			unsigned int v = 0;

			if (sscanf(hex + 2 * i, "%2x", &v) != 1 || v != (unsigned char)s[i])
				fail("JSON hex differs", data, size);
		}
	}
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *q = util_quoten((const char *)data, size), *back = NULL, *cstr = NULL;
	char *sh = NULL, *text = NULL;
	size_t n = 0;

	if (!q)
		return 0;
	if (!safe(q))
		fail("quoted output not safe", data, size);
	if (util_unquote(q, &back, &n) < 0 || n != size || memcmp(back, data, size) != 0)
		fail("unquote(quote(x)) != x", data, size);
	cstr = strndup((const char *)data, size); /* up to the first NUL */
	if (cstr) {
		sh = util_quote_shell(cstr);
		text = util_quote_text(cstr);
		if ((sh && !safe(sh)) || (text && !safe(text)))
			fail("shell or message form not safe", data, size);
		check_json(cstr, data, size);
	}
	free(q);
	free(back);
	free(cstr);
	free(sh);
	free(text);
	return 0;
}
