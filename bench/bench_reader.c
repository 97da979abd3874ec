/* bench_reader — how fast, and in how much memory, a trace is read.
 *
 *   bench_reader stream FILE...   the streaming tokenizer alone (events counted)
 *   bench_reader metrics FILE...  the whole device analysis (HTA's set) and its JSON
 *   bench_reader cjson FILE...    the cJSON DOM baseline: read (and gunzip) the
 *                                 whole file, then cJSON_Parse it
 *   options: --reps N (best of N, default 3)   --no-thread (inflate inline)
 *
 * Prints one line per mode: seconds (best), MB of JSON text, MB/s of JSON text,
 * events, and the peak resident set of the process so far (run one mode per
 * process for a clean peak: bench/bench_reader.sh does).
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/outfile.h"
#include "common/status.h"
#include "grader/analysis/device_metrics.h"
#include "grader/trace/trace_stream.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long peak_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

struct count {
	uint64_t events, x;
	double ts_sum;
};

static enum fl_status count_event(void *arg, const struct fl_tev *ev)
{
	struct count *c = arg;
	c->events++;
	if (ev->ph == 'X') {
		c->x++;
		c->ts_sum += ev->ts;
	}
	return FL_OK;
}

static int run_stream(char **files, int n, int no_thread, double *json_mb, uint64_t *events)
{
	struct fl_strtab *strings = fl_strtab_new();
	struct count c = {0};
	struct fl_trace_stream_opts o = {.strings = strings, .on_event = count_event, .arg = &c, .no_thread = no_thread};
	*json_mb = 0;
	for (int i = 0; i < n; i++) {
		struct fl_trace_info info;
		if (fl_trace_stream_file(files[i], &o, &info)) {
			fprintf(stderr, "bench_reader: %s\n", fl_error_msg());
			fl_strtab_free(strings);
			return 1;
		}
		*json_mb += (double)info.bytes_json / 1e6;
	}
	*events = c.events;
	fl_strtab_free(strings);
	return 0;
}

static int run_metrics(char **files, int n, int no_thread, double *json_mb, uint64_t *events)
{
	struct fl_dm_opts o = FL_DM_OPTS_INIT;
	o.no_thread = no_thread;
	struct fl_dm_job *job = NULL;
	if (fl_dm_load((const char *const *)files, (size_t)n, &o, &job)) {
		fprintf(stderr, "bench_reader: %s\n", fl_error_msg());
		return 1;
	}
	cJSON *j = fl_device_metrics_json(job);
	char *s = cJSON_PrintUnformatted(j);
	*json_mb = fl_dm_json_bytes(job) / 1e6;
	*events = fl_dm_events(job);
	free(s);
	cJSON_Delete(j);
	fl_dm_free(job);
	return 0;
}

static int run_cjson(char **files, int n, int no_thread, double *json_mb, uint64_t *events)
{
	(void)no_thread;
	*json_mb = 0;
	*events = 0;
	for (int i = 0; i < n; i++) {
		char *buf;
		size_t len;
		if (fl_read_file_max(files[i], SIZE_MAX, &buf, &len)) {
			fprintf(stderr, "bench_reader: %s\n", fl_error_msg());
			return 1;
		}
		cJSON *doc = cJSON_ParseWithLength(buf, len);
		free(buf);
		if (!doc) {
			fprintf(stderr, "bench_reader: cJSON cannot parse '%s'\n", files[i]);
			return 1;
		}
		*json_mb += (double)len / 1e6;
		cJSON *ev = cJSON_IsArray(doc) ? doc : cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
		*events += (uint64_t)cJSON_GetArraySize(ev);
		cJSON_Delete(doc);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_reader stream|metrics|cjson [--reps N] [--no-thread] FILE...\n");
		return 2;
	}
	const char *mode = argv[1];
	int reps = 3, no_thread = 0, nf = 0;
	char **files = calloc((size_t)argc, sizeof(char *));
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-thread"))
			no_thread = 1;
		else
			files[nf++] = argv[i];
	}
	int (*fn)(char **, int, int, double *, uint64_t *) =
		!strcmp(mode, "stream") ? run_stream : !strcmp(mode, "metrics") ? run_metrics
		: !strcmp(mode, "cjson") ? run_cjson : NULL;
	if (!fn || !nf || reps < 1) {
		fprintf(stderr, "bench_reader: unknown mode '%s' or no file\n", mode);
		free(files);
		return 2;
	}
	double best = 1e30, mb = 0;
	uint64_t events = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now_s();
		if (fn(files, nf, no_thread, &mb, &events)) {
			free(files);
			return 1;
		}
		double t = now_s() - t0;
		if (t < best)
			best = t;
	}
	printf("%-8s %8.3f s  %9.1f MB JSON  %8.1f MB/s  %10llu events  peak RSS %7.1f MB\n", mode, best, mb,
	       mb / best, (unsigned long long)events, (double)peak_rss_kb() / 1024.0);
	free(files);
	return 0;
}
