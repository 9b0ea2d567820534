/*
 * proxy/login.c: OAuth logins kept on the host (Claude Code's .credentials.json, Codex's
 * auth.json). The proxy sends the file's current access token upstream, refreshes it on the
 * host shortly before it expires and writes the new tokens back atomically with the file's
 * mode and owner, so the host's own client keeps working. Processes share one refresh: an
 * exclusive flock on the file (re-opened when another process replaced it) around re-read,
 * refresh and write-back, so a single-use refresh token is spent once and its successor
 * never lost. A token the upstream refuses is refreshed once, and not again while the file
 * is younger than LOGIN_REFUSED_MIN_MS (refused_again). The box gets its own copy of the file
 * with placeholders (login_box.c).
 */
#include "proxy/login_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_WAIT_MS (60 * 1000)

const struct login_kind *login_kind_get(enum proxy_login_kind k)
{
	return k == PROXY_LOGIN_CODEX ? &login_kind_codex : &login_kind_claude;
}

void login_tokens_clear(struct login_tokens *t)
{
	proxy_secret_free(&t->access);
	proxy_secret_free(&t->refresh);
	proxy_secret_free(&t->id_token);
	proxy_secret_free(&t->account);
	t->expires_ms = 0;
}

void proxy_login_free(struct proxy_login *l)
{
	if (!l)
		return;
	login_tokens_clear(&l->tok);
	json_decref(l->box_info);
	free(l->path);
	free(l->token_url);
	free(l->ca_file);
	proxy_secret_free(&l->ph_refresh);
	proxy_secret_free(&l->ph_id_token);
	proxy_secret_free(&l->ph_account);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* Reads and parses the file behind fd into t (and the box's non-secret fields). */
static int load_fd(struct proxy_login *l, int fd, struct login_tokens *t, json_t **root_out)
{
	json_error_t err;
	json_t *root;
	int rc;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return util_err(-errno, "cannot read %s: %s", l->path, strerror(errno));
	root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return util_err(-EINVAL, "%s is not a %s login file (%s at line %d); %s", l->path,
				l->kind->title, err.text, err.line, l->kind->fix);
	rc = l->kind->parse(l, root, t);
	if (rc == 0 && root_out)
		*root_out = json_incref(root);
	json_decref(root);
	return rc;
}

static int open_file(struct proxy_login *l, int *fd)
{
	*fd = open(l->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (*fd >= 0)
		return 0;
	if (errno == ENOENT)
		return util_err(-ENOENT, "no %s login: %s does not exist; %s", l->kind->title,
				l->path, l->kind->fix);
	return util_err(-errno, "cannot read the %s login %s: %s", l->kind->title, l->path,
			strerror(errno));
}

int proxy_login_open(struct proxy_login **out, enum proxy_login_kind kind, const char *path,
		     const char *token_url, const char *ca_file)
{
	struct proxy_login *l = calloc(1, sizeof(*l));
	char real[PATH_MAX];
	json_t *root = NULL;
	struct stat st;
	int fd = -1, rc = 0;

	*out = NULL;
	if (!l)
		return util_err(-ENOMEM, "out of memory");
	pthread_mutex_init(&l->lock, NULL);
	l->kind = login_kind_get(kind);
	/* The file itself, where a dotfile manager made it a link: write-back replaces it. */
	l->path = strdup(realpath(path, real) ? real : path);
	l->token_url = strdup(token_url ? token_url : l->kind->token_url);
	l->ca_file = ca_file ? strdup(ca_file) : NULL;
	if (!l->path || !l->token_url || (ca_file && !l->ca_file)) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	rc = login_url_check(l->token_url);
	rc = rc ?: open_file(l, &fd);
	if (rc == 0 && fstat(fd, &st) < 0)
		rc = util_err(-errno, "cannot read %s: %s", l->path, strerror(errno));
	if (rc == 0 && !S_ISREG(st.st_mode))
		rc = util_err(-EINVAL, "%s is not a regular file; %s", l->path, l->kind->fix);
	rc = rc ?: load_fd(l, fd, &l->tok, &root);
	if (rc == 0) {
		l->ino = st.st_ino;
		l->mtime = st.st_mtim;
		rc = login_placeholders_make(l, root);
	}
out:
	json_decref(root);
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		proxy_login_free(l);
		return rc;
	}
	*out = l;
	return 0;
}

const char *proxy_login_path(const struct proxy_login *l)
{
	return l->path;
}

/* Locks the file, re-opening it while another process replaces it under us (flock.c). */
static int lock_file(struct proxy_login *l, int *out)
{
	int rc = proxy_flock_open(AT_FDCWD, l->path, l->path, O_RDONLY, 0, LOCK_WAIT_MS, out);

	if (rc == -ENOENT)
		return util_err(-ENOENT, "no %s login: %s does not exist; %s", l->kind->title,
				l->path, l->kind->fix);
	return rc;
}

/* Writes root back over the host file, keeping its mode and owner. */
static int write_back(struct proxy_login *l, int fd, json_t *root)
{
	char *dir = strdup(l->path), *slash, *text = NULL;
	struct stat st;
	int dfd = -1, rc;

	slash = dir ? strrchr(dir, '/') : NULL;
	if (!slash)
		return free(dir), util_err(-ENOMEM, "out of memory");
	*slash = '\0';
	rc = fstat(fd, &st) < 0 ? util_err(-errno, "%s: %s", l->path, strerror(errno)) : 0;
	text = rc == 0 ? json_dumps(root, l->kind->dump_flags) : NULL;
	if (rc == 0 && !text)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0) {
		dfd = open(*dir ? dir : "/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		if (dfd < 0)
			rc = util_err(-errno, "cannot open %s: %s", dir, strerror(errno));
	}
	if (rc == 0)
		rc = util_write_file_at(dfd, slash + 1, text, strlen(text), st.st_mode & 07777,
					geteuid() == 0 ? st.st_uid : (uid_t)-1, st.st_gid);
	if (rc < 0)
		rc = util_err(rc, "cannot write the refreshed login back to %s: %s", l->path,
			      util_err_msg());
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	if (dfd >= 0)
		close(dfd);
	free(dir);
	return rc;
}

static bool fresh(const struct login_tokens *t, int64_t now_ms)
{
	return t->expires_ms == 0 || t->expires_ms - now_ms > PROXY_LOGIN_MARGIN_MS;
}

static void adopt(struct proxy_login *l, struct login_tokens *t)
{
	login_tokens_clear(&l->tok);
	l->tok = *t;
	memset(t, 0, sizeof(*t));
}

/*
 * A refused token is refreshed only when the file was written LOGIN_REFUSED_MIN_MS ago or
 * more: a box whose requests the upstream always refuses (a fake or hostile upstream, a
 * revoked login) gets one refresh of the host's login, not one per request. The file's
 * mtime is what every process of every box sees (a refresh writes it back), so the bound
 * holds for all the boxes on one login; each token is refreshed at most once because the
 * refresh replaces it under the file lock.
 */
static int refused_again(const struct proxy_login *l, int fd)
{
	int64_t age_ms;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return util_err(-errno, "cannot read %s: %s", l->path, strerror(errno));
	age_ms = util_now_ns() / 1000000 -
		 ((int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000);
	if (age_ms <= -LOGIN_REFUSED_MIN_MS || age_ms >= LOGIN_REFUSED_MIN_MS)
		return 0;
	return util_err(-EKEYREJECTED,
			"the upstream refused the %s login in %s, refreshed or written %lld s "
			"ago; it is not refreshed again before it is %d min old (a box may not "
			"spend the host's refresh token at will); %s",
			l->kind->title, l->path, (long long)(age_ms > 0 ? age_ms / 1000 : 0),
			LOGIN_REFUSED_MIN_MS / 60000, l->kind->fix);
}

/*
 * Under the file lock: takes what the file holds now when it is fresh and not the token the
 * upstream refused (another process, or the host's client, refreshed it); else refreshes.
 */
static int refresh_locked(struct proxy_login *l, int fd)
{
	struct login_tokens t = {0}, n = {0};
	json_t *root = NULL;
	struct stat st;
	int rc = load_fd(l, fd, &t, &root);
	bool refused = l->stale && l->tok.access && t.access && !strcmp(l->tok.access, t.access);

	if (rc < 0)
		goto out;
	if (fresh(&t, util_now_ns() / 1000000)) {
		if (!refused) {
			adopt(l, &t);
			goto stamp;
		}
		/* Refused before its time: only the box's requests say so. */
		if ((rc = refused_again(l, fd)) < 0)
			goto out;
	}
	if (!t.refresh) {
		rc = util_err(-EKEYEXPIRED,
			      "the %s login in %s has expired and holds no refresh "
			      "token; %s",
			      l->kind->title, l->path, l->kind->fix);
		goto out;
	}
	rc = login_oauth_refresh(l, &t, &n);
	if (rc == 0)
		rc = l->kind->update(root, &n);
	if (rc == 0)
		rc = write_back(l, fd, root);
	if (rc < 0)
		goto out;
	adopt(l, &n);
	l->refreshes++;
stamp:
	l->stale = false;
	if (stat(l->path, &st) == 0) {
		l->ino = st.st_ino;
		l->mtime = st.st_mtim;
	}
out:
	login_tokens_clear(&t);
	login_tokens_clear(&n);
	json_decref(root);
	return rc;
}

/* True when the host file changed since we last read it (its own client refreshed). */
static bool file_changed(const struct proxy_login *l)
{
	struct stat st;

	return stat(l->path, &st) < 0 || st.st_ino != l->ino ||
	       st.st_mtim.tv_sec != l->mtime.tv_sec || st.st_mtim.tv_nsec != l->mtime.tv_nsec;
}

static int ensure_locked(struct proxy_login *l)
{
	int fd = -1, rc;

	if (fresh(&l->tok, util_now_ns() / 1000000) && !l->stale && !file_changed(l))
		return 0;
	rc = lock_file(l, &fd);
	if (rc < 0)
		return rc;
	rc = refresh_locked(l, fd);
	close(fd); /* drops the lock */
	return rc;
}

int proxy_login_ensure(struct proxy_login *l)
{
	int rc;

	pthread_mutex_lock(&l->lock);
	rc = ensure_locked(l);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int proxy_login_current(struct proxy_login *l, char **access, char **account)
{
	int rc;

	*access = NULL;
	if (account)
		*account = NULL;
	pthread_mutex_lock(&l->lock);
	rc = ensure_locked(l);
	if (rc == 0) {
		*access = strdup(l->tok.access);
		if (account && l->tok.account)
			*account = strdup(l->tok.account);
		if (!*access || (account && l->tok.account && !*account))
			rc = util_err(-ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&l->lock);
	if (rc < 0) {
		proxy_secret_free(access);
		if (account)
			proxy_secret_free(account);
	}
	return rc;
}

void proxy_login_refused(struct proxy_login *l, const char *access)
{
	pthread_mutex_lock(&l->lock);
	if (l->tok.access && !strcmp(l->tok.access, access))
		l->stale = true;
	pthread_mutex_unlock(&l->lock);
}

unsigned proxy_login_refreshes(struct proxy_login *l)
{
	unsigned n;

	pthread_mutex_lock(&l->lock);
	n = l->refreshes;
	pthread_mutex_unlock(&l->lock);
	return n;
}

const char *proxy_login_local_path(const struct proxy_login *l)
{
	return l ? l->kind->local_path : NULL;
}

const char *proxy_login_ph_account(const struct proxy_login *l)
{
	return l ? l->ph_account : NULL;
}

const char *proxy_login_account_header(const struct proxy_login *l)
{
	return l ? l->kind->account_hdr : NULL;
}

void proxy_backend_set_login(struct proxy_backend *b, struct proxy_login *l)
{
	if (b->login)
		b->login_free(b->login);
	b->login = l;
	b->login_free = proxy_login_free;
}
