/* status.h — faultline's one status enum and its error message.
 *
 * Library code never exits and never prints errors: it returns an fl_status and
 * leaves a message with fl_error(). Only main() maps the status to an exit code
 * (the values are the exit codes documented in docs/design.md) and prints the message.
 * Messages are lowercase, say what failed first, and quote the subject:
 *   cannot open 'x.json': No such file or directory
 */
#ifndef FL_STATUS_H
#define FL_STATUS_H

enum fl_status {
	FL_OK = 0,
	FL_ECHECK = 1,    /* a check failed (validate, grade --fail-under) */
	FL_EINPUT = 2,    /* usage error or bad input file */
	FL_ERUNTIME = 3,  /* I/O, device, MPI */
	FL_EINTERNAL = 4, /* a bug or an impossible state */
};

/* Short name of a status, e.g. "bad input". */
const char *fl_status_str(enum fl_status st);

/* Record the message for the current error (printf-style) and return st, so
 * that callers can write `return fl_error(FL_EINPUT, "...", ...)`. A later call
 * replaces the message. Thread-safe (the message is thread-local). */
enum fl_status fl_error(enum fl_status st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefix the current message with more context ("scenario 'x': " + old). */
enum fl_status fl_error_prefix(enum fl_status st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The last message ("" if none). */
const char *fl_error_msg(void);
void fl_error_clear(void);

#endif
