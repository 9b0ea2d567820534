/*
 * agents/doctor.c: arb_doctor() and the agent clients `arborinth claude|codex|opencode` launch:
 * whether each is on PATH and whether a credential for it is on the host (the backend's key
 * variable, a key stored for the box proxy, or the client's login file). Only existence is
 * checked; no credential is opened or printed.
 */
#include "lib/doctor_internal.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/agents_internal.h"
#include "proxy/proxy.h"

static bool is_file(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The backend's key variable ("ANTHROPIC_API_KEY"); caller frees; NULL when unknown. */
static char *key_env(const char *backend)
{
	struct proxy_backend *pb = NULL;
	char *env = NULL;

	if (proxy_backend_parse(&pb, backend) == 0 && proxy_backend_key_env(pb))
		env = strdup(proxy_backend_key_env(pb));
	proxy_backend_free(pb);
	return env;
}

/* Where the credential is (a static description), or NULL when there is none. */
static const char *credential_of(const struct launch_client *c, struct launch *l, char **login)
{
	char *env = key_env(c->backend), *stored = lib_proxy_key_file(l->host_home, c->backend);
	const char *val = env ? getenv(env) : NULL, *where = NULL;

	if (val && *val)
		where = "an API key in the environment";
	else if (is_file(stored))
		where = "an API key stored for the proxy";
	else if (c->login_file && (*login = c->login_file(l)) && is_file(*login))
		where = "a login file";
	free(env);
	free(stored);
	return where;
}

static int check_client(struct doctor *d, const struct launch_client *c, const char *home)
{
	struct launch l = {.client = c, .host_home = (char *)home};
	char *path = util_which(c->program), *login = NULL;
	const char *cred = credential_of(c, &l, &login);
	int rc;

	if (!path)
		rc = doctor_add(d, c->name, ARB_CHECK_DEGRADED, false, c->install,
				"%s ('%s') is not on PATH: 'arborinth %s' cannot run it", c->title,
				c->program, c->name);
	else if (!cred)
		rc = doctor_add(d, c->name, ARB_CHECK_DEGRADED, false,
				c->login_cmd ? c->login_cmd
					     : "export the backend's API key variable",
				"%s, but no credential on the host (no API key%s%s)", path,
				login ? " and no login at " : "", login ? login : "");
	else
		rc = doctor_add(d, c->name, ARB_CHECK_OK, false, NULL, "%s, with %s", path, cred);
	free(path);
	free(login);
	return rc;
}

static int doctor_clients(struct doctor *d)
{
	static const struct launch_client *const clients[] = {&launch_claude, &launch_codex,
							      &launch_opencode};
	const char *home = getenv("HOME");
	struct passwd *pw = NULL;
	int rc = 0;

	if (!home || home[0] != '/') {
		pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : "/nonexistent";
	}
	for (size_t i = 0; i < ARB_ARRAY_LEN(clients) && rc == 0; i++)
		rc = check_client(d, clients[i], home);
	return rc;
}

/* The whole report: the system (lib/doctor_sys.c), then the clients (above). */
int arb_doctor(struct arb_check **out, size_t *n, const char *workdir)
{
	struct doctor d = {.workdir = workdir};
	int rc;

	lib_err_reset();
	*out = NULL;
	*n = 0;
	rc = doctor_sys(&d);
	if (rc == 0)
		rc = doctor_clients(&d);
	if (rc < 0) {
		arb_checks_free(d.v, d.n);
		return rc;
	}
	*out = d.v;
	*n = d.n;
	return 0;
}
