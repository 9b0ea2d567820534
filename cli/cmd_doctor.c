/* cli/cmd_doctor.c: `arborinth doctor`, what this machine gives arborinth (arb_doctor). */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "include/arborinth.h"

static const char *const status_word[] = {"ok", "degraded", "missing"};

static json_t *checks_json(const struct arb_check *v, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(
			arr, json_pack("{s:s,s:s,s:b,s:s,s:s?}", "name", v[i].name, "status",
				       status_word[v[i].status], "required", v[i].required,
				       "detail", v[i].detail, "fix", v[i].fix)) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

static void checks_print(const struct arb_check *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *word = v[i].status == ARB_CHECK_OK	       ? "ok"
				   : v[i].status == ARB_CHECK_DEGRADED ? "degraded"
				   : v[i].required		       ? "MISSING"
								       : "missing";

		printf("%-9s %-20s %s\n", word, v[i].name, v[i].detail);
		if (v[i].fix)
			printf("%-9s %-20s fix: %s\n", "", "", v[i].fix);
	}
}

int cmd_doctor(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
	const struct cli_cmd *self = cli_cmd_find(cli_commands, "doctor");
	struct arb_check *v = NULL;
	bool json = false, broken = false;
	int status = CLI_ERR, c;
	size_t n = 0;

	optind = 0;
	while ((c = cli_getopt(g, self, argc, argv, "", opts, &status)) != -1) {
		if (c == -2)
			return status;
		json = true;
	}
	if (optind < argc)
		return cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);
	if (arb_doctor(&v, &n, g->workdir) < 0)
		return cli_fail(CLI_ERR, "doctor: %s", arb_error_last());
	for (size_t i = 0; i < n; i++)
		broken |= v[i].required && v[i].status == ARB_CHECK_MISSING;
	if (json)
		status = cli_json_print(checks_json(v, n));
	else {
		checks_print(v, n);
		status = CLI_OK;
	}
	arb_checks_free(v, n);
	if (status == CLI_OK && broken && !json)
		fprintf(stderr,
			"arborinth: doctor: something arborinth needs is missing (above)\n");
	return status == CLI_OK && broken ? CLI_ERR : status;
}
