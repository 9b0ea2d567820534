/*
 * jail/explain.c: --explain. Renders a finished box as text: inputs, mounts by destination
 * with where each came from, the complete environment, the seccomp rules and the exact
 * bwrap argv. Reads only the box: what it prints is what jail_box_run() launches.
 */
#include "jail/box_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Shell-quotes s when it holds anything but plainly safe characters. */
static void put_word(FILE *f, const char *s)
{
	char *q = util_shell_quote(s);

	fputs(q ? q : "''", f);
	free(q);
}

static void put_words(FILE *f, char *const *v)
{
	for (size_t i = 0; v && v[i]; i++) {
		if (i)
			fputc(' ', f);
		put_word(f, v[i]);
	}
}

static void explain_limits(FILE *f, const struct jail_box *b)
{
	const struct jail_limits *l = &b->limits;
	int64_t pids = b->pids_default ? 0 : l->pids; /* the default: on the budget line */

	if (!l->memory && !l->cpu_milli && !pids)
		return;
	fprintf(f, "  limits    ");
	if (l->memory)
		fprintf(f, " memory %lld MiB (and swap)", (long long)(l->memory >> 20));
	if (l->cpu_milli)
		fprintf(f, " cpus %lld.%03lld", (long long)(l->cpu_milli / 1000),
			(long long)(l->cpu_milli % 1000));
	if (pids)
		fprintf(f, " pids %lld", (long long)pids);
	fprintf(f, ": cgroups arborinth-PID of the box's own below");
	for (size_t i = 0; i < ARB_ARRAY_LEN(b->cg_base); i++)
		if (b->cg_base[i])
			fprintf(f, " %s", b->cg_base[i]);
	fputc('\n', f);
}

static void explain_inputs(FILE *f, const struct jail_box *b)
{
	fprintf(f, "== inputs ==\n");
	fprintf(f, "  workspace  %s (%s)\n", b->ws_name, b->ws_root);
	fprintf(f, "  origin     %s\n", b->origin_root);
	fprintf(f, "  jail       bubblewrap (%s)\n", b->bwrap);
	if (b->net)
		fprintf(f, "  network    host (--net): the host's network namespace is shared; the "
			   "internet, host loopback services and host abstract unix sockets (X11, "
			   "D-Bus, ...) are reachable\n");
	else
		fprintf(f, "  network    none: own network namespace with only loopback\n");
	fprintf(f, "  command    ");
	put_words(f, b->command.v);
	fprintf(f, "\n  directory  %s\n", b->workdir);
	if (b->timeout_ms)
		fprintf(f,
			"  timeout    %lld ms: then SIGTERM to the command, SIGKILL to the box 2 s "
			"later (exit %d)\n",
			(long long)b->timeout_ms, JAIL_EXIT_TIMEOUT);
	explain_limits(f, b);
	jail_budget_explain(f, b);
	for (size_t i = 0; i < b->inputs.n; i++)
		fprintf(f, "  %s\n", b->inputs.v[i]);
	for (size_t i = 0; i < b->notes.n; i++)
		fprintf(f, "  note       %s\n", b->notes.v[i]);
}

static const char *origin_name(const struct jail_mount *m)
{
	switch (m->origin) {
	case JAIL_FROM_GUARD:
		return "guard";
	case JAIL_FROM_USER:
		return "user";
	default:
		return m->flags & JAIL_MOUNT_REPLACEABLE ? "default, replaceable" : "default";
	}
}

static void explain_mounts(FILE *f, const struct jail_box *b)
{
	const struct jail_mounts *m = &b->mounts;
	size_t overlays = 0;

	fprintf(f, "\n== mounts by destination (ancestors first, so the deeper mount wins; "
		   "* guard: no user mount at or below it) ==\n");
	for (size_t i = 0; i < m->n; i++) {
		const struct jail_mount *x = &m->v[i];

		fprintf(f, "  %*s%s%s  %s", (int)(2 * jail_mounts_depth(m, i)), "", x->dest,
			x->origin == JAIL_FROM_GUARD ? " *" : "", jail_mount_type_name(x->type));
		if (x->type == JAIL_MOUNT_OVERLAY)
			fprintf(f, " %s, writes in %s", x->lower, x->upper);
		else if (x->src)
			fprintf(f, " %s", x->src);
		if (x->perms)
			fprintf(f, " mode %04o", x->perms);
		if (x->flags & JAIL_MOUNT_SEAL)
			fprintf(f, ", then read-only");
		fprintf(f, "  [%s] %s\n", origin_name(x), x->why);
		overlays += x->type == JAIL_MOUNT_OVERLAY;
	}
	if (overlays)
		fprintf(f,
			"  (overlays: kernel overlayfs mounted on the workspace's merged folder "
			"in a private mount namespace%s just before bwrap, which binds it; the "
			"host never sees the mount and the source never changes)\n",
			geteuid() ? " and user namespace" : "");
}

static void explain_env(FILE *f, const struct jail_box *b)
{
	fprintf(f, "\n== environment (complete: cleared, then only this) ==\n");
	for (size_t i = 0; i < b->env.n; i++)
		fprintf(f, "  %s\n", b->env.v[i]);
	if (b->withheld.n) {
		fprintf(f, "  withheld from the host (%zu):", b->withheld.n);
		for (size_t i = 0; i < b->withheld.n; i++)
			fprintf(f, " %s", b->withheld.v[i]);
		fputc('\n', f);
	}
}

static const char *errno_name(int e)
{
	return e == EPERM ? "EPERM" : e == ENOSYS ? "ENOSYS" : "errno";
}

static void explain_seccomp(FILE *f)
{
	const char *const *arches = jail_seccomp_arches();
	size_t n;
	const struct jail_seccomp_rule *r = jail_seccomp_rules(&n);

	fprintf(f, "\n== seccomp (default allow; ABIs:");
	for (size_t i = 0; arches[i]; i++)
		fprintf(f, " %s", arches[i]);
	fprintf(f, "; a call through any other ABI kills the process) ==\n");
	for (size_t i = 0; i < n; i++) {
		char cond[128] = "";

		if (r[i].arg >= 0)
			snprintf(cond, sizeof(cond), " if (arg%d & %#llx) == %s (%#llx)", r[i].arg,
				 (unsigned long long)r[i].mask, r[i].value_name,
				 (unsigned long long)r[i].value);
		fprintf(f, "  %-18s -> %-6s%s  (%s)\n", r[i].syscall, errno_name(r[i].err), cond,
			r[i].why);
	}
}

/* How many values follow a bwrap option in our argv. */
static size_t arity(const char *opt)
{
	static const char *const one[] = {"--cap-drop", "--hostname", "--tmpfs",      "--dev",
					  "--proc",	"--dir",      "--remount-ro", "--chdir",
					  "--seccomp",	"--info-fd",  "--perms"};

	if (!strcmp(opt, "--bind") || !strcmp(opt, "--ro-bind") || !strcmp(opt, "--symlink"))
		return 2;
	for (size_t i = 0; i < ARB_ARRAY_LEN(one); i++)
		if (!strcmp(opt, one[i]))
			return 1;
	return 0;
}

/* One option and its values per line; --perms shares the line of the option it modifies. */
static void explain_argv(FILE *f, const struct jail_box *b)
{
	char *const *a = b->argv.v;
	size_t i = 1;

	fprintf(f,
		"\n== bwrap argv (fd %d: seccomp BPF, fd %d: bwrap info, fd %d: box-init "
		"ready, fd %d: the host's go) ==\n",
		JAIL_FD_SECCOMP, JAIL_FD_INFO, JAIL_FD_READY, JAIL_FD_GO);
	put_word(f, a[0]);
	while (a[i] && strcmp(a[i], "--")) {
		bool more = true;

		fputs(" \\\n    ", f);
		while (more && a[i]) {
			size_t k = arity(a[i]);

			more = !strcmp(a[i], "--perms");
			for (size_t j = 0; j <= k && a[i]; j++, i++) {
				if (j)
					fputc(' ', f);
				put_word(f, a[i]);
			}
			if (more)
				fputc(' ', f);
		}
	}
	if (a[i]) {
		fputs(" \\\n    ", f);
		put_words(f, &a[i]);
	}
	fputc('\n', f);
}

int jail_box_explain(const struct jail_box *b, char **out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	*out = NULL;
	if (!b->finished)
		return util_err(-EINVAL, "jail: explain needs a finished box");
	f = open_memstream(&buf, &len);
	if (!f)
		return util_err(-ENOMEM, "out of memory");
	explain_inputs(f, b);
	explain_mounts(f, b);
	explain_env(f, b);
	explain_seccomp(f);
	explain_argv(f, b);
	if (fclose(f) != 0) {
		free(buf);
		return util_err(-ENOMEM, "out of memory");
	}
	*out = buf;
	return 0;
}
