/* fuzz_answer.c — the answer parser (grader/grading/answer.c): JSON answers
 * and `key: value` lines, and the quantity reader on every value it kept. */
#include <stdint.h>
#include <stdlib.h>

#include "grader/grading/answer.h"
#include "grader/grading/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_answer a;
	if (fl_answer_parse("answer.txt", (const char *)data, size, &a))
		return 0;
	for (size_t i = 0; i < a.n; i++)
		fl_answer_find(&a, a.items[i].norm_key);
	fl_answer_release(&a);
	return 0;
}
