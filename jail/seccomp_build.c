/*
 * jail/seccomp_build.c: the rule table (seccomp.c) compiled into BPF with libseccomp. Run at
 * build time by jail_seccomp_gen, whose output is compiled into arborinth; the unit tests
 * check that copy against a fresh build. Not linked into arborinth.
 */
#include "jail/jail_internal.h"

#include <errno.h>
#include <seccomp.h>
#include <string.h>

#if defined(__x86_64__)
static const uint32_t extra_arches[] = {SCMP_ARCH_X86, SCMP_ARCH_X32};
#else
static const uint32_t extra_arches[] = {0};
#endif

static int add_rule(scmp_filter_ctx ctx, const struct jail_seccomp_rule *r)
{
	int nr = seccomp_syscall_resolve_name(r->syscall);
	int rc;

	if (nr == __NR_SCMP_ERROR)
		return util_err(-EINVAL, "seccomp: unknown syscall %s", r->syscall);
	if (r->arg < 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(r->err), nr, 0);
	else
		rc = seccomp_rule_add(
		    ctx, SCMP_ACT_ERRNO(r->err), nr, 1,
		    SCMP_CMP((unsigned)r->arg, SCMP_CMP_MASKED_EQ, r->mask, r->value));
	if (rc < 0)
		return util_err(rc, "seccomp: cannot add the rule for %s: %s", r->syscall,
				strerror(-rc));
	return 0;
}

static int build(scmp_filter_ctx ctx)
{
	size_t n;
	const struct jail_seccomp_rule *rules = jail_seccomp_rules(&n);
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);

	if (rc < 0)
		return util_err(rc, "seccomp: %s", strerror(-rc));
	for (size_t i = 0; i < ARB_ARRAY_LEN(extra_arches) && extra_arches[i]; i++) {
		rc = seccomp_arch_add(ctx, extra_arches[i]);
		if (rc < 0 && rc != -EEXIST)
			return util_err(rc, "seccomp: cannot add ABI %s: %s",
					jail_seccomp_arches()[i + 1], strerror(-rc));
	}
	for (size_t i = 0; i < n; i++) {
		rc = add_rule(ctx, &rules[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int jail_seccomp_build(int fd)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	if (!ctx)
		return util_err(-ENOMEM, "seccomp: cannot create a filter");
	rc = build(ctx);
	if (rc == 0 && (rc = seccomp_export_bpf(ctx, fd)) < 0)
		rc = util_err(rc, "seccomp: cannot export the filter: %s", strerror(-rc));
	seccomp_release(ctx);
	return rc;
}
