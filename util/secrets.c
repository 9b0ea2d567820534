/*
 * util/secrets.c: the host's credential files and folders, which no bind file, grant or
 * tool-manager mount may expose (binds/ and jail/ both enforce it, so the list lives here).
 */
#include "util/util.h"

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
	if (out)
		*out = NULL;
	for (size_t i = 0; i < ARB_ARRAY_LEN(secrets); i++) {
		char *p = util_asprintf("%s/%s", home, secrets[i]);

		if (p && (util_path_under(p, path) || util_path_under(path, p))) {
			if (out)
				*out = p;
			else
				free(p);
			return true;
		}
		free(p);
	}
	return false;
}

bool util_secret_inside(const char *dir, char **out)
{
	struct stat st;

	if (out)
		*out = NULL;
	for (size_t i = 0; i < ARB_ARRAY_LEN(secrets); i++) {
		char *p = util_path_join(dir, secrets[i]);

		if (p && lstat(p, &st) == 0) {
			if (out)
				*out = p;
			else
				free(p);
			return true;
		}
		free(p);
	}
	return false;
}
