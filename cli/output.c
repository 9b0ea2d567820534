/* cli/output.c: error lines, help text and JSON output. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

int cli_fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("arborinth: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

int cli_fail_lib(void)
{
	return cli_fail(CLI_ERR, "%s", util_err_msg());
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("arborinth: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'arborinth %s --help')\n", cmd);
	return CLI_USAGE;
}

void cli_print_help(const struct cli_cmd *cmd)
{
	fputs(cmd->usage, stdout);
}

int cli_json_print(json_t *obj)
{
	int rc;

	if (!obj)
		return cli_fail(CLI_ERR, "out of memory");
	rc = json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (rc < 0)
		return cli_fail(CLI_ERR, "cannot write JSON output");
	fputc('\n', stdout);
	return CLI_OK;
}
