/*
 * examples/box_example.c: libarborinth from C. Creates a workspace of the git repository in
 * the current directory (or argv[1]), runs a command in a box over its view with the
 * command's output in a pipe, reads what the audit log recorded of that session, and
 * deletes the workspace.
 *
 *   cc box_example.c $(pkg-config --cflags --libs arborinth) -o box_example
 *   ./box_example [REPO]
 */
#include <arborinth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "box_example: %s: %s\n", what, arb_error_last());
	return 1;
}

int main(int argc, char **argv)
{
	char *const cmd[] = {"sh", "-c", "echo hello from the box > greeting.txt; cat greeting.txt",
			     NULL};
	struct arb_audit_filter only_session = {.kinds = ARB_AUDIT_FS | ARB_AUDIT_EXEC};
	const struct arb_audit_row *row;
	struct arb_run_result res;
	arb_project *p = NULL;
	arb_workspace *ws = NULL;
	arb_box *box = NULL;
	arb_audit_iter *it = NULL;
	char name[64], out[256];
	int fds[2], status = 1, rc;
	ssize_t n;

	snprintf(name, sizeof(name), "example-%d", (int)getpid());
	if (arb_project_open(&p, argc > 1 ? argv[1] : NULL) < 0)
		return fail("project");
	printf("project %s\n", arb_project_root(p));
	if (arb_workspace_create(&ws, p, name, NULL, 0) < 0) {
		fail("create");
		goto out;
	}
	printf("workspace %s at %.12s, view %s\n", arb_workspace_name(ws),
	       arb_workspace_base_commit(ws), arb_workspace_workdir(ws));

	/* The box: the default profile, the command's stdout into a pipe of ours. */
	if (pipe(fds) < 0 || arb_box_new(&box, p, name) < 0 ||
	    arb_box_set_stdio(box, -1, fds[1], -1) < 0) {
		fail("box");
		goto out;
	}
	rc = arb_box_run(&res, box, cmd);
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	close(fds[0]);
	out[n > 0 ? n : 0] = '\0';
	if (rc < 0) {
		fail("run");
		goto out;
	}
	printf("exit status %d, session %lld, output: %s", res.exit_status, (long long)res.session,
	       out);

	/* What the audit log has of that session: its exec and exit, and the file it wrote. */
	only_session.session = res.session;
	if (arb_audit_open(&it, p, name, &only_session) < 0) {
		fail("audit");
		goto out;
	}
	while ((rc = arb_audit_next(it, &row)) > 0)
		printf("audit: %-6s %-8s %s (pid %lld, %s)\n", row->kind, row->op,
		       row->path ? row->path : "-", (long long)row->pid,
		       row->comm ? row->comm : "?");
	if (rc < 0) {
		fail("audit row");
		goto out;
	}
	status = res.exit_status;
out:
	arb_audit_free(it);
	arb_box_free(box);
	arb_workspace_free(ws);
	if (arb_workspace_delete(p, name) < 0)
		fprintf(stderr, "box_example: delete: %s\n", arb_error_last());
	else
		printf("deleted %s\n", name);
	arb_project_free(p);
	return status;
}
