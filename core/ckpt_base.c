/*
 * core/ckpt_base.c: the base's objects a checkpoint reads (the base commit, and the lower
 * trees of the layer's directories), kept between checkpoints in NAME/checkpoint.base. A
 * workspace's base never changes, yet each checkpoint read the same ~300 trees again from the
 * origin's packs (delta chains, inflate: 28 M instructions, an eighth of a checkpoint, and the
 * page faults of mapping the packs). The file is a hint only: every object it holds is hashed
 * again when first used and, if its id does not match, read from the object store instead.
 * Format: "ARBBASE1", then per object its 20-byte id, type (1 byte), size (4 bytes, big-endian)
 * and content. Written again (renamed over, no fsync: losing it costs reading the trees once
 * more) only when a checkpoint read objects it lacked; the objects this checkpoint used first,
 * the rest while the file stays under BASE_FILE_MAX.
 */
#include "core/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BASE_MAGIC    "ARBBASE1"
#define BASE_HEAD     (GIT_OID_RAWSZ + 1 + 4)
#define BASE_FILE_MAX (16U << 20)

struct base_obj {
	git_oid id;
	git_object_t type;
	const unsigned char *data; /* into the file's text, or obj's */
	size_t len;
	git_odb_object *obj; /* read from the store this time, else NULL */
	bool checked;	     /* hashed and found right (or read from the store) */
	bool used;
};

struct ckpt_base {
	char *path;
	git_odb *odb; /* borrowed */
	unsigned char *file;
	size_t file_len;
	struct base_obj *objs;
	size_t n, cap;
	uint32_t *slot; /* open addressing over objs: index + 1, 0 free */
	size_t n_slots;
	bool dirty;
};

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static size_t slot_of(const git_oid *id, size_t n_slots)
{
	uint32_t h;

	memcpy(&h, id->id, sizeof(h));
	return h & (n_slots - 1);
}

static struct base_obj *find(const struct ckpt_base *b, const git_oid *id)
{
	if (!b->n_slots)
		return NULL;
	for (size_t s = slot_of(id, b->n_slots);; s = (s + 1) & (b->n_slots - 1)) {
		if (!b->slot[s])
			return NULL;
		if (git_oid_equal(&b->objs[b->slot[s] - 1].id, id))
			return &b->objs[b->slot[s] - 1];
	}
}

static int rehash(struct ckpt_base *b)
{
	size_t n_slots = b->n_slots ? 2 * b->n_slots : 512;
	uint32_t *slot = calloc(n_slots, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		size_t s = slot_of(&b->objs[i].id, n_slots);

		while (slot[s])
			s = (s + 1) & (n_slots - 1);
		slot[s] = (uint32_t)(i + 1);
	}
	free(b->slot);
	b->slot = slot;
	b->n_slots = n_slots;
	return 0;
}

/* Adds o (its id not held yet); the returned pointer is valid until the next add. */
static struct base_obj *add(struct ckpt_base *b, const struct base_obj *o)
{
	size_t s;

	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 256;
		struct base_obj *v = realloc(b->objs, cap * sizeof(*v));

		if (!v)
			return NULL;
		b->objs = v;
		b->cap = cap;
	}
	if (2 * (b->n + 1) > b->n_slots && rehash(b) < 0)
		return NULL;
	b->objs[b->n] = *o;
	for (s = slot_of(&o->id, b->n_slots); b->slot[s]; s = (s + 1) & (b->n_slots - 1))
		;
	b->slot[s] = (uint32_t)++b->n;
	return &b->objs[b->n - 1];
}

/* The file's objects, indexed, not checked; a malformed tail is ignored. */
static void load(struct ckpt_base *b)
{
	int fd = open(b->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	size_t got = 0, off = sizeof(BASE_MAGIC) - 1;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (size_t)st.st_size <= BASE_FILE_MAX && (b->file = malloc((size_t)st.st_size))) {
		while (got < (size_t)st.st_size) {
			ssize_t r = read(fd, b->file + got, (size_t)st.st_size - got);

			if (r <= 0)
				break;
			got += (size_t)r;
		}
	}
	close(fd);
	b->file_len = got;
	if (got < off || memcmp(b->file, BASE_MAGIC, off))
		return;
	while (b->file_len - off >= BASE_HEAD) {
		const unsigned char *h = b->file + off;
		struct base_obj o = {.type = (git_object_t)h[GIT_OID_RAWSZ],
				     .len = get32(h + GIT_OID_RAWSZ + 1),
				     .data = h + BASE_HEAD};

		if (o.len > b->file_len - off - BASE_HEAD)
			break;
		git_oid_fromraw(&o.id, h);
		if (!find(b, &o.id) && !add(b, &o))
			break;
		off += BASE_HEAD + o.len;
	}
}

int ckpt_base_open(struct ckpt_base **out, const char *path, git_odb *odb)
{
	struct ckpt_base *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b || !(b->path = strdup(path))) {
		free(b);
		return util_err(-ENOMEM, "out of memory");
	}
	b->odb = odb;
	load(b);
	*out = b;
	return 0;
}

/* Reads id from the store, as o (held: not found right in the file) or as a new object. */
static int from_store(struct ckpt_base *b, struct base_obj *o, const git_oid *id,
		      struct base_obj **out)
{
	git_odb_object *obj = NULL;
	struct base_obj fresh = {.id = *id};

	if (git_odb_read(&obj, b->odb, id) < 0)
		return util_err(-EIO, "checkpoint: base object %s: %s", git_oid_tostr_s(id),
				git_error_last()->message);
	if (!o && !(o = add(b, &fresh))) {
		git_odb_object_free(obj);
		return util_err(-ENOMEM, "out of memory");
	}
	o->obj = obj;
	o->type = git_odb_object_type(obj);
	o->data = git_odb_object_data(obj);
	o->len = git_odb_object_size(obj);
	o->checked = true;
	b->dirty = true;
	*out = o;
	return 0;
}

int ckpt_base_read(struct ckpt_base *b, const git_oid *id, git_object_t type,
		   const unsigned char **data, size_t *len)
{
	struct base_obj *o = find(b, id);
	git_oid got;
	int rc = 0;

	if (o && !o->checked) {
		/* Hashed again before it is believed: the file is only a hint. */
		o->checked =
		    ckpt_object_id(o->type, o->data, o->len, &got) == 0 && git_oid_equal(&got, id);
		if (!o->checked)
			rc = from_store(b, o, id, &o);
	} else if (!o) {
		rc = from_store(b, NULL, id, &o);
	}
	if (rc < 0)
		return rc;
	if (o->type != type)
		return util_err(-EIO, "checkpoint: base object %s is a %s, not a %s",
				git_oid_tostr_s(id), git_object_type2string(o->type),
				git_object_type2string(type));
	o->used = true;
	*data = o->data;
	*len = o->len;
	return 0;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Appends o to text (*len bytes so far, room for BASE_FILE_MAX); false when it is full. */
static bool put_obj(unsigned char *text, size_t *len, const struct base_obj *o)
{
	if (o->len > UINT32_MAX || BASE_FILE_MAX - *len < BASE_HEAD + o->len)
		return false;
	memcpy(text + *len, o->id.id, GIT_OID_RAWSZ);
	text[*len + GIT_OID_RAWSZ] = (unsigned char)o->type;
	put32(text + *len + GIT_OID_RAWSZ + 1, (uint32_t)o->len);
	memcpy(text + *len + BASE_HEAD, o->data, o->len);
	*len += BASE_HEAD + o->len;
	return true;
}

void ckpt_base_save(struct ckpt_base *b)
{
	size_t len = sizeof(BASE_MAGIC) - 1, need = len;
	unsigned char *text;
	char *tmp;
	int fd = -1;

	if (!b->dirty)
		return;
	for (size_t i = 0; i < b->n; i++)
		need += BASE_HEAD + b->objs[i].len;
	text = malloc(need < BASE_FILE_MAX ? need : BASE_FILE_MAX);
	tmp = util_asprintf("%s.%d", b->path, (int)getpid());
	if (text && tmp) {
		memcpy(text, BASE_MAGIC, len);
		/* What this checkpoint used first: the next one most likely uses it again. */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < b->n; i++)
				if (b->objs[i].used == !pass)
					(void)put_obj(text, &len, &b->objs[i]);
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd >= 0 && (util_write_all(fd, text, len) < 0 || rename(tmp, b->path) < 0))
		unlink(tmp); /* best effort: the next checkpoint reads the store again */
	if (fd >= 0)
		close(fd);
	free(tmp);
	free(text);
}

void ckpt_base_free(struct ckpt_base *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		git_odb_object_free(b->objs[i].obj);
	free(b->objs);
	free(b->slot);
	free(b->file);
	free(b->path);
	free(b);
}
