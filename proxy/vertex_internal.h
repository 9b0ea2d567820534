/* proxy/vertex_internal.h: the vertex backend's state, shared by its configuration
 * (vertex_conf.c, which the launcher links too) and its token minting (vertex.c). */
#ifndef ARB_PROXY_VERTEX_INTERNAL_H
#define ARB_PROXY_VERTEX_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "proxy/vertex.h"

#define VX_SCOPE     "https://www.googleapis.com/auth/cloud-platform"
#define VX_TOKEN_URL "https://oauth2.googleapis.com/token"
#define VX_IAM_URL                                                                                 \
	"https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/"                     \
	"%s:generateAccessToken"
#define VX_FIX "run 'gcloud auth application-default login' or set GOOGLE_APPLICATION_CREDENTIALS"

struct proxy_token_cache;

struct proxy_vertex {
	char *project, *region, *adc, *ca_file;
	json_t *cred; /* the ADC file's JSON; host memory only */
	/* The tokens shared with the other proxies (vertex.c, token_cache.c; the launcher never
	 * opens one, so it frees through the pointer and links no OpenSSL). */
	struct proxy_token_cache *cache;
	void (*cache_free)(struct proxy_token_cache *c);
	pthread_mutex_t lock;
	char *token;
	int64_t expires_ms, minted_ms;
	bool stale;
	unsigned mints;
};

#endif
