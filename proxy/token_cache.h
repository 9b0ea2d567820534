/*
 * proxy/token_cache.h: access tokens shared by one user's proxies (token_cache.c), one file
 * per credential, minted by one process at a time; internal to the proxy.
 */
#ifndef ARB_PROXY_TOKEN_CACHE_H
#define ARB_PROXY_TOKEN_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/proxy_internal.h"

/* A cache file is at most this long; a token at most TOKEN_MAX characters. */
#define PROXY_TOKEN_FILE_MAX (16 * 1024)
#define PROXY_TOKEN_MAX	     8192
/* No Google access token lives longer (12 h, the longest a service account may ask for). */
#define PROXY_TOKEN_LIFE_MAX_MS (12 * 3600 * 1000LL)

/* One access token. Its times are the host's wall clock, in ms since the epoch. */
struct proxy_token {
	char *token; /* a secret: proxy_token_clear wipes it */
	int64_t expires_ms, minted_ms;
};
void proxy_token_clear(struct proxy_token *t);

/*
 * Reads a cache file's bytes (hostile: anything a crash, a disk or a person left there):
 * 0 and *out (caller clears) only for a well-formed entry of key whose token is a bearer
 * token's characters (RFC 6750 b64token, so it cannot bend a header) and whose times make
 * sense at now_ms (minted at most a minute in the future, living at most
 * PROXY_TOKEN_LIFE_MAX_MS); else -EINVAL.
 */
int proxy_token_parse(const char *text, size_t len, const char *key, int64_t now_ms,
		      struct proxy_token *out) ARB_MUST_CHECK;
/* A cache file's text for t (caller frees, a secret), or NULL. */
char *proxy_token_format(const struct proxy_token *t, const char *key);

struct proxy_token_cache;

/*
 * The cache of one credential, named by the SHA-256 of `id` (the credential file's content
 * and what the token is for), in the first folder of proxy_token_dirs() that is (or can be
 * made) a directory of this user's with mode 0700. When there is none the cache is this
 * process's only, and a one-line note says so on stderr (once). Caller frees.
 */
int proxy_token_cache_open(struct proxy_token_cache **out, const char *kind, const void *id,
			   size_t id_len) ARB_MUST_CHECK;
void proxy_token_cache_free(struct proxy_token_cache *c);
/* The cache file's path, or NULL for a process-only cache. Borrowed. */
const char *proxy_token_cache_path(const struct proxy_token_cache *c);

/* Mints a new token into t (expires_ms set; minted_ms is the cache's). Errors: util_err. */
typedef int (*proxy_token_mint_fn)(void *ctx, struct proxy_token *t);

/*
 * The token to send now, in *out (caller clears). Under an exclusive lock on the cache file
 * (flock.c), so that of all the processes one mints and the others take its token: the
 * cached token when it has more than PROXY_LOGIN_MARGIN_MS left, unless it is `have`'s and
 * `refused` (the upstream refused it) and at least LOGIN_REFUSED_MIN_MS old; else a new one
 * from mint, written back atomically (mode 0600). have: the caller's token (may be empty).
 * *minted: whether this call minted. A cache that cannot be read or written is noted once
 * and passed by (the token is still minted or kept). Errors are mint's.
 */
int proxy_token_cache_get(struct proxy_token_cache *c, const struct proxy_token *have, bool refused,
			  proxy_token_mint_fn mint, void *ctx, struct proxy_token *out,
			  bool *minted) ARB_MUST_CHECK;

#endif
