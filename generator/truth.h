/* truth.h — the truth file (faultline.truth/1), written beside the traces.
 *
 * It records what was injected (every instance on every rank, requested and
 * measured), the environment and calibration, each trace's hash and event
 * counts, the metrics recomputed from the written traces, and the answer key
 * rubrics refer to. It is never inside a trace.
 *
 * Multi-rank runs: every rank makes a rank report (its trace and its instances);
 * rank 0 gathers them and writes the one truth file.
 */
#ifndef FL_TRUTH_H
#define FL_TRUTH_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "capture/kineto_writer.h"
#include "capture/machine_load.h"
#include "faults/fault.h"
#include "runtime/device.h"
#include "generator/scenario.h"
#include "generator/workload.h"

/* Whether the cores kept one speed, from the reports' core_probe (each
 * rank's core timed on the device's GEMM, the ranks one at a time, as the
 * window opened and as it closed) and rank 0's probe right after
 * calibrating (calib_probe_ms, 0: none). Unequal when one probe is over
 * FL_CORES_UNEQUAL times another: two ranks' at the same moment (a core whose
 * physical sibling another guest keeps busy poses as a straggler), one rank's
 * at the window's two ends, or any against the calibration's (the faults were
 * sized against a step the machine no longer runs at); or, where the device
 * timed each step's GEMMs (core_probe.step_gemm_ns_per_mac, and training's
 * backward GEMMs each on its own: step_backward_gemm_ns_per_mac), when one
 * rank's slowest step is over FL_CORES_UNEQUAL times its fastest in one
 * meter: a speed change the two ends of the window do not see. */
#define FL_CORES_UNEQUAL 1.15
struct fl_core_speed {
	double spread;     /* the largest ratio of two probes compared */
	char why[240];     /* when unequal: which probes, in words */
};
/* 1 unequal, 0 alike, -1 nothing to compare (no reports, or one without probes) */
int fl_truth_core_speed(cJSON *const *reports, size_t n_reports, double calib_probe_ms, struct fl_core_speed *out);

struct fl_truth_input {
	const struct fl_scenario *sc;
	const char *backend;
	uint64_t seed;
	long active;
	int world_size;
	const char *out_dir;
	const struct fl_calibration *calibration;
	const struct fl_fault *faults;
	size_t n_faults;
	const cJSON *baseline_metrics; /* may be NULL */
	const char *baseline_name;
	const cJSON *rerecorded;       /* regen's discarded windows of this scenario; may be NULL */
	const cJSON *restarts;         /* regen's rounds of the whole set ended by a width change; may be NULL */
	double last_loss;
	unsigned watchdog_s;
	const struct fl_machine_load *machine_load; /* may be NULL */
	int pin_core, pin_busy_left_out;            /* rank 0's fl_comm_pinning (core -1: not pinned) */
	int device_core, device_busy_left_out;      /* fl_dev_compute_core (-1: the device has no core of its own) */
	int device_quiet_cores;                     /* ...and the cores it found quiet */
	/* fl_truth_core_speed of these reports (the caller warns from it too);
	 * cores_unequal -1: nothing to compare, no environment.core_speed */
	const struct fl_core_speed *core_speed;
	int cores_unequal;
};

/* This rank's part: {rank, trace{file, events, dropped_events}, instances[fault][...], device}. */
/* A rank's report's "core_probe": its core, the probes as the window opened and
 * closed (core_ms), and from step `from` on, `active` steps of each metered
 * GEMM kind's speed (speed[kind], NULL: not measured; the backward kinds only
 * where they ran), which the truth's environment.core_speed reads. */
void fl_truth_add_core_probe(cJSON *report, int core, const double core_ms[2], long from, long active,
			     double *const speed[FL_GEMM_KINDS]);
cJSON *fl_truth_rank_report(int rank, const char *trace_name, const struct fl_trace_stats *ts,
			    const struct fl_fault *faults, size_t n_faults, const struct fl_device_stats *dev);
/* Every rank, after writing its trace: read it back (the hash, the host
 * metrics) into its report, so rank 0 describes every rank's trace without
 * reading files on other nodes. */
enum fl_status fl_truth_rank_readback(cJSON *report, const char *trace_path);
/* Rank 0: gather every rank's read-back report, write the truth.
 * *metrics receives rank 0's metrics (caller owns). */
enum fl_status fl_truth_write(const char *path, const struct fl_truth_input *in, cJSON *const *reports,
			      size_t n_reports, cJSON **metrics);

#endif
