/*
 * cli/argv.c: a session's argv as the audit keeps it (a JSON array of strings, written by
 * audit/session.c with every byte of each argument, so not always UTF-8) back into words:
 * printed as one shell line for people, or as JSON that keeps every byte.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *cli_argv_json(const char *argv_json)
{
	char **v = util_argv_words(argv_json);
	json_t *arr = v ? json_array() : NULL;

	for (size_t i = 0; arr && v[i]; i++)
		json_array_append_new(arr, util_json_bytes(v[i]));
	util_words_free(v);
	return arr;
}

void cli_argv_print(const char *argv_json, const char *before)
{
	char **v = util_argv_words(argv_json);

	if (!v && argv_json) /* not our format: the text itself, escaped */
		printf("%s%s", before, cli_q(argv_json));
	for (size_t i = 0; v && v[i]; i++) {
		char *q = util_quote_shell(v[i]);

		printf("%s%s", i ? " " : before, q ? q : "?");
		free(q);
	}
	util_words_free(v);
}
