/* proxy/cred.c: credential sources (read on the host only) and per-box placeholders. */
#include "proxy/proxy_internal.h"
#include "proxy/reapi_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#define CRED_MAX 1024

/* A credential travels in a header: printable ASCII without spaces, not '*' (redaction). */
static bool cred_valid(const char *s, size_t n)
{
	if (n == 0 || n > CRED_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '*')
			return false;
	return true;
}

/* One step of a JSON pointer (RFC 6901: ~1 is '/', ~0 is '~'), from *p up to '/' or end. */
static char *pointer_token(const char **p)
{
	size_t n = strcspn(*p, "/");
	char *tok = malloc(n + 1), *o = tok;

	for (size_t i = 0; tok && i < n; i++) {
		if ((*p)[i] == '~' && i + 1 < n && ((*p)[i + 1] == '0' || (*p)[i + 1] == '1'))
			*o++ = (*p)[++i] == '0' ? '~' : '/';
		else
			*o++ = (*p)[i];
	}
	if (tok)
		*o = '\0';
	*p += n;
	return tok;
}

/* key-json=FILE#/POINTER: the string at POINTER in the JSON (or JSONC) file. */
static int load_key_json(struct proxy_backend *b, char **out, size_t *len)
{
	const char *hash = strrchr(b->key_json, '#'), *p = hash + 1;
	char *path = strndup(b->key_json, (size_t)(hash - b->key_json)), *text = NULL;
	json_t *root = NULL, *v;
	size_t tlen = 0;
	int rc = path ? util_read_file(path, &text, &tlen) : -ENOMEM;

	if (rc < 0) {
		rc = util_err(-ENOKEY, "backend %s: cannot read %s: %s", b->name,
			      path ? path : "key file", strerror(-rc));
		goto out;
	}
	util_jsonc_strip(text, tlen);
	v = root = json_loadb(text, tlen, 0, NULL);
	while (v && *p == '/') {
		char *tok;

		p++;
		tok = pointer_token(&p);
		v = tok ? json_object_get(v, tok) : NULL;
		free(tok);
	}
	if (!json_is_string(v)) {
		rc =
		    util_err(-ENOKEY, "backend %s: %s holds no key at %s", b->name, path, hash + 1);
		goto out;
	}
	*len = json_string_length(v);
	*out = strndup(json_string_value(v), *len);
	rc = *out ? 0 : util_err(-ENOMEM, "out of memory");
out:
	if (text)
		explicit_bzero(text, tlen);
	free(text);
	json_decref(root); /* jansson frees its copy of the key without clearing it */
	free(path);
	return rc;
}

int proxy_backend_load_credential(struct proxy_backend *b)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (b->reapi && (rc = proxy_reapi_preflight(b)) < 0)
		return rc;
	if (proxy_reapi_uses_command(b))
		return 0; /* the token comes per stream from token-command= */
	if (b->key_json) {
		rc = load_key_json(b, &buf, &len);
		if (rc < 0)
			return rc;
		if (!cred_valid(buf, len)) {
			explicit_bzero(buf, len);
			free(buf);
			return util_err(-ENOKEY,
					"backend %s: the key in %s must be 1-%d printable "
					"characters",
					b->name, b->key_json, CRED_MAX);
		}
	} else if (b->key_file) {
		rc = util_read_file(b->key_file, &buf, &len);
		if (rc < 0)
			return util_err(-ENOKEY, "backend %s: cannot read key file %s: %s", b->name,
					b->key_file, strerror(-rc));
		while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
				   buf[len - 1] == ' ' || buf[len - 1] == '\t'))
			buf[--len] = '\0';
		if (!cred_valid(buf, len)) {
			explicit_bzero(buf, len);
			free(buf);
			return util_err(-ENOKEY,
					"backend %s: key file %s must hold one key (1-%d printable "
					"characters)",
					b->name, b->key_file, CRED_MAX);
		}
	} else {
		const char *v = getenv(b->key_env);

		if (!v || !*v)
			return util_err(-ENOKEY,
					"backend %s: no credential: set %s or give a key file",
					b->name, b->key_env);
		len = strlen(v);
		if (!cred_valid(v, len))
			return util_err(-ENOKEY,
					"backend %s: %s must hold one key (1-%d printable "
					"characters)",
					b->name, b->key_env, CRED_MAX);
		buf = strdup(v);
		if (!buf)
			return util_err(-ENOMEM, "out of memory");
	}
	b->credential = buf;
	return 0;
}

int proxy_placeholder_make(char *out, size_t size, const char *name)
{
	unsigned char rnd[16];
	char hex[sizeof(rnd) * 2 + 1];
	int n;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return util_err(-errno ?: -EIO, "cannot get random bytes: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	n = snprintf(out, size, "arb-%s-placeholder-%s", name, hex);
	if (n < 0 || (size_t)n >= size)
		return util_err(-ENAMETOOLONG, "placeholder too long");
	return 0;
}
