/* report.h — the grade report formats: one explicit table, one writer each.
 *
 * Every writer handles every state of a grade (graded, unparseable answer,
 * config error, usage error), so a platform always gets a whole, valid result
 * file. Learner-visible text never holds the expected values, tolerances or
 * alias lists (the verdict's `key`) unless the grade was run with --reveal;
 * instructor notes go only where a learner does not see them.
 *
 *   text          readable report (stdout by default)
 *   json          faultline.grade/1
 *   gradescope    Gradescope results.json
 *   prairielearn  PrairieLearn results.json (score in [0, 1], gradable)
 *   junit         JUnit XML, one testcase per question
 */
#ifndef FL_REPORT_H
#define FL_REPORT_H

#include "common/strbuf.h"
#include "grader/grading/grade.h"

struct fl_report_format {
	const char *name;
	const char *summary;
	/* Called once with the finished grade, in any state; appends the whole
	 * document to out. Never fails. */
	void (*write)(const struct fl_grade *g, struct strbuf *out);
};

/* NULL-terminated. */
extern const struct fl_report_format *const fl_report_formats[];
const struct fl_report_format *fl_report_format_find(const char *name);

#endif
