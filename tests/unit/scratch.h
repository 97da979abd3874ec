/* scratch.h — scratch directories for the Check suites that write files.
 *
 * A base directory per test case, made by an unchecked fixture so that it is
 * removed even when a forked test fails, and a fresh directory inside it per
 * test. Include after defining _GNU_SOURCE (nftw). A suite names its base
 * directory with scratch_base_setup("NAME") in its own base_setup().
 */
#ifndef FL_CHECK_SCRATCH_H
#define FL_CHECK_SCRATCH_H

#include <check.h>
#include <dirent.h>
#include <string.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char base_dir[64], tmpdir[128];

static inline int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void rm_rf(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void scratch_base_setup(const char *suite)
{
	snprintf(base_dir, sizeof(base_dir), "/tmp/fl-check-%s-XXXXXX", suite);
	ck_assert_ptr_nonnull(mkdtemp(base_dir));
}

static inline void base_teardown(void) { rm_rf(base_dir); }

static inline void tmp_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/t-XXXXXX", base_dir);
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

/* PATH of NAME inside this test's scratch directory. */
static inline void tmp_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* Number of entries in the scratch directory besides . and .. */
static inline int tmp_entries(void)
{
	DIR *d = opendir(tmpdir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

#endif
