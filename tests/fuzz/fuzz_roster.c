/* fuzz_roster.c — the roster CSV of `grade --batch ROSTER.csv`
 * (grader/grading/batch_csv.c): the CSV reader, the roster's header and
 * rows (learner ids, answers, truths or seeds, traces), the learner ids of
 * `assign`, and CSV writing: every row read, written back field by field
 * (after a first line, as the gradebook writes rows after its header) and
 * read again, gives the same fields (an abort otherwise). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grader/grading/batch.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fields written with fl_csv_field read back the same */
static void round_trip(const struct fl_csv *c)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct fl_csv_row *row = &c->rows[i];
		if (row->error || !row->n)
			continue;
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, "learner\n"); /* a BOM starting the text is skipped: never a row's */
		for (size_t k = 0; k < row->n; k++) {
			if (k)
				strbuf_adds(&sb, ",");
			fl_csv_field(&sb, row->f[k]);
		}
		strbuf_adds(&sb, "\n");
		struct fl_csv back;
		fl_csv_parse(sb.buf, sb.len, &back);
		int blank = row->n == 1 && !*row->f[0]; /* a line of one empty field is a blank line */
		if (!blank) {
			if (back.n != 2 || back.rows[1].error || back.rows[1].n != row->n)
				abort();
			for (size_t k = 0; k < row->n; k++)
				if (strcmp(fl_csv_unguard(back.rows[1].f[k]), row->f[k]))
					abort();
		}
		fl_csv_release(&back);
		strbuf_release(&sb);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	uint8_t mode = data[0];
	const char *path = fuzz_file(".csv", data + 1, size - 1);
	struct fl_roster_opts o = {.truths_dir = mode & 1 ? "truths" : NULL,
				   .truth = mode & 2 ? "course.truth.json" : NULL};
	struct fl_roster r;
	memset(&r, 0, sizeof(r));
	fl_roster_load(path, &o, &r);
	fl_roster_release(&r);
	memset(&r, 0, sizeof(r));
	fl_roster_learners_load(path, &r);
	fl_roster_release(&r);
	struct fl_csv c;
	fl_csv_parse((const char *)data + 1, size - 1, &c);
	round_trip(&c);
	fl_csv_release(&c);
	return 0;
}
