/* opts.h — the one option parser of the command line. A command declares its
 * options (struct fl_opt) and its positional arguments in its entry of the
 * command table; fl_opts_parse reads argv against them:
 *   --name VALUE, --name=VALUE, an alias such as -o VALUE, flags (--name),
 *   the same option given again (every value is kept, in order), positional
 *   arguments anywhere, "--" (everything after it is positional, "-" alone is
 *   one), and --help / -h (prints the command's usage; nothing else runs).
 * Usage errors are FL_EINPUT (exit 2) and name the command, the option as it
 * was typed and what was expected. */
#ifndef FL_OPTS_H
#define FL_OPTS_H

#include <stddef.h>

#include "common/status.h"

enum fl_opt_kind {
	FL_OPT_FLAG,   /* no value */
	FL_OPT_TEXT,   /* a value; expects says what it is ("a directory") */
	FL_OPT_INT,    /* an integer in [min, max] */
	FL_OPT_NUMBER, /* a number in [min, max]; expects names it ("a fraction") */
};

#define FL_OPT_NONEMPTY 1u /* an empty value counts as a missing one */

struct fl_opt {
	const char *name;  /* "--out" */
	const char *alias; /* "-o", or NULL */
	enum fl_opt_kind kind;
	const char *expects;
	double min, max;
	unsigned flags;
};

/* What a command accepts besides its options (part of its table entry). */
struct fl_optspec {
	const struct fl_opt *opts; /* ends with {NULL} */
	const char *arg;           /* a positional argument, singular: "scenario file" */
	int min_args, max_args;    /* max_args < 0: any number */
	/* keep reading after the first usage error (which is the one reported),
	 * so the options that say where a result goes are still known */
	int keep_going;
};

/* One option as given. */
struct fl_optval {
	const struct fl_opt *opt;
	const char *value; /* NULL for a flag */
	long l;            /* FL_OPT_INT */
	double d;          /* FL_OPT_INT, FL_OPT_NUMBER */
};

struct fl_args {
	const struct fl_opt *opts; /* the command's */
	int help;              /* --help was given and the usage printed: return */
	const char **args;     /* the positional arguments, in order */
	size_t nargs;
	struct fl_optval *vals; /* the options, in order */
	size_t nvals;
};

struct fl_command;

/* Parse argv[1..argc-1] (argv[0] is the command's name) against the command's
 * table entry. On --help prints c->usage, sets a->help and returns FL_OK (with
 * keep_going, --help anywhere wins over a usage error). Otherwise returns the
 * first usage error; with keep_going, a holds every option that was read well.
 * Release a with fl_args_release whatever the outcome. */
enum fl_status fl_opts_parse(const struct fl_command *c, int argc, char **argv, struct fl_args *a);
void fl_args_release(struct fl_args *a);

/* The last occurrence of the option named name (its long name), or NULL.
 * Asking for a name the command does not declare is a programming error. */
const struct fl_optval *fl_args_get(const struct fl_args *a, const char *name);
/* The n-th (from 0) occurrence of a repeated option, or NULL. */
const struct fl_optval *fl_args_nth(const struct fl_args *a, const char *name, size_t n);
static inline int fl_args_has(const struct fl_args *a, const char *name) { return fl_args_get(a, name) != NULL; }
/* The option's last value, or def when it was not given. */
const char *fl_args_text(const struct fl_args *a, const char *name, const char *def);

#endif
