/* util/err.c: the thread-local message for the last failure. */
#include "util/util.h"

#include <stdio.h>

static __thread char err_buf[1024];

int util_err(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
	va_end(ap);
	return rc;
}

const char *util_err_msg(void)
{
	return err_buf[0] ? err_buf : "unknown error";
}

void util_err_clear(void)
{
	err_buf[0] = '\0';
}
