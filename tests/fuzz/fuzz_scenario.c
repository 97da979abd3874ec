/* fuzz_scenario.c — the scenario loader (generator/scenario.c): the JSON
 * reader with its size cap, the fault specs and their parameters, and the
 * per-learner variants drawn from "vary". A failed load is released too
 * (the loader's contract: release after any load). */
#include <stdint.h>

#include "fuzz_common.h"
#include "generator/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_scenario sc;
	if (!fl_scenario_load(fuzz_file(".scenario.json", data, size), &sc))
		fl_scenario_vary(&sc, 42);
	fl_scenario_release(&sc);
	return 0;
}
