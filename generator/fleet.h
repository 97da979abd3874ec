/* fleet.h — simulated fleets (lab R2): a fleet scenario, the discrete-event
 * simulation and the files it writes.
 *
 * A fleet scenario (faultline.fleet_scenario/1, scenarios/fleet/NAME.json)
 * declares a cluster (nodes x GPUs per node, start, days, the CSV form), a job
 * mix (classes with a share of arrivals, GPU counts, lognormal durations,
 * cancellation, user-failure and restart probabilities), fleet faults
 * (faults/fleet_fault.h) and the analysis parameters its rubric uses.
 * fl_fleet_generate simulates it, seeded and reproducible, and writes into
 * the output directory the jobs CSV and the XID CSV in AcmeTrace's schema, a
 * README.txt saying the files are simulated, and the truth (faultline.truth/1
 * with scenario.simulated = true): the injected MTBF, the realised failures,
 * the GPU-hours at risk, the simulated goodput waterfall, and `metrics`, the
 * fleet analysis of the CSVs just written (the same code as fleet analyze).
 */
#ifndef FL_GEN_FLEET_H
#define FL_GEN_FLEET_H

#include <stdint.h>

#include "common/status.h"
#include "common/strbuf.h"

struct fl_fleet_gen_opts {
	const char *out_dir;   /* NULL: the scenario's output.dir, else "out" */
	int have_seed;
	uint64_t seed;
	int vary;              /* draw the declared "vary" parameters from seed */
	int json;              /* report: the truth instead of the summary */
};

/* Simulate the scenario at path and write its files; a summary (or the
 * truth with json) is appended to report. */
enum fl_status fl_fleet_generate(const char *path, const struct fl_fleet_gen_opts *o, struct strbuf *report);

#endif
