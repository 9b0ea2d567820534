/* core/gitdir.c: the workspace's own gitdir (NAME/git) and its index. */
#include "core/core_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

static const char ws_config[] = "[core]\n"
				"\trepositoryformatversion = 0\n"
				"\tfilemode = true\n"
				"\tbare = false\n"
				"\tlogallrefupdates = true\n"
				"\tcheckStat = minimal\n"
				"\ttrustctime = false\n"
				/* the view's daemon answers git's fsmonitor (fs/fsmon.c) */
				"\tfsmonitor = .git/arborinth-fsmonitor\n"
				"\tuntrackedCache = true\n"
				/*
				 * git 2.55 and newer take every FUSE file system for a remote one
				 * and turn fsmonitor off on it ("incompatible with fsmonitor"),
				 * the hook's too, unless allowRemote; their own daemon's socket
				 * would go beside the gitdir, on the view: /tmp is the box's own.
				 */
				"[fsmonitor]\n"
				"\tallowRemote = true\n"
				"\tsocketDir = /tmp\n";

/*
 * git checks out files one at a time by default, and in a view each file is a few round
 * trips to the daemon: parallel checkout (git 2.32+, only for 100 files or more) keeps
 * several in flight. Measured on 2 CPUs, a checkout adding 7,215 files over /dev/fuse: 1
 * worker 3.78 s, 2 2.93 s, 4 2.12 s, 8 1.96 s (bench/installs.sh's checkout; over io_uring the
 * same within noise). Twice the CPUs, 4 to 16.
 */
static long checkout_workers(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long workers = cpus > 0 ? 2 * cpus : 4;

	return workers < 4 ? 4 : workers > 16 ? 16 : workers;
}

/* v as a quoted config value, or NULL when it holds a control character (or no memory). */
static char *config_quote(const char *v)
{
	char *out = malloc(2 * strlen(v) + 3), *o = out;

	if (!out)
		return NULL;
	*o++ = '"';
	for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
		if (*c < 0x20 || *c == 0x7f) {
			free(out);
			return NULL;
		}
		if (*c == '"' || *c == '\\')
			*o++ = '\\';
		*o++ = (char)*c;
	}
	*o++ = '"';
	*o = '\0';
	return out;
}

/*
 * The user's git identity, as git run as the user in the origin sees it (libgit2 reads the
 * same files: system, global, XDG, the origin's own, their includes), carried over as values:
 * user.name, user.email, init.defaultBranch. Nothing else: no credential helper, signing key,
 * include or program; signing is turned off, since no key is in the box.
 */
static char *identity_text(struct core_project *p)
{
	static const char *const keys[][2] = {
	    {"user.name", "[user]\n\tname"},
	    {"user.email", "[user]\n\temail"},
	    {"init.defaultBranch", "[init]\n\tdefaultBranch"},
	};
	git_repository *repo = core_project_repo(p);
	git_config *cfg = NULL;
	char *text = strdup("[commit]\n\tgpgSign = false\n[tag]\n\tgpgSign = false\n");

	if (repo && text && git_repository_config_snapshot(&cfg, repo) < 0)
		cfg = NULL;
	for (size_t i = 0; cfg && text && i < ARB_ARRAY_LEN(keys); i++) {
		const char *v = NULL;
		char *q = NULL, *t;

		if (git_config_get_string(&v, cfg, keys[i][0]) < 0 || !(q = config_quote(v)))
			continue;
		t = util_asprintf("%s%s = %s\n", text, keys[i][1], q);
		free(q);
		free(text);
		text = t;
	}
	git_config_free(cfg);
	return text;
}

static char *ws_config_text(struct core_project *p, const char *name,
			    const struct core_origin_refs *refs)
{
	char *id = identity_text(p), *up = NULL, *text = NULL;

	/* The workspace branch follows the origin's current one: `git status`, `git rebase`. */
	if (refs && refs->head && !strpbrk(name, "\"\\") && !strpbrk(refs->head, "\"\\"))
		up = util_asprintf("[branch \"arborinth/%s\"]\n\tremote = .\n"
				   "\tmerge = refs/remotes/origin/%s\n",
				   name, refs->head);
	else
		up = strdup("");
	if (id && up)
		text = util_asprintf("%s[checkout]\n\tworkers = %ld\n%s%s", ws_config,
				     checkout_workers(), id, up);
	free(id);
	free(up);
	return text;
}

static int write_text(const char *dir, const char *name, const char *text)
{
	char *path = util_path_join(dir, name);
	int rc;

	if (!path)
		return -ENOMEM;
	rc = util_write_file(path, text, strlen(text), 0644);
	free(path);
	return rc;
}

static int make_dirs(const char *gitdir)
{
	static const char *const dirs[] = {"objects/info", "objects/pack", "refs/heads/arborinth",
					   "refs/tags", "info"};
	int rc = 0;

	for (size_t i = 0; i < ARB_ARRAY_LEN(dirs) && rc == 0; i++) {
		char *d = util_path_join(gitdir, dirs[i]);

		rc = d ? util_mkdir_p(d, 0755) : -ENOMEM;
		free(d);
	}
	return rc;
}

/*
 * Stat data for every entry: what the view reports for an unmodified lower file, so that
 * `git status` with core.checkStat=minimal finds the tree clean without reading content.
 * The entries are updated in place: times and size are not part of the index's ordering or
 * lookup, and a git_index_add per entry (a search and a copy each) was most of the cost of
 * creating a workspace of a large tree.
 */
int core_index_fill_stat(git_index *idx, git_odb *odb, int64_t when)
{
	size_t n = git_index_entrycount(idx);

	for (size_t i = 0; i < n; i++) {
		git_index_entry *e = (git_index_entry *)git_index_get_byindex(idx, i);
		struct fs_lower_stat ls;
		git_object_t type;
		size_t size = 0;

		if (e->mode != GIT_FILEMODE_COMMIT &&
		    git_odb_read_header(&size, &type, odb, &e->id) < 0)
			return util_err(-EIO, "cannot read object header: %s",
					git_error_last()->message);
		fs_lower_stat_of(when, (int64_t)size, &ls);
		e->mtime.seconds = (int32_t)ls.mtime_sec;
		e->ctime.seconds = (int32_t)ls.ctime_sec;
		e->ctime.nanoseconds = e->mtime.nanoseconds = 0;
		e->file_size = (uint32_t)ls.size;
	}
	return 0;
}

/*
 * git re-reads the content of every entry whose mtime is not older than the index file
 * ("racily clean"); other entries it takes as unchanged when size and mtime match (with
 * core.checkStat=minimal: the mtime's seconds). The index is dated now, in whole seconds, so
 * the base's files (dated base_time) are not racy once the base is a second old. It is never
 * dated later than now: an index from the future would make a same-size edit made in the
 * base's second (sed -i right after the commit) look unchanged. A base committed this very
 * second (or dated ahead) leaves every entry racy: git reads content until it writes its index.
 */
int core_index_not_racy(const char *path, int64_t base_time)
{
	struct timespec t[2];

	(void)base_time;
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_nsec = 0;
	t[1] = t[0];
	if (utimensat(AT_FDCWD, path, t, 0) < 0)
		return util_err(-errno, "cannot date %s: %s", path, strerror(errno));
	return 0;
}

static int build_index(struct core_project *p, const char *path, const git_oid *base);

/*
 * The index of a base commit is the same for every workspace made from it, and git never
 * writes an index in place (it renames index.lock over it), so workspaces share one copy:
 * <state dir>/index-cache/<commit> hard-linked as NAME/git/index. The fs daemon breaks the link
 * before anything else could change the shared file through a view (fs/upper.c). The first
 * create of a base builds it; later ones cost a link() and no disk.
 */
static int write_index(struct core_project *p, const char *gitdir, const git_oid *base)
{
	char hex[GIT_OID_HEXSZ + 1];
	char *path = util_path_join(gitdir, "index");
	char *dir = util_path_join(p->state_dir, "index-cache");
	char *cached = NULL, *tmp = NULL;
	int rc;

	git_oid_tostr(hex, sizeof(hex), base);
	if (!path || !dir || !(cached = util_path_join(dir, hex)) ||
	    !(tmp = util_asprintf("%s.%d.tmp", cached, (int)getpid()))) {
		rc = -ENOMEM;
		goto out;
	}
	if (link(cached, path) == 0) {
		rc = 0;
		goto out;
	}
	rc = build_index(p, path, base);
	if (rc < 0)
		goto out;
	/* Publish for the next workspace of this base; a failure here only costs that reuse. */
	if (util_mkdir_p(dir, 0755) == 0 && link(path, tmp) == 0 && rename(tmp, cached) < 0)
		unlink(tmp);
out:
	free(path);
	free(dir);
	free(cached);
	free(tmp);
	return rc;
}

static int build_index(struct core_project *p, const char *path, const git_oid *base)
{
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_index *idx = NULL;
	git_odb *odb = NULL;
	git_repository *repo = core_project_repo(p);
	int rc = -EIO;

	if (!repo)
		return -EIO;
	if (git_commit_lookup(&commit, repo, base) < 0 || git_commit_tree(&tree, commit) < 0 ||
	    git_repository_odb(&odb, repo) < 0 || git_index_open(&idx, path) < 0 ||
	    git_index_read_tree(idx, tree) < 0) {
		rc = util_err(-EIO, "cannot build index: %s", git_error_last()->message);
		goto out;
	}
	rc = core_index_fill_stat(idx, odb, git_commit_committer(commit)->when.time);
	if (rc < 0)
		goto out;
	if (git_index_write(idx) < 0) {
		rc = util_err(-EIO, "cannot write index: %s", git_error_last()->message);
		goto out;
	}
	rc = core_index_not_racy(path, git_commit_committer(commit)->when.time);
out:
	git_index_free(idx);
	git_odb_free(odb);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

int core_gitdir_write(struct core_project *p, const char *gitdir, const char *name,
		      const git_oid *base, const char *store, const struct core_origin_refs *refs)
{
	char hex[GIT_OID_HEXSZ + 1];
	char *head = NULL, *ref = NULL, *alt = NULL, *branch = NULL, *config = NULL;
	int rc;

	git_oid_tostr(hex, sizeof(hex), base);
	rc = make_dirs(gitdir);
	if (rc < 0)
		return rc;
	head = util_asprintf("ref: refs/heads/arborinth/%s\n", name);
	branch = util_asprintf("refs/heads/arborinth/%s", name);
	ref = util_asprintf("%s\n", hex);
	/* The second store: the origin's branches' and tags' objects (core/origin_refs.c). */
	alt = store ? util_asprintf("%s\n%s\n", p->objects, store)
		    : util_asprintf("%s\n", p->objects);
	config = ws_config_text(p, name, refs);
	if (!head || !branch || !ref || !alt || !config) {
		rc = -ENOMEM;
		goto out;
	}
	rc = write_text(gitdir, "HEAD", head);
	if (rc == 0)
		rc = write_text(gitdir, branch, ref);
	if (rc == 0)
		rc = write_text(gitdir, "config", config);
	if (rc == 0)
		rc = write_text(gitdir, "objects/info/alternates", alt);
	if (rc == 0)
		rc = write_text(gitdir, "description", "arborinth workspace\n");
	if (rc == 0)
		rc = write_index(p, gitdir, base);
	if (rc == 0)
		rc = core_submodules_write(p, gitdir, base);
	if (rc == 0 && refs) {
		int fd = open(gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		rc = fd < 0 ? util_err(-errno, "cannot open %s: %s", gitdir, strerror(errno))
			    : core_origin_refs_write(fd, refs, NULL);
		if (fd >= 0)
			close(fd);
	}
out:
	free(head);
	free(branch);
	free(ref);
	free(alt);
	free(config);
	return rc;
}

void core_index_cache_prune(struct core_project *p, const char *base_hex)
{
	char *cached = util_asprintf("%s/index-cache/%s", p->state_dir, base_hex);
	struct stat st;

	/* Only the cache's own name is left: no workspace of this base any more. */
	if (cached && stat(cached, &st) == 0 && st.st_nlink == 1)
		unlink(cached);
	free(cached);
}
