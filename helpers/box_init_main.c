/*
 * helpers/box_init_main.c: `arborinth_box_init`, the same box-init as `arborinth __box-init`
 * (helpers/box_init.c) in an executable of its own. Every `shell` starts one inside its box,
 * and this one links only libc and what the hooks need, not libgit2, libcurl, SQLite and
 * FUSE: it starts in a fraction of the time (see BENCHMARKS.md, "Jail").
 */
#include "cli/cli.h"

#include <string.h>

int main(int argc, char **argv)
{
	struct cli_global g = {.workdir = "."};

	/* The box starts it as `arborinth_box_init __box-init ...`, like the subcommand. */
	if (argc > 1 && !strcmp(argv[1], "__box-init"))
		return cmd_box_init(&g, argc - 1, argv + 1);
	return cmd_box_init(&g, argc, argv);
}
