/*
 * jail/overlay.c: overlay mounts (--mount overlay:SRC:DEST, a bind file's overlay = [...]).
 * The box sees SRC at DEST and may write there; the writes land in the workspace
 * (NAME/overlay/ENCODED-DEST.HASH-OF-SRC/upper, kept across runs) and SRC never changes.
 *
 * bwrap gained --overlay-src/--overlay only in 0.9.0 (Debian 12 has 0.8.0), so arborinth
 * mounts the kernel's overlayfs itself, the same way with every bwrap: the child that is
 * about to exec bwrap enters a private mount namespace (and, unless it is root, a user
 * namespace mapping only its own uid and gid, where Linux 5.11 and later allow overlayfs),
 * mounts each overlay on NAME/overlay/.../merged, then execs bwrap, which binds the merged
 * folder at DEST. The mounts exist only in that namespace: the host's mount table never sees
 * them and they vanish with the box.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* dest as one folder name: everything but [A-Za-z0-9._-] as %XX ("/srv/x" -> "%2Fsrv%2Fx"). */
static char *encode(const char *dest)
{
	char *out = malloc(3 * strlen(dest) + 1), *o = out;

	for (const unsigned char *p = (const unsigned char *)dest; out && *p; p++) {
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p))
			*o++ = (char)*p;
		else
			o += snprintf(o, 4, "%%%02X", *p);
	}
	if (out)
		*o = '\0';
	return out;
}

/* overlayfs splits its options at ',' and its layers at ':'; '\' escapes. */
static bool option_safe(const char *path)
{
	return !strpbrk(path, ",:\\");
}

/* FNV-1a of s: tells apart the sources overlaid at one destination. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* NAME/overlay/ENCODED-DEST.HASH-OF-SOURCE: one upper layer per destination and source. */
static int overlay_dir(const struct jail_box *b, const struct jail_mount *m, char **out)
{
	char *name = encode(m->dest);
	int rc = 0;

	*out = NULL;
	if (!name)
		return util_err(-ENOMEM, "out of memory");
	if (strlen(name) > 200)
		rc = util_err(-ENAMETOOLONG, "overlay at %s: the destination is too long", m->dest);
	else if (!(*out = util_asprintf("%s/overlay/%s.%016llx", b->ws_root, name,
					(unsigned long long)fnv1a(m->lower))))
		rc = util_err(-ENOMEM, "out of memory");
	free(name);
	return rc;
}

static int prepare_one(const struct jail_box *b, struct jail_mount *m)
{
	char *dir = NULL;
	struct stat st;
	int rc = 0;

	if (stat(m->lower, &st) < 0 || !S_ISDIR(st.st_mode))
		rc = util_err(-ENOTDIR, "overlay at %s: source %s is not a directory", m->dest,
			      m->lower);
	else if (!option_safe(m->lower) || !option_safe(b->ws_root))
		rc = util_err(-EINVAL,
			      "overlay at %s: overlayfs cannot take a path with ',', ':' or '\\' "
			      "(%s)",
			      m->dest, option_safe(m->lower) ? b->ws_root : m->lower);
	if (rc < 0)
		goto out;
	rc = overlay_dir(b, m, &dir);
	if (rc < 0)
		goto out;
	free(m->src);
	free(m->upper);
	m->src = util_path_join(dir, "merged");
	m->upper = util_path_join(dir, "upper");
	if (!m->src || !m->upper)
		rc = util_err(-ENOMEM, "out of memory");
out:
	free(dir);
	return rc;
}

int jail_box_overlays_prepare(struct jail_box *b)
{
	int rc = 0;

	for (size_t i = 0; i < b->mounts.n && rc == 0; i++)
		if (b->mounts.v[i].type == JAIL_MOUNT_OVERLAY)
			rc = prepare_one(b, &b->mounts.v[i]);
	return rc;
}

void jail_overlays_clear(struct jail_overlays *o)
{
	jail_strv_clear(&o->targets);
	jail_strv_clear(&o->options);
	jail_strv_clear(&o->labels);
}

/* DIR/upper, DIR/work and DIR/merged for one overlay; its mount options into o. */
static int plan_one(const struct jail_mount *m, bool userns, struct jail_overlays *o)
{
	char *dir = strdup(m->upper), *work = NULL;
	int rc = 0;

	if (!dir)
		return util_err(-ENOMEM, "out of memory");
	*strrchr(dir, '/') = '\0';
	work = util_path_join(dir, "work");
	if (!work) {
		free(dir);
		return util_err(-ENOMEM, "out of memory");
	}
	const char *mk[] = {m->upper, work, m->src};

	for (size_t i = 0; i < ARB_ARRAY_LEN(mk) && rc == 0; i++)
		if ((rc = util_mkdir_p(mk[i], 0700)) < 0)
			rc = util_err(rc, "cannot create %s: %s", mk[i], strerror(-rc));
	jail_strv_push(&o->targets, m->src);
	jail_strv_pushf(&o->options, "lowerdir=%s,upperdir=%s,workdir=%s%s", m->lower, m->upper,
			work, userns ? ",userxattr" : "");
	jail_strv_pushf(&o->labels, "overlay of %s at %s", m->lower, m->dest);
	free(work);
	free(dir);
	return rc;
}

int jail_overlays_plan(const struct jail_box *b, struct jail_overlays *o)
{
	int rc = 0;

	*o = (struct jail_overlays){.userns = geteuid() != 0};
	snprintf(o->uid_map, sizeof(o->uid_map), "%u %u 1", (unsigned)geteuid(),
		 (unsigned)geteuid());
	snprintf(o->gid_map, sizeof(o->gid_map), "%u %u 1", (unsigned)getegid(),
		 (unsigned)getegid());
	for (size_t i = 0; i < b->mounts.n && rc == 0; i++)
		if (b->mounts.v[i].type == JAIL_MOUNT_OVERLAY)
			rc = plan_one(&b->mounts.v[i], o->userns, o);
	if (rc == 0 && (jail_strv_ok(&o->targets) < 0 || jail_strv_ok(&o->options) < 0 ||
			jail_strv_ok(&o->labels) < 0))
		rc = util_err(-ENOMEM, "out of memory");
	if (rc < 0)
		jail_overlays_clear(o);
	return rc;
}

static void die(const char *what, const char *label)
{
	int e = errno;

	fprintf(stderr, "arborinth: %s: %s: %s%s\n", label, what, strerror(e),
		e == EPERM || e == EINVAL
		    ? " (unprivileged overlayfs needs Linux 5.11 or later and user namespaces)"
		    : "");
	_exit(JAIL_EXIT_SETUP);
}

static void write_proc(const char *path, const char *text, const char *label)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path, label);
	close(fd);
}

void jail_overlays_enter(const struct jail_overlays *o)
{
	const char *first = o->labels.n ? o->labels.v[0] : NULL;

	if (!first)
		return;
	if (unshare(o->userns ? CLONE_NEWUSER | CLONE_NEWNS : CLONE_NEWNS) < 0)
		die("cannot make a mount namespace", first);
	if (o->userns) {
		write_proc("/proc/self/setgroups", "deny", first);
		write_proc("/proc/self/uid_map", o->uid_map, first);
		write_proc("/proc/self/gid_map", o->gid_map, first);
	}
	/* Nothing of ours propagates back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die("cannot make the mount namespace private", first);
	for (size_t i = 0; i < o->targets.n; i++)
		if (mount("overlay", o->targets.v[i], "overlay", 0, o->options.v[i]) < 0)
			die("cannot mount", o->labels.v[i]);
}
