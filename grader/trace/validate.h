/* validate.h — structural check of a Kineto-layout trace (faultline validate).
 *
 * Checks what Perfetto and HTA rely on: metadata keys before traceEvents, a
 * distributedInfo rank written as `"rank": N` (HTA's regex needs the space),
 * schemaVersion, X events with name/cat/ts/dur/pid/tid and dur >= 0, at least
 * one ProfilerStep, events of a row properly nested, named rows, and a final
 * "Record Window End" instant. Problems are appended to `report` as lines.
 */
#ifndef FL_VALIDATE_H
#define FL_VALIDATE_H

#include "common/status.h"
#include "common/strbuf.h"

/* FL_OK when valid, FL_ECHECK with problems in report, FL_EINPUT if unreadable. */
enum fl_status fl_trace_validate(const char *path, struct strbuf *report);

#endif
