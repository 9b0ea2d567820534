/*
 * core/diff_print.c: `arborinth diff --name-status` and `--stat` as git prints them, with every
 * path quoted as git quotes it (util_quote): a name the box chose cannot break a line or move
 * the cursor. The patch format is libgit2's, which quotes the paths of its headers itself;
 * its lines' content is escaped only on a terminal (ckpt_patch_line).
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ckpt_name_status_print(git_diff *diff, FILE *f)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < git_diff_num_deltas(diff); i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		char *old = util_quote(d->old_file.path), *new = util_quote(d->new_file.path);

		rc = old && new ? 0 : -ENOMEM;
		/* A rename or copy with its similarity and both paths. */
		if (rc == 0 && (d->status == GIT_DELTA_RENAMED || d->status == GIT_DELTA_COPIED))
			fprintf(f, "%c%03u\t%s\t%s\n", git_diff_status_char(d->status),
				d->similarity, old, new);
		else if (rc == 0)
			fprintf(f, "%c\t%s\n", git_diff_status_char(d->status), new);
		free(old);
		free(new);
	}
	return rc;
}

/* git's colours (color.diff.*'s defaults). */
#define C_META "\033[1m"
#define C_FRAG "\033[36m"
#define C_NEW  "\033[32m"
#define C_OLD  "\033[31m"
#define C_END  "\033[m"

static const char *line_color(char origin)
{
	switch (origin) {
	case GIT_DIFF_LINE_FILE_HDR:
		return C_META;
	case GIT_DIFF_LINE_HUNK_HDR:
		return C_FRAG;
	case GIT_DIFF_LINE_ADDITION:
		return C_NEW;
	case GIT_DIFF_LINE_DELETION:
		return C_OLD;
	default:
		return NULL;
	}
}

/* s[0..n) as it is, or escaped but for tabs (terminal). */
static void put_text(const struct ckpt_patch_out *out, const char *s, size_t n)
{
	if (!out->terminal) {
		fwrite(s, 1, n, out->f);
		return;
	}
	for (size_t i = 0, end; i <= n; i = end + 1) {
		char *raw, *safe;

		for (end = i; end < n && s[end] != '\t'; end++)
			;
		raw = strndup(s + i, end - i);
		safe = raw ? util_quote_text(raw) : NULL;
		fputs(safe ? safe : "?", out->f);
		if (end < n)
			fputc('\t', out->f);
		free(raw);
		free(safe);
	}
}

int ckpt_patch_line(const git_diff_delta *d, const git_diff_hunk *h, const git_diff_line *l,
		    void *payload)
{
	const struct ckpt_patch_out *out = payload;
	bool content = l->origin == GIT_DIFF_LINE_CONTEXT || l->origin == GIT_DIFF_LINE_ADDITION ||
		       l->origin == GIT_DIFF_LINE_DELETION;
	const char *color = out->color ? line_color(l->origin) : NULL;
	size_t n = l->content_len;

	(void)d;
	(void)h;
	if (!out->terminal && !color) {
		if (content)
			fputc(l->origin, out->f);
		fwrite(l->content, 1, l->content_len, out->f);
		return 0;
	}
	/* Line by line (a file header is several), each in its colour, the line end outside. */
	for (size_t i = 0, end; i < n || (i == 0 && n == 0); i = end + 1) {
		for (end = i; end < n && l->content[end] != '\n'; end++)
			;
		if (color)
			fputs(color, out->f);
		if (content && i == 0)
			fputc(l->origin, out->f);
		put_text(out, l->content + i, end - i);
		if (color)
			fputs(C_END, out->f);
		if (end < n)
			fputc('\n', out->f);
		if (n == 0)
			break;
	}
	return 0;
}

struct stat_line {
	char *name; /* as shown: quoted, "old => new" for a rename */
	size_t add, del;
	bool binary;
	int64_t old_size, new_size;
};

/* Length of the directory part old and new share ("a/b/" of a/b/x and a/b/y), as git. */
static size_t common_dirlen(const char *a, const char *b)
{
	size_t n = 0;

	for (size_t i = 0; a[i] && a[i] == b[i]; i++)
		if (a[i] == '/')
			n = i + 1;
	return n;
}

/* What one delta's line shows as its name. */
static char *stat_name(const git_diff_delta *d)
{
	const char *a = d->old_file.path, *b = d->new_file.path;
	char *qa, *qb, *out;
	size_t dir;

	if (!a || !strcmp(a, b))
		return util_quote(b);
	dir = common_dirlen(a, b);
	if (dir && !util_quote_needed(a, strlen(a)) && !util_quote_needed(b, strlen(b)))
		return util_asprintf("%.*s{%s => %s}", (int)dir, a, a + dir, b + dir);
	qa = util_quote(a);
	qb = util_quote(b);
	out = qa && qb ? util_asprintf("%s => %s", qa, qb) : NULL;
	free(qa);
	free(qb);
	return out;
}

struct stat_walk {
	git_diff *diff;
	struct stat_line *l;
	size_t n;
};

/*
 * Per line of the patch (libgit2 loads only what git_diff_print does): counts each delta's
 * added and removed lines and learns whether it is binary. Deltas come in order.
 */
static int stat_count(const git_diff_delta *d, const git_diff_hunk *h, const git_diff_line *line,
		      void *payload)
{
	struct stat_walk *w = payload;
	size_t i = 0;

	(void)h;
	while (i < w->n && git_diff_get_delta(w->diff, i) != d)
		i++;
	for (size_t k = 0; i == w->n && k < w->n; k++)
		if (!strcmp(git_diff_get_delta(w->diff, k)->new_file.path, d->new_file.path) &&
		    !strcmp(git_diff_get_delta(w->diff, k)->old_file.path, d->old_file.path))
			i = k;
	if (i == w->n)
		return 0;
	w->l[i].binary = d->flags & GIT_DIFF_FLAG_BINARY;
	w->l[i].old_size = (int64_t)d->old_file.size;
	w->l[i].new_size = (int64_t)d->new_file.size;
	if (line->origin == GIT_DIFF_LINE_ADDITION)
		w->l[i].add++;
	else if (line->origin == GIT_DIFF_LINE_DELETION)
		w->l[i].del++;
	return 0;
}

static int digits(size_t v)
{
	int n = 1;

	for (; v >= 10; v /= 10)
		n++;
	return n;
}

/* The lines, scaled to a width of 80 columns as libgit2 scales them. */
static void stat_lines_print(const struct stat_line *l, size_t n, bool color, FILE *f)
{
	size_t max_name = 0, max_stat = 0, width = 80;
	int w_digits;

	for (size_t i = 0; i < n; i++) {
		max_name = strlen(l[i].name) > max_name ? strlen(l[i].name) : max_name;
		max_stat = l[i].add + l[i].del > max_stat ? l[i].add + l[i].del : max_stat;
	}
	w_digits = digits(max_stat + 1);
	if (width > max_name + (size_t)w_digits + 5)
		width -= max_name + (size_t)w_digits + 5;
	width = width < 7 ? 7 : width;
	width = width > max_stat ? 0 : width;
	for (size_t i = 0; i < n; i++) {
		size_t total = l[i].add + l[i].del, plus = l[i].add, minus = l[i].del;

		fprintf(f, " %s%*s | ", l[i].name, (int)(max_name - strlen(l[i].name)), "");
		if (l[i].binary) {
			fprintf(f, "Bin %lld -> %lld bytes\n", (long long)l[i].old_size,
				(long long)l[i].new_size);
			continue;
		}
		fprintf(f, "%*zu", w_digits, total);
		if (total && width) {
			size_t full = (total * width + max_stat / 2) / max_stat;

			/* As git: a side that changed shows at least one mark, one that did not
			 * none. */
			plus = full * l[i].add / total;
			minus = full - plus;
			plus = l[i].add && !plus ? 1 : plus;
			minus = !l[i].del ? 0 : minus ? minus : 1;
		}
		if (total)
			fputc(' ', f);
		if (color && plus)
			fputs(C_NEW, f);
		for (size_t k = 0; total && k < plus; k++)
			fputc('+', f);
		if (color && minus)
			fputs(plus ? C_END C_OLD : C_OLD, f);
		for (size_t k = 0; total && k < minus; k++)
			fputc('-', f);
		if (color && (plus || minus))
			fputs(C_END, f);
		fputc('\n', f);
	}
}

int ckpt_stat_print(git_diff *diff, bool color, FILE *f)
{
	size_t n = git_diff_num_deltas(diff);
	struct stat_line *l = calloc(n ? n : 1, sizeof(*l));
	git_diff_stats *stats = NULL;
	git_buf buf = {0};
	int rc = l ? 0 : -ENOMEM;

	struct stat_walk w = {diff, l, n};

	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = (l[i].name = stat_name(git_diff_get_delta(diff, i))) ? 0 : -ENOMEM;
	if (rc == 0 && git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, stat_count, &w) < 0)
		rc = util_err(-EIO, "diff: %s", git_error_last()->message);
	/* The closing line names no path: libgit2's. */
	if (rc == 0 && (git_diff_get_stats(&stats, diff) < 0 ||
			git_diff_stats_to_buf(&buf, stats, GIT_DIFF_STATS_SHORT, 0) < 0))
		rc = util_err(-EIO, "diff: %s", git_error_last()->message);
	if (rc == 0 && n > 0) { /* as git: nothing for no change */
		stat_lines_print(l, n, color, f);
		fwrite(buf.ptr, 1, buf.size, f);
	}
	for (size_t i = 0; l && i < n; i++)
		free(l[i].name);
	free(l);
	git_buf_dispose(&buf);
	git_diff_stats_free(stats);
	return rc;
}

int ckpt_diff_files_fill(git_diff *diff, struct core_diff_file *v, size_t n)
{
	struct stat_line *l = calloc(n ? n : 1, sizeof(*l));
	struct stat_walk w = {diff, l, n};
	int rc = l ? 0 : util_err(-ENOMEM, "out of memory");

	if (rc == 0 && git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, stat_count, &w) < 0)
		rc = util_err(-EIO, "diff: %s", git_error_last()->message);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		bool two = d->status == GIT_DELTA_RENAMED || d->status == GIT_DELTA_COPIED;

		v[i].status = git_diff_status_char(d->status);
		v[i].binary = l[i].binary;
		v[i].insertions = l[i].add;
		v[i].deletions = l[i].del;
		v[i].path = strdup(d->new_file.path);
		v[i].old_path = two ? strdup(d->old_file.path) : NULL;
		if (!v[i].path || (two && !v[i].old_path))
			rc = util_err(-ENOMEM, "out of memory");
	}
	free(l);
	return rc;
}
