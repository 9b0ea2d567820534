/*
 * lib/box_limits.c: `shell`'s limits: --timeout DURATION, --memory SIZE, --cpus N,
 * --pids N, --inotify N (parsed here, applied by jail/), and the line that says what they did;
 * the workspace's --disk budget the box's disk guard enforces on its tmp, cache and home.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "fs/fs.h"
#include "jail/jail.h"

/* "30s", "10m", "2h", "1d", "1w": the durations of audit's --since. */
static int parse_timeout(const char *arg, int64_t *ms)
{
	int64_t back = 0;

	/* A duration is parsed as that long before time 0: a negative instant. */
	if (audit_time_parse(arg, 0, &back) < 0 || back >= 0 || arg[0] == '@')
		return util_err(
		    -EINVAL, "--timeout '%s': expected a duration such as 30s, 10m, 2h or 1d", arg);
	*ms = -back / 1000000;
	return 0;
}

/* "512M", "2G", "65536K" or bytes; at least 4 MiB (bwrap and box-init need some). */
static int parse_memory(const char *arg, int64_t *bytes)
{
	static const char units[] = "KMG";
	char *end = NULL;
	long long n;
	const char *u;

	errno = 0;
	n = arg[0] >= '0' && arg[0] <= '9' ? strtoll(arg, &end, 10) : -1;
	u = end && *end ? strchr(units, *end) : NULL;
	if (n < 0 || errno || (*end && (!u || end[1])) || n > (1LL << 40))
		return util_err(-EINVAL, "--memory '%s': expected a size such as 512M or 2G", arg);
	for (long i = u ? u - units + 1 : 0; i > 0; i--)
		n *= 1024;
	if (n < 4LL << 20)
		return util_err(-EINVAL, "--memory '%s': at least 4M (the box itself needs some)",
				arg);
	*bytes = n;
	return 0;
}

/* "0.5", "2", "1.25": CPUs, at least 0.01, to thousandths. */
static int parse_cpus(const char *arg, int64_t *milli)
{
	const char *dot = strchr(arg, '.');
	size_t whole = dot ? (size_t)(dot - arg) : strlen(arg), frac = dot ? strlen(dot + 1) : 0;
	int64_t m = 0;

	if (whole + frac == 0 || whole > 4 || frac > 3 || strspn(arg, "0123456789") != whole ||
	    (dot && strspn(dot + 1, "0123456789") != frac))
		return util_err(-EINVAL, "--cpus '%s': expected a number of CPUs such as 0.5 or 2",
				arg);
	for (size_t i = 0; i < whole; i++)
		m = m * 10 + (arg[i] - '0');
	m *= 1000;
	for (size_t i = 0, scale = 100; i < frac; i++, scale /= 10)
		m += (dot[1 + i] - '0') * (int64_t)scale;
	if (m < 10)
		return util_err(-EINVAL, "--cpus '%s': at least 0.01", arg);
	*milli = m;
	return 0;
}

/* A count of processes or inotify instances: 1 to 4194304. */
static int parse_count(const char *option, const char *what, const char *arg, int64_t *n)
{
	char *end = NULL;
	long long v = arg[0] >= '0' && arg[0] <= '9' ? strtoll(arg, &end, 10) : -1;

	if (v < 1 || *end || v > 4194304)
		return util_err(-EINVAL, "--%s '%s': expected a number of %s, at least 1", option,
				arg, what);
	*n = v;
	return 0;
}

int lib_limit_parse(const char *option, const char *arg, struct jail_limits *l, int64_t *timeout_ms)
{
	if (!strcmp(option, "timeout"))
		return parse_timeout(arg, timeout_ms);
	if (!strcmp(option, "memory"))
		return parse_memory(arg, &l->memory);
	if (!strcmp(option, "cpus"))
		return parse_cpus(arg, &l->cpu_milli);
	if (!strcmp(option, "inotify"))
		return parse_count(option, "inotify instances", arg, &l->inotify);
	return parse_count(option, "processes", arg, &l->pids);
}

static void limit_row(struct audit_session *s, const char *option, int64_t count, char *what)
{
	if (!what || audit_session_limit(s, option, what, count) < 0)
		fprintf(stderr, "arborinth: warning: cannot record %s in the audit log: %s\n",
			option, what ? util_err_msg() : "out of memory");
	free(what);
}

void lib_limit_audit(struct audit_session *s, const struct jail_limits *l, int64_t timeout_ms,
		     bool timed_out, const struct jail_run_stats *st)
{
	if (!s)
		return;
	if (timed_out)
		limit_row(s, "--timeout", 1,
			  util_asprintf("the box ran past %lld.%03lld s and was stopped",
					(long long)(timeout_ms / 1000),
					(long long)(timeout_ms % 1000)));
	if (st->oom_kills)
		limit_row(s, "--memory", st->oom_kills,
			  util_asprintf("the box reached %lld MiB; the kernel ended %lld of its "
					"processes",
					(long long)(l->memory >> 20), (long long)st->oom_kills));
	if (st->forks_refused)
		limit_row(s, "--pids", st->forks_refused,
			  util_asprintf("the box reached %lld processes; %lld forks were refused",
					(long long)(l->pids ? l->pids : st->pids_limit),
					(long long)st->forks_refused));
}

void lib_limit_audit_disk(struct audit_session *s, const char *why)
{
	if (!why)
		why = "the disk guard stopped the box";
	if (!strncmp(why, "--disk: ", 8))
		why += 8; /* the row's path says it */
	if (s)
		limit_row(s, "--disk", 1, strdup(why));
}

int64_t lib_disk_budget(const char *root)
{
	char *path = util_path_join(root, "disk"), *buf = NULL;
	int64_t bytes = 0;
	size_t len = 0;

	/* Written by `workspace create --disk` (core/mount.c); anything else: no budget. */
	if (path && util_read_file(path, &buf, &len) == 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (fs_disk_parse(buf, &bytes) < 0)
			bytes = 0;
	}
	util_err_clear();
	free(buf);
	free(path);
	return bytes;
}
