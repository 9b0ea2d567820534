/* cli/cmd_workspace.c: `arborinth workspace create|list|info|delete`. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/arborinth.h"

static int ws_create(struct cli_global *g, int argc, char **argv);
static int ws_list(struct cli_global *g, int argc, char **argv);
static int ws_info(struct cli_global *g, int argc, char **argv);
static int ws_delete(struct cli_global *g, int argc, char **argv);
static int ws_mount(struct cli_global *g, int argc, char **argv);
static int ws_unmount(struct cli_global *g, int argc, char **argv);

const struct cli_cmd cmd_workspace_subs[] = {
    {"create", "workspace create", ws_create, "create a workspace", cmd_workspace_usage},
    {"list", "workspace list", ws_list, "list workspaces", cmd_workspace_usage},
    {"info", "workspace info", ws_info, "show one workspace", cmd_workspace_usage},
    {"delete", "workspace delete", ws_delete, "delete a workspace", cmd_workspace_usage},
    {"mount", "workspace mount", ws_mount, "mount a workspace's view", cmd_workspace_usage},
    {"unmount", "workspace unmount", ws_unmount, "unmount a workspace's view", cmd_workspace_usage},
    {0},
};

static json_t *ws_json(const arb_workspace *ws)
{
	json_t *(*b)(const char *) = util_json_bytes; /* paths and names: exact, any bytes */
	char created[32];

	util_time_format(created, sizeof(created), arb_workspace_created_ns(ws), true);

	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:s,s:s,s:b,s:I,s:s?,s:s?}", "name",
			 b(arb_workspace_name(ws)), "root", b(arb_workspace_root(ws)), "workdir",
			 b(arb_workspace_workdir(ws)), "tmp", b(arb_workspace_tmp(ws)), "cache",
			 b(arb_workspace_cache(ws)), "home", b(arb_workspace_home(ws)),
			 "base_commit", arb_workspace_base_commit(ws), "branch",
			 b(arb_workspace_branch(ws)), "remote", b(arb_workspace_remote(ws)),
			 "created", created, "state", arb_workspace_state(ws), "mounted",
			 arb_workspace_mounted(ws), "daemon_pid",
			 (json_int_t)arb_workspace_daemon_pid(ws), "io", arb_workspace_io(ws),
			 "transport", arb_workspace_transport(ws));
}

static void ws_print(const arb_workspace *ws)
{
	char created[32];

	util_time_format(created, sizeof(created), arb_workspace_created_ns(ws), false);
	printf("name:     %s\n", cli_q(arb_workspace_name(ws)));
	printf("root:     %s\n", cli_q(arb_workspace_root(ws)));
	printf("workdir:  %s\n", cli_q(arb_workspace_workdir(ws)));
	/* fs/hostgit.c: what git on the host sees there */
	printf("host git: reads arborinth's .git/config there, not the box's; no hooks or nested "
	       "repos of the box's (review: arborinth diff %s)\n",
	       cli_q(arb_workspace_name(ws)));
	printf("tmp:      %s\n", cli_q(arb_workspace_tmp(ws)));
	printf("cache:    %s\n", cli_q(arb_workspace_cache(ws)));
	printf("home:     %s\n", cli_q(arb_workspace_home(ws)));
	printf("base:     %s\n", cli_q(arb_workspace_base_commit(ws)));
	printf("branch:   %s\n", cli_q(arb_workspace_branch(ws)));
	printf("remote:   %s\n", cli_q(arb_workspace_remote(ws)));
	printf("created:  %s\n", created);
	if (arb_workspace_mounted(ws)) {
		printf("mounted:  yes (daemon pid %lld)\n",
		       (long long)arb_workspace_daemon_pid(ws));
		if (arb_workspace_io(ws))
			printf("io:       %s\n", cli_q(arb_workspace_io(ws)));
		if (arb_workspace_transport(ws))
			printf("requests: %s\n", cli_q(arb_workspace_transport(ws)));
	} else {
		printf("mounted:  no\n");
	}
}

/* The command line's one line for a failure of the library (exit status 1). */
static int fail_lib(void)
{
	return cli_fail(CLI_ERR, "%s", arb_error_last());
}

/* `create --dirty`, `--from`, `create|mount --allow-other`, `--io`, `delete --force` and
 * `list --all`, set by parse(). */
static bool create_dirty, allow_other, delete_force, list_all;
static unsigned int io_flags;
static const char *create_from, *disk_size;

/* Parses [--json] (and --rev, --purge where rev, purge are given) plus `npos` positionals. */
static int parse(struct cli_global *g, const char *sub, int argc, char **argv, bool *json,
		 const char **rev, bool *purge, const char **pos, int npos, int *status)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
					     {"rev", required_argument, NULL, 'r'},
					     {"purge", no_argument, NULL, 'P'},
					     {"dirty", no_argument, NULL, 'D'},
					     {"allow-other", no_argument, NULL, 'O'},
					     {"from", required_argument, NULL, 'F'},
					     {"io", required_argument, NULL, 'I'},
					     {"disk", required_argument, NULL, 'S'},
					     {"force", no_argument, NULL, 'f'},
					     {"all", no_argument, NULL, 'a'},
					     {0}};
	const struct cli_cmd *cmd = cli_cmd_find(cmd_workspace_subs, sub);
	int c;

	optind = 0;
	while ((c = cli_getopt(g, cmd, argc, argv, "", opts, status)) != -1) {
		if (c == -2)
			return -1;
		if (c == 'j') {
			*json = true;
		} else if (c == 'r' && rev) {
			*rev = optarg;
		} else if (c == 'P' && purge) {
			*purge = true;
		} else if (c == 'f' && !strcmp(sub, "delete")) {
			delete_force = true;
		} else if (c == 'a' && !strcmp(sub, "list")) {
			list_all = true;
		} else if (c == 'D' && !strcmp(sub, "create")) {
			create_dirty = true;
		} else if (c == 'F' && !strcmp(sub, "create")) {
			create_from = optarg;
		} else if (c == 'O' && (!strcmp(sub, "create") || !strcmp(sub, "mount"))) {
			allow_other = true;
		} else if (c == 'S' && (!strcmp(sub, "create") || !strcmp(sub, "mount"))) {
			disk_size = optarg;
		} else if (c == 'I' && (!strcmp(sub, "create") || !strcmp(sub, "mount"))) {
			if (strcmp(optarg, "daemon") != 0 && strcmp(optarg, "passthrough") != 0) {
				*status = cli_usage_error(cmd->path, "--io daemon|passthrough");
				return -1;
			}
			io_flags = !strcmp(optarg, "passthrough") ? ARB_WS_IO_PASSTHROUGH
								  : ARB_WS_IO_DAEMON;
		} else {
			*status =
			    cli_usage_error(cmd->path, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (argc - optind < npos) {
		*status = cli_usage_error(cmd->path, "missing workspace NAME");
		return -1;
	}
	if (argc - optind > npos) {
		*status =
		    cli_usage_error(cmd->path, "unexpected argument '%s'", argv[optind + npos]);
		return -1;
	}
	for (int i = 0; i < npos; i++)
		pos[i] = argv[optind + i];
	return 0;
}

static int ws_create(struct cli_global *g, int argc, char **argv)
{
	const char *name = NULL, *rev = NULL;
	arb_project *p = NULL;
	arb_workspace *ws = NULL;
	bool json = false;
	int status, rc;

	if (parse(g, "create", argc, argv, &json, &rev, NULL, &name, 1, &status) < 0)
		return status;
	if (arb_workspace_name_check(name) < 0)
		return fail_lib();
	if (create_from && (rev || create_dirty))
		return cli_usage_error("workspace create", "--from goes without --rev and --dirty");
	if (create_from && (!*create_from || *create_from == '@'))
		return cli_usage_error("workspace create", "--from needs a workspace NAME[@CKPT]");
	if (arb_project_open(&p, g->workdir) < 0 ||
	    (disk_size && arb_project_set_disk(p, disk_size) < 0)) {
		arb_project_free(p);
		return fail_lib();
	}
	if (create_from) {
		char *from = strdup(create_from), *at = from ? strchr(from, '@') : NULL;

		if (at)
			*at++ = '\0';
		rc = from ? arb_workspace_fork(&ws, p, name, from, at && *at ? at : NULL,
					       (allow_other ? ARB_WS_ALLOW_OTHER : 0) | io_flags)
			  : util_err(-ENOMEM, "out of memory");
		free(from);
	} else {
		rc = arb_workspace_create(&ws, p, name, rev,
					  (create_dirty ? ARB_WS_DIRTY : 0) |
					      (allow_other ? ARB_WS_ALLOW_OTHER : 0) | io_flags);
	}
	if (rc == 0 && arb_project_note(p))
		fprintf(stderr, "note: %s\n", arb_project_note(p));
	if (rc == 0 && arb_workspace_notes(ws))
		fprintf(stderr, "arborinth: %s\n", arb_workspace_notes(ws));
	if (rc < 0)
		status = fail_lib();
	else if (json)
		status = cli_json_print(ws_json(ws));
	else
		status =
		    printf("created workspace %s at %.12s\n  workdir: %s\n", arb_workspace_name(ws),
			   arb_workspace_base_commit(ws), cli_q(arb_workspace_workdir(ws))) < 0;
	if (rc == 0)
		cli_ws_submodules_note(p, ws);
	arb_workspace_free(ws);
	arb_project_free(p);
	return status;
}

/* One project's rows of `list --all` (into arr with --json); a project that cannot be read
 * is named on stderr and skipped. */
static void list_project(const char *root, json_t *arr)
{
	arb_project *p = NULL;
	arb_workspace **list = NULL;
	size_t n = 0;

	if (arb_project_open(&p, root) < 0 || arb_workspace_list(&list, &n, p) < 0) {
		fprintf(stderr, "arborinth: %s: %s\n", cli_q(root), arb_error_last());
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = arb_workspace_name(list[i]);
		int64_t session = 0;
		char sess[32];

		if (arb_workspace_session(&session, p, name) < 0)
			session = 0;
		if (arr) {
			json_t *o = ws_json(list[i]);

			json_object_set_new(o, "project", util_json_bytes(root));
			json_object_set_new(o, "session",
					    session ? json_integer(session) : json_null());
			json_array_append_new(arr, o);
			continue;
		}
		if (session)
			snprintf(sess, sizeof(sess), "%lld running", (long long)session);
		else
			snprintf(sess, sizeof(sess), "-");
		printf("%-32s %-24s %-12.12s %-8s %s\n", cli_q(root), cli_q(name),
		       arb_workspace_base_commit(list[i]),
		       arb_workspace_mounted(list[i]) ? "yes" : "no", sess);
	}
out:
	arb_workspace_list_free(list, n);
	arb_project_free(p);
}

/* `workspace list --all`: every project in the user's list, each workspace a row. */
static int ws_list_all(bool json)
{
	json_t *arr = json ? json_array() : NULL;
	char **roots = NULL;
	size_t n = 0;

	if (arb_projects_list(&roots, &n) < 0)
		return fail_lib();
	if (!json)
		printf("%-32s %-24s %-12s %-8s %s\n", "PROJECT", "NAME", "BASE", "MOUNTED",
		       "SESSION");
	for (size_t i = 0; i < n; i++)
		list_project(roots[i], arr);
	arb_projects_free(roots, n);
	return json ? cli_json_print(arr) : CLI_OK;
}

static int ws_list(struct cli_global *g, int argc, char **argv)
{
	arb_project *p = NULL;
	arb_workspace **list = NULL;
	json_t *arr = NULL;
	bool json = false;
	size_t n = 0;
	int status;

	if (parse(g, "list", argc, argv, &json, NULL, NULL, NULL, 0, &status) < 0)
		return status;
	if (list_all)
		return ws_list_all(json);
	if (arb_project_open(&p, g->workdir) < 0 || arb_workspace_list(&list, &n, p) < 0) {
		status = fail_lib();
		goto out;
	}
	if (json) {
		arr = json_array();
		for (size_t i = 0; arr && i < n; i++)
			json_array_append_new(arr, ws_json(list[i]));
		status = cli_json_print(arr);
		goto out;
	}
	if (n > 0)
		printf("%-24s %-12s %-8s %s\n", "NAME", "BASE", "MOUNTED", "CREATED");
	for (size_t i = 0; i < n; i++) {
		char created[32];

		util_time_format(created, sizeof(created), arb_workspace_created_ns(list[i]),
				 false);
		printf("%-24s %-12.12s %-8s %s\n", cli_q(arb_workspace_name(list[i])),
		       arb_workspace_base_commit(list[i]),
		       arb_workspace_mounted(list[i]) ? "yes" : "no", created);
	}
	status = CLI_OK;
out:
	arb_workspace_list_free(list, n);
	arb_project_free(p);
	return status;
}

static int ws_info(struct cli_global *g, int argc, char **argv)
{
	arb_project *p = NULL;
	arb_workspace *ws = NULL;
	const char *name = NULL;
	bool json = false;
	int status;

	if (parse(g, "info", argc, argv, &json, NULL, NULL, &name, 1, &status) < 0)
		return status;
	if (arb_project_open(&p, g->workdir) < 0 || arb_workspace_get(&ws, p, name) < 0) {
		status = fail_lib();
		goto out;
	}
	if (json) {
		json_t *o = ws_json(ws), *subs = cli_ws_submodules_json(p, ws);

		if (o && subs)
			json_object_set_new(o, "submodules", subs);
		else
			json_decref(subs);
		status = cli_json_print(o);
	} else {
		ws_print(ws);
		cli_ws_submodules_print(p, ws);
		status = CLI_OK;
	}
out:
	arb_workspace_free(ws);
	arb_project_free(p);
	return status;
}

static int ws_delete(struct cli_global *g, int argc, char **argv)
{
	arb_project *p = NULL;
	const char *name = NULL;
	bool json = false, purge = false;
	int status;

	if (parse(g, "delete", argc, argv, &json, NULL, &purge, &name, 1, &status) < 0)
		return status;
	if (arb_project_open(&p, g->workdir) < 0 ||
	    arb_workspace_remove(p, name,
				 (delete_force ? ARB_WS_DELETE_FORCE : 0) |
				     (purge ? ARB_WS_DELETE_PURGE : 0)) < 0) {
		status = fail_lib();
		goto out;
	}
	printf("deleted workspace %s%s\n", name, purge ? " and its history" : "");
	status = CLI_OK;
out:
	arb_project_free(p);
	return status;
}

/* mount and unmount: the same shape, one verb apart. */
static int ws_mount_common(struct cli_global *g, int argc, char **argv, bool mount)
{
	arb_project *p = NULL;
	arb_workspace *ws = NULL;
	const char *name = NULL;
	bool json = false;
	int status;

	if (parse(g, mount ? "mount" : "unmount", argc, argv, &json, NULL, NULL, &name, 1,
		  &status) < 0)
		return status;
	if (arb_project_open(&p, g->workdir) < 0 ||
	    (disk_size && arb_project_set_disk(p, disk_size) < 0) ||
	    arb_workspace_get(&ws, p, name) < 0 ||
	    (mount ? arb_workspace_mount(p, name, (allow_other ? ARB_WS_ALLOW_OTHER : 0) | io_flags)
		   : arb_workspace_unmount(p, name)) < 0) {
		status = fail_lib();
		goto out;
	}
	if (json)
		status = cli_json_print(ws_json(ws));
	else
		status =
		    printf("%s %s\n", mount ? "mounted" : "unmounted",
			   cli_q(mount ? arb_workspace_workdir(ws) : arb_workspace_name(ws))) < 0;
out:
	arb_workspace_free(ws);
	arb_project_free(p);
	return status;
}

static int ws_mount(struct cli_global *g, int argc, char **argv)
{
	return ws_mount_common(g, argc, argv, true);
}

static int ws_unmount(struct cli_global *g, int argc, char **argv)
{
	return ws_mount_common(g, argc, argv, false);
}

int cmd_workspace(struct cli_global *g, int argc, char **argv)
{
	return cli_dispatch_sub(g, cli_cmd_find(cli_commands, "workspace"), cmd_workspace_subs,
				argc, argv);
}
