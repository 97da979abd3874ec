/* fuzz_units.c — the units reader (grader/grading/units.c): quantities,
 * whole numbers and periods as learners write them, converted to each unit a
 * rubric may name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grader/grading/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	struct fl_quantity q;
	const char *why;
	if (!fl_quantity_parse(s, &q, &why)) {
		static const char *const units[] = {"ms", "us", "s", "ns", "count", "x", "percent", "steps", NULL};
		for (const char *const *u = units; *u; u++) {
			double v;
			const char *note;
			fl_quantity_convert(&q, *u, &v, &why, &note);
		}
	}
	long w;
	fl_whole_parse(s, 0, &w, &why);
	fl_whole_parse(s, 1, &w, &why);
	size_t bad;
	fl_utf8_valid(s, size, &bad);
	free(s);
	return 0;
}
