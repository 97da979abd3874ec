/* rubric.h — a rubric (faultline.rubric/1) and the registry of question kinds.
 *
 * A rubric is instructor input: errors in it are FL_EINTERNAL (exit 4) with a
 * message naming the file and the key (`questions[2].tiers[0].rtol`). The
 * format is documented in docs/grading.md. Each question has a kind; a kind is
 * an entry in fl_question_kinds (questions.c) that reads its own keys and
 * judges one answer.
 */
#ifndef FL_RUBRIC_H
#define FL_RUBRIC_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/status.h"
#include "common/strbuf.h"
#include "grader/grading/answer.h"
#include "grader/grading/vocab.h"

enum fl_outcome {
	FL_OUT_CORRECT = 0, /* full credit */
	FL_OUT_PARTIAL,     /* some credit */
	FL_OUT_WRONG,       /* no credit */
	FL_OUT_MISSING,     /* no answer to this question */
	FL_OUT_FORMAT,      /* strict mode only: the value cannot be read as this kind, which makes
			     * the answer unparseable (by default such a value is FL_OUT_WRONG) */
	FL_OUT_COUNT
};
/* "correct", "partial", "wrong", "missing", "format_error" */
const char *fl_outcome_name(enum fl_outcome o);

struct fl_tier {
	double atol, rtol; /* number: |s - t| <= atol + rtol*|t| */
	double tol;        /* ratio: t/(1+tol) <= s <= t*(1+tol) */
	double credit;     /* (0, 1] */
};

struct fl_question_kind;

struct fl_question {
	size_t index;
	char *id;
	const char *prompt, *description, *visibility; /* point into the rubric doc */
	double points;
	const struct fl_question_kind *kind;
	char **keys;                  /* normalised answer keys, the id's first */
	size_t n_keys;
	const cJSON *expected;        /* the spec (string, number or array); NULL for text */
	const char *unit;             /* number: canonical unit */
	struct fl_tier *tiers;
	size_t n_tiers;
	const char *vocabulary;       /* choice, set: families | fixes | spans | yesno | NULL (choices only) */
	const cJSON *choices;         /* choice, set: extra terms (array of IDs) */
	const cJSON *aliases;         /* choice, set: {"ID": ["alias", "re:regex", ...]} */
	const cJSON *partial_credit;  /* choice: {"ID": credit} for near misses */
	double extra_penalty;         /* set: credit lost per wrong extra item */
	struct fl_matcher concepts;   /* text: one term per concept */
	long need;                    /* text: concepts needed for full credit */
	const char *feedback[FL_OUT_COUNT]; /* extra learner text per outcome; may be NULL */
};

struct fl_rubric {
	char *path;
	char *name_in_messages; /* base name */
	cJSON *doc;
	const char *name, *title, *description;
	const cJSON *scenarios; /* array of scenario names this rubric is for; may be NULL */
	struct fl_question *q;
	size_t n;
	double max_points;
};

/* Load and check a rubric. FL_EINTERNAL with "rubric 'x.rubric.json': key: problem". */
enum fl_status fl_rubric_load(const char *path, struct fl_rubric *r);
void fl_rubric_release(struct fl_rubric *r);

/* ---- question kinds ---- */

/* What a kind needs to judge one answer. */
struct fl_judge_ctx {
	const struct fl_question *q;
	const cJSON *expected; /* resolved expected value (a number, text or array); NULL for text */
	const cJSON *truth;    /* for vocabularies drawn from the truth (span names) */
	int strict;            /* a value that cannot be read is FL_OUT_FORMAT (the answer is not
				* gradable) instead of scoring 0 for its question */
};

struct fl_verdict {
	enum fl_outcome outcome;
	double credit;          /* [0, 1] */
	char *read_as;          /* what the answer was read as, cleaned; may be NULL */
	struct strbuf feedback; /* learner-visible; never the key */
	struct strbuf notes;    /* instructor-only: tier, convention, parsing */
	struct strbuf key;      /* the expected value and tolerance: shown only with --reveal */
};

struct fl_question_kind {
	const char *name;
	const char *summary;
	const char *const *keys; /* the kind's own rubric keys, NULL-terminated */
	/* Called when the rubric is loaded, to read and check the kind's own keys
	 * into q. `place` is "questions[N]". NULL: the kind has none. */
	enum fl_status (*load)(struct fl_question *q, const char *file, const char *place, const cJSON *j);
	/* Called once the expected value is resolved, to check its shape; returns
	 * NULL or what was expected ("a number"). NULL: any shape. */
	const char *(*check_expected)(const struct fl_question *q, const cJSON *expected);
	/* Called to judge a present answer; fills v (outcome, credit, texts). */
	void (*judge)(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v);
	/* Called to release what load allocated. NULL: nothing. */
	void (*release)(struct fl_question *q);
};

/* NULL-terminated. */
extern const struct fl_question_kind *const fl_question_kinds[];
const struct fl_question_kind *fl_question_kind_find(const char *name);

void fl_verdict_release(struct fl_verdict *v);

#endif
