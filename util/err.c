/* util/err.c: the thread-local message for the last failure. */
#include "util/util.h"

#include <stdio.h>
#include <string.h>

static __thread char err_buf[1024];

int util_err(int rc, const char *fmt, ...)
{
	char buf[sizeof(err_buf)];
	va_list ap;

	/* Through a copy: the arguments may be the current message (a prefix added to it). */
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	memcpy(err_buf, buf, sizeof(buf));
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
