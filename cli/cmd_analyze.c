/* cmd_analyze.c — faultline analyze: the metrics of traces (host, or HTA's
 * device analyses with --device), comparisons and HTA's trace diff. Under
 * mpirun, --device splits the rank files between the processes (the MPI
 * collectives come from runtime/comm.h; grader/ needs no MPI) and process 0
 * prints what one process would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/strbuf.h"
#include "grader/analysis/analyze.h"
#include "grader/analysis/device_metrics.h"
#include "grader/analysis/device_report.h"
#include "runtime/comm.h"

const char fl_analyze_usage[] =
	"usage: faultline analyze TRACE... [--json] [--top N]\n"
	"       faultline analyze --device TRACE... [--json] [--jobs N]  (the ranks of one run)\n"
	"       mpirun -np P faultline analyze --device TRACE... [--json] [--jobs N]\n"
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
	"rank. The reader streams, so traces of any size fit in memory; the device\n"
	"events the analyses keep take about 56 bytes each. The files are read\n"
	"--jobs N at a time (default: one per online core). Under mpirun the files\n"
	"are split between the processes (file i to process i % P), each holding\n"
	"only its own files' events; process 0 pools the ranks' figures and prints\n"
	"exactly what one process prints (docs/analyze.md, \"Across nodes\").\n"
	"--diff: HTA's trace diff: ops and kernels added, removed, and count and\n"
	"duration changes from CONTROL to TEST.\n"
	"\n"
	"  --json     JSON instead of text (faultline.analysis/1,\n"
	"             faultline.device_metrics/1 or faultline.trace_diff/1)\n"
	"  --top N    keep the N largest gaps / changes (default 5)\n"
	"  --jobs N   --device: read N files at a time (threads); 1: one by one\n"
	"\n"
	"Exit: 0 ok; 2 usage or a trace cannot be read.\n";

const struct fl_opt fl_analyze_opts[] = {
	{.name = "--json"},
	{.name = "--device"},
	{.name = "--diff"},
	{.name = "--top", .kind = FL_OPT_INT, .min = 1, .max = 1000},
	{.name = "--jobs", .kind = FL_OPT_INT, .min = 1, .max = 64},
	{.name = NULL},
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

/* the collectives of a split job, over MPI (runtime/comm.h) */
static enum fl_status mpi_allgather(void *arg, const void *mine, size_t n, char **all, size_t *lens)
{
	(void)arg;
	return fl_comm_allgather_bytes(mine, n, all, lens);
}

static enum fl_status mpi_gather(void *arg, const void *mine, size_t n, char **all, size_t *lens)
{
	(void)arg;
	return fl_comm_gather_bytes(mine, n, all, lens);
}

static enum fl_status analyze_device(const char **paths, size_t n, const struct fl_analyze_opts *o, int jobs,
				     struct strbuf *out)
{
	struct fl_dm_opts dmo = FL_DM_OPTS_INIT;
	dmo.jobs = jobs;
	struct fl_dm_comm comm = {.rank = fl_comm_rank(), .size = fl_comm_size(),
				  .allgather = mpi_allgather, .gather = mpi_gather};
	cJSON *dm = NULL;
	enum fl_status st = fl_device_metrics_split(paths, n, &dmo, &comm, &dm);
	if (st || !dm)
		return st; /* !dm: not process 0, which prints */
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
	int mpi = 0;
	if (st || a.help)
		goto out;
	struct fl_analyze_opts o = {0};
	const struct fl_optval *top = fl_args_get(&a, "--top");
	o.json = fl_args_has(&a, "--json");
	o.top_gaps = top ? (size_t)top->l : 0;
	int device = fl_args_has(&a, "--device"), diff = fl_args_has(&a, "--diff");
	const struct fl_optval *jobs = fl_args_get(&a, "--jobs");
	/* under mpirun: --device splits the files; anything else runs on process 0 */
	mpi = fl_comm_launched() && FL_COMM_BUILT;
	if (mpi && (st = fl_comm_init_flags(FL_COMM_NO_PIN))) /* each process runs --jobs threads */
		goto out;
	if (mpi && !device && fl_comm_rank() != 0)
		goto out;
	const char **paths = a.args;
	size_t n = a.nargs;
	if (device && diff) {
		st = fl_error(FL_EINPUT, "analyze: --device and --diff do not go together");
		goto out;
	}
	if (device || diff) {
		st = device ? analyze_device(paths, n, &o, jobs ? (int)jobs->l : 0, &out) : analyze_diff(paths, n, &o, &out);
		if (st)
			goto out;
	} else if ((st = fl_analyze_traces(paths, n, &o, &out))) {
		st = fl_error_prefix(FL_EINPUT, "analyze: ");
		goto out;
	}
	if (out.len) /* nothing on processes other than 0 under mpirun */
		fwrite(out.buf, 1, out.len, stdout);
out:
	if (mpi) {
		/* every process has the same status: process 0 reports it, once
		 * (a process ending non-zero first makes mpirun kill the others
		 * before process 0 has said why) */
		if (fl_comm_rank() != 0) {
			fl_error_clear();
			st = FL_OK;
		}
		fl_comm_finalize();
	}
	strbuf_release(&out);
	fl_args_release(&a);
	return st;
}
