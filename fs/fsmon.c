/*
 * fs/fsmon.c: git's fsmonitor protocol (hook version 2), answered by the daemon.
 *
 * Every change to the view goes through the daemon, so it can tell git which paths changed
 * since a token without git looking at the others. The view's .git holds two files the
 * daemon makes up (they are not in the gitdir):
 * - `.git/arborinth-fsmonitor`: the hook, a shell script that core.fsmonitor names
 *   (core/gitdir.c sets it, and core.untrackedCache, in every new workspace). git runs it as
 *   `HOOK 2 TOKEN` in the top of the work tree; it prints the file below.
 * - `.git/arborinth-fsmonitor-q<TOKEN>.<NONCE>`: looked up, it is the answer: a new token,
 *   NUL, and the changed paths, each followed by NUL; or the token and "/" (everything may
 *   have changed) for a token this journal cannot answer. The hook's pid is the nonce, so
 *   every query is a new name, a new node and a new inode: nothing the kernel caches.
 *
 * The journal: (sequence number, path) of every change, in order; a token is
 * "arb:EPOCH:SEQ". Paths under .git are left out (git ignores them). A directory renamed, a
 * file with hard links changed (the daemon knows only one of its names), or a journal grown
 * past FSMON_MAX entries, moves the floor: tokens older than it get "/".
 * Files open for writing through passthrough (whose writes the daemon never sees) are in
 * every answer until closed, and journaled at close.
 *
 * The epoch is random per journal. At a clean unmount it is saved with its sequence number
 * in run/fsmonitor together with the upper layer's identity, and reused by the next mount of
 * the same layer (so a token survives unmount and mount); the file is removed when read, so a
 * daemon that crashed (and whose journal is lost) starts a new epoch.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define FSMON_MAX 200000 /* journal entries kept */

static const char hook_script[] =
    "#!/bin/sh\n"
    "# git fsmonitor hook, version 2: the arborinth view's daemon saw every change and\n"
    "# answers with the paths changed since the token (fs/fsmon.c).\n"
    "[ \"$1\" = 2 ] || exit 1\n"
    "# git before 2.43 takes a path this answers as unchanged for a directory at random in\n"
    "# diff-index, diff and add -u (check_removed() reads a stat it never filled): it gets\n"
    "# \"everything may have changed\" (a token the daemon cannot answer) and looks itself,\n"
    "# but in git status, which marks those paths up to date before it diffs.\n"
    "v=$(git version 2>/dev/null) && v=${v#git version } && m=${v%%.*} && v=${v#*.} &&\n"
    "\tn=${v%%.*} && [ \"$m\" -eq \"$m\" ] 2>/dev/null && [ \"$n\" -eq \"$n\" ] 2>/dev/null &&\n"
    "\t{ [ \"$m\" -gt 2 ] || { [ \"$m\" -eq 2 ] && [ \"$n\" -ge 43 ]; }; } ||\n"
    "\ttr '\\0' '\\n' <\"/proc/$PPID/cmdline\" 2>/dev/null | {\n"
    "\t\tread -r _\n"
    "\t\twhile read -r w; do\n"
    "\t\t\tcase $w in\n"
    "\t\t\t-c | -C | --config-env) read -r _ ;;\n"
    "\t\t\t-*) ;;\n"
    "\t\t\tstatus) exit 0 ;;\n"
    "\t\t\t*) exit 1 ;;\n"
    "\t\t\tesac\n"
    "\t\tdone\n"
    "\t\texit 1\n"
    "\t} || set -- \"$1\" \"$2-\"\n"
    "exec cat \".git/" FS_FSMON_NAME "-q$2.$$\"\n";

/* run/fsmonitor beside the pid file; NULL without one. Caller frees. */
static char *state_path(const struct fs *fs)
{
	char *dir = fs->cfg->pidfile ? strdup(fs->cfg->pidfile) : NULL, *slash, *path = NULL;

	slash = dir ? strrchr(dir, '/') : NULL;
	if (slash) {
		*slash = '\0';
		path = util_path_join(dir, "fsmonitor");
	}
	free(dir);
	return path;
}

/* The upper layer's identity: a rewind gives the workspace a new layer directory. */
static void layer_id(const struct fs *fs, char *buf, size_t size)
{
	struct stat st;

	if (fstat(fs->layer_fd, &st) < 0)
		memset(&st, 0, sizeof(st));
	snprintf(buf, size, "%ju:%ju:%jd.%09ld", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
		 (intmax_t)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

void fs_fsmon_init(struct fs *fs)
{
	struct fs_fsmon *m = &fs->fsmon;
	char *path = state_path(fs), *buf = NULL, id[96], saved[96];
	size_t len;

	if (getrandom(&m->epoch, sizeof(m->epoch), 0) != sizeof(m->epoch))
		m->epoch = (uint64_t)util_now_ns() ^ ((uint64_t)getpid() << 32);
	layer_id(fs, id, sizeof(id));
	if (path && util_read_file(path, &buf, &len) == 0) {
		uint64_t epoch, seq;

		if (sscanf(buf, "%" SCNx64 " %" SCNu64 " %95s", &epoch, &seq, saved) == 3 &&
		    !strcmp(saved, id)) {
			m->epoch = epoch;
			m->seq = m->floor = seq;
		}
	}
	util_err_clear();
	if (path)
		unlink(path);
	free(buf);
	free(path);
}

void fs_fsmon_save(struct fs *fs)
{
	char *path = state_path(fs), buf[160], id[96];
	int n;

	if (!path)
		return;
	layer_id(fs, id, sizeof(id));
	n = snprintf(buf, sizeof(buf), "%" PRIx64 " %" PRIu64 " %s\n", fs->fsmon.epoch,
		     fs->fsmon.seq, id);
	if (util_write_file(path, buf, (size_t)n, 0644) < 0)
		util_err_clear(); /* the next mount starts a new epoch: git rescans once */
	free(path);
}

void fs_fsmon_free(struct fs *fs)
{
	for (size_t i = 0; i < fs->fsmon.n; i++)
		free(fs->fsmon.ents[i].path);
	free(fs->fsmon.ents);
	fs->fsmon.ents = NULL;
	fs->fsmon.n = 0;
}

/* Drops the older half of the journal; their tokens now get "/". */
static void trim(struct fs_fsmon *m)
{
	size_t half = m->n / 2;

	for (size_t i = 0; i < half; i++)
		free(m->ents[i].path);
	m->floor = m->ents[half - 1].seq;
	memmove(m->ents, m->ents + half, (m->n - half) * sizeof(*m->ents));
	m->n -= half;
}

static void note_path(struct fs *fs, char *path)
{
	struct fs_fsmon *m = &fs->fsmon;

	if (!path || !strcmp(path, ".git") || !strncmp(path, ".git/", 5) || !*path) {
		free(path);
		return;
	}
	if (m->n && !strcmp(m->ents[m->n - 1].path, path) && m->ents[m->n - 1].seq > m->asked) {
		free(path); /* the same path again, not yet asked for */
		return;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		void *e = m->n >= FSMON_MAX ? NULL : realloc(m->ents, cap * sizeof(*m->ents));

		if (!e) {
			if (m->n < 2) {
				m->floor = ++m->seq; /* out of memory: everyone rescans */
				free(path);
				return;
			}
			trim(m);
		} else {
			m->ents = e;
			m->cap = cap;
		}
	}
	m->ents[m->n].seq = ++m->seq;
	m->ents[m->n++].path = path;
}

void fs_fsmon_note(struct fs *fs, struct fs_node *parent, const char *name)
{
	note_path(fs, fs_node_path(fs, parent, name));
}

void fs_fsmon_note_node(struct fs *fs, struct fs_node *n)
{
	struct stat st;

	if (n->fsmon_seq > fs->fsmon.asked)
		return; /* journaled since the last question */
	/* A file with other names (hard links) changed under all of them: the daemon knows one. */
	if (n->fsmon_linked || (S_ISREG(n->type) && n->fd >= 0 &&
				fstatat(n->fd, "", &st, AT_EMPTY_PATH) == 0 && st.st_nlink > 1))
		fs_fsmon_reset(fs);
	else
		note_path(fs, fs_node_path(fs, n, NULL));
	n->fsmon_seq = fs->fsmon.seq;
}

void fs_fsmon_reset(struct fs *fs)
{
	fs->fsmon.floor = ++fs->fsmon.seq;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct strv {
	char **v;
	size_t n, cap;
	bool oom;
};

static void strv_push(struct strv *sv, char *p)
{
	if (!p) {
		sv->oom = true;
		return;
	}
	if (sv->n == sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 64;
		char **v = realloc(sv->v, cap * sizeof(*v));

		if (!v) {
			free(p);
			sv->oom = true;
			return;
		}
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = p;
}

static void strv_clear(struct strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
}

/* The paths changed after seq `since`, and files open for writing in the kernel, sorted. */
static int changed_since(struct fs *fs, uint64_t since, struct strv *out)
{
	struct fs_fsmon *m = &fs->fsmon;
	size_t lo = 0, hi = m->n;

	while (lo < hi) { /* the first entry after since */
		size_t mid = lo + (hi - lo) / 2;

		if (m->ents[mid].seq <= since)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < m->n && !out->oom; i++)
		strv_push(out, strdup(m->ents[i].path));
	for (size_t s = 0; m->nlive && s < fs->by_ino.size && !out->oom; s++)
		for (struct fs_node *x = fs->by_ino.slots[s]; x; x = x->next_ino)
			if (x->pt_writers)
				strv_push(out, fs_node_path(fs, x, NULL));
	if (out->oom)
		return -ENOMEM;
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
	return 0;
}

/* The answer to token (fs->lock held): "TOKEN\0path\0..." or "TOKEN\0/\0". Caller frees. */
static int answer(struct fs *fs, const char *token, char **out, size_t *len)
{
	struct fs_fsmon *m = &fs->fsmon;
	struct strv paths = {0};
	uint64_t epoch = 0, since = 0;
	bool all = true;
	char head[64], *buf;
	size_t size, w;
	int hl, end = 0;

	hl = snprintf(head, sizeof(head), "arb:%" PRIx64 ":%" PRIu64, m->epoch, m->seq) + 1;
	if (sscanf(token, "arb:%" SCNx64 ":%" SCNu64 "%n", &epoch, &since, &end) == 2 &&
	    token[end] == '\0' && epoch == m->epoch && since >= m->floor && since <= m->seq)
		all = changed_since(fs, since, &paths) < 0;
	size = (size_t)hl + 2;
	for (size_t i = 0; !all && i < paths.n; i++)
		size += strlen(paths.v[i]) + 1;
	buf = malloc(size);
	if (!buf) {
		strv_clear(&paths);
		return -ENOMEM;
	}
	memcpy(buf, head, (size_t)hl);
	w = (size_t)hl;
	if (all) {
		memcpy(buf + w, "/", 2);
		w += 2;
	}
	for (size_t i = 0; !all && i < paths.n; i++) {
		size_t l = strlen(paths.v[i]) + 1;

		if (i > 0 && !strcmp(paths.v[i], paths.v[i - 1]))
			continue;
		memcpy(buf + w, paths.v[i], l);
		w += l;
	}
	strv_clear(&paths);
	m->asked = m->seq;
	*out = buf;
	*len = w;
	return 0;
}

/* "q<TOKEN>.<NONCE>" -> TOKEN (in place). */
static const char *query_token(char *s)
{
	char *dot = strrchr(s, '.');

	if (dot)
		*dot = '\0';
	return s + 1;
}

/*
 * The kernel forgets an answer's inode only under memory pressure; the daemon keeps the bytes
 * of the last FS_FSMON_ANSWERS answers and of every answer younger than a minute (its hook is
 * a `cat`, done in milliseconds), and drops older ones, which then read as empty.
 */
static void keep_answer(struct fs *fs, struct fs_node *n)
{
	struct fs_fsmon *m = &fs->fsmon;
	int64_t now = util_now_ns();
	size_t drop = 0;

	while (drop < m->nanswers && (m->nanswers - drop >= FS_FSMON_ANSWERS ||
				      now - m->answers[drop].t > FS_FSMON_ANSWER_NS)) {
		struct fs_node *old = fs_node_get(fs, m->answers[drop++].ino);

		if (old && old->synth_mode) {
			free(old->synth);
			old->synth = NULL;
		}
	}
	memmove(m->answers, m->answers + drop, (m->nanswers - drop) * sizeof(*m->answers));
	m->nanswers -= drop;
	m->answers[m->nanswers].ino = n->ino;
	m->answers[m->nanswers++].t = now;
}

int fs_fsmon_lookup(struct fs *fs, const char *name, struct fs_node **out)
{
	const char *rest = name + strlen(FS_FSMON_NAME);
	char *content = NULL, *q = NULL;
	size_t len = 0;
	struct fs_node *n;
	int rc;

	if (*rest == '\0') {
		content = strdup(hook_script);
		len = strlen(hook_script);
		rc = content ? 0 : -ENOMEM;
	} else if (rest[0] == '-' && rest[1] == 'q') {
		q = strdup(rest + 1);
		rc = q ? answer(fs, query_token(q), &content, &len) : -ENOMEM;
	} else {
		rc = -ENOENT;
	}
	free(q);
	if (rc < 0)
		return rc;
	n = fs_node_new(fs, NULL, name, S_IFREG); /* in no directory's name table */
	if (!n) {
		free(content);
		return -ENOMEM;
	}
	n->synth = content;
	n->synth_len = len;
	n->synth_mode = *rest ? 0444 : 0555;
	if (*rest)
		keep_answer(fs, n);
	*out = n;
	return 0;
}

int fs_fsmon_stat(struct fs *fs, const struct fs_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFREG | n->synth_mode;
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)n->synth_len;
	st->st_blksize = 4096;
	st->st_blocks = ((off_t)n->synth_len + 511) / 512;
	st->st_mtim.tv_sec = st->st_ctim.tv_sec = st->st_atim.tv_sec = fs->base_time;
	return 0;
}

int fs_fsmon_read(struct fs_node *n, size_t size, off_t off, char **out, size_t *len)
{
	size_t have = n->synth_len, at = off < 0 ? have : (size_t)off;

	*len = at >= have || !n->synth ? 0 : size < have - at ? size : have - at;
	*out = *len ? malloc(*len) : NULL;
	if (*len && !*out)
		return -ENOMEM;
	if (*len)
		memcpy(*out, n->synth + at, *len);
	return 0;
}
