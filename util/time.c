/* util/time.c: clocks, time formatting and processes (liveness, exit statuses). */
#include "util/util.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

int64_t util_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void util_deadline(struct timespec *ts, clockid_t clock, int64_t ms)
{
	clock_gettime(clock, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

void util_time_format(char *buf, size_t size, int64_t ns, bool iso)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	if (iso) {
		gmtime_r(&t, &tm);
		strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
	} else {
		localtime_r(&t, &tm);
		strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
	}
}

bool util_pid_alive(pid_t pid)
{
	char path[64], buf[512];
	char *state;
	FILE *f;
	size_t n;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold anything, so look after the last ')'. */
	state = strrchr(buf, ')');
	return state && state[1] == ' ' && state[2] != 'Z' && state[2] != 'X';
}

int util_wait_status_to_exit(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}
