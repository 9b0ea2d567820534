/*
 * util: small helpers shared by every module: error messages, strings, files, time.
 *
 * Error style (CONVENTIONS.md): functions return 0 or a negative errno; the human message
 * for the last failure on this thread is kept by util_err_set() and read by util_err_msg().
 */
#ifndef ARB_UTIL_H
#define ARB_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define ARB_MUST_CHECK	 __attribute__((warn_unused_result))
#define ARB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define ARB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* ARB_ASAN: built with AddressSanitizer (gcc's __SANITIZE_ADDRESS__, clang's __has_feature).
 * The spawns that share the caller's memory (clone with CLONE_VM: jail/run.c, jail/budget.c,
 * proxy/proc.c) fork instead then: the sanitizer does not know the child's stack. */
#if defined(__SANITIZE_ADDRESS__)
#define ARB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARB_ASAN 1
#endif
#endif

/* Thread-local message for the last failure. Returns rc so callers can `return util_err(...)`. */
int util_err(int rc, const char *fmt, ...) ARB_PRINTF(2, 3);
/* Borrowed; valid until the next util_err() on this thread. Never NULL. */
const char *util_err_msg(void);
void util_err_clear(void);

/* Formatted allocation; NULL on ENOMEM. Caller frees with free(). */
char *util_asprintf(const char *fmt, ...) ARB_PRINTF(1, 2);
char *util_path_join(const char *a, const char *b);
bool util_utf8_valid(const char *s, size_t len);
bool util_str_has_prefix(const char *s, const char *prefix);
/* True when normalised absolute `path` is `dir` or lies below it (component-wise). */
bool util_path_under(const char *path, const char *dir);
/*
 * s as one word for a POSIX shell: unchanged when it holds only plainly safe characters
 * (letters, digits, _-./:=,+@%), else in single quotes ('\'' for a quote). NULL on ENOMEM.
 */
char *util_shell_quote(const char *s);
/*
 * Box-chosen text shown to people (util/quote.c), as git shows paths (core.quotePath=false):
 * util_quote: s itself when nothing in it needs quoting, else s in double quotes with C
 * escapes (\n \t \" \\ ..., other bytes as \ooo octal). Quoted are control characters (C0,
 * DEL, C1), bidirectional overrides and line/paragraph separators (their UTF-8 bytes in
 * octal), bytes that are not UTF-8 (octal), and '"' and '\\'. Other UTF-8 is kept as is. The
 * result never holds a control byte and is valid UTF-8. util_quote_shell: one word of a shell
 * line, util_shell_quote(s) or, when s needs escapes, bash's $'...' with the same escapes.
 * util_quote_text: the escapes only, no quotes (a message that names things in it).
 * All three: NULL on ENOMEM; caller frees.
 * util_unquote: the inverse of util_quote: the bytes (*out, NUL-terminated, length *n, caller
 * frees); -EINVAL when q is not one string util_quote could have written, -ENOMEM.
 * util_json_bytes: s for JSON without losing a byte: a string, {"hex": "..."} (lower-case
 * hex of every byte) when s is not UTF-8, null for NULL; NULL on ENOMEM.
 */
bool util_quote_needed(const char *s, size_t n);
char *util_quote(const char *s);
char *util_quoten(const char *s, size_t n);
char *util_quote_shell(const char *s);
char *util_quote_text(const char *s);
int util_unquote(const char *q, char **out, size_t *n) ARB_MUST_CHECK;
struct json_t *util_json_bytes(const char *s);
/*
 * A session's argv as the audit keeps it (util/argv_json.c: a JSON array of strings holding
 * any bytes) as words, NULL-terminated, every byte kept; NULL when argv_json is not such an
 * array or on ENOMEM. Free with util_words_free.
 */
char **util_argv_words(const char *argv_json);
void util_words_free(char **v);

/*
 * JSONC to JSON in place (util/jsonc.c): // and block comments outside strings become
 * spaces (newlines kept, so a parser's line numbers stay right), and so does a comma
 * before '}' or ']'. Anything else is left for the JSON parser to judge.
 */
void util_jsonc_strip(char *s, size_t len);

/*
 * A growable byte string (util/buf.c), NUL-terminated after each put; free(b.s) when done.
 * util_buf_put: appends n bytes (-ENOMEM with a message). util_buf_put_utf8: appends the
 * UTF-8 encoding of code point cp; -EINVAL (no message: the caller says where) when cp is
 * not a Unicode scalar value.
 */
struct util_buf {
	char *s;
	size_t n, cap;
};
int util_buf_put(struct util_buf *b, const void *data, size_t n) ARB_MUST_CHECK;
int util_buf_put_utf8(struct util_buf *b, unsigned long cp) ARB_MUST_CHECK;

/*
 * A TOML document (util/toml.c) as a JSON object in *out (caller json_decref's): tables are
 * objects, arrays of tables arrays, dates and times strings as written. -EINVAL with
 * "NAME:LINE:COL: message" where the text is not TOML (or not UTF-8), -ENOMEM.
 */
struct json_t;
int util_toml_parse(const char *name, const char *text, size_t len,
		    struct json_t **out) ARB_MUST_CHECK;

/*
 * The first executable regular file `name` in an absolute directory of $PATH, or NULL (also
 * when PATH is unset). Relative PATH entries are skipped: they would depend on the cwd.
 * Caller frees.
 */
char *util_which(const char *name);

/*
 * Host credential files and folders (util/secrets.c: ~/.ssh, ~/.claude/.credentials.json,
 * ~/.codex/auth.json, ~/.npmrc, ~/.cargo/credentials.toml, ...). util_secret_path: the first
 * such path (absolute, under home) that normalised `path` is, lies inside or contains.
 * util_secret_inside: the first such name, taken relative to `dir` instead of $HOME, that
 * exists there (a credential file a tool keeps in its own folder, as ~/.netrc in $HOME).
 * *out (when not NULL) receives a malloc'd copy of the path found; the result says whether.
 */
bool util_secret_path(const char *path, const char *home, char **out);
bool util_secret_inside(const char *dir, char **out);

/* mkdir -p; existing directories are fine. */
int util_mkdir_p(const char *path, mode_t mode) ARB_MUST_CHECK;
/*
 * rm -rf of dirfd/name without following symlinks anywhere below; missing is fine. Stays on
 * one mount: -EXDEV, what is left left, when it meets a mount point (another file system, a
 * bind mount) below, or dirfd/name is one.
 */
int util_rm_rf_at(int dirfd, const char *name);
int util_rm_rf(const char *path);
/*
 * renameat2(RENAME_NOREPLACE) of a directory; where the file system has no rename flags
 * (EINVAL: bindfs and other FUSE file systems built on libfuse's path API), an lstat that
 * finds nothing at new, then a plain renameat: still never over a non-empty directory (the
 * kernel refuses that with ENOTEMPTY), though not atomic against an empty one made between.
 * 0 or -errno (EEXIST when new exists).
 */
int util_rename_dir_noreplace(int olddir, const char *old, int newdir,
			      const char *new) ARB_MUST_CHECK;
/* Whole file into a NUL-terminated buffer. Caller frees *out. */
int util_read_file(const char *path, char **out, size_t *len) ARB_MUST_CHECK;
/* Writes path atomically: a temporary file in the same directory, fsync, rename. */
int util_write_file(const char *path, const void *data, size_t len, mode_t mode) ARB_MUST_CHECK;
/*
 * Writes dirfd/name atomically without following a symlink anywhere: a new temporary file
 * (O_EXCL, random name) in dirfd with exactly `mode` (not masked), owned by uid:gid when
 * uid is not -1 (and the caller may chown), fsync, renameat over name (a symlink at name is
 * replaced, never followed), fsync of the directory.
 */
int util_write_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		       uid_t uid, gid_t gid) ARB_MUST_CHECK;
/* Appends `line` + '\n' to path unless a line equal to it is already there. */
int util_append_line_once(const char *path, const char *line) ARB_MUST_CHECK;
/*
 * Copies src (from its current offset) to dst: a reflink (FICLONE) where the file system
 * shares extents, else copy_file_range, else read/write. Both fds must be regular files.
 */
int util_copy_fd(int dst, int src) ARB_MUST_CHECK;
/* Writes all of buf, retrying on EINTR and short writes. */
int util_write_all(int fd, const void *buf, size_t len) ARB_MUST_CHECK;

int64_t util_now_ns(void);
/* *ts = now on clock plus ms milliseconds: an absolute deadline for timed waits. */
void util_deadline(struct timespec *ts, clockid_t clock, int64_t ms);
/* Formats ns since the epoch as local "YYYY-MM-DD HH:MM:SS" (or ISO 8601 UTC when iso). */
void util_time_format(char *buf, size_t size, int64_t ns, bool iso);

/* True when pid exists and is not a zombie (an exited child nobody reaped yet). */
bool util_pid_alive(pid_t pid);

/* Exit status in shell convention: the code, or 128+N when killed by signal N. */
int util_wait_status_to_exit(int status);

#endif
