/*
 * cli/review_act.c: what the review page changes, through the same library calls and
 * refusals as the commands (merge, apply, rewind, workspace delete without --force), and the
 * N-way comparison, from `arborinth compare --json` run as a child of this program while
 * that command exists (it is a separate piece of work).
 */
#include "cli/review.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

#define COMPARE_MAX (32u << 20)

static void refused(struct review_reply *r, const char *action)
{
	char *msg = util_asprintf("%s refused: %s", action, arb_error_last());

	review_error(r, 409, msg ? msg : arb_error_last());
	free(msg);
}

static void done_msg(struct review_reply *r, char *msg)
{
	r->status = msg ? 200 : 500;
	r->body = msg ? json_pack("{s:b,s:s}", "ok", 1, "message", msg)
		      : json_pack("{s:s}", "error", "out of memory");
	free(msg);
}

void review_act(struct review_ctx *c, json_t *body, struct review_reply *r)
{
	const char *action = json_string_value(json_object_get(body, "action"));
	const char *name = json_string_value(json_object_get(body, "ws"));
	const char *to = json_string_value(json_object_get(body, "to"));
	struct arb_checkpoint undo;
	struct arb_merge m;
	size_t files;

	if (!action || !name)
		return review_error(r, 400, "an action needs \"action\" and \"ws\"");
	if (arb_workspace_name_check(name) < 0)
		return review_error(r, 400, arb_error_last());
	if (!strcmp(action, "merge")) {
		if (arb_merge(&m, c->p, name) < 0)
			return refused(r, "merge");
		done_msg(r, util_asprintf("merged arborinth/%s into %s, now at %.12s", name,
					  m.branch, m.commit));
	} else if (!strcmp(action, "apply")) {
		if (arb_apply(&files, c->p, name) < 0)
			return refused(r, "apply");
		done_msg(r, util_asprintf("applied %zu changed path%s of %s to the origin's "
					  "working tree (unstaged)",
					  files, files == 1 ? "" : "s", name));
	} else if (!strcmp(action, "rewind")) {
		if (!to)
			return review_error(r, 400, "rewind needs \"to\" (a checkpoint)");
		if (arb_rewind(&undo, c->p, name, to, 0) < 0)
			return refused(r, "rewind");
		done_msg(r, util_asprintf("%s is back at %s; checkpoint %u holds what it was", name,
					  to, undo.seq));
	} else if (!strcmp(action, "delete")) {
		/* As `workspace delete` without --force: unsaved work is refused. */
		if (arb_workspace_remove(c->p, name, 0) < 0)
			return refused(r, "delete");
		done_msg(r, util_asprintf("deleted workspace %s", name));
	} else {
		review_error(r, 400, "unknown action (merge, apply, rewind, delete)");
	}
}

/* Runs argv with stdout into *out (up to COMPARE_MAX bytes); the exit status, or -errno. */
static int run_capture(char *const argv[], char **out, size_t *n)
{
	posix_spawn_file_actions_t fa;
	int pfd[2], status = -1, rc;
	size_t cap = 0;
	pid_t pid;

	*out = NULL;
	*n = 0;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		return -rc;
	}
	for (;;) {
		ssize_t got;

		if (*n + 65536 + 1 > cap && *n < COMPARE_MAX) {
			char *b = realloc(*out, cap = *n + 65536 + 1);

			if (!b)
				break;
			*out = b;
		}
		got = *n < COMPARE_MAX ? read(pfd[0], *out + *n, cap - *n - 1) : 0;
		if (got <= 0)
			break;
		*n += (size_t)got;
	}
	if (*out)
		(*out)[*n] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void review_compare(struct review_ctx *c, json_t *names, struct review_reply *r)
{
	char *help[] = {(char *)c->exe, "compare", "--help", NULL};
	const char **argv = NULL;
	size_t count = json_is_array(names) ? json_array_size(names) : names ? 1 : 0, n = 0;
	char *out = NULL;
	json_error_t e;
	json_t *v;
	int rc;

	if (count < 2 || count > 16) {
		review_error(r, 400, "compare needs 2 to 16 workspaces (ws=A&ws=B...)");
		return;
	}
	if (run_capture(help, &out, &n) != 0) {
		r->status = 200;
		r->body = json_pack("{s:s}", "unavailable", "compare unavailable");
		goto out;
	}
	argv = calloc(count + 6, sizeof(*argv));
	if (!argv)
		goto out;
	argv[0] = c->exe;
	argv[1] = "--workdir";
	argv[2] = arb_project_root(c->p);
	argv[3] = "compare";
	argv[4] = "--json";
	for (size_t i = 0; i < count; i++) {
		const char *name =
		    json_string_value(json_is_array(names) ? json_array_get(names, i) : names);

		if (!name || arb_workspace_name_check(name) < 0) {
			review_error(r, 400, name ? arb_error_last() : "ws: not a name");
			goto out;
		}
		argv[5 + i] = name;
	}
	free(out);
	rc = run_capture((char *const *)argv, &out, &n);
	v = out ? json_loadb(out, n, 0, &e) : NULL;
	if (!v) {
		review_error(r, 500, rc == 0 ? "compare printed no JSON" : "compare failed");
		goto out;
	}
	r->status = 200;
	r->body = v;
out:
	free(argv);
	free(out);
}
