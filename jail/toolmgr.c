/*
 * jail/toolmgr.c: what the tool managers on PATH need. A PATH entry under $HOME is mounted
 * read-only by itself (box_defaults.c), but a pyenv shim execs $PYENV_ROOT/libexec/pyenv and
 * a rustup proxy reads $RUSTUP_HOME/settings.toml and runs a toolchain from there. The table
 * below says, per manager, how its PATH entry is recognised (a marker file in the entry or an
 * ancestor, the manager's root), which paths it needs (mounted read-only when they exist)
 * and which variables tell it where they are. Nothing writable: the folders the mounts land
 * in belong to the workspace's home, so a manager's caches and downloads stay there.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * One tool manager. Templates may use {root} (the folder holding `marker`), {parent} (the
 * PATH entry's parent as written), {home} and {VAR} for a variable set earlier in `vars`.
 * A var "NAME=TEMPLATE" is set in the box; "NAME?=TEMPLATE" takes the host's value when the
 * host has one (an empty TEMPLATE: only then). `shims`: the folder of programs the manager
 * writes itself (`pyenv rehash`, `asdf reshim`): scripts that exec the manager, whose mounts
 * cover them, so a PATH entry that is this folder is not read program by program
 * (toolscan.c): pyenv's hundred-odd shims were 0.7 ms of every box start.
 */
struct toolmgr {
	const char *name;
	const char *marker; /* relative to the root: a file only this manager has */
	unsigned up;	    /* the root is the entry or an ancestor at most `up` levels up */
	const char *suffix; /* NULL, or how the root's path must end */
	const char *const *vars;
	const char *const *mounts;
	const char *shims; /* NULL, or the template of its shims folder */
};

#define LIST(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE	  ((const char *const[]){NULL})

static const struct toolmgr managers[] = {
    {"pyenv", "libexec/pyenv", 3, NULL, LIST("PYENV_ROOT={root}"),
     LIST("{root}/bin", "{root}/libexec", "{root}/plugins", "{root}/pyenv.d", "{root}/shims",
	  "{root}/versions", "{root}/version"),
     "{root}/shims"},
    /* The proxies in $CARGO_HOME/bin: not config.toml or credentials.toml (tokens). */
    {"rustup", "bin/rustup", 1, NULL,
     LIST("CARGO_HOME={root}", "RUSTUP_HOME?={home}/.rustup", "RUSTUP_TOOLCHAIN?="),
     LIST("{RUSTUP_HOME}/settings.toml", "{RUSTUP_HOME}/toolchains",
	  "{RUSTUP_HOME}/update-hashes")},
    /* A node's prefix: lib/node_modules (npm), never etc/npmrc (it may hold tokens). */
    {"nvm", "nvm.sh", 4, NULL, LIST("NVM_DIR={root}"), LIST("{parent}/lib")},
    {"fnm", "node-versions", 4, NULL, LIST("FNM_DIR={root}"), LIST("{parent}/lib")},
    {"volta", "bin/volta-shim", 1, NULL, LIST("VOLTA_HOME={root}"),
     LIST("{root}/tools/image", "{root}/tools/user", "{root}/tools/shared")},
    {"bun", "bin/bun", 1, "/.bun", LIST("BUN_INSTALL={root}"), LIST("{root}/install/global")},
    {"sdkman", "bin/sdkman-init.sh", 4, NULL, LIST("SDKMAN_DIR={root}", "JAVA_HOME?="),
     LIST("{parent}")},
    {"asdf", "installs", 1, "/.asdf", LIST("ASDF_DATA_DIR={root}"),
     LIST("{root}/bin", "{root}/lib", "{root}/asdf.sh", "{root}/installs", "{root}/plugins",
	  "{root}/shims", "{home}/.tool-versions"),
     "{root}/shims"},
    {"mise", "installs", 1, "/mise", LIST("MISE_DATA_DIR={root}"),
     LIST("{root}/installs", "{root}/plugins", "{root}/shims", "{home}/.tool-versions"),
     "{root}/shims"},
    {"go", "pkg/tool", 1, NULL, LIST("GOROOT={root}"), LIST("{root}")},
    {"gopath", "pkg/mod", 1, NULL, LIST("GOPATH={root}"), LIST("{root}/bin")},
    /* Any other install prefix (~/.local, a uv Python): its bin needs its lib. */
    {"prefix", "../lib", 0, NULL, NONE, LIST("{parent}/lib")},
};

/* Names and values templates refer to, for one PATH entry (owned copies). */
struct tvars {
	char *name[8], *value[8];
	size_t n;
};

static void tvars_clear(struct tvars *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->name[i]), free(t->value[i]);
	t->n = 0;
}

static int tvars_set(struct tvars *t, const char *name, size_t len, const char *value)
{
	if (t->n == ARB_ARRAY_LEN(t->value))
		return util_err(-E2BIG, "jail: too many tool-manager variables");
	t->name[t->n] = strndup(name, len);
	t->value[t->n] = strdup(value);
	if (!t->name[t->n] || !t->value[t->n]) {
		free(t->name[t->n]);
		free(t->value[t->n]);
		return util_err(-ENOMEM, "out of memory");
	}
	t->n++;
	return 0;
}

static const char *tvars_get(const struct tvars *t, const char *name, size_t len)
{
	for (size_t i = t->n; i-- > 0;)
		if (strlen(t->name[i]) == len && !strncmp(t->name[i], name, len))
			return t->value[i];
	return NULL;
}

/* tmpl with every {NAME} replaced. NULL on ENOMEM or an unknown name (a table bug). */
static char *expand(const char *tmpl, const struct tvars *t)
{
	char *out = strdup("");

	while (out && *tmpl) {
		const char *open = strchr(tmpl, '{'), *close = open ? strchr(open, '}') : NULL;
		const char *val = close ? tvars_get(t, open + 1, (size_t)(close - open - 1)) : "";
		char *next;

		if (!val) {
			free(out);
			return NULL;
		}
		next = util_asprintf("%s%.*s%s", out,
				     (int)(open ? open - tmpl : (long)strlen(tmpl)), tmpl, val);
		free(out);
		out = next;
		tmpl = close ? close + 1 : tmpl + strlen(tmpl);
	}
	return out;
}

char *jail_box_tilde(const struct jail_box *b, const char *path)
{
	if (util_path_under(path, b->home) && strcmp(path, b->home))
		return util_asprintf("~%s", path + strlen(b->home));
	return strdup(path);
}

/* Whether `dest` is already shown with its host content through a mount below $HOME. */
static bool covered(const struct jail_box *b, const char *dest, const char *real)
{
	const struct jail_mounts *m = &b->mounts;

	for (size_t i = 0; i < m->n; i++) {
		const struct jail_mount *x = &m->v[i];
		const char *rest = dest + strlen(x->dest);

		if (!x->src || !util_path_under(dest, x->dest) ||
		    !util_path_under(x->dest, b->home) || !strcmp(x->dest, b->home))
			continue;
		if (!strncmp(real, x->src, strlen(x->src)) && !strcmp(real + strlen(x->src), rest))
			return true;
	}
	return false;
}

/* Why `real` may not be shown, as a note, or NULL when it may. */
static char *refusal(const struct jail_box *b, const char *real)
{
	const struct jail_mount *c;
	char *secret = NULL, *why = NULL;
	struct stat st;

	if (!strcmp(real, b->home_real))
		return strdup("it is $HOME");
	if (util_secret_path(real, b->home_real, &secret) ||
	    (stat(real, &st) == 0 && S_ISDIR(st.st_mode) && util_secret_inside(real, &secret)))
		why = util_asprintf("it would expose credentials (%s)", secret);
	else if ((c = jail_box_path_conflict(b, real)))
		why = util_asprintf("it would expose %s (%s)", c->protects, c->why);
	free(secret);
	return why;
}

int jail_box_tool_mount(struct jail_box *b, const char *path, const char *why)
{
	char *norm = NULL, *real = NULL, *dest = NULL, *no = NULL, *w = NULL;
	const struct jail_mount *had;
	struct stat st;
	int rc = 0;

	if (path[0] != '/' || jail_path_norm(path, &norm) < 0)
		goto out;
	/*
	 * Mounted for another PATH entry of the same manager (pyenv's shims and bin): at dest,
	 * from the same resolved path, checked then; nothing to look at again.
	 */
	if (util_path_under(norm, b->home) && (had = jail_mounts_find(&b->mounts, norm)) &&
	    (had->flags & JAIL_MOUNT_TOOL))
		goto out;
	real = jail_path_real(norm);
	if (!real) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	/* Missing, or outside $HOME (the host is visible read-only already). */
	if (lstat(real, &st) < 0 || !util_path_under(real, b->home_real))
		goto out;
	dest = util_path_under(norm, b->home)
		   ? strdup(norm)
		   : util_asprintf("%s%s", b->home, real + strlen(b->home_real));
	if (!dest || (no = refusal(b, real))) {
		if (no)
			jail_strv_pushf(&b->notes, "%s not mounted for %s: %s", real, why, no);
		rc = dest ? jail_strv_ok(&b->notes) : util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (covered(b, dest, real) || jail_mounts_find(&b->mounts, dest))
		goto out; /* shown already, or something else is mounted there */
	w = util_asprintf("%s, read-only", why);
	rc = w ? jail_box_add(b, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT,
			      JAIL_MOUNT_REPLACEABLE | JAIL_MOUNT_TOOL, 0, real, dest, NULL, w)
	       : util_err(-ENOMEM, "out of memory");
out:
	free(w);
	free(no);
	free(dest);
	free(real);
	free(norm);
	return rc;
}

/* The manager's root for the entry's real path: the nearest ancestor holding the marker. */
static char *find_root(const struct jail_box *b, const struct toolmgr *tm, const char *real)
{
	char *dir = strdup(real);

	for (unsigned up = 0; dir && up <= tm->up; up++) {
		char *marker = util_path_join(dir, tm->marker), *slash;
		size_t len = strlen(dir), sl = tm->suffix ? strlen(tm->suffix) : 0;
		struct stat st;

		if (!util_path_under(dir, b->home_real) || !strcmp(dir, b->home_real)) {
			free(marker);
			break;
		}
		if (marker && lstat(marker, &st) == 0 &&
		    (!sl || (len > sl && !strcmp(dir + len - sl, tm->suffix)))) {
			free(marker);
			return dir;
		}
		free(marker);
		slash = strrchr(dir, '/');
		*slash = '\0';
	}
	free(dir);
	return NULL;
}

/* Sets tm's variables in the box (and in t for the mounts' templates). */
static int set_vars(struct jail_box *b, const struct toolmgr *tm, struct tvars *t, const char *why)
{
	int rc = 0;

	for (const char *const *v = tm->vars; *v && rc == 0; v++) {
		const char *eq = strchr(*v, '='), *host = NULL;
		size_t len = (size_t)(eq - *v) - (eq[-1] == '?');
		char *name = strndup(*v, len), *value = NULL;

		if (name && eq[-1] == '?')
			host = jail_env_get(b->host.v, name);
		value = host && *host ? strdup(host) : expand(eq + 1, t);
		if (!name || !value)
			rc = util_err(-ENOMEM, "out of memory");
		else if (*value) {
			const char *cur = jail_env_get(b->env.v, name);

			/* Another entry of the same manager said it already. */
			if (!cur || strcmp(cur, value))
				jail_strv_pushf(&b->notes, "%s=%s set for %s", name, value, why);
			jail_env_set(&b->env, name, value);
			rc = tvars_set(t, name, len, value);
		}
		free(name);
		free(value);
	}
	if (rc == 0 && (jail_strv_ok(&b->env) < 0 || jail_strv_ok(&b->notes) < 0))
		rc = util_err(-ENOMEM, "out of memory");
	return rc;
}

/*
 * The entry's manager (the first whose marker is found), its variables and mounts; *shims:
 * the entry (resolved: real) is that manager's shims folder.
 */
static int add_manager(struct jail_box *b, const char *norm, const char *real, bool *shims)
{
	const struct toolmgr *tm = NULL;
	char *root = NULL, *entry = jail_box_tilde(b, norm), *why = NULL, *parent = strdup(norm);
	struct tvars t = {0};
	int rc = 0;

	for (size_t i = 0; i < ARB_ARRAY_LEN(managers) && !root; i++)
		if ((root = find_root(b, &managers[i], real)))
			tm = &managers[i];
	if (!entry || !parent) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (!root)
		goto out;
	*strrchr(parent, '/') = '\0';
	why = util_asprintf("path entry %s (%s)", entry, tm->name);
	rc = why ? tvars_set(&t, "root", 4, root) : util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = tvars_set(&t, "home", 4, b->home);
	if (rc == 0)
		rc = tvars_set(&t, "parent", 6, parent[0] ? parent : "/");
	if (rc == 0)
		rc = set_vars(b, tm, &t, why);
	for (const char *const *m = tm->mounts; *m && rc == 0; m++) {
		char *path = expand(*m, &t);

		rc = path ? jail_box_tool_mount(b, path, why) : util_err(-ENOMEM, "out of memory");
		free(path);
	}
	if (rc == 0 && tm->shims) {
		/* {root} is resolved already, as real is. */
		char *dir = expand(tm->shims, &t);

		rc = dir ? 0 : util_err(-ENOMEM, "out of memory");
		*shims = dir && !strcmp(dir, real);
		free(dir);
	}
out:
	tvars_clear(&t);
	free(why);
	free(parent);
	free(entry);
	free(root);
	return rc;
}

/* One PATH entry: when it lies under $HOME, its manager's needs and its scripts' ones. */
static int add_entry(struct jail_box *b, const char *entry)
{
	char *norm = NULL, *real = NULL;
	bool shims = false;
	struct stat st;
	int rc = 0;

	if (entry[0] != '/' || jail_path_norm(entry, &norm) < 0)
		return 0;
	real = jail_path_real(norm);
	if (!real)
		rc = util_err(-ENOMEM, "out of memory");
	else if (stat(real, &st) == 0 && S_ISDIR(st.st_mode) &&
		 (util_path_under(norm, b->home) || util_path_under(real, b->home_real)) &&
		 jail_mounts_find(&b->mounts, util_path_under(norm, b->home) ? norm : real)) {
		rc = add_manager(b, norm, real, &shims);
		if (rc == 0 && !shims)
			rc = jail_box_tool_scan(b, norm, real);
	}
	free(real);
	free(norm);
	return rc;
}

int jail_box_tools(struct jail_box *b)
{
	return jail_box_path_each(b, add_entry);
}
