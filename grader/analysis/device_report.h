/* device_report.h — the text form of the device analyses (device_metrics.h)
 * for `faultline analyze --device`. */
#ifndef FL_DEVICE_REPORT_H
#define FL_DEVICE_REPORT_H

#include <cjson/cJSON.h>

#include "common/strbuf.h"

/* Append a readable summary of fl_device_metrics_json() output. */
void fl_device_metrics_text(const cJSON *dm, struct strbuf *out);
/* Append a readable summary of fl_trace_diff_json() output (top N changes). */
void fl_trace_diff_text(const cJSON *diff, size_t top, struct strbuf *out);

#endif
