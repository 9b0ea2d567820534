/*
 * proxy/vertex.h: the vertex backend's token minter and path check (vertex.c); internal to
 * the proxy.
 */
#ifndef ARB_PROXY_VERTEX_H
#define ARB_PROXY_VERTEX_H

#include <stdbool.h>

#include "proxy/proxy_internal.h"

struct proxy_vertex;

#define PROXY_VERTEX_PORT 8717

int proxy_vertex_new(struct proxy_vertex **out) ARB_MUST_CHECK;
void proxy_vertex_free(struct proxy_vertex *v);
/* project=, region=, adc=: 0 (or -EINVAL naming the option), 1 when key is not one of them. */
int proxy_vertex_set(struct proxy_vertex *v, const char *key, const char *val) ARB_MUST_CHECK;
/* After the options: -EINVAL naming a missing project or region; picks the ADC file and,
 * when *url is NULL, the region's endpoint (malloc'd into *url). */
int proxy_vertex_finish(struct proxy_vertex *v, char **url, const char *ca_file) ARB_MUST_CHECK;
const char *proxy_vertex_project(const struct proxy_vertex *v);
const char *proxy_vertex_region(const struct proxy_vertex *v);
const char *proxy_vertex_adc(const struct proxy_vertex *v);
/* POST .../projects/P/locations/R/publishers/anthropic/models/M:(stream)rawPredict only. */
bool proxy_vertex_path_ok(const struct proxy_vertex *v, const char *method, const char *path);
/* The current token (minted when it has less than PROXY_LOGIN_MARGIN_MS left; one mint at a
 * time for all the user's proxies, token_cache.c), malloc'd (a secret). Errors name the ADC
 * file. */
int proxy_vertex_current(struct proxy_vertex *v, char **token) ARB_MUST_CHECK;
/* The upstream refused token: mint again, at most once per LOGIN_REFUSED_MIN_MS (by the
 * shared cache file's time, so for all the boxes on the ADC file). */
void proxy_vertex_refused(struct proxy_vertex *v, const char *token);
unsigned proxy_vertex_mints(struct proxy_vertex *v);

#endif
