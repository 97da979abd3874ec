/* params.c — parameter access, step selectors and instance reporting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"

int fl_steps_match(const struct fl_steps *s, long step)
{
	if (s->all)
		return 1;
	if (s->every > 0)
		return step % s->every == s->offset;
	for (size_t i = 0; i < s->n; i++)
		if (s->list[i] == step)
			return 1;
	return 0;
}

void fl_steps_describe(const struct fl_steps *s, char *buf, size_t n)
{
	if (s->all) {
		snprintf(buf, n, "all");
		return;
	}
	if (s->every > 0) {
		snprintf(buf, n, "every %ld from %ld", s->every, s->offset);
		return;
	}
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < s->n && off + 24 < n; i++)
		off += (size_t)snprintf(buf + off, n - off, "%s%ld", i ? ", " : "", s->list[i]);
}

static size_t param_index(const struct fl_fault *f, const char *name)
{
	for (size_t i = 0; i < f->ops->n_params; i++)
		if (strcmp(f->ops->params[i].name, name) == 0)
			return i;
	fprintf(stderr, "faultline: internal error: fault '%s' has no parameter '%s'\n", f->ops->name, name);
	abort();
}

double fl_fault_num(const struct fl_fault *f, const char *name) { return f->params[param_index(f, name)].num; }
const char *fl_fault_str(const struct fl_fault *f, const char *name) { return f->params[param_index(f, name)].str; }
const struct fl_steps *fl_fault_steps(const struct fl_fault *f, const char *name)
{
	return &f->params[param_index(f, name)].steps;
}

struct fl_instance *fl_fault_report(struct fl_fault *f, const struct fl_step_ctx *ctx, const char *phase,
				    double requested, double measured, const char *unit)
{
	if (f->n_inst >= f->cap_inst) {
		f->n_inst++; /* counted, not stored: the truth says how many were lost */
		return NULL;
	}
	struct fl_instance *in = &f->inst[f->n_inst++];
	memset(in, 0, sizeof(*in));
	in->step = ctx->step;
	in->recorded = ctx->recorded;
	in->phase = phase;
	in->requested = requested;
	in->measured = measured;
	in->unit = unit;
	return in;
}

int fl_fault_supports(const struct fl_fault_ops *ops, const char *backend)
{
	size_t n = strlen(backend);
	for (const char *p = ops->backends ? ops->backends : ""; *p;) {
		while (*p == ' ')
			p++;
		size_t w = strcspn(p, " ");
		if (w == n && strncmp(p, backend, n) == 0)
			return 1;
		p += w;
	}
	return 0;
}
