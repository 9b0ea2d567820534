/*
 * lib/doctor_internal.h: the checks behind arb_doctor(), in two files: what the machine
 * offers (doctor_sys.c) and the agent clients (agents/doctor.c, which holds arb_doctor() itself).
 */
#ifndef ARB_LIB_DOCTOR_INTERNAL_H
#define ARB_LIB_DOCTOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "include/arborinth.h"
#include "util/util.h"

/* A growing list of checks (doctor.c). */
struct doctor {
	struct arb_check *v;
	size_t n, cap;
	const char *workdir; /* where the project is looked for; NULL: the cwd */
};

/*
 * Appends a check: `detail` says what was found, `fix` the one line that mends it (NULL when
 * the status is ok). Formats are printf's; the strings are copied. -ENOMEM.
 */
int doctor_add(struct doctor *d, const char *name, enum arb_check_status st, bool required,
	       const char *fix, const char *fmt, ...) ARB_PRINTF(6, 7) ARB_MUST_CHECK;

/* bwrap, user namespaces, /dev/fuse, fusermount3, allow_other, cgroups, passthrough,
 * io_uring, the project's file system (doctor_sys.c). */
int doctor_sys(struct doctor *d) ARB_MUST_CHECK;

#endif
