/*
 * lib/box.c: a box for a workspace (arborinth.h): the specification, and building and
 * running it. The order in which a box is assembled is the policy's: a launcher's defaults,
 * then grants and bind files, then mounts and variables (which win), then the proxy's
 * placeholders (which win over a host variable of the same name); then the limits and the
 * command. A run records a session in the audit log with a checkpoint at its start and end.
 */
#include "lib/lib_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audit/audit.h"
#include "binds/binds.h"
#include "core/core.h"
#include "jail/jail.h"
#include "proxy/proxy.h"

struct strs {
	char **v;
	size_t n;
};

struct arb_box {
	arb_project *p;
	char *ws_name;
	char *jail; /* "bubblewrap" or "none" */
	bool net, no_tool_managers;
	struct strs mounts, envs, backends, allow_hosts, grants, binds;
	char *key_file;
	int64_t timeout_ms; /* 0: none */
	struct jail_limits limits;
	int stdio[3];
	const struct lib_box_extra *extra;
	char *explain_backends; /* the last explain's backends (JSON) */
};

static int strs_push(struct strs *s, const char *str)
{
	char **v = realloc(s->v, (s->n + 2) * sizeof(*v));

	if (!v)
		return util_err(-ENOMEM, "out of memory");
	s->v = v;
	if (!(v[s->n] = strdup(str)))
		return util_err(-ENOMEM, "out of memory");
	v[++s->n] = NULL;
	return 0;
}

static void strs_clear(struct strs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strs){0};
}

/* ---- the specification ------------------------------------------------------------------- */

int arb_box_new(arb_box **out, arb_project *p, const char *ws_name)
{
	arb_box *b;

	lib_err_reset();
	*out = NULL;
	if (!p || !ws_name)
		return lib_input_err(util_err(-EINVAL, "arb_box_new: no project or workspace"));
	if (core_ws_name_check(ws_name) < 0)
		return lib_input_err(-EINVAL);
	b = calloc(1, sizeof(*b));
	if (!b || !(b->ws_name = strdup(ws_name)) || !(b->jail = strdup("bubblewrap"))) {
		arb_box_free(b);
		return util_err(-ENOMEM, "out of memory");
	}
	b->p = p;
	b->stdio[0] = b->stdio[1] = b->stdio[2] = -1;
	*out = b;
	return 0;
}

void arb_box_free(arb_box *b)
{
	if (!b)
		return;
	strs_clear(&b->mounts);
	strs_clear(&b->envs);
	strs_clear(&b->backends);
	strs_clear(&b->allow_hosts);
	strs_clear(&b->grants);
	strs_clear(&b->binds);
	free(b->key_file);
	free(b->explain_backends);
	free(b->jail);
	free(b->ws_name);
	free(b);
}

int arb_box_set_jail(arb_box *b, const char *jail)
{
	char *j;

	lib_err_reset();
	if (strcmp(jail, "bubblewrap") && strcmp(jail, "none"))
		return lib_input_err(
		    util_err(-EINVAL, "unknown jail '%s' (available: bubblewrap, none)", jail));
	if (!(j = strdup(jail)))
		return util_err(-ENOMEM, "out of memory");
	free(b->jail);
	b->jail = j;
	return 0;
}

int arb_box_add_mount(arb_box *b, const char *spec)
{
	lib_err_reset();
	return strs_push(&b->mounts, spec);
}

int arb_box_add_env(arb_box *b, const char *var)
{
	lib_err_reset();
	return strs_push(&b->envs, var);
}

int arb_box_set_network(arb_box *b, int share)
{
	lib_err_reset();
	b->net = share != 0;
	return 0;
}

int arb_box_add_backend(arb_box *b, const char *spec)
{
	lib_err_reset();
	return strs_push(&b->backends, spec);
}

int arb_box_set_api_key_file(arb_box *b, const char *file)
{
	char *f;

	lib_err_reset();
	if (!(f = strdup(file)))
		return util_err(-ENOMEM, "out of memory");
	free(b->key_file);
	b->key_file = f;
	return 0;
}

int arb_box_allow_host(arb_box *b, const char *host_port)
{
	char *host = NULL;
	uint16_t port;
	int rc;

	lib_err_reset();
	rc = proxy_allow_host_parse(host_port, &host, &port);
	free(host);
	if (rc < 0)
		return lib_input_err(util_err(rc, "--allow-host: %s", util_err_msg()));
	return strs_push(&b->allow_hosts, host_port);
}

int arb_box_add_grant(arb_box *b, const char *name)
{
	lib_err_reset();
	return strs_push(&b->grants, name);
}

int arb_box_add_binds_file(arb_box *b, const char *path)
{
	lib_err_reset();
	return strs_push(&b->binds, path);
}

int arb_box_set_no_tool_managers(arb_box *b, int off)
{
	lib_err_reset();
	b->no_tool_managers = off != 0;
	return 0;
}

int arb_box_set_limit(arb_box *b, const char *limit, const char *value)
{
	int rc;

	lib_err_reset();
	if (strcmp(limit, "timeout") && strcmp(limit, "memory") && strcmp(limit, "cpus") &&
	    strcmp(limit, "pids") && strcmp(limit, "inotify"))
		return lib_input_err(util_err(
		    -EINVAL, "unknown limit '%s' (timeout, memory, cpus, pids or inotify)", limit));
	rc = lib_limit_parse(limit, value, &b->limits, &b->timeout_ms);
	return rc == -EINVAL ? lib_input_err(rc) : rc;
}

int arb_box_set_stdio(arb_box *b, int in_fd, int out_fd, int err_fd)
{
	lib_err_reset();
	b->stdio[0] = in_fd;
	b->stdio[1] = out_fd;
	b->stdio[2] = err_fd;
	return 0;
}

void lib_box_set_extra(arb_box *b, const struct lib_box_extra *extra)
{
	b->extra = extra;
}

/* The rules between options, checked before anything is looked up. */
static int spec_check(const arb_box *b)
{
	bool none = !strcmp(b->jail, "none");

	if (none && (b->mounts.n || b->envs.n || b->net || b->backends.n || b->grants.n ||
		     b->binds.n || b->no_tool_managers || b->timeout_ms || b->limits.memory ||
		     b->limits.cpu_milli || b->limits.pids || b->limits.inotify))
		return lib_input_err(util_err(
		    -EINVAL, "--mount, --env, --net, --backend, --grant, --binds, "
			     "--no-tool-managers and the limits need --jail bubblewrap (--jail "
			     "none runs on the host as it is)"));
	if (b->key_file && b->backends.n != 1)
		return lib_input_err(
		    util_err(-EINVAL, "--api-key-file needs exactly one --backend"));
	if (b->net && b->allow_hosts.n)
		return lib_input_err(util_err(-EINVAL, "--allow-host is for boxes without --net "
						       "(with --net the box reaches every host "
						       "itself)"));
	if (none && b->allow_hosts.n)
		return lib_input_err(util_err(-EINVAL, "--allow-host needs --jail bubblewrap "
						       "(--jail none runs on the host as it is)"));
	return 0;
}

/* ---- building ---------------------------------------------------------------------------- */

/* Builds the jail box for ws from the specification; *out: jail_box_free(). */
static int make_box(const arb_box *spec, const struct core_ws *ws, struct proxy_proc *px,
		    struct lib_binds *lb, char *const cmd[], bool explain, struct jail_box **out)
{
	struct core_project *p = spec->p->core;
	struct jail_box_config cfg = {
	    .ws_name = ws->name,
	    .ws_root = ws->root,
	    .workdir = ws->workdir,
	    .tmp = ws->tmp,
	    .cache = ws->cache,
	    .home = ws->home,
	    .origin_root = core_project_root(p),
	    .origin_objects = core_project_objects_dir(p),
	    .state_dir = core_project_state_dir(p),
	    .net = spec->net,
	    .no_tool_managers = spec->no_tool_managers,
	};
	struct jail_box *b = NULL;
	const char *helpers = lib_helper_dir();
	char *init = helpers ? util_path_join(helpers, "arborinth_box_init") : NULL;
	char *objects = NULL, *store = NULL;
	struct stat st;
	int rc;

	cfg.box_init = init;
	/* Not the origin's whole store: the base's history only (built for older workspaces). */
	/* A planned workspace (explain) builds nothing: its view of the objects comes at launch. */
	if (strcmp(ws->state, "planned") != 0)
		rc = core_objects_view(p, ws->base_commit, &objects);
	else
		rc = 0;
	cfg.objects_view = objects;
	/* Made by core_ws_origin_refresh (older workspaces have none). */
	if (rc == 0 && (store = util_path_join(ws->root, "origin-objects")) &&
	    stat(store, &st) == 0 && S_ISDIR(st.st_mode))
		cfg.origin_store = store;
	if (rc == 0)
		rc = jail_box_new(&b, &cfg);
	free(init);
	free(objects);
	if (rc == 0)
		rc = lib_box_submodules(b, p, ws->root, ws->base_commit, ws->gitdir);
	free(store);

	/* The proxy started meanwhile (start_proxy): its answer, or why it failed. */
	if (rc == 0 && (rc = lib_proxy_wait(px)) < 0)
		rc = lib_binds_blame(lb, rc);
	if (rc < 0) {
		jail_box_free(b);
		return rc;
	}
	/* A launcher's defaults, then grants and bind files, then mounts and variables win. */
	if (spec->extra)
		rc = spec->extra->apply(spec->extra->ctx, b, px);
	if (rc == 0)
		rc = lib_binds_apply(b, (const char *const *)spec->grants.v, spec->grants.n, lb);
	for (size_t i = 0; i < spec->mounts.n && rc == 0; i++)
		if ((rc = jail_box_add_mount(b, spec->mounts.v[i])) < 0 && rc != -ENOMEM)
			rc = lib_input_err(rc);
	for (size_t i = 0; i < spec->envs.n && rc == 0; i++)
		if ((rc = jail_box_add_env(b, spec->envs.v[i])) < 0 && rc != -ENOMEM)
			rc = lib_input_err(rc);
	/* After the variables: the placeholders win over a host variable of the same name. */
	if (rc == 0 && px)
		rc = lib_proxy_box_setup(
		    px, b, ws, (spec->net ? LIB_PROXY_TCP : 0) | (explain ? LIB_PROXY_DRY : 0));
	if (rc == 0 && px && explain)
		rc = lib_proxy_explain(px, b, spec->net ? LIB_PROXY_TCP : 0, lb->origins, lb->notes,
				       lb->n_notes, &lb->explain_json);
	if (rc == 0)
		rc = lib_box_hide_credentials(b, px, spec->key_file);
	if (rc == 0)
		rc = jail_box_set_timeout(b, spec->timeout_ms);
	if (rc == 0)
		rc = jail_box_set_limits(b, &spec->limits);
	if (rc == 0)
		rc = jail_box_set_disk(b, lib_disk_budget(ws->root));
	if (rc == 0)
		rc = jail_box_set_stdio(b, spec->stdio);
	if (rc == 0)
		rc = jail_box_set_command(b, cmd);
	if (rc == 0)
		rc = jail_box_finish(b);
	if (rc < 0) {
		jail_box_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

/*
 * The bind files, then the proxy with the backends given and the files' (it starts while
 * make_box works: its answer is read there).
 */
static int start_proxy(const arb_box *spec, const struct core_ws *ws, bool explain,
		       struct lib_binds *lb, struct proxy_proc **px)
{
	const struct lib_box_extra *x = spec->extra;
	char **writable = calloc(spec->mounts.n + 2, sizeof(*writable));
	size_t nw = 0;
	int rc = writable ? 0 : util_err(-ENOMEM, "out of memory");
	struct lib_proxy_opts po = {.backends = (const char *const *)lb->backends,
				    .n_backends = lb->n_backends,
				    .key_file = spec->key_file,
				    .login = x ? x->login : NULL,
				    .allow_hosts = (const char *const *)spec->allow_hosts.v,
				    .n_allow_hosts = spec->allow_hosts.n,
				    .listen = !explain,
				    .tcp = spec->net,
				    .tcp_fd = x ? x->tcp_fd : -1,
				    .tcp_tls_fd = x ? x->tcp_tls_fd : -1,
				    .tcp_backend = x ? x->tcp_backend : NULL,
				    .spawn_only = true};

	/* Where the box writes (rw:SOURCE:DEST or rw:PATH): a bind file there may not give
	 * backends. */
	if (rc == 0 && !(writable[nw++] = strdup(core_project_state_dir(spec->p->core))))
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < spec->mounts.n; i++) {
		const char *m = spec->mounts.v[i];

		if (util_str_has_prefix(m, "rw:") &&
		    !(writable[nw++] = strndup(m + 3, strcspn(m + 3, ":"))))
			rc = util_err(-ENOMEM, "out of memory");
	}
	if (rc == 0)
		rc = lib_binds_load(lb, (const char *const *)spec->binds.v, spec->binds.n,
				    (const char *const *)spec->backends.v, spec->backends.n,
				    (const char *const *)writable, nw);
	for (size_t i = 0; writable && i < nw; i++)
		free(writable[i]);
	free(writable);
	if (rc == 0) {
		po.backends = (const char *const *)lb->backends;
		po.n_backends = lb->n_backends;
	}
	return rc ?: lib_proxy_start(px, spec->p->core, ws, &po);
}

/* The workspace, checked and (unless explain) with its view mounted. */
static int open_ws(const arb_box *b, bool explain, struct core_ws **ws)
{
	int rc = spec_check(b);

	if (rc == 0)
		rc = core_ws_get(b->p->core, b->ws_name, ws);
	if (rc == -ENOENT && explain && b->extra && b->extra->plan)
		rc = core_ws_planned(b->p->core, b->ws_name, b->extra->plan_rev, ws);
	/* The view may be down (after a reboot, say): bring it up; explain changes nothing. */
	if (rc == 0 && !explain && (rc = core_ws_mount(b->p->core, *ws, 0)) < 0) {
		core_ws_free(*ws);
		*ws = NULL;
	}
	return rc;
}

int arb_box_explain(char **out, arb_box *b, char *const argv[])
{
	struct core_ws *ws = NULL;
	struct proxy_proc *px = NULL;
	struct jail_box *jb = NULL;
	struct lib_binds lb = {0};
	int rc;

	lib_err_reset();
	*out = NULL;
	if (!argv || !argv[0])
		return lib_input_err(util_err(-EINVAL, "no command to explain"));
	rc = open_ws(b, true, &ws);
	if (rc == 0 && !strcmp(b->jail, "none")) {
		*out = util_asprintf("== inputs ==\n  workspace  %s (%s)\n  jail       none: runs "
				     "on the host with no isolation; the host's files, network and "
				     "environment are all visible\n  directory  %s\n",
				     ws->name, ws->root, ws->workdir);
		rc = *out ? 0 : util_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (rc == 0)
		rc = start_proxy(b, ws, true, &lb, &px);
	if (rc == 0)
		rc = make_box(b, ws, px, &lb, argv, true, &jb);
	if (rc == 0)
		rc = jail_box_explain(jb, out);
	if (rc == 0) {
		free(b->explain_backends);
		b->explain_backends = lb.explain_json ? lb.explain_json : strdup("[]");
		lb.explain_json = NULL;
		rc = b->explain_backends ? 0 : util_err(-ENOMEM, "out of memory");
	}
out:
	jail_box_free(jb);
	lib_proxy_stop(px);
	lib_binds_release(&lb);
	core_ws_free(ws);
	return rc;
}

const char *arb_box_explain_backends(const arb_box *b)
{
	return b->explain_backends;
}

/* ---- running ----------------------------------------------------------------------------- */

/*
 * The origin's branches and tags as they are now, written through the view once the session
 * is in the audit log (the daemon ties a writer to a session by its process; a write of this
 * process before the session began would tie it to none, and the box's writes with it).
 */
static void origin_refresh(const arb_box *b, const struct core_ws *ws)
{
	if (core_ws_origin_refresh(b->p->core, ws) < 0) {
		/* The box still works, on the refs it had (what it broke in its gitdir, say). */
		fprintf(stderr,
			"arborinth: warning: the origin's branches were not refreshed: %s\n",
			util_err_msg());
		util_err_clear();
	}
}

static int run_none(const arb_box *b, const struct core_ws *ws, char *const argv[],
		    struct arb_run_result *res)
{
	struct audit_session *session = NULL;
	int rc = lib_session_begin(&session, b->p->core, ws, "none", argv, 0);

	if (rc < 0)
		return rc;
	res->session = audit_session_id(session);
	origin_refresh(b, ws);
	lib_session_checkpoint(b->p->core, ws, session, "start");
	rc = jail_none_run(ws->workdir, argv, b->stdio, &res->exit_status);
	if (rc < 0)
		res->exit_status = 1;
	lib_session_checkpoint(b->p->core, ws, session, "end");
	lib_session_end(ws, session, res->exit_status);
	return rc;
}

/* What must be done before the box's command starts (jail_box_run's gate). */
struct session_start {
	const arb_box *b;
	const struct core_ws *ws;
	char *const *argv;
	struct proxy_proc *px;
	struct audit_session *session;	    /* out; NULL again once ended (and freed) */
	int64_t id;			    /* out: the session's id, 0 when none began */
	bool ended;			    /* out: the end checkpoint is taken */
	bool closed;			    /* out: ... and the session recorded as ended */
	const struct jail_run_stats *stats; /* what the limits did, final when done() runs */
};

/* The session in the audit log and its start checkpoint, while bwrap builds the box. */
static int session_start(void *ctx)
{
	struct session_start *s = ctx;
	/* The box's pid 1 (bwrap says it once the box's namespaces exist) names its processes. */
	pid_t init = jail_box_init_pid();
	int rc;

	if (init <= 0)
		return util_err(-ECHILD, "the box could not be started (bwrap named no pid 1)");
	rc = lib_session_begin(&s->session, s->b->p->core, s->ws, "bubblewrap", s->argv, init);
	if (rc < 0)
		return rc;
	s->id = audit_session_id(s->session);
	/* The proxy's records belong to this session from the box's first request. */
	lib_proxy_set_session(s->px, s->session);
	origin_refresh(s->b, s->ws);
	lib_session_checkpoint(s->b->p->core, s->ws, s->session, "start");
	/*
	 * git in the box sees the gitdir as the box wrote it, git on the host does not
	 * (fs/hostgit.c). Last, while bwrap builds the box. Not fatal: a daemon older than the
	 * request, or one that refuses it, shows the box what it shows the host, which costs the
	 * box only its own git settings.
	 */
	if (core_ws_box_list(s->ws, init, true) < 0) {
	}
	return 0;
}

/*
 * The command is over and nothing of the box runs: the end checkpoint and, unless limits or
 * a timeout have something to add once the box is down, the session's end, while bwrap and
 * the kernel take the box down.
 */
static void session_done(void *ctx, int status)
{
	struct session_start *s = ctx;
	const struct jail_limits *l = &s->b->limits;

	/* No request can come any more: the proxy writes out its rows and exits meanwhile. */
	lib_proxy_end(s->px);
	if (core_ws_box_list(s->ws, jail_box_init_pid(), false) < 0) {
	} /* else the daemon forgets it once the box's pid 1 is gone */
	if (!s->session)
		return;
	lib_session_checkpoint(s->b->p->core, s->ws, s->session, "end");
	s->ended = true;
	if (!s->b->timeout_ms && !l->memory && !l->pids) {
		/* The default budget's pids.max (root's box) may have refused forks. */
		lib_limit_audit(s->session, l, 0, false, s->stats);
		lib_session_end(s->ws, s->session, status); /* frees it */
		s->session = NULL;
		s->closed = true;
	}
}

static int run_box(const arb_box *b, const struct core_ws *ws, char *const argv[],
		   struct arb_run_result *res)
{
	struct session_start start = {.b = b, .ws = ws, .argv = argv};
	struct audit_session *session = NULL;
	struct jail_box *jb = NULL;
	struct proxy_proc *px = NULL;
	struct jail_run_stats stats = {0};
	struct lib_binds lb = {0};
	char *why = NULL;
	bool disk;
	int rc;

	/* The proxy first: the box's environment holds its placeholders. */
	rc = start_proxy(b, ws, false, &lb, &px);
	if (rc == 0)
		rc = make_box(b, ws, px, &lb, argv, false, &jb);
	/* The proxy records the box's requests (it opened its log while make_box worked). */
	if (rc == 0)
		rc = lib_proxy_confirm(px);
	if (rc < 0)
		goto out;
	start.px = px;
	start.stats = &stats;
	rc = jail_box_run(jb, session_start, session_done, &start, &res->exit_status, &stats);
	session = start.session; /* NULL when ended already (start.closed) */
	disk = rc == -ENOSPC && res->exit_status == JAIL_EXIT_DISK;
	if (!start.id) {
		res->exit_status = JAIL_EXIT_SETUP;
		goto out; /* no session: nothing ran, nothing to record */
	}
	res->session = start.id;
	res->oom_kills = stats.oom_kills;
	res->memory_limit = b->limits.memory;
	res->pids_limit = b->limits.pids ? b->limits.pids : stats.pids_limit;
	res->forks_refused = stats.forks_refused;
	res->timed_out = rc == -ETIME;
	/* What the run said outlives the bookkeeping after it. */
	if (rc < 0 && !(why = strdup(util_err_msg())))
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == -ETIME) {
		res->exit_status = JAIL_EXIT_TIMEOUT;
	} else if (rc < 0 && !disk) {
		res->exit_status = JAIL_EXIT_SETUP;
	}
	/* What box-init's word of the end did not (a timeout's kill, the limits' rows). */
	if (!start.closed)
		lib_limit_audit(session, &b->limits, b->timeout_ms, res->timed_out, &stats);
	if (disk && !start.closed)
		lib_limit_audit_disk(session, why);
	if (!start.ended)
		lib_session_checkpoint(b->p->core, ws, session, "end");
	if (!start.closed)
		lib_session_end(ws, session, res->exit_status);
	if (why)
		util_err(rc, "%s", why);
	if (rc == -ETIME)
		rc = 0; /* the command ran: its status is the timeout's */
out:
	free(why);
	jail_box_free(jb);
	lib_proxy_stop(px);
	lib_binds_release(&lb);
	return rc;
}

int arb_box_run(struct arb_run_result *res, arb_box *b, char *const argv[])
{
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	*res = (struct arb_run_result){0};
	if (!argv || !argv[0])
		return lib_input_err(util_err(-EINVAL, "no command to run"));
	rc = open_ws(b, false, &ws);
	if (rc < 0)
		return rc;
	fflush(stdout);
	rc = !strcmp(b->jail, "none") ? run_none(b, ws, argv, res) : run_box(b, ws, argv, res);
	core_ws_free(ws);
	return rc;
}

static struct arb_grant *grants;
static size_t n_grants;
static pthread_once_t grants_once = PTHREAD_ONCE_INIT;

static void grants_copy(void)
{
	const struct binds_grant_info *g = binds_grants(&n_grants);

	grants = calloc(n_grants + 1, sizeof(*grants));
	for (size_t i = 0; grants && i < n_grants; i++)
		grants[i] = (struct arb_grant){g[i].name, g[i].summary, g[i].items};
	if (!grants)
		n_grants = 0;
}

const struct arb_grant *arb_grants(size_t *n)
{
	pthread_once(&grants_once, grants_copy);
	*n = n_grants;
	return grants;
}
