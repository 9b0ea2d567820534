/*
 * cli/cmd_audit_chain.c: `arborinth audit NAME --verify`, `audit --verify=FILE` and
 * `audit NAME --export FILE`: the audit's hash chain, checked in state.db or in a bundle.
 */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/arborinth.h"

/* Exit 0 and one line when intact; the first broken link on stderr and exit 1 otherwise. */
static int report(const char *what, const struct arb_audit_verify *res)
{
	if (!res->ok && res->broken_seq)
		return cli_fail(CLI_ERR, "%s: broken at seq %lld: %s", what,
				(long long)res->broken_seq, res->reason);
	if (!res->ok)
		return cli_fail(CLI_ERR, "%s: broken: %s", what, res->reason);
	printf("%s: ok, %lld rows, head %s\n", what, (long long)res->rows, cli_q(res->head));
	return CLI_OK;
}

static int fail_lib(void)
{
	return cli_fail(CLI_ERR, "%s", arb_error_last());
}

static int verify_db(struct cli_global *g, const char *name)
{
	arb_project *p = NULL;
	struct arb_audit_verify res;
	char what[160];
	int rc;

	rc = arb_project_open(&p, g->workdir);
	if (rc == 0)
		rc = arb_audit_verify(&res, p, name);
	arb_project_free(p);
	if (rc < 0)
		return fail_lib();
	snprintf(what, sizeof(what), "audit of '%s'", cli_q(name));
	return report(what, &res);
}

static int verify_bundle(const char *file)
{
	struct arb_audit_verify res;
	char what[PATH_MAX + 200];

	if (arb_audit_verify_bundle(&res, file) < 0)
		return fail_lib();
	snprintf(what, sizeof(what), "bundle %s (workspace '%s')", cli_q(file),
		 cli_q(res.workspace));
	return report(what, &res);
}

/* The bundle in a temporary file first: a broken chain or a failed write leaves no file. */
static int export(struct cli_global *g, const char *name, const char *file)
{
	arb_project *p = NULL;
	struct arb_audit_verify res = {0};
	FILE *tmp = tmpfile();
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = tmp ? arb_project_open(&p, g->workdir) : util_err(-errno, "cannot make a file");
	if (rc == 0)
		rc = arb_audit_export(&res, p, name, fileno(tmp));
	arb_project_free(p);
	if (rc == 0) {
		long end = fseek(tmp, 0, SEEK_END) == 0 ? ftell(tmp) : -1;

		buf = end >= 0 ? malloc((size_t)end + 1) : NULL;
		rewind(tmp);
		len = buf ? fread(buf, 1, (size_t)end, tmp) : 0;
		if (!buf || len != (size_t)end)
			rc = util_err(-EIO, "cannot read the bundle back");
	}
	if (tmp)
		fclose(tmp);
	if (rc == 0 && !strcmp(file, "-"))
		rc = fwrite(buf, 1, len, stdout) == len ? 0 : util_err(-EIO, "cannot write stdout");
	else if (rc == 0 && util_write_file(file, buf, len, 0644) < 0)
		rc = util_err(-errno, "cannot write %s: %s", file, util_err_msg());
	free(buf);
	if (rc == -EBADMSG) {
		char what[160];

		snprintf(what, sizeof(what), "audit of '%s' (nothing exported)", name);
		return report(what, &res);
	}
	if (rc < 0)
		return fail_lib();
	if (strcmp(file, "-") != 0)
		printf("exported %lld rows of '%s' to %s, head %s\n", (long long)res.rows,
		       cli_q(name), cli_q(file), cli_q(res.head));
	return CLI_OK;
}

int cli_audit_chain(struct cli_global *g, bool filtered, const char *verify_file,
		    const char *export_file, int nargs, char **args)
{
	if (filtered)
		return cli_usage_error("audit", "--%s takes the whole chain: no other option",
				       export_file ? "export" : "verify");
	if (verify_file && nargs > 0)
		return cli_usage_error("audit", "--verify=FILE takes no workspace NAME (got '%s')",
				       args[0]);
	if (verify_file)
		return verify_bundle(verify_file);
	if (nargs == 0)
		return cli_usage_error("audit", "missing workspace NAME");
	if (nargs > 1)
		return cli_usage_error("audit", "unexpected argument '%s'", args[1]);
	return export_file ? export(g, args[0], export_file) : verify_db(g, args[0]);
}
