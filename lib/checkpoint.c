/* lib/checkpoint.c: checkpoints and rewind (arborinth.h). */
#include "lib/lib_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static void copy_out(struct arb_checkpoint *out, const struct core_ckpt *c)
{
	*out = (struct arb_checkpoint){.seq = c->seq, .time_ns = c->time_ns, .session = c->session};
	snprintf(out->commit, sizeof(out->commit), "%s", c->commit);
	snprintf(out->kind, sizeof(out->kind), "%s", c->kind);
	snprintf(out->message, sizeof(out->message), "%s", c->message ? c->message : "");
}

static int ws_open(arb_project *p, const char *name, struct core_ws **ws)
{
	int rc = core_ws_get(p->core, name, ws);

	return rc == -ENOENT || rc == -EINVAL ? lib_input_err(rc) : rc;
}

int arb_checkpoint_create(struct arb_checkpoint *out, arb_project *p, const char *ws_name,
			  const char *message)
{
	struct core_ckpt_opts o = {.message = message};
	struct core_ckpt c = {0};
	struct core_ws *ws = NULL;
	int rc;

	lib_err_reset();
	if (message && strlen(message) > CORE_CKPT_MESSAGE_MAX)
		return lib_input_err(util_err(-EINVAL, "a checkpoint message is at most %d bytes",
					      CORE_CKPT_MESSAGE_MAX));
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = core_ws_checkpoint(p->core, ws, &o, &c);
	if (rc == 0 && out)
		copy_out(out, &c);
	core_ckpt_clear(&c);
	core_ws_free(ws);
	return rc;
}

int arb_checkpoint_list(struct arb_checkpoint **out, size_t *n, arb_project *p, const char *ws_name)
{
	struct core_ckpt *v = NULL;
	struct core_ws *ws = NULL;
	size_t count = 0;
	int rc;

	lib_err_reset();
	*out = NULL;
	*n = 0;
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0)
		rc = core_ws_checkpoints(p->core, ws, &v, &count);
	if (rc == 0 && !(*out = calloc(count + 1, sizeof(**out))))
		rc = util_err(-ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < count; i++)
		copy_out(&(*out)[i], &v[i]);
	if (rc == 0)
		*n = count;
	core_ckpts_free(v, count);
	core_ws_free(ws);
	return rc;
}

int arb_rewind(struct arb_checkpoint *before, arb_project *p, const char *ws_name, const char *to)
{
	struct core_ckpt c = {0};
	struct core_ws *ws = NULL;
	git_oid tree;
	int rc;

	lib_err_reset();
	rc = ws_open(p, ws_name, &ws);
	if (rc == 0 && (rc = core_ws_tree(p->core, ws, to, &tree)) < 0 && rc != -ENOMEM)
		rc = lib_input_err(rc);
	if (rc == 0)
		rc = core_ws_rewind(p->core, ws, &tree, &c);
	if (rc == 0 && before)
		copy_out(before, &c);
	core_ckpt_clear(&c);
	core_ws_free(ws);
	return rc;
}
