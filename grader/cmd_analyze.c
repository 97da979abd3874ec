#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "grader/analyze.h"
#include "grader/grader_commands.h"

const char fl_analyze_usage[] =
	"usage: faultline analyze TRACE... [--json] [--top N]\n"
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
	"  --json     faultline.analysis/1 JSON instead of text\n"
	"  --top N    keep the N largest gaps (default 5)\n"
	"\n"
	"Exit: 0 ok; 2 usage or a trace cannot be read.\n";

enum fl_status fl_cmd_analyze(int argc, char **argv)
{
	struct fl_analyze_opts o = {0};
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
	if ((st = fl_analyze_traces(paths, n, &o, &out))) {
		st = fl_error_prefix(FL_EINPUT, "analyze: ");
		goto out;
	}
	fwrite(out.buf, 1, out.len, stdout);
out:
	strbuf_release(&out);
	free(paths);
	return st;
}
