/* fs/record.c: turning file system operations into audit events. */
#include "fs/fs_internal.h"

#include <stdlib.h>

#include "audit/audit.h"

static void append(struct fs *fs, fuse_req_t req, struct audit_event *ev)
{
	ev->time_ns = util_now_ns();
	ev->pid = req ? fuse_req_ctx(req)->pid : 0;
	(void)audit_log_append(fs->audit, ev);
}

void fs_record(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *parent,
	       const char *name, const char *path2, int rc)
{
	struct audit_event ev = {.op = op, .path2 = path2, .result = -rc, .size = -1};
	char *path;

	if (!fs->audit)
		return;
	path = fs_node_path(fs, parent, name);
	ev.path = path ? path : name;
	append(fs, req, &ev);
	free(path);
}

void fs_record_node(struct fs *fs, fuse_req_t req, const char *op, struct fs_node *n, int64_t size,
		    uint32_t mode, int rc)
{
	struct audit_event ev = {.op = op, .result = -rc, .size = size, .mode = mode};
	char *path;

	if (!fs->audit)
		return;
	path = fs_node_path(fs, n, NULL);
	ev.path = path ? path : "";
	append(fs, req, &ev);
	free(path);
}

void fs_record_writes(struct fs *fs, struct fs_handle *h)
{
	struct audit_event ev = {.op = "write",
				 .size = h->wbytes,
				 .count = (int64_t)h->nwrites,
				 .off_lo = h->wlo,
				 .off_hi = h->whi};
	char *path;

	if (!fs->audit)
		return;
	pthread_mutex_lock(&fs->lock);
	path = fs_node_path(fs, h->node, NULL);
	pthread_mutex_unlock(&fs->lock);
	ev.path = path ? path : "";
	ev.time_ns = util_now_ns();
	ev.pid = h->wpid;
	(void)audit_log_append(fs->audit, &ev);
	free(path);
}
