#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char err_msg[4096];

const char *fl_status_str(enum fl_status st)
{
	switch (st) {
	case FL_OK: return "ok";
	case FL_ECHECK: return "check failed";
	case FL_EINPUT: return "bad input";
	case FL_ERUNTIME: return "runtime error";
	case FL_EINTERNAL: return "internal error";
	}
	return "unknown status";
}

enum fl_status fl_error(enum fl_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	return st;
}

enum fl_status fl_error_prefix(enum fl_status st, const char *fmt, ...)
{
	char old[sizeof(err_msg)], pre[1024];
	va_list ap;
	memcpy(old, err_msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	size_t n = strlen(pre);
	if (n >= sizeof(err_msg))
		n = sizeof(err_msg) - 1;
	memcpy(err_msg, pre, n);
	size_t room = sizeof(err_msg) - 1 - n, ol = strlen(old);
	memcpy(err_msg + n, old, ol < room ? ol : room);
	err_msg[n + (ol < room ? ol : room)] = '\0';
	return st;
}

const char *fl_error_msg(void) { return err_msg; }
void fl_error_clear(void) { err_msg[0] = '\0'; }
