/* lib/workspace.c: workspaces (arborinth.h): create, get, list, mount, unmount, delete. */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "core/core.h"

struct arb_workspace {
	struct core_ws *core;
	char *io;	 /* the mounted view's I/O path (run/io), or NULL */
	char *transport; /* how its requests reach the daemon (run/transport), or NULL */
};

/* core's flags for the API's. */
static unsigned core_flags(unsigned flags)
{
	return (flags & ARB_WS_DIRTY ? CORE_WS_DIRTY : 0) |
	       (flags & ARB_WS_ALLOW_OTHER ? CORE_WS_ALLOW_OTHER : 0) |
	       (flags & ARB_WS_IO_PASSTHROUGH ? CORE_WS_IO_PASSTHROUGH : 0) |
	       (flags & ARB_WS_IO_DAEMON ? CORE_WS_IO_DAEMON : 0);
}

/* A line the daemon wrote to run/NAME ("io": "passthrough", "daemon (why)"; "transport":
 * "io_uring (...)", "/dev/fuse (why)"), without its newline. */
static char *read_run_line(const struct core_ws *ws, const char *name)
{
	char *path = ws->mounted ? util_path_join(ws->run, name) : NULL, *buf = NULL;
	size_t len = 0;

	if (path && util_read_file(path, &buf, &len) == 0 && len > 0 && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	util_err_clear();
	free(path);
	return buf;
}

static int wrap(arb_workspace **out, struct core_ws *ws)
{
	arb_workspace *w = calloc(1, sizeof(*w));

	if (!w) {
		core_ws_free(ws);
		return util_err(-ENOMEM, "out of memory");
	}
	w->core = ws;
	w->io = read_run_line(ws, "io");
	w->transport = read_run_line(ws, "transport");
	*out = w;
	return 0;
}

/* A name that is not one is the caller's fault; so is one that is taken or unknown. */
static int name_err(int rc)
{
	return rc == -EINVAL || rc == -EEXIST || rc == -ENOENT ? lib_input_err(rc) : rc;
}

int arb_workspace_name_check(const char *name)
{
	lib_err_reset();
	return name ? lib_input_err(core_ws_name_check(name))
		    : lib_input_err(util_err(-EINVAL, "no workspace name"));
}

int arb_workspace_create(arb_workspace **out, arb_project *p, const char *name, const char *rev,
			 unsigned flags)
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	if (out)
		*out = NULL;
	if (flags & ~(unsigned)(ARB_WS_DIRTY | ARB_WS_ALLOW_OTHER | ARB_WS_IO_PASSTHROUGH |
				ARB_WS_IO_DAEMON))
		return lib_input_err(util_err(-EINVAL, "unknown workspace flags 0x%x", flags));
	if ((rc = core_ws_name_check(name)) < 0)
		return lib_input_err(rc);
	rc = core_ws_create_opts(p->core, name, rev, core_flags(flags), &ws);
	if (rc < 0)
		return name_err(rc);
	if (!out) {
		core_ws_free(ws);
		return 0;
	}
	return wrap(out, ws);
}

int arb_workspace_fork(arb_workspace **out, arb_project *p, const char *name, const char *from,
		       const char *ckpt, unsigned flags)
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	if (out)
		*out = NULL;
	if (flags & ~(unsigned)(ARB_WS_ALLOW_OTHER | ARB_WS_IO_PASSTHROUGH | ARB_WS_IO_DAEMON))
		return lib_input_err(util_err(-EINVAL, "unknown fork flags 0x%x", flags));
	if ((rc = core_ws_name_check(name)) < 0)
		return lib_input_err(rc);
	rc = core_ws_fork(p->core, name, from, ckpt, core_flags(flags), &ws);
	if (rc < 0)
		return name_err(rc);
	if (!out) {
		core_ws_free(ws);
		return 0;
	}
	return wrap(out, ws);
}

int arb_workspace_get(arb_workspace **out, arb_project *p, const char *name)
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	*out = NULL;
	if ((rc = core_ws_name_check(name)) < 0)
		return lib_input_err(rc);
	rc = core_ws_get(p->core, name, &ws);
	return rc < 0 ? name_err(rc) : wrap(out, ws);
}

int arb_workspace_list(arb_workspace ***out, size_t *n, arb_project *p)
{
	struct core_ws **v = NULL;
	arb_workspace **w;
	size_t count = 0;
	int rc;

	lib_err_reset();
	*out = NULL;
	*n = 0;
	rc = core_ws_list(p->core, &v, &count);
	if (rc < 0)
		return rc;
	w = calloc(count + 1, sizeof(*w));
	for (size_t i = 0; i < count; i++) {
		if (w && rc == 0)
			rc = wrap(&w[i], v[i]);
		else
			core_ws_free(v[i]);
	}
	free(v);
	if (!w || rc < 0) {
		arb_workspace_list_free(w, count);
		return util_err(-ENOMEM, "out of memory");
	}
	*out = w;
	*n = count;
	return 0;
}

void arb_workspace_list_free(arb_workspace **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		arb_workspace_free(v[i]);
	free(v);
}

void arb_workspace_free(arb_workspace *ws)
{
	if (!ws)
		return;
	core_ws_free(ws->core);
	free(ws->io);
	free(ws->transport);
	free(ws);
}

const char *arb_workspace_name(const arb_workspace *ws)
{
	return ws->core->name;
}

const char *arb_workspace_id(const arb_workspace *ws)
{
	return ws->core->id;
}

const char *arb_workspace_base_commit(const arb_workspace *ws)
{
	return ws->core->base_commit;
}

const char *arb_workspace_branch(const arb_workspace *ws)
{
	return ws->core->branch;
}

const char *arb_workspace_root(const arb_workspace *ws)
{
	return ws->core->root;
}

const char *arb_workspace_workdir(const arb_workspace *ws)
{
	return ws->core->workdir;
}

const char *arb_workspace_home(const arb_workspace *ws)
{
	return ws->core->home;
}

const char *arb_workspace_io(const arb_workspace *ws)
{
	return ws->io;
}

const char *arb_workspace_transport(const arb_workspace *ws)
{
	return ws->transport;
}

const char *arb_workspace_tmp(const arb_workspace *ws)
{
	return ws->core->tmp;
}

const char *arb_workspace_cache(const arb_workspace *ws)
{
	return ws->core->cache;
}

const char *arb_workspace_remote(const arb_workspace *ws)
{
	return ws->core->remote;
}

const char *arb_workspace_state(const arb_workspace *ws)
{
	return ws->core->state;
}

int64_t arb_workspace_created_ns(const arb_workspace *ws)
{
	return ws->core->created_ns;
}

const char *arb_workspace_notes(const arb_workspace *ws)
{
	return ws->core->notes;
}

int arb_workspace_mounted(const arb_workspace *ws)
{
	return ws->core->mounted;
}

int64_t arb_workspace_daemon_pid(const arb_workspace *ws)
{
	return ws->core->daemon_pid;
}

int arb_workspace_mount(arb_project *p, const char *name, unsigned flags)
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	if (flags & ~(unsigned)(ARB_WS_ALLOW_OTHER | ARB_WS_IO_PASSTHROUGH | ARB_WS_IO_DAEMON))
		return lib_input_err(util_err(-EINVAL, "unknown mount flags 0x%x", flags));
	rc = core_ws_get(p->core, name, &ws);
	if (rc == 0)
		rc = core_ws_mount(p->core, ws, core_flags(flags));
	else
		rc = name_err(rc);
	core_ws_free(ws);
	return rc;
}

int arb_workspace_unmount(arb_project *p, const char *name)
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	rc = core_ws_get(p->core, name, &ws);
	if (rc == 0)
		rc = core_ws_unmount(p->core, ws);
	else
		rc = name_err(rc);
	core_ws_free(ws);
	return rc;
}

int arb_workspace_delete(arb_project *p, const char *name)
{
	int rc;

	lib_err_reset();
	if ((rc = core_ws_name_check(name)) < 0)
		return lib_input_err(rc);
	rc = core_ws_delete(p->core, name);
	return rc == -ENOENT ? lib_input_err(rc) : rc;
}

int arb_workspace_purge(arb_project *p, const char *name)
{
	int rc;

	lib_err_reset();
	if ((rc = core_ws_name_check(name)) < 0)
		return lib_input_err(rc);
	rc = core_ws_purge(p->core, name, CORE_WS_DELETE_FORCE);
	return rc == -ENOENT ? lib_input_err(rc) : rc;
}

int arb_workspace_remove(arb_project *p, const char *name, unsigned flags)
{
	unsigned core = flags & ARB_WS_DELETE_FORCE ? CORE_WS_DELETE_FORCE : 0;
	int rc;

	lib_err_reset();
	if (flags & ~(unsigned)(ARB_WS_DELETE_FORCE | ARB_WS_DELETE_PURGE))
		return lib_input_err(util_err(-EINVAL, "unknown delete flags 0x%x", flags));
	if ((rc = core_ws_name_check(name)) < 0)
		return lib_input_err(rc);
	rc = flags & ARB_WS_DELETE_PURGE ? core_ws_purge(p->core, name, core)
					 : core_ws_delete_opts(p->core, name, core);
	return rc == -ENOENT ? lib_input_err(rc) : rc;
}

int arb_workspace_session(int64_t *session, arb_project *p, const char *name)
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	*session = 0;
	if ((rc = core_ws_name_check(name)) < 0)
		return lib_input_err(rc);
	rc = core_ws_get(p->core, name, &ws);
	if (rc < 0)
		return name_err(rc);
	rc = core_ws_session_running(p->core, ws, session);
	core_ws_free(ws);
	return rc;
}
