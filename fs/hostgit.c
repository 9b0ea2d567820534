/*
 * fs/hostgit.c: what git run on the host in the view reads of what the box wrote.
 *
 * Trust boundary: the gitdir behind the view's .git and every directory of the work tree
 * are the box's to write. git reads programs to run from them: core.fsmonitor, hooks,
 * core.sshCommand, filters, aliases, includes... in .git/config (or the one `commondir` or
 * config.worktree names), .git/hooks, and the config of any repository it discovers under
 * the user's working directory (a `.git` the box made in a subdirectory, or a bare
 * repository: a directory with HEAD, objects and refs). So callers outside the workspace's
 * boxes (boxes.c) get other answers for those names:
 * - .git/config: a config the daemon writes: the settings core/gitdir.c gives a new
 *   workspace (keep the two the same: fs_hostgit.sh compares them), nothing else. Its one
 *   program is the daemon's own fsmonitor hook, which the daemon answers under .git
 *   whatever the box wrote there (fsmon.c): a fixed script that prints a file named by
 *   git's token (passed as an argument, never parsed as shell);
 * - .git/hooks, .git/commondir, .git/config.worktree: absent;
 * - `.git` in any directory but the root: absent (no nested repository, no gitfile);
 * - `HEAD` in a directory the box changed that has objects and refs, or commondir, but is
 *   not the gitdir itself: absent (a planted bare repository, or one under .git reached by
 *   a symlink, is no repository without it; one in the base commit, untouched, is the
 *   user's own).
 * Boxes see everything as it is. The kernel caches names the daemon answered (FS_TIMEOUT):
 * these names, and the lock files git renames onto them, are answered with no caching at all
 * (fs_hostgit_volatile), and a rename that would give one of them a cached name's dentry
 * (anything else renamed onto them, a directory moved out of the gitdir) is refused with
 * EXDEV, which mv(1) meets by copying.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char host_config[] =
    "# arborinth: the config git outside the workspace's boxes reads (fs/hostgit.c).\n"
    "# The box's own .git/config is shown to its boxes only. Runs no program of the box's.\n"
    "[core]\n"
    "\trepositoryformatversion = 0\n"
    "\tfilemode = true\n"
    "\tbare = false\n"
    "\tlogallrefupdates = true\n"
    "\tcheckStat = minimal\n"
    "\ttrustctime = false\n"
    "\tfsmonitor = .git/" FS_FSMON_NAME "\n"
    "\tuntrackedCache = true\n"
    "[fsmonitor]\n"
    "\tallowRemote = true\n"
    "[checkout]\n"
    "\tworkers = %ld\n";

/* In the gitdir: answered to hosts by the daemon (config) or hidden. */
static const char *const gitdir_names[] = {"config", "hooks", "commondir", "config.worktree"};

enum hide { HIDE_NONE, HIDE_ABSENT, HIDE_CONFIG };

static bool in_gitdir(struct fs *fs, const struct fs_node *dir)
{
	for (const struct fs_node *x = dir; x && x != fs->root; x = x->parent)
		if (x == fs->gitnode)
			return true;
	return false;
}

/* name without a ".lock" ending, into buf; false when too long. */
static bool unlocked(const char *name, char *buf, size_t size)
{
	size_t len = strlen(name);

	if (len >= 5 && !strcmp(name + len - 5, ".lock"))
		len -= 5;
	if (len >= size)
		return false;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return true;
}

/* dir has what git's is_git_directory() wants besides HEAD: objects and refs, or commondir. */
static bool looks_like_gitdir(struct fs *fs, struct fs_node *dir)
{
	static const char *const names[] = {"commondir", "objects", "refs"};
	bool has[ARB_ARRAY_LEN(names)];

	for (size_t i = 0; i < ARB_ARRAY_LEN(names); i++) {
		struct fs_node *n = NULL;

		has[i] = fs_lookup_child(fs, dir, names[i], &n) == 0;
		if (has[i])
			fs_node_maybe_free(fs, n);
	}
	return has[0] || (has[1] && has[2]);
}

static enum hide what_to_hide(struct fs *fs, struct fs_node *dir, const char *name)
{
	if (dir == fs->gitnode) {
		if (!strcmp(name, "config"))
			return HIDE_CONFIG;
		for (size_t i = 1; i < ARB_ARRAY_LEN(gitdir_names); i++)
			if (!strcmp(name, gitdir_names[i]))
				return HIDE_ABSENT;
		return HIDE_NONE;
	}
	if (!strcmp(name, ".git"))
		return dir == fs->root ? HIDE_NONE : HIDE_ABSENT;
	if (!strcmp(name, "HEAD") && dir->fd >= 0 && looks_like_gitdir(fs, dir))
		return HIDE_ABSENT;
	return HIDE_NONE;
}

bool fs_hostgit_volatile(struct fs *fs, const struct fs_node *dir, const char *name)
{
	char base[32];

	if (!dir || !unlocked(name, base, sizeof(base)))
		return false;
	if (dir == fs->gitnode) {
		for (size_t i = 0; i < ARB_ARRAY_LEN(gitdir_names); i++)
			if (!strcmp(base, gitdir_names[i]))
				return true;
		return false;
	}
	if (!strcmp(base, ".git"))
		return dir != fs->root || strcmp(name, ".git") != 0;
	return !strcmp(base, "HEAD") && dir != fs->gitnode;
}

void fs_hostgit_entry(struct fs *fs, const struct fs_node *dir, const char *name,
		      struct fuse_entry_param *e)
{
	if (fs_hostgit_volatile(fs, dir, name))
		e->entry_timeout = 0;
}

/* The workers core/gitdir.c's ws_config_text() gives: twice the CPUs, 4 to 16. */
static char *host_config_text(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long workers = cpus > 0 ? 2 * cpus : 4;

	workers = workers < 4 ? 4 : workers > 16 ? 16 : workers;
	return util_asprintf(host_config, workers);
}

/* The host's config: one node for the daemon's life (fs_node_maybe_free keeps it). */
static int host_config_node(struct fs *fs, struct fs_node **out)
{
	struct fs_node *n = fs->hostcfg;

	if (!n) {
		n = fs_node_new(fs, NULL, "config", S_IFREG); /* in no directory's name table */
		if (!n)
			return -ENOMEM;
		n->synth = host_config_text();
		if (!n->synth) {
			fs_node_maybe_free(fs, n);
			return -ENOMEM;
		}
		n->synth_len = strlen(n->synth);
		n->synth_mode = 0444;
		fs->hostcfg = n;
	}
	*out = n;
	return 0;
}

int fs_hostgit_lookup(struct fs *fs, fuse_req_t req, struct fs_node *dir, const char *name,
		      struct fs_node **out)
{
	enum hide h = what_to_hide(fs, dir, name);
	struct fs_node *real = *out;

	if (h == HIDE_NONE || fs_boxes_has_caller(fs, req))
		return 0;
	if (h == HIDE_ABSENT)
		return -ENOENT;
	if (host_config_node(fs, out) < 0)
		return -ENOMEM;
	fs_node_maybe_free(fs, real);
	return 1;
}

int fs_hostgit_rename_check(struct fs *fs, struct fs_node *p, const char *name, struct fs_node *np,
			    const char *newname, unsigned int flags)
{
	bool from = fs_hostgit_volatile(fs, p, name), to = fs_hostgit_volatile(fs, np, newname);

	/* The daemon's fsmonitor files (the hosts' config runs the hook): not to be replaced. */
	if ((p == fs->gitnode && util_str_has_prefix(name, FS_FSMON_NAME)) ||
	    (np == fs->gitnode && util_str_has_prefix(newname, FS_FSMON_NAME)))
		return -EACCES;
	if (to && !from)
		return -EXDEV;
	if ((flags & RENAME_EXCHANGE) && from && !to)
		return -EXDEV;
	/* Moved out of the gitdir, what was cached there (its HEAD files) would show as is. */
	if (p != np && in_gitdir(fs, p) && !in_gitdir(fs, np))
		return -EXDEV;
	if ((flags & RENAME_EXCHANGE) && p != np && in_gitdir(fs, np) && !in_gitdir(fs, p))
		return -EXDEV;
	return 0;
}
