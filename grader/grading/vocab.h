/* vocab.h — the catalog vocabulary (docs/catalog.md) and matching a learner's words
 * onto its IDs.
 *
 * A vocabulary is a table of terms: a stable ID (`input_starvation`) and the
 * words learners use for it. Matching normalises both sides (units.h fl_norm):
 *   1. exact: the whole answer is the ID, one of its aliases, or matches one of
 *      its regular expressions (POSIX extended, case-insensitive, anchored to
 *      the whole answer);
 *   2. otherwise phrase search: every ID/alias found as whole words inside the
 *      answer; a hit inside a longer hit of another term is dropped ("async
 *      checkpoint" is not also "async").
 * The result lists the distinct terms found. Callers decide what several terms
 * mean (a hedge for a single choice, several items for a set).
 */
#ifndef FL_VOCAB_H
#define FL_VOCAB_H

#include <regex.h>
#include <stddef.h>

struct fl_term {
	const char *id;
	const char *const *aliases; /* NULL-terminated; may be NULL */
};

struct fl_vocabulary {
	const char *name;        /* "families", "fixes", "yesno" */
	const char *noun;        /* for messages: "catalog family" */
	const struct fl_term *terms; /* terminated by an entry with id NULL */
};

/* NULL-terminated table of the built-in vocabularies. ("spans" is not here:
 * its terms are the span names of the truth's trace.) */
extern const struct fl_vocabulary *const fl_vocabularies[];
const struct fl_vocabulary *fl_vocabulary_find(const char *name);

/* ---- matcher ---- */

struct fl_matcher_term {
	char *id;
	char **phrases;      /* normalised (loose); the ID itself first */
	size_t n_phrases;
	regex_t *res;
	size_t n_res;
};

struct fl_matcher {
	struct fl_matcher_term *terms;
	size_t n;
};
#define FL_MATCHER_INIT { NULL, 0 }

#define FL_MATCH_MAX 16

struct fl_match {
	size_t n;                  /* distinct terms found (at most FL_MATCH_MAX kept) */
	size_t term[FL_MATCH_MAX]; /* indices into matcher->terms, in order of appearance */
	int exact;                 /* the whole answer was one term */
};

/* Add a term (if new) and, when alias is not NULL, an alias phrase for it. */
void fl_matcher_add(struct fl_matcher *m, const char *id, const char *alias);
/* Add a regular expression for a term. Returns 0, or -1 with the regcomp
 * message in err. */
/* A pattern's complexity within bounds (see fl_regex_check in vocab.c):
 * 0, or -1 with the reason in err. fl_matcher_add_regex checks it first. */
#define FL_REGEX_MAX_LEN 512
#define FL_REGEX_MAX_COUNT 100
int fl_regex_check(const char *re, char *err, size_t errsz);
int fl_matcher_add_regex(struct fl_matcher *m, const char *id, const char *re, char *err, size_t errsz);
void fl_matcher_add_vocabulary(struct fl_matcher *m, const struct fl_vocabulary *v);
/* Index of a term by ID (normalised comparison), or -1. */
long fl_matcher_find(const struct fl_matcher *m, const char *id);
void fl_matcher_match(const struct fl_matcher *m, const char *text, struct fl_match *r);
void fl_matcher_release(struct fl_matcher *m);

#endif
