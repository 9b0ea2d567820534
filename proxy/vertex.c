/*
 * proxy/vertex.c: the `vertex` backend: Google Vertex AI's Anthropic models with an access
 * token minted on the host from Application Default Credentials, so a box never holds a
 * Google credential. The ADC file ($GOOGLE_APPLICATION_CREDENTIALS, else gcloud's
 * application_default_credentials.json) is an `authorized_user` (refresh grant), a
 * `service_account` key (an RS256 JWT signed with OpenSSL, jwt-bearer grant) or an
 * `impersonated_service_account` (its source credentials' token, then IAM Credentials
 * generateAccessToken). The token is minted again PROXY_LOGIN_MARGIN_MS before it expires,
 * once for all the user's proxies (token_cache.c: a file per ADC content under a flock, as
 * the logins; the threads of one proxy wait on its mutex first); a token the upstream
 * refused is minted again only when it is LOGIN_REFUSED_MIN_MS old, as logins are.
 * Only POST .../projects/P/locations/R/publishers/anthropic/models/M:rawPredict and
 * :streamRawPredict under the configured project and region pass the policy.
 */
#include "proxy/login_internal.h"
#include "proxy/token_cache.h"
#include "proxy/vertex_internal.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* POSTs body to url; *resp: the 200 answer's JSON. Errors name the ADC file and the URL. */
static int post(struct proxy_vertex *v, const char *url, const char *ctype, const char *body,
		const char *bearer, json_t **resp)
{
	struct curl_slist *h = NULL;
	struct login_answer a = {0};
	char *hb = ctype ? util_asprintf("Content-Type: %s", ctype) : NULL;
	char *ab = bearer ? util_asprintf("Authorization: Bearer %s", bearer) : NULL;
	long status = 0;
	CURLcode cc;
	int rc = login_url_check(url);

	*resp = NULL;
	if (rc < 0)
		goto out;
	if (!hb || (bearer && !ab)) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	h = curl_slist_append(NULL, hb);
	if (h && ab)
		h = curl_slist_append(h, ab);
	cc = login_post(url, v->ca_file, h, body, &a, &status);
	if (cc == CURLE_OUT_OF_MEMORY)
		rc = util_err(-ENOMEM, "out of memory");
	else if (cc != CURLE_OK)
		rc = util_err(-EHOSTUNREACH, "Vertex token from %s: %s unreachable (%s)", v->adc,
			      url, curl_easy_strerror(cc));
	else if (status != 200)
		rc = util_err(-EKEYEXPIRED, "Vertex token from %s: %s answered HTTP %ld; %s",
			      v->adc, url, status, VX_FIX);
	else if (!(*resp = json_loads(a.buf ? a.buf : "", 0, NULL)))
		rc = util_err(-EKEYEXPIRED, "Vertex token from %s: %s answered no JSON", v->adc,
			      url);
out:
	login_answer_free(&a);
	proxy_secret_free(&ab);
	free(hb);
	curl_slist_free_all(h);
	return rc;
}

static char *form_escape(const char *s)
{
	char *c = curl_easy_escape(NULL, s, 0), *r = c ? strdup(c) : NULL;

	if (c) {
		explicit_bzero(c, strlen(c));
		curl_free(c);
	}
	return r;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s && *s ? s : NULL;
}

static int need(const struct proxy_vertex *v, json_t *o, const char *k, const char **out)
{
	*out = str(o, k);
	return *out ? 0
		    : util_err(-EINVAL, "%s: the %s credentials have no %s; %s", v->adc,
			       str(o, "type") ? str(o, "type") : "ADC", k, VX_FIX);
}

/* {access_token, expires_in} from a token endpoint. */
static int oauth_token(struct proxy_vertex *v, const char *url, char *form, char **tok,
		       int64_t *exp_ms)
{
	json_t *resp = NULL;
	int rc = post(v, url, "application/x-www-form-urlencoded", form, NULL, &resp);
	const char *a = rc == 0 ? str(resp, "access_token") : NULL;
	json_t *ein = json_object_get(resp, "expires_in");

	explicit_bzero(form, strlen(form));
	free(form);
	if (rc == 0 && !a)
		rc = util_err(-EKEYEXPIRED, "Vertex token from %s: %s answered no access_token",
			      v->adc, url);
	if (rc == 0) {
		*tok = strdup(a);
		*exp_ms = util_now_ns() / 1000000 +
			  (json_is_integer(ein) ? json_integer_value(ein) : 3600) * 1000;
		rc = *tok ? 0 : util_err(-ENOMEM, "out of memory");
	}
	json_decref(resp);
	return rc;
}

static int mint_user(struct proxy_vertex *v, json_t *c, char **tok, int64_t *exp_ms)
{
	const char *id, *secret, *rt, *url = str(c, "token_uri") ?: VX_TOKEN_URL;
	char *e1 = NULL, *e2 = NULL, *e3 = NULL, *form = NULL;
	int rc = need(v, c, "client_id", &id);

	rc = rc ?: need(v, c, "client_secret", &secret);
	rc = rc ?: need(v, c, "refresh_token", &rt);
	if (rc < 0)
		return rc;
	e1 = form_escape(id);
	e2 = form_escape(secret);
	e3 = form_escape(rt);
	if (e1 && e2 && e3)
		form = util_asprintf("grant_type=refresh_token&client_id=%s&client_secret=%s&"
				     "refresh_token=%s",
				     e1, e2, e3);
	proxy_secret_free(&e1);
	proxy_secret_free(&e2);
	proxy_secret_free(&e3);
	return form ? oauth_token(v, url, form, tok, exp_ms) : util_err(-ENOMEM, "out of memory");
}

/* RS256 over "head.claims" with the key's PEM; the JWT, malloc'd. */
static int jwt_sign(const struct proxy_vertex *v, const char *pem, const char *signing, char **out)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char *sig = NULL;
	size_t sl = 0;
	char *s64 = NULL;
	int rc = 0;

	if (!key || EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
		rc = util_err(-EINVAL, "%s: private_key is not an RSA key in PEM; %s", v->adc,
			      VX_FIX);
		goto out;
	}
	if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, NULL, &sl, (const unsigned char *)signing, strlen(signing)) != 1 ||
	    !(sig = malloc(sl)) ||
	    EVP_DigestSign(md, sig, &sl, (const unsigned char *)signing, strlen(signing)) != 1 ||
	    !(s64 = login_b64url(sig, sl))) {
		rc = util_err(-EIO, "%s: cannot sign the service account's JWT", v->adc);
		goto out;
	}
	*out = util_asprintf("%s.%s", signing, s64);
	rc = *out ? 0 : util_err(-ENOMEM, "out of memory");
out:
	free(s64);
	free(sig);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	BIO_free(bio);
	return rc;
}

static int mint_sa(struct proxy_vertex *v, json_t *c, char **tok, int64_t *exp_ms)
{
	const char *email, *pem, *kid = str(c, "private_key_id"),
				 *url = str(c, "token_uri") ?: VX_TOKEN_URL;
	int64_t now = util_now_ns() / 1000000000;
	json_t *head = NULL, *claims = NULL;
	char *hj = NULL, *cj = NULL, *h64 = NULL, *c64 = NULL, *signing = NULL, *jwt = NULL;
	char *form = NULL;
	int rc = need(v, c, "client_email", &email);

	rc = rc ?: need(v, c, "private_key", &pem);
	if (rc < 0)
		return rc;
	head = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	if (head && kid)
		json_object_set_new(head, "kid", json_string(kid));
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", email, "scope", VX_SCOPE, "aud", url,
			   "iat", (json_int_t)now, "exp", (json_int_t)(now + 3600));
	hj = head ? json_dumps(head, JSON_COMPACT) : NULL;
	cj = claims ? json_dumps(claims, JSON_COMPACT) : NULL;
	h64 = hj ? login_b64url(hj, strlen(hj)) : NULL;
	c64 = cj ? login_b64url(cj, strlen(cj)) : NULL;
	signing = h64 && c64 ? util_asprintf("%s.%s", h64, c64) : NULL;
	rc = signing ? jwt_sign(v, pem, signing, &jwt) : util_err(-ENOMEM, "out of memory");
	if (rc == 0) {
		form = util_asprintf("grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%"
				     "3Ajwt-bearer&assertion=%s",
				     jwt);
		rc = form ? oauth_token(v, url, form, tok, exp_ms)
			  : util_err(-ENOMEM, "out of memory");
	}
	proxy_secret_free(&jwt);
	free(signing);
	free(h64);
	free(c64);
	free(hj);
	free(cj);
	json_decref(head);
	json_decref(claims);
	return rc;
}

/* "2026-12-06T15:04:05Z" (fractions allowed) in ms, or 0. */
static int64_t rfc3339_ms(const char *s)
{
	struct tm tm = {0};
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;

	return end ? (int64_t)timegm(&tm) * 1000 : 0;
}

static int mint_source(struct proxy_vertex *v, json_t *c, char **tok, int64_t *exp_ms);

static int mint_impersonated(struct proxy_vertex *v, json_t *c, char **tok, int64_t *exp_ms)
{
	json_t *src = json_object_get(c, "source_credentials"), *body = NULL, *resp = NULL;
	json_t *dl = json_object_get(c, "delegates");
	const char *url = str(c, "service_account_impersonation_url"), *a;
	char *stok = NULL, *text = NULL;
	int64_t sexp = 0;
	int rc;

	if (!json_is_object(src) || !str(src, "type") ||
	    !strcmp(str(src, "type"), "impersonated_service_account"))
		return util_err(-EINVAL,
				"%s: impersonated_service_account needs source_credentials of "
				"type authorized_user or service_account; %s",
				v->adc, VX_FIX);
	if (!url)
		return util_err(-EINVAL, "%s: no service_account_impersonation_url; %s", v->adc,
				VX_FIX);
	rc = mint_source(v, src, &stok, &sexp);
	if (rc < 0)
		return rc;
	body = json_pack("{s:[s], s:s}", "scope", VX_SCOPE, "lifetime", "3600s");
	if (body && json_is_array(dl))
		json_object_set(body, "delegates", dl);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	rc = text ? post(v, url, "application/json", text, stok, &resp)
		  : util_err(-ENOMEM, "out of memory");
	a = rc == 0 ? str(resp, "accessToken") : NULL;
	if (rc == 0 && !a)
		rc = util_err(-EKEYEXPIRED, "Vertex token from %s: %s answered no accessToken",
			      v->adc, url);
	if (rc == 0) {
		*tok = strdup(a);
		*exp_ms = rfc3339_ms(str(resp, "expireTime"));
		if (!*exp_ms)
			*exp_ms = util_now_ns() / 1000000 + 3600 * 1000LL;
		rc = *tok ? 0 : util_err(-ENOMEM, "out of memory");
	}
	proxy_secret_free(&stok);
	free(text);
	json_decref(body);
	json_decref(resp);
	return rc;
}

static int mint_source(struct proxy_vertex *v, json_t *c, char **tok, int64_t *exp_ms)
{
	const char *t = str(c, "type");

	if (t && !strcmp(t, "authorized_user"))
		return mint_user(v, c, tok, exp_ms);
	if (t && !strcmp(t, "service_account"))
		return mint_sa(v, c, tok, exp_ms);
	if (t && !strcmp(t, "impersonated_service_account"))
		return mint_impersonated(v, c, tok, exp_ms);
	return util_err(-EINVAL,
			"%s: unknown ADC type '%.40s' (authorized_user, service_account or "
			"impersonated_service_account); %s",
			v->adc, t ? t : "", VX_FIX);
}

/* The token cache of this ADC file's content (another account's file: another cache), the
 * token's kind, the account it impersonates and its scope (length-prefixed: unambiguous). */
static int open_cache(struct proxy_vertex *v, const char *text, size_t len)
{
	const char *t = str(v->cred, "type") ?: "",
		   *imp = str(v->cred, "service_account_impersonation_url") ?: "";
	char *id = util_asprintf("%zu:%s%zu:%s%zu:%s%zu:", strlen(t), t, strlen(imp), imp,
				 strlen(VX_SCOPE), VX_SCOPE, len);
	size_t n = id ? strlen(id) : 0;
	char *all = id ? malloc(n + len) : NULL;
	int rc;

	if (!all) {
		free(id);
		return util_err(-ENOMEM, "out of memory");
	}
	memcpy(all, id, n);
	memcpy(all + n, text, len);
	rc = proxy_token_cache_open(&v->cache, "vertex", all, n + len);
	v->cache_free = proxy_token_cache_free;
	explicit_bzero(all, n + len);
	free(all);
	free(id);
	return rc;
}

static int load_adc(struct proxy_vertex *v)
{
	json_error_t err;
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (v->cred)
		return 0;
	rc = util_read_file(v->adc, &text, &len);
	if (rc < 0)
		return util_err(-EINVAL, "%s: no Google credentials (%s); %s", v->adc,
				strerror(-rc), VX_FIX);
	v->cred = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!v->cred)
		rc = util_err(-EINVAL, "%s: no Google credentials (%s); %s", v->adc, err.text,
			      VX_FIX);
	else if (!json_is_object(v->cred))
		rc = util_err(-EINVAL, "%s is not a JSON object; %s", v->adc, VX_FIX);
	else
		rc = open_cache(v, text, len);
	explicit_bzero(text, len);
	free(text);
	if (rc < 0) {
		json_decref(v->cred);
		v->cred = NULL;
	}
	return rc;
}

static int mint_cb(void *ctx, struct proxy_token *t)
{
	struct proxy_vertex *v = ctx;

	return mint_source(v, v->cred, &t->token, &t->expires_ms);
}

/* Under v->lock (the threads of this proxy); token_cache.c makes the processes take turns. */
static int ensure_locked(struct proxy_vertex *v)
{
	int64_t now = util_now_ns() / 1000000;
	struct proxy_token have = {v->token, v->expires_ms, v->minted_ms}, t = {0};
	bool minted = false;
	int rc;

	if (v->token && !v->stale && v->expires_ms - now > PROXY_LOGIN_MARGIN_MS)
		return 0;
	rc = load_adc(v);
	rc = rc ?: proxy_token_cache_get(v->cache, &have, v->stale, mint_cb, v, &t, &minted);
	if (rc < 0)
		return rc;
	proxy_secret_free(&v->token);
	v->token = t.token;
	v->expires_ms = t.expires_ms;
	v->minted_ms = t.minted_ms;
	v->stale = false;
	v->mints += minted;
	return 0;
}

int proxy_vertex_current(struct proxy_vertex *v, char **token)
{
	int rc;

	*token = NULL;
	pthread_mutex_lock(&v->lock);
	rc = ensure_locked(v);
	if (rc == 0 && !(*token = strdup(v->token)))
		rc = util_err(-ENOMEM, "out of memory");
	pthread_mutex_unlock(&v->lock);
	return rc;
}

void proxy_vertex_refused(struct proxy_vertex *v, const char *token)
{
	pthread_mutex_lock(&v->lock);
	/* Whether it is minted again (once per LOGIN_REFUSED_MIN_MS) is the cache file's call. */
	if (v->token && !strcmp(v->token, token))
		v->stale = true;
	pthread_mutex_unlock(&v->lock);
}

unsigned proxy_vertex_mints(struct proxy_vertex *v)
{
	unsigned n;

	pthread_mutex_lock(&v->lock);
	n = v->mints;
	pthread_mutex_unlock(&v->lock);
	return n;
}
