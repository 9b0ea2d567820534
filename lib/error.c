/*
 * lib/error.c: the library's error reporting (messages are util's thread-local one, util_err;
 * whether the caller's input was at fault is a thread-local mark next to it), its version,
 * and what it hands the caller to free or write to.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local int input_fault;

int lib_input_err(int rc)
{
	input_fault = rc < 0;
	return rc;
}

void lib_err_reset(void)
{
	input_fault = 0;
}

const char *arb_error_last(void)
{
	return util_err_msg();
}

int arb_error_is_input(void)
{
	return input_fault;
}

void arb_free(void *ptr)
{
	free(ptr);
}

void arb_version(int *major, int *minor, int *patch)
{
	if (major)
		*major = ARB_VERSION_MAJOR;
	if (minor)
		*minor = ARB_VERSION_MINOR;
	if (patch)
		*patch = ARB_VERSION_PATCH;
}

int lib_fd_stream(int fd, const char *what, FILE **out)
{
	int copy = dup(fd);

	*out = copy >= 0 ? fdopen(copy, "w") : NULL;
	if (*out)
		return 0;
	if (copy >= 0)
		close(copy);
	return util_err(-errno, "%s: cannot write to descriptor %d: %s", what, fd, strerror(errno));
}
