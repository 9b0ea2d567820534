/*
 * fs/lower_sub.c: submodules in the lower layer. A gitlink of the base tree whose submodule
 * the origin has initialised (fs/submods.c) is a directory holding the tree of the commit the
 * superproject records, read lazily like the rest of the lower layer: the submodules' object
 * stores (<origin gitdir>/modules/NAME/objects) are alternates of the daemon's repository
 * handles, so trees and blobs of either are found by id (the blob cache is keyed by id too).
 * Its root also shows a `.git` file the daemon makes up, read-only, naming the submodule's
 * gitdir inside the workspace's (core/submodules.c makes it at create): `gitdir:
 * ../.git/modules/NAME`, relative, as git writes it (a workspace whose gitdir has none, made
 * before this, sees an empty directory as it did). Hosts never see it (fs/hostgit.c hides
 * `.git` below the root), so git on the host finds no submodule to run anything of.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* The origin's store of submodule s: <repo>/<gitdir>/objects. Caller frees. */
static char *store_of(struct fs *fs, const struct fs_submodule *s)
{
	return util_asprintf("%s/%s/objects", fs->repo_path, s->gitdir);
}

int fs_lower_subs_attach(struct fs *fs, git_repository *r)
{
	git_odb *odb = NULL;
	int rc = 0;

	if (!fs->nsubs)
		return 0;
	if (git_repository_odb(&odb, r) < 0)
		return -EIO;
	for (size_t i = 0; i < fs->nsubs && rc == 0; i++) {
		char *store;

		if (fs->subs[i].state != FS_SUBMODULE_PRESENT)
			continue;
		store = store_of(fs, &fs->subs[i]);
		rc = !store ? -ENOMEM
		     : git_odb_add_disk_alternate(odb, store) < 0
			 ? util_err(-EIO, "submodule %s: cannot read %s: %s", fs->subs[i].path,
				    store, git_error_last() ? git_error_last()->message : "?")
			 : 0;
		free(store);
	}
	git_odb_free(odb);
	return rc;
}

int fs_lower_subs_init(struct fs *fs)
{
	int rc = fs_submodules_find(fs->repo_path, fs->cfg->base, &fs->subs, &fs->nsubs);

	/*
	 * A workspace made before submodules were shown has no gitdir for them: it keeps seeing
	 * empty directories (a `.git` naming nothing would break git in it). Only a stat.
	 */
	for (size_t i = 0; rc == 0 && i < fs->nsubs; i++) {
		struct fs_submodule *s = &fs->subs[i];
		char *head =
		    s->state == FS_SUBMODULE_PRESENT ? util_asprintf("%s/HEAD", s->gitdir) : NULL;
		struct stat st;

		if (s->state == FS_SUBMODULE_PRESENT && !head)
			rc = -ENOMEM;
		else if (head && fstatat(fs->gitdir_fd, head, &st, AT_SYMLINK_NOFOLLOW) < 0)
			s->state = FS_SUBMODULE_ABSENT;
		free(head);
	}
	return rc < 0 ? rc : fs_lower_subs_attach(fs, fs->repo);
}

void fs_lower_subs_free(struct fs *fs)
{
	fs_submodules_free(fs->subs, fs->nsubs);
	fs->subs = NULL;
	fs->nsubs = 0;
}

/* The submodule shown at dir (a gitlink node at its base path), or NULL. */
static const struct fs_submodule *sub_at(struct fs *fs, struct fs_node *dir)
{
	char hex[GIT_OID_HEXSZ + 1];
	const struct fs_submodule *found = NULL;
	char *path;

	if (!fs->nsubs || !dir->has_lower || dir->lower_mode != GIT_FILEMODE_COMMIT)
		return NULL;
	git_oid_tostr(hex, sizeof(hex), &dir->lower_oid);
	path = fs_node_path(fs, dir, NULL);
	for (size_t i = 0; path && i < fs->nsubs && !found; i++)
		if (fs->subs[i].state == FS_SUBMODULE_PRESENT && !strcmp(fs->subs[i].path, path) &&
		    !strcmp(fs->subs[i].commit, hex))
			found = &fs->subs[i];
	free(path);
	return found;
}

int fs_lower_sub_tree(struct fs *fs, struct fs_node *dir)
{
	git_commit *c = NULL;
	int rc = 0;

	/*
	 * By path and commit: a gitlink of the same commit elsewhere (refused, not initialised)
	 * stays empty. A directory moved away keeps its tree (ops_rename.c pins its id).
	 */
	if (!sub_at(fs, dir))
		return 0; /* not initialised: an empty directory, as git leaves it */
	if (git_commit_lookup(&c, fs->repo, &dir->lower_oid) < 0 ||
	    git_tree_lookup(&dir->lower_tree, fs->repo, git_commit_tree_id(c)) < 0)
		rc = -EIO;
	git_commit_free(c);
	return rc;
}

bool fs_lower_sub_root(struct fs *fs, struct fs_node *dir)
{
	return sub_at(fs, dir) != NULL;
}

int fs_lower_sub_gitfile(struct fs *fs, struct fs_node *dir, struct fs_node **out)
{
	const struct fs_submodule *s = sub_at(fs, dir);
	struct fs_node *n;
	char *text, *ups;
	size_t up = 1;

	if (!s)
		return 1;
	for (const char *c = s->path; *c; c++)
		up += *c == '/';
	ups = malloc(3 * up + 1);
	if (!ups)
		return -ENOMEM;
	/* "../" once per component of the path, then the workspace's .git */
	for (size_t i = 0; i < up; i++)
		memcpy(ups + 3 * i, "../", 3);
	ups[3 * up] = '\0';
	text = util_asprintf("gitdir: %s.git/%s\n", ups, s->gitdir);
	free(ups);
	if (!text)
		return -ENOMEM;
	n = fs_node_new(fs, dir, ".git", S_IFREG);
	if (!n) {
		free(text);
		return -ENOMEM;
	}
	n->synth = text;
	n->synth_len = strlen(text);
	n->synth_mode = 0444;
	*out = n;
	return 0;
}
