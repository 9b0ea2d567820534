/*
 * proxy/token_cache.c: access tokens shared by one user's proxies, so that eight boxes on one
 * credential mint one token, not eight. One file per credential (named by the SHA-256 of the
 * credential file's content and what the token is for: another account's file never meets
 * this one's token) in a private folder (token_dir.c; mode 0700, files 0600, opened without
 * following links). Under an exclusive flock on the file (flock.c, as the logins do) each
 * proxy re-reads it, takes a token with more than the refresh margin left, or else mints one
 * and replaces the file whole (a temporary file renamed over it), so a holder killed with -9
 * leaves the old entry or the new one, never half of one. What the file holds is checked
 * before use (proxy_token_parse): anything else is ignored and minted over.
 */
#include "proxy/token_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/login_internal.h"

#define LOCK_WAIT_MS (90 * 1000) /* a mint may take two token requests */
#define FUTURE_MS    (60 * 1000) /* minted later than now + this: the clock went back */

struct proxy_token_cache {
	int dfd;       /* the folder, or -1: this process only */
	char *shown;   /* the file's path, for messages */
	char name[96]; /* KIND-HEX */
	char key[65];  /* HEX, written in the file too */
};

static atomic_bool noted;

/* One line, once per process: why boxes on one credential do not share its tokens. */
static void note(const char *why)
{
	if (!atomic_exchange(&noted, true))
		fprintf(stderr,
			"arborinth: note: tokens are not shared with other boxes' proxies (%s); "
			"this box's proxy mints its own\n",
			why);
}

void proxy_token_clear(struct proxy_token *t)
{
	proxy_secret_free(&t->token);
	t->expires_ms = t->minted_ms = 0;
}

/* RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". */
static bool b64token_ok(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			     "-._~+/");

	return n > 0 && n <= PROXY_TOKEN_MAX && strspn(s + n, "=") == strlen(s + n) &&
	       strlen(s) <= PROXY_TOKEN_MAX;
}

int proxy_token_parse(const char *text, size_t len, const char *key, int64_t now_ms,
		      struct proxy_token *out)
{
	json_t *j = NULL, *v, *e, *m;
	const char *tok, *k;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (!text || len == 0 || len > PROXY_TOKEN_FILE_MAX || memchr(text, '\0', len))
		return -EINVAL;
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	v = json_object_get(j, "version");
	k = json_string_value(json_object_get(j, "key"));
	tok = json_string_value(json_object_get(j, "token"));
	e = json_object_get(j, "expires_ms");
	m = json_object_get(j, "minted_ms");
	if (!json_is_object(j) || !json_is_integer(v) || json_integer_value(v) != 1 || !k ||
	    strcmp(k, key) || !tok || !b64token_ok(tok) || !json_is_integer(e) ||
	    !json_is_integer(m))
		goto out;
	out->expires_ms = json_integer_value(e);
	out->minted_ms = json_integer_value(m);
	if (out->minted_ms <= 0 || out->expires_ms <= out->minted_ms ||
	    out->expires_ms - out->minted_ms > PROXY_TOKEN_LIFE_MAX_MS ||
	    out->minted_ms > now_ms + FUTURE_MS)
		goto out;
	out->token = strdup(tok);
	rc = out->token ? 0 : -ENOMEM;
out:
	if (rc < 0)
		out->expires_ms = out->minted_ms = 0;
	json_decref(j);
	return rc;
}

char *proxy_token_format(const struct proxy_token *t, const char *key)
{
	json_t *j = json_pack("{s:i, s:s, s:s, s:I, s:I}", "version", 1, "key", key, "token",
			      t->token, "expires_ms", (json_int_t)t->expires_ms, "minted_ms",
			      (json_int_t)t->minted_ms);
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(j);
	return text;
}

/* path as a folder of ours with mode 0700 (made when missing; its parent must exist). */
static int open_private(const char *path, int *out)
{
	struct stat st;
	int fd;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    ((st.st_mode & 077) && fchmod(fd, 0700) < 0)) {
		close(fd);
		return -EPERM;
	}
	*out = fd;
	return 0;
}

/* $XDG_RUNTIME_DIR's folder when that is the user's own, else the state folder. */
static int open_dir(int *dfd, char **path)
{
	char *rt = NULL, *st = NULL, *parent = NULL;
	const char *xdg = getenv("XDG_RUNTIME_DIR"), *home;
	struct stat sb;
	int rc = proxy_token_dirs(&rt, &st);

	*dfd = -1;
	*path = NULL;
	if (rc < 0)
		return rc;
	if (rt && stat(xdg, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == geteuid() &&
	    (parent = util_asprintf("%s/arborinth", xdg)) &&
	    (mkdir(parent, 0700) == 0 || errno == EEXIST) && open_private(rt, dfd) == 0) {
		*path = rt;
		rt = NULL;
		goto out;
	}
	free(parent);
	parent = NULL;
	/* Not in another user's home (sudo -E keeps HOME): root's files would lock them out. */
	home =
	    getenv("XDG_STATE_HOME") && getenv("XDG_STATE_HOME")[0] == '/' ? NULL : getenv("HOME");
	if (home && (stat(home, &sb) < 0 || sb.st_uid != geteuid())) {
		rc = -EPERM;
		goto out;
	}
	parent = st ? strndup(st, strlen(st) - strlen("/tokens")) : NULL;
	rc = parent ? util_mkdir_p(parent, 0700) : -ENOENT;
	rc = rc ?: open_private(st, dfd);
	if (rc == 0) {
		*path = st;
		st = NULL;
	}
out:
	free(parent);
	free(rt);
	free(st);
	return rc;
}

int proxy_token_cache_open(struct proxy_token_cache **out, const char *kind, const void *id,
			   size_t id_len)
{
	static const char tag[] = "arborinth token cache 1";
	struct proxy_token_cache *c = calloc(1, sizeof(*c));
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	char *dir = NULL;
	int rc = 0;

	*out = NULL;
	if (!c || !h || EVP_DigestInit_ex(h, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(h, tag, sizeof(tag)) != 1 ||
	    EVP_DigestUpdate(h, kind, strlen(kind) + 1) != 1 ||
	    EVP_DigestUpdate(h, id, id_len) != 1 || EVP_DigestFinal_ex(h, md, &mdlen) != 1 ||
	    mdlen != 32) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(c->key + 2 * i, 3, "%02x", md[i]);
	snprintf(c->name, sizeof(c->name), "%.24s-%s", kind, c->key);
	if (open_dir(&c->dfd, &dir) < 0) {
		note("no private folder for them: $XDG_RUNTIME_DIR/arborinth/tokens nor "
		     "~/.local/state/arborinth/tokens");
		goto out;
	}
	if (!(c->shown = util_asprintf("%s/%s", dir, c->name)))
		rc = util_err(-ENOMEM, "out of memory");
out:
	EVP_MD_CTX_free(h);
	free(dir);
	if (rc < 0) {
		proxy_token_cache_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void proxy_token_cache_free(struct proxy_token_cache *c)
{
	if (!c)
		return;
	if (c->dfd >= 0)
		close(c->dfd);
	free(c->shown);
	free(c);
}

const char *proxy_token_cache_path(const struct proxy_token_cache *c)
{
	return c->dfd >= 0 ? c->shown : NULL;
}

/*
 * Under the lock, before a mint: this file's temporary files (a writer that died before its
 * rename; a live one holds the lock), and anything else in the folder older than the longest
 * token lives (other credentials' expired entries, other dead writers' files).
 */
static void sweep(struct proxy_token_cache *c)
{
	char prefix[sizeof(c->name) + 8];
	int fd = dup(c->dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	int64_t now_s = util_now_ns() / 1000000000;
	struct dirent *e;
	struct stat st;

	snprintf(prefix, sizeof(prefix), ".%s.arb-", c->name);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, c->name))
			continue;
		if (strncmp(e->d_name, prefix, strlen(prefix)) &&
		    (fstatat(c->dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		     now_s - st.st_mtime < PROXY_TOKEN_LIFE_MAX_MS / 1000))
			continue;
		unlinkat(c->dfd, e->d_name, 0);
	}
	closedir(d);
}

/* The locked file's entry; false when it holds none we can use. */
static bool read_entry(struct proxy_token_cache *c, int fd, int64_t now, struct proxy_token *t)
{
	char buf[PROXY_TOKEN_FILE_MAX + 1];
	struct stat st;
	ssize_t n;
	bool ok;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077))
		return false;
	n = pread(fd, buf, sizeof(buf), 0);
	ok = n > 0 && proxy_token_parse(buf, (size_t)n, c->key, now, t) == 0;
	explicit_bzero(buf, sizeof(buf));
	return ok;
}

/* Whether t is the token to send at now (see proxy_token_cache_get). */
static bool usable(const struct proxy_token *t, const struct proxy_token *have, bool refused,
		   int64_t now)
{
	if (!t->token || t->expires_ms - now <= PROXY_LOGIN_MARGIN_MS)
		return false;
	if (!refused || !have->token || strcmp(have->token, t->token))
		return true;
	/* At most one new token per LOGIN_REFUSED_MIN_MS, whatever the upstream answers. */
	return now - t->minted_ms < LOGIN_REFUSED_MIN_MS;
}

static int copy(const struct proxy_token *t, struct proxy_token *out)
{
	*out = *t;
	out->token = strdup(t->token);
	return out->token ? 0 : util_err(-ENOMEM, "out of memory");
}

/* Mints and, with a locked file, writes the entry back. */
static int mint_store(struct proxy_token_cache *c, int fd, proxy_token_mint_fn mint, void *ctx,
		      struct proxy_token *out)
{
	int64_t now = util_now_ns() / 1000000;
	char *text;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = mint(ctx, out);
	if (rc < 0)
		return rc;
	out->minted_ms = now;
	if (fd < 0)
		return 0;
	sweep(c);
	text = proxy_token_format(out, c->key);
	if (!text ||
	    util_write_file_at(c->dfd, c->name, text, strlen(text), 0600, (uid_t)-1, (gid_t)-1) < 0)
		note(text ? util_err_msg() : "out of memory");
	proxy_secret_free(&text);
	return 0;
}

int proxy_token_cache_get(struct proxy_token_cache *c, const struct proxy_token *have, bool refused,
			  proxy_token_mint_fn mint, void *ctx, struct proxy_token *out,
			  bool *minted)
{
	int64_t now = util_now_ns() / 1000000;
	struct proxy_token cur = {0};
	int fd = -1, rc;
	bool got;

	*minted = false;
	memset(out, 0, sizeof(*out));
	if (c->dfd >= 0 && proxy_flock_open(c->dfd, c->name, c->shown, O_RDWR | O_CREAT, 0600,
					    LOCK_WAIT_MS, &fd) < 0)
		note(util_err_msg()); /* a cache in the way never stops the box */
	if (fd >= 0)
		got = read_entry(c, fd, now, &cur);
	else
		got = have->token && copy(have, &cur) == 0;
	if (got && usable(&cur, have, refused, now)) {
		*out = cur;
		memset(&cur, 0, sizeof(cur));
		rc = 0;
	} else {
		rc = mint_store(c, fd, mint, ctx, out);
		*minted = rc == 0;
	}
	proxy_token_clear(&cur);
	if (fd >= 0)
		close(fd); /* lets the next process in */
	return rc;
}
