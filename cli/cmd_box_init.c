/*
 * cli/cmd_box_init.c: `arborinth __box-init`, pid 1 inside a bubblewrap box (hidden). The
 * host's `shell` starts it through bwrap; it runs the hooks below, then the command.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jail/jail.h"
#include "proxy/proxy.h"

const char cmd_box_init_usage[] =
    "usage: arborinth __box-init [--ready-fd FD] [--HOOK ARG]... -- CMD [ARGS...]\n"
    "\n"
    "Internal: pid 1 inside a box. Starts the requested hooks, runs CMD, forwards signals,\n"
    "reaps zombies and exits with CMD's status (125 when a hook or the start fails).\n";

/*
 * The hook table: what box-init can start before the command, each requested with
 * `--NAME ARG` (jail_box_add_init_hook() on the host side). start() runs in pid 1 with all
 * signals blocked and may start threads; stop() runs after the command exited. See
 * struct jail_init_hook in jail/jail.h. The credential proxy's relays plug in here, e.g.
 *   {"relay", relay_start, relay_stop},   (ARG: "PORT[,PORT...]=SOCKET")
 */
static const struct jail_init_hook box_init_hooks[] = {
    {"relay", proxy_relay_hook_start, proxy_relay_hook_stop},
    {0},
};

/* LeakSanitizer needs ptrace, which the box's seccomp filter denies: no leak check here. */
static int in_box_init;
#if defined(__SANITIZE_ADDRESS__)
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return in_box_init;
}
#endif

static const struct jail_init_hook *hook_named(const char *name)
{
	for (const struct jail_init_hook *h = box_init_hooks; h->name; h++)
		if (!strcmp(h->name, name))
			return h;
	return NULL;
}

int cmd_box_init(struct cli_global *g, int argc, char **argv)
{
	const char **names = calloc((size_t)argc + 1, sizeof(*names));
	const char **args = calloc((size_t)argc + 1, sizeof(*args));
	struct jail_init_opts o = {.ready_fd = -1, .hooks = box_init_hooks};
	size_t n = 0;
	int i = 1, status = JAIL_EXIT_SETUP, rc;

	(void)g;
	in_box_init = 1;
	if (!names || !args) {
		fprintf(stderr, "arborinth: box-init: out of memory\n");
		goto out;
	}
	/* Hand-parsed: hook options come from the table, and nothing after -- is ours. */
	for (; i < argc && strcmp(argv[i], "--"); i += 2) {
		if (i + 1 >= argc || strncmp(argv[i], "--", 2)) {
			fprintf(stderr, "arborinth: box-init: bad argument '%s'\n", argv[i]);
			goto out;
		}
		if (!strcmp(argv[i], "--ready-fd")) {
			o.ready_fd = atoi(argv[i + 1]);
		} else if (hook_named(argv[i] + 2)) {
			names[n] = argv[i] + 2;
			args[n++] = argv[i + 1];
		} else {
			fprintf(stderr, "arborinth: box-init: unknown hook '%s'\n", argv[i] + 2);
			goto out;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "arborinth: box-init: no command after --\n");
		goto out;
	}
	o.hook_names = names;
	o.hook_args = args;
	o.argv = argv + i + 1;
	rc = jail_init_run(&o, &status);
	if (rc < 0) {
		fprintf(stderr, "arborinth: %s\n", util_err_msg());
		status = JAIL_EXIT_SETUP;
	}
out:
	free(names);
	free(args);
	fflush(stdout);
	return status;
}
