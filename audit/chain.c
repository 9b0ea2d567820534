/*
 * audit/chain.c: tamper evidence. Every row of audit_events carries hash = SHA-256(previous
 * row's hash || canonical encoding of the row), chained per workspace in seq order; the first
 * row of a workspace chains from a genesis hash derived from the workspace's id. The encoding
 * is specified in README.md ("Tamper evidence") so a bundle can be checked without arborinth.
 */
#include "audit/audit_internal.h"

#include <errno.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>

const char *const audit_chain_cols[AUDIT_CHAIN_COLS] = {
    "seq",    "prev_seq", "time_ns",  "kind",	    "op",	   "path",     "path2",
    "result", "pid",	  "comm",     "exe",	    "session",	   "size",     "count",
    "off_lo", "off_hi",	  "mode",     "mtime_ns",   "backend",	   "method",   "host",
    "port",   "status",	  "bytes_up", "bytes_down", "duration_ns", "decision", "reason",
};

#define GENESIS_TAG "arborinth audit chain v1\n"

/*
 * Nettle's SHA-256 (GnuTLS's crypto library; the CPU's SHA instructions where it has them):
 * no initialisation, no allocation per hash, and a small library. OpenSSL's libcrypto, used
 * before, cost every process that records a session row about a millisecond to load and
 * relocate (more with EVP, whose first fetch initialises its providers). Same digests.
 */
int audit_chain_genesis(const char *ws_id, uint8_t out[AUDIT_HASH_LEN])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, strlen(GENESIS_TAG), (const uint8_t *)GENESIS_TAG);
	sha256_update(&c, strlen(ws_id), (const uint8_t *)ws_id);
	sha256_digest(&c, AUDIT_HASH_LEN, out);
	return 0;
}

static int update_val(struct sha256_ctx *c, const struct audit_val *v)
{
	uint8_t head[9];
	size_t n = 1;

	head[0] = (uint8_t)v->type;
	if (v->type == AUDIT_VAL_INT) {
		for (int i = 0; i < 8; i++)
			head[1 + i] = (uint8_t)((uint64_t)v->i >> (56 - 8 * i));
		n = 9;
	} else if (v->type != AUDIT_VAL_NULL) {
		for (int i = 0; i < 4; i++)
			head[1 + i] = (uint8_t)((uint32_t)v->n >> (24 - 8 * i));
		n = 5;
	}
	sha256_update(c, n, head);
	if (v->type != AUDIT_VAL_NULL && v->type != AUDIT_VAL_INT && v->n)
		sha256_update(c, v->n, (const uint8_t *)v->s);
	return 0;
}

int audit_chain_hash(const uint8_t prev[AUDIT_HASH_LEN], const struct audit_val *vals,
		     uint8_t out[AUDIT_HASH_LEN])
{
	struct sha256_ctx c;
	int rc = 0;

	sha256_init(&c);
	sha256_update(&c, AUDIT_HASH_LEN, prev);
	for (size_t i = 0; i < AUDIT_CHAIN_COLS && rc == 0; i++)
		rc = update_val(&c, &vals[i]);
	if (rc == 0)
		sha256_digest(&c, AUDIT_HASH_LEN, out);
	return rc;
}

void audit_chain_hex(const uint8_t hash[AUDIT_HASH_LEN], char out[AUDIT_HASH_HEX])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < AUDIT_HASH_LEN; i++) {
		out[2 * i] = digits[hash[i] >> 4];
		out[2 * i + 1] = digits[hash[i] & 15];
	}
	out[2 * AUDIT_HASH_LEN] = '\0';
}

void audit_val_column(struct audit_val *v, sqlite3_stmt *st, int col)
{
	switch (sqlite3_column_type(st, col)) {
	case SQLITE_NULL:
		*v = (struct audit_val){.type = AUDIT_VAL_NULL};
		break;
	case SQLITE_INTEGER:
		*v = (struct audit_val){.type = AUDIT_VAL_INT, .i = sqlite3_column_int64(st, col)};
		break;
	case SQLITE_TEXT:
		v->type = AUDIT_VAL_TEXT;
		v->s = (const char *)sqlite3_column_text(st, col);
		v->n = (size_t)sqlite3_column_bytes(st, col);
		break;
	default:
		/* Never written by arborinth: kept apart from text so it cannot verify. */
		v->type = AUDIT_VAL_OTHER;
		v->s = (const char *)sqlite3_column_blob(st, col);
		v->n = (size_t)sqlite3_column_bytes(st, col);
		break;
	}
}

static void val_bind(sqlite3_stmt *st, int col, const struct audit_val *v)
{
	if (v->type == AUDIT_VAL_INT)
		sqlite3_bind_int64(st, col, v->i);
	else if (v->type == AUDIT_VAL_TEXT)
		sqlite3_bind_text(st, col, v->s, (int)v->n, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, col);
}

/* --- appending --- */

struct audit_chain {
	sqlite3 *db;
	sqlite3_stmt *ins, *head, *top, *save;
	bool dirty; /* rows inserted since the head was saved */
	int64_t ws_key;
	uint8_t genesis[AUDIT_HASH_LEN];
	uint8_t prev[AUDIT_HASH_LEN];
	int64_t prev_seq, next_seq; /* prev_seq 0: none */
};

int audit_chain_new(struct audit_chain **out, sqlite3 *db, int64_t ws_key, const char *ws_id)
{
	struct audit_chain *c = calloc(1, sizeof(*c));
	sqlite3_str *sql = sqlite3_str_new(NULL);
	char *text = NULL;
	int rc;

	*out = NULL;
	if (!c) {
		sqlite3_free(sqlite3_str_finish(sql));
		return -ENOMEM;
	}
	c->db = db;
	c->ws_key = ws_key;
	rc = audit_chain_genesis(ws_id, c->genesis);
	sqlite3_str_appendall(sql, "INSERT INTO audit_events (ws, hash");
	for (size_t i = 0; i < AUDIT_CHAIN_COLS; i++)
		sqlite3_str_appendf(sql, ", %s", audit_chain_cols[i]);
	sqlite3_str_appendall(sql, ") VALUES (?, ?");
	for (size_t i = 0; i < AUDIT_CHAIN_COLS; i++)
		sqlite3_str_appendall(sql, ", ?");
	sqlite3_str_appendall(sql, ")");
	text = sqlite3_str_finish(sql);
	if (rc == 0 && !text)
		rc = -ENOMEM;
	if (rc == 0 &&
	    (sqlite3_prepare_v3(db, text, -1, SQLITE_PREPARE_PERSISTENT, &c->ins, NULL) !=
		 SQLITE_OK ||
	     sqlite3_prepare_v3(db,
				"SELECT seq, hash FROM audit_events WHERE ws = ? "
				"ORDER BY seq DESC LIMIT 1",
				-1, SQLITE_PREPARE_PERSISTENT, &c->head, NULL) != SQLITE_OK ||
	     sqlite3_prepare_v3(db, "SELECT ifnull(max(seq), 0) FROM audit_events", -1,
				SQLITE_PREPARE_PERSISTENT, &c->top, NULL) != SQLITE_OK ||
	     sqlite3_prepare_v3(db, AUDIT_HEAD_SAVE_SQL, -1, SQLITE_PREPARE_PERSISTENT, &c->save,
				NULL) != SQLITE_OK))
		rc = util_err(-EIO, "state database: %s", sqlite3_errmsg(db));
	sqlite3_free(text);
	if (rc < 0) {
		audit_chain_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void audit_chain_free(struct audit_chain *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->ins);
	sqlite3_finalize(c->head);
	sqlite3_finalize(c->top);
	sqlite3_finalize(c->save);
	free(c);
}

int audit_chain_load(struct audit_chain *c)
{
	int rc = -EIO;

	memcpy(c->prev, c->genesis, AUDIT_HASH_LEN);
	c->prev_seq = 0;
	c->dirty = false;
	sqlite3_bind_int64(c->head, 1, c->ws_key);
	switch (sqlite3_step(c->head)) {
	case SQLITE_ROW:
		c->prev_seq = sqlite3_column_int64(c->head, 0);
		if (sqlite3_column_bytes(c->head, 1) == AUDIT_HASH_LEN)
			memcpy(c->prev, sqlite3_column_blob(c->head, 1), AUDIT_HASH_LEN);
		/* fallthrough */
	case SQLITE_DONE:
		rc = 0;
		break;
	}
	sqlite3_reset(c->head);
	if (rc == 0 && sqlite3_step(c->top) == SQLITE_ROW)
		c->next_seq = sqlite3_column_int64(c->top, 0) + 1;
	else
		rc = -EIO;
	sqlite3_reset(c->top);
	if (rc < 0)
		return util_err(rc, "state database: %s", sqlite3_errmsg(c->db));
	return 0;
}

int audit_chain_insert(struct audit_chain *c, struct audit_val *vals)
{
	uint8_t hash[AUDIT_HASH_LEN];
	int rc;

	vals[AUDIT_COL_SEQ] = audit_val_int(c->next_seq, true);
	vals[AUDIT_COL_PREV_SEQ] = audit_val_int(c->prev_seq, c->prev_seq != 0);
	rc = audit_chain_hash(c->prev, vals, hash);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(c->ins, 1, c->ws_key);
	sqlite3_bind_blob(c->ins, 2, hash, AUDIT_HASH_LEN, SQLITE_STATIC);
	for (size_t i = 0; i < AUDIT_CHAIN_COLS; i++)
		val_bind(c->ins, (int)i + 3, &vals[i]);
	rc = sqlite3_step(c->ins) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(c->ins);
	sqlite3_clear_bindings(c->ins);
	if (rc < 0)
		return rc;
	memcpy(c->prev, hash, AUDIT_HASH_LEN);
	c->prev_seq = c->next_seq++;
	c->dirty = true;
	return 0;
}

int audit_head_save(sqlite3_stmt *save, int64_t ws_key, int64_t seq,
		    const uint8_t hash[AUDIT_HASH_LEN])
{
	int rc;

	sqlite3_bind_int64(save, 1, ws_key);
	sqlite3_bind_int64(save, 2, seq);
	sqlite3_bind_blob(save, 3, hash, AUDIT_HASH_LEN, SQLITE_STATIC);
	rc = sqlite3_step(save) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_reset(save);
	return rc;
}

int audit_chain_finish(struct audit_chain *c)
{
	int rc = c->dirty ? audit_head_save(c->save, c->ws_key, c->prev_seq, c->prev) : 0;

	if (rc == 0)
		c->dirty = false;
	return rc;
}
