/* cli/dispatch.c: command tables, sub-command dispatch and the shared option parser. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

const struct cli_cmd *cli_cmd_find(const struct cli_cmd *table, const char *name)
{
	for (const struct cli_cmd *c = table; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

int cli_dispatch_sub(struct cli_global *g, const struct cli_cmd *parent,
		     const struct cli_cmd *table, int argc, char **argv)
{
	const struct cli_cmd *sub;
	int i = 1;

	/* Global --workdir may come before the sub-command: `workspace --workdir D list`. */
	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			cli_print_help(parent);
			return CLI_OK;
		} else if (!strcmp(argv[i], "--workdir") && i + 1 < argc) {
			g->workdir = argv[i + 1];
			i += 2;
		} else if (!strncmp(argv[i], "--workdir=", 10)) {
			g->workdir = argv[i] + 10;
			i++;
		} else {
			return cli_usage_error(parent->name, "unknown option '%s'", argv[i]);
		}
	}
	if (i >= argc)
		return cli_usage_error(parent->name, "'%s' needs a sub-command", parent->name);
	sub = cli_cmd_find(table, argv[i]);
	if (!sub)
		return cli_usage_error(parent->name, "unknown sub-command '%s %s'", parent->name,
				       argv[i]);
	return sub->fn(g, argc - i, argv + i);
}

const char *cli_cmd_path(const struct cli_cmd *cmd)
{
	return cmd->path ? cmd->path : cmd->name;
}

#define MAX_OPTS 32

int cli_getopt(struct cli_global *g, const struct cli_cmd *cmd, int argc, char **argv,
	       const char *shortopts, const struct option *longopts, int *status)
{
	static __thread struct option all[MAX_OPTS];
	char shorts[64];
	size_t n = 0;
	int c;

	/* --list-options: the table itself, so tests compare the real parser with the pages. */
	if (g->list_options) {
		for (const char *s = shortopts; s && *s; s++)
			if (*s != ':')
				printf("-%c\n", *s);
		for (size_t i = 0; longopts && longopts[i].name; i++)
			printf("--%s\n", longopts[i].name);
		*status = CLI_OK;
		return -2;
	}

	for (; longopts && longopts[n].name && n < MAX_OPTS - 3; n++)
		all[n] = longopts[n];
	all[n++] = (struct option){"workdir", required_argument, NULL, 'W'};
	all[n++] = (struct option){"help", no_argument, NULL, 'h'};
	all[n] = (struct option){0};
	snprintf(shorts, sizeof(shorts), ":h%s", shortopts ? shortopts : "");
	opterr = 0;
	c = getopt_long(argc, argv, shorts, all, NULL);
	switch (c) {
	case 'W':
		g->workdir = optarg;
		return cli_getopt(g, cmd, argc, argv, shortopts, longopts, status);
	case 'h':
		cli_print_help(cmd);
		*status = CLI_OK;
		return -2;
	case ':':
		*status = cli_usage_error(cli_cmd_path(cmd), "option '%s' needs a value",
					  argv[optind - 1]);
		return -2;
	case '?':
		if (optopt)
			*status =
			    cli_usage_error(cli_cmd_path(cmd), "unknown option '-%c'", optopt);
		else
			*status = cli_usage_error(cli_cmd_path(cmd), "unknown option '%s'",
						  argv[optind - 1]);
		return -2;
	default:
		return c;
	}
}
