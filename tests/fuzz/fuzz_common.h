/* fuzz_common.h — shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c).
 *
 * Loaders that take a path (the scenario and rubric loaders) read the input
 * through an in-memory file (memfd), rewritten for every run: no disk I/O and
 * nothing left behind. Messages of failed loads stay in the status buffer;
 * nothing is printed.
 */
#ifndef FL_FUZZ_COMMON_H
#define FL_FUZZ_COMMON_H

/* _GNU_SOURCE (memfd_create) comes from the build: it must precede every system header */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A path whose contents are data[0, n) (the same file for each run). */
static inline const char *fuzz_file(const char *suffix, const uint8_t *data, size_t n)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fl-fuzz", 0);
		if (fd < 0)
			abort();
		/* the name ends like the real files: some loaders name their input in messages */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		(void)suffix;
	}
	if (ftruncate(fd, 0) || (n && pwrite(fd, data, n, 0) != (ssize_t)n))
		abort();
	return path;
}

#endif
