/*
 * core/state_move.c: the upgrade of an older version's state, <root>/.arborinth (in the
 * working tree, where `git clean -fdx` deleted it), to the state directory in the git
 * directory (core/state_dir.c). Done by the first command that opens the project:
 *
 *  1. under an exclusive lock on the common dir (one mover at a time), refuse with one line
 *     while a session of any workspace runs; stop every mounted view (its daemon holds the
 *     old paths) and write the journal <state>.upgrade: one line "NAME ALLOW_OTHER" per view
 *     to start again;
 *  2. move each entry of the old folder into the new one with rename(2) (the git directory is
 *     inside the working tree, so one file system), then remove the old folder. When the git
 *     directory is on another file system (a .git file pointing elsewhere), each entry is
 *     copied beside its place, checked against the source, renamed into place, and only then
 *     removed from the old folder (core/state_copy.c);
 *  3. point the origin's remotes whose URL was under the old folder (arborinth/NAME, each a
 *     workspace's export.git) at the new one, and the line of each workspace gitdir's
 *     alternates that names its store of the origin's branches (NAME/origin-objects; read
 *     and replaced beneath the gitdir, no link followed: the box writes there). No other
 *     stored path names the state directory: the other alternates name the origin's
 *     objects, the views' daemons get theirs on the command
 *     line, workspace paths are made from the state directory, and state.db's rows (hash
 *     chained) keep what was true when they were written;
 *  4. mount the views of the journal again, then remove the journal.
 * Each step can be done again: a command after an interrupted one (kill -9 anywhere) finds
 * the journal and finishes. ARBORINTH_TEST_KILL=<point> (tests) kills the process at a point.
 */
#include "core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "fs/fs.h"

struct move {
	struct core_project *p;
	char *old, *journal;
};

static void kill_point(const char *point)
{
	const char *want = getenv("ARBORINTH_TEST_KILL");

	if (want && !strcmp(want, point))
		raise(SIGKILL);
}

/* The journal's text: the views to mount again. */
static int stop_views(struct move *m, char **journal)
{
	/* The old folder read through a copy of p: no database or repository of p's opened. */
	struct core_project o = *m->p;
	struct core_ws **ws = NULL;
	struct util_buf text = {0};
	size_t n = 0;
	int64_t running = 0;
	int rc;

	o.state_dir = m->old;
	o.db = NULL;
	o.repo = NULL;
	rc = core_ws_list(&o, &ws, &n);
	if (rc == -ENOENT) {
		util_err_clear();
		rc = 0; /* no state.db: no workspace */
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = core_ws_session_running(&o, ws[i], &running);
		if (rc == 0 && running)
			rc = util_err(
			    -EBUSY,
			    "session %lld of %s is running; arborinth moves its state from "
			    "%s to %s when it has ended",
			    (long long)running, ws[i]->name, m->old, m->p->state_dir);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct stat st;
		bool other;

		if (!fs_is_mounted(ws[i]->workdir))
			continue;
		other = stat(ws[i]->root, &st) == 0 && (st.st_mode & 011);
		rc = util_buf_put(&text, ws[i]->name, strlen(ws[i]->name));
		rc = rc ?: util_buf_put(&text, other ? " 1\n" : " 0\n", 3);
		rc = rc ?: core_ws_unmount(&o, ws[i]);
	}
	for (size_t i = 0; i < n; i++)
		core_ws_free(ws[i]);
	free(ws);
	audit_db_close(o.db);
	git_repository_free(o.repo);
	rc = rc ?: util_buf_put(&text, "", 1);
	if (rc < 0)
		free(text.s);
	else
		*journal = text.s;
	return rc;
}

/*
 * old/name to new/name across file systems: copied to new/.name.copy (one a killed move left
 * is removed first), checked, renamed into place, then the source removed.
 */
static int copy_entry(struct move *m, const char *name)
{
	const char *new = m->p->state_dir;
	char *tmp = util_asprintf(".%s.copy", name), *tmp_path = NULL, *to = NULL, *from = NULL;
	struct stat st;
	int rc = -ENOMEM;

	tmp_path = tmp ? util_path_join(new, tmp) : NULL;
	to = util_path_join(new, name);
	from = util_path_join(m->old, name);
	if (!tmp_path || !to || !from)
		goto out;
	/* In place already: a move killed before it removed the source (checked by then). */
	if (lstat(to, &st) == 0) {
		rc = util_rm_rf(from);
		goto out;
	}
	rc = util_rm_rf(tmp_path);
	rc = rc ?: core_state_copy(m->old, name, new, tmp);
	kill_point("copied");
	if (rc == 0 && rename(tmp_path, to) < 0)
		rc = -errno;
	rc = rc ?: util_rm_rf(from);
	if (rc < 0)
		rc = util_err(rc, "cannot copy %s to %s: %s", from, to, strerror(-rc));
out:
	free(from);
	free(to);
	free(tmp_path);
	free(tmp);
	return rc;
}

/*
 * Step 2: every entry of old renamed into the state directory (copied when it is on another
 * file system, or when ARBORINTH_TEST_COPY says so, for the tests), then old removed.
 */
static int move_entries(struct move *m)
{
	const char *new = m->p->state_dir;
	bool copy = getenv("ARBORINTH_TEST_COPY") != NULL;
	DIR *d = opendir(m->old);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0 : util_err(-errno, "%s: %s", m->old, strerror(errno));
	while (rc == 0 && (e = readdir(d))) {
		char *from, *to;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		from = util_path_join(m->old, e->d_name);
		to = util_path_join(new, e->d_name);
		if (!from || !to)
			rc = -ENOMEM;
		else if (copy || rename(from, to) < 0)
			rc = copy || errno == EXDEV ? copy_entry(m, e->d_name)
						    : util_err(-errno, "cannot move %s to %s: %s",
							       from, to, strerror(errno));
		free(from);
		free(to);
		kill_point("moving");
	}
	closedir(d);
	if (rc == 0 && rmdir(m->old) < 0 && errno != ENOENT)
		rc = util_err(-errno, "%s: %s", m->old, strerror(errno));
	return rc;
}

/* Step 3: the remote arborinth/NAME of each workspace, when it pointed into the old folder. */
static int fix_remote(struct move *m, git_repository *repo, const char *name)
{
	char *remote = util_asprintf("arborinth/%s", name), *to = NULL;
	size_t olen = strlen(m->old);
	git_remote *r = NULL;
	const char *url;
	int rc = 0;

	if (!remote)
		return -ENOMEM;
	if (git_remote_lookup(&r, repo, remote) < 0)
		goto out; /* none: nothing to fix */
	url = git_remote_url(r);
	if (url && !strncmp(url, m->old, olen) && url[olen] == '/') {
		to = util_path_join(m->p->state_dir, url + olen + 1);
		if (!to)
			rc = -ENOMEM;
		else if (git_remote_set_url(repo, remote, to) < 0)
			rc = util_err(-EIO, "cannot update remote %s: %s", remote,
				      git_error_last()->message);
	}
out:
	free(to);
	git_remote_free(r);
	free(remote);
	return rc;
}

/* Opens the path of components beneath dir, each a directory, following no link: fd or -1. */
static int open_dirs_beneath(int dir, const char *const *names, size_t n)
{
	int fd = dup(dir);

	for (size_t i = 0; fd >= 0 && i < n; i++) {
		int next = core_open_read_beneath(fd, names[i], true);

		close(fd);
		fd = next;
	}
	return fd;
}

/* Step 3 too: in NAME/git/objects/info/alternates, the line naming NAME/origin-objects. */
static int fix_alternates(struct move *m, int wsdir, const char *name)
{
	const char *const path[] = {name, "git", "objects", "info"};
	char *from = util_asprintf("%s/workspaces/%s/%s", m->old, name, CORE_ORIGIN_OBJECTS);
	char *to = util_asprintf("%s/workspaces/%s/%s", m->p->state_dir, name, CORE_ORIGIN_OBJECTS);
	struct util_buf out = {0};
	char buf[65536], *save = NULL;
	int info = -1, fd = -1, rc = 0;
	bool changed = false;
	ssize_t len;

	if (!from || !to) {
		rc = -ENOMEM;
		goto out;
	}
	info = open_dirs_beneath(wsdir, path, ARB_ARRAY_LEN(path));
	fd = info < 0 ? -1 : core_open_read_beneath(info, "alternates", false);
	if (fd < 0)
		goto out; /* none (or not a plain file): nothing of ours to fix */
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0 || (size_t)len == sizeof(buf) - 1)
		goto out; /* unreadable, or not what we wrote: left as it is */
	buf[len] = '\0';
	for (char *l = strtok_r(buf, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save)) {
		bool ours = !strcmp(l, from);

		changed |= ours;
		rc = util_buf_put(&out, ours ? to : l, strlen(ours ? to : l));
		rc = rc ?: util_buf_put(&out, "\n", 1);
	}
	if (rc == 0 && changed) {
		/*
		 * Written beside it under a name the box cannot have planted (it may have made
		 * any name a directory, or its folder read-only): a failure here is that
		 * workspace's own git directory's, so a warning, not the whole upgrade's end.
		 */
		unsigned long long r = 0;
		char tmp[64];
		int w;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned long long)util_now_ns() ^ (unsigned long long)getpid();
		snprintf(tmp, sizeof(tmp), "alternates.arborinth-upgrade-%016llx", r);
		w = core_open_beneath(info, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (w < 0 || util_write_all(w, out.s, out.n) < 0 || fsync(w) < 0 ||
		    renameat(info, tmp, info, "alternates") < 0) {
			fprintf(stderr,
				"arborinth: warning: %s/workspaces/%s: cannot update its "
				"alternates (%s): its git may not find the origin's branches\n",
				m->p->state_dir, name, strerror(errno));
			if (w >= 0)
				(void)unlinkat(info, tmp, 0);
		}
		if (w >= 0)
			close(w);
	}
out:
	if (fd >= 0)
		close(fd);
	if (info >= 0)
		close(info);
	free(out.s);
	free(from);
	free(to);
	return rc;
}

static int fix_remotes(struct move *m)
{
	git_repository *repo = core_project_repo(m->p);
	char *dir = util_path_join(m->p->state_dir, "workspaces");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int rc = 0;

	if (!repo || !dir) {
		free(dir);
		return repo ? -ENOMEM : -EIO;
	}
	while (d && rc == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.' || core_ws_name_check(e->d_name) < 0) {
			util_err_clear();
			continue;
		}
		rc = fix_remote(m, repo, e->d_name);
		rc = rc ?: fix_alternates(m, dirfd(d), e->d_name);
	}
	if (d)
		closedir(d);
	free(dir);
	return rc;
}

/* Step 4: the views stopped in step 1. */
static int start_views(struct move *m, char *journal)
{
	int rc = 0;

	for (char *save = NULL, *l = strtok_r(journal, "\n", &save); l && rc == 0;
	     l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');
		struct core_ws *ws = NULL;

		if (!sp)
			continue;
		*sp = '\0';
		if (core_ws_name_check(l) < 0 || core_ws_get(m->p, l, &ws) < 0) {
			util_err_clear();
			continue; /* deleted meanwhile, or not ours: nothing to mount */
		}
		rc = core_ws_mount(m->p, ws, !strcmp(sp + 1, "1") ? CORE_WS_ALLOW_OTHER : 0);
		core_ws_free(ws);
	}
	return rc;
}

static int upgrade(struct move *m)
{
	struct stat st;
	char *journal = NULL, *parent = NULL;
	size_t len;
	int rc;

	if (lstat(m->journal, &st) == 0) {
		rc = util_read_file(m->journal, &journal, &len);
	} else {
		char *db = util_path_join(m->p->state_dir, "state.db");

		rc = !db ? -ENOMEM
		     : lstat(db, &st) == 0
			 ? util_err(-EEXIST,
				    "both %s (an older version's) and %s hold arborinth state; "
				    "remove or move one of them",
				    m->old, m->p->state_dir)
			 : 0;
		free(db);
		rc = rc ?: stop_views(m, &journal);
		rc = rc ?: util_write_file(m->journal, journal, strlen(journal), 0600);
	}
	if (rc < 0)
		goto out;
	kill_point("stopped");
	parent = strdup(m->p->state_dir);
	if (!parent) {
		rc = -ENOMEM;
		goto out;
	}
	*strrchr(parent, '/') = '\0';
	rc = util_mkdir_p(parent, 0700);
	if (rc == 0 && mkdir(m->p->state_dir, 0700) < 0 && errno != EEXIST)
		rc = -errno;
	if (rc < 0) {
		rc = util_err(rc, "%s: %s", m->p->state_dir, strerror(-rc));
		goto out;
	}
	rc = move_entries(m);
	kill_point("moved");
	rc = rc ?: fix_remotes(m);
	kill_point("fixed");
	rc = rc ?: start_views(m, journal);
	kill_point("started");
	if (rc == 0 && unlink(m->journal) < 0)
		rc = util_err(-errno, "%s: %s", m->journal, strerror(errno));
out:
	free(parent);
	free(journal);
	return rc;
}

int core_state_upgrade(struct core_project *p)
{
	struct move m = {.p = p};
	struct stat st;
	bool journal;
	int lock = -1, rc = 0;

	if (getenv("ARBORINTH_TEST_OLD_LAYOUT"))
		return 0;
	m.old = util_path_join(p->root, CORE_OLD_STATE_NAME);
	m.journal = util_asprintf("%s.upgrade", p->state_dir);
	if (!m.old || !m.journal) {
		rc = -ENOMEM;
		goto out;
	}
	/* The common case, two lstat()s: nothing old, no move under way. */
	journal = lstat(m.journal, &st) == 0;
	if (!journal && (lstat(m.old, &st) < 0 || !S_ISDIR(st.st_mode)))
		goto out;
	/* Another user's: moved by that user, never forked into a second state here. */
	if (!journal && st.st_uid != geteuid()) {
		rc = util_err(-EPERM,
			      "%s (an older version's state) belongs to uid %u: run arborinth as "
			      "that user once to move it into %s",
			      m.old, (unsigned)st.st_uid, p->state_dir);
		goto out;
	}
	lock = open(p->commondir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		rc = util_err(-errno, "%s: %s", p->commondir, strerror(errno));
		goto out;
	}
	/* Another command may have finished it while this one waited. */
	if (lstat(m.journal, &st) == 0 || (lstat(m.old, &st) == 0 && S_ISDIR(st.st_mode)))
		rc = upgrade(&m);
	if (rc == 0)
		core_project_cache_write(p);
out:
	if (lock >= 0)
		close(lock);
	free(m.old);
	free(m.journal);
	return rc;
}
