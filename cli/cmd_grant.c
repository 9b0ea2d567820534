/* cli/cmd_grant.c: `arborinth grant list`: the built-in grants and what each adds to a box. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "include/arborinth.h"

static const struct cli_cmd grant_cmd = {"grant", NULL, cmd_grant, NULL, cmd_grant_usage};

int cmd_grant(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
	const struct arb_grant *gr;
	bool json = false;
	int c, status = CLI_USAGE;
	size_t n;

	if (argc < 2)
		return cli_usage_error("grant", "'grant' needs a sub-command (list)");
	if (strcmp(argv[1], "list") && argv[1][0] != '-')
		return cli_usage_error("grant", "unknown sub-command 'grant %s' (available: list)",
				       argv[1]);
	optind = 0;
	while ((c = cli_getopt(g, &grant_cmd, argc, argv, "", opts, &status)) != -1) {
		if (c == -2)
			return status;
		json = true;
	}
	/* getopt moved the options first: the sub-command is at optind. */
	if (optind >= argc || strcmp(argv[optind], "list"))
		return cli_usage_error("grant", "'grant' needs a sub-command (list)");
	if (optind + 1 < argc)
		return cli_usage_error("grant", "unexpected argument '%s'", argv[optind + 1]);
	gr = arb_grants(&n);
	if (json) {
		json_t *arr = json_array();

		for (size_t i = 0; arr && i < n; i++) {
			json_t *items = json_array();

			for (const char *const *it = gr[i].items; items && *it; it++)
				json_array_append_new(items, json_string(*it));
			json_array_append_new(arr,
					      json_pack("{s:s, s:s, s:o}", "name", gr[i].name,
							"summary", gr[i].summary, "items", items));
		}
		return arr ? cli_json_print(arr) : cli_fail(CLI_ERR, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		printf("%s%s\n  %s\n", i ? "\n" : "", gr[i].name, gr[i].summary);
		for (const char *const *it = gr[i].items; *it; it++)
			printf("    %s\n", *it);
	}
	return CLI_OK;
}
