/* core/workspace.c: workspace rows and folders: create, get, list, delete. */
#include "core/core_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include "audit/audit.h"
#include "fs/fs.h"

static pid_t read_pid(const char *run);

void core_ws_free(struct core_ws *ws)
{
	if (!ws)
		return;
	free(ws->id);
	free(ws->name);
	free(ws->base_commit);
	free(ws->branch);
	free(ws->remote);
	free(ws->state);
	free(ws->root);
	free(ws->workdir);
	free(ws->tmp);
	free(ws->cache);
	free(ws->home);
	free(ws->layer);
	free(ws->gitdir);
	free(ws->run);
	free(ws->notes);
	free(ws);
}

static char *ws_root_path(const struct core_project *p, const char *name)
{
	return util_asprintf("%s/workspaces/%s", p->state_dir, name);
}

pid_t core_ws_daemon_pid(const struct core_ws *ws)
{
	return read_pid(ws->run);
}

static pid_t read_pid(const char *run)
{
	char *path = util_path_join(run, "daemon.pid");
	char *buf = NULL;
	pid_t pid = 0;

	if (path && util_read_file(path, &buf, NULL) == 0) {
		pid = (pid_t)strtol(buf, NULL, 10);
		if (!util_pid_alive(pid))
			pid = 0;
	}
	free(buf);
	free(path);
	return pid;
}

static int ws_fill_paths(const struct core_project *p, struct core_ws *ws)
{
	ws->root = ws_root_path(p, ws->name);
	if (!ws->root)
		return -ENOMEM;
	ws->workdir = util_path_join(ws->root, "workdir");
	ws->tmp = util_path_join(ws->root, "tmp");
	ws->cache = util_path_join(ws->root, "cache");
	ws->home = util_path_join(ws->root, "home");
	ws->layer = util_path_join(ws->root, "layer");
	ws->gitdir = util_path_join(ws->root, "git");
	ws->run = util_path_join(ws->root, "run");
	ws->branch = util_asprintf("arborinth/%s", ws->name);
	ws->remote = util_asprintf("arborinth/%s", ws->name);
	if (!ws->workdir || !ws->tmp || !ws->cache || !ws->home || !ws->layer || !ws->gitdir ||
	    !ws->run || !ws->branch || !ws->remote)
		return -ENOMEM;
	ws->mounted = fs_is_mounted(ws->workdir);
	ws->daemon_pid = read_pid(ws->run);
	return 0;
}

static int ws_from_row(const struct core_project *p, sqlite3_stmt *st, struct core_ws **out)
{
	struct core_ws *ws = calloc(1, sizeof(*ws));
	int rc;

	if (!ws)
		return -ENOMEM;
	ws->id = strdup((const char *)sqlite3_column_text(st, 0));
	ws->name = strdup((const char *)sqlite3_column_text(st, 1));
	ws->base_commit = strdup((const char *)sqlite3_column_text(st, 2));
	ws->created_ns = sqlite3_column_int64(st, 3);
	ws->state = strdup((const char *)sqlite3_column_text(st, 4));
	rc = (ws->id && ws->name && ws->base_commit && ws->state) ? ws_fill_paths(p, ws) : -ENOMEM;
	if (rc < 0) {
		core_ws_free(ws);
		return rc;
	}
	*out = ws;
	return 0;
}

int core_ws_planned(struct core_project *p, const char *name, const char *rev, struct core_ws **out)
{
	struct core_ws *ws = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	git_oid base;
	int rc = core_ws_name_check_new(name);

	*out = NULL;
	if (rc == 0)
		rc = core_rev_resolve(p, rev ? rev : "HEAD", &base);
	if (rc == 0 && !(ws = calloc(1, sizeof(*ws))))
		rc = -ENOMEM;
	if (rc == 0) {
		git_oid_tostr(hex, sizeof(hex), &base);
		ws->id = strdup("");
		ws->name = strdup(name);
		ws->base_commit = strdup(hex);
		ws->state = strdup("planned");
		rc = ws->id && ws->name && ws->base_commit && ws->state ? ws_fill_paths(p, ws)
									: -ENOMEM;
	}
	if (rc < 0) {
		core_ws_free(ws);
		return rc == -ENOMEM ? util_err(rc, "out of memory") : rc;
	}
	*out = ws;
	return 0;
}

#define WS_COLUMNS "id, name, base_commit, created_ns, state"

int core_ws_get(struct core_project *p, const char *name, struct core_ws **out)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	int rc;

	*out = NULL;
	rc = core_project_db(p, false, &db);
	if (rc == -ENOENT)
		return util_err(-ENOENT, "no workspace named '%s'", name);
	if (rc < 0)
		return rc;
	if (sqlite3_prepare_v2(db, "SELECT " WS_COLUMNS " FROM workspaces WHERE name = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = ws_from_row(p, st, out);
	else if (rc == SQLITE_DONE)
		rc = util_err(-ENOENT, "no workspace named '%s'", name);
	else
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

int core_ws_list(struct core_project *p, struct core_ws ***out, size_t *n)
{
	struct core_ws **list = NULL;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	size_t count = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = core_project_db(p, false, &db);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (sqlite3_prepare_v2(db, "SELECT " WS_COLUMNS " FROM workspaces ORDER BY name", -1, &st,
			       NULL) != SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct core_ws **nl = realloc(list, (count + 1) * sizeof(*list));

		if (!nl) {
			rc = -ENOMEM;
			goto out;
		}
		list = nl;
		rc = ws_from_row(p, st, &list[count]);
		if (rc < 0)
			goto out;
		count++;
	}
	if (rc != SQLITE_DONE) {
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
	*out = list;
	*n = count;
	list = NULL;
out:
	sqlite3_finalize(st);
	for (size_t i = 0; list && i < count; i++)
		core_ws_free(list[i]);
	free(list);
	return rc;
}

int core_ws_count(struct core_project *p, size_t *n)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	int rc;

	*n = 0;
	rc = core_project_db(p, false, &db);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM workspaces", -1, &st, NULL) != SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -EIO;
	if (rc == 0)
		*n = (size_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}
