#include "grader/grading/refs.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 16
#define MAX_ARGS 16

/* The kinds of reference: the truth itself, or a document the context
 * computes on the first reference to it (the metrics of the truth's traces,
 * the fleet analysis, the diagnosis) and the parser keeps for the rest. */
enum { REF_TRUTH, REF_TRACE, REF_FLEET, REF_DIAGNOSIS, N_REFS };
typedef enum fl_status (*ref_source)(void *arg, const cJSON **doc);
static const struct ref_kind {
	const char *prefix, *name, *where, *missing;
} ref_kinds[N_REFS] = {
	[REF_TRUTH] = {"truth:", "truth", NULL, NULL},
	[REF_TRACE] = {"trace:", "trace", "the trace's metrics", "no trace is available to this rubric"},
	[REF_FLEET] = {"fleet:", "fleet", "the fleet analysis", "no fleet log is available to this rubric"},
	[REF_DIAGNOSIS] = {"diagnosis:", "diagnosis", "the diagnosis of the trace", "no trace is available to this rubric"},
};

/* The context's callback that computes a kind's document (NULL: none). */
static ref_source source_of(const struct fl_ref_ctx *c, int kind)
{
	return kind == REF_TRACE ? c->trace_metrics : kind == REF_FLEET ? c->fleet_metrics
	       : kind == REF_DIAGNOSIS ? c->diagnosis : NULL;
}

/* The kind of reference s starts with, or -1. */
static int ref_kind_of(const char *s)
{
	for (int k = 0; k < N_REFS; k++)
		if (!strncmp(s, ref_kinds[k].prefix, strlen(ref_kinds[k].prefix)))
			return k;
	return -1;
}

int fl_ref_is_expression(const char *s)
{
	if (ref_kind_of(s) >= 0)
		return 1;
	const char *p = s;
	while (islower((unsigned char)*p) || *p == '_')
		p++;
	return p > s && *p == '(';
}

/* ---- expressions ---- */

struct parser {
	const char *s;
	size_t i;
	struct fl_ref_ctx *ctx;
	int depth;
	const cJSON *doc[N_REFS]; /* the computed documents, once computed */
};

static void skip_ws(struct parser *p)
{
	while (isspace((unsigned char)p->s[p->i]))
		p->i++;
}

static enum fl_status bad(const struct parser *p, const char *what)
{
	return fl_error(FL_EINTERNAL, "expression '%s': %s at column %zu", p->s, what, p->i + 1);
}

static enum fl_status parse_expr(struct parser *p, cJSON **out);

static enum fl_status eval_ref(struct parser *p, cJSON **out)
{
	int kind = ref_kind_of(p->s + p->i);
	const struct ref_kind *rk = &ref_kinds[kind];
	p->i += strlen(rk->prefix);
	size_t start = p->i;
	int in_brackets = 0, in_quote = 0;
	for (char c; (c = p->s[p->i]); p->i++) {
		if (in_quote) {
			in_quote = c != '"';
			continue;
		}
		if (c == '"' && in_brackets)
			in_quote = 1;
		else if (c == '[')
			in_brackets = 1;
		else if (c == ']')
			in_brackets = 0;
		else if (!in_brackets && (c == ',' || c == ')' || isspace((unsigned char)c)))
			break;
	}
	size_t len = p->i - start;
	char *path = malloc(len + 1);
	if (!path)
		abort();
	memcpy(path, p->s + start, len);
	path[len] = '\0';
	const cJSON *root = p->ctx->truth;
	const char *where = p->ctx->truth_name;
	enum fl_status st = FL_OK;
	if (kind != REF_TRUTH) {
		if (!p->doc[kind]) {
			ref_source src = source_of(p->ctx, kind);
			if (!src) {
				st = fl_error(FL_EINTERNAL, "%s%s: %s", rk->prefix, path, rk->missing);
				goto out;
			}
			if ((st = src(p->ctx->arg, &p->doc[kind])))
				goto out;
		}
		root = p->doc[kind];
		where = rk->where;
	}
	char why[300];
	const cJSON *v = fl_json_path(root, path, why, sizeof(why));
	if (!v) {
		st = fl_error(FL_EINTERNAL, "%s key '%s' not found in '%s' (%s)",
			      rk->name, path, where, why);
		goto out;
	}
	*out = cJSON_Duplicate(v, 1);
	if (!*out)
		abort();
out:
	free(path);
	return st;
}

static enum fl_status want_number(const char *fn, const cJSON *v, double *d)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return fl_error(FL_EINTERNAL, "%s(): expected a number, got %s", fn,
				cJSON_IsString(v) ? "text" : cJSON_IsArray(v) ? "an array" : cJSON_IsObject(v) ? "an object"
												: "a non-number");
	*d = v->valuedouble;
	return FL_OK;
}

/* The numbers of args: each a number, or a single array of numbers. */
static enum fl_status numbers_of(const char *fn, cJSON **args, int n, double **v, size_t *nv)
{
	const cJSON *const *items = (const cJSON *const *)args;
	size_t count = (size_t)n;
	const cJSON *arr = n == 1 && cJSON_IsArray(args[0]) ? args[0] : NULL;
	if (arr)
		count = (size_t)cJSON_GetArraySize(arr);
	*v = calloc(count ? count : 1, sizeof(double));
	if (!*v)
		abort();
	*nv = count;
	size_t k = 0;
	if (arr) {
		const cJSON *e;
		cJSON_ArrayForEach(e, arr) {
			enum fl_status st = want_number(fn, e, &(*v)[k++]);
			if (st)
				return st;
		}
	} else {
		for (size_t i = 0; i < count; i++) {
			enum fl_status st = want_number(fn, items[i], &(*v)[i]);
			if (st)
				return st;
		}
	}
	if (!count)
		return fl_error(FL_EINTERNAL, "%s(): no numbers (the array is empty)", fn);
	return FL_OK;
}

typedef enum fl_status (*ref_fn)(const char *name, cJSON **args, int n, double *out);

static enum fl_status fn_ratio(const char *name, cJSON **a, int n, double *out)
{
	double x = 0, y = 0;
	enum fl_status st;
	(void)n;
	if ((st = want_number(name, a[0], &x)) || (st = want_number(name, a[1], &y)))
		return st;
	if (y == 0)
		return fl_error(FL_EINTERNAL, "ratio(): the denominator is 0");
	*out = x / y;
	return FL_OK;
}

static enum fl_status fn_diff(const char *name, cJSON **a, int n, double *out)
{
	double x = 0, y = 0;
	enum fl_status st;
	(void)n;
	if ((st = want_number(name, a[0], &x)) || (st = want_number(name, a[1], &y)))
		return st;
	*out = x - y;
	return FL_OK;
}

static enum fl_status fn_mul(const char *name, cJSON **a, int n, double *out)
{
	double x = 0, y = 0;
	enum fl_status st;
	(void)n;
	if ((st = want_number(name, a[0], &x)) || (st = want_number(name, a[1], &y)))
		return st;
	*out = x * y;
	return FL_OK;
}

static enum fl_status fn_abs(const char *name, cJSON **a, int n, double *out)
{
	(void)n;
	enum fl_status st = want_number(name, a[0], out);
	*out = fabs(*out);
	return st;
}

static enum fl_status fn_count(const char *name, cJSON **a, int n, double *out)
{
	(void)n;
	if (!cJSON_IsArray(a[0]) && !cJSON_IsObject(a[0]))
		return fl_error(FL_EINTERNAL, "%s(): expected an array or an object", name);
	*out = (double)cJSON_GetArraySize(a[0]);
	return FL_OK;
}

static enum fl_status fn_reduce(const char *name, cJSON **a, int n, double *out)
{
	double *v;
	size_t nv;
	enum fl_status st = numbers_of(name, a, n, &v, &nv);
	if (!st) {
		double acc = v[0];
		for (size_t i = 1; i < nv; i++) {
			if (!strcmp(name, "min"))
				acc = fmin(acc, v[i]);
			else if (!strcmp(name, "max"))
				acc = fmax(acc, v[i]);
			else
				acc += v[i];
		}
		*out = !strcmp(name, "mean") ? acc / (double)nv : acc;
	}
	free(v);
	return st;
}

static const struct {
	const char *name;
	int min_args, max_args;
	ref_fn fn;
} ref_funcs[] = {
	{"ratio", 2, 2, fn_ratio}, {"diff", 2, 2, fn_diff},           {"mul", 2, 2, fn_mul},
	{"abs", 1, 1, fn_abs},     {"count", 1, 1, fn_count},         {"sum", 1, MAX_ARGS, fn_reduce},
	{"mean", 1, MAX_ARGS, fn_reduce}, {"min", 1, MAX_ARGS, fn_reduce}, {"max", 1, MAX_ARGS, fn_reduce},
};

static enum fl_status eval_call(struct parser *p, cJSON **out)
{
	size_t start = p->i;
	while (islower((unsigned char)p->s[p->i]) || p->s[p->i] == '_')
		p->i++;
	char name[32];
	size_t nl = p->i - start;
	if (nl >= sizeof(name))
		return bad(p, "unknown function");
	memcpy(name, p->s + start, nl);
	name[nl] = '\0';
	int fi = -1;
	for (size_t i = 0; i < sizeof(ref_funcs) / sizeof(ref_funcs[0]); i++)
		if (!strcmp(ref_funcs[i].name, name))
			fi = (int)i;
	if (fi < 0)
		return fl_error(FL_EINTERNAL, "expression '%s': unknown function '%s', expected one of: ratio, diff, "
				"mul, abs, count, sum, mean, min, max", p->s, name);
	skip_ws(p);
	if (p->s[p->i] != '(')
		return bad(p, "expected '('");
	p->i++;
	cJSON *args[MAX_ARGS] = {0};
	int n = 0;
	enum fl_status st = FL_OK;
	skip_ws(p);
	while (p->s[p->i] != ')') {
		if (n == MAX_ARGS) {
			st = bad(p, "too many arguments");
			goto out;
		}
		if ((st = parse_expr(p, &args[n])))
			goto out;
		n++;
		skip_ws(p);
		if (p->s[p->i] == ',') {
			p->i++;
			skip_ws(p);
		} else if (p->s[p->i] != ')') {
			st = bad(p, "expected ',' or ')'");
			goto out;
		}
	}
	p->i++;
	if (n < ref_funcs[fi].min_args || n > ref_funcs[fi].max_args) {
		st = fl_error(FL_EINTERNAL, "expression '%s': %s() takes %d%s argument%s, got %d", p->s, name,
			      ref_funcs[fi].min_args, ref_funcs[fi].max_args > ref_funcs[fi].min_args ? " or more" : "",
			      ref_funcs[fi].min_args == 1 ? "" : "s", n);
		goto out;
	}
	double v;
	if ((st = ref_funcs[fi].fn(name, args, n, &v))) {
		fl_error_prefix(st, "expression '%s': ", p->s);
		goto out;
	}
	*out = cJSON_CreateNumber(v);
out:
	for (int i = 0; i < n; i++)
		cJSON_Delete(args[i]);
	return st;
}

static enum fl_status parse_expr(struct parser *p, cJSON **out)
{
	if (++p->depth > MAX_DEPTH)
		return bad(p, "nested too deeply");
	skip_ws(p);
	const char *c = p->s + p->i;
	enum fl_status st;
	if (ref_kind_of(c) >= 0) {
		st = eval_ref(p, out);
	} else if (isdigit((unsigned char)*c) || *c == '-' || *c == '+' || *c == '.') {
		char *end;
		double d = strtod(c, &end);
		if (end == c || !isfinite(d))
			return bad(p, "expected a number");
		p->i += (size_t)(end - c);
		*out = cJSON_CreateNumber(d);
		st = FL_OK;
	} else if (*c == '"') {
		const char *q = strchr(c + 1, '"');
		if (!q)
			return bad(p, "unterminated text");
		char *txt = strndup(c + 1, (size_t)(q - c - 1));
		if (!txt)
			abort();
		*out = cJSON_CreateString(txt);
		free(txt);
		p->i += (size_t)(q - c + 1);
		st = FL_OK;
	} else if (islower((unsigned char)*c)) {
		st = eval_call(p, out);
	} else {
		return bad(p, "expected truth:, trace:, fleet:, diagnosis:, a number or a function");
	}
	p->depth--;
	return st;
}

enum fl_status fl_ref_eval(const char *expr, struct fl_ref_ctx *ctx, cJSON **out)
{
	struct parser p = {.s = expr, .ctx = ctx};
	*out = NULL;
	enum fl_status st = parse_expr(&p, out);
	if (!st) {
		skip_ws(&p);
		if (p.s[p.i]) {
			st = bad(&p, "unexpected text after the expression");
			cJSON_Delete(*out);
			*out = NULL;
		}
	}
	return st;
}
