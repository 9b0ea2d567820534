/*
 * jail/cgscope.c: the second route to cgroup v2 limits, for a user whose own cgroup's parent
 * is not writable (a login session's scope) but whose systemd user manager runs. We ask that
 * manager over D-Bus (sd-bus; its private socket $XDG_RUNTIME_DIR/systemd/private, else the
 * user bus) for a transient scope with Delegate=yes holding this process, as
 * `systemd-run --user --scope -p Delegate=yes` does for itself, and wait for the job. The
 * delegated scope is ours to write: cgroup2.c moves us into a leaf of it ("supervisor"), so
 * that the scope holds no process of its own and can hand controllers down, and places each
 * box beside that leaf as in any delegated subtree. On a systemd host the user manager
 * asks the system manager to move a process it may not move itself; the scope ends when this
 * process does (CollectMode=inactive-or-failed).
 *
 * libsystemd is opened (dlopen) on the first scope, not linked: it brings seven libraries
 * (libgcrypt, the compressors, ...) that every arborinth process would otherwise load at start.
 * A host without it has no user manager to ask either; that is said in the refusal.
 */
#include "jail/box_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

/* The sd-bus functions used here, from libsystemd.so.0 (open_sdbus). */
#define SDBUS_FUNCTIONS(X)                                                                         \
	X(sd_bus_new)                                                                              \
	X(sd_bus_set_address)                                                                      \
	X(sd_bus_start)                                                                            \
	X(sd_bus_open_user)                                                                        \
	X(sd_bus_flush_close_unref)                                                                \
	X(sd_bus_match_signal)                                                                     \
	X(sd_bus_call_method)                                                                      \
	X(sd_bus_call)                                                                             \
	X(sd_bus_process)                                                                          \
	X(sd_bus_wait)                                                                             \
	X(sd_bus_message_new_method_call)                                                          \
	X(sd_bus_message_append)                                                                   \
	X(sd_bus_message_read)                                                                     \
	X(sd_bus_message_unref)                                                                    \
	X(sd_bus_error_free)

static struct sdbus {
#define SDBUS_FIELD(name) __typeof__(name) *name;
	SDBUS_FUNCTIONS(SDBUS_FIELD)
#undef SDBUS_FIELD
} sd;

/* libsystemd's functions into sd: 0, or -ENOSYS with a message naming option. */
static int open_sdbus(const char *option)
{
	void *h = sd.sd_bus_error_free ? NULL : dlopen("libsystemd.so.0", RTLD_LAZY | RTLD_LOCAL);
	struct sdbus got;
	bool all = true;

	if (sd.sd_bus_error_free)
		return 0;
	if (!h)
		return util_err(-ENOSYS, "%s: cannot ask the systemd user manager for a scope: %s",
				option, dlerror());
#define SDBUS_LOAD(name) all = all && (got.name = (__typeof__(name) *)dlsym(h, #name)) != NULL;
	SDBUS_FUNCTIONS(SDBUS_LOAD)
#undef SDBUS_LOAD
	if (!all) {
		dlclose(h);
		return util_err(-ENOSYS, "%s: libsystemd.so.0 lacks sd-bus functions", option);
	}
	sd = got; /* kept open for the rest of the process */
	return 0;
}

#define SCOPE_WAIT_US (15 * 1000000ULL) /* the job may wait for the system manager */

/* $XDG_RUNTIME_DIR/NAME when it is a socket of ours (caller frees), else NULL. */
static char *runtime_socket(const char *name)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	char *path = dir && *dir == '/'
			 ? util_path_join(dir, name)
			 : util_asprintf("/run/user/%u/%s", (unsigned)geteuid(), name);
	struct stat st;

	if (path && (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()))
		free(path), path = NULL;
	return path;
}

bool jail_cg2_manager(void)
{
	char *priv = runtime_socket("systemd/private"), *bus = priv ? NULL : runtime_socket("bus");
	bool found = priv || bus;

	free(priv);
	free(bus);
	return found;
}

/* "unix:path=" with the path escaped as D-Bus addresses want it (caller frees). */
static char *address_of(const char *path)
{
	size_t n = strlen(path);
	char *out = malloc(strlen("unix:path=") + 3 * n + 1), *p;

	if (!out)
		return NULL;
	p = out + snprintf(out, 11, "unix:path=");
	for (const unsigned char *s = (const unsigned char *)path; *s; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("/._-", *s))
			*p++ = (char)*s;
		else
			p += snprintf(p, 4, "%%%02x", *s);
	*p = '\0';
	return out;
}

/* A connection to the user's manager: its private socket, else the user bus. */
static int manager_open(sd_bus **bus)
{
	char *priv = runtime_socket("systemd/private"), *addr = priv ? address_of(priv) : NULL;
	int rc;

	*bus = NULL;
	if (addr) {
		rc = sd.sd_bus_new(bus);
		if (rc >= 0)
			rc = sd.sd_bus_set_address(*bus, addr);
		if (rc >= 0)
			rc = sd.sd_bus_start(*bus);
		if (rc < 0)
			*bus = sd.sd_bus_flush_close_unref(*bus);
	}
	if (!*bus)
		rc = sd.sd_bus_open_user(bus);
	free(addr);
	free(priv);
	return rc < 0 ? rc : 0;
}

struct job_wait {
	const char *unit;
	char result[32];
};

/* JobRemoved(u id, o job, s unit, s result): the result of our scope's start job. */
static int on_job_removed(sd_bus_message *m, void *data, sd_bus_error *error)
{
	struct job_wait *w = data;
	const char *path, *unit, *result;
	uint32_t id;

	(void)error;
	if (sd.sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) >= 0 &&
	    !strcmp(unit, w->unit))
		snprintf(w->result, sizeof(w->result), "%s", result);
	return 0;
}

/* StartTransientUnit(name, "fail", properties, no auxiliary units). */
static int start_scope(sd_bus *bus, const char *unit, sd_bus_error *error)
{
	sd_bus_message *m = NULL, *reply = NULL;
	int rc = sd.sd_bus_message_new_method_call(
	    bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
	    "org.freedesktop.systemd1.Manager", "StartTransientUnit");

	if (rc >= 0)
		rc = sd.sd_bus_message_append(m, "ss", unit, "fail");
	if (rc >= 0)
		rc = sd.sd_bus_message_append(m, "a(sv)", 4, "Description", "s",
					      "arborinth: the boxes of one command", "PIDs", "au",
					      1, (uint32_t)getpid(), "Delegate", "b", 1,
					      "CollectMode", "s", "inactive-or-failed");
	if (rc >= 0)
		rc = sd.sd_bus_message_append(m, "a(sa(sv))", 0);
	if (rc >= 0)
		rc = sd.sd_bus_call(bus, m, 0, error, &reply);
	sd.sd_bus_message_unref(reply);
	sd.sd_bus_message_unref(m);
	return rc;
}

/* Whether our cgroup on the unified hierarchy ends in "/unit". */
static bool in_unit(const char *unit)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	size_t n = strlen(unit);
	bool in = false;

	while (f && !in && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");

		in = !strncmp(line, "0::", 3) && len > n + 1 && line[len - n - 1] == '/' &&
		     !strncmp(line + len - n, unit, n);
	}
	if (f)
		fclose(f);
	return in;
}

int jail_cg2_scope(const char *option)
{
	struct job_wait w = {.result = ""};
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus *bus = NULL;
	char unit[96];
	struct timespec ts;
	uint64_t waited = 0;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(unit, sizeof(unit), "arborinth-%d-%lx.scope", (int)getpid(),
		 (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
	w.unit = unit;
	rc = open_sdbus(option);
	if (rc < 0)
		return rc;
	rc = manager_open(&bus);
	if (rc < 0) {
		rc = util_err(rc, "%s: cannot reach the systemd user manager: %s", option,
			      strerror(-rc));
		goto out;
	}
	/* Before the call, so that no JobRemoved escapes; Subscribe for the user bus. */
	rc = sd.sd_bus_match_signal(bus, NULL, "org.freedesktop.systemd1",
				    "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
				    "JobRemoved", on_job_removed, &w);
	if (rc >= 0)
		rc = sd.sd_bus_call_method(
		    bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
		    "org.freedesktop.systemd1.Manager", "Subscribe", &error, NULL, "");
	if (rc >= 0) {
		sd.sd_bus_error_free(&error);
		rc = start_scope(bus, unit, &error);
	}
	if (rc < 0) {
		rc = util_err(rc, "%s: the systemd user manager refused a scope for the box: %s",
			      option, error.message ? error.message : strerror(-rc));
		goto out;
	}
	while (!w.result[0] && waited < SCOPE_WAIT_US) {
		rc = sd.sd_bus_process(bus, NULL);
		if (rc < 0)
			break;
		if (rc == 0) {
			rc = sd.sd_bus_wait(bus, 100000);
			waited += 100000;
			if (rc < 0 && rc != -EINTR)
				break;
		}
	}
	if (strcmp(w.result, "done") || !in_unit(unit)) {
		rc = util_err(-EACCES,
			      "%s: the systemd user manager could not move this process into the "
			      "scope %s (%s; see journalctl --user -u %s)",
			      option, unit, w.result[0] ? w.result : "no answer", unit);
		goto out;
	}
	rc = 0;
out:
	sd.sd_bus_error_free(&error);
	if (bus)
		sd.sd_bus_flush_close_unref(bus);
	return rc;
}
