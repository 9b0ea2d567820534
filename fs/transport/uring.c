/*
 * fs/transport/uring.c: FUSE over io_uring (kernel 6.14+, protocol 7.42) under libfuse 3.14.
 *
 * A request the daemon answers costs two wake-ups: the caller's thread wakes a daemon
 * thread, which later wakes the caller. Over /dev/fuse any daemon thread may take the
 * request, usually on the other CPU, and on this kind of VM a cross-CPU wake-up (an IPI)
 * is most of a round trip: a statfs through the view took 25 us with the daemon free to
 * run anywhere and 10.5 us with daemon and caller on one CPU. Over io_uring the kernel puts
 * a request on the queue of the CPU its caller runs on (task_cpu), and each queue here has
 * its threads pinned to that CPU, so the hand-off stays on the CPU, and the reply and the
 * wait for the next request are one io_uring_enter instead of a write and a read.
 *
 * libfuse 3.14 knows nothing of the ring, so this file is the transport around it:
 * - INIT (devio.c): when the kernel offers FUSE_OVER_IO_URING and one io_uring per queue
 *   could be made, the reply asks for it; after the reply each queue's thread registers
 *   its entries (FUSE_IO_URING_CMD_REGISTER). The kernel switches to the ring once every
 *   queue has one, and turns io_uring off by itself if a registration fails.
 * - A request arrives in an entry as three parts: fuse_in_header, the operation's own
 *   header (op_in) and the payload. The payload buffer is registered right after a staging
 *   area, so the two headers copied in front of it make the message libfuse reads from
 *   /dev/fuse, and fuse_session_process_buf() runs the operation without copying the
 *   payload. The operation's header size is what the in-header's length leaves after the
 *   payload.
 * - libfuse writes the reply through devio.c's writev (or splice) hook, which hands it here
 *   when this thread serves a ring request with that unique id: header into the entry's
 *   header, the rest into its payload. The loop then commits it and fetches the next
 *   request in one submission (COMMIT_AND_FETCH).
 * - Still over /dev/fuse: FORGET, INTERRUPT, and the daemon's notifications (unique 0);
 *   libfuse's own loop keeps reading the device for them.
 * The operations must answer before they return (all of fs/ does): an entry whose request
 * got no answer is answered EIO, so the kernel never waits on it.
 */
#include "fs/fs_internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <liburing.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

/* Protocol 7.42 (Debian 12's <linux/fuse.h> is 7.38). */
#define UR_INIT_FLAG2	(1u << 9) /* FUSE_OVER_IO_URING, 1ULL << 41 */
#define UR_CMD_REGISTER 1	  /* FUSE_IO_URING_CMD_REGISTER */
#define UR_CMD_COMMIT	2	  /* FUSE_IO_URING_CMD_COMMIT_AND_FETCH */
#define UR_IN_OUT_SZ	128	  /* FUSE_URING_IN_OUT_HEADER_SZ */
#define UR_OP_IN_SZ	128	  /* FUSE_URING_OP_IN_OUT_SZ */

struct ur_ent_in_out { /* struct fuse_uring_ent_in_out */
	uint64_t flags;
	uint64_t commit_id;
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

struct ur_req_header { /* struct fuse_uring_req_header */
	char in_out[UR_IN_OUT_SZ];
	char op_in[UR_OP_IN_SZ];
	struct ur_ent_in_out ent;
};

struct ur_cmd_req { /* struct fuse_uring_cmd_req, in the SQE's command area */
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

/* Byte offsets in INIT's reply (fuse_init_out). */
#define UR_OFF_MAX_WRITE 20
#define UR_OFF_MAX_PAGES 28
#define UR_MIN_PAYLOAD	 8192 /* FUSE_MIN_READ_BUFFER */
#define UR_WHY_OFF	 "io_uring is off: /sys/module/fuse/parameters/enable_uring is 0"

#define UR_STAGE 4096 /* room for the two headers in front of the payload */
/*
 * Each CPU's queue is served by UR_THREADS threads pinned to that CPU, one entry each: a
 * thread blocked in a slow request (an fsync, a read from disk) leaves the CPU's next
 * requests to the others, and a busy thread holds no entry a request could wait in. The
 * queues of the possible CPUs this process may not run on (the kernel requires them all;
 * a VM may report 256 possible CPUs and have 4) share one unpinned thread, an entry each.
 */
#define UR_THREADS 4
#define UR_STOP	   ((uint64_t)-1) /* user_data of the eventfd poll that ends a loop */

struct ur_ent {
	struct ur_queue *q;
	unsigned qid;		   /* the CPU queue it is registered on */
	bool registered;	   /* the kernel took it */
	struct ur_req_header *hdr; /* registered header buffer (page-aligned) */
	char *area;		   /* UR_STAGE bytes, then the registered payload */
	uint64_t unique;	   /* request being served */
	uint64_t commit_id;
	bool replied;
	int cmd; /* the command to resubmit after EINTR/EAGAIN */
	struct iovec iov[2];
};

struct ur_queue { /* one thread, its io_uring and its entries */
	struct fs_ring *ring;
	int cpu; /* pinned to this CPU; -1: the shared thread of the other CPUs' queues */
	unsigned id;
	pthread_t tid;
	bool thread;
	struct io_uring uring;
	bool uring_ok;
	int evfd;
	unsigned nent;
	struct ur_ent *ent;
};

struct fs_ring {
	struct fs *fs;
	unsigned ncpu; /* queues: one per possible CPU */
	unsigned nq;   /* threads */
	size_t payload_sz;
	size_t hdr_sz;
	struct ur_queue *q;
	unsigned *qid_ok; /* per queue: entries the kernel took */
	pthread_mutex_t lock;
	pthread_cond_t cv;
	unsigned reported; /* threads done registering (or failed to) */
	int refused;	   /* -errno of a refused registration, 0: none */
};

/* The ring entry whose request this thread is serving (NULL: not a ring thread, or idle). */
static __thread struct ur_ent *cur;

/*
 * Queues the kernel makes: num_possible_cpus(), a count ("0-3,8-11" is 8); a caller on CPU
 * n uses queue n (below the count; else queue 0).
 */
static unsigned possible_cpus(void)
{
	char buf[256] = {0};
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	unsigned n = 0;
	char *p = buf;

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	while (*p >= '0' && *p <= '9') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (b >= a)
			n += (unsigned)(b - a + 1);
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

void fs_ring_peek_init(struct fs *fs, uint32_t flags2)
{
	FILE *f;

	fs->ur_offered = flags2 & UR_INIT_FLAG2;
	if (fs->ur_offered)
		return;
	f = fopen("/sys/module/fuse/parameters/enable_uring", "re");
	fs->ur_why = f ? UR_WHY_OFF : "io_uring unavailable: this kernel has no FUSE over io_uring";
	if (f)
		fclose(f);
}

static void *map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void ring_free(struct fs_ring *r)
{
	if (!r)
		return;
	for (unsigned i = 0; r->q && i < r->nq; i++) {
		struct ur_queue *q = &r->q[i];

		if (q->uring_ok)
			io_uring_queue_exit(&q->uring);
		if (q->evfd >= 0)
			close(q->evfd);
		for (unsigned e = 0; q->ent && e < q->nent; e++) {
			if (q->ent[e].hdr)
				munmap(q->ent[e].hdr, r->hdr_sz);
			if (q->ent[e].area)
				munmap(q->ent[e].area, UR_STAGE + r->payload_sz);
		}
		free(q->ent);
	}
	free(r->q);
	free(r->qid_ok);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cv);
	free(r);
}

/* One thread's io_uring (the device as its one registered file) and entries. */
static int queue_make(struct fs_ring *r, struct ur_queue *q, int devfd)
{
	struct io_uring_params p = {.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE,
				    .cq_entries = 2 * (q->nent + 1)};
	int rc;

	q->evfd = eventfd(0, EFD_CLOEXEC);
	if (q->evfd < 0)
		return -errno;
	rc = io_uring_queue_init_params(q->nent + 1, &q->uring, &p);
	if (rc < 0)
		return rc;
	q->uring_ok = true;
	rc = io_uring_register_files(&q->uring, &devfd, 1);
	if (rc < 0)
		return rc;
	for (unsigned e = 0; e < q->nent; e++) {
		struct ur_ent *ent = &q->ent[e];

		ent->q = q;
		ent->hdr = map(r->hdr_sz);
		ent->area = map(UR_STAGE + r->payload_sz);
		if (!ent->hdr || !ent->area)
			return -ENOMEM;
		ent->iov[0] = (struct iovec){ent->hdr, r->hdr_sz};
		ent->iov[1] = (struct iovec){ent->area + UR_STAGE, r->payload_sz};
	}
	return 0;
}

static bool may_run_on(const cpu_set_t *mine, unsigned c)
{
	return c < CPU_SETSIZE && CPU_ISSET(c, mine);
}

/* The threads: UR_THREADS pinned ones per CPU this process may run on, one for the rest. */
static int queues_plan(struct fs_ring *r)
{
	cpu_set_t mine;
	unsigned mine_n = 0, other_n = 0;

	if (sched_getaffinity(0, sizeof(mine), &mine) < 0)
		CPU_ZERO(&mine);
	for (unsigned c = 0; c < r->ncpu; c++) {
		if (may_run_on(&mine, c))
			mine_n++;
		else
			other_n++;
	}
	r->qid_ok = calloc(r->ncpu ? r->ncpu : 1, sizeof(*r->qid_ok));
	r->q = calloc(mine_n * UR_THREADS + 1, sizeof(*r->q));
	if (!r->q || !r->qid_ok)
		return -ENOMEM;
	for (unsigned c = 0; c < r->ncpu; c++) {
		if (!may_run_on(&mine, c))
			continue;
		for (unsigned t = 0; t < UR_THREADS; t++) {
			struct ur_queue *q = &r->q[r->nq];

			q->ent = calloc(1, sizeof(*q->ent));
			if (!q->ent)
				return -ENOMEM;
			q->ring = r;
			q->id = r->nq++;
			q->cpu = (int)c;
			q->evfd = -1;
			q->nent = 1;
			q->ent[0].qid = c;
		}
	}
	if (other_n) {
		struct ur_queue *q = &r->q[r->nq];

		q->ent = calloc(other_n, sizeof(*q->ent));
		if (!q->ent)
			return -ENOMEM;
		q->ring = r;
		q->id = r->nq++;
		q->cpu = -1;
		q->evfd = -1;
		for (unsigned c = 0; c < r->ncpu; c++)
			if (!may_run_on(&mine, c))
				q->ent[q->nent++].qid = c;
	}
	return 0;
}

void fs_ring_patch_init(struct fs *fs, void *init_out)
{
	struct fs_ring *r;
	size_t payload, pages;
	long page = sysconf(_SC_PAGESIZE);
	int rc = 0;

	if (!fs->ur_offered)
		return;
	if (!init_out) {
		fs->ur_why = "io_uring unused: an INIT reply it could not read";
		return;
	}
	/* The kernel's max_payload_sz: max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages). */
	payload = fs_msg_get32(init_out, UR_OFF_MAX_WRITE);
	pages = fs_msg_get32(init_out, UR_OFF_MAX_PAGES) & 0xffff;
	if (payload < pages * (size_t)page)
		payload = pages * (size_t)page;
	if (payload < UR_MIN_PAYLOAD)
		payload = UR_MIN_PAYLOAD;

	r = calloc(1, sizeof(*r));
	if (!r) {
		fs->ur_why = "io_uring unused: out of memory";
		return;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->fs = fs;
	r->ncpu = possible_cpus();
	r->payload_sz = (payload + (size_t)page - 1) / (size_t)page * (size_t)page;
	r->hdr_sz =
	    ((sizeof(struct ur_req_header) + (size_t)page - 1) / (size_t)page) * (size_t)page;
	rc = r->ncpu ? queues_plan(r) : -ENOENT;
	/* Every io_uring is made before INIT asks for the ring: once asked, the kernel holds
	 * requests until each queue has an entry or a registration fails. */
	for (unsigned i = 0; rc == 0 && i < r->nq; i++)
		rc = queue_make(r, &r->q[i], fuse_session_fd(fs->se));
	if (rc < 0) {
		/* EPERM: kernel.io_uring_disabled; ENOSYS: a kernel without io_uring */
		fs->ur_why = rc == -EPERM    ? "io_uring unused: this process may not use io_uring"
			     : rc == -ENOSYS ? "io_uring unused: this kernel has no io_uring"
					     : "io_uring unused: its rings could not be made";
		ring_free(r);
		return;
	}
	fs_msg_put32(init_out, FS_INIT_OUT_FLAGS2,
		     fs_msg_get32(init_out, FS_INIT_OUT_FLAGS2) | UR_INIT_FLAG2);
	fs->ring = r;
}

/* A cleared 128-byte SQE. The SQ holds one per entry and the eventfd poll, so it is never
 * full; if it were, what is queued is submitted first. */
static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(ring)))
		(void)io_uring_submit(ring);
	memset(sqe, 0, 2 * sizeof(*sqe));
	return sqe;
}

/* An SQE carrying FUSE ring command cmd on the device (registered file 0). */
static struct io_uring_sqe *get_cmd_sqe(struct io_uring *ring, int cmd)
{
	struct io_uring_sqe *sqe = get_sqe(ring);

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->fd = 0;
	sqe->cmd_op = (uint32_t)cmd;
	return sqe;
}

static void prep_cmd(struct ur_queue *q, struct ur_ent *ent, int cmd)
{
	struct io_uring_sqe *sqe = get_cmd_sqe(&q->uring, cmd);
	struct ur_cmd_req *req;

	io_uring_sqe_set_data(sqe, ent);
	req = (struct ur_cmd_req *)sqe->cmd;
	req->qid = (uint16_t)ent->qid;
	if (cmd == UR_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)ent->iov;
		sqe->len = 2;
	} else {
		req->commit_id = ent->commit_id;
	}
	ent->cmd = cmd;
}

/* A request in ent: the message libfuse expects, assembled in front of the payload. */
static void serve(struct fs_ring *r, struct ur_ent *ent)
{
	struct ur_req_header *h = ent->hdr;
	uint32_t in_len = fs_msg_get32(h->in_out, 0), payload = h->ent.payload_sz;
	uint32_t op_len;
	char *msg;

	memcpy(&ent->unique, h->in_out + FS_MSG_UNIQUE, sizeof(ent->unique));
	ent->commit_id = h->ent.commit_id;
	ent->replied = false;
	if (in_len < FS_MSG_IN_HEADER + (uint64_t)payload || payload > r->payload_sz ||
	    in_len - FS_MSG_IN_HEADER - payload > UR_OP_IN_SZ) {
		fprintf(stderr, "arborinth-fs: a ring request of %u bytes with %u of payload\n",
			in_len, payload);
		goto out;
	}
	op_len = in_len - FS_MSG_IN_HEADER - payload;
	msg = ent->area + UR_STAGE - op_len - FS_MSG_IN_HEADER;
	memcpy(msg, h->in_out, FS_MSG_IN_HEADER);
	memcpy(msg + FS_MSG_IN_HEADER, h->op_in, op_len);
	cur = ent;
	fuse_session_process_buf(r->fs->se, &(struct fuse_buf){.mem = msg, .size = in_len});
	cur = NULL;
out:
	if (!ent->replied) { /* never leave the kernel waiting on an entry */
		int32_t err = -EIO;

		fs_msg_put32(h->in_out, 0, FS_MSG_OUT_HEADER);
		memcpy(h->in_out + 4, &err, sizeof(err));
		memcpy(h->in_out + FS_MSG_UNIQUE, &ent->unique, sizeof(ent->unique));
		h->ent.payload_sz = 0;
	}
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Registers the thread's entries. A refusal comes back at once (the command is issued
 * inline): the entry stays out; EAGAIN (INIT not settled yet) is tried again. 0, or -errno
 * when nothing could be submitted.
 */
static int register_entries(struct ur_queue *q)
{
	struct fs_ring *r = q->ring;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	unsigned pending = q->nent;
	int rc = 0;

	for (unsigned e = 0; e < q->nent; e++)
		prep_cmd(q, &q->ent[e], UR_CMD_REGISTER);
	sqe = get_sqe(&q->uring);
	io_uring_prep_poll_add(sqe, q->evfd, POLLIN);
	io_uring_sqe_set_data64(sqe, UR_STOP);
	for (int tries = 0; pending && tries < 100; tries++) {
		rc = io_uring_submit(&q->uring);
		if (rc < 0)
			return rc;
		pending = 0;
		while (io_uring_peek_cqe(&q->uring, &cqe) == 0) {
			struct ur_ent *ent = io_uring_cqe_get_data(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(&q->uring, cqe);
			if (cqe->user_data == UR_STOP || !ent)
				continue;
			if (res == -EAGAIN || res == -EINTR) {
				prep_cmd(q, ent, UR_CMD_REGISTER);
				pending++;
			} else if (res < 0) {
				ent->registered = false;
				ent->cmd = -1;
				pthread_mutex_lock(&r->lock);
				if (!r->refused)
					r->refused = res;
				pthread_mutex_unlock(&r->lock);
			}
		}
	}
	for (unsigned e = 0; e < q->nent; e++) {
		if (q->ent[e].cmd != UR_CMD_REGISTER)
			continue;
		q->ent[e].registered = true;
		pthread_mutex_lock(&r->lock);
		r->qid_ok[q->ent[e].qid]++;
		pthread_mutex_unlock(&r->lock);
	}
	return 0;
}

/* The connection cannot go on without this thread: the daemon stops (and the view with it). */
static void give_up(struct fs_ring *r, const char *what, int err)
{
	fprintf(stderr, "arborinth-fs: ring: %s: %s; stopping\n", what, strerror(err));
	fuse_session_exit(r->fs->se);
	/* libfuse's loop waits on a semaphore its signal handler posts */
	kill(getpid(), SIGTERM);
}

static void *queue_loop(void *arg)
{
	struct ur_queue *q = arg;
	struct fs_ring *r = q->ring;
	bool done = false;
	char name[16];
	int rc;

	snprintf(name, sizeof(name), q->cpu >= 0 ? "arb-ring%d" : "arb-ring-rest", q->cpu);
	(void)pthread_setname_np(pthread_self(), name);
	pin(q->cpu);
	rc = register_entries(q);
	pthread_mutex_lock(&r->lock);
	r->reported++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->lock);
	if (rc < 0)
		return NULL;

	while (!done) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;

		rc = io_uring_submit_and_wait(&q->uring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
			give_up(r, "waiting for requests", -rc);
			break;
		}
		io_uring_for_each_cqe(&q->uring, head, cqe)
		{
			struct ur_ent *ent = io_uring_cqe_get_data(cqe);

			n++;
			if (cqe->user_data == UR_STOP) {
				done = true; /* the rest of this batch is still answered */
				continue;
			}
			if (cqe->res == -EINTR || cqe->res == -EAGAIN) {
				prep_cmd(q, ent, ent->cmd);
				continue;
			}
			if (cqe->res < 0) {
				/* ENOTCONN, ECANCELED, ECONNABORTED: the view is gone. Anything
				 * else leaves this entry's requests unanswered. */
				int err = -cqe->res;

				if (err != ENOTCONN && err != ECANCELED && err != ECONNABORTED)
					give_up(r, "an entry's command failed", err);
				done = true;
				continue;
			}
			serve(r, ent);
			prep_cmd(q, ent, UR_CMD_COMMIT);
		}
		io_uring_cq_advance(&q->uring, n);
	}
	(void)io_uring_submit(&q->uring); /* the answers of the last batch */
	return NULL;
}

/* Turns io_uring off for the connection: a registration without buffers, which the kernel
 * refuses and answers by using /dev/fuse. Through a ring of its own, with nothing else in
 * its queue. */
static void ring_refuse(struct fs *fs)
{
	struct io_uring_params p = {.flags = IORING_SETUP_SQE128};
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	int devfd = fuse_session_fd(fs->se);

	if (io_uring_queue_init_params(2, &ring, &p) < 0)
		return;
	if (io_uring_register_files(&ring, &devfd, 1) == 0) {
		(void)get_cmd_sqe(&ring, UR_CMD_REGISTER); /* no iovecs: refused */
		if (io_uring_submit_and_wait(&ring, 1) >= 0 && io_uring_peek_cqe(&ring, &cqe) == 0)
			io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
}

int fs_ring_start(struct fs *fs)
{
	struct fs_ring *r = fs->ring;
	unsigned started = 0, missing = 0;

	if (!r)
		return 0;
	for (unsigned i = 0; i < r->nq; i++) {
		if (pthread_create(&r->q[i].tid, NULL, queue_loop, &r->q[i]) == 0) {
			r->q[i].thread = true;
			started++;
		}
	}
	pthread_mutex_lock(&r->lock);
	while (r->reported < started)
		pthread_cond_wait(&r->cv, &r->lock);
	for (unsigned c = 0; c < r->ncpu; c++)
		missing += r->qid_ok[c] == 0;
	pthread_mutex_unlock(&r->lock);
	if (!missing)
		return 0; /* every queue has an entry: the kernel uses the ring */
	/*
	 * Some queue has none, so the kernel would hold every request: it is told to use
	 * /dev/fuse (it did by itself if it refused a registration), and the caller stops the
	 * threads.
	 */
	ring_refuse(fs);
	fs->ur_why = r->refused == -EOPNOTSUPP ? UR_WHY_OFF
		     : r->refused ? "io_uring unused: the kernel refused the ring's entries"
				  : "io_uring unused: a queue's thread could not start";
	return -EAGAIN;
}

unsigned fs_ring_queues(const struct fs *fs)
{
	return fs->ring ? fs->ring->ncpu : 0;
}

void fs_ring_stop(struct fs *fs)
{
	struct fs_ring *r = fs->ring;

	if (!r)
		return;
	for (unsigned i = 0; i < r->nq; i++) {
		uint64_t one = 1;

		if (!r->q[i].thread)
			continue;
		(void)!write(r->q[i].evfd, &one, sizeof(one));
		pthread_join(r->q[i].tid, NULL);
	}
	ring_free(r);
	fs->ring = NULL;
}

bool fs_ring_serving(void)
{
	return cur != NULL;
}

/* The reply to the request this thread serves goes into its entry. */
ssize_t fs_ring_reply(const struct iovec *iov, int count)
{
	struct ur_ent *ent = cur;
	struct fs_ring *r;
	char *dst;
	size_t total = 0, hdr = 0, payload = 0;
	uint64_t unique;

	if (!ent || count < 1 || iov[0].iov_len < FS_MSG_OUT_HEADER)
		return FS_RING_NOT_MINE;
	memcpy(&unique, (const char *)iov[0].iov_base + FS_MSG_UNIQUE, sizeof(unique));
	if (unique != ent->unique || ent->replied)
		return FS_RING_NOT_MINE; /* a notification (unique 0) */
	r = ent->q->ring;
	for (int i = 0; i < count; i++)
		total += iov[i].iov_len;
	if (total - FS_MSG_OUT_HEADER > r->payload_sz) {
		errno = EINVAL;
		return -1; /* serve() answers EIO */
	}
	memcpy(ent->hdr->in_out, iov[0].iov_base, FS_MSG_OUT_HEADER);
	dst = ent->area + UR_STAGE;
	for (int i = 0; i < count; i++) {
		const char *src = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		if (hdr < FS_MSG_OUT_HEADER) { /* the header's part of this iovec */
			size_t h = FS_MSG_OUT_HEADER - hdr < len ? FS_MSG_OUT_HEADER - hdr : len;

			hdr += h;
			src += h;
			len -= h;
		}
		memmove(dst + payload, src, len);
		payload += len;
	}
	ent->hdr->ent.payload_sz = (uint32_t)payload;
	ent->replied = true;
	return (ssize_t)total;
}

/* Reads exactly len bytes from fd into buf. */
static int read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

/*
 * The same for a message libfuse spliced into a pipe (len bytes, a reply with file data):
 * read out of the pipe into the entry when it answers this thread's request, else (a
 * spliced notification) written to /dev/fuse.
 */
ssize_t fs_ring_reply_pipe(int pipefd, size_t len)
{
	struct ur_ent *ent = cur;
	char head[FS_MSG_OUT_HEADER] = {0};
	uint64_t unique;

	if (!ent || len < FS_MSG_OUT_HEADER || len - FS_MSG_OUT_HEADER > ent->q->ring->payload_sz) {
		errno = EINVAL;
		return -1;
	}
	if (read_all(pipefd, head, FS_MSG_OUT_HEADER) < 0)
		return -1;
	memcpy(&unique, head + FS_MSG_UNIQUE, sizeof(unique));
	if (unique != ent->unique || ent->replied) {
		char *rest = malloc(len - FS_MSG_OUT_HEADER + 1);
		struct iovec iov[2] = {{head, FS_MSG_OUT_HEADER}, {rest, len - FS_MSG_OUT_HEADER}};
		ssize_t n = -1;

		if (rest && read_all(pipefd, rest, len - FS_MSG_OUT_HEADER) == 0)
			n = writev(fuse_session_fd(ent->q->ring->fs->se), iov, 2);
		free(rest);
		return n;
	}
	if (read_all(pipefd, ent->area + UR_STAGE, len - FS_MSG_OUT_HEADER) < 0)
		return -1;
	memcpy(ent->hdr->in_out, head, FS_MSG_OUT_HEADER);
	ent->hdr->ent.payload_sz = (uint32_t)(len - FS_MSG_OUT_HEADER);
	ent->replied = true;
	return (ssize_t)len;
}
