/* expert_imbalance — MoE expert load imbalance: an expert-parallel
 * mixture-of-experts run whose router sends most tokens to one expert. The
 * workload holds one expert per rank and moves every token row to its expert
 * and back by real all-to-alls; the fault skews the router's capacities so
 * that expert `hot_rank` takes `hot_share` of every rank's tokens and the
 * others split the rest. The hot rank's expert GEMMs run over that many more
 * rows and take that much longer; the other ranks wait for it inside the
 * combine all-to-all. Each step the hot rank reports the share of the step's
 * tokens its expert really received (counted from the dispatch all-to-all). */
#include <stdlib.h>

#include "faults/fault.h"

struct skew_state {
	int hot;     /* this rank holds the hot expert */
	int experts;
	int batch;
};

static const struct fl_param_spec params[] = {
	{"hot_rank", FL_PARAM_INT, 0, 0, 1023, NULL, NULL, "the rank whose expert gets most of the tokens"},
	{"hot_share", FL_PARAM_NUMBER, 0.8, 0.3, 0.95, NULL, NULL,
	 "the share of every rank's tokens routed to the hot expert (more than 1/experts)"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (env->experts < 2)
		return fl_error(FL_EINPUT, "fault '%s' needs a mixture-of-experts workload (workload.kind \"moe\") on 2 or "
				"more ranks: its experts are the ranks", f->ops->name);
	long hot = (long)fl_fault_num(f, "hot_rank");
	double share = fl_fault_num(f, "hot_share");
	if (hot >= env->experts)
		return fl_error(FL_EINPUT, "fault '%s': hot_rank %ld does not exist in a %d-rank run", f->ops->name, hot,
				env->experts);
	if (!(share > 1.0 / env->experts))
		return fl_error(FL_EINPUT, "fault '%s': hot_share %g is not more than the balanced share 1/%d of %d experts",
				f->ops->name, share, env->experts, env->experts);
	struct skew_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->hot = env->rank == hot;
	s->experts = env->experts;
	s->batch = env->batch;
	return fl_svc_set_expert_skew(env->svc, (int)hot, share);
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct skew_state *s = f->state;
	if (!s->hot)
		return;
	long got = fl_svc_expert_tokens(ctx->svc);
	double all = (double)s->experts * s->batch;
	/* requested: the hot expert's share of the step's tokens; measured: the share it received */
	struct fl_instance *in = fl_fault_report(f, ctx, "forward", 100.0 * fl_fault_num(f, "hot_share"),
						 100.0 * (double)got / all, "%");
	if (in) {
		in->extra_name[0] = "tokens";
		in->extra[0] = (double)got;
		in->extra_name[1] = "balanced_tokens";
		in->extra[1] = all / s->experts;
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_expert_imbalance = {
	.name = "expert_imbalance",
	.summary = "MoE expert imbalance: the router sends `hot_share` of every rank's tokens to one rank's expert",
	.family = "expert_imbalance",
	.fix = "load_balance",
	.backends = "emu",
	.needs_train = 1,
	.min_ranks = 2,
	.workload = "moe",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
	.release = release,
};
