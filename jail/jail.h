/*
 * jail: running a command for a workspace, with the `none` backend (no isolation) and, as the
 * jail issue lands, the bubblewrap box.
 */
#ifndef ARB_JAIL_H
#define ARB_JAIL_H

#include "util/util.h"

/*
 * Runs argv[0] (searched on PATH) with argv in directory cwd, stdio inherited, and waits.
 * *exit_status receives the shell-style status (128+N when killed by signal N); 127 when
 * the program could not be started (with a message on stderr from the child, as shells do).
 * While the child runs, SIGTERM/SIGHUP sent to us are forwarded; SIGINT/SIGQUIT are ignored
 * here (the terminal delivers them to the child itself).
 */
int jail_none_run(const char *cwd, char *const argv[], int *exit_status) ARB_MUST_CHECK;

#endif
