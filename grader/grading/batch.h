/* batch.h — grading a whole course: a roster (or a directory of answers) in,
 * one report per learner, a gradebook CSV, a summary and a regrade out.
 *
 * Rosters and old gradebooks are hostile input: the CSV reader takes quoted
 * fields (with "" and line breaks inside), LF, CRLF or CR line ends, a UTF-8
 * byte-order mark, blank lines; a row it cannot use is counted with its line
 * number and the batch goes on. One bad answer or truth never stops a batch:
 * its row in the gradebook says what went wrong.
 *
 * Roster columns (a header row names them, in any order; without a header the
 * columns are learner, answer, truth-or-seed):
 *   learner (also id, learner_id, student, student_id, email, sis_id)
 *   answer  (also answer_file, submission)
 *   truth   (also truth_file): the learner's truth file
 *   seed    (also variant_seed, variant): the learner's variant seed; its truth
 *           is TRUTHS/seed-S.truth.json (TRUTHS: --truths, else truths/ beside
 *           the roster)
 *   traces  (also traces_dir, trace_dir), optional: the directory holding the
 *           truth's traces (trace: references), when not beside the truth —
 *           `faultline assign` keeps truths apart from the learners' traces
 * Relative paths are relative to the roster's directory. A learner id is the
 * name of the learner's report file: letters, digits and . _ - + @, at most
 * 128 characters, not starting with '.'; any other id is a bad row.
 */
#ifndef FL_BATCH_H
#define FL_BATCH_H

#include <stddef.h>

#include "common/status.h"
#include "common/strbuf.h"

/* ---- CSV ---- */

struct fl_csv_row {
	char **f;
	size_t n;
	size_t line; /* 1-based line the row starts on */
	char *error; /* the row cannot be used as it is (unterminated quote, NUL byte, too long): why */
};

struct fl_csv {
	struct fl_csv_row *rows; /* blank lines are left out */
	size_t n;
};

/* Parse CSV text (a BOM at the start is skipped). Never fails: a bad row is a
 * row with its error set. */
void fl_csv_parse(const char *text, size_t len, struct fl_csv *out);
void fl_csv_release(struct fl_csv *c);
/* Append one field, quoted when needed; a field that a spreadsheet would read
 * as a formula (= + - @ first), or that starts as such a guarded field does
 * ('=), gets a leading ' (fl_csv_unguard removes it). */
void fl_csv_field(struct strbuf *sb, const char *s);
const char *fl_csv_unguard(const char *s);

/* A string -> index map (learner ids of a roster or a gradebook). */
struct fl_strmap {
	char **keys;
	size_t *vals;
	size_t cap, n;
};
/* The index of key, or (size_t)-1. */
size_t fl_strmap_get(const struct fl_strmap *m, const char *key);
/* Add key (copied) with val; returns 0 when key was already there (unchanged). */
int fl_strmap_put(struct fl_strmap *m, const char *key, size_t val);
void fl_strmap_release(struct fl_strmap *m);

/* ---- roster ---- */

struct fl_roster_row {
	char *learner, *answer, *truth; /* paths resolved; truth NULL: the batch's --truth */
	char *traces;                   /* the traces directory (resolved), or NULL: beside the truth */
	size_t line;
};

struct fl_roster {
	struct fl_roster_row *rows;
	size_t n;
	char **bad; /* "roster 'x.csv' line N: why", one per row that cannot be used */
	size_t n_bad;
	size_t lines; /* rows read (after the header) */
};

struct fl_roster_opts {
	const char *truths_dir; /* truths of seeds (and of --answers: ID.truth.json) */
	const char *truth;      /* one truth for every learner (a roster without truth/seed) */
};

/* FL_EINPUT when the file cannot be read or the header lacks a needed column;
 * bad rows are not errors (r->bad). */
enum fl_status fl_roster_load(const char *path, const struct fl_roster_opts *o, struct fl_roster *r);
/* Every answer file of answers_dir (learner id = the file name up to its first
 * '.'), its truth truths_dir/ID.truth.json, or o->truth for all. */
enum fl_status fl_roster_from_dirs(const char *answers_dir, const struct fl_roster_opts *o, struct fl_roster *r);
void fl_roster_release(struct fl_roster *r);
/* 1 when id is usable as a learner id (and a file name). */
int fl_learner_id_ok(const char *id);

/* The learner ids of a roster (`faultline assign`): the learner column of a
 * header row (any other column is ignored), or the first column without one.
 * Read with the same CSV reader; every row that cannot be used (a CSV error,
 * no id, an id unsafe as a file name, an id listed again) is in r->bad with
 * its line number. r->rows hold only learner and line. */
enum fl_status fl_roster_learners_load(const char *path, struct fl_roster *r);

/* ---- batch ---- */

struct fl_batch_opts {
	const char *out_dir;   /* reports/, gradebook.csv, summary.{txt,json}, regrade.csv */
	const char *format;    /* the per-learner report format; NULL: none */
	const char *gradebook; /* default OUT/gradebook.csv */
	const char *previous;  /* an earlier gradebook: write OUT/regrade.csv */
	const char *rubric_path, *scenarios_dir;
	int reveal, strict;
	int quiet;             /* no progress on stderr */
};

struct fl_batch_stats {
	size_t learners, graded, unparseable, config_errors, bad_rows;
	size_t changed; /* --previous: learners whose score changed */
	double mean, median, elapsed_s;
};

/* Grade every row; write the reports, the gradebook, the summary (also on
 * stdout) and, with --previous, the regrade. FL_EINPUT when an output cannot be
 * written or --previous cannot be read; every per-learner problem is in its
 * gradebook row. */
enum fl_status fl_batch_run(const struct fl_roster *r, const struct fl_batch_opts *o, struct fl_batch_stats *st);

#endif
