/* cli/cmd_gc.c: `arborinth gc`: reclaims what no workspace uses, and says how much. */
#include "cli/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "include/arborinth.h"

struct gc_out {
	json_t *items; /* --json: the list; else printed as they come */
	bool dry;
};

static void human(char *buf, size_t size, uint64_t b)
{
	if (b >= 10u << 20)
		snprintf(buf, size, "%" PRIu64 " MiB", b >> 20);
	else if (b >= 10u << 10)
		snprintf(buf, size, "%" PRIu64 " KiB", b >> 10);
	else
		snprintf(buf, size, "%" PRIu64 " bytes", b);
}

static void gc_item(void *arg, int removed, const char *what, const char *path, uint64_t bytes)
{
	struct gc_out *o = arg;
	char size[32];

	if (o->items) {
		json_array_append_new(
		    o->items, json_pack("{s:b,s:s,s:o,s:I}", "removed", removed, "what", what,
					"path", util_json_bytes(path), "bytes", (json_int_t)bytes));
		return;
	}
	human(size, sizeof(size), bytes);
	printf("%s %s %s%s%s%s\n", removed ? (o->dry ? "would remove" : "removed") : "kept", what,
	       cli_q(path), bytes ? " (" : "", bytes ? size : "", bytes ? ")" : "");
}

int cmd_gc(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
					     {"dry-run", no_argument, NULL, 'n'},
					     {"purge", no_argument, NULL, 'P'},
					     {0}};
	const struct cli_cmd *self = cli_cmd_find(cli_commands, "gc");
	struct gc_out o = {0};
	arb_project *p = NULL;
	unsigned flags = 0;
	uint64_t bytes = 0;
	size_t dropped = 0;
	int status = CLI_ERR, c;
	char size[32];

	optind = 0;
	while ((c = cli_getopt(g, self, argc, argv, "", opts, &status)) != -1) {
		if (c == -2)
			return status;
		if (c == 'j')
			o.items = json_array();
		else if (c == 'n')
			flags |= ARB_GC_DRY_RUN;
		else
			flags |= ARB_GC_PURGE;
	}
	if (optind < argc)
		return cli_usage_error("gc", "unexpected argument '%s'", argv[optind]);
	o.dry = flags & ARB_GC_DRY_RUN;
	if (arb_project_open(&p, g->workdir) < 0 ||
	    arb_project_gc(p, flags, gc_item, &o, &bytes) < 0 ||
	    (!o.dry && arb_projects_prune(&dropped) < 0)) {
		status = cli_fail(CLI_ERR, "gc: %s", arb_error_last());
		goto out;
	}
	if (o.items) {
		status = cli_json_print(json_pack("{s:b,s:I,s:O,s:I}", "dry_run", o.dry, "bytes",
						  (json_int_t)bytes, "items", o.items,
						  "projects_dropped", (json_int_t)dropped));
		goto out;
	}
	human(size, sizeof(size), bytes);
	if (dropped)
		printf("dropped %zu gone project%s from the list of projects\n", dropped,
		       dropped == 1 ? "" : "s");
	printf("%s %" PRIu64 " bytes (%s)\n", o.dry ? "would reclaim" : "reclaimed", bytes, size);
	status = CLI_OK;
out:
	json_decref(o.items);
	arb_project_free(p);
	return status;
}
