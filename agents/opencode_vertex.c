/*
 * agents/opencode_vertex.c: `arborinth opencode NAME --vertex`: OpenCode's
 * google-vertex-anthropic provider (the AI SDK's @ai-sdk/google-vertex/anthropic, bundled in
 * OpenCode's binary) through the proxy's vertex backend, which mints the Google access token
 * on the host. The provider asks google-auth-library for a token before every call; the box's
 * config gives the library the proxy's placeholder as a ready access token
 * (googleAuthOptions.clientOptions.credentials, valid until the year 3000), so it never
 * looks for ADC, never calls Google, and holds nothing worth anything outside the box: the
 * proxy swaps that bearer for the host's token and refuses any other. Should the library
 * ever try to refresh it, its token URL is the relay's, where the policy refuses (403,
 * audited). The project and region come from the host's variables as for claude --vertex.
 */
#include "agents/agents_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define VERTEX_ID    "google-vertex-anthropic"
#define VERTEX_NPM   "@ai-sdk/google-vertex/anthropic"
#define VERTEX_MODEL "claude-sonnet-4-5@20250929"
/* The export OpenCode's binary calls when it bundles the provider (bun --compile). */
#define VERTEX_MARK "createVertexAnthropic"
/* The placeholder's expiry for google-auth-library: 3000-01-01, in ms. */
#define FAR_EXPIRY 32503680000000LL

/*
 * Whether the client's executable bundles the provider: 1 yes or not knowable (not an ELF
 * file, e.g. a launcher script; unreadable), 0 an ELF binary without it. The box has no
 * network, so OpenCode could not fetch the package there.
 */
static int bundles_provider(const char *exe)
{
	int fd = open(exe, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	void *map = MAP_FAILED;
	int found = 1;

	if (fd < 0)
		return 1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 4)
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map != MAP_FAILED && !memcmp(map, "\177ELF", 4))
		found = memmem(map, (size_t)st.st_size, VERTEX_MARK, strlen(VERTEX_MARK)) != NULL;
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	close(fd);
	return found;
}

int launch_opencode_vertex_resolve(struct launch *l)
{
	size_t plen = strlen(VERTEX_ID);
	char *source = NULL;
	json_t *cfg;
	const char *hm;

	if (l->provider && strcmp(l->provider, VERTEX_ID))
		return lib_input_err(util_err(
		    -EINVAL, "opencode --vertex: --provider '%s' is not " VERTEX_ID, l->provider));
	if (l->exe && l->exe[0] == '/' && !bundles_provider(l->exe))
		return util_err(-ENOPKG,
				"opencode --vertex: %s does not bundle the " VERTEX_NPM
				" provider and the box cannot download it; update OpenCode (%s)",
				l->exe, l->client->install);
	/* The model: --model (google-vertex-anthropic/MODEL or MODEL), else the host's when it
	 * is this provider's, else a default. */
	if (l->model) {
		launch_set_model(l, strchr(l->model, '/')
					? strdup(l->model)
					: util_asprintf(VERTEX_ID "/%s", l->model));
	} else {
		cfg = launch_opencode_host_config(l, &source);
		free(source);
		hm = json_string_value(json_object_get(cfg, "model"));
		launch_set_model(l,
				 hm && launch_model_ok(hm) && !strncmp(hm, VERTEX_ID "/", plen + 1)
				     ? strdup(hm)
				     : strdup(VERTEX_ID "/" VERTEX_MODEL));
		json_decref(cfg);
	}
	if (!l->model_import)
		return util_err(-ENOMEM, "out of memory");
	if (strncmp(l->model_import, VERTEX_ID "/", plen + 1) || !l->model_import[plen + 1])
		return lib_input_err(util_err(
		    -EINVAL, "opencode --vertex: --model '%s' is not of provider " VERTEX_ID,
		    l->model_import));
	return 0;
}

json_t *launch_opencode_vertex_provider(const struct launch *l, const char *url, const char *key)
{
	const char *project = launch_vertex_project(), *region = launch_vertex_region();
	const char *model = strchr(l->model_import, '/') + 1;
	char *base = util_asprintf("%s/projects/%s/locations/%s/publishers/anthropic/models", url,
				   project, region);
	char *refresh = util_asprintf("%s/arborinth-no-google-token-refresh", url);
	json_t *prov = NULL;

	if (base && refresh)
		prov = json_pack(
		    "{s:s, s:{s:s, s:s, s:s, s:{s:{s:s, s:s, s:s, s:s}, s:{s:{s:s, s:s, s:I}, "
		    "s:{s:s}}}}, s:{s:{}}}",
		    "npm", VERTEX_NPM, "options", "baseURL", base, "project", project, "location",
		    region, "googleAuthOptions", "credentials", "type", "authorized_user",
		    "client_id", "arborinth-box", "client_secret", "none", "refresh_token", "none",
		    "clientOptions", "credentials", "access_token", key, "token_type", "Bearer",
		    "expiry_date", (json_int_t)FAR_EXPIRY, "endpoints", "oauth2TokenUrl", refresh,
		    "models", model);
	free(base);
	free(refresh);
	return prov;
}

const char *launch_opencode_vertex_id(void)
{
	return VERTEX_ID;
}
