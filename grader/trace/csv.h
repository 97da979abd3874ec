/* csv.h — a streaming reader for comma-separated files of any size (the
 * AcmeTrace job and XID logs).
 *
 * The file goes through one buffer (64 KiB, grown only when a single record is
 * larger); each record is handed out as an array of fields that stay valid
 * until the next call. RFC 4180 quoting is understood ("a,b" is one field, ""
 * inside quotes is a quote, a quoted field may hold newlines); a CR before the
 * LF is dropped; a UTF-8 byte-order mark at the start is skipped. Blank lines
 * are skipped. Fields are not trimmed.
 */
#ifndef FL_CSV_H
#define FL_CSV_H

#include <stddef.h>

#include "common/status.h"

struct fl_csv_field {
	const char *s; /* not NUL-terminated */
	size_t n;
};

struct fl_csv_record {
	const struct fl_csv_field *f;
	size_t n;
	long line;     /* the 1-based line the record starts on */
	int bad_quote; /* an unterminated quoted field (at end of file) */
};

struct fl_csv;

enum fl_status fl_csv_open(const char *path, struct fl_csv **out);
/* 1: *rec holds the next record; 0: end of file; FL_ERUNTIME (negated, as
 * -FL_ERUNTIME) on a read error with the message set. */
int fl_csv_next(struct fl_csv *c, struct fl_csv_record *rec);
/* Bytes read so far. */
size_t fl_csv_bytes(const struct fl_csv *c);
void fl_csv_close(struct fl_csv *c);

/* Field helpers: equality with a NUL-terminated string, and copy out. */
int fl_csv_eq(const struct fl_csv_field *f, const char *s);
void fl_csv_copy(const struct fl_csv_field *f, char *buf, size_t n);

#endif
