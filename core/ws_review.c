/*
 * core/ws_review.c: the review page's comments on a workspace, which cli/review_comments.c
 * keeps in <state dir>/review/<workspace id>.json (written as .json.tmp, renamed over): removed
 * with the workspace (core_ws_delete_opts), and the names gc knows as such for the leftovers
 * of workspaces deleted by older versions. The folder is opened without following a link and
 * only names of that form are unlinked in it.
 */
#include "core/core_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID_LEN 32

bool core_review_file_id(const char *name, char id[ID_LEN + 1])
{
	const char *ext = name + ID_LEN;

	if (strlen(name) <= ID_LEN || strspn(name, "0123456789abcdef") != ID_LEN ||
	    (strcmp(ext, ".json") && strcmp(ext, ".json.tmp")))
		return false;
	memcpy(id, name, ID_LEN);
	id[ID_LEN] = '\0';
	return true;
}

void core_review_remove(struct core_project *p, const char *id)
{
	static const char *const ext[] = {".json", ".json.tmp"};
	char *dir = util_path_join(p->state_dir, CORE_REVIEW_DIR);
	int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	char name[ID_LEN + 16];
	char check[ID_LEN + 1];

	for (size_t i = 0; fd >= 0 && i < ARB_ARRAY_LEN(ext); i++) {
		snprintf(name, sizeof(name), "%.*s%s", ID_LEN, id, ext[i]);
		if (core_review_file_id(name, check) && !strcmp(check, id))
			(void)unlinkat(fd, name, 0);
	}
	if (fd >= 0)
		close(fd);
	free(dir);
}
