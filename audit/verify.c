/*
 * audit/verify.c: walking a workspace's hash chain in the database: checking it (`arborinth
 * audit --verify`) and chaining the rows written before the chain existed (the migration).
 */
#include "audit/audit_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *audit_chain_select_sql(void)
{
	sqlite3_str *sql = sqlite3_str_new(NULL);

	sqlite3_str_appendall(sql, "SELECT ");
	for (size_t i = 0; i < AUDIT_CHAIN_COLS; i++)
		sqlite3_str_appendf(sql, "%s, ", audit_chain_cols[i]);
	sqlite3_str_appendall(sql, "hash FROM audit_events WHERE ws = ? ORDER BY seq");
	return sqlite3_str_finish(sql);
}

int audit_ws_id(sqlite3 *db, int64_t ws_key, char **out)
{
	sqlite3_stmt *st = NULL;
	int rc = -ENOENT;

	*out = NULL;
	if (sqlite3_prepare_v2(db, "SELECT id FROM audit_workspaces WHERE key = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, ws_key);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*out = strdup((const char *)sqlite3_column_text(st, 0));
		rc = *out ? 0 : -ENOMEM;
	}
	sqlite3_finalize(st);
	if (rc == -ENOENT)
		util_err(rc, "no workspace history with key %lld", (long long)ws_key);
	return rc;
}

void audit_verify_start(struct audit_verifier *v, const uint8_t genesis[AUDIT_HASH_LEN],
			struct audit_verify_result *res)
{
	memcpy(v->genesis, genesis, AUDIT_HASH_LEN);
	memcpy(v->prev, genesis, AUDIT_HASH_LEN);
	v->prev_seq = 0;
	v->prev2_seq = -1;
	memset(res, 0, sizeof(*res));
	res->ok = true;
	audit_chain_hex(genesis, res->head);
}

static int broken(struct audit_verify_result *res, int64_t seq, const char *fmt, ...)
    ARB_PRINTF(3, 4);

static int broken(struct audit_verify_result *res, int64_t seq, const char *fmt, ...)
{
	va_list ap;

	res->ok = false;
	res->broken_seq = seq;
	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
	va_end(ap);
	return 1;
}

/* "seq N", or for 0 the genesis. */
static void seq_name(char *buf, size_t size, int64_t seq)
{
	if (seq)
		snprintf(buf, size, "seq %lld", (long long)seq);
	else
		snprintf(buf, size, "the chain's start");
}

/*
 * The row says it follows an earlier row than the one before it. Either the row before it is
 * an intruder (inserted, or moved there), and this row still hashes right over the row it
 * names, or this row is (a copy, or moved here with a new seq).
 */
static int misplaced(const struct audit_verifier *v, const struct audit_val *vals, const void *hash,
		     size_t hash_len, struct audit_verify_result *res)
{
	int64_t seq = vals[AUDIT_COL_SEQ].i;
	int64_t claimed =
	    vals[AUDIT_COL_PREV_SEQ].type == AUDIT_VAL_INT ? vals[AUDIT_COL_PREV_SEQ].i : 0;
	const uint8_t *basis = claimed == v->prev2_seq ? v->prev2 : claimed ? NULL : v->genesis;
	uint8_t want[AUDIT_HASH_LEN];
	char named[48];

	seq_name(named, sizeof(named), claimed);
	if (basis && audit_chain_hash(basis, vals, want) == 0 && hash_len == AUDIT_HASH_LEN &&
	    memcmp(want, hash, AUDIT_HASH_LEN) == 0)
		return broken(res, v->prev_seq,
			      "seq %lld does not belong before seq %lld, which follows %s (a row "
			      "inserted, or moved here)",
			      (long long)v->prev_seq, (long long)seq, named);
	return broken(res, seq,
		      "seq %lld is out of place: it says it follows %s, but comes after seq %lld "
		      "(copied, or moved here)",
		      (long long)seq, named, (long long)v->prev_seq);
}

int audit_verify_step(struct audit_verifier *v, const struct audit_val *vals, const void *hash,
		      size_t hash_len, struct audit_verify_result *res)
{
	const struct audit_val *seq = &vals[AUDIT_COL_SEQ], *prev = &vals[AUDIT_COL_PREV_SEQ];
	int64_t claimed = prev->type == AUDIT_VAL_INT ? prev->i : 0;
	uint8_t want[AUDIT_HASH_LEN];
	int rc;

	if (seq->type != AUDIT_VAL_INT)
		return broken(res, 0, "a row without a seq follows seq %lld",
			      (long long)v->prev_seq);
	if (prev->type != AUDIT_VAL_NULL && prev->type != AUDIT_VAL_INT)
		return broken(res, seq->i, "seq %lld: prev_seq is not a number", (long long)seq->i);
	if (claimed >= seq->i)
		return broken(res, seq->i,
			      "seq %lld is out of order: its content says it follows seq %lld "
			      "(rows reordered)",
			      (long long)seq->i, (long long)claimed);
	if (claimed > v->prev_seq) {
		char after[48];

		seq_name(after, sizeof(after), v->prev_seq);
		return broken(res, claimed,
			      "seq %lld is missing: seq %lld follows it, but comes after %s "
			      "(removed, or moved elsewhere)",
			      (long long)claimed, (long long)seq->i, after);
	}
	if (claimed != v->prev_seq)
		return misplaced(v, vals, hash, hash_len, res);
	rc = audit_chain_hash(v->prev, vals, want);
	if (rc < 0)
		return rc;
	if (hash_len != AUDIT_HASH_LEN || memcmp(want, hash, AUDIT_HASH_LEN) != 0)
		return broken(res, seq->i,
			      "seq %lld was changed: its hash does not match its content",
			      (long long)seq->i);
	memcpy(v->prev2, v->prev, AUDIT_HASH_LEN);
	v->prev2_seq = v->prev_seq;
	memcpy(v->prev, want, AUDIT_HASH_LEN);
	v->prev_seq = seq->i;
	res->rows++;
	audit_chain_hex(want, res->head);
	return 0;
}

/* Calls fn for every row of ws_key's chain in seq order, with its values and stored hash. */
typedef int (*row_fn)(void *ctx, struct audit_val *vals, const void *hash, size_t hash_len,
		      int64_t rowid);

static int each_row(sqlite3 *db, int64_t ws_key, row_fn fn, void *ctx)
{
	struct audit_val vals[AUDIT_CHAIN_COLS];
	char *sql = audit_chain_select_sql();
	sqlite3_stmt *st = NULL;
	int rc = 0, step;

	if (!sql)
		return -ENOMEM;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_int64(st, 1, ws_key);
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < AUDIT_CHAIN_COLS; i++)
			audit_val_column(&vals[i], st, i);
		rc = fn(ctx, vals, sqlite3_column_blob(st, AUDIT_CHAIN_COLS),
			(size_t)sqlite3_column_bytes(st, AUDIT_CHAIN_COLS),
			sqlite3_column_int64(st, AUDIT_COL_SEQ));
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
out:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	return rc;
}

struct verify_ctx {
	struct audit_verifier v;
	struct audit_verify_result *res;
	audit_row_cb cb;
	void *cb_ctx;
	/* audit_heads' record of the chain's last row, and where the walk met it */
	bool has_head, saw_head;
	int64_t head_seq, after_head;
	uint8_t head[AUDIT_HASH_LEN];
};

static int verify_row(void *arg, struct audit_val *vals, const void *hash, size_t hash_len,
		      int64_t rowid)
{
	struct verify_ctx *c = arg;
	int rc = audit_verify_step(&c->v, vals, hash, hash_len, c->res);

	if (rc == 0 && c->has_head && c->v.prev_seq == c->head_seq &&
	    !memcmp(c->v.prev, c->head, AUDIT_HASH_LEN))
		c->saw_head = true;
	else if (rc == 0 && c->saw_head && !c->after_head)
		c->after_head = c->v.prev_seq;
	if (rc == 0 && c->cb)
		rc = c->cb(c->cb_ctx, vals, hash);
	return rc;
}

static int read_head(sqlite3 *db, int64_t ws_key, struct verify_ctx *c)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "SELECT seq, hash FROM audit_heads WHERE ws = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, ws_key);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		c->has_head = true;
		c->head_seq = sqlite3_column_int64(st, 0);
		if (sqlite3_column_bytes(st, 1) == AUDIT_HASH_LEN)
			memcpy(c->head, sqlite3_column_blob(st, 1), AUDIT_HASH_LEN);
		break;
	case SQLITE_DONE:
		break;
	default:
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	}
	sqlite3_finalize(st);
	return rc;
}

/* After an intact walk: the recorded head must be the last row (rows cut or added at the end). */
static void check_head(const struct verify_ctx *c, struct audit_verify_result *res)
{
	char end[48];

	seq_name(end, sizeof(end), c->v.prev_seq);
	if (!c->has_head && res->rows)
		broken(res, 0, "the chain's recorded head is missing (audit_heads)");
	else if (c->has_head && !c->saw_head && c->head_seq > c->v.prev_seq)
		broken(
		    res, c->head_seq,
		    "seq %lld, the chain's recorded head, is missing: the chain ends at %s (rows "
		    "cut from the end)",
		    (long long)c->head_seq, end);
	else if (c->has_head && !c->saw_head)
		broken(res, c->head_seq, "the chain's recorded head (seq %lld) does not match it",
		       (long long)c->head_seq);
	else if (c->after_head)
		broken(res, c->after_head,
		       "seq %lld comes after the chain's recorded head (seq %lld): added by hand",
		       (long long)c->after_head, (long long)c->head_seq);
}

int audit_verify_each(sqlite3 *db, int64_t ws_key, struct audit_verify_result *res, audit_row_cb cb,
		      void *cb_ctx)
{
	struct verify_ctx c = {.res = res, .cb = cb, .cb_ctx = cb_ctx};
	uint8_t genesis[AUDIT_HASH_LEN];
	char *id = NULL;
	int rc;

	rc = audit_ws_id(db, ws_key, &id);
	if (rc == 0)
		rc = audit_chain_genesis(id, genesis);
	free(id);
	if (rc < 0)
		return rc;
	audit_verify_start(&c.v, genesis, res);
	/* One read transaction: the rows of one moment, whatever the recorder adds meanwhile. */
	rc = audit_db_exec(db, "BEGIN");
	if (rc < 0)
		return rc;
	rc = read_head(db, ws_key, &c);
	if (rc == 0)
		rc = each_row(db, ws_key, verify_row, &c);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc == 0 && res->ok)
		check_head(&c, res);
	return rc < 0 ? rc : 0;
}

int audit_verify_db(sqlite3 *db, int64_t ws_key, struct audit_verify_result *res)
{
	return audit_verify_each(db, ws_key, res, NULL, NULL);
}

/* --- the migration --- */

struct backfill_ctx {
	sqlite3_stmt *upd, *save;
	uint8_t prev[AUDIT_HASH_LEN];
	int64_t prev_seq;
};

static int backfill_row(void *arg, struct audit_val *vals, const void *hash, size_t hash_len,
			int64_t rowid)
{
	struct backfill_ctx *c = arg;
	uint8_t h[AUDIT_HASH_LEN];
	int rc;

	vals[AUDIT_COL_PREV_SEQ] = audit_val_int(c->prev_seq, c->prev_seq != 0);
	rc = audit_chain_hash(c->prev, vals, h);
	if (rc < 0)
		return rc;
	if (c->prev_seq)
		sqlite3_bind_int64(c->upd, 1, c->prev_seq);
	else
		sqlite3_bind_null(c->upd, 1);
	sqlite3_bind_blob(c->upd, 2, h, AUDIT_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(c->upd, 3, rowid);
	rc = sqlite3_step(c->upd) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(c->upd);
	memcpy(c->prev, h, AUDIT_HASH_LEN);
	c->prev_seq = rowid;
	return rc;
}

int audit_chain_backfill(sqlite3 *db)
{
	sqlite3_stmt *ws = NULL;
	struct backfill_ctx c = {0};
	int rc = 0, step;

	if (sqlite3_prepare_v2(db, "SELECT key, id FROM audit_workspaces", -1, &ws, NULL) !=
		SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE audit_events SET prev_seq = ?, hash = ? WHERE seq = ?",
			       -1, &c.upd, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, AUDIT_HEAD_SAVE_SQL, -1, &c.save, NULL) != SQLITE_OK) {
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
		goto out;
	}
	while (rc == 0 && (step = sqlite3_step(ws)) == SQLITE_ROW) {
		rc = audit_chain_genesis((const char *)sqlite3_column_text(ws, 1), c.prev);
		c.prev_seq = 0;
		if (rc == 0)
			rc = each_row(db, sqlite3_column_int64(ws, 0), backfill_row, &c);
		if (rc == 0 && c.prev_seq)
			rc = audit_head_save(c.save, sqlite3_column_int64(ws, 0), c.prev_seq,
					     c.prev);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = -EIO;
out:
	sqlite3_finalize(ws);
	sqlite3_finalize(c.upd);
	sqlite3_finalize(c.save);
	return rc;
}
