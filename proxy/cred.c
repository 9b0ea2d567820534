/* proxy/cred.c: credential sources (read on the host only) and per-box placeholders. */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

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

int proxy_backend_load_credential(struct proxy_backend *b)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (b->key_file) {
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

void proxy_secret_free(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
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
