/*
 * helpers/box_init.c: `arborinth __box-init`, pid 1 inside a bubblewrap box (hidden). The
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
    {PROXY_RELAY_HOOK, proxy_relay_hook_start, proxy_relay_hook_stop},
    {JAIL_NPROC_HOOK, jail_budget_nproc_hook, NULL},
    {0},
};

/* LeakSanitizer needs ptrace, which the box's seccomp filter denies: no leak check here. */
static int in_box_init;
#if defined(__SANITIZE_ADDRESS__)
/* Default visibility: the sanitizer runtime (a shared library) looks it up dynamically. */
__attribute__((visibility("default"))) int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return in_box_init;
}
#endif

int cmd_box_init(struct cli_global *g, int argc, char **argv)
{
	struct jail_init_opts o;
	int status = JAIL_EXIT_SETUP;

	(void)g;
	in_box_init = 1;
	if (jail_init_opts_parse(&o, argc, argv, box_init_hooks) < 0 ||
	    jail_init_run(&o, &status) < 0) {
		fprintf(stderr, "arborinth: %s\n", util_err_msg());
		status = JAIL_EXIT_SETUP;
	}
	jail_init_opts_clear(&o);
	fflush(stdout);
	return status;
}
