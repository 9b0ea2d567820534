/*
 * cli/plugin.c: plugins, git style. `arborinth NAME ARGS...` where NAME is no built-in runs
 * `arborinth-NAME` from PATH with ARGS (built-ins are looked up first, so a plugin can never
 * replace one). An unknown NAME lists the built-ins and the plugins found; a plugin that
 * fails is reported by name with its exit status, which is passed through.
 */
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PLUGIN_PREFIX "arborinth-"

static bool plugin_name_ok(const char *name)
{
	return name[0] && name[0] != '-' && !strchr(name, '/') && strlen(name) < 128;
}

/* The first executable PLUGIN_PREFIX name on PATH (caller frees), or NULL. */
static char *plugin_find(const char *name)
{
	char *file = util_asprintf(PLUGIN_PREFIX "%s", name);
	char *found = file ? util_which(file) : NULL;

	free(file);
	return found;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a, b, c" of the plugins on PATH (not shadowing built-ins), or "none". Caller frees. */
static char *plugin_list(void)
{
	const char *path = getenv("PATH");
	char *dirs = strdup(path ? path : ""), **names = NULL, *out = NULL;
	size_t n = 0, len = 1;

	for (char *save = NULL, *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d;
	     d = strtok_r(NULL, ":", &save)) {
		DIR *dir = d[0] == '/' ? opendir(d) : NULL;
		struct dirent *e;

		while (dir && (e = readdir(dir))) {
			const char *nm = e->d_name + strlen(PLUGIN_PREFIX);
			char **v;
			bool dup = false;

			if (strncmp(e->d_name, PLUGIN_PREFIX, strlen(PLUGIN_PREFIX)) ||
			    !plugin_name_ok(nm) || cli_cmd_find(cli_commands, nm))
				continue;
			for (size_t i = 0; i < n && !dup; i++)
				dup = !strcmp(names[i], nm);
			if (dup || !(v = realloc(names, (n + 1) * sizeof(*v))))
				continue;
			names = v;
			char *full = plugin_find(nm);

			if (full && (names[n] = strdup(nm)))
				len += strlen(names[n++]) + 2;
			free(full);
		}
		if (dir)
			closedir(dir);
	}
	free(dirs);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	out = calloc(1, len + 8);
	for (size_t i = 0, off = 0; out && i < n; i++)
		off += (size_t)snprintf(out + off, len + 8 - off, "%s%s", i ? ", " : "", names[i]);
	if (out && !n)
		snprintf(out, len + 8, "none");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return out;
}

int cli_plugin_run(const char *name, int argc, char **argv)
{
	char *exe = plugin_name_ok(name) ? plugin_find(name) : NULL;
	char builtins[1024] = "";
	size_t off = 0;
	pid_t pid;
	int st, status;

	if (!exe) {
		char *plugins = plugin_list();

		for (const struct cli_cmd *c = cli_commands; c->name; c++)
			if (c->summary)
				off += (size_t)snprintf(builtins + off, sizeof(builtins) - off,
							"%s%s", off ? ", " : "", c->name);
		status = cli_fail(CLI_USAGE,
				  "unknown command '%s' (built-in: %s; plugins on PATH: %s; a "
				  "plugin is an executable " PLUGIN_PREFIX "NAME on PATH)",
				  name, builtins, plugins ? plugins : "none");
		free(plugins);
		return status;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		free(exe);
		return cli_fail(CLI_ERR, "plugin %s: cannot fork: %s", name, strerror(errno));
	}
	if (pid == 0) {
		argv[0] = exe;
		execv(exe, argv);
		fprintf(stderr, "arborinth: plugin %s (%s): cannot run: %s\n", name, exe,
			strerror(errno));
		_exit(126);
	}
	/* Like a shell: the terminal's SIGINT/SIGQUIT reach the plugin, not us. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	status = util_wait_status_to_exit(st);
	if (WIFSIGNALED(st))
		fprintf(stderr, "arborinth: plugin %s (%s) was killed by signal %d\n", name, exe,
			WTERMSIG(st));
	else if (status != 0)
		fprintf(stderr, "arborinth: plugin %s (%s) failed with exit status %d\n", name, exe,
			status);
	free(exe);
	(void)argc;
	return status;
}
