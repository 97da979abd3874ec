/* check_emu.c — the emulated device: FIFO queues, blocking syncs, cross-stream
 * waits, correlation ids shared by launches and kernels, real copies, and the
 * clock factor of a throttled device. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "capture/clock.h"
#include "capture/tracer.h"
#include "runtime/device.h"

static struct fl_backend be;

static void setup(void)
{
	ck_assert_int_eq(fl_tracer_init(1u << 12), FL_OK);
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
	be.ops = fl_backend_find("emu");
	ck_assert_ptr_nonnull(be.ops);
	struct fl_backend_config cfg = {.rank = 0, .world_size = 1, .device = 0};
	ck_assert_int_eq(be.ops->open(&be, &cfg), FL_OK);
}

static void teardown(void)
{
	be.ops->close(&be);
	fl_tracer_release();
}

/* out[0] is a counter, out[1 + counter] records `scalar` */
static void k_log(const struct fl_kernel_args *a)
{
	int n = (int)a->out[0];
	a->out[1 + n] = a->scalar;
	a->out[0] = (float)(n + 1);
}
static void k_sleep(const struct fl_kernel_args *a)
{
	fl_sleep_ms(a->scalar);
	a->out[0] = 1.0f;
}
static void k_read_flag(const struct fl_kernel_args *a) { a->out[0] = a->a[0]; }

static const struct fl_kernel K_LOG = {"log_kernel", k_log};
static const struct fl_kernel K_SLEEP = {"sleep_kernel", k_sleep};
static const struct fl_kernel K_READ = {"read_kernel", k_read_flag};

START_TEST(test_fifo_order_and_drain)
{
	float logbuf[202] = {0};
	for (int i = 0; i < 200; i++) {
		struct fl_kernel_args a = {.out = logbuf, .scalar = (float)i};
		be.ops->launch(&be, &K_LOG, &a, FL_STREAM_COMPUTE);
	}
	be.ops->stream_synchronize(&be, FL_STREAM_COMPUTE);
	ck_assert_int_eq((int)logbuf[0], 200);
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq((int)logbuf[1 + i], i);
}
END_TEST

START_TEST(test_launch_is_async_and_sync_blocks)
{
	float flag = 0;
	struct fl_kernel_args a = {.out = &flag, .scalar = 60.0f};
	uint64_t t0 = fl_clock_ticks();
	be.ops->launch(&be, &K_SLEEP, &a, FL_STREAM_COMPUTE);
	uint64_t t1 = fl_clock_ticks();
	ck_assert_msg(fl_clock_delta_ns(t0, t1) < 30000000ull, "launch waited for the kernel");
	be.ops->stream_synchronize(&be, FL_STREAM_COMPUTE);
	uint64_t t2 = fl_clock_ticks();
	ck_assert_float_eq(flag, 1.0f);
	ck_assert_msg(fl_clock_delta_ns(t0, t2) >= 50000000ull, "synchronize returned before the kernel ended");
}
END_TEST

START_TEST(test_stream_wait_orders_streams)
{
	float flag = 0, seen = -1;
	struct fl_kernel_args slow = {.out = &flag, .scalar = 40.0f};
	be.ops->launch(&be, &K_SLEEP, &slow, FL_STREAM_COMPUTE);
	be.ops->stream_wait(&be, FL_STREAM_COMM, FL_STREAM_COMPUTE);
	struct fl_kernel_args rd = {.out = &seen, .a = &flag};
	be.ops->launch(&be, &K_READ, &rd, FL_STREAM_COMM);
	be.ops->synchronize(&be);
	ck_assert_float_eq(seen, 1.0f);
}
END_TEST

START_TEST(test_copies_move_bytes)
{
	char src[4096], dst[4096];
	for (int i = 0; i < 4096; i++)
		src[i] = (char)(i * 7);
	memset(dst, 0, sizeof(dst));
	be.ops->copy(&be, dst, src, sizeof(src), FL_COPY_H2D, FL_STREAM_COMPUTE);
	be.ops->stream_synchronize(&be, FL_STREAM_COMPUTE);
	ck_assert_int_eq(memcmp(src, dst, sizeof(src)), 0);
}
END_TEST

START_TEST(test_correlation_ids_link_launch_and_kernel)
{
	float logbuf[8] = {0};
	fl_tracer_set_recording(1);
	for (int i = 0; i < 3; i++) {
		struct fl_kernel_args a = {.out = logbuf, .scalar = (float)i};
		be.ops->launch(&be, &K_LOG, &a, FL_STREAM_COMPUTE);
	}
	be.ops->stream_synchronize(&be, FL_STREAM_COMPUTE);
	fl_tracer_set_recording(0);
	uint32_t host_corr[8], dev_corr[8];
	int nh = 0, nd = 0;
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next)
		for (uint32_t i = 0; i < b->n; i++) {
			const struct fl_event *e = &b->ev[i];
			if (e->kind == FL_EV_CUDA_RUNTIME && !strcmp(fl_tracer_name(e->name), "cudaLaunchKernel") && nh < 8)
				host_corr[nh++] = e->corr;
			if (e->kind == FL_EV_KERNEL && nd < 8) {
				ck_assert_int_eq(e->stream, FL_STREAM_COMPUTE);
				ck_assert_int_eq(b->device, 0);
				ck_assert_str_eq(fl_tracer_name(e->name), "log_kernel");
				dev_corr[nd++] = e->corr;
			}
		}
	ck_assert_int_eq(nh, 3);
	ck_assert_int_eq(nd, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_ne(host_corr[i], 0);
		if (i)
			ck_assert_uint_gt(host_corr[i], host_corr[i - 1]);
		ck_assert_uint_eq(host_corr[i], dev_corr[i]);
	}
}
END_TEST

START_TEST(test_clock_factor_stretches_kernels)
{
	ck_assert_int_eq(be.ops->set_clock_factor(&be, 2.0), FL_OK);
	ck_assert_int_ne(be.ops->set_clock_factor(&be, 0.5), FL_OK);
	float flag = 0;
	struct fl_kernel_args a = {.out = &flag, .scalar = 20.0f};
	uint64_t t0 = fl_clock_ticks();
	be.ops->launch(&be, &K_SLEEP, &a, FL_STREAM_COMPUTE);
	be.ops->stream_synchronize(&be, FL_STREAM_COMPUTE);
	uint64_t t1 = fl_clock_ticks();
	ck_assert_msg(fl_clock_delta_ns(t0, t1) >= 36000000ull, "a 20 ms kernel at factor 2 took under 36 ms");
	struct fl_device_stats st;
	be.ops->stats(&be, &st, 1);
	ck_assert_uint_eq(st.kernels, 1);
	ck_assert(st.stretched_ms >= 0.8 * st.kernel_ms);
}
END_TEST

static void release_cb(void *ctx) { *(int *)ctx = 1; }

START_TEST(test_release_runs_in_stream_order)
{
	float flag = 0;
	int released = 0;
	struct fl_kernel_args a = {.out = &flag, .scalar = 30.0f};
	be.ops->launch(&be, &K_SLEEP, &a, FL_STREAM_COMPUTE);
	fl_dev_release(&be, release_cb, &released, FL_STREAM_COMPUTE);
	ck_assert_int_eq(released, 0); /* the kernel before it is still running */
	be.ops->stream_synchronize(&be, FL_STREAM_COMPUTE);
	ck_assert_int_eq(released, 1);
}
END_TEST

static Suite *emu_suite(void)
{
	Suite *s = suite_create("emu");
	TCase *tc = tcase_create("device");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fifo_order_and_drain);
	tcase_add_test(tc, test_launch_is_async_and_sync_blocks);
	tcase_add_test(tc, test_stream_wait_orders_streams);
	tcase_add_test(tc, test_copies_move_bytes);
	tcase_add_test(tc, test_correlation_ids_link_launch_and_kernel);
	tcase_add_test(tc, test_clock_factor_stretches_kernels);
	tcase_add_test(tc, test_release_runs_in_stream_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(emu_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
