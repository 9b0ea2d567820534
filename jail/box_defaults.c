/*
 * jail/box_defaults.c: the default box's mounts. The root (walls.c); private /dev and /proc;
 * the workspace's tmp, cache and home in place of the host's; guards over $HOME, /run, the
 * origin checkout and its state directory (.git/arborinth); the workdir and the origin's objects
 * re-exposed below them; PATH entries under $HOME read-only.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int jail_box_add(struct jail_box *b, enum jail_mount_type type, enum jail_mount_origin origin,
		 unsigned flags, unsigned perms, const char *src, const char *dest,
		 const char *protects, const char *why)
{
	struct jail_mount m = {.type = type, .origin = origin, .flags = flags, .perms = perms};
	int rc;

	if (!dest || dest[0] != '/' || jail_path_norm(dest, &m.dest) < 0)
		return util_err(-EINVAL,
				"jail: mount destination '%s' is not a plain absolute path",
				dest ? dest : "");
	if (type == JAIL_MOUNT_RO || type == JAIL_MOUNT_RW) {
		m.src = src && src[0] == '/' ? jail_path_real(src) : NULL;
		if (!m.src) {
			free(m.dest);
			return util_err(-EINVAL, "jail: bind source '%s' is not absolute",
					src ? src : "");
		}
	}
	m.protects = (char *)protects;
	m.why = (char *)why;
	rc = jail_mounts_add(&b->mounts, &m);
	free(m.src);
	free(m.dest);
	return rc;
}

static int add_guard(struct jail_box *b, enum jail_mount_type type, unsigned flags, const char *src,
		     const char *dest, const char *why)
{
	char *real = jail_path_real(dest);
	int rc;

	if (!real)
		return util_err(-ENOMEM, "out of memory");
	rc = jail_box_add(b, type, JAIL_FROM_GUARD, flags, 0, src, dest, real, why);
	free(real);
	return rc;
}

/* The origin checkout and its state directory, with the workdir and the objects under them. */
static int add_origin(struct jail_box *b)
{
	const char *top;
	int rc = 0;

	/* At / or at $HOME the checkout is already replaced by a mount of its own. */
	if (strcmp(b->origin_root, "/") && !jail_mounts_find(&b->mounts, b->origin_root))
		rc = add_guard(b, JAIL_MOUNT_TMPFS, JAIL_MOUNT_SEAL, NULL, b->origin_root,
			       "origin checkout hidden, read-only (its untracked files may hold "
			       "secrets); the box works on the workspace view");
	else
		jail_strv_pushf(&b->notes,
				"the origin checkout %s is not masked by a guard of its "
				"own (it is / or $HOME)",
				b->origin_root);
	if (rc == 0)
		rc = add_guard(
		    b, JAIL_MOUNT_TMPFS, JAIL_MOUNT_SEAL, NULL, b->state_dir,
		    "the origin's arborinth state hidden, read-only: no other workspace, no "
		    "state.db, no blob cache");
	/* A linked worktree's, <commondir>/arborinth/worktrees/ID: all of arborinth/ hidden. */
	if (rc == 0 && (top = strstr(b->state_dir, "/arborinth/worktrees/")) &&
	    !strchr(top + 21, '/') && top[21]) {
		char *dir = strndup(b->state_dir, (size_t)(top - b->state_dir) + 10);

		rc = dir ? add_guard(b, JAIL_MOUNT_TMPFS, JAIL_MOUNT_SEAL, NULL, dir,
				     "the repository's arborinth state hidden, read-only: no other "
				     "worktree's workspaces or state.db")
			 : util_err(-ENOMEM, "out of memory");
		free(dir);
	}
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, 0, b->objects_view,
				  b->origin_objects, NULL,
				  "at the origin's object store, the objects of the base's history "
				  "only, so git in the box sees history");
	if (rc == 0 && b->origin_store)
		rc = jail_box_add(b, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, 0, b->origin_store,
				  b->origin_store, NULL,
				  "what the origin's branches and tags reach, read-only: git log "
				  "origin/main in the box");
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT, JAIL_MOUNT_BOX_WRITABLE, 0,
				  b->workdir, b->workdir, NULL, "the workspace view, read-write");
	return rc;
}

/* /etc/resolv.conf often links into /run (systemd-resolved): bind its target back. */
static int add_resolv_conf(struct jail_box *b)
{
	char *real = jail_path_real("/etc/resolv.conf");
	struct stat st;
	int rc = 0;

	if (!real)
		return util_err(-ENOMEM, "out of memory");
	if (strcmp(real, "/etc/resolv.conf") && stat(real, &st) == 0 && S_ISREG(st.st_mode) &&
	    !jail_box_shows(b, real))
		rc = jail_box_add(b, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, 0, real, real, NULL,
				  "target of /etc/resolv.conf, so name resolution works");
	free(real);
	return rc;
}

const struct jail_mount *jail_box_path_conflict(const struct jail_box *b, const char *real)
{
	const struct jail_mounts *m = &b->mounts;

	for (size_t i = 0; i < m->n; i++) {
		const char *p = m->v[i].protects;

		/* Containing a hidden path reopens it; inside one, only $HOME's may be shown. */
		if (p && (util_path_under(p, real) ||
			  (util_path_under(real, p) && strcmp(m->v[i].dest, b->home))))
			return &m->v[i];
	}
	return NULL;
}

static int add_path_entry(struct jail_box *b, const char *entry)
{
	char *norm = NULL, *real = NULL, *why = NULL, *secret = NULL;
	const struct jail_mount *c;
	struct stat st;
	int rc = 0;

	if (entry[0] != '/' || jail_path_norm(entry, &norm) < 0)
		goto out;
	real = jail_path_real(norm);
	if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		goto out;
	if (!util_path_under(norm, b->home) && !util_path_under(real, b->home_real))
		goto out;
	if (util_secret_path(real, b->home_real, &secret)) {
		jail_strv_pushf(&b->notes,
				"PATH entry %s not mounted: it would expose credentials (%s)",
				entry, secret);
		goto out;
	}
	if ((c = jail_box_path_conflict(b, real))) {
		jail_strv_pushf(&b->notes, "PATH entry %s not mounted: %s would expose %s (%s)",
				entry, real, c->protects, c->why);
		goto out;
	}
	/* At its own path when that is under $HOME; else where its symlink leads. */
	const char *dest = util_path_under(norm, b->home) ? norm : real;

	if (jail_mounts_find(&b->mounts, dest))
		goto out; /* listed twice, or already mounted */
	why = strcmp(norm, real) ? util_asprintf("PATH entry under $HOME (%s)", entry)
				 : strdup("PATH entry under $HOME");
	rc = why ? jail_box_add(b, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, 0, real, dest, NULL, why)
		 : util_err(-ENOMEM, "out of memory");
out:
	free(secret);
	free(why);
	free(real);
	free(norm);
	return rc;
}

/*
 * Whether entry d (inside dirs, split in place by strtok_r) came earlier: a PATH that names a
 * folder twice is scanned once, as what it leads to is the same.
 */
static bool seen_before(const char *dirs, const char *d)
{
	for (const char *e = dirs; e < d; e += strlen(e) + 1) {
		while (e < d && *e == ':')
			e++; /* strtok_r leaves the colons of empty entries */
		if (e < d && !strcmp(e, d))
			return true;
	}
	return false;
}

int jail_box_path_each(struct jail_box *b, int (*fn)(struct jail_box *b, const char *entry))
{
	const char *path = jail_env_get(b->host.v, "PATH");
	char *dirs = strdup(path ? path : "");
	int rc = 0;

	if (!dirs)
		return util_err(-ENOMEM, "out of memory");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && rc == 0;
	     d = strtok_r(NULL, ":", &save))
		if (!seen_before(dirs, d))
			rc = fn(b, d);
	free(dirs);
	return rc;
}

int jail_box_defaults(struct jail_box *b)
{
	char *tmp_why = util_asprintf("workspace scratch (%s)", b->tmp);
	int rc;

	if (!tmp_why)
		return util_err(-ENOMEM, "out of memory");
	rc = jail_box_root(b);
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_DEV, JAIL_FROM_DEFAULT, 0, 0, NULL, "/dev", NULL,
				  "private /dev");
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_PROC, JAIL_FROM_DEFAULT, 0, 0, NULL, "/proc",
				  "/proc", "private /proc: only the box's processes");
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT,
				  JAIL_MOUNT_REPLACEABLE | JAIL_MOUNT_BOX_WRITABLE, 0, b->tmp,
				  "/tmp", NULL, tmp_why);
	if (rc == 0)
		rc = add_guard(b, JAIL_MOUNT_RW, JAIL_MOUNT_BOX_WRITABLE, b->home_src, b->home,
			       "$HOME: the workspace's home replaces the real one, whose secrets "
			       "stay hidden");
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_RW, JAIL_FROM_DEFAULT,
				  JAIL_MOUNT_REPLACEABLE | JAIL_MOUNT_BOX_WRITABLE, 0, b->cache_src,
				  b->cache_dest, NULL, "$XDG_CACHE_HOME: the workspace's cache");
	if (rc == 0)
		rc = add_guard(b, JAIL_MOUNT_TMPFS, 0, NULL, "/run",
			       "host sockets and runtime state hidden (D-Bus, ssh-agent, ...)");
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_TMPFS, JAIL_FROM_DEFAULT, 0, 0700, NULL,
				  b->runtime_dir, NULL, "private, empty $XDG_RUNTIME_DIR");
	if (rc == 0)
		rc = add_resolv_conf(b);
	if (rc == 0)
		rc = add_origin(b);
	if (rc == 0)
		rc = jail_box_add(b, JAIL_MOUNT_RO, JAIL_FROM_DEFAULT, 0, 0, b->box_init,
				  JAIL_BOX_INIT_PATH, NULL, "box-init, pid 1 in the box");
	if (rc == 0)
		rc = jail_box_path_each(b, add_path_entry);
	if (rc == 0)
		rc = jail_strv_ok(&b->notes);
	free(tmp_why);
	return rc;
}
