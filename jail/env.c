/*
 * jail/env.c: the box's environment rules. The box starts from nothing; host variables on
 * the allowlist pass unless their name looks like a credential or a host channel.
 */
#include "jail/jail_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Host variables that pass: what terminals, shells and locales need, nothing more. */
static const char *const allowed[] = {
    "PATH",	"HOME", "USER",	  "LOGNAME", "SHELL", "TERM",	  "COLORTERM", "LANG",
    "LANGUAGE", "TZ",	"EDITOR", "VISUAL",  "PAGER", "NO_COLOR", "COLUMNS",   "LINES",
};
static const char *const allowed_prefixes[] = {"LC_"};

/* Never passed from the host, even when a prefix allows them (--env still can). */
static const char *const secret_names[] = {
    "SSH_AUTH_SOCK",   "SSH_AGENT_PID", "DBUS_SESSION_BUS_ADDRESS", "GIT_ASKPASS",
    "SSH_ASKPASS",     "SUDO_ASKPASS",	"GPG_AGENT_INFO",	    "DISPLAY",
    "WAYLAND_DISPLAY", "XAUTHORITY",
};
static const char *const secret_words[] = {"TOKEN",	 "SECRET", "PASSWORD", "PASSWD",
					   "CREDENTIAL", "APIKEY", "API_KEY",  "PRIVATE"};
static const char *const secret_suffixes[] = {"_KEY", "_PASS", "_AUTH", "_COOKIE", "_SESSION"};

bool jail_env_name_valid(const char *name)
{
	if (!*name || isdigit((unsigned char)*name))
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

bool jail_env_is_secret(const char *name)
{
	char up[256];
	size_t i;

	for (i = 0; name[i] && i + 1 < sizeof(up); i++)
		up[i] = (char)toupper((unsigned char)name[i]);
	up[i] = '\0';
	for (i = 0; i < ARB_ARRAY_LEN(secret_names); i++)
		if (!strcmp(up, secret_names[i]))
			return true;
	for (i = 0; i < ARB_ARRAY_LEN(secret_words); i++)
		if (strstr(up, secret_words[i]))
			return true;
	for (i = 0; i < ARB_ARRAY_LEN(secret_suffixes); i++)
		if (has_suffix(up, secret_suffixes[i]))
			return true;
	return !strcmp(up, "KEY");
}

bool jail_env_is_allowed(const char *name)
{
	bool ok = false;

	for (size_t i = 0; i < ARB_ARRAY_LEN(allowed) && !ok; i++)
		ok = !strcmp(name, allowed[i]);
	for (size_t i = 0; i < ARB_ARRAY_LEN(allowed_prefixes) && !ok; i++)
		ok = util_str_has_prefix(name, allowed_prefixes[i]);
	return ok && !jail_env_is_secret(name);
}

const char *jail_env_get(char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (; env && *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

void jail_env_set(struct jail_strv *env, const char *name, const char *value)
{
	size_t n = strlen(name);
	char *kv = util_asprintf("%s=%s", name, value);

	if (!kv) {
		env->oom = true;
		return;
	}
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], name, n) && env->v[i][n] == '=') {
			free(env->v[i]);
			env->v[i] = kv;
			return;
		}
	jail_strv_take(env, kv);
}
