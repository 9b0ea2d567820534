/*
 * tests/fuzz/replay.c: runs a fuzz target's LLVMFuzzerTestOneInput over every file named on
 * the command line (directories: every file in them), so CI exercises the target and its
 * corpus without libFuzzer. Prints how many inputs ran; exit 1 when none could be read.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	char *buf = NULL;
	size_t len = 0;

	if (util_read_file(path, &buf, &len) < 0) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	size_t ran = 0;
	int bad = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) && (d = opendir(argv[i]))) {
			while ((e = readdir(d))) {
				char *p;

				if (e->d_name[0] == '.')
					continue;
				p = util_path_join(argv[i], e->d_name);
				if (!p || run_file(p) < 0)
					bad = 1;
				else
					ran++;
				free(p);
			}
			closedir(d);
		} else if (run_file(argv[i]) < 0) {
			bad = 1;
		} else {
			ran++;
		}
	}
	printf("replayed %zu inputs\n", ran);
	return bad || ran == 0;
}
