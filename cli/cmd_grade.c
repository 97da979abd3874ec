#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/outfile.h"
#include "common/strbuf.h"
#include "grader/grading/grade.h"
#include "cli/grader_commands.h"
#include "grader/grading/report.h"

const char fl_grade_usage[] =
	"usage: faultline grade --truth T --answer A [--rubric R] [--format F] [--out FILE]\n"
	"                       [--reveal] [--fail-under X] [--exit-zero] [--scenarios DIR]\n"
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
	"  --fail-under X   exit 1 when the score is below the fraction X of the maximum\n"
	"  --exit-zero      exit 0 whenever the report was written (platforms that\n"
	"                   discard a result on a non-zero exit, such as PrairieLearn)\n"
	"  --scenarios DIR  where to look for the rubric the truth names\n"
	"\n"
	"Exit: 0 graded; 1 below --fail-under; 2 usage error or --out cannot be written;\n"
	"3 the answer could not be parsed (reported as not gradable); 4 truth or rubric\n"
	"error (the message names the file and the key).\n";

struct grade_args {
	struct fl_grade_opts o;
	const char *format, *out;
	double fail_under;
	int have_fail_under, exit_zero;
};

/* "--opt value" or "--opt=value"; *i advances past a separate value. */
static int take(int argc, char **argv, int *i, const char *opt, const char **val)
{
	const char *a = argv[*i];
	size_t l = strlen(opt);
	if (strncmp(a, opt, l) != 0)
		return 0;
	if (a[l] == '=') {
		*val = a + l + 1;
		return 1;
	}
	if (a[l])
		return 0;
	*val = *i + 1 < argc ? argv[++*i] : NULL;
	return 1;
}

static enum fl_status parse_args(int argc, char **argv, struct grade_args *g, int *help)
{
	static const char *const valued[] = {"--truth", "--answer", "--rubric", "--format", "--out", "--fail-under",
					     "--scenarios"};
	enum fl_status st = FL_OK;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		int k = -1;
		for (int j = 0; j < (int)(sizeof(valued) / sizeof(valued[0])) && k < 0; j++)
			if (take(argc, argv, &i, valued[j], &v))
				k = j;
		if (k >= 0) {
			if (!v || !*v) {
				if (!st)
					st = fl_error(FL_EINPUT, "grade: option '%s' expects a value", valued[k]);
				continue;
			}
			switch (k) {
			case 0: g->o.truth_path = v; break;
			case 1: g->o.answer_path = v; break;
			case 2: g->o.rubric_path = v; break;
			case 3: g->format = v; break;
			case 4: g->out = v; break;
			case 5: {
				char *end;
				errno = 0;
				double x = strtod(v, &end);
				if (errno || *end || end == v || !(x >= 0 && x <= 1)) {
					if (!st)
						st = fl_error(FL_EINPUT, "grade: option '--fail-under' expects a fraction in "
							      "[0, 1], got '%s'", v);
				} else {
					g->fail_under = x;
					g->have_fail_under = 1;
				}
				break;
			}
			case 6: g->o.scenarios_dir = v; break;
			}
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = 1;
		} else if (!strcmp(a, "--reveal")) {
			g->o.reveal = 1;
		} else if (!strcmp(a, "--exit-zero")) {
			g->exit_zero = 1;
		} else if (!st) {
			st = a[0] == '-' ? fl_error(FL_EINPUT, "grade: unknown option '%s' (see 'faultline grade --help')", a)
					 : fl_error(FL_EINPUT, "grade: unexpected argument '%s' (see 'faultline grade --help')", a);
		}
	}
	if (!st && !fl_report_format_find(g->format)) {
		char list[128] = "";
		for (size_t i = 0; fl_report_formats[i]; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
				 fl_report_formats[i]->name);
		st = fl_error(FL_EINPUT, "grade: option '--format': unknown format '%s', expected one of: %s", g->format, list);
	}
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

enum fl_status fl_cmd_grade(int argc, char **argv)
{
	struct grade_args a = {.format = "text"};
	struct fl_grade g = {0};
	int help = 0;
	enum fl_status st = parse_args(argc, argv, &a, &help);
	if (help) {
		fputs(fl_grade_usage, stdout);
		return FL_OK;
	}
	const struct fl_report_format *f = fl_report_format_find(a.format);
	if (!f)
		f = fl_report_format_find("text");
	if (st) {
		/* still leave a result file where the platform expects one */
		fl_grade_fail(&g, FL_GRADE_USAGE_ERROR, fl_error_msg());
		if (a.out) {
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
