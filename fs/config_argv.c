/*
 * fs/config_argv.c: the view daemon's command line, both halves: what core/mount.c starts
 * (fs_config_argv) and what the daemon makes of it (fs_config_parse, in `arborinth
 * __fs-daemon` and arborinth_fs):
 *
 *   PROGRAM __fs-daemon --mountpoint DIR --layer DIR --gitdir DIR --repo DIR --blobs DIR
 *     --base COMMIT [--pidfile FILE] [--db FILE --ws-id ID --ws-name NAME] [--disk SIZE]
 *     [--share private|other] [--io daemon|passthrough] [--lfs] [--debug] [--ready-fd FD]
 */
#include "fs/fs.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The string options: their flag and the member of struct fs_config they fill. */
static const struct {
	const char *flag; /* "--NAME" */
	size_t offset;
	bool required;
} strs[] = {
    {"--mountpoint", offsetof(struct fs_config, mountpoint), true},
    {"--layer", offsetof(struct fs_config, layer), true},
    {"--gitdir", offsetof(struct fs_config, gitdir), true},
    {"--repo", offsetof(struct fs_config, repo), true},
    {"--blobs", offsetof(struct fs_config, blobs), true},
    {"--base", offsetof(struct fs_config, base), true},
    {"--pidfile", offsetof(struct fs_config, pidfile), false},
    {"--db", offsetof(struct fs_config, db_path), false},
    {"--ws-id", offsetof(struct fs_config, ws_id), false},
    {"--ws-name", offsetof(struct fs_config, ws_name), false},
    {"--disk", offsetof(struct fs_config, disk), false},
};

static const char **member(struct fs_config *cfg, size_t i)
{
	return (const char **)(void *)((char *)cfg + strs[i].offset);
}

char **fs_config_argv(const struct fs_config *cfg, const char *program, const char *ready_fd,
		      size_t *argc)
{
	char **v = calloc(2 * ARB_ARRAY_LEN(strs) + 12, sizeof(*v));
	struct fs_config c = *cfg;
	size_t n = 0;

	if (!v)
		return NULL;
	v[n++] = (char *)program;
	v[n++] = FS_DAEMON_VERB;
	for (size_t i = 0; i < ARB_ARRAY_LEN(strs); i++)
		if (*member(&c, i)) {
			v[n++] = (char *)strs[i].flag;
			v[n++] = (char *)*member(&c, i);
		}
	v[n++] = "--share";
	v[n++] = cfg->allow_other ? "other" : "private";
	v[n++] = "--io";
	v[n++] = cfg->passthrough ? "passthrough" : "daemon";
	if (cfg->lfs)
		v[n++] = "--lfs";
	if (cfg->debug)
		v[n++] = "--debug";
	if (ready_fd) {
		v[n++] = "--ready-fd";
		v[n++] = (char *)ready_fd;
	}
	v[n] = NULL;
	*argc = n;
	return v;
}

int fs_config_parse(struct fs_config *cfg, int *ready_fd, int argc, char **argv)
{
	struct option opts[ARB_ARRAY_LEN(strs) + 6] = {{0}};
	size_t n = 0;
	int c;

	*cfg = (struct fs_config){0};
	*ready_fd = -1;
	for (; n < ARB_ARRAY_LEN(strs); n++)
		opts[n] = (struct option){strs[n].flag + 2, required_argument, NULL, 1000 + (int)n};
	opts[n++] = (struct option){"ready-fd", required_argument, NULL, 'f'};
	opts[n++] = (struct option){"debug", no_argument, NULL, 'D'};
	opts[n++] = (struct option){"share", required_argument, NULL, 's'};
	opts[n++] = (struct option){"io", required_argument, NULL, 'I'};
	opts[n++] = (struct option){"lfs", no_argument, NULL, 'L'};
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		char *end;

		if (c >= 1000) {
			*member(cfg, (size_t)(c - 1000)) = optarg;
		} else if (c == 'f') {
			long fd = strtol(optarg, &end, 10);

			if (*end || end == optarg || fd < 0 || fd > 1 << 20)
				return util_err(-EINVAL, "--ready-fd '%s' is not a descriptor",
						optarg);
			*ready_fd = (int)fd;
		} else if (c == 'D') {
			cfg->debug = 1;
		} else if (c == 'L') {
			cfg->lfs = true;
		} else if (c == 's' && (!strcmp(optarg, "private") || !strcmp(optarg, "other"))) {
			cfg->allow_other = !strcmp(optarg, "other");
		} else if (c == 's') {
			return util_err(-EINVAL, "--share private|other");
		} else if (c == 'I' &&
			   (!strcmp(optarg, "daemon") || !strcmp(optarg, "passthrough"))) {
			cfg->passthrough = !strcmp(optarg, "passthrough");
		} else if (c == 'I') {
			return util_err(-EINVAL, "--io daemon|passthrough");
		} else if (c == ':') {
			return util_err(-EINVAL, "option '%s' needs a value", argv[optind - 1]);
		} else {
			return util_err(-EINVAL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return util_err(-EINVAL, "unexpected argument '%s'", argv[optind]);
	for (size_t i = 0; i < ARB_ARRAY_LEN(strs); i++)
		if (strs[i].required && !*member(cfg, i))
			return util_err(-EINVAL, "missing a required option (%s)", strs[i].flag);
	return 0;
}
