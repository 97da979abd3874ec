/* cmd_analyze.c — faultline analyze: the metrics of traces (host, or HTA's
 * device analyses with --device), comparisons and HTA's trace diff. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/strbuf.h"
#include "grader/analysis/analyze.h"
#include "grader/analysis/device_metrics.h"
#include "grader/analysis/device_report.h"

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

const struct fl_opt fl_analyze_opts[] = {
	{.name = "--json"},
	{.name = "--device"},
	{.name = "--diff"},
	{.name = "--top", .kind = FL_OPT_INT, .min = 1, .max = 1000},
	{NULL},
};

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
	struct fl_args a;
	enum fl_status st = fl_command_args("analyze", argc, argv, &a);
	struct strbuf out = STRBUF_INIT;
	if (st || a.help)
		goto out;
	struct fl_analyze_opts o = {0};
	const struct fl_optval *top = fl_args_get(&a, "--top");
	o.json = fl_args_has(&a, "--json");
	o.top_gaps = top ? (size_t)top->l : 0;
	int device = fl_args_has(&a, "--device"), diff = fl_args_has(&a, "--diff");
	const char **paths = a.args;
	size_t n = a.nargs;
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
	fl_args_release(&a);
	return st;
}
