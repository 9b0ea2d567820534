/*
 * tests/helpers/audit_bench.c: how fast the recorder takes events, and what an append costs
 * the calling thread (what a FUSE handler pays).
 *
 *   audit_bench DB THREADS EVENTS_PER_THREAD
 *
 * Prints appends per second (all threads, calling side), the cost per append (mean, p99,
 * max), the time until everything is committed (flush) and the resulting rows per second.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"

struct worker {
	struct audit_log *log;
	int id, n;
	int64_t *lat;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char path[64];

	for (int i = 0; i < w->n; i++) {
		struct audit_event ev = {.time_ns = util_now_ns(),
					 .op = i % 3 ? "write" : "create",
					 .path = path,
					 .size = 4096,
					 .count = 1,
					 .off_hi = 4096,
					 .pid = getpid()};
		int64_t t0;

		snprintf(path, sizeof(path), "src/dir%d/file%d.c", w->id, i);
		t0 = mono_ns();
		if (audit_log_append(w->log, &ev) != 0)
			abort();
		w->lat[i] = mono_ns() - t0;
	}
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct audit_log *log = NULL;
	struct audit_log_stats st;
	struct worker *w;
	pthread_t *t;
	int64_t *all, t0, t_appended, t_flushed, sum = 0;
	int threads, n;
	size_t total;

	if (argc != 4) {
		fprintf(stderr, "usage: audit_bench DB THREADS EVENTS_PER_THREAD\n");
		return 2;
	}
	threads = atoi(argv[2]);
	n = atoi(argv[3]);
	total = (size_t)threads * (size_t)n;
	if (audit_log_open(&log, argv[1], "bench", "bench") < 0) {
		fprintf(stderr, "audit_bench: %s\n", util_err_msg());
		return 1;
	}
	w = calloc((size_t)threads, sizeof(*w));
	t = calloc((size_t)threads, sizeof(*t));
	all = calloc(total, sizeof(*all));
	t0 = mono_ns();
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){.log = log, .id = i, .n = n, .lat = all + (size_t)i * n};
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	t_appended = mono_ns();
	if (audit_log_flush(log) < 0)
		return 1;
	t_flushed = mono_ns();
	audit_log_stats(log, &st);
	audit_log_close(log);
	qsort(all, total, sizeof(*all), cmp64);
	for (size_t i = 0; i < total; i++)
		sum += all[i];
	printf("events %zu threads %d\n", total, threads);
	printf("appends/s (calling side)  %.0f\n", total / ((t_appended - t0) / 1e9));
	printf("append cost ns            mean %lld  p50 %lld  p99 %lld  max %lld\n",
	       (long long)(sum / (int64_t)total), (long long)all[total / 2],
	       (long long)all[total * 99 / 100], (long long)all[total - 1]);
	printf("all committed after       %.3f s  (%.0f rows/s)\n", (t_flushed - t0) / 1e9,
	       total / ((t_flushed - t0) / 1e9));
	printf("transactions %llu  queue-full waits %llu (%.3f s)  dropped %llu  pid misses %llu\n",
	       (unsigned long long)st.transactions, (unsigned long long)st.waits, st.wait_ns / 1e9,
	       (unsigned long long)st.dropped, (unsigned long long)st.proc_misses);
	free(w);
	free(t);
	free(all);
	return st.written == total ? 0 : 1;
}
