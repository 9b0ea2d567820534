/* fs/node.c: the node tables (by inode number, by parent+name, by upper inode). */
#include "fs/fs_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TABLE_INITIAL 4096
#define DIR_BYTES_MIN 4096 /* what a directory is charged at least (fs_disk_charge_of) */

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_name(fuse_ino_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return hash_u64(h);
}

static int table_init(struct fs_table *t)
{
	t->size = TABLE_INITIAL;
	t->slots = calloc(t->size, sizeof(*t->slots));
	return t->slots ? 0 : -ENOMEM;
}

int fs_node_init_tables(struct fs *fs)
{
	if (table_init(&fs->by_ino) < 0 || table_init(&fs->by_name) < 0 ||
	    table_init(&fs->by_upper) < 0)
		return -ENOMEM;
	fs->next_ino = FUSE_ROOT_ID;
	return 0;
}

/* Chains are unlinked by walking: the tables are only touched under fs->lock. */
#define CHAIN_REMOVE(slot, n, field)                                                               \
	do {                                                                                       \
		struct fs_node **pp_ = (slot);                                                     \
		while (*pp_ && *pp_ != (n))                                                        \
			pp_ = &(*pp_)->field;                                                      \
		if (*pp_)                                                                          \
			*pp_ = (n)->field;                                                         \
		(n)->field = NULL;                                                                 \
	} while (0)

static struct fs_node **ino_slot(struct fs *fs, fuse_ino_t ino)
{
	return &fs->by_ino.slots[hash_u64(ino) & (fs->by_ino.size - 1)];
}

static struct fs_node **name_slot(struct fs *fs, fuse_ino_t parent, const char *name)
{
	return &fs->by_name.slots[hash_name(parent, name) & (fs->by_name.size - 1)];
}

static struct fs_node **upper_slot(struct fs *fs, dev_t dev, ino_t ino)
{
	return &fs->by_upper.slots[hash_u64(ino ^ ((uint64_t)dev << 40)) & (fs->by_upper.size - 1)];
}

/* Doubles all three tables when the node count outgrows them. */
static void table_grow(struct fs *fs)
{
	struct fs_table old_ino = fs->by_ino, old_name = fs->by_name, old_upper = fs->by_upper;
	size_t size = old_ino.size * 2;
	struct fs_node **a = calloc(size, sizeof(*a));
	struct fs_node **b = calloc(size, sizeof(*b));
	struct fs_node **c = calloc(size, sizeof(*c));

	if (!a || !b || !c) {
		free(a);
		free(b);
		free(c);
		return; /* chains just get longer */
	}
	fs->by_ino = (struct fs_table){a, size};
	fs->by_name = (struct fs_table){b, size};
	fs->by_upper = (struct fs_table){c, size};
	/* Every node is in the inode table; re-insert each into the tables it was in. */
	for (size_t i = 0; i < old_ino.size; i++) {
		for (struct fs_node *n = old_ino.slots[i], *next; n; n = next) {
			struct fs_node **s = ino_slot(fs, n->ino);

			next = n->next_ino;
			n->next_ino = *s;
			*s = n;
			if (n->in_name_table) {
				s = name_slot(fs, n->parent->ino, n->name);
				n->next_name = *s;
				*s = n;
			}
			if (n->in_upper_table) {
				s = upper_slot(fs, n->upper_dev, n->upper_ino);
				n->next_upper = *s;
				*s = n;
			}
		}
	}
	free(old_ino.slots);
	free(old_name.slots);
	free(old_upper.slots);
}

struct fs_node *fs_node_get(struct fs *fs, fuse_ino_t ino)
{
	for (struct fs_node *n = *ino_slot(fs, ino); n; n = n->next_ino)
		if (n->ino == ino)
			return n;
	return NULL;
}

struct fs_node *fs_node_by_name(struct fs *fs, struct fs_node *parent, const char *name)
{
	for (struct fs_node *n = *name_slot(fs, parent->ino, name); n; n = n->next_name)
		if (n->parent == parent && !strcmp(n->name, name))
			return n;
	return NULL;
}

struct fs_node *fs_node_by_upper(struct fs *fs, dev_t dev, ino_t ino)
{
	for (struct fs_node *n = *upper_slot(fs, dev, ino); n; n = n->next_upper)
		if (n->upper_dev == dev && n->upper_ino == ino)
			return n;
	return NULL;
}

static void name_link(struct fs *fs, struct fs_node *n)
{
	struct fs_node **s = name_slot(fs, n->parent->ino, n->name);

	n->next_name = *s;
	*s = n;
	n->in_name_table = true;
}

static void name_unlink(struct fs *fs, struct fs_node *n)
{
	if (!n->in_name_table)
		return;
	CHAIN_REMOVE(name_slot(fs, n->parent->ino, n->name), n, next_name);
	n->in_name_table = false;
}

struct fs_node *fs_node_new(struct fs *fs, struct fs_node *parent, const char *name, mode_t type)
{
	struct fs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->name = strdup(name ? name : "");
	if (!n->name) {
		free(n);
		return NULL;
	}
	n->ino = fs->next_ino++;
	n->type = type;
	n->fd = -1;
	n->data_fd = -1;
	n->lower_size = -1;
	n->parent = parent;
	if (parent) {
		parent->refs++;
		name_link(fs, n);
	}
	struct fs_node **s = ino_slot(fs, n->ino);

	n->next_ino = *s;
	*s = n;
	if (++fs->nnodes > fs->by_ino.size)
		table_grow(fs);
	return n;
}

void fs_node_set_upper(struct fs *fs, struct fs_node *n, int fd, const struct stat *st)
{
	if (n->fd >= 0 && n->fd != fd)
		close(n->fd);
	if (n->fd < 0) {
		fs->nupper_fds++;
		fs_node_fds_changed(fs);
	}
	if (n->in_upper_table)
		CHAIN_REMOVE(upper_slot(fs, n->upper_dev, n->upper_ino), n, next_upper);
	/* Read without the lock by fs_op_read (a lower handle checks for a copy-up). */
	__atomic_store_n(&n->fd, fd, __ATOMIC_RELEASE);
	n->upper_dev = st->st_dev;
	n->upper_ino = st->st_ino;
	n->type = st->st_mode & S_IFMT;
	if (!n->charged) {
		/* disk.c: as its walk counts it (a file with several names takes its share) */
		n->charge = fs_disk_charge_of(st);
		if (!S_ISDIR(n->type) && st->st_nlink > 1)
			n->charge /= (int64_t)st->st_nlink;
		n->charged = true;
	}
	/* Directories are never hard-linked: only files need identity by upper inode. */
	if (!S_ISDIR(n->type)) {
		struct fs_node **s = upper_slot(fs, st->st_dev, st->st_ino);

		n->next_upper = *s;
		*s = n;
		n->in_upper_table = true;
	} else {
		n->in_upper_table = false;
	}
}

int fs_node_move(struct fs *fs, struct fs_node *n, struct fs_node *parent, const char *name)
{
	char *copy = NULL;

	if (name) {
		copy = strdup(name);
		if (!copy)
			return -ENOMEM;
	}
	if (fs->hooks.flush) /* its writes are recorded under the name they went to */
		fs->hooks.flush(fs, n);
	fs_dir_changed(n->parent);
	fs_dir_changed(parent);
	name_unlink(fs, n);
	if (!copy) { /* no name: unlinked */
		n->unlinked = true;
		return 0;
	}
	if (parent != n->parent) {
		parent->refs++;
		n->parent->refs--;
		fs_node_maybe_free(fs, n->parent);
		n->parent = parent;
	}
	free(n->name);
	n->name = copy;
	n->unlinked = false;
	name_link(fs, n);
	return 0;
}

int64_t fs_disk_charge_of(const struct stat *st)
{
	int64_t alloc = (int64_t)st->st_blocks * 512;

	/* A directory takes a block at least: ext4 gives it one, tmpfs none (st_blocks 0), and a
	 * storm of mkdirs must meet the budget on both. */
	if (S_ISDIR(st->st_mode))
		return alloc > DIR_BYTES_MIN ? alloc : DIR_BYTES_MIN;
	if (!S_ISREG(st->st_mode))
		return alloc;
	return st->st_size > alloc ? st->st_size : alloc;
}

void fs_listing_free(struct fs_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	free(l);
}

/* Closes n's descriptors and frees it (already out of the tables). */
static void node_free(struct fs *fs, struct fs_node *n)
{
	if (fs->hooks.forget)
		fs->hooks.forget(fs, n);
	if (n->fd >= 0) {
		close(n->fd);
		fs->nupper_fds--;
	}
	if (n->data_fd >= 0) {
		close(n->data_fd);
		fs->ndata_fds--;
	}
	free(n->wpend); /* NULL in practice: pending writes are recorded before a node goes */
	fs_listing_free(n->listing);
	git_tree_free(n->lower_tree);
	free(n->lfs);
	free(n->synth);
	free(n->name);
	free(n);
}

static void node_destroy(struct fs *fs, struct fs_node *n)
{
	struct fs_node *parent = n->parent;

	if (fs->hooks.flush)
		fs->hooks.flush(fs, n);
	name_unlink(fs, n);
	CHAIN_REMOVE(ino_slot(fs, n->ino), n, next_ino);
	fs->nnodes--;
	if (n->in_upper_table)
		CHAIN_REMOVE(upper_slot(fs, n->upper_dev, n->upper_ino), n, next_upper);
	node_free(fs, n);
	if (parent) {
		parent->refs--;
		fs_node_maybe_free(fs, parent);
	}
}

void fs_node_maybe_free(struct fs *fs, struct fs_node *n)
{
	if (!n || n == fs->root || n == fs->gitnode || n == fs->hostcfg)
		return;
	if (n->nlookup == 0 && n->refs == 0)
		node_destroy(fs, n);
}

void fs_node_free_all(struct fs *fs)
{
	struct fs_table *t = &fs->by_ino;

	for (size_t i = 0; t->slots && i < t->size; i++) {
		for (struct fs_node *n = t->slots[i], *next; n; n = next) {
			next = n->next_ino;
			node_free(fs, n);
		}
	}
	free(fs->by_ino.slots);
	free(fs->by_name.slots);
	free(fs->by_upper.slots);
	fs->by_ino.slots = fs->by_name.slots = fs->by_upper.slots = NULL;
}

char *fs_node_path(struct fs *fs, struct fs_node *n, const char *child)
{
	size_t len = child ? strlen(child) + 1 : 0;
	char *buf, *p;

	for (struct fs_node *x = n; x && x != fs->root; x = x->parent)
		len += strlen(x->name) + 1;
	buf = malloc(len + 1);
	if (!buf)
		return NULL;
	p = buf + len;
	*p = '\0';
	if (child) {
		p -= strlen(child);
		memcpy(p, child, strlen(child));
		*--p = '/';
	}
	for (struct fs_node *x = n; x && x != fs->root; x = x->parent) {
		size_t l = strlen(x->name);

		p -= l;
		memcpy(p, x->name, l);
		*--p = '/';
	}
	/* Drop the leading '/' (paths are relative to the view root). */
	memmove(buf, buf + 1, len);
	if (len == 0)
		buf[0] = '\0';
	return buf;
}
