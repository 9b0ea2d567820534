/*
 * util/secrets.c: the host's credential files and folders, which no bind file, grant or
 * tool-manager mount may expose (binds/ and jail/ both enforce it, so the list lives here).
 */
#include "util/util.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Credential files and folders, relative to $HOME. */
static const char *const secrets[] = {
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".local/share/opencode/auth.json",
    ".password-store",
    ".local/share/keyrings",
    ".local/state/arborinth/tokens",
    ".gem/credentials",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
};

bool util_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool util_secret_path(const char *path, const char *home, char **out)
{
	size_t hl = strlen(home);
	char buf[PATH_MAX];

	if (out)
		*out = NULL;
	/* Each home/secret built on the stack: a box's start asks this for every tool mount. */
	for (size_t i = 0; i < ARB_ARRAY_LEN(secrets); i++) {
		size_t sl = strlen(secrets[i]);
		char *p = buf;

		if (hl + 1 + sl >= sizeof(buf)) {
			p = util_asprintf("%s/%s", home, secrets[i]);
			if (!p)
				continue;
		} else {
			memcpy(buf, home, hl);
			buf[hl] = '/';
			memcpy(buf + hl + 1, secrets[i], sl + 1);
		}
		if (util_path_under(p, path) || util_path_under(path, p)) {
			if (out)
				*out = p == buf ? strdup(buf) : p;
			else if (p != buf)
				free(p);
			return true;
		}
		if (p != buf)
			free(p);
	}
	return false;
}

/* Whether `names` (one readdir of a folder, NULL: unread) may hold secret's first component. */
static bool may_hold(char *const *names, size_t n, const char *secret)
{
	size_t len = strcspn(secret, "/");

	if (!names || secret[0] != '.')
		return true; /* dot_names() kept dot-names only */
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(names[i], secret, len))
			return true;
	return false;
}

static void names_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * The dot-names in `dir` (NULL-terminated), or NULL when it cannot be read: one readdir
 * instead of an lstat per secret, most of which are absent.
 */
static char **dot_names(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	char **v = calloc(1, sizeof(*v)), **nv;
	struct dirent *de;

	*n = 0;
	while (d && v && (de = readdir(d))) {
		if (de->d_name[0] != '.' || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!(nv = realloc(v, (*n + 2) * sizeof(*v)))) {
			names_free(v, *n);
			v = NULL;
			break;
		}
		v = nv;
		v[*n + 1] = NULL;
		if (!(v[*n] = strdup(de->d_name))) {
			names_free(v, *n);
			v = NULL;
			break;
		}
		(*n)++;
	}
	if (!d) {
		names_free(v, *n);
		return NULL;
	}
	closedir(d);
	return v;
}

bool util_secret_inside(const char *dir, char **out)
{
	size_t n = 0;
	char **names = dot_names(dir, &n);
	bool found = false;
	struct stat st;

	if (out)
		*out = NULL;
	for (size_t i = 0; i < ARB_ARRAY_LEN(secrets) && !found; i++) {
		char *p;

		if (!may_hold(names, n, secrets[i]))
			continue;
		p = util_path_join(dir, secrets[i]);
		/* The listing saw the first component; the whole path is checked as before. */
		if (p && lstat(p, &st) == 0) {
			found = true;
			if (out)
				*out = p;
			else
				free(p);
		} else {
			free(p);
		}
	}
	names_free(names, n);
	return found;
}
