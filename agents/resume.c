/*
 * lib/agent_resume.c: after a launch, how to resume the client's session in the box. The
 * client prints its own hint ("claude --resume ID"), which on the host would run it outside
 * the box; this finds the session the run wrote in the workspace's home and gives the
 * client arguments that resume it through the launcher. The home is the box's: every folder
 * is opened without following links, only regular files count, and an id is used only when
 * it is a UUID (so it is safe to print).
 *   Claude Code: $CLAUDE_CONFIG_DIR/projects/<project>/<uuid>.jsonl  -> --resume <uuid>
 *   Codex:       $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl -> resume <uuid>
 */
#include "agents/agents_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UUID_LEN 36

static bool is_uuid(const char *s, size_t n)
{
	if (n != UUID_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !s[i] || !strchr("0123456789abcdef", s[i]))
			return false;
	}
	return true;
}

/* The UUID a session file's name holds (Claude: the name; Codex: its end), or NULL. */
static const char *name_uuid(const char *name)
{
	size_t n = strlen(name);

	if (n < UUID_LEN + 6 || strcmp(name + n - 6, ".jsonl") != 0)
		return NULL;
	return is_uuid(name + n - 6 - UUID_LEN, UUID_LEN) ? name + n - 6 - UUID_LEN : NULL;
}

struct newest {
	int64_t since_ns, mtime_ns;
	char id[UUID_LEN + 1];
};

/* Walks dir (an fd, closed here) down depth more levels for the newest session file. */
static void walk(int dir, int depth, struct newest *w)
{
	DIR *d = fdopendir(dir);
	struct dirent *e;

	if (!d) {
		close(dir);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;
		const char *id;
		int64_t ns;

		if (e->d_name[0] == '.' ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (depth > 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0)
				walk(sub, depth - 1, w);
			continue;
		}
		ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		if (depth == 0 && S_ISREG(st.st_mode) && (id = name_uuid(e->d_name)) &&
		    ns >= w->since_ns && ns > w->mtime_ns) {
			w->mtime_ns = ns;
			memcpy(w->id, id, UUID_LEN);
			w->id[UUID_LEN] = '\0';
		}
	}
	closedir(d);
}

/* home/<a>/<b>, opened without following a link at any step; -1 when it is not there. */
static int open_under(const char *home, const char *a, const char *b)
{
	int fd = open(home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	const char *parts[2] = {a, b};

	for (size_t i = 0; i < 2 && fd >= 0; i++) {
		int next = openat(fd, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		close(fd);
		fd = next;
	}
	return fd;
}

char *launch_resume_args(const struct launch *l, int64_t since_ns)
{
	struct newest w = {.since_ns = since_ns};
	bool claude = !strcmp(l->client->name, "claude");
	bool codex = !strcmp(l->client->name, "codex");
	int fd;

	if (!l->ws_home || (!claude && !codex))
		return NULL;
	fd = claude ? open_under(l->ws_home, ".claude", "projects")
		    : open_under(l->ws_home, ".codex", "sessions");
	if (fd < 0)
		return NULL;
	walk(fd, claude ? 1 : 3, &w);
	if (!w.id[0])
		return NULL;
	return util_asprintf(claude ? "--resume %s" : "resume %s", w.id);
}
