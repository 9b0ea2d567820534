/*
 * helpers/fs_main.c: `arborinth_fs`, the view daemon (`arborinth __fs-daemon`,
 * helpers/fs_daemon.c) in an executable of its own. Every workspace runs one for as long as it
 * is mounted, so it links only FUSE, libgit2 and SQLite, not libcurl, libseccomp and the rest:
 * it starts faster and maps fewer shared libraries (see BENCHMARKS.md, "Workspace view").
 */
#include "cli/cli.h"

#include <string.h>

int main(int argc, char **argv)
{
	struct cli_global g = {.workdir = "."};

	/* core/mount.c starts it as `arborinth_fs __fs-daemon ...`, like the subcommand. */
	if (argc > 1 && !strcmp(argv[1], "__fs-daemon"))
		return cmd_fs_daemon(&g, argc - 1, argv + 1);
	return cmd_fs_daemon(&g, argc, argv);
}
