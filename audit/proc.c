/*
 * audit/proc.c: who did it. Resolves a pid to a process identity (comm, exe, start time, pid
 * namespace, parent chain) through a direct-mapped cache shared by the FUSE threads.
 */
#include "audit/audit_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_SLOTS   8192
#define CACHE_STRIPES 64
/* A hit younger than this is used without any system call. */
#define FRESH_NS (100 * 1000000LL)
/* An ancestor's identity only has to name the right process: it may be older. */
#define ANCESTOR_FRESH_NS (10 * 1000000000LL)

struct audit_proc_cache {
	pthread_mutex_t locks[CACHE_STRIPES];
	struct audit_proc *slots[CACHE_SLOTS];
	atomic_ullong misses;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int audit_proc_stat(pid_t pid, char *comm, pid_t *ppid, uint64_t *start)
{
	char path[64], buf[1024];
	char *open_paren, *close_paren, *save = NULL, *tok;
	ssize_t n;
	int fd, field;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: it ends at the last ')'. */
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -EIO;
	*close_paren = '\0';
	snprintf(comm, 17, "%s", open_paren + 1);
	/* Fields after comm start at 3 (state); ppid is 4, starttime 22. */
	field = 3;
	for (tok = strtok_r(close_paren + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (field == 4)
			*ppid = (pid_t)strtol(tok, NULL, 10);
		if (field == 22) {
			*start = strtoull(tok, NULL, 10);
			return 0;
		}
		field++;
	}
	return -EIO;
}

uint64_t audit_proc_pidns(pid_t pid)
{
	char path[64];
	struct stat st;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/pid");
	return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static char *proc_exe(pid_t pid)
{
	char path[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

int audit_proc_cache_new(struct audit_proc_cache **out)
{
	struct audit_proc_cache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < CACHE_STRIPES; i++)
		pthread_mutex_init(&c->locks[i], NULL);
	*out = c;
	return 0;
}

void audit_proc_cache_free(struct audit_proc_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		audit_proc_put(c->slots[i]);
	for (size_t i = 0; i < CACHE_STRIPES; i++)
		pthread_mutex_destroy(&c->locks[i]);
	free(c);
}

uint64_t audit_proc_cache_misses(struct audit_proc_cache *c)
{
	return atomic_load(&c->misses);
}

void audit_proc_put(struct audit_proc *p)
{
	/* Iterative: a long chain must not recurse once per ancestor. */
	while (p && atomic_fetch_sub(&p->refs, 1) == 1) {
		struct audit_proc *parent = p->parent;

		free(p->exe);
		free(p);
		p = parent;
	}
}

static struct audit_proc *proc_get_depth(struct audit_proc_cache *c, pid_t pid, int depth,
					 int64_t fresh_ns);

/* A new identity for pid from what /proc says now; inserted into the cache. */
static struct audit_proc *proc_build(struct audit_proc_cache *c, pid_t pid, const char *comm,
				     pid_t ppid, uint64_t start, int depth)
{
	struct audit_proc *p = calloc(1, sizeof(*p)), *old;
	size_t slot = (size_t)pid % CACHE_SLOTS;
	pthread_mutex_t *lock = &c->locks[slot % CACHE_STRIPES];

	if (!p)
		return NULL;
	atomic_fetch_add(&c->misses, 1);
	atomic_init(&p->refs, 2); /* the cache's and the caller's */
	p->pid = pid;
	p->start = start;
	p->session = -1;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	p->exe = proc_exe(pid);
	p->pidns = audit_proc_pidns(pid);
	atomic_init(&p->checked_ns, mono_ns());
	if (ppid > 0 && ppid != pid && depth < AUDIT_PROC_DEPTH_MAX) {
		p->parent = proc_get_depth(c, ppid, depth + 1, ANCESTOR_FRESH_NS);
		/* A parent that started after its child is a reused pid, not the parent. */
		if (p->parent && p->parent->start > start) {
			audit_proc_put(p->parent);
			p->parent = NULL;
		}
	}
	p->depth = p->parent ? p->parent->depth + 1 : 0;
	/* Cut by the depth limit, or the parent could not be read. */
	p->truncated = p->parent ? p->parent->truncated : ppid > 0;
	pthread_mutex_lock(lock);
	old = c->slots[slot];
	c->slots[slot] = p;
	pthread_mutex_unlock(lock);
	audit_proc_put(old);
	return p;
}

static struct audit_proc *proc_get_depth(struct audit_proc_cache *c, pid_t pid, int depth,
					 int64_t fresh_ns)
{
	size_t slot = (size_t)pid % CACHE_SLOTS;
	pthread_mutex_t *lock = &c->locks[slot % CACHE_STRIPES];
	struct audit_proc *p;
	char comm[17] = "";
	pid_t ppid = 0;
	uint64_t start = 0;
	int64_t now = mono_ns();

	pthread_mutex_lock(lock);
	p = c->slots[slot];
	if (p && p->pid == pid)
		atomic_fetch_add(&p->refs, 1);
	else
		p = NULL;
	pthread_mutex_unlock(lock);
	if (p && now - atomic_load(&p->checked_ns) < fresh_ns)
		return p;
	if (audit_proc_stat(pid, comm, &ppid, &start) < 0) {
		/* Gone: the last identity we saw is the best answer (writes recorded at release).
		 */
		if (p)
			atomic_store(&p->checked_ns, now);
		return p;
	}
	if (p && p->start == start && !strcmp(p->comm, comm)) {
		atomic_store(&p->checked_ns, now);
		return p;
	}
	audit_proc_put(p);
	return proc_build(c, pid, comm, ppid, start, depth);
}

struct audit_proc *audit_proc_get(struct audit_proc_cache *c, pid_t pid)
{
	if (pid <= 0)
		return NULL;
	return proc_get_depth(c, pid, 0, FRESH_NS);
}
