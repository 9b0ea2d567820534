/*
 * fs/record.c: turning file system operations into audit events.
 *
 * Events are built while fs->lock is held (paths come from the node tables) but handed to the
 * recorder only after it is released (fs_unlock): the recorder may read /proc for a process it
 * has not seen, or wait on a full queue, and no other operation should wait for that. A FUSE
 * request runs on one thread from start to reply, so the pending events live in a
 * thread-local list.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"

struct pending {
	struct audit_event ev;
	char *path, *path2;
	struct pending *next;
};

static __thread struct pending *pending_head;

static void queue(struct fs *fs, fuse_req_t req, const struct audit_event *ev, char *path,
		  const char *path2)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p || (path2 && !(p->path2 = strdup(path2)))) {
		/* Out of memory: record on the spot rather than lose the event. */
		struct audit_event now = *ev;

		now.path = path ? path : "";
		now.path2 = path2;
		(void)audit_log_append(fs->audit, &now);
		free(path);
		free(p);
		return;
	}
	p->ev = *ev;
	if (req) {
		p->ev.time_ns = util_now_ns();
		p->ev.pid = fuse_req_ctx(req)->pid;
	}
	p->path = path;
	p->next = pending_head;
	pending_head = p;
}

void fs_unlock(struct fs *fs)
{
	struct pending *list = pending_head, *rev = NULL;

	pending_head = NULL;
	pthread_mutex_unlock(&fs->lock);
	/* Oldest first. */
	while (list) {
		struct pending *next = list->next;

		list->next = rev;
		rev = list;
		list = next;
	}
	while (rev) {
		struct pending *next = rev->next;

		rev->ev.path = rev->path ? rev->path : "";
		rev->ev.path2 = rev->path2;
		(void)audit_log_append(fs->audit, &rev->ev);
		free(rev->path);
		free(rev->path2);
		free(rev);
		rev = next;
	}
}

void fs_record_event(struct fs *fs, const struct audit_event *ev, char *path)
{
	if (fs->audit)
		queue(fs, NULL, ev, path, NULL);
	else
		free(path);
}

void fs_record(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *parent,
	       const char *name, const char *path2, int rc)
{
	struct audit_event ev = {.op = op, .result = -rc, .size = -1};

	if (rc == 0)
		fs_fsmon_note(fs, parent, name);
	if (fs->audit)
		queue(fs, req, &ev, fs_node_path(fs, parent, name), path2);
}

void fs_record_mode(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *parent,
		    const char *name, uint32_t mode, int rc)
{
	struct audit_event ev = {.op = op, .result = -rc, .size = -1, .mode = mode};

	if (rc == 0)
		fs_fsmon_note(fs, parent, name);
	if (fs->audit)
		queue(fs, req, &ev, fs_node_path(fs, parent, name), NULL);
}

void fs_record_node(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *n,
		    const char *path2, int64_t size, uint32_t mode, int rc)
{
	struct audit_event ev = {.op = op, .result = -rc, .size = size, .mode = mode};

	fs_record_flush_node(fs, n); /* earlier writes first */
	if (rc == 0)
		fs_fsmon_note_node(fs, n);
	if (fs->audit)
		queue(fs, req, &ev, fs_node_path(fs, n, NULL), path2);
}

void fs_record_range(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *n,
		     uint32_t mode, off_t off, off_t len, int rc)
{
	struct audit_event ev = {
	    .op = op, .result = -rc, .size = len, .mode = mode, .off_lo = off, .off_hi = off + len};

	fs_record_flush_node(fs, n); /* earlier writes first */
	if (rc == 0)
		fs_fsmon_note_node(fs, n);
	if (fs->audit)
		queue(fs, req, &ev, fs_node_path(fs, n, NULL), NULL);
}

pid_t fs_record_writer(struct fs_node *n, pid_t pid, pid_t fallback)
{
	if (pid > 0) {
		n->last_writer = pid;
		return pid;
	}
	return n->last_writer > 0 ? n->last_writer : fallback;
}

void fs_record_first_write(struct fs *fs, pid_t pid)
{
	/* The writer may be gone by release, when the coalesced event is recorded. */
	audit_log_proc_note(fs->audit, pid);
}

/* The audit event of coalesced writes w (path and time set by the caller). */
static struct audit_event writes_event(const struct fs_wstats *w)
{
	return (struct audit_event){.op = "write",
				    .size = w->bytes,
				    .count = (int64_t)w->count,
				    .off_lo = w->lo,
				    .off_hi = w->hi,
				    .pid = w->pid};
}

void fs_record_writes(struct fs *fs, struct fs_handle *h)
{
	struct audit_event ev = writes_event(&h->w);
	char *path;

	if (!fs->audit)
		return;
	pthread_mutex_lock(&fs->lock);
	path = fs_node_path(fs, h->node, NULL);
	pthread_mutex_unlock(&fs->lock);
	ev.path = path ? path : "";
	ev.time_ns = util_now_ns();
	(void)audit_log_append(fs->audit, &ev);
	free(path);
}

void fs_record_flush_node(struct fs *fs, struct fs_node *n)
{
	struct fs_wpend *w = n ? n->wpend : NULL;
	struct audit_event ev;

	if (!w)
		return;
	ev = writes_event(&w->w);
	ev.time_ns = w->t_first;
	queue(fs, NULL, &ev, fs_node_path(fs, n, NULL), NULL);
	if (w->prev)
		w->prev->next = w->next;
	else
		fs->wdirty = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		fs->wdirty_tail = w->prev;
	n->wpend = NULL;
	free(w);
}

bool fs_record_node_write(struct fs *fs, struct fs_node *n, pid_t pid, off_t off, size_t len)
{
	struct fs_wpend *w = n->wpend;

	if (!fs->audit)
		return false;
	if (w && w->w.pid != pid) {
		fs_record_flush_node(fs, n);
		w = NULL;
	}
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w) {
			/* Out of memory: an event for this write alone rather than none. */
			struct fs_wstats one = {.pid = pid};
			struct audit_event ev;

			fs_wstats_add(&one, off, len);
			ev = writes_event(&one);
			ev.time_ns = util_now_ns();
			queue(fs, NULL, &ev, fs_node_path(fs, n, NULL), NULL);
			return true;
		}
		w->node = n;
		w->w.pid = pid;
		w->t_first = util_now_ns();
		/* Appended: the list stays oldest first, so the sweeper stops at the first young.
		 */
		w->prev = fs->wdirty_tail;
		if (w->prev)
			w->prev->next = w;
		else
			fs->wdirty = w;
		fs->wdirty_tail = w;
		n->wpend = w;
	}
	return fs_wstats_add(&w->w, off, len);
}

void fs_record_sweep(struct fs *fs, int64_t min_age)
{
	int64_t now = util_now_ns();

	while (fs->wdirty && now - fs->wdirty->t_first >= min_age)
		fs_record_flush_node(fs, fs->wdirty->node);
	fs_disk_sweep(fs, min_age);
}

int fs_record_sync(struct fs *fs)
{
	if (!fs->audit)
		return 0;
	pthread_mutex_lock(&fs->lock);
	fs_record_sweep(fs, 0);
	fs_unlock(fs);
	return audit_log_flush(fs->audit);
}
