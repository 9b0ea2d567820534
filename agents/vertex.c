/*
 * lib/agent_vertex.c: `--vertex` on the launchers: Claude on Google Vertex AI through the
 * proxy's vertex backend, which mints the access token on the host from the host's
 * Application Default Credentials (the box gets none). The project and region come from the
 * variables Claude Code itself reads (ANTHROPIC_VERTEX_PROJECT_ID, else GOOGLE_CLOUD_PROJECT;
 * CLOUD_ML_REGION); a missing one is a one-line error before anything is made.
 */
#include "agents/agents_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *env_first(const char *a, const char *b)
{
	const char *v = getenv(a);

	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

const char *launch_vertex_project(void)
{
	return env_first("ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT");
}

const char *launch_vertex_region(void)
{
	return env_first("CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION");
}

int launch_vertex_resolve(struct launch *l)
{
	const char *project = launch_vertex_project(), *region = launch_vertex_region();
	int rc;

	if (!project)
		return lib_input_err(
		    util_err(-EINVAL,
			     "%s --vertex: no Google Cloud project: set "
			     "ANTHROPIC_VERTEX_PROJECT_ID (or GOOGLE_CLOUD_PROJECT)",
			     l->client->name));
	if (!region)
		return lib_input_err(util_err(-EINVAL,
					      "%s --vertex: no region: set CLOUD_ML_REGION (e.g. "
					      "us-east5, or global)",
					      l->client->name));
	l->backend = "vertex";
	rc = launch_backend_opt(l, "project", project);
	rc = rc ?: launch_backend_opt(l, "region", region);
	return rc < 0 ? lib_input_err(rc) : 0;
}

int launch_vertex_claude_env(const struct launch *l, struct jail_box *b)
{
	int rc;

	(void)l;
	rc = lib_box_env(b, "CLAUDE_CODE_USE_VERTEX", "1");
	rc = rc ?: lib_box_env(b, "CLAUDE_CODE_SKIP_VERTEX_AUTH", "1");
	rc = rc ?: lib_box_env(b, "ANTHROPIC_VERTEX_PROJECT_ID", launch_vertex_project());
	return rc ?: lib_box_env(b, "CLOUD_ML_REGION", launch_vertex_region());
}
