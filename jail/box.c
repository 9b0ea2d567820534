/*
 * jail/box.c: struct jail_box, the one object a box is described by: the default profile
 * (mounts, guards, environment), user additions, and the finished bwrap argv that both
 * --explain and the launch read.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

void jail_box_free(struct jail_box *b)
{
	if (!b)
		return;
	free(b->ws_name);
	free(b->ws_root);
	free(b->workdir);
	free(b->tmp);
	free(b->cache_src);
	free(b->home_src);
	free(b->origin_root);
	free(b->origin_objects);
	free(b->objects_view);
	free(b->origin_store);
	free(b->state_dir);
	free(b->home);
	free(b->home_real);
	free(b->cache_dest);
	free(b->runtime_dir);
	free(b->bwrap);
	free(b->box_init);
	for (size_t i = 0; i < ARB_ARRAY_LEN(b->cg_base); i++)
		free(b->cg_base[i]);
	jail_strv_clear(&b->host);
	jail_mounts_clear(&b->mounts);
	jail_strv_clear(&b->env);
	jail_strv_clear(&b->withheld);
	jail_strv_clear(&b->notes);
	jail_strv_clear(&b->inputs);
	jail_strv_clear(&b->hooks);
	jail_strv_clear(&b->command);
	jail_strv_clear(&b->hidden);
	jail_strv_clear(&b->argv);
	free(b);
}

char *const *jail_box_argv(const struct jail_box *b)
{
	return b->argv.v;
}

char *const *jail_box_envp(const struct jail_box *b)
{
	return b->env.v;
}

const struct jail_mounts *jail_box_mounts(const struct jail_box *b)
{
	return &b->mounts;
}

/* A normalised copy of an absolute configured path; `what` names it in the message. */
static int norm_cfg(const char *path, const char *what, char **out)
{
	int rc;

	if (!path || path[0] != '/')
		return util_err(-EINVAL, "jail: %s is not an absolute path", what);
	rc = jail_path_norm(path, out);
	if (rc == -EINVAL)
		return util_err(rc, "jail: %s '%s' contains '.' or '..'", what, path);
	return rc == -ENOMEM ? util_err(rc, "out of memory") : rc;
}

/* Searches PATH (from env, else a default) for an executable `name`. NULL when absent. */
static char *find_program(char *const *env, const char *name)
{
	const char *path = jail_env_get(env, "PATH");
	char *dirs = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *found = NULL;

	if (strchr(name, '/')) {
		free(dirs);
		return access(name, X_OK) == 0 ? realpath(name, NULL) : NULL;
	}
	for (char *save = NULL, *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *full = d[0] == '/' ? util_path_join(d, name) : NULL;

		if (full && access(full, X_OK) == 0)
			found = full;
		else
			free(full);
	}
	free(dirs);
	return found;
}

static int resolve_home(struct jail_box *b)
{
	const char *home = jail_env_get(b->host.v, "HOME");
	struct passwd *pw;

	if (!home || home[0] != '/') {
		pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home || home[0] != '/')
		return util_err(-EINVAL, "jail: no absolute $HOME to mask");
	if (jail_path_norm(home, &b->home) < 0 || !strcmp(b->home, "/"))
		return util_err(-EINVAL,
				"jail: cannot mask $HOME '%s' (it must be an absolute "
				"path other than / without '.' or '..')",
				home);
	b->home_real = jail_path_real(b->home);
	return b->home_real ? 0 : util_err(-ENOMEM, "out of memory");
}

static int resolve_dirs(struct jail_box *b)
{
	const char *xdg = jail_env_get(b->host.v, "XDG_CACHE_HOME");
	char *norm = NULL;

	/* A cache at or above $HOME would unmask it: fall back to the default. */
	if (xdg && xdg[0] == '/' && jail_path_norm(xdg, &norm) == 0 &&
	    !util_path_under(b->home, norm))
		b->cache_dest = norm;
	else
		free(norm), b->cache_dest = util_path_join(b->home, ".cache");
	norm = NULL;
	xdg = jail_env_get(b->host.v, "XDG_RUNTIME_DIR");
	if (xdg && xdg[0] == '/' && jail_path_norm(xdg, &norm) == 0 &&
	    util_path_under(norm, "/run") && strcmp(norm, "/run"))
		b->runtime_dir = norm;
	else
		free(norm), b->runtime_dir = util_asprintf("/run/user/%u", (unsigned)getuid());
	return b->cache_dest && b->runtime_dir ? 0 : util_err(-ENOMEM, "out of memory");
}

/* The lean arborinth_box_init beside the running binary when there is one, else ourselves. */
static char *find_box_init(const struct jail_box_config *cfg)
{
	char self[PATH_MAX], *lean, *slash;

	if (cfg->box_init)
		return realpath(cfg->box_init, NULL);
	if (!realpath("/proc/self/exe", self))
		return NULL;
	slash = strrchr(self, '/');
	lean = util_asprintf("%.*s/arborinth_box_init", (int)(slash - self), self);
	if (lean && access(lean, X_OK) == 0)
		return lean;
	free(lean);
	return strdup(self);
}

static int resolve_programs(struct jail_box *b, const struct jail_box_config *cfg)
{
	b->bwrap = find_program(b->host.v, cfg->bwrap ? cfg->bwrap : "bwrap");
	if (!b->bwrap)
		return util_err(-ENOENT,
				"jail: %s not found on PATH (install bubblewrap, or run "
				"with --jail none for no isolation)",
				cfg->bwrap ? cfg->bwrap : "bwrap");
	b->box_init = find_box_init(cfg);
	if (!b->box_init)
		return util_err(-ENOENT, "jail: cannot find the box-init program: %s",
				strerror(errno));
	return 0;
}

static int copy_config(struct jail_box *b, const struct jail_box_config *cfg)
{
	static const char *const names[] = {"workspace root", "workdir",  "tmp",
					    "cache",	      "home",	  "origin root",
					    "origin objects", "state dir"};
	const char *in[] = {cfg->ws_root,	 cfg->workdir,	cfg->tmp,
			    cfg->cache,		 cfg->home,	cfg->origin_root,
			    cfg->origin_objects, cfg->state_dir};
	char **out[] = {&b->ws_root,	    &b->workdir,  &b->tmp,
			&b->cache_src,	    &b->home_src, &b->origin_root,
			&b->origin_objects, &b->state_dir};
	int rc = 0;

	b->ws_name = strdup(cfg->ws_name ? cfg->ws_name : "");
	if (!b->ws_name)
		return util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; i < ARB_ARRAY_LEN(in) && rc == 0; i++)
		rc = norm_cfg(in[i], names[i], out[i]);
	if (rc == 0)
		rc = norm_cfg(cfg->objects_view ? cfg->objects_view : cfg->origin_objects,
			      "objects view", &b->objects_view);
	if (rc == 0 && cfg->origin_store)
		rc = norm_cfg(cfg->origin_store, "origin store", &b->origin_store);
	for (char *const *e = cfg->host_env ? cfg->host_env : environ; rc == 0 && *e; e++)
		jail_strv_push(&b->host, *e);
	return rc < 0 ? rc : jail_strv_ok(&b->host);
}

int jail_box_new(struct jail_box **out, const struct jail_box_config *cfg)
{
	struct jail_box *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b)
		return util_err(-ENOMEM, "out of memory");
	b->net = cfg->net;
	b->stdio[0] = b->stdio[1] = b->stdio[2] = -1;
	rc = copy_config(b, cfg);
	if (rc == 0)
		rc = resolve_home(b);
	if (rc == 0)
		rc = resolve_dirs(b);
	if (rc == 0)
		rc = resolve_programs(b, cfg);
	if (rc == 0)
		rc = jail_box_defaults(b);
	if (rc == 0)
		rc = jail_box_env_defaults(b);
	if (rc == 0 && !cfg->no_tool_managers)
		rc = jail_box_tools(b);
	else if (rc == 0)
		jail_strv_push(&b->notes, "tool managers on PATH get only their PATH entries "
					  "mounted (tool-manager mounts turned off)");
	if (rc < 0) {
		jail_box_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

static int check_open(const struct jail_box *b)
{
	return b->finished ? util_err(-EBUSY, "jail: the box is already finished") : 0;
}

int jail_box_add_mount(struct jail_box *b, const char *spec)
{
	int rc = check_open(b);

	return rc < 0 ? rc : jail_mounts_add_user(&b->mounts, spec);
}

int jail_box_add_default_mount(struct jail_box *b, enum jail_mount_type type, const char *src,
			       const char *dest, const char *why)
{
	return jail_box_add(b, type, JAIL_FROM_DEFAULT, 0, 0, src, dest, NULL, why);
}

int jail_box_add_init_hook(struct jail_box *b, const char *name, const char *arg)
{
	int rc = check_open(b);

	if (rc < 0)
		return rc;
	if (!name[0] || name[0] == '-' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name))
		return util_err(-EINVAL, "jail: bad box-init hook name '%s'", name);
	jail_strv_pushf(&b->hooks, "--%s", name);
	jail_strv_push(&b->hooks, arg);
	return jail_strv_ok(&b->hooks);
}

int jail_box_set_stdio(struct jail_box *b, const int stdio[3])
{
	int rc = check_open(b);

	if (rc < 0)
		return rc;
	for (int i = 0; i < 3; i++)
		b->stdio[i] = stdio[i];
	return 0;
}

int jail_box_set_timeout(struct jail_box *b, int64_t ms)
{
	int rc = check_open(b);

	if (rc == 0 && ms < 0)
		rc = util_err(-EINVAL, "jail: a negative timeout");
	if (rc == 0)
		b->timeout_ms = ms;
	return rc;
}

int jail_box_set_command(struct jail_box *b, char *const argv[])
{
	int rc = check_open(b);

	if (rc < 0)
		return rc;
	if (!argv || !argv[0] || !argv[0][0])
		return util_err(-EINVAL, "jail: no command to run");
	jail_strv_clear(&b->command);
	for (; *argv; argv++)
		jail_strv_push(&b->command, *argv);
	return jail_strv_ok(&b->command);
}

static void build_argv(struct jail_box *b)
{
	struct jail_strv *a = &b->argv;

	jail_strv_push(a, b->bwrap);
	jail_strv_push(a, "--unshare-user");
	jail_strv_push(a, "--unshare-ipc");
	jail_strv_push(a, "--unshare-pid");
	jail_strv_push(a, "--unshare-uts");
	jail_strv_push(a, "--unshare-cgroup");
	if (!b->net)
		jail_strv_push(a, "--unshare-net");
	jail_strv_push(a, "--disable-userns");
	jail_strv_push(a, "--cap-drop");
	jail_strv_push(a, "ALL");
	jail_strv_push(a, "--die-with-parent");
	jail_strv_push(a, "--as-pid-1");
	jail_strv_push(a, "--hostname");
	jail_strv_push(a, "arborinth");
	jail_mounts_args(&b->mounts, a);
	jail_strv_push(a, "--chdir");
	jail_strv_push(a, b->workdir);
	jail_strv_push(a, "--seccomp");
	jail_strv_pushf(a, "%d", JAIL_FD_SECCOMP);
	jail_strv_push(a, "--info-fd");
	jail_strv_pushf(a, "%d", JAIL_FD_INFO);
	jail_strv_push(a, "--");
	jail_init_argv(a, b->init_path, JAIL_FD_READY, JAIL_FD_GO, &b->hooks, &b->command);
}

/*
 * box-init runs from its host path when the box shows that path as the host has it (read-only,
 * through a bind of a system folder at its own path with nothing mounted over it): one bind
 * fewer, one read of the mount table less for bwrap. Else it is bound at JAIL_BOX_INIT_PATH.
 */
static void place_box_init(struct jail_box *b)
{
	const struct jail_mounts *m = &b->mounts;
	const struct jail_mount *bound = jail_mounts_find(m, JAIL_BOX_INIT_PATH);

	b->init_path = JAIL_BOX_INIT_PATH;
	if (!bound || bound->origin != JAIL_FROM_DEFAULT || !bound->src ||
	    strcmp(bound->src, b->box_init) || !jail_box_shows(b, b->box_init))
		return;
	jail_mounts_drop(&b->mounts, JAIL_BOX_INIT_PATH);
	b->init_path = b->box_init;
	jail_strv_pushf(&b->notes,
			"box-init runs from %s, which the box shows read-only (not bound "
			"at " JAIL_BOX_INIT_PATH ")",
			b->box_init);
}

int jail_box_finish(struct jail_box *b)
{
	int rc = check_open(b);

	if (rc < 0)
		return rc;
	if (!b->command.n)
		return util_err(-EINVAL, "jail: no command to run");
	rc = jail_box_overlays_prepare(b);
	if (rc == 0)
		rc = jail_box_walls(b);
	if (rc < 0)
		return rc;
	jail_mounts_sort(&b->mounts);
	place_box_init(b);
	rc = jail_strv_ok(&b->notes) ?: jail_strv_ok(&b->inputs);
	if (rc == 0)
		rc = jail_mounts_check_links(&b->mounts);
	if (rc == 0)
		rc = jail_mounts_check_dests(&b->mounts);
	if (rc < 0)
		return rc;
	rc = jail_box_env_finish(b);
	if (rc < 0)
		return rc;
	jail_strv_clear(&b->argv);
	build_argv(b);
	rc = jail_strv_ok(&b->argv);
	if (rc == 0)
		b->finished = true;
	return rc;
}
