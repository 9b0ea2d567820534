/* helpers/fs_daemon.c: hidden sub-commands the program runs itself (the view daemon). */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"

const char cmd_fs_daemon_usage[] =
    "usage: arborinth __fs-daemon --mountpoint DIR --layer DIR --gitdir DIR --repo DIR\n"
    "         --blobs DIR --base COMMIT [--pidfile FILE] [--db FILE --ws-id ID --ws-name N]\n"
    "         [--share private|other] [--disk SIZE|none]\n"
    "         [--ready-fd FD] [--debug] [--io daemon|passthrough]\n"
    "\n"
    "Internal: serves one workspace view (started by 'workspace create' and 'mount').\n";

static const struct cli_cmd daemon_cmd = {"__fs-daemon", NULL, cmd_fs_daemon, NULL,
					  cmd_fs_daemon_usage};

int cmd_fs_daemon(struct cli_global *g, int argc, char **argv)
{
	struct fs_config cfg;
	int ready_fd = -1;

	(void)g;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help")) {
			cli_print_help(&daemon_cmd);
			return CLI_OK;
		}
	if (fs_config_parse(&cfg, &ready_fd, argc, argv) < 0)
		return cli_usage_error("__fs-daemon", "%s", util_err_msg());
	if (fs_daemon_run(&cfg, ready_fd) < 0)
		return cli_fail_lib();
	return CLI_OK;
}
