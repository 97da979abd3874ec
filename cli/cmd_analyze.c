#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "grader/analysis/analyze.h"
#include "grader/analysis/device_metrics.h"
#include "grader/analysis/device_report.h"
#include "cli/grader_commands.h"

const char fl_analyze_usage[] =
	"usage: faultline analyze TRACE... [--json] [--top N]\n"
	"       faultline analyze --device TRACE... [--json]     (the ranks of one run)\n"
	"       faultline analyze --diff CONTROL TEST [--json] [--top N]\n"
	"\n"
	"Computes the metrics of each Kineto/Chrome trace (.json or .json.gz, ours or\n"
	"torch.profiler's): steps (count, p50 as the upper median sorted[n // 2] and the\n"
	"true median, mean, min, max, per step), span totals, shares and per-step\n"
	"lengths, op counts (total, per step, per name), the largest gaps (time on a\n"
	"row with no op running, and the span holding it) and periods (the steps in\n"
	"which a span is long, and the period and phase they follow). The same code\n"
	"fills the `metrics` of truth files.\n"
	"\n"
	"With two or more traces, each later trace is compared with the first: step\n"
	"p50/median/max ratios, op-count ratio, and which span grew most and by what\n"
	"factor.\n"
	"\n"
	"--device: HolisticTraceAnalysis's device analyses, with its definitions and\n"
	"thresholds, over the traces given as the ranks of one run (one file per rank):\n"
	"temporal breakdown (idle / compute / non-compute), idle time per stream (host\n"
	"wait, kernel wait < 30 us, other), comm/compute overlap, kernel time by type\n"
	"and by name, launch statistics, queue length per stream and the straggler\n"
	"rank. The reader streams, so traces of any size fit in memory.\n"
	"--diff: HTA's trace diff: ops and kernels added, removed, and count and\n"
	"duration changes from CONTROL to TEST.\n"
	"\n"
	"  --json     JSON instead of text (faultline.analysis/1,\n"
	"             faultline.device_metrics/1 or faultline.trace_diff/1)\n"
	"  --top N    keep the N largest gaps / changes (default 5)\n"
	"\n"
	"Exit: 0 ok; 2 usage or a trace cannot be read.\n";

static void add_json(const cJSON *j, struct strbuf *out)
{
	char *s = cJSON_Print(j);
	if (!s)
		abort();
	strbuf_adds(out, s);
	strbuf_adds(out, "\n");
	free(s);
}

static enum fl_status analyze_device(const char **paths, size_t n, const struct fl_analyze_opts *o,
				     struct strbuf *out)
{
	struct fl_dm_opts dmo = FL_DM_OPTS_INIT;
	cJSON *dm = NULL;
	enum fl_status st = fl_device_metrics(paths, n, &dmo, &dm);
	if (st)
		return st;
	if (o->json)
		add_json(dm, out);
	else
		fl_device_metrics_text(dm, out);
	cJSON_Delete(dm);
	return FL_OK;
}

static enum fl_status analyze_diff(const char **paths, size_t n, const struct fl_analyze_opts *o,
				   struct strbuf *out)
{
	if (n != 2)
		return fl_error(FL_EINPUT, "analyze: --diff expects two traces, CONTROL and TEST; got %zu", n);
	struct fl_dm_opts dmo = FL_DM_OPTS_INIT;
	dmo.keep_host = 1;
	struct fl_dm_job *c = NULL, *t = NULL;
	struct fl_diff_opts dfo = FL_DIFF_OPTS_INIT;
	cJSON *d = NULL;
	enum fl_status st;
	if ((st = fl_dm_load(&paths[0], 1, &dmo, &c)) || (st = fl_dm_load(&paths[1], 1, &dmo, &t)) ||
	    (st = fl_trace_diff_json(c, t, &dfo, &d)))
		goto out;
	if (o->json)
		add_json(d, out);
	else
		fl_trace_diff_text(d, o->top_gaps ? o->top_gaps : 5, out);
out:
	cJSON_Delete(d);
	fl_dm_free(c);
	fl_dm_free(t);
	return st;
}

enum fl_status fl_cmd_analyze(int argc, char **argv)
{
	struct fl_analyze_opts o = {0};
	int device = 0, diff = 0;
	const char **paths = calloc((size_t)argc, sizeof(char *));
	size_t n = 0;
	enum fl_status st = FL_OK;
	struct strbuf out = STRBUF_INIT;
	if (!paths)
		abort();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(fl_analyze_usage, stdout);
			goto out;
		} else if (!strcmp(a, "--json")) {
			o.json = 1;
		} else if (!strcmp(a, "--device")) {
			device = 1;
		} else if (!strcmp(a, "--diff")) {
			diff = 1;
		} else if (!strcmp(a, "--top")) {
			const char *v = i + 1 < argc ? argv[++i] : NULL;
			char *end;
			errno = 0;
			long x = v ? strtol(v, &end, 10) : 0;
			if (!v || errno || *end || end == v || x < 1 || x > 1000) {
				st = fl_error(FL_EINPUT, "analyze: option '--top' expects an integer in [1, 1000], got '%s'",
					      v ? v : "");
				goto out;
			}
			o.top_gaps = (size_t)x;
		} else if (a[0] == '-' && a[1]) {
			st = fl_error(FL_EINPUT, "analyze: unknown option '%s' (see 'faultline analyze --help')", a);
			goto out;
		} else {
			paths[n++] = a;
		}
	}
	if (!n) {
		st = fl_error(FL_EINPUT, "analyze: expected one or more trace files (see 'faultline analyze --help')");
		goto out;
	}
	if (device && diff) {
		st = fl_error(FL_EINPUT, "analyze: --device and --diff do not go together");
		goto out;
	}
	if (device || diff) {
		st = device ? analyze_device(paths, n, &o, &out) : analyze_diff(paths, n, &o, &out);
		if (st)
			goto out;
	} else if ((st = fl_analyze_traces(paths, n, &o, &out))) {
		st = fl_error_prefix(FL_EINPUT, "analyze: ");
		goto out;
	}
	fwrite(out.buf, 1, out.len, stdout);
out:
	strbuf_release(&out);
	free(paths);
	return st;
}
