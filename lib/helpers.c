/*
 * lib/helpers.c: where the library finds its helper programs, arborinth_fs (serves a view)
 * and arborinth_box_init (pid 1 in a box), when the process using it is not arborinth: the
 * folder in $ARBORINTH_HELPER_DIR, else the running program's own folder (the command line),
 * else the folders the build recorded (the install's bin, then the build tree's cli/). The
 * first that holds both wins. The command line has its own rule (lib_helpers_from_program).
 */
#include "lib/lib_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"

#ifndef ARB_HELPER_DIRS
#define ARB_HELPER_DIRS ""
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char found[PATH_MAX];
static bool from_program;

void lib_helpers_from_program(void)
{
	from_program = true;
}

static bool has_helpers(const char *dir)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (!dir || !*dir || (size_t)snprintf(a, sizeof(a), "%s/arborinth_fs", dir) >= sizeof(a) ||
	    (size_t)snprintf(b, sizeof(b), "%s/arborinth_box_init", dir) >= sizeof(b))
		return false;
	return access(a, X_OK) == 0 && access(b, X_OK) == 0;
}

static void take(const char *dir)
{
	if (!found[0] && has_helpers(dir))
		snprintf(found, sizeof(found), "%s", dir);
}

static void look(void)
{
	char self[PATH_MAX], *slash, *dirs, *save = NULL;

	if (from_program)
		return;
	take(getenv("ARBORINTH_HELPER_DIR"));
	if (realpath("/proc/self/exe", self) && (slash = strrchr(self, '/'))) {
		*slash = '\0';
		take(self);
	}
	dirs = strdup(ARB_HELPER_DIRS);
	for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
		take(d);
	free(dirs);
	if (found[0]) {
		char *exe = util_path_join(found, "arborinth_fs");

		if (exe)
			core_set_daemon_exe(exe);
		free(exe);
	}
}

const char *lib_helper_dir(void)
{
	pthread_once(&once, look);
	return found[0] ? found : NULL;
}
