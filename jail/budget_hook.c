/*
 * jail/budget_hook.c: box-init's hook for --pids N. In its own file: box-init is a static
 * program and links only what it calls (budget.c would bring the whole box with it).
 */
#include "jail/jail.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int jail_budget_nproc_hook(const char *arg, void **state)
{
	char *end = NULL;
	long long n = strtoll(arg, &end, 10);
	struct rlimit rl;

	*state = NULL;
	if (end == arg || *end || n < 1)
		return util_err(-EINVAL, "box-init: bad --%s '%s'", JAIL_NPROC_HOOK, arg);
	/* Never above the hard limit the box was started with: that one it cannot raise. */
	if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
	    (rlim_t)n > rl.rlim_max)
		n = (long long)rl.rlim_max;
	rl.rlim_cur = rl.rlim_max = (rlim_t)n;
	/* In the box's own namespace the count is the box's processes alone. */
	if (setrlimit(RLIMIT_NPROC, &rl) < 0)
		return util_err(-errno, "box-init: cannot set RLIMIT_NPROC to %lld: %s", n,
				strerror(errno));
	return 0;
}
