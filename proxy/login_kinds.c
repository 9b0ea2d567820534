/*
 * proxy/login_kinds.c: the two login file formats: Claude Code's .credentials.json
 * ({"claudeAiOauth": {accessToken, refreshToken, expiresAt (ms), scopes, subscriptionType,
 * ...}}) and Codex's auth.json ({"tokens": {id_token, access_token, refresh_token,
 * account_id}, "last_refresh": RFC 3339}), their refresh grants, and the box's copies.
 */
#include "proxy/login_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *login_json_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

int login_json_take(const struct proxy_login *l, json_t *obj, const char *key, bool required,
		    char **out)
{
	const char *v = login_json_str(obj, key);

	*out = NULL;
	if (!v || !*v)
		return required ? util_err(-EINVAL, "%s holds no %s login (no %s); %s", l->path,
					   l->kind->title, key, l->kind->fix)
				: 0;
	*out = strdup(v);
	return *out ? 0 : util_err(-ENOMEM, "out of memory");
}

static int64_t now_ms(void)
{
	return util_now_ns() / 1000000;
}

static int set_str(json_t *obj, const char *key, const char *v)
{
	return v && json_object_set_new(obj, key, json_string(v)) < 0
		   ? util_err(-ENOMEM, "out of memory")
		   : 0;
}

/* ---- Claude Code ---------------------------------------------------------------------- */

static int claude_parse(const struct proxy_login *l, json_t *root, struct login_tokens *t)
{
	json_t *o = json_object_get(root, "claudeAiOauth");
	json_t *exp = json_object_get(o, "expiresAt");
	int rc;

	if (!json_is_object(o))
		return util_err(-EINVAL, "%s holds no %s login (no claudeAiOauth); %s", l->path,
				l->kind->title, l->kind->fix);
	rc = login_json_take(l, o, "accessToken", true, &t->access);
	rc = rc ?: login_json_take(l, o, "refreshToken", false, &t->refresh);
	if (rc == 0 && exp && !json_is_integer(exp))
		rc = util_err(-EINVAL, "%s: expiresAt is not a number; %s", l->path, l->kind->fix);
	if (rc == 0)
		t->expires_ms = exp ? json_integer_value(exp) : 0;
	return rc;
}

/* The file's scopes, space-separated, as the client asks for them again on refresh. */
static void scope_string(const struct proxy_login *l, char *out, size_t size)
{
	json_t *scopes = json_object_get(l->box_info, "scopes"), *s;
	size_t i, off = 0;

	out[0] = '\0';
	json_array_foreach(scopes, i, s)
	{
		if (json_is_string(s) && off + strlen(json_string_value(s)) + 2 < size)
			off += (size_t)snprintf(out + off, size - off, "%s%s", off ? " " : "",
						json_string_value(s));
	}
}

static json_t *claude_grant(const struct proxy_login *l, const char *rt)
{
	char scope[512];
	json_t *g = json_pack("{s:s, s:s, s:s}", "grant_type", "refresh_token", "refresh_token", rt,
			      "client_id", l->kind->client_id);

	scope_string(l, scope, sizeof(scope));
	if (g && *scope)
		json_object_set_new(g, "scope", json_string(scope));
	return g;
}

/* {access_token, refresh_token?, expires_in?}: shared by both token endpoints' answers. */
static int oauth_answer(json_t *resp, const struct login_tokens *old, struct login_tokens *n)
{
	const char *a = login_json_str(resp, "access_token"),
		   *r = login_json_str(resp, "refresh_token"),
		   *id = login_json_str(resp, "id_token");
	json_t *ein = json_object_get(resp, "expires_in");

	if (!a || !*a)
		return util_err(-EKEYEXPIRED, "the token endpoint's answer holds no access_token");
	n->access = strdup(a);
	n->refresh = strdup(r && *r ? r : old->refresh);
	n->id_token = id && *id ? strdup(id) : old->id_token ? strdup(old->id_token) : NULL;
	n->account = old->account ? strdup(old->account) : NULL;
	n->expires_ms = json_is_integer(ein) ? now_ms() + json_integer_value(ein) * 1000 : 0;
	if (!n->access || !n->refresh || (old->account && !n->account))
		return util_err(-ENOMEM, "out of memory");
	return 0;
}

static int claude_update(json_t *root, const struct login_tokens *n)
{
	json_t *o = json_object_get(root, "claudeAiOauth");
	int rc = set_str(o, "accessToken", n->access);

	rc = rc ?: set_str(o, "refreshToken", n->refresh);
	if (rc == 0 && n->expires_ms &&
	    json_object_set_new(o, "expiresAt", json_integer(n->expires_ms)) < 0)
		rc = util_err(-ENOMEM, "out of memory");
	return rc;
}

static json_t *claude_box(const struct proxy_login *l, const char *ph)
{
	json_t *o = json_deep_copy(l->box_info), *root;

	if (!o)
		o = json_object();
	json_object_set_new(o, "accessToken", json_string(ph));
	json_object_set_new(o, "refreshToken", json_string(l->ph_refresh));
	json_object_set_new(o, "expiresAt", json_integer(now_ms() + LOGIN_BOX_LIFETIME_S * 1000));
	root = json_pack("{s:o}", "claudeAiOauth", o);
	return root;
}

static json_t *claude_box_answer(const struct proxy_login *l, const char *ph)
{
	char scope[512];

	scope_string(l, scope, sizeof(scope));
	return json_pack("{s:s, s:s, s:I, s:s, s:s}", "token_type", "Bearer", "access_token", ph,
			 "expires_in", (json_int_t)LOGIN_BOX_LIFETIME_S, "refresh_token",
			 l->ph_refresh, "scope", scope);
}

static const char *const claude_keep[] = {"scopes", "subscriptionType", "rateLimitTier", NULL};

const struct login_kind login_kind_claude = {
    .title = "Claude Code subscription",
    .fix = "run 'claude auth login' (or /login inside claude) on the host, or give an API key",
    .token_url = "https://platform.claude.com/v1/oauth/token",
    .client_id = "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
    .local_path = "/v1/oauth/token",
    .account_hdr = NULL,
    .dump_flags = JSON_COMPACT,
    .box_keep = claude_keep,
    .box_keep_in = "claudeAiOauth",
    .parse = claude_parse,
    .grant = claude_grant,
    .answer = oauth_answer,
    .update = claude_update,
    .box = claude_box,
    .box_answer = claude_box_answer,
};

/* ---- Codex ---------------------------------------------------------------------------- */

/* The claims object OpenAI puts its account and plan in. */
#define CODEX_AUTH_CLAIM "https://api.openai.com/auth"

static int codex_parse(const struct proxy_login *l, json_t *root, struct login_tokens *t)
{
	json_t *o = json_object_get(root, "tokens"), *claims = NULL, *exp;
	int rc;

	if (!json_is_object(o))
		return util_err(-EINVAL, "%s holds no ChatGPT login (no tokens); %s", l->path,
				l->kind->fix);
	rc = login_json_take(l, o, "access_token", true, &t->access);
	rc = rc ?: login_json_take(l, o, "refresh_token", false, &t->refresh);
	rc = rc ?: login_json_take(l, o, "id_token", true, &t->id_token);
	rc = rc ?: login_json_take(l, o, "account_id", false, &t->account);
	if (rc < 0)
		return rc;
	claims = login_jwt_claims(t->id_token);
	if (!claims)
		return util_err(-EINVAL, "%s: id_token is not a JWT; %s", l->path, l->kind->fix);
	if (!t->account) {
		const char *a =
		    login_json_str(json_object_get(claims, CODEX_AUTH_CLAIM), "chatgpt_account_id");

		t->account = a ? strdup(a) : NULL;
	}
	json_decref(claims);
	/* The access token's own expiry, when it is a JWT. */
	claims = login_jwt_claims(t->access);
	exp = json_object_get(claims, "exp");
	t->expires_ms = json_is_integer(exp) ? json_integer_value(exp) * 1000 : 0;
	json_decref(claims);
	return 0;
}

/* As Codex itself asks (no scope). */
static json_t *codex_grant(const struct proxy_login *l, const char *rt)
{
	return json_pack("{s:s, s:s, s:s}", "client_id", l->kind->client_id, "grant_type",
			 "refresh_token", "refresh_token", rt);
}

static int codex_answer(json_t *resp, const struct login_tokens *old, struct login_tokens *n)
{
	int rc = oauth_answer(resp, old, n);
	json_t *claims = rc == 0 ? login_jwt_claims(n->access) : NULL;
	json_t *exp = json_object_get(claims, "exp");

	if (json_is_integer(exp))
		n->expires_ms = json_integer_value(exp) * 1000;
	json_decref(claims);
	return rc;
}

static void rfc3339_now(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int codex_update(json_t *root, const struct login_tokens *n)
{
	json_t *o = json_object_get(root, "tokens");
	char now[40];
	int rc = set_str(o, "access_token", n->access);

	rc = rc ?: set_str(o, "refresh_token", n->refresh);
	rc = rc ?: set_str(o, "id_token", n->id_token);
	rfc3339_now(now, sizeof(now));
	return rc ?: set_str(root, "last_refresh", now);
}

static json_t *codex_box(const struct proxy_login *l, const char *ph)
{
	char now[40];
	json_t *root = json_deep_copy(l->box_info);

	if (!root)
		root = json_object();
	rfc3339_now(now, sizeof(now));
	json_object_set_new(root, "OPENAI_API_KEY", json_null());
	json_object_set_new(root, "tokens",
			    json_pack("{s:s, s:s, s:s, s:s}", "id_token", l->ph_id_token,
				      "access_token", ph, "refresh_token", l->ph_refresh,
				      "account_id", l->ph_account));
	json_object_set_new(root, "last_refresh", json_string(now));
	return root;
}

static json_t *codex_box_answer(const struct proxy_login *l, const char *ph)
{
	return json_pack("{s:s, s:s, s:s, s:I}", "id_token", l->ph_id_token, "access_token", ph,
			 "refresh_token", l->ph_refresh, "expires_in",
			 (json_int_t)LOGIN_BOX_LIFETIME_S);
}

static const char *const codex_keep[] = {"auth_mode", NULL};

const struct login_kind login_kind_codex = {
    .title = "Codex ChatGPT",
    .fix = "run 'codex login' on the host, or give an API key",
    .token_url = "https://auth.openai.com/oauth/token",
    .client_id = "app_EMoamEEZ73f0CkXaXp7hrann",
    .local_path = "/oauth/token",
    .account_hdr = "chatgpt-account-id",
    .dump_flags = JSON_INDENT(2),
    .box_keep = codex_keep,
    .parse = codex_parse,
    .grant = codex_grant,
    .answer = codex_answer,
    .update = codex_update,
    .box = codex_box,
    .box_answer = codex_box_answer,
};
