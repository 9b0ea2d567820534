/* cli/output.c: error lines, help text, JSON output and box-chosen text made safe to show. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE_RING 16

/* Keeps q (or a fallback) in this thread's ring and returns it. */
static const char *ring_keep(char *q)
{
	static __thread char *ring[QUOTE_RING];
	static __thread unsigned int next;
	unsigned int i = next++ % QUOTE_RING;

	free(ring[i]);
	ring[i] = q;
	return q ? q : "\"?\"";
}

const char *cli_q(const char *s)
{
	return ring_keep(util_quote(s ? s : ""));
}

/* The message fmt makes, with control characters and bytes that are not UTF-8 escaped. */
static void put_message(const char *fmt, va_list ap)
{
	char *msg = NULL, *safe = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	safe = msg ? util_quote_text(msg) : NULL;
	fputs(safe ? safe : "out of memory", stderr);
	free(msg);
	free(safe);
}

int cli_fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("arborinth: ", stderr);
	va_start(ap, fmt);
	put_message(fmt, ap);
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
	put_message(fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'arborinth %s --help')\n", cmd);
	return CLI_USAGE;
}

void cli_print_help(const struct cli_cmd *cmd)
{
	fputs(cmd->usage, stdout);
}

json_t *cli_json_backends(const char *text)
{
	json_t *v = text ? json_loads(text, 0, NULL) : NULL;

	return json_is_array(v) ? v : (json_decref(v), json_array());
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
