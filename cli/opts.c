/* opts.c — the option parser every command uses (see opts.h). */
#include "cli/opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

static int is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

/* What an option's value must be: "a directory", "an integer in [1, 1000]". */
static void describe(const struct fl_opt *o, char *out, size_t n)
{
	if (o->kind == FL_OPT_INT)
		snprintf(out, n, "an integer in [%ld, %ld]", (long)o->min, (long)o->max);
	else if (o->kind == FL_OPT_NUMBER)
		snprintf(out, n, "%s in [%g, %g]", o->expects, o->min, o->max);
	else
		snprintf(out, n, "%s", o->expects);
}

/* The option of arg: "--name", "--name=value" (*eq at the '=') or an alias. */
static const struct fl_opt *find_opt(const struct fl_opt *opts, const char *arg, const char **eq)
{
	*eq = NULL;
	for (const struct fl_opt *o = opts; o->name; o++) {
		size_t l = strlen(o->name);
		if (strncmp(arg, o->name, l) == 0 && (arg[l] == '\0' || arg[l] == '=')) {
			*eq = arg[l] == '=' ? arg + l : NULL;
			return o;
		}
		if (o->alias && strcmp(arg, o->alias) == 0)
			return o;
	}
	return NULL;
}

/* Check v (NULL: missing) against o and fill *ov. typed: the option as given. */
static enum fl_status take_value(const char *cmd, const struct fl_opt *o, const char *typed, const char *v,
				 struct fl_optval *ov)
{
	char what[128];
	describe(o, what, sizeof(what));
	if (!v || (!*v && (o->flags & FL_OPT_NONEMPTY)))
		return fl_error(FL_EINPUT, "%s: option '%s' expects %s", cmd, typed, what);
	ov->value = v;
	if (o->kind == FL_OPT_INT || o->kind == FL_OPT_NUMBER) {
		char *end;
		errno = 0;
		if (o->kind == FL_OPT_INT) {
			ov->l = strtol(v, &end, 10);
			ov->d = (double)ov->l;
		} else {
			ov->d = strtod(v, &end);
		}
		if (errno || *end || end == v || !(ov->d >= o->min && ov->d <= o->max))
			return fl_error(FL_EINPUT, "%s: option '%s' expects %s, got '%s'", cmd, typed, what, v);
	}
	return FL_OK;
}

/* The next positional argument; too many is a usage error. */
static enum fl_status take_arg(const struct fl_command *c, struct fl_args *a, const char *arg)
{
	const struct fl_optspec *s = &c->opts;
	if (s->max_args >= 0 && a->nargs >= (size_t)s->max_args) {
		if (s->max_args == 0)
			return fl_error(FL_EINPUT, "%s: unexpected argument '%s' (see 'faultline %s --help')", c->name, arg,
					c->name);
		if (s->max_args == 1)
			return fl_error(FL_EINPUT, "%s: expected one %s, got '%s' and '%s'", c->name, s->arg, a->args[0], arg);
		return fl_error(FL_EINPUT, "%s: expected at most %d %ss, got '%s'", c->name, s->max_args, s->arg, arg);
	}
	a->args[a->nargs++] = arg;
	return FL_OK;
}

/* One argument at argv[*i] (advanced past a separate value). */
static enum fl_status parse_one(const struct fl_command *c, int argc, char **argv, int *i, struct fl_args *a,
				int *dashdash)
{
	const char *arg = argv[*i];
	if (*dashdash || arg[0] != '-' || arg[1] == '\0')
		return take_arg(c, a, arg);
	if (strcmp(arg, "--") == 0) {
		*dashdash = 1;
		return FL_OK;
	}
	const char *eq;
	const struct fl_opt *o = find_opt(c->opts.opts, arg, &eq);
	if (!o)
		return fl_error(FL_EINPUT, "%s: unknown option '%s' (see 'faultline %s --help')", c->name, arg, c->name);
	char typed[64];
	snprintf(typed, sizeof(typed), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
	struct fl_optval ov = {.opt = o};
	if (o->kind == FL_OPT_FLAG) {
		if (eq)
			return fl_error(FL_EINPUT, "%s: option '%s' takes no value, got '%s'", c->name, typed, eq + 1);
	} else {
		const char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
		enum fl_status st = take_value(c->name, o, typed, v, &ov);
		if (st)
			return st;
	}
	a->vals[a->nvals++] = ov;
	return FL_OK;
}

enum fl_status fl_opts_parse(const struct fl_command *c, int argc, char **argv, struct fl_args *a)
{
	const struct fl_optspec *s = &c->opts;
	*a = (struct fl_args){0};
	a->opts = s->opts;
	a->args = calloc((size_t)argc + 1, sizeof(*a->args));
	a->vals = calloc((size_t)argc + 1, sizeof(*a->vals));
	if (!a->args || !a->vals)
		abort();
	enum fl_status st = FL_OK;
	int dashdash = 0;
	for (int i = 1; i < argc; i++) {
		if (!dashdash && is_help(argv[i])) {
			fputs(c->usage, stdout);
			fl_error_clear();
			a->help = 1;
			return FL_OK;
		}
		if (st) { /* keep_going: read on for the options, report the first error */
			char keep[4096];
			snprintf(keep, sizeof(keep), "%s", fl_error_msg());
			if (parse_one(c, argc, argv, &i, a, &dashdash))
				fl_error(st, "%s", keep);
			continue;
		}
		st = parse_one(c, argc, argv, &i, a, &dashdash);
		if (st && !s->keep_going)
			return st;
	}
	if (st)
		return st;
	if (a->nargs < (size_t)s->min_args) {
		if (s->max_args == 1)
			return fl_error(FL_EINPUT, "%s: expected a %s (see 'faultline %s --help')", c->name, s->arg, c->name);
		if (s->min_args == 1)
			return fl_error(FL_EINPUT, "%s: expected one or more %ss (see 'faultline %s --help')", c->name, s->arg,
					c->name);
		return fl_error(FL_EINPUT, "%s: expected at least %d %ss (see 'faultline %s --help')", c->name, s->min_args,
				s->arg, c->name);
	}
	return FL_OK;
}

void fl_args_release(struct fl_args *a)
{
	free(a->args);
	free(a->vals);
	*a = (struct fl_args){0};
}

static const struct fl_opt *declared(const struct fl_args *a, const char *name)
{
	for (const struct fl_opt *o = a->opts; o && o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	fprintf(stderr, "faultline: internal error: option '%s' is not declared\n", name);
	abort();
}

const struct fl_optval *fl_args_nth(const struct fl_args *a, const char *name, size_t n)
{
	const struct fl_opt *o = declared(a, name);
	for (size_t i = 0; i < a->nvals; i++)
		if (a->vals[i].opt == o && n-- == 0)
			return &a->vals[i];
	return NULL;
}

const struct fl_optval *fl_args_get(const struct fl_args *a, const char *name)
{
	const struct fl_opt *o = declared(a, name);
	for (size_t i = a->nvals; i-- > 0;)
		if (a->vals[i].opt == o)
			return &a->vals[i];
	return NULL;
}

const char *fl_args_text(const struct fl_args *a, const char *name, const char *def)
{
	const struct fl_optval *v = fl_args_get(a, name);
	return v ? v->value : def;
}
