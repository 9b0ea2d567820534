/*
 * jail/walls.c: what of the host the box sees. Its root is an allow-list: an empty tmpfs,
 * read-only once built, holding the host's system folders read-only (/usr, /etc, /opt, /lib*,
 * /bin, /sbin, /sys, /nix where present; a symlink such as /bin -> usr/bin stays a symlink)
 * and what the profile mounts below it (the view, tmp, home, cache, --mount, grants, bind
 * files, tool managers). Nothing else of the host: no /var, /srv, /mnt, /media, /home.
 *
 * Then, once every mount is known, two kinds of host paths get an empty mount over each place
 * the box would show them through a bind (one naming them or any folder above them):
 * credentials the caller named (jail_box_hide: key files, login files, config folders) and
 * host path sockets. Sockets are found in /proc/net/unix (the host network namespace's bound
 * sockets, one read, no scan of the trees); a bind that names the socket itself keeps it, and
 * the workspace's own folders (the view, tmp, home, cache, the proxy's socket folder) keep theirs.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The host folders a toolchain needs, shown read-only at their own path when present. */
static const char *const system_dirs[] = {"/usr",   "/etc",   "/opt",	 "/bin", "/sbin", "/lib",
					  "/lib32", "/lib64", "/libx32", "/sys", "/nix"};

/* What the root note lists: the system folders and links the box got. */
static int root_note(struct jail_box *b, const char *shown)
{
	jail_strv_pushf(&b->notes,
			"root: an empty tmpfs (read-only once built) holding of the host only%s, "
			"and the mounts below; nothing else of the host (no /var, /srv, /mnt, "
			"/media, /home or other users' homes)",
			shown);
	return jail_strv_ok(&b->notes);
}

int jail_box_root(struct jail_box *b)
{
	char *shown = strdup(""), *more;
	int rc = jail_box_add(b, JAIL_MOUNT_TMPFS, JAIL_FROM_DEFAULT, JAIL_MOUNT_SEAL, 0, NULL, "/",
			      NULL, "the box's root: only the host folders below, read-only");

	for (size_t i = 0; i < ARB_ARRAY_LEN(system_dirs) && rc == 0 && shown; i++) {
		const char *d = system_dirs[i];
		char target[256];
		struct stat st;
		ssize_t len;

		if (lstat(d, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			len = readlink(d, target, sizeof(target) - 1);
			if (len <= 0)
				continue;
			target[len] = '\0';
			rc = jail_box_add(b, JAIL_MOUNT_SYMLINK, JAIL_FROM_DEFAULT,
					  JAIL_MOUNT_REPLACEABLE, 0, NULL, d, NULL,
					  "system folder link, as on the host");
			if (rc == 0) {
				struct jail_mount *x =
				    (struct jail_mount *)jail_mounts_find(&b->mounts, d);

				free(x->src);
				if (!(x->src = strdup(target)))
					rc = util_err(-ENOMEM, "out of memory");
			}
			more = util_asprintf("%s %s -> %s", shown, d, target);
		} else if (S_ISDIR(st.st_mode)) {
			rc = jail_box_add(b, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT,
					  JAIL_MOUNT_REPLACEABLE, 0, d, d, NULL,
					  "system folder, read-only");
			more = util_asprintf("%s %s", shown, d);
		} else {
			continue;
		}
		free(shown);
		shown = more;
	}
	if (rc == 0 && !shown)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = root_note(b, shown);
	free(shown);
	return rc;
}

/* The deepest mount whose destination holds `path` (at or above it), or NULL. */
static const struct jail_mount *deepest(const struct jail_mounts *m, size_t n, const char *path)
{
	const struct jail_mount *best = NULL;

	for (size_t i = 0; i < n; i++)
		if (util_path_under(path, m->v[i].dest) &&
		    (!best || strlen(m->v[i].dest) > strlen(best->dest)))
			best = &m->v[i];
	return best;
}

bool jail_box_shows(const struct jail_box *b, const char *real)
{
	const struct jail_mount *x = deepest(&b->mounts, b->mounts.n, real);

	return x && x->type == JAIL_MOUNT_RO && x->src && !strcmp(x->src, x->dest);
}

int jail_box_hide(struct jail_box *b, const char *path, const char *why)
{
	char *real;
	int rc;

	if (b->finished)
		return util_err(-EBUSY, "jail: the box is already finished");
	if (!path || path[0] != '/')
		return util_err(-EINVAL, "jail: credential path '%s' is not absolute",
				path ? path : "");
	real = jail_path_real(path); /* resolves '..' too, where the path exists */
	if (!real)
		return util_err(-ENOMEM, "out of memory");
	jail_strv_take(&b->hidden, real);
	jail_strv_push(&b->hidden, why);
	rc = jail_strv_ok(&b->hidden);
	return rc < 0 ? util_err(rc, "out of memory") : 0;
}

/* What a bind shows at host path `real`: its source (an overlay's lower layer), or NULL. */
static const char *bind_source(const struct jail_mount *x)
{
	if (x->type == JAIL_MOUNT_OVERLAY)
		return x->lower;
	return x->type == JAIL_MOUNT_RO || x->type == JAIL_MOUNT_RW ? x->src : NULL;
}

/* Turns mount x (a bind that names the credential itself) into its mask. */
static int become_mask(struct jail_mount *x, bool dir, const char *real, const char *why)
{
	char *w = util_asprintf("hidden: %s", why), *p = strdup(real);
	char *src = dir ? NULL : strdup("/dev/null");

	if (!w || !p || (!dir && !src)) {
		free(w), free(p), free(src);
		return util_err(-ENOMEM, "out of memory");
	}
	free(x->src), free(x->lower), free(x->upper), free(x->why), free(x->protects);
	*x = (struct jail_mount){.type = dir ? JAIL_MOUNT_TMPFS : JAIL_MOUNT_RO,
				 .origin = JAIL_FROM_GUARD,
				 .flags = dir ? JAIL_MOUNT_SEAL : 0,
				 .src = src,
				 .dest = x->dest,
				 .protects = p,
				 .why = w};
	return 0;
}

/*
 * Masks host path `real` wherever a bind among the first n mounts shows it: a sealed empty
 * tmpfs over a folder, /dev/null over anything else. A socket (`named_ok`) stays where a bind
 * names it exactly, or where the workspace's own folders show it.
 */
static int mask(struct jail_box *b, size_t n, const char *real, bool named_ok, const char *why)
{
	struct stat st;
	bool dir;
	int rc = 0;

	if (lstat(real, &st) < 0)
		return 0; /* nothing there to show */
	dir = S_ISDIR(st.st_mode);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct jail_mount *x = &b->mounts.v[i];
		const char *src = bind_source(x), *rest;
		char *dest, *w;

		if (!src || !util_path_under(real, src))
			continue;
		if (named_ok && util_path_under(src, b->ws_root))
			continue;
		rest = real + (strcmp(src, "/") ? strlen(src) : 0);
		if (!*rest) {
			if (!named_ok)
				rc = become_mask(x, dir, real, why);
			continue;
		}
		dest = strcmp(x->dest, "/") ? util_asprintf("%s%s", x->dest, rest) : strdup(rest);
		if (!dest)
			return util_err(-ENOMEM, "out of memory");
		/* A deeper mount decides what the box sees there (and is checked on its own). */
		if (deepest(&b->mounts, n, dest) == x) {
			w = util_asprintf("hidden: %s", why);
			rc = w ? jail_box_add(b, dir ? JAIL_MOUNT_TMPFS : JAIL_MOUNT_RO,
					      JAIL_FROM_GUARD, dir ? JAIL_MOUNT_SEAL : 0, 0,
					      dir ? NULL : "/dev/null", dest, real, w)
			       : util_err(-ENOMEM, "out of memory");
			free(w);
		}
		free(dest);
	}
	return rc;
}

int jail_box_mask(struct jail_box *b, size_t n, const char *real, const char *why)
{
	return mask(b, n, real, false, why);
}

/* Whether a bind among the first n mounts shows something at or below host path `real`. */
static bool reachable(const struct jail_box *b, size_t n, const char *real)
{
	for (size_t i = 0; i < n; i++) {
		const char *src = bind_source(&b->mounts.v[i]);

		if (src && util_path_under(real, src))
			return true;
	}
	return false;
}

/*
 * The host's bound path sockets (/proc/net/unix, the last field of each line: one read of a
 * few kilobytes), masked where a bind shows them.
 */
static int mask_sockets(struct jail_box *b, size_t n)
{
	char *buf = NULL, *save = NULL;
	size_t len = 0;
	int rc = util_read_file("/proc/net/unix", &buf, &len);

	if (rc < 0) {
		jail_strv_pushf(&b->notes, "host path sockets not checked: /proc/net/unix: %s",
				strerror(-rc));
		free(buf);
		return jail_strv_ok(&b->notes);
	}
	for (char *line = strtok_r(buf, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *path = line, *real;
		struct stat st;

		/* Num RefCount Protocol Flags Type St Inode Path */
		for (int f = 0; f < 7 && path; f++) {
			path += strspn(path, " ");
			path = strchr(path, ' ');
		}
		if (!path || *(path += strspn(path, " ")) != '/' || !reachable(b, n, path))
			continue;
		real = jail_path_real(path);
		if (!real)
			rc = util_err(-ENOMEM, "out of memory");
		else if (lstat(real, &st) == 0 && S_ISSOCK(st.st_mode))
			rc = mask(b, n, real, true, "a host socket");
		free(real);
	}
	free(buf);
	return rc;
}

/* Host variables that name a credential file or folder (agents' logins, cloud keys). */
static const char *const credential_vars[] = {
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "OPENCODE_CONFIG",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_SHARED_CREDENTIALS_FILE",
    "GH_CONFIG_DIR",
    "DOCKER_CONFIG",
};

int jail_box_walls(struct jail_box *b)
{
	/* Masks are checked against the mounts that show something, not each other. */
	size_t n = b->mounts.n;
	int rc = 0;

	for (size_t i = 0; i < ARB_ARRAY_LEN(credential_vars) && rc == 0; i++) {
		const char *v = jail_env_get(b->host.v, credential_vars[i]);
		char *why =
		    v && v[0] == '/' ? util_asprintf("$%s on the host", credential_vars[i]) : NULL;

		if (v && v[0] == '/')
			rc = why ? jail_box_hide(b, v, why) : util_err(-ENOMEM, "out of memory");
		free(why);
	}

	for (size_t i = 0; i + 1 < b->hidden.n && rc == 0; i += 2)
		rc = mask(b, n, b->hidden.v[i], false, b->hidden.v[i + 1]);
	if (rc == 0)
		rc = mask_sockets(b, n);
	if (rc == 0)
		rc = jail_box_root_only(b, n);
	return rc;
}
