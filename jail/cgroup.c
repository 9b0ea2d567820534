/*
 * jail/cgroup.c: --memory, --cpus and --pids on cgroups of the box's own. For each limit
 * the box gets a cgroup ARBORINTH-PID below ours in that controller's hierarchy, with the
 * limit written, and the child that execs bwrap joins it first, so every process of the box
 * is inside (bwrap's --unshare-cgroup then shows the box that cgroup as its root, and the
 * cgroup file system is read-only there). After the box, the kernel's counters say what the
 * limits did (processes the OOM killer ended, forks refused) and the cgroups are removed; those
 * of a shell that was killed first are removed by the next one.
 *
 * Without --pids, every box gets the default budget of budget.c as its pids.max where this
 * host gives a pids cgroup (root, or a delegated cgroup v2 subtree); --pids without one is
 * RLIMIT_NPROC alone for a user, and refused for root (whom RLIMIT_NPROC does not bind).
 *
 * The hierarchies come from a table: the cgroup v1 controllers (memory, pids, cpu), as a
 * hybrid host such as this project's CI mounts them, writable by root; a controller only on
 * the unified hierarchy (cgroup v2, most hosts today) is placed by cgroup2.c, below our
 * cgroup's parent when this user may write it (root's, or a subtree delegated by systemd),
 * else in a scope the systemd user manager delegates when the box runs (cgscope.c).
 */
#include "jail/box_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { CG_MEMORY, CG_PIDS, CG_CPU };

/* One limit: its controller and the files it writes ("%lld" of the value, in order). */
static const struct controller {
	const char *name, *option;
	const char *files[3];	      /* written in order when present; the first must be */
	const char *events, *counter; /* file and key of what the limit did */
} controllers[] = {
    [CG_MEMORY] = {"memory",
		   "--memory",
		   {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
		   "memory.oom_control",
		   "oom_kill"},
    [CG_PIDS] = {"pids", "--pids", {"pids.max"}, "pids.events", "max"},
    [CG_CPU] = {"cpu", "--cpus", {"cpu.cfs_period_us", "cpu.cfs_quota_us"}, NULL, NULL},
};

/* The value of each file of controller c for limits l. */
static long long file_value(const struct jail_limits *l, size_t c, size_t file)
{
	switch (c) {
	case CG_MEMORY:
		return l->memory;
	case CG_PIDS:
		return l->pids;
	default: /* a period of 100 ms, and the share of it the box may run */
		return file == 0 ? 100000 : l->cpu_milli * 100;
	}
}

static int64_t limit_of(const struct jail_limits *l, size_t c)
{
	return c == CG_MEMORY ? l->memory : c == CG_PIDS ? l->pids : l->cpu_milli;
}

/* Where controller `name` is mounted as cgroup v1 and our cgroup in it. Caller frees. */
static char *find_base(const char *name)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[1024], *own = NULL, *base = NULL;
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup "), *opts, *tok, *save = NULL;

		if (!sep || sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1)
			continue;
		opts = strrchr(sep, ' ') + 1;
		opts[strcspn(opts, "\n")] = '\0';
		for (tok = strtok_r(opts, ",", &save); tok && !found;
		     tok = strtok_r(NULL, ",", &save))
			found = !strcmp(tok, name);
	}
	if (f)
		fclose(f);
	f = found ? fopen("/proc/self/cgroup", "re") : NULL;
	while (f && !own && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *tok, *save;

		if (!c2)
			continue;
		*c2 = '\0';
		for (tok = strtok_r(c1 + 1, ",", &save); tok && !own;
		     tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, name))
				own = c2 + 1;
	}
	if (own) {
		own[strcspn(own, "\n")] = '\0';
		base = util_asprintf("%s%s", mnt, strcmp(own, "/") ? own : "");
	}
	if (f)
		fclose(f);
	return base;
}

/* Where a cgroup for controller c can be made: 0 and *base, or -errno with a message. */
static int usable_base(size_t c, char **base)
{
	char *b = find_base(controllers[c].name), *probe = NULL;
	int rc = b ? 0 : jail_cg2_base(controllers[c].name, controllers[c].option, &b);

	/* Not ours on cgroup v2, but a user manager runs: its scope, made when the box runs. */
	if (rc == -EACCES && jail_cg2_manager()) {
		util_err_clear();
		*base = strdup(JAIL_CG_SCOPE);
		return *base ? 0 : util_err(-ENOMEM, "out of memory");
	}
	probe = b ? util_path_join(b, "cgroup.procs") : NULL;
	if (rc == 0 && (access(b, W_OK) < 0 || !probe || access(probe, F_OK) < 0))
		rc = util_err(-EACCES,
			      "%s: cannot make a cgroup in %s (%s; run as root, or delegate "
			      "that cgroup to this user)",
			      controllers[c].option, b, strerror(errno));
	free(probe);
	if (rc < 0)
		free(b), b = NULL;
	*base = b;
	return rc;
}

int jail_box_set_limits(struct jail_box *b, const struct jail_limits *l)
{
	int rc = b->finished ? util_err(-EBUSY, "jail: the box is already finished") : 0;
	struct jail_limits want = *l;
	struct jail_budget bud;

	for (size_t c = 0; c < ARB_ARRAY_LEN(controllers) && rc == 0; c++) {
		char *base = NULL;

		free(b->cg_base[c]);
		b->cg_base[c] = NULL;
		if (!limit_of(l, c))
			continue;
		rc = usable_base(c, &base);
		/* Without a cgroup, --pids is RLIMIT_NPROC alone (budget.c); not for root. */
		if (rc < 0 && c == CG_PIDS && geteuid() != 0) {
			util_err_clear();
			rc = 0;
		}
		b->cg_base[c] = base;
	}
	b->pids_default = false;
	if (rc == 0 && l->pids) {
		char n[24];

		snprintf(n, sizeof(n), "%lld", (long long)l->pids);
		rc = jail_box_add_init_hook(b, JAIL_NPROC_HOOK, n);
	}
	if (rc < 0 || l->pids)
		goto out;
	/* No --pids: the default budget, also as pids.max where this host gives a cgroup. */
	if (usable_base(CG_PIDS, &b->cg_base[CG_PIDS]) < 0) {
		util_err_clear();
		goto out;
	}
	b->limits.pids = 0;
	rc = jail_budget_resolve(b, &bud);
	want.pids = bud.nproc;
	b->pids_default = true;
out:
	if (rc == 0)
		b->limits = want;
	return rc;
}

bool jail_cgroups_pids(const struct jail_box *b)
{
	return b->cg_base[CG_PIDS] != NULL;
}

void jail_cgroups_clear(struct jail_cgroups *cg)
{
	for (size_t c = 0; c < ARB_ARRAY_LEN(cg->dir); c++) {
		/* Empty once the box's pid namespace is gone; the kernel may lag a moment. */
		for (int i = 0; cg->dir[c] && i < 50 && rmdir(cg->dir[c]) < 0 && errno == EBUSY;
		     i++)
			usleep(20000);
		free(cg->dir[c]);
		free(cg->procs[c]);
	}
	*cg = (struct jail_cgroups){0};
}

int jail_cg_write(const char *dir, const char *file, const char *text, bool optional)
{
	char *path = util_path_join(dir, file);
	int fd = path ? open(path, O_WRONLY | O_CLOEXEC) : -1, rc = 0;

	if (!path)
		rc = util_err(-ENOMEM, "out of memory");
	else if (fd < 0 && optional && errno == ENOENT)
		rc = 0;
	else if (fd < 0 || write(fd, text, strlen(text)) < 0)
		rc = util_err(-errno, "cannot write %s to %s: %s", text, path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

static int write_value(const char *dir, const char *file, long long v, bool optional)
{
	char text[32];

	snprintf(text, sizeof(text), "%lld", v);
	return jail_cg_write(dir, file, text, optional);
}

/*
 * Removes the empty cgroups of boxes whose shell is gone (killed before it could). Only those
 * older than STALE_AGE_S: a shell in another pid namespace sharing this cgroup tree (a
 * container, a test system) has a pid that looks dead here, and its box's cgroup is empty
 * between its mkdir and the box joining it; taking it then made that box fail to start.
 */
#define STALE_AGE_S 60
static void remove_stale(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;
	time_t now = time(NULL);

	while (d && (de = readdir(d))) {
		char *end = NULL, *path;
		struct stat st;
		long pid;

		if (!util_str_has_prefix(de->d_name, "arborinth-"))
			continue;
		pid = strtol(de->d_name + strlen("arborinth-"), &end, 10);
		/* arborinth-PID, or arborinth-PID.TID for a box run by another thread */
		if (pid <= 0 || (*end && *end != '.') || util_pid_alive((pid_t)pid))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtime < STALE_AGE_S)
			continue;
		path = util_path_join(base, de->d_name);
		if (path)
			rmdir(path); /* still in use: left alone */
		free(path);
	}
	if (d)
		closedir(d);
}

int jail_cgroups_create(const struct jail_box *b, struct jail_cgroups *cg)
{
	pid_t tid = gettid(); /* one box at a time per thread */
	char *scoped = NULL;
	int rc = 0;

	*cg = (struct jail_cgroups){0};
	for (size_t c = 0; c < ARB_ARRAY_LEN(controllers) && rc == 0; c++) {
		const char *base = b->cg_base[c];

		if (!limit_of(&b->limits, c) || !base)
			continue;
		/* The user manager's scope (cgscope.c); once in it, our parent is the scope. */
		if (!strcmp(base, JAIL_CG_SCOPE)) {
			free(scoped);
			scoped = NULL;
			rc = jail_cg2_scope_base(controllers[c].name, controllers[c].option,
						 &scoped);
			/* As in jail_box_set_limits: RLIMIT_NPROC alone, but not for root. */
			if (rc < 0 && c == CG_PIDS && (b->pids_default || geteuid() != 0)) {
				util_err_clear();
				rc = 0;
				continue;
			}
			if (rc < 0)
				break;
			base = scoped;
		}
		bool v2 = jail_cg2_is(base);

		if (v2 &&
		    (rc = jail_cg2_prepare(base, controllers[c].name, controllers[c].option)) < 0)
			break;
		remove_stale(base);
		cg->dir[c] = tid == getpid() ? util_asprintf("%s/arborinth-%d", base, (int)tid)
					     : util_asprintf("%s/arborinth-%d.%d", base,
							     (int)getpid(), (int)tid);
		cg->procs[c] = cg->dir[c] ? util_path_join(cg->dir[c], "cgroup.procs") : NULL;
		if (!cg->procs[c]) {
			rc = util_err(-ENOMEM, "out of memory");
			break;
		}
		if (mkdir(cg->dir[c], 0755) < 0 && errno != EEXIST) {
			rc = util_err(-errno, "%s: cannot create %s: %s", controllers[c].option,
				      cg->dir[c], strerror(errno));
			free(cg->dir[c]), cg->dir[c] = NULL;
			break;
		}
		if (c == CG_PIDS)
			cg->pids_max = b->limits.pids;
		if (v2)
			rc = jail_cg2_write_limit(cg->dir[c], controllers[c].name,
						  limit_of(&b->limits, c));
		for (size_t f = 0; !v2 && f < 3 && controllers[c].files[f] && rc == 0; f++)
			rc = write_value(cg->dir[c], controllers[c].files[f],
					 file_value(&b->limits, c, f), f > 0 && c == CG_MEMORY);
	}
	free(scoped);
	if (rc < 0)
		jail_cgroups_clear(cg);
	return rc;
}

void jail_cgroups_enter(const struct jail_cgroups *cg)
{
	for (size_t c = 0; c < ARB_ARRAY_LEN(cg->procs); c++) {
		int fd = cg->procs[c] ? open(cg->procs[c], O_WRONLY | O_CLOEXEC) : -2;

		if (fd == -2)
			continue;
		if (fd < 0 || write(fd, "0", 1) != 1) {
			fprintf(stderr, "arborinth: cannot join the box's cgroup %s: %s\n",
				cg->procs[c], strerror(errno));
			_exit(JAIL_EXIT_SETUP);
		}
		close(fd);
	}
}

/* The number after `key` on its own line of dir/file, or 0. */
static int64_t counter(const char *dir, const char *file, const char *key)
{
	char *path = util_path_join(dir, file), *text = NULL;
	size_t len, klen = strlen(key);
	int64_t n = 0;

	if (path && util_read_file(path, &text, &len) == 0)
		for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			if (!strncmp(l, key, klen) && l[klen] == ' ')
				n = strtoll(l + klen + 1, NULL, 10);
	free(text);
	free(path);
	return n;
}

void jail_cgroups_stats(const struct jail_cgroups *cg, struct jail_run_stats *st)
{
	*st = (struct jail_run_stats){0};
	if (cg->dir[CG_MEMORY])
		st->oom_kills =
		    counter(cg->dir[CG_MEMORY],
			    jail_cg2_is(cg->dir[CG_MEMORY]) ? "memory.events"
							    : controllers[CG_MEMORY].events,
			    controllers[CG_MEMORY].counter);
	st->pids_limit = cg->pids_max;
	if (cg->dir[CG_PIDS])
		st->forks_refused = counter(cg->dir[CG_PIDS], controllers[CG_PIDS].events,
					    controllers[CG_PIDS].counter);
}

int jail_limits_probe(char *why, size_t len)
{
	size_t used = 0;
	int rc = 0;

	why[0] = '\0';
	for (size_t c = 0; c < ARB_ARRAY_LEN(controllers); c++) {
		char *base = find_base(controllers[c].name), *v2 = NULL;
		const char *state = NULL;
		int n, e;

		if (base)
			state = access(base, W_OK) < 0 ? "not writable on cgroup v1"
						       : "can be placed (cgroup v1)";
		else if ((e = jail_cg2_base(controllers[c].name, controllers[c].option, &v2)) == 0)
			state = "can be placed (a cgroup v2 subtree this user may write)";
		else if (e == -EACCES && jail_cg2_manager())
			state = "can be placed (a scope of the systemd user manager)";
		else if (e == -EACCES)
			state = "no writable cgroup and no systemd user manager";
		else
			state = "the controller is not there";
		util_err_clear();
		if (strncmp(state, "can be placed", 13))
			rc = -ENOTSUP;
		n = snprintf(why + used, len - used, "%s%s %s", used ? ", " : "",
			     controllers[c].option, state);
		if (n > 0 && (size_t)n < len - used)
			used += (size_t)n;
		free(base);
		free(v2);
	}
	return rc;
}
