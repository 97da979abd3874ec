/* diagnose_rules_moe.c — expert_imbalance: an expert-parallel mixture of
 * experts (every rank runs forward ops named *expert* whose Input Dims give the
 * token rows its expert received, and communication kernels: the all-to-alls)
 * in which one rank's expert receives many more rows than the others, computes
 * longest, and waits least in the all-to-alls while the others wait for it.
 *
 * On such a layer its lookalikes' findings are dropped: the uneven compute is
 * the routing's, not a slow device (straggler); the all-to-alls cannot overlap
 * the expert that needs their rows (unoverlapped_comm); their SendRecv kernels
 * are no pipeline (pipeline_bubble); and the host reading the token counts
 * back to size the exchange is how the layer works (sync_stall). */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "grader/analysis/diagnose_internal.h"

#define MOE_TOKEN_RATIO 1.5 /* the busiest expert's rows over the median other expert's */

/* the median of v[i] over i != skip */
static double median_others(const double *v, size_t n, size_t skip)
{
	double *o = malloc(sizeof(double) * n);
	if (!o)
		abort();
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (i != skip)
			o[m++] = v[i];
	double r = dg_median(o, (int)m);
	free(o);
	return r;
}

void dg_rule_moe(const struct dg_trace *t, size_t n, struct dg_findings *fs)
{
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		if (!t[i].n_expert_ops || !t[i].n_comm)
			return; /* not an expert-parallel layer on every rank */
	static const char *const lookalikes[] = {"straggler", "unoverlapped_comm", "pipeline_bubble", "sync_stall"};
	for (size_t k = 0; k < sizeof(lookalikes) / sizeof(lookalikes[0]); k++)
		dg_drop_family(fs, lookalikes[k]);
	double *rows = malloc(sizeof(double) * n), *comp = malloc(sizeof(double) * n), *comm = malloc(sizeof(double) * n);
	if (!rows || !comp || !comm)
		abort();
	size_t hot = 0, slow = 0, least = 0;
	for (size_t i = 0; i < n; i++) {
		rows[i] = t[i].expert_rows / (double)t[i].n_expert_ops;
		comp[i] = t[i].comp_us;
		comm[i] = t[i].comm_us;
		if (rows[i] > rows[hot])
			hot = i;
		if (comp[i] > comp[slow])
			slow = i;
		if (comm[i] < comm[least])
			least = i;
	}
	double mrows = median_others(rows, n, hot), mcomp = median_others(comp, n, hot),
	       mcomm = median_others(comm, n, hot);
	double token_ratio = mrows > 0 ? rows[hot] / mrows : rows[hot] > 0 ? 1e9 : 1;
	/* uneven rows, and the work follows them: the busiest expert computes
	 * longest and waits least (compute and wait anti-correlated) */
	if (token_ratio < MOE_TOKEN_RATIO || slow != hot || least != hot) {
		free(rows);
		free(comp);
		free(comm);
		return;
	}
	struct dg_finding *f = dg_add(fs, "expert_imbalance", "load_balance", dg_ramp(token_ratio, MOE_TOKEN_RATIO, 4));
	int steps = t[hot].n_steps > 0 ? t[hot].n_steps : 1;
	f->lost_us = (comp[hot] - mcomp) / steps;
	double share = 0, all = 0;
	for (size_t i = 0; i < n; i++)
		all += rows[i];
	share = all > 0 ? rows[hot] / all : 0;
	snprintf(f->summary, sizeof f->summary,
		 "rank %lld's expert receives %.0f token rows per step (Input Dims), %.1fx the median other expert's %.0f "
		 "(%.0f%% of the tokens); it computes %.1fx longer and waits least in the all-to-alls",
		 t[hot].rank, rows[hot], token_ratio, mrows, 100 * share, mcomp > 0 ? comp[hot] / mcomp : 0);
	snprintf(f->confirm, sizeof f->confirm,
		 "tokens per expert from the expert ops' Input Dims (%.0f vs %.0f) against per-rank expert compute "
		 "(%.3f vs %.3f ms) and all-to-all wait (%.3f vs %.3f ms): compute follows the tokens, the wait is the "
		 "others waiting for rank %lld",
		 rows[hot], mrows, comp[hot] / 1000, mcomp / 1000, comm[hot] / 1000, mcomm / 1000, t[hot].rank);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "balance the router: an auxiliary load-balancing loss, a capacity factor, or per-expert bias terms");
	f->ranks = cJSON_CreateArray();
	cJSON_AddItemToArray(f->ranks, cJSON_CreateNumber((double)t[hot].rank));
	cJSON_AddNumberToObject(f->evidence, "rank", (double)t[hot].rank);
	dg_addn(f->evidence, "token_ratio_to_median", token_ratio);
	dg_addn(f->evidence, "token_share", share);
	cJSON *tr = cJSON_AddObjectToObject(f->evidence, "tokens_per_step");
	cJSON *cr = cJSON_AddObjectToObject(f->evidence, "compute_ms");
	cJSON *wr = cJSON_AddObjectToObject(f->evidence, "comm_ms");
	for (size_t i = 0; i < n; i++) {
		char k[32];
		snprintf(k, sizeof k, "%lld", t[i].rank);
		dg_addn(tr, k, rows[i]);
		dg_addn(cr, k, comp[i] / 1000);
		dg_addn(wr, k, comm[i] / 1000);
	}
	free(rows);
	free(comp);
	free(comm);
}
