/*
 * audit/bundle.c: `arborinth audit --export` and `--verify FILE`: a workspace's hash chain as
 * a self-contained file of JSON lines (format in README.md, "Tamper evidence"): a header, one
 * line per row with every chained column and the row's hash, a trailer with the head.
 */
#include "audit/audit_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define BUNDLE_FORMAT "arborinth-audit-bundle"

static char *hex_of(const char *s, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *out = malloc(2 * n + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[(unsigned char)s[i] >> 4];
		out[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	out[2 * n] = '\0';
	return out;
}

/* Text that is not UTF-8 (a file name can be any bytes) as {"hex": "..."}. */
static json_t *json_of_val(const struct audit_val *v)
{
	json_t *j;
	char *hex;

	if (v->type == AUDIT_VAL_INT)
		return json_integer(v->i);
	if (v->type != AUDIT_VAL_TEXT)
		return json_null();
	if (util_utf8_valid(v->s, v->n) && !memchr(v->s, '\0', v->n))
		return json_stringn(v->s, v->n);
	hex = hex_of(v->s, v->n);
	j = hex ? json_pack("{s:s}", "hex", hex) : NULL;
	free(hex);
	return j;
}

static int put_line(FILE *out, json_t *j)
{
	int rc = j && json_dumpf(j, out, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0 &&
			 fputc('\n', out) != EOF
		     ? 0
		     : -EIO;

	json_decref(j);
	return rc;
}

static int export_row(void *arg, const struct audit_val *vals, const void *hash)
{
	char hex[AUDIT_HASH_HEX];
	json_t *row = json_object();

	if (!row)
		return -ENOMEM;
	for (size_t i = 0; i < AUDIT_CHAIN_COLS; i++)
		if (json_object_set_new(row, audit_chain_cols[i], json_of_val(&vals[i])) < 0) {
			json_decref(row);
			return -ENOMEM;
		}
	audit_chain_hex(hash, hex);
	json_object_set_new(row, "hash", json_string(hex));
	return put_line(arg, row);
}

int audit_export(sqlite3 *db, int64_t ws_key, const char *ws_name, FILE *out,
		 struct audit_verify_result *res)
{
	json_t *cols = json_array();
	char *id = NULL;
	int rc;

	for (size_t i = 0; cols && i < AUDIT_CHAIN_COLS; i++)
		json_array_append_new(cols, json_string(audit_chain_cols[i]));
	rc = audit_ws_id(db, ws_key, &id);
	if (rc == 0)
		rc = put_line(out,
			      json_pack("{s:s, s:i, s:s, s:s, s:s, s:O}", "format", BUNDLE_FORMAT,
					"version", 1, "hash", "sha256", "workspace", ws_name,
					"workspace_id", id, "columns", cols));
	if (rc == 0)
		rc = audit_verify_each(db, ws_key, res, export_row, out);
	if (rc == 0 && !res->ok)
		rc = -EBADMSG;
	if (rc == 0)
		rc = put_line(
		    out, json_pack("{s:s, s:I}", "head", res->head, "rows", (json_int_t)res->rows));
	if (rc == -EIO)
		util_err(rc, "cannot write the bundle");
	json_decref(cols);
	free(id);
	return rc;
}

/* --- reading a bundle --- */

struct reader {
	const char *path;
	size_t line;
	char *bufs[AUDIT_CHAIN_COLS]; /* decoded hex text of the current row */
};

static int bad(const struct reader *r, const char *what)
{
	return util_err(-EINVAL, "%s:%zu: %s", r->path, r->line, what);
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Lower-case hex of even length len into len / 2 bytes. */
static int unhex(const char *hex, size_t len, char *out)
{
	for (size_t i = 0; i < len; i += 2) {
		int hi = nibble(hex[i]), lo = hi < 0 ? -1 : nibble(hex[i + 1]);

		if (lo < 0)
			return -EINVAL;
		out[i / 2] = (char)(hi << 4 | lo);
	}
	return 0;
}

static int val_of_json(struct reader *r, size_t col, json_t *j, struct audit_val *v)
{
	const char *hex;
	size_t len;

	*v = (struct audit_val){.type = AUDIT_VAL_NULL};
	if (json_is_null(j))
		return 0;
	if (json_is_integer(j)) {
		*v = (struct audit_val){.type = AUDIT_VAL_INT, .i = json_integer_value(j)};
		return 0;
	}
	if (json_is_string(j)) {
		*v = (struct audit_val){
		    .type = AUDIT_VAL_TEXT, .s = json_string_value(j), .n = json_string_length(j)};
		return 0;
	}
	hex = json_string_value(json_object_get(j, "hex"));
	len = hex ? strlen(hex) : 1;
	if (!json_is_object(j) || json_object_size(j) != 1 || len % 2)
		return -EINVAL;
	free(r->bufs[col]);
	r->bufs[col] = malloc(len / 2 + 1);
	if (!r->bufs[col])
		return -ENOMEM;
	*v = (struct audit_val){.type = AUDIT_VAL_TEXT, .s = r->bufs[col], .n = len / 2};
	return unhex(hex, len, r->bufs[col]);
}

static int read_header(struct reader *r, json_t *j, struct audit_verifier *v,
		       struct audit_verify_result *res)
{
	const char *format = json_string_value(json_object_get(j, "format"));
	const char *id = json_string_value(json_object_get(j, "workspace_id"));
	const char *name = json_string_value(json_object_get(j, "workspace"));
	json_t *version = json_object_get(j, "version");
	uint8_t genesis[AUDIT_HASH_LEN];
	int rc;

	if (!format || strcmp(format, BUNDLE_FORMAT) != 0)
		return bad(r, "not an arborinth audit bundle (no \"format\": \"" BUNDLE_FORMAT
			      "\" header)");
	if (!json_is_integer(version) || json_integer_value(version) != 1)
		return bad(r, "unsupported bundle version (this arborinth reads version 1)");
	if (!id || !name)
		return bad(r, "the header has no workspace or workspace_id");
	rc = audit_chain_genesis(id, genesis);
	if (rc < 0)
		return rc;
	audit_verify_start(v, genesis, res);
	snprintf(res->workspace, sizeof(res->workspace), "%s", name);
	return 0;
}

static int read_row(struct reader *r, struct audit_verifier *v, json_t *j,
		    struct audit_verify_result *res)
{
	struct audit_val vals[AUDIT_CHAIN_COLS];
	const char *hex = json_string_value(json_object_get(j, "hash"));
	uint8_t hash[AUDIT_HASH_LEN];
	char msg[96];
	int rc;

	if (json_object_size(j) != AUDIT_CHAIN_COLS + 1 || !hex ||
	    strlen(hex) != 2 * AUDIT_HASH_LEN || unhex(hex, 2 * AUDIT_HASH_LEN, (char *)hash) < 0)
		return bad(r, "a row needs exactly the bundle's columns and a 64-digit hash");
	for (size_t i = 0; i < AUDIT_CHAIN_COLS; i++) {
		json_t *f = json_object_get(j, audit_chain_cols[i]);

		rc = f ? val_of_json(r, i, f, &vals[i]) : -EINVAL;
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0) {
			snprintf(msg, sizeof(msg), "field \"%s\" is missing or not valid",
				 audit_chain_cols[i]);
			return bad(r, msg);
		}
	}
	return audit_verify_step(v, vals, hash, sizeof(hash), res);
}

static int read_trailer(struct reader *r, json_t *j, struct audit_verify_result *res)
{
	const char *head = json_string_value(json_object_get(j, "head"));
	json_t *rows = json_object_get(j, "rows");

	if (!head || !json_is_integer(rows))
		return bad(r, "the trailer needs \"head\" and \"rows\"");
	if (json_integer_value(rows) != res->rows || strcmp(head, res->head) != 0) {
		res->ok = false;
		snprintf(res->reason, sizeof(res->reason),
			 "the trailer names %lld rows and head %.16s..., the rows give %lld and "
			 "%.16s... (rows removed or added at the end)",
			 (long long)json_integer_value(rows), head, (long long)res->rows,
			 res->head);
	}
	return 0;
}

/* One line: 0 to go on, 1 once the chain broke, negative errno. */
static int read_line(struct reader *r, struct audit_verifier *v, json_t *j, bool *trailer,
		     struct audit_verify_result *res)
{
	if (!json_is_object(j))
		return bad(r, "not a JSON object");
	if (*trailer)
		return bad(r, "data after the trailer");
	if (r->line == 1)
		return read_header(r, j, v, res);
	if (json_object_get(j, "head")) {
		*trailer = true;
		return read_trailer(r, j, res);
	}
	return read_row(r, v, j, res);
}

int audit_verify_bundle(const char *path, struct audit_verify_result *res)
{
	struct reader r = {.path = path};
	struct audit_verifier v = {0};
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	bool trailer = false;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	if (!f)
		return util_err(-errno, "cannot read %s: %s", path, strerror(errno));
	while (rc == 0 && getline(&line, &cap, f) >= 0) {
		json_error_t err;
		json_t *j;

		r.line++;
		j = json_loads(line, JSON_ALLOW_NUL, &err);
		rc = j ? read_line(&r, &v, j, &trailer, res) : bad(&r, "not JSON");
		json_decref(j);
	}
	if (rc == 0 && ferror(f))
		rc = util_err(-EIO, "cannot read %s", path);
	if (rc == 0 && r.line == 0)
		rc = util_err(-EINVAL, "%s: empty file, not an audit bundle", path);
	if (rc == 0 && !trailer) {
		res->ok = false;
		snprintf(res->reason, sizeof(res->reason),
			 "the bundle ends without its trailer (cut short)");
	}
	free(line);
	for (size_t i = 0; i < AUDIT_CHAIN_COLS; i++)
		free(r.bufs[i]);
	fclose(f);
	return rc < 0 ? rc : 0;
}
