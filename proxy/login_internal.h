/*
 * proxy/login_internal.h: the login files' shared types (login.c, login_kinds.c,
 * login_oauth.c, login_box.c and the unit tests); not public.
 */
#ifndef ARB_PROXY_LOGIN_INTERNAL_H
#define ARB_PROXY_LOGIN_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include "proxy/proxy_internal.h"

/* A token the upstream refused is refreshed only when the login file is older (login.c). */
#define LOGIN_REFUSED_MIN_MS (10 * 60 * 1000)
/* The box's placeholder login never expires before this (one year). */
#define LOGIN_BOX_LIFETIME_S (365LL * 24 * 3600)

/* One set of tokens as read from a file or a token endpoint. Secrets: cleared on free. */
struct login_tokens {
	char *access, *refresh, *id_token, *account;
	int64_t expires_ms; /* 0: unknown (never refreshed for age) */
};
void login_tokens_clear(struct login_tokens *t);

/* What differs between the clients' login files. */
struct login_kind {
	const char *title;     /* "Claude Code subscription", for messages */
	const char *fix;       /* "run 'claude login'" */
	const char *token_url; /* the client's own OAuth token endpoint */
	const char *client_id;
	const char *local_path;	 /* the box's refresh requests, answered by the proxy */
	const char *account_hdr; /* header the upstream reads the account from, or NULL */
	size_t dump_flags;	 /* json_dumps flags the client itself writes with */
	/* Non-secret members the box's copy keeps (NULL-terminated), and the object of the
	 * file they are in (NULL: the top level). */
	const char *const *box_keep;
	const char *box_keep_in;
	/* Fills t from the file's JSON; -EINVAL with a message naming the file. */
	int (*parse)(const struct proxy_login *l, json_t *root, struct login_tokens *t);
	/* The refresh grant's JSON body for refresh token rt. */
	json_t *(*grant)(const struct proxy_login *l, const char *rt);
	/* Fills n from the token endpoint's answer; old: tokens kept when not rotated. */
	int (*answer)(json_t *resp, const struct login_tokens *old, struct login_tokens *n);
	/* Writes n into the file's JSON, keeping everything else. */
	int (*update)(json_t *root, const struct login_tokens *n);
	/* The box's file: the host's non-secret fields with placeholders for every secret. */
	json_t *(*box)(const struct proxy_login *l, const char *ph_access);
	/* The token endpoint's answer the box gets for a refresh with its placeholder. */
	json_t *(*box_answer)(const struct proxy_login *l, const char *ph_access);
};
extern const struct login_kind login_kind_claude, login_kind_codex;
const struct login_kind *login_kind_get(enum proxy_login_kind k);

struct proxy_login {
	const struct login_kind *kind;
	char *path;	 /* the host file, symlinks resolved */
	char *token_url; /* where refreshes go */
	char *ca_file;
	pthread_mutex_t lock; /* everything below */
	struct login_tokens tok;
	json_t *box_info; /* non-secret fields for the box's copy (scopes, plan, ...) */
	ino_t ino;	  /* the file as last read, to notice the host's client refreshing */
	struct timespec mtime;
	bool stale; /* the upstream refused tok.access */
	unsigned refreshes;
	/* Placeholders (the access token's is the backend's). */
	char *ph_refresh, *ph_id_token, *ph_account;
};

/* Makes l's placeholders (refresh, id token, account) and box_info from the file's root. */
int login_placeholders_make(struct proxy_login *l, json_t *root) ARB_MUST_CHECK;
/* https, or http to a loopback address only (tests, local token servers). */
int login_url_check(const char *url) ARB_MUST_CHECK;
/* POSTs the refresh grant for old->refresh to l->token_url and fills n. -EKEYEXPIRED with
 * the endpoint's error when it refuses, -EHOSTUNREACH when it cannot be reached. */
int login_oauth_refresh(struct proxy_login *l, const struct login_tokens *old,
			struct login_tokens *n) ARB_MUST_CHECK;

/* A token endpoint's answer as libcurl hands it over (CURLOPT_WRITEFUNCTION and _WRITEDATA):
 * NUL-terminated, at most LOGIN_ANSWER_MAX bytes (more fails the transfer); a secret, so
 * login_answer_free wipes it. login_oauth.c. */
#define LOGIN_ANSWER_MAX (256 * 1024)
struct login_answer {
	char *buf;
	size_t len;
};
size_t login_answer_collect(char *data, size_t size, size_t n, void *ud);
void login_answer_free(struct login_answer *a);
struct curl_slist;
/* POSTs body with headers to a token endpoint (url checked by the caller: login_url_check):
 * TLS verified (ca_file, or the system's CAs), no redirects, 15 s to connect, 60 s in all;
 * the answer into a, its HTTP status into *status. libcurl's result, a CURLcode
 * (CURLE_OUT_OF_MEMORY when no handle could be made). */
int login_post(const char *url, const char *ca_file, struct curl_slist *headers, const char *body,
	       struct login_answer *a, long *status);

/* base64url without padding (JWTs), malloc'd; NULL: ENOMEM. */
char *login_b64url(const void *data, size_t n);
/* JWTs: the payload's claims (caller decrefs), and an unsigned one carrying claims. */
json_t *login_jwt_claims(const char *jwt);
char *login_jwt_make(json_t *claims);

/* A string member, or NULL. */
const char *login_json_str(json_t *obj, const char *key);
/* A copy of a string member, -EINVAL (naming the file and key) when missing or empty. */
int login_json_take(const struct proxy_login *l, json_t *obj, const char *key, bool required,
		    char **out) ARB_MUST_CHECK;

#endif
