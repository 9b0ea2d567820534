/*
 * proxy/login_oauth.c: the OAuth refresh grant against the client's token endpoint (libcurl,
 * TLS verified; plain http only to a loopback address), the token endpoints' answers as
 * libcurl collects them (here and in vertex.c), and the JWT helpers the Codex login
 * needs (reading claims; unsigned placeholder tokens for the box).
 */
#include "proxy/login_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int login_url_check(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	int rc = 0;

	if (!u)
		return util_err(-ENOMEM, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		rc = util_err(-EINVAL, "token endpoint '%s' is not a URL", url);
	else if (strcmp(scheme, "https") &&
		 (strcmp(scheme, "http") || (strcmp(host, "127.0.0.1") && strcmp(host, "[::1]") &&
					     strcmp(host, "localhost"))))
		rc = util_err(-EINVAL,
			      "token endpoint '%s' must be https (plain http only on loopback)",
			      url);
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

size_t login_answer_collect(char *data, size_t size, size_t n, void *ud)
{
	struct login_answer *a = ud;
	size_t len = size * n;
	char *nb;

	if (a->len + len > LOGIN_ANSWER_MAX)
		return 0;
	nb = realloc(a->buf, a->len + len + 1);
	if (!nb)
		return 0;
	memcpy(nb + a->len, data, len);
	a->buf = nb;
	a->len += len;
	a->buf[a->len] = '\0';
	return len;
}

void login_answer_free(struct login_answer *a)
{
	if (a->buf) {
		explicit_bzero(a->buf, a->len);
		free(a->buf);
	}
	a->buf = NULL;
	a->len = 0;
}

/* The endpoint's own words for a refusal ("invalid_grant: ..."), never a token. */
static void refusal(const struct login_answer *a, long status, char *out, size_t size)
{
	json_t *j = a->buf ? json_loads(a->buf, 0, NULL) : NULL;
	const char *e = login_json_str(j, "error");
	const char *d = login_json_str(j, "error_description");

	if (!e)
		e = login_json_str(json_object_get(j, "error"), "message");
	snprintf(out, size, "HTTP %ld%s%.80s%s%.120s", status, e ? ", " : "", e ? e : "",
		 d ? ": " : "", d ? d : "");
	json_decref(j);
}

int login_post(const char *url, const char *ca_file, struct curl_slist *headers, const char *body,
	       struct login_answer *a, long *status)
{
	CURL *e = curl_easy_init();
	CURLcode cc;

	*status = 0;
	if (!e)
		return CURLE_OUT_OF_MEMORY;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, ca_file);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 15L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, login_answer_collect);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
	cc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(e);
	return cc;
}

int login_oauth_refresh(struct proxy_login *l, const struct login_tokens *old,
			struct login_tokens *n)
{
	json_t *grant = l->kind->grant(l, old->refresh), *resp = NULL;
	char *body = grant ? json_dumps(grant, JSON_COMPACT) : NULL, why[256];
	struct curl_slist *h = NULL;
	struct login_answer a = {0};
	long status = 0;
	CURLcode cc;
	int rc;

	if (!body) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	h = curl_slist_append(NULL, "Content-Type: application/json");
	h = h ? curl_slist_append(h, "Accept: application/json") : NULL;
	cc = login_post(l->token_url, l->ca_file, h, body, &a, &status);
	if (cc == CURLE_OUT_OF_MEMORY) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (cc != CURLE_OK) {
		rc = util_err(-EHOSTUNREACH,
			      "the %s login in %s could not be refreshed: %s unreachable (%s); "
			      "check the network, or %s",
			      l->kind->title, l->path, l->token_url, curl_easy_strerror(cc),
			      l->kind->fix);
		goto out;
	}
	if (status != 200) {
		refusal(&a, status, why, sizeof(why));
		rc = util_err(-EKEYEXPIRED, "the %s login in %s could not be refreshed (%s); %s",
			      l->kind->title, l->path, why, l->kind->fix);
		goto out;
	}
	resp = json_loads(a.buf ? a.buf : "", 0, NULL);
	rc = resp ? l->kind->answer(resp, old, n)
		  : util_err(-EKEYEXPIRED, "the token endpoint %s answered no JSON", l->token_url);
out:
	if (body) {
		explicit_bzero(body, strlen(body));
		free(body);
	}
	login_answer_free(&a);
	json_decref(resp);
	json_decref(grant);
	curl_slist_free_all(h);
	return rc;
}

/* ---- JWTs -------------------------------------------------------------------------------- */

static int b64url_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '-' ? 62 : c == '_' ? 63 : -1;
}

json_t *login_jwt_claims(const char *jwt)
{
	const char *p = jwt ? strchr(jwt, '.') : NULL, *end = p ? strchr(p + 1, '.') : NULL;
	size_t n = end ? (size_t)(end - p - 1) : 0, o = 0;
	unsigned acc = 0;
	int bits = 0;
	char *buf;
	json_t *j;

	if (!end || n == 0 || n > 64 * 1024)
		return NULL;
	buf = malloc(n + 1);
	if (!buf)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int v = b64url_val(p[1 + i]);

		if (v < 0) {
			free(buf);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	j = json_loadb(buf, o, 0, NULL);
	free(buf);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

char *login_b64url(const void *data, size_t n)
{
	const unsigned char *in = data;
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char *out = malloc(n * 4 / 3 + 4), *o = out;
	unsigned acc = 0;
	int bits = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | in[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			*o++ = tab[(acc >> bits) & 63];
		}
	}
	if (bits)
		*o++ = tab[(acc << (6 - bits)) & 63];
	*o = '\0';
	return out;
}

char *login_jwt_make(json_t *claims)
{
	static const char head[] = "{\"alg\":\"none\",\"typ\":\"JWT\"}";
	char *payload = json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS);
	char *h = login_b64url(head, strlen(head)),
	     *c = payload ? login_b64url(payload, strlen(payload)) : NULL;
	char *out = h && c ? util_asprintf("%s.%s.arborinth-placeholder", h, c) : NULL;

	free(payload);
	free(h);
	free(c);
	return out;
}
