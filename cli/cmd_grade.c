/* cmd_grade.c — faultline grade: a learner's answer against the truth with a
 * rubric, reported in the format a platform reads; a usage error still leaves
 * a report where --out says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/outfile.h"
#include "common/strbuf.h"
#include "grader/grading/batch.h"
#include "grader/grading/grade.h"
#include "grader/grading/report.h"

const char fl_grade_usage[] =
	"usage: faultline grade --truth T --answer A [--rubric R] [--format F] [--out FILE]\n"
	"                       [--reveal] [--strict] [--fail-under X] [--exit-zero] [--scenarios DIR]\n"
	"                       [--traces DIR]\n"
	"\n"
	"Grades a learner's answer file (JSON, or 'key: value' lines with # comments)\n"
	"against the truth with a rubric (faultline.rubric/1). The rubric defaults to\n"
	"the one the truth names (scenario.rubric), looked up beside the truth, then in\n"
	"scenarios/. Feedback says what each answer was read as; it never shows the\n"
	"expected values, tolerances or aliases unless --reveal. See docs/grading.md.\n"
	"\n"
	"  --truth T        the truth file (NAME.truth.json)\n"
	"  --answer A       the learner's answer\n"
	"  --rubric R       the rubric (default: the truth's scenario.rubric)\n"
	"  --format F       text (default), json (faultline.grade/1), gradescope,\n"
	"                   prairielearn or junit\n"
	"  --out FILE       write the report there, atomically, whatever the outcome\n"
	"                   (default: standard output)\n"
	"  --reveal         show expected values, tolerances and instructor notes\n"
	"  --strict         a value that cannot be read makes the whole answer not\n"
	"                   gradable (exit 3); by default that question scores 0\n"
	"                   and every other question is graded\n"
	"  --fail-under X   exit 1 when the score is below the fraction X of the maximum\n"
	"  --exit-zero      exit 0 whenever the report was written (platforms that\n"
	"                   discard a result on a non-zero exit, such as PrairieLearn)\n"
	"  --scenarios DIR  where to look for the rubric the truth names\n"
	"  --traces DIR     where the truth's traces are (default: beside the truth;\n"
	"                   'faultline assign' keeps them apart); still checked\n"
	"                   against the truth's sha256\n"
	"\n"
	"A whole course (docs/grading.md, 'Batch grading'):\n"
	"  faultline grade --batch ROSTER.csv [--out DIR] [--format F] [--previous OLD.csv]\n"
	"  faultline grade --answers DIR (--truths DIR | --truth T) [--out DIR] ...\n"
	"  --batch ROSTER   a CSV roster: learner,answer,truth (or seed)[,traces]; a\n"
	"                   header row names the columns; paths are relative to the\n"
	"                   roster ('faultline assign' writes one)\n"
	"  --answers DIR    every answer file of DIR, the learner id being the file\n"
	"                   name up to its first '.'\n"
	"  --truths DIR     the truths: ID.truth.json (--answers) or seed-S.truth.json\n"
	"                   (a roster's seed column); --truth T: one truth for all\n"
	"  --out DIR        the output directory (default: grades): reports/ID.EXT\n"
	"                   (one per learner, --format, default json), gradebook.csv,\n"
	"                   summary.txt (also on standard output) and summary.json\n"
	"  --gradebook FILE write the gradebook there instead of DIR/gradebook.csv\n"
	"  --previous OLD   an earlier gradebook: DIR/regrade.csv lists the learners\n"
	"                   whose score changed, and by how much\n"
	"  A bad answer, truth or roster row never stops the batch; its gradebook row\n"
	"  (or the summary) says why. Exit 0: every learner graded; 1: the gradebook\n"
	"  is written but some learners or roster rows were not graded; 2: usage, the\n"
	"  roster or an output cannot be read or written.\n"
	"\n"
	"Exit: 0 graded; 1 below --fail-under; 2 usage error or --out cannot be written;\n"
	"3 the answer could not be parsed, or (--strict) a value could not be read\n"
	"(reported as not gradable); 4 truth or rubric error (the message names the\n"
	"file and the key).\n";

/* every value must be non-empty ("--truth=" is a missing truth) */
#define VALUE(n) {.name = n, .kind = FL_OPT_TEXT, .expects = "a value", .flags = FL_OPT_NONEMPTY}
const struct fl_opt fl_grade_opts[] = {
	VALUE("--truth"),
	VALUE("--answer"),
	VALUE("--rubric"),
	VALUE("--format"),
	VALUE("--out"),
	{.name = "--fail-under", .kind = FL_OPT_NUMBER, .expects = "a fraction", .min = 0, .max = 1,
	 .flags = FL_OPT_NONEMPTY},
	VALUE("--scenarios"),
	VALUE("--traces"),
	VALUE("--batch"),
	VALUE("--answers"),
	VALUE("--truths"),
	VALUE("--previous"),
	VALUE("--gradebook"),
	{.name = "--reveal"},
	{.name = "--strict"},
	{.name = "--exit-zero"},
	{.name = NULL},
};
#undef VALUE

struct grade_args {
	struct fl_grade_opts o;
	const char *format, *out;
	double fail_under;
	int have_fail_under, exit_zero, have_format;
	const char *batch, *answers, *truths, *previous, *gradebook; /* batch grading */
};

/* The options read well (even after a usage error), then the checks of the
 * whole: a known format, --truth and --answer given. */
static enum fl_status check_args(enum fl_status st, const struct fl_args *a, struct grade_args *g)
{
	const struct fl_optval *fu = fl_args_get(a, "--fail-under");
	g->o.truth_path = fl_args_text(a, "--truth", NULL);
	g->o.answer_path = fl_args_text(a, "--answer", NULL);
	g->o.rubric_path = fl_args_text(a, "--rubric", NULL);
	g->o.scenarios_dir = fl_args_text(a, "--scenarios", NULL);
	g->o.traces_dir = fl_args_text(a, "--traces", NULL);
	g->o.reveal = fl_args_has(a, "--reveal");
	g->o.strict = fl_args_has(a, "--strict");
	g->format = fl_args_text(a, "--format", "text");
	g->out = fl_args_text(a, "--out", NULL);
	g->fail_under = fu ? fu->d : 0;
	g->have_fail_under = fu != NULL;
	g->exit_zero = fl_args_has(a, "--exit-zero");
	g->have_format = fl_args_has(a, "--format");
	g->batch = fl_args_text(a, "--batch", NULL);
	g->answers = fl_args_text(a, "--answers", NULL);
	g->truths = fl_args_text(a, "--truths", NULL);
	g->previous = fl_args_text(a, "--previous", NULL);
	g->gradebook = fl_args_text(a, "--gradebook", NULL);
	if (!st && !fl_report_format_find(g->format)) {
		char list[128] = "";
		for (size_t i = 0; fl_report_formats[i]; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
				 fl_report_formats[i]->name);
		st = fl_error(FL_EINPUT, "grade: option '--format': unknown format '%s', expected one of: %s", g->format, list);
	}
	if (!st && (g->batch || g->answers)) {
		if (g->batch && g->answers)
			st = fl_error(FL_EINPUT, "grade: give --batch ROSTER or --answers DIR, not both");
		else if (g->o.answer_path)
			st = fl_error(FL_EINPUT, "grade: --answer grades one answer; with %s every answer comes from it",
				      g->batch ? "--batch the roster" : "--answers the directory");
		else if (g->have_fail_under)
			st = fl_error(FL_EINPUT, "grade: --fail-under is for one answer, not a batch");
		else if (g->o.traces_dir)
			st = fl_error(FL_EINPUT, "grade: --traces is for one answer; a roster gives each learner's in its "
				      "traces column");
		return st;
	}
	if (!st && (g->truths || g->previous || g->gradebook))
		st = fl_error(FL_EINPUT, "grade: option '%s' is for batch grading (--batch ROSTER or --answers DIR)",
			      g->truths ? "--truths" : g->previous ? "--previous" : "--gradebook");
	if (!st && !g->o.truth_path)
		st = fl_error(FL_EINPUT, "grade: expected --truth FILE (see 'faultline grade --help')");
	if (!st && !g->o.answer_path)
		st = fl_error(FL_EINPUT, "grade: expected --answer FILE (see 'faultline grade --help')");
	return st;
}

static enum fl_status emit(const struct fl_grade *g, const struct fl_report_format *f, const char *out)
{
	struct strbuf sb = STRBUF_INIT;
	f->write(g, &sb);
	enum fl_status st = FL_OK;
	if (out) {
		if ((st = fl_write_file_atomic(out, sb.buf, sb.len)))
			st = fl_error_prefix(FL_EINPUT, "grade: --out: ");
	} else {
		fwrite(sb.buf, 1, sb.len, stdout);
	}
	strbuf_release(&sb);
	return st;
}

static enum fl_status run_batch(const struct grade_args *a)
{
	struct fl_roster r;
	struct fl_roster_opts ro = {.truths_dir = a->truths, .truth = a->o.truth_path};
	enum fl_status st = a->batch ? fl_roster_load(a->batch, &ro, &r) : fl_roster_from_dirs(a->answers, &ro, &r);
	if (st) {
		fl_roster_release(&r);
		return st;
	}
	struct fl_batch_opts bo = {.out_dir = a->out ? a->out : "grades", .format = a->have_format ? a->format : "json",
				   .gradebook = a->gradebook, .previous = a->previous, .rubric_path = a->o.rubric_path,
				   .scenarios_dir = a->o.scenarios_dir, .reveal = a->o.reveal, .strict = a->o.strict};
	struct fl_batch_stats bs;
	st = fl_batch_run(&r, &bo, &bs);
	if (!st && (bs.graded < bs.learners || bs.bad_rows))
		st = fl_error(FL_ECHECK, "grade: %zu of %zu learners graded, %zu roster rows not used (see the gradebook's "
			      "state and message columns and the summary)", bs.graded, bs.learners, bs.bad_rows);
	fl_roster_release(&r);
	if (st == FL_ECHECK && a->exit_zero) {
		fprintf(stderr, "faultline: %s (exit 0: --exit-zero)\n", fl_error_msg());
		fl_error_clear();
		return FL_OK;
	}
	return st;
}

enum fl_status fl_cmd_grade(int argc, char **argv)
{
	struct fl_args args;
	enum fl_status st = fl_command_args("grade", argc, argv, &args);
	if (args.help) {
		fl_args_release(&args);
		return st;
	}
	struct grade_args a = {0};
	struct fl_grade g = {0};
	st = check_args(st, &args, &a); /* the values are argv's strings */
	fl_args_release(&args);
	if (!st && (a.batch || a.answers))
		return run_batch(&a);
	const struct fl_report_format *f = fl_report_format_find(a.format);
	if (!f)
		f = fl_report_format_find("text");
	if (st) {
		/* still leave a result file where the platform expects one */
		fl_grade_fail(&g, FL_GRADE_USAGE_ERROR, fl_error_msg());
		if (a.out && !a.batch && !a.answers) { /* a batch's --out is a directory */
			char msg[4096];
			snprintf(msg, sizeof(msg), "%s", fl_error_msg());
			if (emit(&g, f, a.out) == FL_OK)
				fl_error(FL_EINPUT, "%s", msg);
		}
		fl_grade_release(&g);
		return FL_EINPUT;
	}
	st = fl_grade_run(&a.o, &g);
	char msg[4096];
	snprintf(msg, sizeof(msg), "%s", st ? fl_error_msg() : "");
	enum fl_status wst = emit(&g, f, a.out);
	if (wst) {
		fl_grade_release(&g);
		return wst;
	}
	if (!st && a.have_fail_under && fl_grade_fraction(&g) < a.fail_under)
		st = fl_error(FL_ECHECK, "grade: score %.4g of %.4g (%.4g) is below --fail-under %g", g.score, g.max_score,
			      fl_grade_fraction(&g), a.fail_under);
	else if (st)
		fl_error(st, "%s", msg);
	fl_grade_release(&g);
	if (st && a.exit_zero) {
		fprintf(stderr, "faultline: %s (exit 0: --exit-zero)\n", fl_error_msg());
		fl_error_clear();
		return FL_OK;
	}
	return st;
}
