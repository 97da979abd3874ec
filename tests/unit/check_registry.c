/* check_registry.c — every entry of the fault, backend and command tables. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/outfile.h"
#include "faults/fault.h"
#include "cli/commands.h"
#include "runtime/device.h"

/* ---- faults ---- */

START_TEST(faults_complete_and_unique)
{
	size_t n = 0;
	for (size_t i = 0; fl_faults[i]; i++, n++) {
		const struct fl_fault_ops *f = fl_faults[i];
		ck_assert_msg(f->name && f->name[0], "fault %zu has no name", i);
		ck_assert_msg(f->summary && f->summary[0], "%s: no summary", f->name);
		ck_assert_msg(f->family && f->family[0], "%s: no family", f->name);
		ck_assert_msg(f->fix && f->fix[0], "%s: no fix", f->name);
		ck_assert_msg(f->init || f->step_begin || f->phase_begin || f->site || f->phase_end || f->step_end,
			      "%s: no hook, so it could never change what runs", f->name);
		for (const char *p = f->name; *p; p++)
			ck_assert_msg((*p >= 'a' && *p <= 'z') || *p == '_', "%s: not a lowercase identifier", f->name);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(fl_faults[j]->name, f->name) != 0, "fault '%s' listed twice", f->name);
		ck_assert_ptr_eq(fl_fault_find(f->name), f);
	}
	ck_assert_uint_ge(n, 4);
	ck_assert_ptr_null(fl_fault_find("nope"));
	ck_assert_ptr_null(fl_fault_find(""));
}
END_TEST

START_TEST(faults_of_the_design_card)
{
	static const char *const required[] = {"loader_sleep", "op_storm", "periodic_stall", "gc_pause"};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		ck_assert_msg(fl_fault_find(required[i]) != NULL, "fault '%s' is not registered", required[i]);
}
END_TEST

/* ---- backends ---- */

START_TEST(backends_complete_and_unique)
{
	size_t n = 0;
	for (size_t i = 0; fl_backends[i]; i++, n++) {
		const struct fl_backend_ops *b = fl_backends[i];
		ck_assert_msg(b->name && b->name[0], "backend %zu has no name", i);
		ck_assert_msg(b->summary && b->summary[0], "%s: no summary", b->name);
		/* the hooks the workload calls without a NULL-tolerant fl_dev_* helper */
		ck_assert_msg(b->open && b->launch && b->copy && b->device_properties,
			      "%s: open, launch, copy and device_properties are required", b->name);
		/* an asynchronous device must let the host wait and free in stream order */
		if (b->asynchronous)
			ck_assert_msg(b->synchronize && b->stream_synchronize && b->release,
				      "%s: asynchronous without synchronize, stream_synchronize and release", b->name);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(fl_backends[j]->name, b->name) != 0, "backend '%s' listed twice", b->name);
		ck_assert_ptr_eq(fl_backend_find(b->name), b);
	}
	ck_assert_uint_ge(n, 1);
	ck_assert_ptr_nonnull(fl_backend_find("cpu"));
	ck_assert_ptr_null(fl_backend_find("nope"));
}
END_TEST

static void k_fill(const struct fl_kernel_args *a)
{
	for (int i = 0; i < a->m * a->n; i++)
		a->out[i] = a->scalar;
}

/* Every backend opens, runs a kernel and a copy for real, and describes its devices. */
START_TEST(backend_runs_kernels)
{
	const struct fl_backend_ops *ops = fl_backends[_i];
	const struct fl_backend_config cfg = {.rank = 0, .world_size = 1, .device = 0};
	struct fl_backend be = {.ops = ops};
	if (strcmp(ops->name, "cuda") == 0)
		return; /* needs a GPU and device memory: tests/gpu-check.sh covers it */
	ck_assert_int_eq(ops->open(&be, &cfg), FL_OK);
	float out[6] = {0}, back[6] = {0};
	const struct fl_kernel fill = {"fill_kernel", k_fill};
	struct fl_kernel_args a = {.out = out, .m = 2, .n = 3, .scalar = 1.5f};
	ops->launch(&be, &fill, &a, FL_STREAM_COMPUTE);
	ops->copy(&be, back, out, sizeof(out), FL_COPY_D2H, FL_STREAM_COMPUTE);
	fl_dev_stream_synchronize(&be, FL_STREAM_COMPUTE);
	fl_dev_synchronize(&be);
	for (int i = 0; i < 6; i++) {
		ck_assert_float_eq(out[i], 1.5f);
		ck_assert_float_eq(back[i], 1.5f); /* the copy ran after the kernel */
	}
	cJSON *props = cJSON_Parse(ops->device_properties(&be));
	ck_assert_msg(cJSON_IsArray(props), "%s: deviceProperties is not a JSON array", ops->name);
	if (strcmp(ops->name, "cpu") == 0)
		ck_assert_int_eq(cJSON_GetArraySize(props), 0); /* no device on a CPU-only run */
	if (strcmp(ops->name, "emu") == 0) {
		const cJSON *name = cJSON_GetObjectItem(cJSON_GetArrayItem(props, 0), "name");
		ck_assert(cJSON_IsString(name));
		ck_assert_ptr_nonnull(strstr(name->valuestring, "emulated")); /* never passed off as a GPU */
	}
	cJSON_Delete(props);
	if (ops->close)
		ops->close(&be);
}
END_TEST

/* ---- commands ---- */

/* Run cmd --help with stdout captured into a malloc'd string. */
static char *run_help(const struct fl_command *c, enum fl_status *st)
{
	char path[] = "/tmp/fl-check-registry-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	ck_assert_int_ge(saved, 0);
	dup2(fd, STDOUT_FILENO);
	char name[64], help[] = "--help";
	snprintf(name, sizeof(name), "%s", c->name);
	char *argv[] = {name, help, NULL};
	*st = c->run(2, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	char *text = NULL;
	size_t len;
	ck_assert_int_eq(fl_read_file(path, &text, &len), FL_OK);
	unlink(path);
	return text;
}

START_TEST(commands_complete_and_unique)
{
	size_t n = 0;
	for (const struct fl_command *c = fl_commands; c->name; c++, n++) {
		ck_assert_msg(c->summary && c->summary[0], "%s: no summary", c->name);
		ck_assert_msg(c->run != NULL, "%s: no run function", c->name);
		ck_assert_ptr_nonnull(c->usage);
		char prefix[80];
		snprintf(prefix, sizeof(prefix), "usage: faultline %s", c->name);
		size_t pl = strlen(prefix);
		ck_assert_msg(strncmp(c->usage, prefix, pl) == 0 && (c->usage[pl] == ' ' || c->usage[pl] == '\n'),
			      "%s: usage starts '%.40s'", c->name, c->usage);
		ck_assert_msg(c->usage[strlen(c->usage) - 1] == '\n', "%s: usage lacks a final newline", c->name);
		for (const struct fl_command *d = fl_commands; d != c; d++)
			ck_assert_msg(strcmp(d->name, c->name) != 0, "command '%s' listed twice", c->name);
		ck_assert_ptr_eq(fl_command_find(c->name), c);
	}
	ck_assert_uint_ge(n, 4);
	ck_assert_ptr_null(fl_command_find("nope"));
}
END_TEST

START_TEST(every_command_handles_help)
{
	for (const struct fl_command *c = fl_commands; c->name; c++) {
		enum fl_status st;
		char *out = run_help(c, &st);
		ck_assert_msg(st == FL_OK, "%s --help: status %d (%s)", c->name, st, fl_error_msg());
		ck_assert_msg(strcmp(out, c->usage) == 0, "%s --help printed '%.60s'", c->name, out);
		free(out);
	}
}
END_TEST

static int n_backends(void)
{
	int n = 0;
	while (fl_backends[n])
		n++;
	return n;
}

static Suite *registry_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("faults");
	tcase_add_test(tc, faults_complete_and_unique);
	tcase_add_test(tc, faults_of_the_design_card);
	suite_add_tcase(s, tc);

	tc = tcase_create("backends");
	tcase_add_test(tc, backends_complete_and_unique);
	tcase_add_loop_test(tc, backend_runs_kernels, 0, n_backends());
	suite_add_tcase(s, tc);

	tc = tcase_create("commands");
	tcase_add_test(tc, commands_complete_and_unique);
	tcase_add_test(tc, every_command_handles_help);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(registry_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
