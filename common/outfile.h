/* outfile.h — an output file that is whole or absent.
 *
 * Bytes go to a temporary file beside the destination ("DIR/.NAME.tmp-XXXXXX"),
 * through zlib when the name ends in ".gz". fl_outfile_commit() flushes, fsyncs
 * and renames it into place; fl_outfile_abort() (or a failed commit) removes it.
 * Writes are buffered; errors are sticky and reported by commit. A writer
 * holds an flock on its temporary file; opening a file removes the temporary
 * files of the same name that no live writer holds (left by kill -9). Opening
 * also ignores SIGXFSZ, so that a file size limit fails the write (EFBIG,
 * reported by commit) instead of killing the process.
 */
#ifndef FL_OUTFILE_H
#define FL_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

#include "common/status.h"

struct fl_outfile;

/* Open a temporary file for `path`. gzip is chosen by the ".gz" suffix.
 * Errors: FL_ERUNTIME with "cannot write 'path': reason". */
enum fl_status fl_outfile_open(struct fl_outfile **out, const char *path);
void fl_outfile_write(struct fl_outfile *f, const void *p, size_t n);
void fl_outfile_puts(struct fl_outfile *f, const char *s);
/* Finish and rename into place; frees f. */
enum fl_status fl_outfile_commit(struct fl_outfile *f);
/* Discard; frees f. NULL is fine. */
void fl_outfile_abort(struct fl_outfile *f);

/* Whole-file helpers. */
enum fl_status fl_write_file_atomic(const char *path, const void *p, size_t n);
/* Remove path and, when it is a folder, everything inside it; no link is
 * followed (a link is removed, not its target). Errors are ignored. */
void fl_remove_tree(const char *path);
/* Read a whole file (gunzipping when it ends in ".gz" or starts with the gzip
 * magic) into a NUL-terminated malloc'd buffer. At most FL_READ_FILE_MAX
 * bytes (after decompression: a small .gz may inflate to gigabytes): scenarios,
 * rubrics, truths and answers are far smaller; a larger file is an FL_EINPUT
 * error naming it and the limit. Traces go through the streaming reader. */
#define FL_READ_FILE_MAX ((size_t)32 << 20)
enum fl_status fl_read_file(const char *path, char **buf, size_t *len);
/* The same with another limit (SIZE_MAX: none; for benchmarks). */
enum fl_status fl_read_file_max(const char *path, size_t max, char **buf, size_t *len);

#endif
