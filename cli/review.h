/*
 * cli/review.h: `arborinth review` (cli/cmd_review.c): the loopback web server
 * (cli/review_http.c), its JSON API (cli/review_api.c, cli/review_act.c), the unified diff
 * as structured hunks (cli/review_diff.c) and the comments kept host-side
 * (cli/review_comments.c). Everything here runs on one thread: the server's.
 */
#ifndef ARB_CLI_REVIEW_H
#define ARB_CLI_REVIEW_H
#include <jansson.h>
#include <stddef.h>

#include "include/arborinth.h"

/* What the API handlers reach. */
struct review_ctx {
	arb_project *p;
	const char *exe;    /* this program, for `compare --json` */
	char *const *names; /* the workspaces named on the command line (n 0: all) */
	size_t n;
};

/* One API answer: an HTTP status and a JSON body (owned by the answer). */
struct review_reply {
	unsigned status;
	json_t *body;
};

/*
 * Handles GET (body NULL) or POST `path` (the URL path, "/api/...") with the query
 * string's pairs in q (a JSON object of strings; NULL: none) and the parsed JSON body.
 * Fills r (status 200 and an object, or 4xx/5xx and {"error": "..."}).
 */
void review_api(struct review_ctx *c, int post, const char *path, json_t *q, json_t *body,
		struct review_reply *r);
/* GET /api/timeline: workspace name's sessions from the audit (name NULL: r is filled). */
void review_timeline(struct review_ctx *c, const char *name, struct review_reply *r);
/* GET /api/compare: `arborinth compare --json` of the names (a string or an array). */
void review_compare(struct review_ctx *c, json_t *names, struct review_reply *r);
/* POST /api/action: merge, apply, rewind, delete through the library (cli/review_act.c). */
void review_act(struct review_ctx *c, json_t *body, struct review_reply *r);
/* r := status and {"error": msg}. */
void review_error(struct review_reply *r, unsigned status, const char *msg);

/*
 * A unified diff (git's patch text, n bytes) as {"files": [{"old", "new", "status",
 * "binary", "hunks": [{"header", "old_start", "new_start", "lines": [{"t": " "|"+"|"-",
 * "o", "n", "s"}]}]}]}; text that is not UTF-8 comes as util_json_bytes values. NULL: ENOMEM.
 */
json_t *review_diff_parse(const char *patch, size_t n);

/*
 * The comments on workspace ws (its id keys them), kept in the project's state folder, which
 * no box sees: review/ID.json. load: a new array (empty when none); add: appends a checked
 * comment {path, line_start, line_end, side, hunk, text} and sets its "id"; del: removes the
 * comment with that id (-ENOENT when none); clear: removes them all. Negative errno, with
 * util_err set.
 */
int review_comments_load(json_t **out, arb_project *p, arb_workspace *ws);
int review_comment_add(arb_project *p, arb_workspace *ws, json_t *comment);
int review_comment_del(arb_project *p, arb_workspace *ws, json_int_t id);
int review_comments_clear(arb_project *p, arb_workspace *ws);
/*
 * The one message the comments make for the agent: text (caller frees; NULL when there are
 * no comments) or JSON ({"workspace", "comments": [...]}, caller json_decref's).
 */
char *review_message(const char *ws_name, json_t *comments);
json_t *review_message_json(const char *ws_name, json_t *comments);
/* For the launchers' --review: the message for workspace `name` (NULL: none), -errno. */
int review_message_for(char **out, arb_project *p, const char *name);

/* The server: serves until SIGINT/SIGTERM; prints the URL (with the token) on stdout. */
struct review_opts {
	unsigned port; /* 0: a random one */
	int open;      /* run xdg-open on the URL */
};
int review_serve(struct review_ctx *c, const struct review_opts *o);
#endif
