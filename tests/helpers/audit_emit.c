/*
 * tests/helpers/audit_emit.c: writes audit events into a real state.db through the recorder
 * API (audit_log_open/append/close), for the `arborinth audit` CLI tests.
 *
 *   audit_emit DB WORKSPACE < events
 *
 * One event per line, tab-separated: TIME OP PATH PATH2 RESULT SIZE [PID]
 *   TIME    nanoseconds since the epoch, or -N (N seconds ago), or "now"
 *   PATH2   "-" for none; RESULT an errno number (0: ok); SIZE -1 when not applicable
 *   PID     a number, "self" (default) or "parent" (the caller of audit_emit)
 * Lines "sleep MS" and "flush" pause and wait for the writer. Blank lines and '#' are skipped.
 * Exit 0 when every event was appended and close returned, 1 otherwise (message on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"

static int ws_id(const char *db_path, const char *name, char *id, size_t size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc = -ENOENT;

	if (audit_db_open(&db, db_path) < 0)
		return -EIO;
	if (sqlite3_prepare_v2(db, "SELECT id FROM workspaces WHERE name = ?", -1, &st, NULL) ==
	    SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW) {
			snprintf(id, size, "%s", (const char *)sqlite3_column_text(st, 0));
			rc = 0;
		}
	}
	sqlite3_finalize(st);
	audit_db_close(db);
	return rc;
}

static int64_t parse_time(const char *s)
{
	if (!strcmp(s, "now"))
		return util_now_ns();
	if (s[0] == '-')
		return util_now_ns() - strtoll(s + 1, NULL, 10) * 1000000000LL;
	return strtoll(s, NULL, 10);
}

static pid_t parse_pid(const char *s)
{
	if (!s || !strcmp(s, "self"))
		return getpid();
	if (!strcmp(s, "parent"))
		return getppid();
	return (pid_t)atoi(s);
}

static int emit_line(struct audit_log *log, char *line)
{
	char *f[7] = {NULL};
	struct audit_event ev = {0};
	int n = 0;

	for (char *save = NULL, *t = strtok_r(line, "\t\n", &save); t && n < 7;
	     t = strtok_r(NULL, "\t\n", &save))
		f[n++] = t;
	if (n < 6) {
		fprintf(stderr, "audit_emit: need at least 6 fields: %s\n", line);
		return -EINVAL;
	}
	ev.time_ns = parse_time(f[0]);
	ev.op = f[1];
	ev.path = strcmp(f[2], "-") ? f[2] : NULL;
	ev.path2 = strcmp(f[3], "-") ? f[3] : NULL;
	ev.result = atoi(f[4]);
	ev.size = strtoll(f[5], NULL, 10);
	ev.pid = parse_pid(f[6]);
	if (!strcmp(ev.op, "write") && ev.size > 0) {
		ev.count = 1;
		ev.off_lo = 0;
		ev.off_hi = ev.size;
	}
	return audit_log_append(log, &ev);
}

int main(int argc, char **argv)
{
	struct audit_log *log = NULL;
	char id[64], line[4096];
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: audit_emit DB WORKSPACE < events\n");
		return 2;
	}
	if (ws_id(argv[1], argv[2], id, sizeof(id)) < 0) {
		fprintf(stderr, "audit_emit: no workspace %s in %s\n", argv[2], argv[1]);
		return 1;
	}
	if (audit_log_open(&log, argv[1], id, argv[2]) < 0) {
		fprintf(stderr, "audit_emit: %s\n", util_err_msg());
		return 1;
	}
	while (rc == 0 && fgets(line, sizeof(line), stdin)) {
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (!strncmp(line, "sleep ", 6)) {
			struct timespec ts = {0, atol(line + 6) * 1000000L};

			nanosleep(&ts, NULL);
		} else if (!strncmp(line, "flush", 5)) {
			rc = audit_log_flush(log);
		} else {
			rc = emit_line(log, line);
		}
	}
	audit_log_close(log);
	if (rc < 0)
		fprintf(stderr, "audit_emit: %s\n", strerror(-rc));
	return rc < 0;
}
