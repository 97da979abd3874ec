/* check_scenario.c — scenario loading: defaults, variants, and errors that name the file and the place;
 * the harness's scratch folders (a killed run's removed by the next). */
#define _GNU_SOURCE /* nftw */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/outfile.h"
#include "common/sha256.h"
#include "generator/scenario.h"
#include "generator/scratch.h"
#include "tests/unit/scratch.h"

#ifndef FL_SOURCE_DIR
#error "CMake defines FL_SOURCE_DIR (the source directory)"
#endif

/* ---- scratch directories (see check_common.c) ---- */

static void base_setup(void) { scratch_base_setup("scenario"); }

static void tmp_teardown(void) { rm_rf(tmpdir); }

/* Write text to NAME in the scratch directory; path receives its path. */
static void write_scenario(char *path, size_t n, const char *name, const char *text)
{
	snprintf(path, n, "%s/%s", tmpdir, name);
	ck_assert_int_eq(fl_write_file_atomic(path, text, strlen(text)), FL_OK);
}

#define HEAD "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {}"

/* ---- valid files ---- */

START_TEST(minimal_gets_defaults)
{
	const char *text = HEAD "}\n";
	char path[256], hex[65];
	struct fl_scenario sc;
	write_scenario(path, sizeof(path), "mini.json", text);
	ck_assert_int_eq(fl_scenario_load(path, &sc), FL_OK);
	ck_assert_str_eq(sc.path, path);
	ck_assert_str_eq(sc.name, "t");
	ck_assert_str_eq(sc.description, "");
	ck_assert_str_eq(sc.backend, "cpu");
	ck_assert_int_eq(sc.ranks, 1);
	ck_assert_uint_eq(sc.seed, 0);
	ck_assert_int_eq(sc.wait, 1);
	ck_assert_int_eq(sc.warmup, 1);
	ck_assert_int_eq(sc.active, 8);
	ck_assert_str_eq(sc.workload.kind, "mlp");
	ck_assert_str_eq(sc.workload.mode, "inference");
	ck_assert_int_eq(sc.workload.batch, 64);
	ck_assert_int_eq(sc.workload.dim, 512);
	ck_assert_int_eq(sc.workload.layers, 4);
	ck_assert_int_eq(sc.workload.alloc, FL_ALLOC_SYSTEM);
	ck_assert_uint_eq(sc.workload.n_phases, 3);
	ck_assert_str_eq(sc.workload.phases[0], "data_loading");
	ck_assert_str_eq(sc.workload.phases[1], "forward");
	ck_assert_str_eq(sc.workload.phases[2], "metrics");
	ck_assert_uint_eq(sc.n_faults, 0);
	ck_assert_ptr_null(sc.rubric);
	ck_assert_ptr_null(sc.baseline);
	ck_assert_ptr_null(sc.out_trace);
	fl_sha256_hex(text, strlen(text), hex);
	ck_assert_str_eq(sc.sha256, hex);
	fl_scenario_release(&sc);
	ck_assert_ptr_null(sc.doc);
}
END_TEST

START_TEST(train_mode_defaults)
{
	char path[256];
	struct fl_scenario sc;
	write_scenario(path, sizeof(path), "train.json",
		       "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"backend\": \"emu\",\n"
		       " \"workload\": {\"mode\": \"train\", \"layers\": 2}}\n");
	ck_assert_int_eq(fl_scenario_load(path, &sc), FL_OK);
	ck_assert_str_eq(sc.backend, "emu");
	ck_assert_str_eq(sc.workload.mode, "train");
	ck_assert_int_eq(sc.workload.layers, 2);
	static const char *const phases[] = {"data_loading", "forward", "backward", "optimizer", "metrics"};
	ck_assert_uint_eq(sc.workload.n_phases, 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_str_eq(sc.workload.phases[i], phases[i]);
	fl_scenario_release(&sc);
}
END_TEST

START_TEST(full_file_and_fault_defaults)
{
	char path[256];
	struct fl_scenario sc;
	const char *text =
		"{\"schema\": \"faultline.scenario/1\", \"name\": \"full-1.x\", \"description\": \"d\",\n"
		" \"backend\": \"cpu\", \"ranks\": 2, \"seed\": 17,\n"
		" \"schedule\": {\"wait\": 0, \"warmup\": 2, \"active\": 5},\n"
		" \"workload\": {\"batch\": 32, \"dim\": 128, \"target_step_ms\": 1.5, \"allocator\": \"heap\",\n"
		"              \"phases\": [\"data_loading\", \"metrics\"]},\n"
		" \"faults\": [\n"
		"   {\"fault\": \"loader_sleep\", \"params\": {\"steps\": [2, 5]}},\n"
		"   {\"fault\": \"periodic_stall\", \"params\": {\"ms\": 5}},\n"
		"   {\"fault\": \"op_storm\", \"params\": {\"steps\": {\"every\": 3, \"offset\": 1}}}\n"
		" ],\n"
		" \"output\": {\"trace\": \"x.json.gz\", \"truth\": \"x.truth.json\"},\n"
		" \"rubric\": \"x.rubric.json\", \"baseline\": \"r7-healthy\"}\n";
	write_scenario(path, sizeof(path), "full.json", text);
	ck_assert_int_eq(fl_scenario_load(path, &sc), FL_OK);
	ck_assert_int_eq(sc.ranks, 2);
	ck_assert_uint_eq(sc.seed, 17);
	ck_assert_int_eq(sc.wait, 0);
	ck_assert_int_eq(sc.warmup, 2);
	ck_assert_int_eq(sc.active, 5);
	ck_assert_int_eq(sc.workload.batch, 32);
	ck_assert_int_eq(sc.workload.dim, 128);
	ck_assert_double_eq(sc.workload.target_step_ms, 1.5);
	ck_assert_int_eq(sc.workload.alloc, FL_ALLOC_HEAP);
	ck_assert_uint_eq(sc.workload.n_phases, 2);
	ck_assert_str_eq(sc.out_trace, "x.json.gz");
	ck_assert_str_eq(sc.baseline, "r7-healthy");
	ck_assert_uint_eq(sc.n_faults, 3);

	const struct fl_fault_spec *ls = &sc.faults[0], *ps = &sc.faults[1], *os = &sc.faults[2];
	ck_assert_str_eq(ls->ops->name, "loader_sleep");
	ck_assert_double_eq(ls->values[0].num, 30); /* ms default */
	ck_assert_uint_eq(ls->values[1].steps.n, 2);
	ck_assert_int_eq(ls->values[1].steps.list[1], 5);
	ck_assert_str_eq(ps->ops->name, "periodic_stall");
	ck_assert_double_eq(ps->values[0].num, 5);
	ck_assert_double_eq(ps->values[1].num, 3); /* period */
	ck_assert_double_eq(ps->values[2].num, 2); /* offset */
	ck_assert_str_eq(ps->values[3].str, "metrics");
	ck_assert_int_eq(os->values[2].steps.every, 3);
	ck_assert_int_eq(os->values[2].steps.offset, 1);
	fl_scenario_release(&sc);
}
END_TEST

/* Scenario files of a directory: *.json that are not rubrics or truths (the
 * same rule as `faultline regen DIR`). Each must load; returns how many. */
static int load_all_in(const char *dir)
{
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open '%s'", dir);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0 || strstr(e->d_name, ".rubric.") ||
		    strstr(e->d_name, ".truth."))
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct fl_scenario sc;
		enum fl_status st = fl_scenario_load(path, &sc);
		ck_assert_msg(st == FL_OK, "%s: %s", path, fl_error_msg());
		ck_assert_uint_ge(sc.workload.n_phases, 1);
		ck_assert_int_eq(fl_scenario_vary(&sc, 1), FL_OK); /* declared ranges are drawable */
		fl_scenario_release(&sc);
		n++;
	}
	closedir(d);
	return n;
}

START_TEST(repository_scenarios_load)
{
	ck_assert_int_ge(load_all_in(FL_SOURCE_DIR "/scenarios"), 4); /* at least the R7-R9 set */
	struct stat st;
	if (stat(FL_SOURCE_DIR "/scenarios/emu", &st) == 0)
		ck_assert_int_ge(load_all_in(FL_SOURCE_DIR "/scenarios/emu"), 1);
}
END_TEST

/* ---- per-learner variants ---- */

static void load_text(struct fl_scenario *sc, const char *name, const char *text)
{
	char path[256];
	write_scenario(path, sizeof(path), name, text);
	enum fl_status st = fl_scenario_load(path, sc);
	ck_assert_msg(st == FL_OK, "%s: %s", name, fl_error_msg());
}

START_TEST(vary_draws_within_declared_ranges)
{
	const char *text = HEAD ", \"faults\": [\n"
			   " {\"fault\": \"periodic_stall\", \"params\": {\"ms\": 60, \"period\": 3, \"offset\": 2},\n"
			   "  \"vary\": {\"ms\": [50, 70], \"period\": [3, 5]}},\n"
			   " {\"fault\": \"loader_sleep\"}]}\n";
	struct fl_scenario a, b;
	load_text(&a, "vary-a.json", text);
	load_text(&b, "vary-b.json", text);
	const struct fl_vary *v = a.faults[0].vary;
	ck_assert(v[0].declared && v[1].declared && !v[2].declared && !v[3].declared);
	ck_assert_double_eq(v[0].lo, 50);
	ck_assert_double_eq(v[0].hi, 70);
	ck_assert(!a.faults[1].vary[0].declared);
	ck_assert_double_eq(a.faults[0].values[0].num, 60); /* nothing drawn until asked */

	int seen_period[6] = {0};
	for (uint64_t seed = 0; seed < 60; seed++) {
		ck_assert_int_eq(fl_scenario_vary(&a, seed), FL_OK);
		ck_assert_int_eq(fl_scenario_vary(&b, seed), FL_OK);
		const struct fl_param_value *pa = a.faults[0].values, *pb = b.faults[0].values;
		double ms = pa[0].num, period = pa[1].num;
		ck_assert_msg(ms >= 50 && ms <= 70, "seed %llu drew ms %g", (unsigned long long)seed, ms);
		ck_assert_double_eq_tol(ms * 1000, round(ms * 1000), 1e-6); /* three decimals */
		ck_assert_msg(period >= 3 && period <= 5 && period == floor(period), "period %g", period);
		seen_period[(int)period] = 1;
		ck_assert_double_eq(pa[2].num, 2);      /* offset: not declared, not drawn */
		ck_assert_double_eq(pb[0].num, ms);     /* the same seed draws the same values */
		ck_assert_double_eq(pb[1].num, period);
		ck_assert(a.faults[0].vary[0].drawn && !a.faults[0].vary[2].drawn);
		ck_assert_double_eq(a.faults[1].values[0].num, 30); /* loader_sleep declares nothing */
	}
	ck_assert(seen_period[3] && seen_period[4] && seen_period[5]); /* both ends of the range */

	ck_assert_int_eq(fl_scenario_vary(&a, 1), FL_OK);
	ck_assert_int_eq(fl_scenario_vary(&b, 2), FL_OK);
	ck_assert(a.faults[0].values[0].num != b.faults[0].values[0].num);
	fl_scenario_release(&b);
	fl_scenario_release(&a);
}
END_TEST

START_TEST(vary_keeps_offset_below_period)
{
	struct fl_scenario sc;
	load_text(&sc, "vary-offset.json",
		  HEAD ", \"faults\": [{\"fault\": \"periodic_stall\", \"vary\": {\"period\": [1, 4], \"offset\": [0, 3]}}]}");
	for (uint64_t seed = 0; seed < 60; seed++) {
		ck_assert_int_eq(fl_scenario_vary(&sc, seed), FL_OK);
		ck_assert_double_lt(sc.faults[0].values[2].num, sc.faults[0].values[1].num);
	}
	fl_scenario_release(&sc);

	load_text(&sc, "vary-impossible.json",
		  HEAD ", \"faults\": [{\"fault\": \"periodic_stall\", \"vary\": {\"period\": [1, 2], \"offset\": [5, 6]}}]}");
	ck_assert_int_eq(fl_scenario_vary(&sc, 3), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), sc.path));
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "faults[0].vary"));
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "offset < period"));
	fl_scenario_release(&sc);
}
END_TEST

/* ---- errors: FL_EINPUT, with the file and the place named ---- */

struct bad_case {
	const char *what;
	const char *text;
	const char *needles[3];
};

static const struct bad_case bad_cases[] = {
	{"syntax error", "{\"schema\": \"faultline.scenario/1\",\n \"name\": \"t\"\n \"workload\": {}\n}\n",
	 {"line 3", "syntax"}},
	{"unknown top-level key", HEAD ", \"colour\": \"red\"}", {"colour", "unknown key"}},
	{"wrong type", HEAD ", \"ranks\": \"two\"}", {"ranks", "an integer", "a string"}},
	{"integer out of range", HEAD ", \"ranks\": 0}", {"ranks", "out of range"}},
	{"schema version", "{\"schema\": \"faultline.scenario/2\", \"name\": \"t\", \"workload\": {}}",
	 {"faultline.scenario/2", "faultline.scenario/1"}},
	{"wrong schema", "{\"schema\": \"faultline.rubric/1\", \"name\": \"t\", \"workload\": {}}",
	 {"schema", "faultline.rubric/1"}},
	{"missing schema", "{\"name\": \"t\", \"workload\": {}}", {"schema", "missing"}},
	{"missing workload", "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\"}", {"workload", "missing"}},
	{"bad name", "{\"schema\": \"faultline.scenario/1\", \"name\": \"a b\", \"workload\": {}}", {"name", "a b"}},
	{"not an object", "[1, 2]", {"top level", "an object"}},
	{"unknown workload key", "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {\"depth\": 3}}",
	 {"workload.depth", "unknown key"}},
	{"unknown phase", "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {\"phases\": [\"forward\", \"loss\"]}}",
	 {"workload.phases[1]", "loss"}},
	{"unknown mode", "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {\"mode\": \"training\"}}",
	 {"workload.mode", "training"}},
	{"layers out of range", "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {\"layers\": 17}}",
	 {"workload.layers", "out of range"}},
	{"target out of range", "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {\"target_step_ms\": 0}}",
	 {"workload.target_step_ms", "out of range"}},
	{"bad allocator", "{\"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {\"allocator\": \"pool\"}}",
	 {"workload.allocator", "pool"}},
	{"bad schedule", HEAD ", \"schedule\": {\"active\": 2.5}}", {"schedule.active", "an integer"}},
	{"unknown fault", HEAD ", \"faults\": [{\"fault\": \"loader_slep\"}]}",
	 {"faults[0].fault", "loader_slep", "faultline faults"}},
	{"fault not an object", HEAD ", \"faults\": [\"loader_sleep\"]}", {"faults[0]", "an object"}},
	{"param out of range", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"ms\": -5}}]}",
	 {"faults[0].params.ms", "out of range", "-5"}},
	{"param wrong type", HEAD ", \"faults\": [{\"fault\": \"periodic_stall\", \"params\": {\"period\": 2.5}}]}",
	 {"faults[0].params.period", "an integer"}},
	{"unknown param", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"msec\": 5}}]}",
	 {"faults[0].params.msec", "unknown parameter", "ms, steps"}},
	{"bad steps word", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"steps\": \"often\"}}]}",
	 {"faults[0].params.steps", "often"}},
	{"fault without id", HEAD ", \"faults\": [{\"params\": {}}]}", {"faults[0].fault", "missing"}},
	{"negative step", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"steps\": [1, -2]}}]}",
	 {"faults[0].params.steps[1]", "step number"}},
	{"steps offset", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"steps\": {\"every\": 3, \"offset\": 3}}}]}",
	 {"faults[0].params.steps.offset", "below"}},
	{"steps every", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"steps\": {\"every\": 0}}}]}",
	 {"faults[0].params.steps.every", "out of range"}},
	{"steps key", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"steps\": {\"each\": 2}}}]}",
	 {"faults[0].params.steps.each", "unknown key"}},
	{"empty string param", HEAD ", \"faults\": [{\"fault\": \"periodic_stall\", \"params\": {\"phase\": \"\"}}]}",
	 {"faults[0].params.phase", "non-empty string"}},
	{"duplicate key", HEAD ", \"seed\": 1, \"seed\": 2}", {"seed", "duplicate key"}},
	{"vary not an object", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"vary\": [20, 40]}]}",
	 {"faults[0].vary", "an object"}},
	{"vary unknown param", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"vary\": {\"msec\": [1, 2]}}]}",
	 {"faults[0].vary.msec", "unknown parameter"}},
	{"vary a string param", HEAD ", \"faults\": [{\"fault\": \"periodic_stall\", \"vary\": {\"phase\": [1, 2]}}]}",
	 {"faults[0].vary.phase", "numeric"}},
	{"vary low above high", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"vary\": {\"ms\": [40, 20]}}]}",
	 {"faults[0].vary.ms", "LOW <= HIGH"}},
	{"vary not a pair", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"vary\": {\"ms\": [20]}}]}",
	 {"faults[0].vary.ms", "[LOW, HIGH]"}},
	{"vary out of range", HEAD ", \"faults\": [{\"fault\": \"loader_sleep\", \"vary\": {\"ms\": [-1, 20]}}]}",
	 {"faults[0].vary.ms", "out of range"}},
	{"vary fraction of an int", HEAD ", \"faults\": [{\"fault\": \"periodic_stall\", \"vary\": {\"period\": [2.5, 4]}}]}",
	 {"faults[0].vary.period", "an integer"}},
};

START_TEST(bad_file_is_input_error)
{
	const struct bad_case *c = &bad_cases[_i];
	char path[256];
	struct fl_scenario sc;
	write_scenario(path, sizeof(path), "bad.json", c->text);
	fl_error_clear();
	enum fl_status st = fl_scenario_load(path, &sc);
	ck_assert_msg(st == FL_EINPUT, "%s: status %d, message '%s'", c->what, st, fl_error_msg());
	ck_assert_msg(strstr(fl_error_msg(), path) != NULL, "%s: '%s' does not name the file", c->what,
		      fl_error_msg());
	for (int k = 0; k < 3 && c->needles[k]; k++)
		ck_assert_msg(strstr(fl_error_msg(), c->needles[k]) != NULL, "%s: '%s' lacks '%s'", c->what,
			      fl_error_msg(), c->needles[k]);
	fl_scenario_release(&sc); /* safe after a failed load, and frees what it took */
}
END_TEST

START_TEST(missing_file)
{
	char path[256];
	struct fl_scenario sc;
	snprintf(path, sizeof(path), "%s/absent.json", tmpdir);
	ck_assert_int_eq(fl_scenario_load(path, &sc), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), path));
	fl_scenario_release(&sc);
}
END_TEST

/* ---- scratch folders (generator/scratch.h) ---- */

static int exists(const char *name)
{
	char p[256];
	struct stat st;
	tmp_path(p, sizeof(p), name);
	return lstat(p, &st) == 0;
}

static void make_dir(const char *name)
{
	char p[256];
	tmp_path(p, sizeof(p), name);
	ck_assert_int_eq(mkdir(p, 0700), 0);
}

START_TEST(scratch_removes_only_stale_folders)
{
	char p[256];
	/* a killed run's folder, with a checkpoint in it */
	make_dir("faultline-scratch.AAAAAA");
	tmp_path(p, sizeof(p), "faultline-scratch.AAAAAA/state-rank-0.bin");
	ck_assert_int_eq(fl_write_file_atomic(p, "x", 1), FL_OK);
	/* a live run's: its lock is held */
	make_dir("faultline-scratch.BBBBBB");
	tmp_path(p, sizeof(p), "faultline-scratch.BBBBBB");
	int live = open(p, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(live, 0);
	ck_assert_int_eq(flock(live, LOCK_EX | LOCK_NB), 0);
	/* not of the pattern: a longer name, a plain file, another prefix, a link */
	make_dir("faultline-scratch.CCCCCCC");
	tmp_path(p, sizeof(p), "faultline-scratch.DDDDDD");
	ck_assert_int_eq(fl_write_file_atomic(p, "x", 1), FL_OK);
	make_dir("other-scratch.EEEEEE");
	make_dir("keep");
	tmp_path(p, sizeof(p), "keep/file");
	ck_assert_int_eq(fl_write_file_atomic(p, "x", 1), FL_OK);
	char target[256];
	tmp_path(target, sizeof(target), "keep");
	tmp_path(p, sizeof(p), "faultline-scratch.FFFFFF");
	ck_assert_int_eq(symlink(target, p), 0);
	setenv("TMPDIR", tmpdir, 1);

	struct fl_scratch a, b;
	ck_assert_int_eq(fl_scratch_create(&a), FL_OK);
	ck_assert_int_eq(a.removed_stale, 1);
	ck_assert(!exists("faultline-scratch.AAAAAA"));
	ck_assert(exists("faultline-scratch.BBBBBB") && exists("faultline-scratch.CCCCCCC"));
	ck_assert(exists("faultline-scratch.DDDDDD") && exists("other-scratch.EEEEEE"));
	ck_assert(exists("faultline-scratch.FFFFFF") && exists("keep/file"));
	ck_assert_int_eq(strncmp(a.path, tmpdir, strlen(tmpdir)), 0);
	struct stat st;
	ck_assert(stat(a.path, &st) == 0 && S_ISDIR(st.st_mode));

	/* a second run beside the first leaves the first's folder */
	ck_assert_int_eq(fl_scratch_create(&b), FL_OK);
	ck_assert_int_eq(b.removed_stale, 0);
	ck_assert(stat(a.path, &st) == 0);
	char a_path[sizeof(a.path)];
	strcpy(a_path, a.path);
	fl_scratch_remove(&a);
	ck_assert(stat(a_path, &st) != 0);
	ck_assert_int_eq(a.fd, -1);
	fl_scratch_remove(&a); /* twice: no-op */

	/* once the live run's lock is gone, the next run removes its folder */
	close(live);
	struct fl_scratch c;
	ck_assert_int_eq(fl_scratch_create(&c), FL_OK);
	ck_assert_int_eq(c.removed_stale, 1);
	ck_assert(!exists("faultline-scratch.BBBBBB"));
	ck_assert(stat(b.path, &st) == 0); /* b's lock is still held */
	fl_scratch_remove(&b);
	fl_scratch_remove(&c);
}
END_TEST

START_TEST(scratch_in_missing_folder_is_runtime_error)
{
	char p[256];
	tmp_path(p, sizeof(p), "missing");
	setenv("TMPDIR", p, 1);
	struct fl_scratch a;
	ck_assert_int_eq(fl_scratch_create(&a), FL_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "missing"));
	ck_assert_int_eq(a.fd, -1);
	fl_scratch_remove(&a);
}
END_TEST

static Suite *scenario_suite(void)
{
	Suite *s = suite_create("scenario");
	TCase *tc = tcase_create("load");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, minimal_gets_defaults);
	tcase_add_test(tc, train_mode_defaults);
	tcase_add_test(tc, full_file_and_fault_defaults);
	tcase_add_test(tc, repository_scenarios_load);
	tcase_add_test(tc, vary_draws_within_declared_ranges);
	tcase_add_test(tc, vary_keeps_offset_below_period);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_loop_test(tc, bad_file_is_input_error, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, missing_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("scratch_folder");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, scratch_removes_only_stale_folders);
	tcase_add_test(tc, scratch_in_missing_folder_is_runtime_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(scenario_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
