/*
 * bench/storm.c: the small-file storm, from one process: in DIR/storm, create NFILES files
 * spread over NDIRS directories, rewrite each one (truncate + new content), then delete them
 * all and the directories. Built by bench/view.sh with the system compiler.
 *
 *   storm DIR [NFILES [NDIRS]]   (defaults 10000 files, 100 directories)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what, const char *path)
{
	fprintf(stderr, "storm: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void put(const char *path, int flags, const char *buf, size_t len)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		die("open", path);
	if (write(fd, buf, len) != (ssize_t)len)
		die("write", path);
	if (close(fd) < 0)
		die("close", path);
}

int main(int argc, char **argv)
{
	char path[4096], buf[4096];
	long nfiles = argc > 2 ? atol(argv[2]) : 10000;
	long ndirs = argc > 3 ? atol(argv[3]) : 100;

	if (argc < 2 || nfiles <= 0 || ndirs <= 0) {
		fprintf(stderr, "usage: storm DIR [NFILES [NDIRS]]\n");
		return 2;
	}
	memset(buf, 'x', sizeof(buf));
	snprintf(path, sizeof(path), "%s/storm", argv[1]);
	if (mkdir(path, 0755) < 0)
		die("mkdir", path);
	for (long d = 0; d < ndirs; d++) {
		snprintf(path, sizeof(path), "%s/storm/d%03ld", argv[1], d);
		if (mkdir(path, 0755) < 0)
			die("mkdir", path);
	}
	/* create: 1..4 KiB each */
	for (long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/storm/d%03ld/f%06ld.c", argv[1], i % ndirs, i);
		put(path, O_WRONLY | O_CREAT | O_EXCL, buf, 1024 + (size_t)(i % 4) * 1024);
	}
	/* rewrite */
	for (long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/storm/d%03ld/f%06ld.c", argv[1], i % ndirs, i);
		put(path, O_WRONLY | O_TRUNC, buf, 2048);
	}
	/* delete */
	for (long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/storm/d%03ld/f%06ld.c", argv[1], i % ndirs, i);
		if (unlink(path) < 0)
			die("unlink", path);
	}
	for (long d = 0; d < ndirs; d++) {
		snprintf(path, sizeof(path), "%s/storm/d%03ld", argv[1], d);
		if (rmdir(path) < 0)
			die("rmdir", path);
	}
	snprintf(path, sizeof(path), "%s/storm", argv[1]);
	if (rmdir(path) < 0)
		die("rmdir", path);
	return 0;
}
