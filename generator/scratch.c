#include "generator/scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/outfile.h"

#define PREFIX "faultline-scratch."

static const char *tmp_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	return tmp && tmp[0] ? tmp : "/tmp";
}

/* fd, locked, is still the folder at path (not one removed meanwhile by another
 * run's sweep, nor a new one under the same name). */
static int still_there(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && S_ISDIR(b.st_mode) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int open_dir(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Folders PREFIX + 6 characters in tmp, this user's, with no run holding their lock. */
static int remove_stale(const char *tmp)
{
	DIR *d = opendir(tmp);
	if (!d)
		return 0;
	size_t pl = strlen(PREFIX);
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = e->d_name;
		if (strncmp(s, PREFIX, pl) || strlen(s + pl) != 6)
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", tmp, s) >= (int)sizeof(path))
			continue;
		struct stat st;
		if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		int fd = open_dir(path);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && still_there(fd, path)) {
			fl_remove_tree(path);
			removed++;
		}
		close(fd);
	}
	closedir(d);
	return removed;
}

enum fl_status fl_scratch_create(struct fl_scratch *s)
{
	const char *tmp = tmp_dir();
	s->path[0] = '\0';
	s->fd = -1;
	s->removed_stale = remove_stale(tmp);
	/* another run's sweep may take a folder's lock between mkdtemp and ours,
	 * and remove it: then make another */
	for (int tries = 0; tries < 8; tries++) {
		if (snprintf(s->path, sizeof(s->path), "%s/" PREFIX "XXXXXX", tmp) >= (int)sizeof(s->path)) {
			s->path[0] = '\0';
			return fl_error(FL_ERUNTIME, "scratch folder in '%s': path too long", tmp);
		}
		if (!mkdtemp(s->path)) {
			int e = errno;
			s->path[0] = '\0';
			return fl_error(FL_ERUNTIME, "cannot create a scratch folder in '%s': %s", tmp, strerror(e));
		}
		int fd = open_dir(s->path);
		if (fd < 0) /* removed already by a sweep */
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (still_there(fd, s->path)) {
				s->fd = fd;
				return FL_OK;
			}
		} else if (errno != EWOULDBLOCK) {
			/* a file system without locks: no sweep can take it either */
			s->fd = fd;
			return FL_OK;
		}
		close(fd); /* a sweep holds it and removes it */
	}
	s->path[0] = '\0';
	return fl_error(FL_ERUNTIME, "cannot create a scratch folder in '%s': each new folder was removed at once", tmp);
}

void fl_scratch_remove(struct fl_scratch *s)
{
	if (s->path[0])
		fl_remove_tree(s->path);
	if (s->fd >= 0)
		close(s->fd);
	s->path[0] = '\0';
	s->fd = -1;
}
