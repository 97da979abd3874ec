/* fl_metrics — the device analyses (grader/analysis/device_metrics.h) as JSON on stdout,
 * for tests/e2e/hta_parity.sh and for trying traces by hand, until
 * `faultline analyze` calls the same functions.
 *
 *   fl_metrics [--include-last-step] [--no-thread] TRACE...      metrics of one job
 *   fl_metrics --diff [--iter N|all] CONTROL... -- TEST...       HTA's trace diff
 *   fl_metrics --read TRACE                                      what the reader saw
 *
 * Exit: 0 ok, 2 usage or unreadable trace (message on stderr).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "grader/analysis/device_metrics.h"
#include "grader/trace/trace_stream.h"

static int print(cJSON *j)
{
	char *s = cJSON_Print(j);
	cJSON_Delete(j);
	if (!s)
		return 4;
	puts(s);
	free(s);
	return fflush(stdout) ? 3 : 0;
}

static int fail(enum fl_status st)
{
	fprintf(stderr, "fl_metrics: %s\n", fl_error_msg());
	return (int)st;
}

static int read_only(const char *path)
{
	struct fl_strtab *t = fl_strtab_new();
	struct fl_trace_stream_opts o = {.strings = t};
	struct fl_trace_info in;
	enum fl_status st = fl_trace_stream_file(path, &o, &in);
	fl_strtab_free(t);
	if (st)
		return fail(st);
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "events", (double)in.n_events);
	cJSON_AddBoolToObject(j, "gzip", in.gzip);
	cJSON_AddBoolToObject(j, "array_form", in.array_form);
	cJSON_AddNumberToObject(j, "bytes_json", (double)in.bytes_json);
	if (in.has_hta_rank)
		cJSON_AddNumberToObject(j, "hta_rank", (double)in.hta_rank);
	if (in.has_dist_rank)
		cJSON_AddNumberToObject(j, "dist_rank", (double)in.dist_rank);
	if (in.has_world_size)
		cJSON_AddNumberToObject(j, "world_size", (double)in.world_size);
	return print(j);
}

int main(int argc, char **argv)
{
	struct fl_dm_opts o = FL_DM_OPTS_INIT;
	struct fl_diff_opts d = FL_DIFF_OPTS_INIT;
	int diff = 0, sep = -1;
	const char **files = calloc((size_t)argc + 1, sizeof(char *));
	int nf = 0;
	if (!files)
		return 4;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--read") && i + 1 < argc) {
			free(files);
			return read_only(argv[i + 1]);
		} else if (!strcmp(argv[i], "--include-last-step")) {
			o.include_last_step = 1;
		} else if (!strcmp(argv[i], "--no-thread")) {
			o.no_thread = 1;
		} else if (!strcmp(argv[i], "--diff")) {
			diff = 1;
		} else if (!strcmp(argv[i], "--iter") && i + 1 < argc) {
			i++;
			d.control_iter = d.test_iter = !strcmp(argv[i], "all") ? FL_DIFF_ALL : atoll(argv[i]);
		} else if (!strcmp(argv[i], "--")) {
			sep = nf;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "fl_metrics: unknown option '%s'\n", argv[i]);
			free(files);
			return 2;
		} else {
			files[nf++] = argv[i];
		}
	}
	int rc = 0;
	if (!nf || (diff && (sep <= 0 || sep >= nf))) {
		fprintf(stderr, "usage: fl_metrics [--include-last-step] [--no-thread] TRACE...\n"
				"       fl_metrics --diff [--iter N|all] CONTROL... -- TEST...\n"
				"       fl_metrics --read TRACE\n");
		free(files);
		return 2;
	}
	if (!diff) {
		cJSON *j;
		enum fl_status st = fl_device_metrics(files, (size_t)nf, &o, &j);
		rc = st ? fail(st) : print(j);
	} else {
		struct fl_dm_job *c = NULL, *t = NULL;
		cJSON *j = NULL;
		o.keep_host = 1;
		enum fl_status st = fl_dm_load(files, (size_t)sep, &o, &c);
		if (!st)
			st = fl_dm_load(files + sep, (size_t)(nf - sep), &o, &t);
		if (!st)
			st = fl_trace_diff_json(c, t, &d, &j);
		rc = st ? fail(st) : print(j);
		fl_dm_free(c);
		fl_dm_free(t);
	}
	free(files);
	return rc;
}
