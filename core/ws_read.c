/*
 * core/ws_read.c: reading a workspace's gitdir (NAME/git) on the host. Trust boundary: the
 * box writes that directory (it is the view's `.git`), so every byte, name, link and file
 * type in it is hostile. Nothing here hands the gitdir to libgit2 or git: each file is opened
 * beneath it with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and O_NONBLOCK, checked with
 * fstat to be a regular file (a FIFO is never read, a symlink never followed), and read with
 * a size cap. What is refused: an objects/info/alternates other than the one arborinth wrote
 * (the origin's objects), http-alternates, commondir, a symlink or special file anywhere under
 * refs/ or as packed-refs, a symbolic branch ref. Objects come from the workspace's own store
 * only: loose objects inflated and hashed here, packs copied (not linked: the box could
 * truncate a mapped file) into a private directory first and read from the copy through
 * libgit2, which checks every object's hash. Alternates are never followed; the origin's
 * objects come from the origin's own repository, read by the caller.
 */
#include "core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#define REF_MAX	   4096		/* a loose ref, alternates */
#define PACKED_MAX (64u << 20)	/* packed-refs */
#define LOOSE_MAX  (1ull << 31) /* a loose object, deflated or not */
#define REFS_DEPTH 32
#define REFS_MAX   (1u << 20) /* entries under refs/ looked at: bounded, so is the time */

struct core_wsgit {
	int dir; /* the gitdir, O_PATH */
	char *name;
	char *state_dir; /* where the private copy of the packs goes */
	char *tmp;	 /* that copy, once made */
	git_odb *packs;	 /* the copy's packs, once opened */
	bool packs_tried;
	size_t refs_seen;
};

/*
 * open_beneath without openat2 (before Linux 5.6, or a filter that denies it): one component
 * at a time, each opened with O_NOFOLLOW; no component may be empty, "." or "..".
 */
static int open_walk(int dir, const char *path, int flags)
{
	int cur = dir, fd = -ENOENT;

	for (const char *s = path;;) {
		const char *sl = strchr(s, '/');
		size_t n = sl ? (size_t)(sl - s) : strlen(s);
		char comp[NAME_MAX + 1];
		struct stat st;

		if (n == 0 || n > NAME_MAX ||
		    (s[0] == '.' && (n == 1 || (n == 2 && s[1] == '.')))) {
			fd = -EINVAL;
			break;
		}
		memcpy(comp, s, n);
		comp[n] = '\0';
		fd = openat(cur, comp,
			    (sl ? O_PATH | O_DIRECTORY : flags) | O_NOFOLLOW | O_CLOEXEC |
				O_NOCTTY | O_NONBLOCK);
		if (fd < 0) /* O_NOFOLLOW|O_DIRECTORY on a symlink says ENOTDIR: name it a link */
			fd = errno == ENOTDIR &&
				     fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				     S_ISLNK(st.st_mode)
				 ? -ELOOP
				 : -errno;
		if (cur != dir)
			close(cur);
		if (fd < 0 || !sl)
			break;
		cur = fd;
		s = sl + 1;
	}
	return fd;
}

/* Opens path beneath dir, following no symlink on any component, never blocking. -errno. */
static int open_beneath(int dir, const char *path, int flags)
{
	struct open_how how = {.flags = (unsigned)(flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK),
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	long fd;

	if (core_fault("openat2") < 0) /* the tests take the other way too */
		return open_walk(dir, path, flags);
	fd = syscall(SYS_openat2, dir, path, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		return open_walk(dir, path, flags);
	return fd < 0 ? -errno : (int)fd;
}

/* A one-line refusal naming the file (relative to the gitdir) and why. */
static int refuse(const struct core_wsgit *g, int rc, const char *path, const char *why)
{
	return util_err(rc, "%s/git/%s %s: refused (the box wrote it; nothing was taken from it)",
			g->name, path, why);
}

/* Why an open_beneath(path) failed with rc, as refuse() says it. */
static int refuse_open(const struct core_wsgit *g, int rc, const char *path)
{
	if (rc == -ELOOP || rc == -EXDEV)
		return refuse(g, -ELOOP, path, "is or passes through a symlink");
	return refuse(g, rc, path,
		      rc == -ENOTDIR ? "passes through a non-directory" : "cannot be opened");
}

/*
 * The whole regular file at path beneath the gitdir (at most max bytes) into *out (caller
 * frees; NUL-terminated), *len. -ENOENT (no message) when absent; else a refusal.
 */
static int read_beneath(const struct core_wsgit *g, const char *path, size_t max, char **out,
			size_t *len)
{
	int fd = open_beneath(g->dir, path, O_RDONLY);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int rc = 0;

	*out = NULL;
	if (fd == -ENOENT)
		return -ENOENT;
	if (fd < 0)
		return refuse_open(g, fd, path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		rc = refuse(g, -EINVAL, path, "is not a regular file");
	else if ((unsigned long long)st.st_size > max)
		rc = refuse(g, -EFBIG, path, "is too large");
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		rc = util_err(-ENOMEM, "out of memory");
	while (rc == 0 && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) /* shrunk under us, or an error: the box is changing it */
			rc = refuse(g, n < 0 ? -errno : -EIO, path, "cannot be read whole");
		else
			got += (size_t)n;
	}
	close(fd);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

/* Whether anything (of any type, a dangling symlink too) is at path beneath the gitdir. */
static bool exists_beneath(const struct core_wsgit *g, const char *path)
{
	struct stat st;

	return fstatat(g->dir, path, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

/*
 * objects/info/alternates: absent, or exactly what core_gitdir_write wrote: the origin's
 * objects, and (since workspaces show the origin's branches) NAME/origin-objects.
 */
static int check_alternates(const struct core_wsgit *g, const char *origin_objects,
			    const char *root)
{
	char *text = NULL, *want = util_asprintf("%s\n", origin_objects);
	char *want2 = util_asprintf("%s\n%s/%s\n", origin_objects, root, CORE_ORIGIN_OBJECTS);
	size_t len = 0;
	int rc = want && want2 ? read_beneath(g, "objects/info/alternates", REF_MAX, &text, &len)
			       : util_err(-ENOMEM, "out of memory");

	if (rc == -ENOENT)
		rc = 0;
	else if (rc == 0 && strcmp(text, want) != 0 && strcmp(text, want2) != 0)
		rc = refuse(g, -EPERM, "objects/info/alternates",
			    "names a store other than the origin's objects");
	free(text);
	free(want);
	free(want2);
	return rc;
}

/* Every entry under refs/ (dirfd at rel) a directory or a regular file; depth bounded. */
static int check_refs_dir(struct core_wsgit *g, const char *rel, int depth)
{
	int fd = open_beneath(g->dir, rel, O_RDONLY | O_DIRECTORY);
	DIR *d = NULL;
	struct dirent *de;
	int rc = 0;

	if (fd < 0)
		return fd == -ENOENT && depth == 0 ? 0 : refuse_open(g, fd, rel);
	if (depth > REFS_DEPTH) {
		close(fd);
		return refuse(g, -ELOOP, rel, "is nested too deep");
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return refuse(g, -errno, rel, "cannot be listed");
	}
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++g->refs_seen > REFS_MAX) {
			rc = refuse(g, -E2BIG, "refs", "holds more than a million entries");
			break;
		}
		if (!(sub = util_asprintf("%s/%s", rel, de->d_name)))
			rc = util_err(-ENOMEM, "out of memory");
		else if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			rc = errno == ENOENT ? 0 : refuse(g, -errno, sub, "cannot be examined");
		else if (S_ISDIR(st.st_mode))
			rc = check_refs_dir(g, sub, depth + 1);
		else if (!S_ISREG(st.st_mode))
			rc = refuse(g, -EINVAL, sub,
				    S_ISLNK(st.st_mode) ? "is a symlink" : "is not a regular file");
		free(sub);
	}
	closedir(d);
	return rc;
}

/* packed-refs: absent or a regular file (read, not followed). */
static int check_packed(const struct core_wsgit *g)
{
	struct stat st;

	if (fstatat(g->dir, "packed-refs", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : refuse(g, -errno, "packed-refs", "cannot be examined");
	if (S_ISLNK(st.st_mode))
		return refuse(g, -ELOOP, "packed-refs", "is a symlink");
	return S_ISREG(st.st_mode) ? 0 : refuse(g, -EINVAL, "packed-refs", "is not a regular file");
}

int core_wsgit_open(struct core_wsgit **out, struct core_project *p, const struct core_ws *ws)
{
	struct core_wsgit *g = calloc(1, sizeof(*g));
	int rc = g ? 0 : util_err(-ENOMEM, "out of memory");

	*out = NULL;
	if (rc == 0) {
		g->dir = -1;
		g->name = strdup(ws->name);
		g->state_dir = strdup(p->state_dir);
		if (!g->name || !g->state_dir)
			rc = util_err(-ENOMEM, "out of memory");
	}
	/* NAME/git itself is arborinth's; O_NOFOLLOW in case the box replaced it. */
	if (rc == 0 &&
	    (g->dir = open(ws->gitdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		rc = util_err(-errno, "%s/git: cannot open the workspace's gitdir: %s", ws->name,
			      strerror(errno));
	if (rc == 0 && exists_beneath(g, "commondir"))
		rc = refuse(g, -EPERM, "commondir", "exists (it would name another repository)");
	if (rc == 0 && exists_beneath(g, "objects/info/http-alternates"))
		rc = refuse(g, -EPERM, "objects/info/http-alternates", "exists");
	rc = rc ?: check_alternates(g, p->objects, ws->root);
	rc = rc ?: check_packed(g);
	rc = rc ?: check_refs_dir(g, "refs", 0);
	if (rc < 0) {
		core_wsgit_free(g);
		return rc;
	}
	*out = g;
	return 0;
}

void core_wsgit_free(struct core_wsgit *g)
{
	if (!g)
		return;
	git_odb_free(g->packs);
	if (g->tmp)
		(void)util_rm_rf(g->tmp);
	if (g->dir >= 0)
		close(g->dir);
	free(g->tmp);
	free(g->state_dir);
	free(g->name);
	free(g);
}

int core_wsgit_ref(struct core_wsgit *g, const char *refname, git_oid *id)
{
	char *text = NULL;
	size_t len = 0;
	int rc = read_beneath(g, refname, REF_MAX, &text, &len);

	if (rc == 0) {
		rc = core_ref_parse_loose(text, len, id->id);
		if (rc == -ELOOP)
			rc = refuse(g, rc, refname, "is a symbolic ref");
		else if (rc < 0)
			rc = refuse(g, rc, refname, "is not a ref git writes (40 hex digits)");
	} else if (rc == -ENOENT) {
		rc = read_beneath(g, "packed-refs", PACKED_MAX, &text, &len);
		rc = rc ?: core_ref_parse_packed(text, len, refname, id->id);
		if (rc == -EINVAL)
			rc = refuse(g, rc, "packed-refs", "is malformed");
		else if (rc == -ENOENT)
			rc = util_err(-ENOENT, "workspace %s has no %s", g->name, refname);
	}
	free(text);
	return rc;
}

/* The type a loose object's header names (git's four), or GIT_OBJECT_INVALID. */
static git_object_t type_named(const char *s)
{
	static const struct {
		const char *name;
		git_object_t type;
	} types[] = {{"blob", GIT_OBJECT_BLOB},
		     {"tree", GIT_OBJECT_TREE},
		     {"commit", GIT_OBJECT_COMMIT},
		     {"tag", GIT_OBJECT_TAG}};

	for (size_t i = 0; i < ARB_ARRAY_LEN(types); i++)
		if (!strcmp(s, types[i].name))
			return types[i].type;
	return GIT_OBJECT_INVALID;
}

/* Inflates a loose object (z, zl bytes) into *data (caller frees), checking its header. */
static int inflate_loose(const unsigned char *z, size_t zl, git_object_t *type, void **data,
			 size_t *len)
{
	z_stream s = {0};
	unsigned char head[64];
	char *sp, *end;
	unsigned char *buf = NULL;
	unsigned long long size;
	size_t hl;
	int zr, rc = -EINVAL;

	if (zl > UINT_MAX || inflateInit(&s) != Z_OK)
		return -EINVAL;
	s.next_in = (unsigned char *)z;
	s.avail_in = (unsigned)zl;
	s.next_out = head;
	s.avail_out = sizeof(head);
	zr = inflate(&s, Z_SYNC_FLUSH);
	if (zr != Z_OK && zr != Z_STREAM_END)
		goto out;
	hl = sizeof(head) - s.avail_out;
	if (!(end = memchr(head, '\0', hl)) ||
	    !(sp = memchr(head, ' ', (size_t)(end - (char *)head))))
		goto out;
	*sp = '\0';
	*type = type_named((char *)head);
	errno = 0;
	size = strtoull(sp + 1, &sp, 10);
	/* deflate shrinks by 1032:1 at most: a larger claim is a lie (and a huge malloc) */
	if (sp != end || errno || *type == GIT_OBJECT_INVALID || size > LOOSE_MAX ||
	    size / 1032 > zl || !(buf = malloc(size ? size : 1)))
		goto out;
	/* What came after the header, then the rest straight into buf. */
	hl -= (size_t)(end + 1 - (char *)head);
	if (hl > size)
		goto out;
	memcpy(buf, end + 1, hl);
	s.next_out = buf + hl;
	s.avail_out = (unsigned)(size - hl);
	while (zr == Z_OK && s.avail_out)
		zr = inflate(&s, Z_FINISH);
	if (zr == Z_OK && !s.avail_out) /* the stream may end just here */
		zr = inflate(&s, Z_FINISH);
	if (zr == Z_STREAM_END && s.avail_out == 0) {
		*data = buf;
		*len = (size_t)size;
		buf = NULL;
		rc = 0;
	}
out:
	inflateEnd(&s);
	free(buf);
	return rc;
}

/* A copy of the file at path beneath the gitdir, as dst (private, new). */
static int copy_out(const struct core_wsgit *g, const char *path, const char *dst, size_t *budget)
{
	int in = open_beneath(g->dir, path, O_RDONLY), out = -1, rc = 0;
	struct stat st;

	if (in < 0)
		return refuse_open(g, in, path);
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
		rc = refuse(g, -EINVAL, path, "is not a regular file");
	else if ((unsigned long long)st.st_size > *budget)
		rc = refuse(g, -EFBIG, path, "is larger than the packs arborinth reads (2 GiB)");
	else if ((out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		rc = util_err(-errno, "%s: %s", dst, strerror(errno));
	for (off_t left = st.st_size; rc == 0 && left > 0;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);

		if (n <= 0)
			rc = refuse(g, n < 0 ? -errno : -EIO, path, "cannot be read whole");
		else
			left -= n;
	}
	if (rc == 0)
		*budget -= (size_t)st.st_size;
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/* Whether name is pack-<40 hex>.idx (the only packs read; .keep, .rev, tmp files are not). */
static bool pack_idx_name(const char *name)
{
	size_t n = strlen(name);

	if (n != 49 || strncmp(name, "pack-", 5) || strcmp(name + 45, ".idx"))
		return false;
	for (size_t i = 5; i < 45; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/* Copies the workspace's packs into a private directory and opens them there. */
static int packs_open(struct core_wsgit *g)
{
	int fd = open_beneath(g->dir, "objects/pack", O_RDONLY | O_DIRECTORY);
	size_t budget = 2ull << 30;
	char *packdir = NULL;
	DIR *d = NULL;
	struct dirent *de;
	int rc = 0;

	g->packs_tried = true;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return refuse_open(g, fd, "objects/pack");
	if (!(d = fdopendir(fd))) {
		close(fd);
		return refuse(g, -errno, "objects/pack", "cannot be listed");
	}
	g->tmp = util_asprintf("%s/export-tmp-XXXXXX", g->state_dir);
	if (!g->tmp || !mkdtemp(g->tmp) || !(packdir = util_path_join(g->tmp, "pack")) ||
	    mkdir(packdir, 0700) < 0) {
		free(g->tmp);
		g->tmp = NULL;
		rc = util_err(-EIO, "cannot make a private directory in %s", g->state_dir);
	}
	while (rc == 0 && (de = readdir(d))) {
		char *src_i = NULL, *src_p = NULL, *dst_i = NULL, *dst_p = NULL;

		if (!pack_idx_name(de->d_name))
			continue;
		src_i = util_asprintf("objects/pack/%s", de->d_name);
		src_p = util_asprintf("objects/pack/%.45s.pack", de->d_name);
		dst_i = util_path_join(packdir, de->d_name);
		dst_p = util_asprintf("%s/%.45s.pack", packdir, de->d_name);
		if (!src_i || !src_p || !dst_i || !dst_p)
			rc = util_err(-ENOMEM, "out of memory");
		rc = rc ?: copy_out(g, src_i, dst_i, &budget);
		rc = rc ?: copy_out(g, src_p, dst_p, &budget);
		free(src_i);
		free(src_p);
		free(dst_i);
		free(dst_p);
	}
	closedir(d);
	if (rc == 0 && git_odb_open(&g->packs, g->tmp) < 0)
		rc = util_err(-EIO, "%s's packs: %s", g->name, git_error_last()->message);
	free(packdir);
	return rc;
}

int core_wsgit_read(struct core_wsgit *g, const git_oid *id, git_object_t *type, void **data,
		    size_t *len)
{
	char hex[GIT_OID_HEXSZ + 1], path[64];
	char *z = NULL;
	size_t zl = 0;
	git_odb_object *obj = NULL;
	git_oid got;
	int rc;

	git_oid_tostr(hex, sizeof(hex), id);
	snprintf(path, sizeof(path), "objects/%.2s/%s", hex, hex + 2);
	rc = read_beneath(g, path, LOOSE_MAX, &z, &zl);
	if (rc == 0) {
		rc = inflate_loose((const unsigned char *)z, zl, type, data, len);
		free(z);
		if (rc == 0 &&
		    (git_odb_hash(&got, *data, *len, *type) < 0 || !git_oid_equal(&got, id))) {
			free(*data);
			*data = NULL;
			rc = -EINVAL;
		}
		return rc < 0 ? refuse(g, rc, path, "is not the object its name says") : 0;
	}
	if (rc != -ENOENT)
		return rc;
	if (!g->packs_tried && (rc = packs_open(g)) < 0)
		return rc;
	if (!g->packs)
		return -ENOENT;
	rc = git_odb_read(&obj, g->packs, id);
	if (rc == GIT_ENOTFOUND)
		return -ENOENT; /* not in the workspace's own store: the caller names it */
	if (rc < 0)
		return util_err(-EINVAL, "%s/git/objects/pack: %s: refused", g->name,
				git_error_last()->message);
	*type = git_odb_object_type(obj);
	*len = git_odb_object_size(obj);
	*data = malloc(*len ? *len : 1);
	if (*data)
		memcpy(*data, git_odb_object_data(obj), *len);
	git_odb_object_free(obj);
	return *data ? 0 : util_err(-ENOMEM, "out of memory");
}
