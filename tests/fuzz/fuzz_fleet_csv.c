/* fuzz_fleet_csv.c — the fleet jobs CSV (grader/analysis/fleet*.c, `faultline
 * fleet analyze JOBS.csv`): Kalos or Seren header, times, states, the
 * histograms and the MTBF, and the text report of what it found. The first
 * byte picks the options: strict (the first bad row is an error), the same
 * input read as the XID telemetry CSV too, and the MTBF population. */
#include <stdint.h>
#include <stdlib.h>

#include "grader/analysis/fleet.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	uint8_t mode = data[0];
	const char *path = fuzz_file(".csv", data + 1, size - 1);
	struct fl_fleet_opts o = FL_FLEET_OPTS_INIT;
	o.strict = mode & 1;
	if (mode & 2)
		o.xid_path = path;
	if (mode & 4)
		o.min_gpus = 1;
	if (mode & 8)
		o.min_hours = 0.5;
	cJSON *out = NULL;
	if (fl_fleet_analyze(path, &o, &out) == FL_OK && out) {
		struct strbuf sb = STRBUF_INIT;
		fl_fleet_text(out, &sb);
		strbuf_release(&sb);
	}
	cJSON_Delete(out);
	int64_t t;
	fl_fleet_parse_time((const char *)data, size, &t);
	return 0;
}
