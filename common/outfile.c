#include "common/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/file.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define OUT_BUFSZ (1u << 16)

struct fl_outfile {
	char *path;
	char *tmp;
	int fd;
	gzFile gz;       /* non-NULL when compressing */
	int err;         /* first errno seen, sticky */
	size_t used;
	char buf[OUT_BUFSZ];
};

static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Temporary files of `name` in dir left by a writer that died (kill -9, a
 * crash, power loss): each writer holds an exclusive flock on its temporary
 * file until it commits or aborts, and the kernel drops the lock with the
 * process, so a temporary file whose lock can be taken has no writer. */
static void remove_stale(const char *dir, const char *name)
{
	DIR *d = opendir(*dir ? dir : ".");
	if (!d)
		return;
	size_t nl = strlen(name);
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = e->d_name;
		if (s[0] != '.' || strncmp(s + 1, name, nl) || strncmp(s + 1 + nl, ".tmp-", 5) || strlen(s + 1 + nl + 5) != 6)
			continue;
		int fd = openat(dirfd(d), s, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), s, 0);
		close(fd);
	}
	closedir(d);
}

enum fl_status fl_outfile_open(struct fl_outfile **out, const char *path)
{
	/* a file size limit (ulimit -f) must fail the write with EFBIG, reported
	 * as an error naming the file, not kill the process half-way */
	signal(SIGXFSZ, SIG_IGN);
	struct fl_outfile *f = calloc(1, sizeof(*f));
	if (!f)
		return fl_error(FL_ERUNTIME, "cannot write '%s': out of memory", path);
	f->fd = -1;
	f->path = strdup(path);
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
	size_t n = strlen(path) + 32;
	f->tmp = malloc(n);
	if (!f->path || !f->tmp) {
		fl_outfile_abort(f);
		return fl_error(FL_ERUNTIME, "cannot write '%s': out of memory", path);
	}
	snprintf(f->tmp, n, "%.*s.%s.tmp-XXXXXX", (int)dirlen, path, path + dirlen);
	f->fd = mkstemp(f->tmp);
	if (f->fd < 0) {
		int e = errno;
		free(f->tmp);
		f->tmp = NULL;
		fl_outfile_abort(f);
		return fl_error(FL_ERUNTIME, "cannot write '%s': %s", path, strerror(e));
	}
	fchmod(f->fd, 0644);
	flock(f->fd, LOCK_EX); /* held until commit or abort: marks the file as live */
	{
		char dir[4096];
		snprintf(dir, sizeof(dir), "%.*s", (int)dirlen, path);
		remove_stale(dir, path + dirlen);
	}
	if (ends_with(path, ".gz")) {
		int fd2 = dup(f->fd);
		f->gz = fd2 >= 0 ? gzdopen(fd2, "wb6") : NULL;
		if (!f->gz) {
			if (fd2 >= 0)
				close(fd2);
			fl_outfile_abort(f);
			return fl_error(FL_ERUNTIME, "cannot write '%s': cannot start gzip stream", path);
		}
		gzbuffer(f->gz, 1u << 17);
	}
	*out = f;
	return FL_OK;
}

static void flush_buf(struct fl_outfile *f)
{
	if (f->used == 0 || f->err) {
		f->used = 0;
		return;
	}
	if (f->gz) {
		errno = 0;
		if (gzwrite(f->gz, f->buf, (unsigned)f->used) != (int)f->used) {
			int zerr;
			gzerror(f->gz, &zerr);
			f->err = zerr == Z_ERRNO && errno ? errno : EIO; /* EFBIG, ENOSPC: the reason, not "I/O error" */
		}
	} else {
		size_t off = 0;
		while (off < f->used) {
			ssize_t w = write(f->fd, f->buf + off, f->used - off);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				f->err = errno;
				break;
			}
			off += (size_t)w;
		}
	}
	f->used = 0;
}

void fl_outfile_write(struct fl_outfile *f, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		size_t room = OUT_BUFSZ - f->used;
		size_t k = n < room ? n : room;
		memcpy(f->buf + f->used, s, k);
		f->used += k;
		s += k;
		n -= k;
		if (f->used == OUT_BUFSZ)
			flush_buf(f);
	}
}

void fl_outfile_puts(struct fl_outfile *f, const char *s) { fl_outfile_write(f, s, strlen(s)); }

enum fl_status fl_outfile_commit(struct fl_outfile *f)
{
	flush_buf(f);
	if (f->gz) {
		errno = 0;
		int zr = gzclose(f->gz);
		f->gz = NULL;
		if (zr != Z_OK && !f->err)
			f->err = zr == Z_ERRNO && errno ? errno : EIO;
	}
	/* test hook: FL_TEST_COMMIT_PAUSE_MS holds every whole temporary that long
	 * before it is renamed, so a test can kill the writer at that moment */
	const char *pause = getenv("FL_TEST_COMMIT_PAUSE_MS");
	if (pause && atoi(pause) > 0)
		usleep((useconds_t)atoi(pause) * 1000u);
	if (!f->err && fsync(f->fd) != 0 && errno != EINVAL)
		f->err = errno;
	if (close(f->fd) != 0 && !f->err)
		f->err = errno;
	f->fd = -1;
	if (!f->err && rename(f->tmp, f->path) != 0)
		f->err = errno;
	if (f->err) {
		enum fl_status st = fl_error(FL_ERUNTIME, "cannot write '%s': %s", f->path, strerror(f->err));
		fl_outfile_abort(f);
		return st;
	}
	free(f->tmp);
	free(f->path);
	free(f);
	return FL_OK;
}

void fl_outfile_abort(struct fl_outfile *f)
{
	if (!f)
		return;
	if (f->gz)
		gzclose(f->gz);
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp)
		unlink(f->tmp);
	free(f->tmp);
	free(f->path);
	free(f);
}

void fl_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char sub[PATH_MAX];
		if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) < (int)sizeof(sub))
			fl_remove_tree(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

enum fl_status fl_write_file_atomic(const char *path, const void *p, size_t n)
{
	struct fl_outfile *f;
	enum fl_status st = fl_outfile_open(&f, path);
	if (st)
		return st;
	fl_outfile_write(f, p, n);
	return fl_outfile_commit(f);
}

enum fl_status fl_read_file(const char *path, char **buf, size_t *len)
{
	return fl_read_file_max(path, FL_READ_FILE_MAX, buf, len);
}

enum fl_status fl_read_file_max(const char *path, size_t max, char **buf, size_t *len)
{
	gzFile gz = gzopen(path, "rb"); /* reads plain files transparently too */
	if (!gz)
		return fl_error(FL_EINPUT, "cannot open '%s': %s", path, strerror(errno ? errno : ENOENT));
	size_t cap = 1u << 16, n = 0;
	char *b = malloc(cap + 1);
	if (!b) {
		gzclose(gz);
		return fl_error(FL_ERUNTIME, "cannot read '%s': out of memory", path);
	}
	for (;;) {
		if (cap - n < (1u << 15)) {
			size_t nc = cap * 2;
			if (max < SIZE_MAX / 2 && nc > max + (1u << 16))
				nc = max + (1u << 16); /* room to see one byte past the limit */
			char *nb = realloc(b, nc + 1);
			if (!nb) {
				free(b);
				gzclose(gz);
				return fl_error(FL_ERUNTIME, "cannot read '%s': out of memory", path);
			}
			b = nb;
			cap = nc;
		}
		int r = gzread(gz, b + n, (unsigned)(cap - n));
		if (r < 0) {
			int zerr;
			const char *m = gzerror(gz, &zerr);
			enum fl_status st = fl_error(FL_EINPUT, "cannot read '%s' at byte %zu: %s", path, n,
						     zerr == Z_ERRNO ? strerror(errno) : m);
			free(b);
			gzclose(gz);
			return st;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			int plain = gzdirect(gz);
			free(b);
			gzclose(gz);
			return fl_error(FL_EINPUT, "cannot read '%s': larger than %zu MiB%s; expected a scenario, rubric, "
					"truth or answer file, which is far smaller", path, max >> 20,
					plain ? "" : " once decompressed");
		}
	}
	int zerr = Z_OK;
	const char *m = gzerror(gz, &zerr);
	if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
		enum fl_status st = fl_error(FL_EINPUT, "cannot read '%s' at byte %zu: %s", path, n, m);
		free(b);
		gzclose(gz);
		return st;
	}
	if (zerr == Z_BUF_ERROR) {
		free(b);
		gzclose(gz);
		return fl_error(FL_EINPUT, "cannot read '%s': truncated gzip stream after %zu bytes", path, n);
	}
	gzclose(gz);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return FL_OK;
}
