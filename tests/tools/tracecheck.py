#!/usr/bin/env python3
"""An independent reader of faultline's traces (Python stdlib only).

It shares no code with faultline: it reads the written Kineto JSON the way a
learner's tools do and checks the signatures each R7-R9 trace must show.

usage: tracecheck.py signatures OUT_DIR     # R7-R9 signatures of a regen
       tracecheck.py anatomy OUT_DIR        # R7-R9 op anatomy and counts equal the originals'
       tracecheck.py noleak OUT_DIR         # no fault/truth strings inside traces, file names or traceName
       tracecheck.py names FAULTS_TXT SCENARIO...  # no scenario's output or rubric names tell its faults
                                            # (FAULTS_TXT: the output of `faultline faults`)
       tracecheck.py emu OUT_DIR            # emulated-device signatures (see emu())
       tracecheck.py multirank OUT_DIR      # multi-rank families' signatures (see multirank())
       tracecheck.py pipeline OUT_DIR       # pipeline bubble (see pipeline())
       tracecheck.py moe OUT_DIR            # MoE expert imbalance (see moe())
       tracecheck.py catalog_b OUT_DIR      # recompile, checkpoint, DVFS, optimizer (see catalog_b())
       tracecheck.py catalog OUT_DIR        # launch_bound, alloc_stall, blocking_h2d, dtype_casts
                                            # (see catalog(); FL_TIMING_CHECKS=0 keeps the exact counts only)
       tracecheck.py crowded OUT_DIR        # exit 0 saying why when a run's ranks shared cores (more
                                            # ranks than cores, or a busy process took one), or their
                                            # cores ran at unequal speeds
                                            # (see crowded()), else exit 1

multirank, pipeline and moe print their timing checks as "skip" when crowded()
says the run's ranks could not run side by side (shared cores), or under
FL_TIMING_CHECKS=0 (a sanitizer build distorts timing); their counts are still
checked. The cores' speed is judged check by check: a comparison of what the
ranks' kernels cost (each kernel at its lower quartile) when every rank's core
ran at one best speed for a quarter of the run's steps (best_speed()); a
wait, an idle share or a time per step over the steps in which every rank's
core ran at one speed, when at least 3 did (one_speed()). emu's straggler reads its run the same way;
catalog_b's DVFS ramp as the trace shows it is skipped when crowded() says its run changed speed; the
ramp over each step's metered real work (dvfs_factors()) is judged whatever the speed.
FL_TIMING_CHECKS=always asserts them even then (bench/bench_speed.sh counts
how often a crowded or unequal run would have failed).
"""

# The entry point: the command line and the names other scripts import
# (`import tracecheck`). The checks live beside it, by what they read:
#   tc_common.py   traces, device traces, truths, the machine's speed and
#                  sharing of cores; the pass/fail state, check(), tcheck()
#   tc_regen.py    R7-R9: structure, signatures, op anatomy (signatures, anatomy)
#   tc_noleak.py   no fault or truth name in traces or names (noleak, names)
#   tc_device.py   device traces, one per rank (emu, multirank, pipeline, moe)
#   tc_catalog.py  the catalog scenarios (catalog, catalog_b)
# Each imports tc_common only.
import os
import sys

import tc_common as common
from tc_catalog import catalog, catalog_b, in_window, long_steps, per_step, recorded_instances  # noqa: F401
from tc_common import (ONE_SPEED, ONE_SPEED_STEPS, DeviceTrace, Trace, best_speed, check, clip,  # noqa: F401
                       crowded, gaps, intersect, length, load, median, one_speed, quantile, ranks,
                       speed_matched, spread, step_speeds, tcheck, truth_of, union, upper_median)
from tc_device import bubble, emu, moe, multirank, pipeline, schedule_idle  # noqa: F401
from tc_noleak import (KINETO_KEYS, TRACE_NAME, leak_words, name_leaks, names, noleak, norm,  # noqa: F401
                       strings)
from tc_regen import (OP_NAMESPACE, ORIGINAL_COUNTS_HEALTHY, ORIGINAL_COUNTS_OPSTORM,  # noqa: F401
                      ORIGINAL_PHASES, anatomy, anatomy_of, chain, count_names, nested_ops, original_step,
                      signatures, structure)

# the pass/fail state (failures, timing_skip, timing_dir) lives in tc_common
# alone, where check() and tcheck() read it: a script that sets it imports
# tc_common (tests/e2e/multirank_signatures.sh)


def main():
    cmds = {"signatures": signatures, "anatomy": anatomy, "noleak": noleak, "names": names, "emu": emu,
            "multirank": multirank, "pipeline": pipeline, "moe": moe,
            "catalog": catalog, "catalog_b": catalog_b, "crowded": None}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds or (sys.argv[1] != "names" and len(sys.argv) != 3):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "crowded":
        why = crowded(sys.argv[2])
        print(why or "not crowded")
        return 0 if why else 1
    if sys.argv[1] in ("emu", "catalog", "catalog_b", "signatures") and os.environ.get("FL_TIMING_CHECKS") != "always":
        common.timing_dir = sys.argv[2]  # their timing checks name the scenario they read
    if sys.argv[1] in ("multirank", "pipeline", "moe"):
        if os.environ.get("FL_TIMING_CHECKS", "1") == "0":
            common.timing_skip = "FL_TIMING_CHECKS=0, a sanitizer build distorts timing"
        elif os.environ.get("FL_TIMING_CHECKS") != "always":  # always: a benchmark asserts them anyway
            # ranks that shared a core: the whole directory; the cores' speed: each
            # run's steps (one_speed())
            common.timing_skip = crowded(sys.argv[2], speed=False)
    cmds[sys.argv[1]](*sys.argv[2:])
    print("%d checks failed" % len(common.failures) if common.failures else "all checks passed")
    return 1 if common.failures else 0


if __name__ == "__main__":
    sys.exit(main())
