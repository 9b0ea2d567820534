/*
 * core/submod_record.c: a workspace's submodules, looked up once. Create walks the base's
 * .gitmodules and the origin's modules/ (fs_submodules_find) and records what it found in
 * <workspace>/submodules, a host-owned file outside anything a box sees; the box's start, info,
 * rewind and delete read that record instead of walking again. A workspace made by an older
 * version has none: then the walk, as before.
 *
 * The file: "arborinth-submodules 1", then a line per submodule, "STATE DEPTH COMMIT NAME PATH
 * GITDIR" (STATE p, a or r; GITDIR "-" when none), each text field with bytes up to ' ', '%'
 * and DEL as %XX. A record that does not read back whole is not trusted: the walk instead.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs.h"

#define RECORD_NAME  "submodules"
#define RECORD_MAGIC "arborinth-submodules 1\n"

static char *enc(const char *s)
{
	char *out = malloc(3 * strlen(s) + 1), *o = out;

	for (const unsigned char *c = (const unsigned char *)s; out && *c; c++) {
		if (*c <= ' ' || *c == '%' || *c == 0x7f)
			o += snprintf(o, 4, "%%%02X", *c);
		else
			*o++ = (char)*c;
	}
	if (out)
		*o = '\0';
	return out;
}

/* The field s decoded into a new string; NULL when malformed or out of memory. */
static char *dec(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	unsigned int byte;

	for (; out && *s; s++) {
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		if (sscanf(s + 1, "%2x", &byte) != 1 || byte == 0 || !s[1] || !s[2]) {
			free(out);
			return NULL;
		}
		*o++ = (char)byte;
		s += 2;
	}
	if (out)
		*o = '\0';
	return out;
}

int core_submodules_record(const char *ws_root, const struct fs_submodule *v, size_t n)
{
	char *path = util_path_join(ws_root, RECORD_NAME), *text = strdup(RECORD_MAGIC);
	int rc = 0;

	for (size_t i = 0; text && i < n; i++) {
		char *name = enc(v[i].name), *p = enc(v[i].path);
		char *gd = v[i].gitdir ? enc(v[i].gitdir) : strdup("-");
		char *more = name && p && gd
				 ? util_asprintf("%s%c %d %s %s %s %s\n", text, "par"[v[i].state],
						 v[i].depth, v[i].commit, name, p, gd)
				 : NULL;

		free(text);
		text = more;
		free(name);
		free(p);
		free(gd);
	}
	rc = path && text ? util_write_file(path, text, strlen(text), 0644) : -ENOMEM;
	if (rc < 0)
		rc = util_err(rc, "cannot write %s: %s", path ? path : RECORD_NAME, strerror(-rc));
	free(path);
	free(text);
	return rc;
}

/* One line into s; false when malformed. */
static bool parse_line(char *line, struct fs_submodule *s)
{
	char st[2], commit[GIT_OID_HEXSZ + 1], name[4096], p[4096], gd[4096];
	int depth;

	memset(s, 0, sizeof(*s));
	if (sscanf(line, "%1s %d %40s %4095s %4095s %4095s", st, &depth, commit, name, p, gd) !=
		6 ||
	    !strchr("par", st[0]) || depth < 0 || depth >= FS_SUBMODULES_DEPTH ||
	    strlen(commit) != GIT_OID_HEXSZ || strspn(commit, "0123456789abcdef") != GIT_OID_HEXSZ)
		return false;
	s->state = st[0] == 'p'	  ? FS_SUBMODULE_PRESENT
		   : st[0] == 'a' ? FS_SUBMODULE_ABSENT
				  : FS_SUBMODULE_REFUSED;
	s->depth = depth;
	memcpy(s->commit, commit, sizeof(commit));
	s->name = dec(name);
	s->path = dec(p);
	s->gitdir = strcmp(gd, "-") ? dec(gd) : NULL;
	/* A gitdir is joined to the origin's: only one the walk could have made. */
	return s->name && s->path && (s->gitdir || s->state == FS_SUBMODULE_REFUSED) &&
	       (!s->gitdir || (util_str_has_prefix(s->gitdir, "modules/") &&
			       fs_submodule_name_ok(s->gitdir + strlen("modules/"))));
}

/* The record of ws_root: 0 with *out, *n; -ENOENT when there is none or it does not read. */
static int record_read(const char *ws_root, struct fs_submodule **out, size_t *n)
{
	char *path = util_path_join(ws_root, RECORD_NAME), *text = NULL, *line, *save = NULL;
	struct fs_submodule *v = NULL;
	size_t len = 0, k = 0;
	int rc = path ? util_read_file(path, &text, &len) : -ENOMEM;

	if (rc == 0 && (len < strlen(RECORD_MAGIC) || strlen(text) != len ||
			strncmp(text, RECORD_MAGIC, strlen(RECORD_MAGIC))))
		rc = -ENOENT;
	for (line = rc == 0 ? strtok_r(text + strlen(RECORD_MAGIC), "\n", &save) : NULL;
	     line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
		struct fs_submodule *nv = realloc(v, (k + 1) * sizeof(*v));

		if (!nv) {
			rc = -ENOMEM;
			break;
		}
		v = nv;
		if (!parse_line(line, &v[k++]))
			rc = -ENOENT;
	}
	free(path);
	free(text);
	if (rc < 0) {
		fs_submodules_free(v, k);
		return rc == -ENOMEM ? rc : -ENOENT;
	}
	*out = v;
	*n = k;
	return 0;
}

int core_ws_submodules(struct core_project *p, const char *ws_root, const char *base_hex,
		       struct fs_submodule **out, size_t *n)
{
	int rc = ws_root ? record_read(ws_root, out, n) : -ENOENT;

	if (rc == -ENOMEM)
		return util_err(rc, "out of memory");
	if (rc == 0)
		return 0;
	return core_submodules(p, base_hex, out, n);
}
