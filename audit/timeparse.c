/* audit/timeparse.c: times for `arborinth audit --since/--until`. */
#include "audit/audit.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS 1000000000LL

static int parse_relative(const char *s, int64_t now_ns, int64_t *out)
{
	static const struct {
		char unit;
		int64_t secs;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
	char *end;
	long long n;

	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || end == s || n < 0 || !isdigit((unsigned char)s[0]) || end[0] == '\0' ||
	    end[1] != '\0')
		return -EINVAL;
	for (size_t i = 0; i < ARB_ARRAY_LEN(units); i++) {
		if (units[i].unit != end[0])
			continue;
		if (n > INT64_MAX / NS / units[i].secs)
			return -EINVAL;
		*out = now_ns - (int64_t)n * units[i].secs * NS;
		return 0;
	}
	return -EINVAL;
}

/* Fraction ".123456789" after seconds: ns, advancing *p. */
static int64_t parse_fraction(const char **p)
{
	int64_t ns = 0, scale = NS / 10;

	if (**p != '.' && **p != ',')
		return 0;
	for ((*p)++; isdigit((unsigned char)**p); (*p)++) {
		ns += (**p - '0') * scale;
		scale /= 10;
	}
	return ns;
}

/* "Z", "+HH:MM", "+HHMM", "-HH" after a time: offset in seconds east; 1 when none. */
static int parse_zone(const char *p, long *offset, bool *has_zone)
{
	int hh = 0, mm = 0, n = 0;

	*has_zone = true;
	*offset = 0;
	if (!*p) {
		*has_zone = false;
		return 0;
	}
	if ((p[0] == 'Z' || p[0] == 'z') && !p[1])
		return 0;
	if ((p[0] != '+' && p[0] != '-') ||
	    (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 &&
	     sscanf(p + 1, "%2d%2d%n", &hh, &mm, &n) != 2 && sscanf(p + 1, "%2d%n", &hh, &n) != 1))
		return -EINVAL;
	if (p[1 + n] != '\0' || hh > 23 || mm > 59)
		return -EINVAL;
	*offset = (p[0] == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
	return 0;
}

static int parse_absolute(const char *s, int64_t *out)
{
	struct tm tm = {0};
	const char *p;
	int64_t frac = 0;
	long offset;
	bool has_zone;
	time_t t;

	p = strptime(s, "%Y-%m-%d", &tm);
	if (!p)
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		const char *q = strptime(p + 1, "%H:%M:%S", &tm);

		if (!q)
			q = strptime(p + 1, "%H:%M", &tm);
		if (!q)
			return -EINVAL;
		p = q;
		frac = parse_fraction(&p);
	}
	if (parse_zone(p, &offset, &has_zone) < 0)
		return -EINVAL;
	if (has_zone) {
		t = timegm(&tm);
		t -= offset;
	} else {
		tm.tm_isdst = -1;
		t = mktime(&tm);
	}
	if (t == (time_t)-1)
		return -EINVAL;
	*out = (int64_t)t * NS + frac;
	return 0;
}

int audit_time_parse(const char *s, int64_t now_ns, int64_t *out)
{
	if (s[0] == '@') {
		char *end;
		long long secs;

		errno = 0;
		secs = strtoll(s + 1, &end, 10);
		if (!errno && end != s + 1 && !*end && secs >= 0 && secs < INT64_MAX / NS) {
			*out = (int64_t)secs * NS;
			return 0;
		}
	} else if (parse_relative(s, now_ns, out) == 0 || parse_absolute(s, out) == 0) {
		return 0;
	}
	return util_err(-EINVAL,
			"invalid time '%s' (use e.g. 10m, 2h, 3d, 2024-05-01, "
			"2024-05-01T12:00:00Z or '2024-05-01 12:00')",
			s);
}
