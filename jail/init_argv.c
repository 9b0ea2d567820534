/*
 * jail/init_argv.c: box-init's command line, both halves: what the host puts after bwrap's
 * `--` (jail_init_argv, from jail/box.c) and what box-init makes of it (jail_init_opts_parse,
 * from `arborinth __box-init`):
 *
 *   PROGRAM __box-init --ready-fd N [--go-fd N] [--HOOK ARG]... -- COMMAND [ARGS...]
 */
#include "jail/jail_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INIT_VERB  "__box-init"
#define READY_FLAG "--ready-fd"
#define GO_FLAG	   "--go-fd"

void jail_init_argv(struct jail_strv *a, const char *program, int ready_fd, int go_fd,
		    const struct jail_strv *hooks, const struct jail_strv *command)
{
	jail_strv_push(a, program);
	jail_strv_push(a, INIT_VERB);
	jail_strv_push(a, READY_FLAG);
	jail_strv_pushf(a, "%d", ready_fd);
	if (go_fd >= 0) {
		jail_strv_push(a, GO_FLAG);
		jail_strv_pushf(a, "%d", go_fd);
	}
	for (size_t i = 0; i < hooks->n; i++)
		jail_strv_push(a, hooks->v[i]);
	jail_strv_push(a, "--");
	for (size_t i = 0; i < command->n; i++)
		jail_strv_push(a, command->v[i]);
}

static const struct jail_init_hook *hook_named(const struct jail_init_hook *t, const char *name)
{
	for (; t && t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

/* A descriptor number after `flag`. */
static int fd_arg(const char *flag, const char *arg, int *fd)
{
	char *end;
	long n = strtol(arg, &end, 10);

	if (end == arg || *end || n < 0 || n > 1 << 20)
		return util_err(-EINVAL, "box-init: bad %s '%s'", flag, arg);
	*fd = (int)n;
	return 0;
}

int jail_init_opts_parse(struct jail_init_opts *o, int argc, char **argv,
			 const struct jail_init_hook *hooks)
{
	const char **names = calloc((size_t)argc + 1, sizeof(*names));
	const char **args = calloc((size_t)argc + 1, sizeof(*args));
	size_t n = 0;
	int i = 1, rc = names && args ? 0 : util_err(-ENOMEM, "out of memory");

	*o = (struct jail_init_opts){.ready_fd = -1, .go_fd = -1, .hooks = hooks};
	/* Options come in pairs; hook names from the table; nothing after -- is ours. */
	for (; rc == 0 && i < argc && strcmp(argv[i], "--"); i += 2) {
		if (i + 1 >= argc || strncmp(argv[i], "--", 2)) {
			rc = util_err(-EINVAL, "box-init: bad argument '%s'", argv[i]);
		} else if (!strcmp(argv[i], READY_FLAG)) {
			rc = fd_arg(READY_FLAG, argv[i + 1], &o->ready_fd);
		} else if (!strcmp(argv[i], GO_FLAG)) {
			rc = fd_arg(GO_FLAG, argv[i + 1], &o->go_fd);
		} else if (hook_named(hooks, argv[i] + 2)) {
			names[n] = argv[i] + 2;
			args[n++] = argv[i + 1];
		} else {
			rc = util_err(-EINVAL, "box-init: unknown hook '%s'", argv[i] + 2);
		}
	}
	if (rc == 0 && i + 1 >= argc)
		rc = util_err(-EINVAL, "box-init: no command after --");
	if (rc < 0) {
		free(names);
		free(args);
		*o = (struct jail_init_opts){.ready_fd = -1, .go_fd = -1};
		return rc;
	}
	o->hook_names = names;
	o->hook_args = args;
	o->argv = argv + i + 1;
	return 0;
}

void jail_init_opts_clear(struct jail_init_opts *o)
{
	free((void *)o->hook_names);
	free((void *)o->hook_args);
	o->hook_names = o->hook_args = NULL;
}
