/* check_tracer.c — per-thread span recording, bounded buffers, interning, the capture clock. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/clock.h"
#include "capture/tracer.h"

/* Every test starts from a fresh tracer and leaves it released (release resets
 * the global state: buffers, names, the recording flag). */
static void attach_main(uint32_t cap)
{
	ck_assert_int_eq(fl_tracer_init(cap), FL_OK);
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
	ck_assert_ptr_nonnull(fl_tls_tbuf);
}

static void release(void) { fl_tracer_release(); }

/* ---- spans ---- */

START_TEST(nested_spans_in_begin_order)
{
	attach_main(0);
	uint32_t step = fl_tracer_intern("ProfilerStep#2");
	uint32_t fwd = fl_tracer_intern("forward");
	uint32_t mm = fl_tracer_intern("fl::matmul");
	uint32_t relu = fl_tracer_intern("fl::relu");
	fl_tracer_set_recording(1);

	uint32_t s0 = fl_span_begin(step, FL_EV_USER_ANNOTATION);
	uint32_t s1 = fl_span_begin(fwd, FL_EV_USER_ANNOTATION);
	uint32_t s2 = fl_span_begin(mm, FL_EV_CPU_OP);
	fl_span_end(s2);
	uint32_t s3 = fl_span_begin(relu, FL_EV_CPU_OP);
	fl_span_end(s3);
	fl_span_end(s1);
	fl_span_end(s0);
	fl_tracer_set_recording(0);

	const struct fl_tbuf *b = fl_tls_tbuf;
	ck_assert_uint_eq(b->n, 4);
	ck_assert_uint_eq(b->depth, 0);
	ck_assert_uint_eq(fl_tracer_max_count(), 4);
	ck_assert_uint_eq(fl_tracer_dropped(), 0);
	const uint32_t names[] = {step, fwd, mm, relu};
	const uint16_t kinds[] = {FL_EV_USER_ANNOTATION, FL_EV_USER_ANNOTATION, FL_EV_CPU_OP, FL_EV_CPU_OP};
	const uint16_t depths[] = {0, 1, 2, 2};
	for (uint32_t i = 0; i < 4; i++) {
		const struct fl_event *e = &b->ev[i];
		ck_assert_uint_eq(e->name, names[i]);
		ck_assert_uint_eq(e->kind, kinds[i]);
		ck_assert_uint_eq(e->depth, depths[i]);
		ck_assert_int_eq(e->stream, -1);
		ck_assert_uint_eq(e->corr, 0);
		ck_assert_uint_ge(e->t1, e->t0);
	}
	/* children lie inside their parents, siblings in order */
	ck_assert_uint_ge(b->ev[1].t0, b->ev[0].t0);
	ck_assert_uint_le(b->ev[1].t1, b->ev[0].t1);
	ck_assert_uint_ge(b->ev[2].t0, b->ev[1].t0);
	ck_assert_uint_le(b->ev[3].t1, b->ev[1].t1);
	ck_assert_uint_ge(b->ev[3].t0, b->ev[2].t1);
	release();
}
END_TEST

START_TEST(recording_off_records_nothing)
{
	attach_main(0);
	uint32_t name = fl_tracer_intern("idle");
	uint32_t s = fl_span_begin(name, FL_EV_CPU_OP);
	ck_assert_uint_eq(s, FL_SLOT_NONE);
	fl_span_end(s);
	fl_trace_complete(name, FL_EV_KERNEL, 1, 2, 7, 3, 0);
	ck_assert_uint_eq(fl_tls_tbuf->n, 0);
	ck_assert_uint_eq(fl_tls_tbuf->depth, 0);

	fl_tracer_set_recording(1);
	fl_span_end(fl_span_begin(name, FL_EV_CPU_OP));
	fl_tracer_set_recording(0);
	fl_span_end(fl_span_begin(name, FL_EV_CPU_OP));
	ck_assert_uint_eq(fl_tls_tbuf->n, 1);
	ck_assert_uint_eq(fl_tracer_dropped(), 0);
	release();
}
END_TEST

START_TEST(complete_records_interval)
{
	attach_main(0);
	uint32_t k = fl_tracer_intern("gemm_kernel");
	fl_tracer_set_recording(1);
	uint32_t outer = fl_span_begin(fl_tracer_intern("outer"), FL_EV_CPU_OP);
	fl_trace_complete(k, FL_EV_GPU_MEMCPY, 100, 250, 42, 7, 4096);
	fl_span_end(outer);
	const struct fl_event *e = &fl_tls_tbuf->ev[1];
	ck_assert_uint_eq(fl_tls_tbuf->n, 2);
	ck_assert_uint_eq(e->t0, 100);
	ck_assert_uint_eq(e->t1, 250);
	ck_assert_uint_eq(e->corr, 42);
	ck_assert_int_eq(e->stream, 7);
	ck_assert_uint_eq(e->value, 4096);
	ck_assert_uint_eq(e->kind, FL_EV_GPU_MEMCPY);
	ck_assert_uint_eq(e->depth, 1); /* inside the open span, and it opens none */
	ck_assert_uint_eq(fl_tls_tbuf->depth, 0);
	ck_assert_uint_eq(fl_tls_tbuf->ev[0].value, 0);
	release();
}
END_TEST

START_TEST(set_corr_on_open_span)
{
	attach_main(0);
	uint32_t launch = fl_tracer_intern("cudaLaunchKernel");
	fl_tracer_set_recording(1);
	uint32_t s = fl_span_begin(launch, FL_EV_CUDA_RUNTIME);
	fl_span_set_corr(s, 17);
	fl_span_end(s);
	fl_tracer_set_recording(0);
	uint32_t none = fl_span_begin(launch, FL_EV_CUDA_RUNTIME); /* not recording */
	fl_span_set_corr(none, 18);                                /* a no-op, not a crash */
	fl_span_end(none);
	ck_assert_uint_eq(fl_tls_tbuf->n, 1);
	ck_assert_uint_eq(fl_tls_tbuf->ev[0].corr, 17);
	ck_assert_uint_eq(fl_tls_tbuf->ev[0].kind, FL_EV_CUDA_RUNTIME);
	release();
}
END_TEST

START_TEST(full_buffer_counts_drops)
{
	attach_main(8);
	const struct fl_tbuf *b = fl_tls_tbuf;
	ck_assert_uint_eq(b->cap, 8);
	uint32_t name = fl_tracer_intern("op");
	fl_tracer_set_recording(1);
	for (int i = 0; i < 7; i++)
		fl_span_end(fl_span_begin(name, FL_EV_CPU_OP));

	/* the 8th span fits; the two nested in it do not */
	uint32_t a = fl_span_begin(name, FL_EV_USER_ANNOTATION);
	ck_assert_uint_ne(a, FL_SLOT_NONE);
	uint32_t x = fl_span_begin(name, FL_EV_CPU_OP);
	uint32_t y = fl_span_begin(name, FL_EV_CPU_OP);
	ck_assert_uint_eq(x, FL_SLOT_NONE);
	ck_assert_uint_eq(y, FL_SLOT_NONE);
	fl_span_end(y);
	fl_span_end(x);
	ck_assert_uint_eq(b->depth, 1); /* dropped ends did not unwind the open span */
	fl_span_end(a);
	ck_assert_uint_eq(b->depth, 0);
	ck_assert_uint_ge(b->ev[7].t1, b->ev[7].t0);
	ck_assert_uint_ne(b->ev[7].t1, 0);

	fl_trace_complete(name, FL_EV_KERNEL, 1, 2, 0, 0, 0);
	fl_tracer_set_recording(0);
	ck_assert_uint_eq(b->n, 8);
	ck_assert_uint_eq(b->cap, 8); /* never grows inside the window */
	ck_assert_uint_eq(fl_tracer_dropped(), 3);

	/* reserve clears and grows, outside the window */
	ck_assert_int_eq(fl_tracer_reserve(32), FL_OK);
	ck_assert_uint_eq(b->n, 0);
	ck_assert_uint_eq(fl_tracer_dropped(), 0);
	ck_assert_uint_ge(b->cap, 32);
	fl_tracer_set_recording(1);
	for (int i = 0; i < 20; i++)
		fl_span_end(fl_span_begin(name, FL_EV_CPU_OP));
	fl_tracer_set_recording(0);
	ck_assert_uint_eq(b->n, 20);
	ck_assert_uint_eq(fl_tracer_dropped(), 0);

	/* a smaller reserve clears but keeps the capacity */
	ck_assert_int_eq(fl_tracer_reserve(4), FL_OK);
	ck_assert_uint_eq(b->n, 0);
	ck_assert_uint_ge(b->cap, 32);
	release();
}
END_TEST

/* ---- op inputs ---- */

/* An op's inputs go to its buffer's shapes array; the event points at them. */
START_TEST(op_records_its_inputs)
{
	attach_main(8);
	uint32_t mm = fl_tracer_intern("fl::mm"), step = fl_tracer_intern("step");
	const struct fl_tbuf *b = fl_tls_tbuf;
	ck_assert_ptr_nonnull(b->shapes);
	ck_assert_uint_eq(b->cap_shapes, b->cap);
	const struct fl_input in[] = {
		{.dim = {64, 96}, .ndim = 2, .type = FL_IN_FLOAT},
		{.dim = {96, 96}, .ndim = 2, .type = FL_IN_HALF},
		{.type = FL_IN_SCALAR},
	};
	ck_assert_uint_eq(fl_op_begin(mm, in, 3), FL_SLOT_NONE); /* not recording */
	ck_assert_uint_eq(b->n_shapes, 0);
	fl_tracer_set_recording(1);
	uint32_t s = fl_span_begin(step, FL_EV_USER_ANNOTATION);
	uint32_t a = fl_op_begin(mm, in, 3);
	uint32_t none = fl_op_begin(mm, in, 0); /* an op without inputs */
	fl_span_end(none);
	fl_span_end(a);
	fl_span_end(s);
	fl_tracer_set_recording(0);
	ck_assert_uint_eq(b->n, 3);
	ck_assert_uint_eq(b->n_shapes, 1);
	ck_assert_uint_eq(b->ev[a].kind, FL_EV_CPU_OP);
	ck_assert_uint_eq(b->ev[a].depth, 1);
	ck_assert_uint_ge(b->ev[a].t1, b->ev[a].t0);
	const struct fl_op_inputs *r = fl_event_inputs_of(b, &b->ev[a]);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->n, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(r->in[i].ndim, in[i].ndim);
		ck_assert_uint_eq(r->in[i].type, in[i].type);
		for (int d = 0; d < in[i].ndim; d++)
			ck_assert_int_eq(r->in[i].dim[d], in[i].dim[d]);
	}
	ck_assert_ptr_null(fl_event_inputs_of(b, &b->ev[none]));
	ck_assert_ptr_null(fl_event_inputs_of(b, &b->ev[s]));

	/* a full buffer drops the op and its inputs together */
	fl_tracer_set_recording(1);
	for (int i = 0; i < 10; i++)
		fl_span_end(fl_op_begin(mm, in, 2));
	fl_tracer_set_recording(0);
	ck_assert_uint_eq(b->n, 8);
	ck_assert_uint_eq(b->n_shapes, 6);
	ck_assert_uint_eq(fl_tracer_dropped(), 5);
	for (uint32_t i = 3; i < 8; i++)
		ck_assert_uint_eq(fl_event_inputs_of(b, &b->ev[i])->n, 2);

	/* reserve clears the records and sizes them with the events */
	ck_assert_int_eq(fl_tracer_reserve(64), FL_OK);
	ck_assert_uint_eq(b->n_shapes, 0);
	ck_assert_uint_ge(b->cap_shapes, 64);
	release();
}
END_TEST

/* A device row's buffer has no inputs array; its events never point into one. */
START_TEST(device_buffers_have_no_inputs)
{
	attach_main(0);
	struct fl_tbuf *d = fl_tracer_buffer_new("GPU 0", 1, 0, 0, 4);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_null(d->shapes);
	struct fl_event e = {.kind = FL_EV_CPU_OP, .value = 1};
	ck_assert_ptr_null(fl_event_inputs_of(d, &e));
	ck_assert_str_eq(fl_input_type_name(FL_IN_FLOAT), "float");
	ck_assert_str_eq(fl_input_type_name(FL_IN_HALF), "c10::Half");
	ck_assert_str_eq(fl_input_type_name(FL_IN_SCALAR), "Scalar");
	ck_assert_str_eq(fl_input_type_name(FL_IN_SCALAR_LIST), "ScalarList");
	ck_assert_str_eq(fl_input_type_name(FL_IN_NONE), "");
	ck_assert_str_eq(fl_input_type_name(FL_IN_TYPE_COUNT), "");
	release();
}
END_TEST

/* ---- threads ---- */

struct worker_arg {
	uint32_t name;
	int attach;
	uint32_t recorded;
};

static void *worker(void *p)
{
	struct worker_arg *w = p;
	if (w->attach && fl_tracer_thread_attach("worker", -1) != FL_OK)
		return NULL;
	for (int i = 0; i < 3; i++)
		fl_span_end(fl_span_begin(w->name, FL_EV_CPU_OP));
	w->recorded = fl_tls_tbuf ? fl_tls_tbuf->n : 0;
	return NULL;
}

START_TEST(threads_record_into_own_buffers)
{
	attach_main(0);
	struct worker_arg bare = {fl_tracer_intern("w"), 0, 99}, attached = {fl_tracer_intern("w"), 1, 99};
	fl_tracer_set_recording(1);
	fl_span_end(fl_span_begin(bare.name, FL_EV_CPU_OP));
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, worker, &bare), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(pthread_create(&t, NULL, worker, &attached), 0);
	pthread_join(t, NULL);
	fl_tracer_set_recording(0);

	ck_assert_uint_eq(bare.recorded, 0); /* no buffer, nothing recorded */
	ck_assert_uint_eq(attached.recorded, 3);
	const struct fl_tbuf *a = fl_tracer_threads();
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(a->next);
	ck_assert_ptr_null(a->next->next);
	ck_assert_str_eq(a->label, "main");
	ck_assert_str_eq(a->next->label, "worker");
	ck_assert_int_ne(a->tid, a->next->tid);
	ck_assert_int_eq(a->pid, a->next->pid);
	ck_assert_uint_eq(a->n, 1);
	ck_assert_uint_eq(a->next->n, 3);
	ck_assert_uint_eq(fl_tracer_max_count(), 3);
	release();
}
END_TEST

START_TEST(attach_twice_keeps_buffer)
{
	attach_main(0);
	struct fl_tbuf *b = fl_tls_tbuf;
	ck_assert_int_eq(fl_tracer_thread_attach("again", -1), FL_OK);
	ck_assert_ptr_eq(fl_tls_tbuf, b);
	ck_assert_ptr_null(fl_tracer_threads()->next);
	release();
	ck_assert_ptr_null(fl_tls_tbuf);
	ck_assert_ptr_null(fl_tracer_threads());
	ck_assert_int_eq(fl_tracer_recording, 0);
}
END_TEST

/* ---- names ---- */

START_TEST(intern_same_id_for_same_name)
{
	attach_main(0);
	char buf[32] = "fl::add";
	uint32_t a = fl_tracer_intern(buf);
	uint32_t b = fl_tracer_intern("fl::mul");
	strcpy(buf, "changed"); /* the table owns its copy */
	ck_assert_uint_eq(fl_tracer_intern("fl::add"), a);
	ck_assert_uint_eq(fl_tracer_intern("fl::mul"), b);
	ck_assert_uint_ne(a, b);
	ck_assert_str_eq(fl_tracer_name(a), "fl::add");
	ck_assert_str_eq(fl_tracer_name(b), "fl::mul");
	ck_assert_str_eq(fl_tracer_name(1000000), "?");

	/* past the first growth of the table */
	char name[32];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "span-%d", i);
		fl_tracer_intern(name);
	}
	ck_assert_uint_eq(fl_tracer_intern("fl::add"), a);
	ck_assert_str_eq(fl_tracer_name(fl_tracer_intern("span-299")), "span-299");
	release();

	/* release forgets every name */
	attach_main(0);
	ck_assert_uint_eq(fl_tracer_intern("fresh"), 0);
	release();
}
END_TEST

START_TEST(kind_categories)
{
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_CPU_OP), "cpu_op");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_USER_ANNOTATION), "user_annotation");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_CUDA_RUNTIME), "cuda_runtime");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_KERNEL), "kernel");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_GPU_MEMCPY), "gpu_memcpy");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_GPU_MEMSET), "gpu_memset");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_GPU_USER_ANNOTATION), "gpu_user_annotation");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_CUDA_SYNC), "cuda_sync");
	ck_assert_str_eq(fl_event_kind_cat(FL_EV_KIND_COUNT), "unknown");
}
END_TEST

/* ---- clock ---- */

START_TEST(clock_monotonic_and_near_realtime)
{
	fl_clock_init();
	uint64_t prev_ticks = fl_clock_ticks(), prev_ns = fl_clock_to_ns(prev_ticks);
	int backwards = 0;
	for (int i = 0; i < 10000; i++) {
		uint64_t t = fl_clock_ticks();
		uint64_t ns = fl_clock_to_ns(t);
		backwards += t < prev_ticks || ns < prev_ns;
		prev_ticks = t;
		prev_ns = ns;
	}
	ck_assert_int_eq(backwards, 0);
	uint64_t rt = fl_clock_realtime_ns();
	uint64_t ours = fl_clock_to_ns(fl_clock_ticks());
	uint64_t diff = ours > rt ? ours - rt : rt - ours;
	ck_assert_msg(diff < 50000000ull, "clock is %llu ns away from CLOCK_REALTIME", (unsigned long long)diff);
	ck_assert_uint_eq(fl_clock_delta_ns(prev_ticks + 10, prev_ticks), 0);
	if (strcmp(fl_clock_source(), "tsc") == 0)
		ck_assert(fl_clock_tsc_hz() > 1e8);
	else
		ck_assert(fl_clock_tsc_hz() == 0.0);
}
END_TEST

START_TEST(clock_measures_a_sleep)
{
	fl_clock_init();
	uint64_t t0 = fl_clock_ticks();
	fl_sleep_ms(20);
	uint64_t t1 = fl_clock_ticks();
	double ms = (double)fl_clock_delta_ns(t0, t1) / 1e6;
	ck_assert_msg(ms >= 15 && ms <= 500, "a 20 ms sleep measured %.3f ms", ms);
	fl_clock_refine();
	ms = (double)(fl_clock_to_ns(t1) - fl_clock_to_ns(t0)) / 1e6;
	ck_assert_msg(ms >= 15 && ms <= 500, "after refine, a 20 ms sleep spans %.3f ms", ms);
	fl_sleep_ms(0);
	fl_sleep_ms(-1);
}
END_TEST

static Suite *tracer_suite(void)
{
	Suite *s = suite_create("tracer");
	TCase *tc = tcase_create("spans");
	tcase_add_test(tc, nested_spans_in_begin_order);
	tcase_add_test(tc, recording_off_records_nothing);
	tcase_add_test(tc, complete_records_interval);
	tcase_add_test(tc, set_corr_on_open_span);
	tcase_add_test(tc, full_buffer_counts_drops);
	tcase_add_test(tc, threads_record_into_own_buffers);
	tcase_add_test(tc, attach_twice_keeps_buffer);
	tcase_add_test(tc, op_records_its_inputs);
	tcase_add_test(tc, device_buffers_have_no_inputs);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, intern_same_id_for_same_name);
	tcase_add_test(tc, kind_categories);
	suite_add_tcase(s, tc);

	tc = tcase_create("clock");
	tcase_add_test(tc, clock_monotonic_and_near_realtime);
	tcase_add_test(tc, clock_measures_a_sleep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tracer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
