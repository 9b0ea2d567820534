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

#include "audit/audit.h"
#include "core/core.h"

/* Exit 0 and one line when intact; the first broken link on stderr and exit 1 otherwise. */
static int report(const char *what, const struct audit_verify_result *res)
{
	if (!res->ok && res->broken_seq)
		return cli_fail(CLI_ERR, "%s: broken at seq %lld: %s", what,
				(long long)res->broken_seq, res->reason);
	if (!res->ok)
		return cli_fail(CLI_ERR, "%s: broken: %s", what, res->reason);
	printf("%s: ok, %lld rows, head %s\n", what, (long long)res->rows, res->head);
	return CLI_OK;
}

static int verify_db(struct cli_global *g, const char *name)
{
	struct core_project *p = NULL;
	struct audit_verify_result res;
	sqlite3 *db = NULL;
	int64_t key = 0, deleted_ns = 0;
	char what[160];
	int rc;

	rc = cli_audit_open(&p, &db, g->workdir, name, &key, &deleted_ns);
	if (rc == 0)
		rc = audit_verify_db(db, key, &res);
	core_project_free(p);
	if (rc < 0)
		return cli_fail_lib();
	snprintf(what, sizeof(what), "audit of '%s'", name);
	return report(what, &res);
}

static int verify_bundle(const char *file)
{
	struct audit_verify_result res;
	char what[PATH_MAX + 200];

	if (audit_verify_bundle(file, &res) < 0)
		return cli_fail_lib();
	snprintf(what, sizeof(what), "bundle %s (workspace '%s')", file, res.workspace);
	return report(what, &res);
}

/* The bundle in memory first: a broken chain or a failed write leaves no file behind. */
static int export(struct cli_global *g, const char *name, const char *file)
{
	struct core_project *p = NULL;
	struct audit_verify_result res = {0};
	sqlite3 *db = NULL;
	int64_t key = 0, deleted_ns = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	int rc;

	rc = cli_audit_open(&p, &db, g->workdir, name, &key, &deleted_ns);
	if (rc == 0 && !(mem = open_memstream(&buf, &len)))
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = audit_export(db, key, name, mem, &res);
	if (mem && fclose(mem) != 0 && rc == 0)
		rc = util_err(-ENOMEM, "out of memory");
	if (rc == 0 && !strcmp(file, "-"))
		rc = fwrite(buf, 1, len, stdout) == len ? 0 : util_err(-EIO, "cannot write stdout");
	else if (rc == 0 && util_write_file(file, buf, len, 0644) < 0)
		rc = util_err(-errno, "cannot write %s: %s", file, util_err_msg());
	free(buf);
	core_project_free(p);
	if (rc == -EBADMSG) {
		char what[160];

		snprintf(what, sizeof(what), "audit of '%s' (nothing exported)", name);
		return report(what, &res);
	}
	if (rc < 0)
		return cli_fail_lib();
	if (strcmp(file, "-") != 0)
		printf("exported %lld rows of '%s' to %s, head %s\n", (long long)res.rows, name,
		       file, res.head);
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
