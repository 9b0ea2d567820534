/* cli/cmd_internal.c: hidden sub-commands the program runs itself (the view daemon). */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"

const char cmd_fs_daemon_usage[] =
    "usage: arborinth __fs-daemon --mountpoint DIR --layer DIR --gitdir DIR --repo DIR\n"
    "         --blobs DIR --base COMMIT [--pidfile FILE] [--db FILE --ws-id ID --ws-name N]\n"
    "         [--share private|other]\n"
    "         [--ready-fd FD] [--debug] [--io daemon|passthrough]\n"
    "\n"
    "Internal: serves one workspace view (started by 'workspace create' and 'mount').\n";

static const struct cli_cmd daemon_cmd = {"__fs-daemon", NULL, cmd_fs_daemon, NULL,
					  cmd_fs_daemon_usage};

int cmd_fs_daemon(struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"mountpoint", required_argument, NULL, 'm'},
	    {"layer", required_argument, NULL, 'l'},
	    {"gitdir", required_argument, NULL, 'g'},
	    {"repo", required_argument, NULL, 'r'},
	    {"blobs", required_argument, NULL, 'b'},
	    {"base", required_argument, NULL, 'c'},
	    {"pidfile", required_argument, NULL, 'p'},
	    {"db", required_argument, NULL, 'd'},
	    {"ws-id", required_argument, NULL, 'i'},
	    {"ws-name", required_argument, NULL, 'n'},
	    {"ready-fd", required_argument, NULL, 'f'},
	    {"debug", no_argument, NULL, 'D'},
	    {"share", required_argument, NULL, 's'},
	    {"io", required_argument, NULL, 'I'},
	    {0},
	};
	struct fs_config cfg = {0};
	int status = CLI_ERR, ready_fd = -1;
	int c;

	optind = 0;
	while ((c = cli_getopt(g, &daemon_cmd, argc, argv, "", opts, &status)) != -1) {
		switch (c) {
		case -2:
			return status;
		case 'm':
			cfg.mountpoint = optarg;
			break;
		case 'l':
			cfg.layer = optarg;
			break;
		case 'g':
			cfg.gitdir = optarg;
			break;
		case 'r':
			cfg.repo = optarg;
			break;
		case 'b':
			cfg.blobs = optarg;
			break;
		case 'c':
			cfg.base = optarg;
			break;
		case 'p':
			cfg.pidfile = optarg;
			break;
		case 'd':
			cfg.db_path = optarg;
			break;
		case 'i':
			cfg.ws_id = optarg;
			break;
		case 'n':
			cfg.ws_name = optarg;
			break;
		case 'f':
			ready_fd = (int)strtol(optarg, NULL, 10);
			break;
		case 'D':
			cfg.debug = 1;
			break;
		case 'I':
			if (strcmp(optarg, "daemon") != 0 && strcmp(optarg, "passthrough") != 0)
				return cli_usage_error("__fs-daemon", "--io daemon|passthrough");
			cfg.passthrough = !strcmp(optarg, "passthrough");
			break;
		case 's':
			if (strcmp(optarg, "private") != 0 && strcmp(optarg, "other") != 0)
				return cli_usage_error("__fs-daemon", "--share private|other");
			cfg.allow_other = !strcmp(optarg, "other");
			break;
		}
	}
	if (!cfg.mountpoint || !cfg.layer || !cfg.gitdir || !cfg.repo || !cfg.blobs || !cfg.base)
		return cli_usage_error("__fs-daemon", "missing a required option");
	if (fs_daemon_run(&cfg, ready_fd) < 0)
		return cli_fail_lib();
	return CLI_OK;
}
