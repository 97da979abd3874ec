/* check_faults.c — step selectors, parameter schemas, and the fault hooks run by hand. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "capture/tracer.h"
#include "faults/fault.h"
#include "runtime/device.h"
#include "generator/scenario.h"
#include "runtime/tensor.h"

#define assert_msg_has(needle)                                                                  \
	ck_assert_msg(strstr(fl_error_msg(), (needle)) != NULL, "error message '%s' lacks '%s'", \
		      fl_error_msg(), (needle))

/* ---- a fault assembled by hand, as the harness would ---- */

#define MAX_PARAMS 8
#define MAX_INST 8

struct hand_fault {
	struct fl_fault f;
	struct fl_param_value values[MAX_PARAMS];
	struct fl_instance inst[MAX_INST];
};

static cJSON *default_json(const struct fl_param_spec *p)
{
	switch (p->type) {
	case FL_PARAM_STEPS:
		return cJSON_Parse(p->def_text);
	case FL_PARAM_STRING:
		return cJSON_CreateString(p->def_text);
	default:
		return cJSON_CreateNumber(p->def);
	}
}

/* Every parameter at its default. */
static void make_fault(struct hand_fault *h, const char *name)
{
	memset(h, 0, sizeof(*h));
	h->f.ops = fl_fault_find(name);
	ck_assert_ptr_nonnull(h->f.ops);
	ck_assert_uint_le(h->f.ops->n_params, MAX_PARAMS);
	for (size_t k = 0; k < h->f.ops->n_params; k++) {
		const struct fl_param_spec *p = &h->f.ops->params[k];
		cJSON *v = default_json(p);
		ck_assert_int_eq(fl_param_parse("defaults", p->name, p, v, &h->values[k]), FL_OK);
		if (p->type == FL_PARAM_STRING)
			h->values[k].str = p->def_text; /* v's string dies with v */
		cJSON_Delete(v);
	}
	h->f.params = h->values;
	h->f.inst = h->inst;
	h->f.cap_inst = MAX_INST;
	h->f.seed = 1;
}

static struct fl_param_value *param(struct hand_fault *h, const char *name)
{
	for (size_t k = 0; k < h->f.ops->n_params; k++)
		if (strcmp(h->f.ops->params[k].name, name) == 0)
			return &h->values[k];
	ck_abort_msg("fault '%s' has no parameter '%s'", h->f.ops->name, name);
	return NULL;
}

static void drop_fault(struct hand_fault *h)
{
	if (h->f.ops->release)
		h->f.ops->release(&h->f);
	for (size_t k = 0; k < h->f.ops->n_params; k++)
		free(h->values[k].steps.list);
}

static const char *const all_phases[] = {"data_loading", "forward", "metrics"};

/* An opened device backend ("cpu", "emu"). */
static void open_device(struct fl_backend *be, const char *name, int rank, int world_size)
{
	const struct fl_backend_config cfg = {.rank = rank, .world_size = world_size, .device = 0};
	memset(be, 0, sizeof(*be));
	be->ops = fl_backend_find(name);
	ck_assert_msg(be->ops != NULL, "no backend '%s'", name);
	ck_assert_int_eq(be->ops->open(be, &cfg), FL_OK);
}

static void close_device(struct fl_backend *be)
{
	fl_dev_synchronize(be);
	if (be->ops->close)
		be->ops->close(be);
}

static struct fl_backend cpu_device;

/* ---- the services, offered as the harness offers them, over one device ---- */

struct stand_in {
	struct fl_backend *be;
	int overlap; /* the all-reduce schedule the faults set */
};
static struct stand_in host = {.overlap = 1};

static enum fl_status si_declare_span(void *h, const char *span)
{
	(void)h;
	return span && span[0] ? FL_OK : fl_error(FL_EINPUT, "empty span name");
}
static void si_run_span(void *h, const char *span, void (*fn)(void *), void *arg)
{
	(void)h;
	(void)span;
	fn(arg);
}
static void si_to_host(void *h, void *dst, const struct fl_tensor *t)
{
	struct stand_in *si = h;
	si->be->ops->copy(si->be, dst, t->data, t->bytes, FL_COPY_D2H, FL_STREAM_COMPUTE);
	fl_dev_stream_synchronize(si->be, FL_STREAM_COMPUTE);
}
static struct fl_tensor *const *si_weights(void *h, size_t *n)
{
	(void)h;
	*n = 0;
	return NULL;
}
static enum fl_status si_set_clock_factor(void *h, double factor)
{
	struct stand_in *si = h;
	if (!si->be->ops->set_clock_factor)
		return fl_error(FL_EINPUT, "no clock to slow");
	return si->be->ops->set_clock_factor(si->be, factor);
}
static int si_device_stats(void *h, struct fl_device_stats *out)
{
	struct stand_in *si = h;
	if (!si->be->ops->stats)
		return 0;
	si->be->ops->stats(si->be, out, 0);
	return 1;
}
static void si_set_allreduce_overlap(void *h, int overlapped)
{
	((struct stand_in *)h)->overlap = overlapped;
}
static const struct fl_services services = {
	.host = &host,
	.declare_span = si_declare_span,
	.run_span = si_run_span,
	.to_host = si_to_host,
	.weights = si_weights,
	.set_clock_factor = si_set_clock_factor,
	.device_stats = si_device_stats,
	.set_allreduce_overlap = si_set_allreduce_overlap,
	.scratch_dir = "/tmp",
	.out_dir = "/tmp",
};

/* The env's device facts and the services, on device be. */
static void env_on(struct fl_fault_env *env, struct fl_backend *be)
{
	host.be = be;
	env->backend = be->ops->name;
	env->asynchronous = be->ops->asynchronous;
	env->clock_factor = be->ops->set_clock_factor != NULL;
	env->svc = &services;
}

/* A single-rank inference run on the cpu backend with the given phases. */
static struct fl_fault_env env_with(const char *const *phases, size_t n)
{
	if (!cpu_device.ops)
		open_device(&cpu_device, "cpu", 0, 1);
	struct fl_fault_env env = {.world_size = 1, .layers = 4, .phases = phases, .n_phases = n, .total_steps = 10};
	env_on(&env, &cpu_device);
	return env;
}

/* ---- step selectors ---- */

START_TEST(steps_match_all_list_every)
{
	struct fl_steps all = {.all = 1};
	long list_steps[] = {2, 5, 8};
	struct fl_steps list = {.list = list_steps, .n = 3};
	struct fl_steps every = {.every = 3, .offset = 2};
	struct fl_steps each = {.every = 1, .offset = 0};
	struct fl_steps none = {0};
	for (long s = 0; s < 12; s++) {
		ck_assert(fl_steps_match(&all, s));
		ck_assert_int_eq(fl_steps_match(&list, s), s == 2 || s == 5 || s == 8);
		ck_assert_int_eq(fl_steps_match(&every, s), s % 3 == 2);
		ck_assert(fl_steps_match(&each, s));
		ck_assert(!fl_steps_match(&none, s));
	}
}
END_TEST

START_TEST(steps_describe)
{
	char buf[64];
	struct fl_steps all = {.all = 1};
	long list_steps[] = {2, 5, 8};
	struct fl_steps list = {.list = list_steps, .n = 3};
	struct fl_steps every = {.every = 3, .offset = 2};
	fl_steps_describe(&all, buf, sizeof(buf));
	ck_assert_str_eq(buf, "all");
	fl_steps_describe(&list, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2, 5, 8");
	fl_steps_describe(&every, buf, sizeof(buf));
	ck_assert_str_eq(buf, "every 3 from 2");

	/* a long list stops short of the buffer's end */
	long many[100];
	for (int i = 0; i < 100; i++)
		many[i] = 1000000 + i;
	struct fl_steps big = {.list = many, .n = 100};
	char small[40];
	memset(small, 'x', sizeof(small));
	fl_steps_describe(&big, small, sizeof(small));
	ck_assert_uint_lt(strlen(small), sizeof(small));
	ck_assert(strncmp(small, "1000000", 7) == 0);
}
END_TEST

/* ---- parameter schemas ---- */

START_TEST(param_specs_are_sound)
{
	for (size_t i = 0; fl_faults[i]; i++) {
		const struct fl_fault_ops *f = fl_faults[i];
		ck_assert_msg(f->n_params == 0 || f->params, "%s: parameters missing", f->name);
		for (size_t k = 0; k < f->n_params; k++) {
			const struct fl_param_spec *p = &f->params[k];
			ck_assert_msg(p->name && p->name[0], "%s: parameter %zu has no name", f->name, k);
			ck_assert_msg(p->meaning && p->meaning[0], "%s.%s: no meaning", f->name, p->name);
			for (size_t j = 0; j < k; j++)
				ck_assert_msg(strcmp(f->params[j].name, p->name) != 0, "%s.%s: named twice", f->name,
					      p->name);
			struct fl_param_value v = {0};
			cJSON *def = default_json(p);
			switch (p->type) {
			case FL_PARAM_NUMBER:
			case FL_PARAM_INT:
				ck_assert_msg(p->min <= p->def && p->def <= p->max, "%s.%s: default %g outside [%g, %g]",
					      f->name, p->name, p->def, p->min, p->max);
				if (p->type == FL_PARAM_INT)
					ck_assert_msg(p->def == floor(p->def) && p->min == floor(p->min) &&
							      p->max == floor(p->max),
						      "%s.%s: an integer parameter with fractional bounds", f->name, p->name);
				break;
			case FL_PARAM_STRING:
			case FL_PARAM_STEPS:
				ck_assert_msg(p->def_text && p->def_text[0], "%s.%s: no default text", f->name, p->name);
				ck_assert_msg(def != NULL, "%s.%s: default '%s' is not JSON", f->name, p->name, p->def_text);
				break;
			}
			enum fl_status st = fl_param_parse("registry", p->name, p, def, &v);
			ck_assert_msg(st == FL_OK, "%s.%s: default does not parse: %s", f->name, p->name, fl_error_msg());
			free(v.steps.list);
			cJSON_Delete(def);
		}
	}
}
END_TEST

START_TEST(param_parse_errors)
{
	const struct fl_param_spec num = {"ms", FL_PARAM_NUMBER, 30, 0.01, 60000, NULL, "ms", "m"};
	const struct fl_param_spec integer = {"period", FL_PARAM_INT, 3, 1, 100, NULL, "steps", "p"};
	const struct fl_param_spec str = {"phase", FL_PARAM_STRING, 0, 0, 0, "metrics", NULL, "ph"};
	struct fl_param_value v = {0};
	cJSON *big = cJSON_CreateNumber(60001), *frac = cJSON_CreateNumber(2.5), *text = cJSON_CreateString("5");
	cJSON *empty = cJSON_CreateString("");

	ck_assert_int_eq(fl_param_parse("f.json", "faults[1].params.ms", &num, big, &v), FL_EINPUT);
	assert_msg_has("'f.json': faults[1].params.ms: 60001 is out of range");
	assert_msg_has("[0.01, 60000] ms");
	ck_assert_int_eq(fl_param_parse("f.json", "p", &num, text, &v), FL_EINPUT);
	assert_msg_has("got a string");
	ck_assert_int_eq(fl_param_parse("f.json", "p", &integer, frac, &v), FL_EINPUT);
	assert_msg_has("an integer");
	assert_msg_has("a fraction");
	ck_assert_int_eq(fl_param_parse("f.json", "p", &str, empty, &v), FL_EINPUT);
	assert_msg_has("non-empty string");
	ck_assert_int_eq(fl_param_parse("f.json", "p", &str, frac, &v), FL_EINPUT);
	ck_assert_int_eq(fl_param_parse("f.json", "p", &num, frac, &v), FL_OK);
	ck_assert_double_eq(v.num, 2.5);
	cJSON_Delete(big);
	cJSON_Delete(frac);
	cJSON_Delete(text);
	cJSON_Delete(empty);
}
END_TEST

START_TEST(param_json_round_trip)
{
	const struct fl_param_spec steps = {"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "s"};
	const struct fl_param_spec num = {"ms", FL_PARAM_NUMBER, 30, 0, 100, NULL, "ms", "m"};
	const struct fl_param_spec str = {"span", FL_PARAM_STRING, 0, 0, 0, "mystery", NULL, "s"};
	const struct {
		const struct fl_param_spec *spec;
		const char *json;
	} cases[] = {
		{&steps, "\"all\""}, {&steps, "[1, 4, 9]"}, {&steps, "{\"every\": 3, \"offset\": 1}"},
		{&steps, "[]"},      {&num, "12.5"},        {&str, "\"mystery\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *in = cJSON_Parse(cases[i].json);
		ck_assert_ptr_nonnull(in);
		struct fl_param_value v = {0};
		ck_assert_int_eq(fl_param_parse("t", "p", cases[i].spec, in, &v), FL_OK);
		cJSON *out = fl_param_json(cases[i].spec, &v);
		char *got = cJSON_PrintUnformatted(out);
		ck_assert_msg(cJSON_Compare(in, out, 1), "%s came back as %s", cases[i].json, got);
		free(got);
		cJSON_Delete(out);
		cJSON_Delete(in);
		free(v.steps.list);
	}
}
END_TEST

/* ---- init: a fault may refuse a run it cannot make sense of ---- */

START_TEST(loader_sleep_needs_data_loading)
{
	struct hand_fault h;
	make_fault(&h, "loader_sleep");
	struct fl_fault_env without = env_with(all_phases + 1, 2), with = env_with(all_phases, 3);
	ck_assert_int_eq(h.f.ops->init(&h.f, &without), FL_EINPUT);
	assert_msg_has("loader_sleep");
	assert_msg_has("data_loading");
	ck_assert_int_eq(h.f.ops->init(&h.f, &with), FL_OK);
	drop_fault(&h);
}
END_TEST

START_TEST(periodic_stall_needs_phase_and_offset)
{
	struct hand_fault h;
	make_fault(&h, "periodic_stall");
	struct fl_fault_env no_metrics = env_with(all_phases, 2), all = env_with(all_phases, 3);
	ck_assert_int_eq(h.f.ops->init(&h.f, &no_metrics), FL_EINPUT);
	assert_msg_has("'metrics'");
	ck_assert_int_eq(h.f.ops->init(&h.f, &all), FL_OK);

	param(&h, "phase")->str = "forward";
	ck_assert_int_eq(h.f.ops->init(&h.f, &no_metrics), FL_OK);

	param(&h, "period")->num = 3;
	param(&h, "offset")->num = 3;
	ck_assert_int_eq(h.f.ops->init(&h.f, &all), FL_EINPUT);
	assert_msg_has("offset 3 must be below period 3");
	drop_fault(&h);
}
END_TEST

/* gc_pause's init calibrates a heap when it accepts (the end-to-end tests
 * cover that); its refusal comes first and needs nothing else. */
START_TEST(gc_pause_refuses_offset_at_period)
{
	struct hand_fault h;
	make_fault(&h, "gc_pause");
	param(&h, "period")->num = 2;
	param(&h, "offset")->num = 5;
	struct fl_fault_env all = env_with(all_phases, 3);
	ck_assert_int_eq(h.f.ops->init(&h.f, &all), FL_EINPUT);
	assert_msg_has("gc_pause");
	assert_msg_has("offset 5 must be below period 2");
	ck_assert_ptr_null(h.f.state);
	drop_fault(&h);
}
END_TEST

START_TEST(throttled_rank_needs_device_and_ranks)
{
	struct hand_fault h;
	make_fault(&h, "throttled_rank");
	struct fl_fault_env env = env_with(all_phases, 3); /* cpu: no clock to throttle */
	env.world_size = 2;
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_EINPUT);
	assert_msg_has("needs a device backend");

	struct fl_backend emu;
	open_device(&emu, "emu", 0, 1);
	env_on(&env, &emu);
	env.world_size = 1;
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_EINPUT);
	assert_msg_has("2 or more ranks");
	env.world_size = 2;
	param(&h, "rank")->num = 2;
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_EINPUT);
	assert_msg_has("rank 2 does not exist in a 2-rank run");
	param(&h, "rank")->num = 1;
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_OK); /* rank 0 runs at full speed */
	close_device(&emu);
	drop_fault(&h);
}
END_TEST

START_TEST(unoverlapped_allreduce_needs_ddp_training)
{
	struct hand_fault h;
	make_fault(&h, "unoverlapped_allreduce");
	struct fl_fault_env env = env_with(all_phases, 3);
	host.overlap = 1;
	env.world_size = 2;
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_EINPUT); /* inference */
	assert_msg_has("training workload");
	env.train = 1;
	env.world_size = 1;
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_EINPUT);
	assert_msg_has("2 or more ranks");
	env.world_size = 2;
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_OK);

	/* it flips the workload's all-reduce schedule on its steps only */
	long only[] = {1};
	struct fl_steps *s = &param(&h, "steps")->steps;
	*s = (struct fl_steps){.list = only, .n = 1};
	struct fl_step_ctx ctx = {.step = 0, .svc = &services};
	h.f.ops->step_begin(&h.f, &ctx);
	ck_assert_int_eq(host.overlap, 1);
	ctx.step = 1;
	h.f.ops->step_begin(&h.f, &ctx);
	ck_assert_int_eq(host.overlap, 0);
	ctx.step = 2;
	h.f.ops->step_begin(&h.f, &ctx);
	ck_assert_int_eq(host.overlap, 1);
	ck_assert_uint_eq(h.f.n_inst, 1);
	ck_assert_int_eq(h.inst[0].step, 1);
	s->list = NULL; /* on the stack */
	drop_fault(&h);
}
END_TEST

START_TEST(sync_injection_needs_async_device)
{
	struct hand_fault h;
	make_fault(&h, "sync_injection");
	struct fl_fault_env env = env_with(all_phases, 3);
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_EINPUT);
	assert_msg_has("asynchronous");
	ck_assert_ptr_null(h.f.state);
	drop_fault(&h);
}
END_TEST

/* ---- hooks ---- */

START_TEST(loader_sleep_sleeps_in_data_loading)
{
	struct hand_fault h;
	make_fault(&h, "loader_sleep");
	param(&h, "ms")->num = 2;
	long only[] = {1, 3};
	struct fl_steps *s = &param(&h, "steps")->steps;
	s->all = 0;
	s->list = only;
	s->n = 2;
	fl_clock_init();
	const char *const phases[] = {"data_loading", "forward"};
	for (long step = 0; step < 4; step++) {
		for (int p = 0; p < 2; p++) {
			struct fl_step_ctx ctx = {.step = step, .recorded = step >= 2, .phase = phases[p]};
			h.f.ops->phase_begin(&h.f, &ctx);
		}
	}
	ck_assert_uint_eq(h.f.n_inst, 2);
	for (int i = 0; i < 2; i++) {
		const struct fl_instance *in = &h.inst[i];
		ck_assert_int_eq(in->step, only[i]);
		ck_assert_int_eq(in->recorded, only[i] >= 2);
		ck_assert_str_eq(in->phase, "data_loading");
		ck_assert_str_eq(in->unit, "ms");
		ck_assert_double_eq(in->requested, 2);
		ck_assert_msg(in->measured >= 1.0 && in->measured < 1000, "a 2 ms sleep measured %.3f ms", in->measured);
	}
	s->list = NULL; /* on the stack, not ours to free */
	drop_fault(&h);
}
END_TEST

START_TEST(periodic_stall_every_period)
{
	struct hand_fault h;
	make_fault(&h, "periodic_stall");
	param(&h, "ms")->num = 1;
	fl_clock_init();
	for (long step = 0; step < 9; step++) {
		struct fl_step_ctx fwd = {.step = step, .phase = "forward"}, met = {.step = step, .phase = "metrics"};
		h.f.ops->phase_begin(&h.f, &fwd);
		h.f.ops->phase_begin(&h.f, &met);
	}
	/* period 3, offset 2 by default: steps 2, 5, 8, in metrics */
	ck_assert_uint_eq(h.f.n_inst, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(h.inst[i].step, 2 + 3 * i);
		ck_assert_str_eq(h.inst[i].phase, "metrics");
		ck_assert(h.inst[i].measured > 0);
	}
	drop_fault(&h);
}
END_TEST

START_TEST(op_storm_runs_real_extra_ops)
{
	struct hand_fault h;
	make_fault(&h, "op_storm");
	param(&h, "pre")->num = 3;
	param(&h, "post")->num = 2;
	struct fl_steps *s = &param(&h, "steps")->steps;
	*s = (struct fl_steps){.every = 2, .offset = 0};

	ck_assert_int_eq(fl_tracer_init(0), FL_OK);
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
	const struct fl_backend_config cfg = {.world_size = 1};
	struct fl_backend be = {.ops = fl_backend_find("cpu")};
	ck_assert_int_eq(be.ops->open(&be, &cfg), FL_OK);
	struct fl_rt rt;
	fl_rt_init(&rt, &be, FL_ALLOC_HEAP, 5);
	struct fl_tensor *x = fl_rt_param(&rt, 4, 8, 1.0f), *t = fl_rt_param(&rt, 4, 8, 1.0f);
	memcpy(t->data, x->data, x->bytes);

	/* step 1 does not match: nothing runs */
	struct fl_step_ctx ctx = {.step = 1, .rt = &rt, .phase = "forward"};
	struct fl_tensor *before = t;
	h.f.ops->site(&h.f, &ctx, FL_SITE_PRE_ACTIVATION, &t);
	ck_assert_ptr_eq(t, before);
	ck_assert_uint_eq(h.f.n_inst, 0);

	fl_tracer_set_recording(1);
	ctx.step = 2;
	h.f.ops->site(&h.f, &ctx, FL_SITE_PRE_ACTIVATION, &t);
	fl_tracer_set_recording(0);
	for (int i = 0; i < 32; i++) /* (x + 0) * 1 == x */
		ck_assert_float_eq(t->data[i], x->data[i]);
	ck_assert_uint_eq(h.f.n_inst, 1);
	ck_assert_double_eq(h.inst[0].requested, 6);
	ck_assert_double_eq(h.inst[0].measured, 6);
	ck_assert_str_eq(h.inst[0].unit, "ops");
	ck_assert_str_eq(h.inst[0].extra_name[0], "site_pre_activation");
	ck_assert(h.inst[0].extra[1] >= 0);

	/* the capture saw six top-level ops, alternating add and mul */
	const struct fl_tbuf *b = fl_tls_tbuf;
	int top = 0;
	for (uint32_t i = 0; i < b->n; i++) {
		if (b->ev[i].depth != 0)
			continue;
		ck_assert_str_eq(fl_tracer_name(b->ev[i].name), top % 2 ? "fl::mul" : "fl::add");
		top++;
	}
	ck_assert_int_eq(top, 6);

	/* the sub chain runs on the model's output (after the last layer, as the
	 * original lab's did), not on the first layer's activation */
	before = t;
	h.f.ops->site(&h.f, &ctx, FL_SITE_POST_ACTIVATION, &t);
	ck_assert_ptr_eq(t, before);
	ck_assert_uint_eq(h.f.n_inst, 1);
	h.f.ops->site(&h.f, &ctx, FL_SITE_OUTPUT, &t);
	ck_assert_uint_eq(h.f.n_inst, 2);
	ck_assert_double_eq(h.inst[1].requested, 2);
	ck_assert_str_eq(h.inst[1].extra_name[0], "site_output");
	for (int i = 0; i < 32; i++)
		ck_assert_float_eq(t->data[i], x->data[i]);

	fl_tensor_free(&rt, t);
	fl_tensor_free(&rt, x);
	drop_fault(&h);
	fl_tracer_release();
}
END_TEST

START_TEST(sync_injection_reads_k_times_per_step)
{
	struct hand_fault h;
	make_fault(&h, "sync_injection");
	struct fl_backend emu;
	open_device(&emu, "emu", 0, 1);
	struct fl_fault_env env = env_with(all_phases, 3);
	env_on(&env, &emu);
	ck_assert_int_eq(h.f.ops->init(&h.f, &env), FL_OK);

	struct fl_rt rt;
	fl_rt_init(&rt, &emu, FL_ALLOC_HEAP, 3);
	struct fl_tensor *x = fl_rt_param(&rt, 1, 1, 1.0f), *before = x;
	/* inference: two forward-layer sites per step share k = 4 reads */
	for (long step = 0; step < 2; step++) {
		struct fl_step_ctx ctx = {.step = step, .phase = "forward", .rt = &rt};
		h.f.ops->site(&h.f, &ctx, FL_SITE_PRE_ACTIVATION, &x); /* not a layer site: ignored */
		ck_assert_uint_eq(h.f.n_inst, (size_t)(4 * step));
		h.f.ops->site(&h.f, &ctx, FL_SITE_FORWARD_LAYER, &x);
		ck_assert_uint_eq(h.f.n_inst, (size_t)(4 * step + 2));
		h.f.ops->site(&h.f, &ctx, FL_SITE_FORWARD_LAYER, &x);
		ck_assert_uint_eq(h.f.n_inst, (size_t)(4 * step + 4));
	}
	ck_assert_ptr_eq(x, before); /* it reads the tensor, never replaces it */
	for (size_t i = 0; i < h.f.n_inst; i++) {
		ck_assert_str_eq(h.inst[i].phase, "forward");
		ck_assert(h.inst[i].measured >= 0);
	}
	fl_tensor_free(&rt, x);
	close_device(&emu);
	drop_fault(&h);
}
END_TEST

START_TEST(report_counts_past_capacity)
{
	struct hand_fault h;
	make_fault(&h, "loader_sleep");
	h.f.cap_inst = 1;
	struct fl_step_ctx ctx = {.step = 4, .recorded = 1};
	struct fl_instance *a = fl_fault_report(&h.f, &ctx, "data_loading", 1, 1.1, "ms");
	ck_assert_ptr_eq(a, &h.inst[0]);
	ck_assert_int_eq(a->step, 4);
	ck_assert_ptr_null(fl_fault_report(&h.f, &ctx, "data_loading", 1, 1.2, "ms"));
	ck_assert_uint_eq(h.f.n_inst, 2);
	drop_fault(&h);
}
END_TEST

START_TEST(param_access_by_name)
{
	struct hand_fault h;
	make_fault(&h, "periodic_stall");
	ck_assert_double_eq(fl_fault_num(&h.f, "ms"), 60);
	ck_assert_str_eq(fl_fault_str(&h.f, "phase"), "metrics");
	drop_fault(&h);

	make_fault(&h, "loader_sleep");
	ck_assert(fl_fault_steps(&h.f, "steps")->all);
	drop_fault(&h);
}
END_TEST

START_TEST(unknown_param_aborts)
{
	struct hand_fault h;
	make_fault(&h, "loader_sleep");
	(void)fl_fault_num(&h.f, "nope"); /* a bug in a fault module: abort, loudly */
}
END_TEST

static Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("params");
	tcase_add_test(tc, steps_match_all_list_every);
	tcase_add_test(tc, steps_describe);
	tcase_add_test(tc, param_specs_are_sound);
	tcase_add_test(tc, param_parse_errors);
	tcase_add_test(tc, param_json_round_trip);
	tcase_add_test(tc, param_access_by_name);
	tcase_add_test_raise_signal(tc, unknown_param_aborts, SIGABRT);
	suite_add_tcase(s, tc);

	tc = tcase_create("init");
	tcase_add_test(tc, loader_sleep_needs_data_loading);
	tcase_add_test(tc, periodic_stall_needs_phase_and_offset);
	tcase_add_test(tc, gc_pause_refuses_offset_at_period);
	tcase_add_test(tc, throttled_rank_needs_device_and_ranks);
	tcase_add_test(tc, unoverlapped_allreduce_needs_ddp_training);
	tcase_add_test(tc, sync_injection_needs_async_device);
	suite_add_tcase(s, tc);

	tc = tcase_create("hooks");
	tcase_add_test(tc, loader_sleep_sleeps_in_data_loading);
	tcase_add_test(tc, periodic_stall_every_period);
	tcase_add_test(tc, op_storm_runs_real_extra_ops);
	tcase_add_test(tc, sync_injection_reads_k_times_per_step);
	tcase_add_test(tc, report_counts_past_capacity);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(faults_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
