/* fuzz_rubric.c — the rubric loader (grader/grading/rubric.c and the question
 * kinds it loads: aliases, regular expressions with their complexity bound,
 * tiers, tolerances, references). */
#include <stdint.h>

#include "fuzz_common.h"
#include "grader/grading/rubric.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_rubric r;
	if (fl_rubric_load(fuzz_file(".rubric.json", data, size), &r))
		return 0;
	fl_rubric_release(&r);
	return 0;
}
