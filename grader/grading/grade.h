/* grade.h — grade one answer against a truth with a rubric.
 *
 * fl_grade_run loads the truth, finds and loads the rubric, resolves every
 * expected value (refs.h), reads the answer (answer.h) and judges each
 * question (rubric.h kinds). Whatever happens, the fl_grade it fills can be
 * written by every report format (report.h): a usage, truth or rubric error
 * and an unparseable answer are states of the grade, not missing reports.
 *
 * Statuses map onto the exit codes of docs/grading.md: FL_OK (0) graded,
 * FL_EINPUT (2) usage, FL_GRADE_EANSWER (3) the answer could not be parsed,
 * FL_GRADE_ECONFIG (4) truth or rubric error. The message (fl_error) of a
 * config error names the file and the key; it is for the instructor.
 */
#ifndef FL_GRADE_H
#define FL_GRADE_H

#include <cjson/cJSON.h>

#include "common/status.h"
#include "grader/grading/rubric.h"

#define FL_GRADE_EANSWER FL_ERUNTIME  /* 3: the answer could not be parsed */
#define FL_GRADE_ECONFIG FL_EINTERNAL /* 4: truth or rubric error */

enum fl_grade_state {
	FL_GRADE_GRADED = 0,
	FL_GRADE_UNPARSEABLE, /* the learner's answer: not gradable, costs no attempt */
	FL_GRADE_CONFIG_ERROR, /* truth, rubric or trace: the instructor's side */
	FL_GRADE_USAGE_ERROR,  /* the grader was called wrongly */
};

struct fl_grade_item {
	const struct fl_question *q;
	struct fl_verdict v;
	double score;           /* points * credit */
	char *answer_key;       /* the key the answer used (cleaned); NULL when missing */
	int unreadable;         /* the value could not be read (scored 0, or a format error) */
};

struct fl_grade_opts {
	const char *truth_path, *answer_path, *rubric_path; /* rubric may be NULL */
	const char *scenarios_dir; /* looked in for a rubric named by the truth; NULL: ./scenarios, then the source tree's */
	const char *traces_dir;    /* where the truth's traces are (trace: references, sha256-checked);
				    * NULL: beside the truth (`faultline assign` keeps them apart) */
	int reveal;
	int strict; /* --strict: a value that cannot be read makes the answer not gradable (exit 3),
		     * instead of scoring 0 for its question */
};

struct fl_grade {
	enum fl_grade_state state;
	int reveal, strict;
	char *truth_name, *answer_name, *rubric_name; /* base names */
	char *scenario;           /* the truth's scenario.name */
	struct fl_rubric rubric;
	int have_rubric;
	struct fl_grade_item *items;
	size_t n;
	double score, max_score;
	char **format_errors;     /* learner-safe */
	size_t n_format_errors;
	char **ignored_keys;      /* answer keys no question reads (cleaned) */
	size_t n_ignored;
	char *error;              /* config or usage error, for the instructor */
	double elapsed_s;
	cJSON *truth;
	cJSON *trace_metrics;     /* computed on the first trace: reference */
	cJSON *fleet_metrics;     /* computed on the first fleet: reference (fleet_ref.c) */
	cJSON *diagnosis;         /* computed on the first diagnosis: reference (diagnosis_ref.c) */
	char *truth_path;
	char *traces_dir;         /* NULL: the truth's own directory */
	int shared;               /* truth, rubric, trace and fleet metrics belong to a key (fl_grade_with) */
};

enum fl_status fl_grade_run(const struct fl_grade_opts *o, struct fl_grade *g);
/* Record a failure that happened before fl_grade_run (a usage error). */
void fl_grade_fail(struct fl_grade *g, enum fl_grade_state state, const char *msg);
/* score / max_score in [0, 1] (0 when not graded). */
double fl_grade_fraction(const struct fl_grade *g);
void fl_grade_release(struct fl_grade *g);

/* Many answers against one truth (batch grading): the truth, the rubric and
 * every expected value (with the trace metrics they read) are prepared once by
 * fl_grade_key_load, which always gives a key — one holding the config error
 * when the truth or rubric is bad (its status is returned). fl_grade_with
 * grades one answer with it and fills g as fl_grade_run would (a bad key gives
 * a config-error grade); g borrows the key's truth and rubric, so release g
 * before the key. o->answer_path is not used by fl_grade_key_load. */
struct fl_grade_key;
enum fl_status fl_grade_key_load(const struct fl_grade_opts *o, struct fl_grade_key **out);
/* The key's status, and its config error message (NULL when none). */
enum fl_status fl_grade_key_status(const struct fl_grade_key *k, const char **msg);
enum fl_status fl_grade_with(const struct fl_grade_key *k, const char *answer_path, struct fl_grade *g);
void fl_grade_key_free(struct fl_grade_key *k);

/* fleet: references: the fleet analysis of the jobs CSV (and XID CSV) the
 * truth's `fleet` object names beside the truth, with its parameters
 * (fleet_ref.c); arg is the fl_grade. */
enum fl_status fl_grade_fleet_metrics(void *arg, const cJSON **metrics);

/* diagnosis: references: `faultline diagnose` of the truth's traces
 * (faultline.diagnosis/1; diagnosis_ref.c); arg is the fl_grade. And the
 * diagnosis as text, for --reveal's worked answer (an error is said there). */
struct strbuf;
enum fl_status fl_grade_diagnosis(void *arg, const cJSON **diagnosis);
void fl_grade_diagnosis_text(const struct fl_grade *g, struct strbuf *out);

#endif
