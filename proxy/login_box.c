/*
 * proxy/login_box.c: the box's side of a login. The box gets a login file of its own in which
 * every secret is a placeholder of this proxy (the access token's is the backend's
 * placeholder; refresh token, Codex's id token and account id have their own), valid for a
 * year so the client does not refresh. A refresh the client sends anyway reaches the proxy's
 * relay and is answered here with the same placeholders; it never goes upstream.
 */
#include "proxy/login_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* Non-secret fields the box's copy keeps, so the client shows the right plan. */
static json_t *box_info(const struct proxy_login *l, json_t *root)
{
	json_t *out = json_object();
	json_t *src = l->kind->box_keep_in ? json_object_get(root, l->kind->box_keep_in) : root;

	for (const char *const *k = l->kind->box_keep; out && *k; k++) {
		json_t *v = json_object_get(src, *k);

		if (v && (json_is_string(v) || json_is_array(v)))
			json_object_set_new(out, *k, json_deep_copy(v));
	}
	return out;
}

/*
 * The box's account id: a random UUID, or, when the real id is not one, random lower-case
 * hex of the real id's length (at least 8), so the proxy can swap the real one for it in
 * what the upstream answers without changing a length.
 */
static char *account_placeholder(const char *real)
{
	size_t len = real ? strlen(real) : 0, n = len >= 8 && len <= 128 ? len : 36;
	unsigned char r[128];
	char *out = malloc(n + 1);

	if (!out || getrandom(r, n, 0) != (ssize_t)n) {
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = "0123456789abcdef"[r[i] & 15];
	if (n == 36) {
		out[8] = out[13] = out[18] = out[23] = '-';
		out[14] = '4';
		out[19] = "89ab"[r[19] & 3];
	}
	out[n] = '\0';
	return out;
}

/*
 * Codex reads plan and account from the id token. The box's carries what the README promises
 * and nothing else of the host's identity: the e-mail and the plan, our placeholder account,
 * and our own issue and expiry times (Codex checks them).
 */
static char *id_token_placeholder(const struct proxy_login *l)
{
	json_t *host = login_jwt_claims(l->tok.id_token);
	json_t *host_auth = json_object_get(host, "https://api.openai.com/auth");
	json_t *email = json_object_get(host, "email");
	json_t *plan = json_object_get(host_auth, "chatgpt_plan_type");
	json_t *c = json_object(), *auth = json_object();
	int64_t now = util_now_ns() / 1000000000;
	char *out = NULL;

	if (!c || !auth)
		goto out;
	if (json_is_string(email))
		json_object_set(c, "email", email);
	if (json_is_string(plan))
		json_object_set(auth, "chatgpt_plan_type", plan);
	json_object_set_new(auth, "chatgpt_account_id", json_string(l->ph_account));
	json_object_set(c, "https://api.openai.com/auth", auth);
	json_object_set_new(c, "iat", json_integer(now));
	json_object_set_new(c, "exp", json_integer(now + LOGIN_BOX_LIFETIME_S));
	out = login_jwt_make(c);
out:
	json_decref(auth);
	json_decref(c);
	json_decref(host);
	return out;
}

int login_placeholders_make(struct proxy_login *l, json_t *root)
{
	char buf[PROXY_PLACEHOLDER_LEN + 1];
	int rc = proxy_placeholder_make(buf, sizeof(buf), "refresh");

	if (rc < 0)
		return rc;
	l->ph_refresh = strdup(buf);
	l->ph_account = account_placeholder(l->tok.account);
	l->box_info = box_info(l, root);
	if (!l->ph_refresh || !l->ph_account || !l->box_info)
		return util_err(-ENOMEM, "out of memory");
	if (l->tok.id_token) {
		l->ph_id_token = id_token_placeholder(l);
		if (!l->ph_id_token)
			return util_err(-ENOMEM, "out of memory");
	}
	return 0;
}

int proxy_login_box_file(const struct proxy *p, const char *backend, char **out)
{
	const struct proxy_backend *b = NULL;
	json_t *j;

	*out = NULL;
	for (size_t i = 0; i < p->n_backends; i++)
		if (!strcmp(p->backends[i]->name, backend))
			b = p->backends[i];
	if (!b || !b->login)
		return util_err(-ENOENT, "backend %s has no login", backend);
	j = b->login->kind->box(b->login, b->placeholder);
	*out = j ? json_dumps(j, b->login->kind->dump_flags) : NULL;
	json_decref(j);
	return *out ? 0 : util_err(-ENOMEM, "out of memory");
}

/* The refresh_token of a JSON or form-encoded grant; NULL when absent. Caller frees. */
static char *grant_refresh_token(const char *body, size_t len)
{
	json_t *j = json_loadb(body, len, 0, NULL);
	const char *v = login_json_str(j, "refresh_token");
	char *out = v ? strdup(v) : NULL;

	json_decref(j);
	if (out || j)
		return out;
	for (const char *s = body; s && s < body + len;
	     s = memchr(s, '&', (size_t)(body + len - s))) {
		if (*s == '&')
			s++;
		if (!strncmp(s, "refresh_token=", 14)) {
			const char *e = memchr(s, '&', (size_t)(body + len - s));

			return strndup(s + 14,
				       e ? (size_t)(e - s - 14) : (size_t)(body + len - s - 14));
		}
	}
	return NULL;
}

int proxy_login_box_answer(const struct proxy_backend *b, const char *body, size_t len, int *status,
			   char **json)
{
	char *rt = grant_refresh_token(body, len);
	json_t *j;

	*json = NULL;
	if (rt && proxy_secret_equal(rt, b->login->ph_refresh)) {
		*status = 200;
		j = b->login->kind->box_answer(b->login, b->placeholder);
	} else {
		*status = 400;
		j = json_pack("{s:s, s:s}", "error", "invalid_grant", "error_description",
			      "arborinth proxy: not this box's refresh token");
	}
	free(rt);
	*json = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return *json ? 0 : util_err(-ENOMEM, "out of memory");
}
