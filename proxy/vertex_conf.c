/*
 * proxy/vertex_conf.c: the `vertex` backend's configuration (project=, region=, adc=, the
 * endpoint) and its path check; no libcurl and no TLS, so the launcher links it
 * (the token minting, arborinth_proxy only: vertex.c).
 */
#include "proxy/vertex_internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void proxy_vertex_free(struct proxy_vertex *v)
{
	if (!v)
		return;
	proxy_secret_free(&v->token);
	json_decref(v->cred);
	if (v->cache)
		v->cache_free(v->cache);
	free(v->project);
	free(v->region);
	free(v->adc);
	free(v->ca_file);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

int proxy_vertex_new(struct proxy_vertex **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return util_err(-ENOMEM, "out of memory");
	pthread_mutex_init(&(*out)->lock, NULL);
	return 0;
}

static int set_copy(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : util_err(-ENOMEM, "out of memory");
}

/* Project ids, regions: letters, digits, '-' (and nothing a path could be bent with). */
static bool ident_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-')
			return false;
	return true;
}

int proxy_vertex_set(struct proxy_vertex *v, const char *key, const char *val)
{
	if (!strcmp(key, "project") || !strcmp(key, "region")) {
		if (!ident_ok(val))
			return util_err(-EINVAL, "backend vertex: bad %s '%s'", key, val);
		return set_copy(!strcmp(key, "project") ? &v->project : &v->region, val);
	}
	if (!strcmp(key, "adc")) {
		if (!*val)
			return util_err(-EINVAL, "backend vertex: adc needs a path");
		return set_copy(&v->adc, val);
	}
	return 1; /* not ours */
}

/* Checks the project and region, and picks the endpoint and the ADC file. */
int proxy_vertex_finish(struct proxy_vertex *v, char **url, const char *ca_file)
{
	const char *home = getenv("HOME"), *env = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	char real[PATH_MAX];

	if (!v->project)
		return util_err(-EINVAL,
				"backend vertex: no project; give project=ID "
				"(arborinth claude --vertex reads ANTHROPIC_VERTEX_PROJECT_ID)");
	if (!v->region)
		return util_err(-EINVAL, "backend vertex: no region; give region=R "
					 "(arborinth claude --vertex reads CLOUD_ML_REGION)");
	if (ca_file && set_copy(&v->ca_file, ca_file) < 0)
		return -ENOMEM;
	if (!v->adc) {
		v->adc = env && *env ? strdup(env)
				     : util_asprintf("%s/.config/gcloud/"
						     "application_default_credentials.json",
						     home ? home : "");
		if (!v->adc)
			return util_err(-ENOMEM, "out of memory");
	}
	/* The file itself (the box's walls hide it by this name); a missing one is said when
	 * the first token is minted. */
	if (realpath(v->adc, real) && set_copy(&v->adc, real) < 0)
		return -ENOMEM;
	if (*url)
		return 0;
	*url = !strcmp(v->region, "global")
		   ? strdup("https://aiplatform.googleapis.com")
		   : util_asprintf("https://%s-aiplatform.googleapis.com", v->region);
	return *url ? 0 : util_err(-ENOMEM, "out of memory");
}

const char *proxy_vertex_project(const struct proxy_vertex *v)
{
	return v->project;
}

const char *proxy_vertex_region(const struct proxy_vertex *v)
{
	return v->region;
}

const char *proxy_vertex_adc(const struct proxy_vertex *v)
{
	return v->adc;
}

bool proxy_vertex_path_ok(const struct proxy_vertex *v, const char *method, const char *path)
{
	char prefix[256];
	const char *m, *colon;
	int n = snprintf(prefix, sizeof(prefix),
			 "/v1/projects/%s/locations/%s/publishers/anthropic/models/", v->project,
			 v->region);

	if (strcmp(method, "POST") || n < 0 || (size_t)n >= sizeof(prefix) ||
	    strncmp(path, prefix, (size_t)n))
		return false;
	m = path + n;
	colon = strchr(m, ':');
	if (!colon || colon == m || (size_t)(colon - m) > 128)
		return false;
	for (const char *s = m; s < colon; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-._@", *s))
			return false;
	return !strcmp(colon, ":rawPredict") || !strcmp(colon, ":streamRawPredict");
}

/* ---- HTTP ---------------------------------------------------------------------------------- */
