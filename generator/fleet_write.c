/* fleet_write.c — the files of a simulated fleet: the jobs CSV and the XID
 * CSV in AcmeTrace's schema (plain CSV that pandas.read_csv reads as is, so
 * the word SIMULATED is not in them), the README.txt beside them that says
 * they are simulated, and the truth. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/jsonutil.h"
#include "common/outfile.h"
#include "common/sha256.h"
#include "common/strbuf.h"
#include "generator/fleet_internal.h"
#include "grader/analysis/fleet.h"

#define SIMULATED_NOTE                                                                                            \
	"SIMULATED: these job and XID logs were produced by faultline's seeded discrete-event fleet simulation, "  \
	"not by a real cluster; they follow AcmeTrace's schema (NSDI '24) so the same analyses apply"

static char *join(const char *dir, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/%s", dir, name);
	return sb.buf;
}

struct order {
	int64_t submit;
	size_t id;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static void flush(struct fl_outfile *f, struct strbuf *sb, int force)
{
	if (sb->len >= (1u << 20) || (force && sb->len)) {
		fl_outfile_write(f, sb->buf, sb->len);
		strbuf_reset(sb);
	}
}

static enum fl_status write_jobs(const struct fl_fleet_scenario *sc, const struct fl_fleet_sim *sim, const char *path)
{
	struct fl_outfile *f;
	enum fl_status st = fl_outfile_open(&f, path);
	if (st)
		return st;
	struct order *order = malloc((sim->njobs ? sim->njobs : 1) * sizeof(*order));
	if (!order)
		abort();
	for (size_t i = 0; i < sim->njobs; i++)
		order[i] = (struct order){sim->jobs[i].submit, i};
	qsort(order, sim->njobs, sizeof(*order), order_cmp);
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, sc->kalos ? "job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
				     "submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time\n"
				   : "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
				     "duration,queue,gpu_time\n");
	int gpn = sc->gpus_per_node;
	for (size_t r = 0; r < sim->njobs; r++) {
		const struct fl_fleet_job *j = &sim->jobs[order[r].id];
		char ts[32], tb[32], te[32];
		fl_fleet_format_time(j->submit, ts);
		fl_fleet_format_time(j->start, tb);
		fl_fleet_format_time(j->end, te);
		long nodes = (j->gpus + gpn - 1) / gpn, cpus = j->gpus ? j->gpus * 12 : 4;
		int64_t dur = j->end - j->start, queue = j->start - j->submit;
		const char *state = fl_fleet_state_names[j->state], *type = sc->cls[j->cls].type;
		strbuf_addf(&sb, "sim-%07zu,u%03d,%ld,%ld,%ld,", r + 1, j->user, nodes, j->gpus, cpus);
		if (sc->kalos) {
			long pod_gpus = j->gpus < gpn ? j->gpus : gpn;
			strbuf_addf(&sb, "%ld,%ld,%s,%s,%s,%s,%s,%s,%s,%lld,%lld,%lld\n", pod_gpus ? pod_gpus * 120 : 32,
				    pod_gpus ? pod_gpus * 16 : 4, type, state, ts, tb, te,
				    j->state == FJ_NODE_FAIL || j->state == FJ_FAILED ? te : "",
				    j->state == FJ_CANCELLED ? te : "", (long long)dur, (long long)queue,
				    (long long)(dur * j->gpus));
		} else {
			strbuf_addf(&sb, "%s,%s,%s,%s,%s,%lld,%lld,%lld\n", type, state, ts, tb, te, (long long)dur,
				    (long long)queue, (long long)(dur * j->gpus));
		}
		flush(f, &sb, 0);
	}
	flush(f, &sb, 1);
	strbuf_release(&sb);
	free(order);
	return fl_outfile_commit(f);
}

/* One row per 15 s sample that holds an event (rows of all-none samples are
 * left out: the file would otherwise be a column per GPU every 15 s). */
static enum fl_status write_xid(const struct fl_fleet_scenario *sc, const struct fl_fleet_sim *sim, const char *path)
{
	struct fl_outfile *f;
	enum fl_status st = fl_outfile_open(&f, path);
	if (st)
		return st;
	int ngpu = sc->nodes * sc->gpus_per_node;
	int *row = calloc((size_t)ngpu, sizeof(int));
	if (!row)
		abort();
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, "Time");
	for (int g = 0; g < ngpu; g++) {
		int n = g / sc->gpus_per_node;
		strbuf_addf(&sb, ",10.140.%d.%d-%d", n / 200, n % 200 + 1, g % sc->gpus_per_node);
	}
	strbuf_adds(&sb, "\n");
	for (size_t i = 0; i < sim->nxid;) {
		int64_t slot = sim->xid[i].t - ((sim->xid[i].t % 15) + 15) % 15;
		size_t k = i;
		for (; k < sim->nxid && sim->xid[k].t < slot + 15; k++)
			row[sim->xid[k].gpu] = sim->xid[k].code;
		char t[32];
		fl_fleet_format_time(slot, t);
		strbuf_adds(&sb, t);
		for (int g = 0; g < ngpu; g++) {
			if (row[g])
				strbuf_addf(&sb, ",%d", row[g]);
			else
				strbuf_adds(&sb, ",");
		}
		strbuf_adds(&sb, "\n");
		for (size_t q = i; q < k; q++)
			row[sim->xid[q].gpu] = 0;
		i = k;
		flush(f, &sb, 0);
	}
	flush(f, &sb, 1);
	strbuf_release(&sb);
	free(row);
	return fl_outfile_commit(f);
}

static cJSON *params_json(const struct fl_fleet_fault_spec *fs)
{
	cJSON *p = cJSON_CreateObject();
	for (size_t k = 0; k < fs->ops->n_params; k++)
		cJSON_AddNumberToObject(p, fs->ops->params[k].name, fs->values[k]);
	return p;
}

static cJSON *waterfall_json(const struct fl_fleet_sim *sim)
{
	double by[5] = {0}, total = 0, ckpt = 0, lost = 0, restart = 0;
	for (size_t i = 0; i < sim->njobs; i++) {
		const struct fl_fleet_job *j = &sim->jobs[i];
		double g = (double)j->gpus, h = g * (double)(j->end - j->start) / 3600;
		by[j->state] += h;
		total += h;
		ckpt += g * j->ckpt_s / 3600;
		restart += g * fmin(j->restart_s, (double)(j->end - j->start)) / 3600;
		if (j->state == FJ_NODE_FAIL)
			lost += g * j->lost_s / 3600;
	}
	cJSON *w = cJSON_CreateObject();
	cJSON_AddStringToObject(w, "definition", "as simulated, GPU-hours: total -> NODE_FAIL jobs (of which lost_work: "
				"the work since their last checkpoint; the rest was checkpointed and resumed) -> FAILED "
				"(user) -> TIMEOUT -> CANCELLED -> COMPLETED; checkpoint_overhead and restart_overhead are "
				"the time jobs spent writing and loading checkpoints, inside the states' hours");
	cJSON_AddNumberToObject(w, "total_gpu_hours", total);
	cJSON_AddNumberToObject(w, "node_fail_gpu_hours", by[FJ_NODE_FAIL]);
	cJSON_AddNumberToObject(w, "lost_work_gpu_hours", lost);
	cJSON_AddNumberToObject(w, "failed_gpu_hours", by[FJ_FAILED]);
	cJSON_AddNumberToObject(w, "lost_to_failures_gpu_hours", by[FJ_NODE_FAIL] + by[FJ_FAILED]);
	cJSON_AddNumberToObject(w, "timeout_gpu_hours", by[FJ_TIMEOUT]);
	cJSON_AddNumberToObject(w, "cancelled_gpu_hours", by[FJ_CANCELLED]);
	cJSON_AddNumberToObject(w, "completed_gpu_hours", by[FJ_COMPLETED]);
	cJSON_AddNumberToObject(w, "checkpoint_overhead_gpu_hours", ckpt);
	cJSON_AddNumberToObject(w, "restart_overhead_gpu_hours", restart);
	return w;
}

static enum fl_status ensure_dir(const char *dir)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, dir);
	for (char *p = sb.buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(sb.buf, 0755) != 0 && errno != EEXIST) {
				enum fl_status st = fl_error(FL_ERUNTIME, "cannot create '%s': %s", sb.buf, strerror(errno));
				strbuf_release(&sb);
				return st;
			}
			*p = '/';
		}
	enum fl_status st = FL_OK;
	if (mkdir(sb.buf, 0755) != 0 && errno != EEXIST)
		st = fl_error(FL_ERUNTIME, "cannot create '%s': %s", sb.buf, strerror(errno));
	strbuf_release(&sb);
	return st;
}

enum fl_status fl_fleet_write(const struct fl_fleet_scenario *sc, const struct fl_fleet_sim *sim, const char *dir,
			      cJSON **truth_out)
{
	*truth_out = NULL;
	char *jobs = join(dir, sc->jobs_file), *xid = join(dir, sc->xid_file), *readme = join(dir, "README.txt");
	struct strbuf tname = STRBUF_INIT;
	if (sc->truth_file)
		strbuf_adds(&tname, sc->truth_file);
	else
		strbuf_addf(&tname, "%s.truth.json", sc->name);
	char *truth_path = join(dir, tname.buf);
	cJSON *t = NULL, *metrics = NULL;
	enum fl_status st;
	if ((st = ensure_dir(dir)) || (st = write_jobs(sc, sim, jobs)) || (st = write_xid(sc, sim, xid)))
		goto out;
	struct strbuf rd = STRBUF_INIT;
	strbuf_addf(&rd, "%s.\n\nscenario %s (%s), seed %llu\n%s  the jobs (AcmeTrace's %s columns)\n%s  XID telemetry "
		    "(Time + one column per GPU; only the 15 s samples holding an event)\n%s  the truth\n",
		    SIMULATED_NOTE, sc->name, sc->file, (unsigned long long)sc->seed, sc->jobs_file,
		    sc->kalos ? "Kalos" : "Seren", sc->xid_file, tname.buf);
	st = fl_write_file_atomic(readme, rd.buf, rd.len);
	strbuf_release(&rd);
	if (st)
		goto out;
	struct fl_fleet_opts ao = FL_FLEET_OPTS_INIT;
	ao.xid_path = xid;
	ao.min_gpus = sc->min_gpus;
	ao.min_hours = sc->min_hours;
	ao.ckpt_cost_min = sc->ckpt_cost_min;
	ao.job_gpus = sc->job_gpus;
	ao.strict = 1;
	if ((st = fl_fleet_analyze(jobs, &ao, &metrics))) {
		st = fl_error_prefix(FL_EINTERNAL, "the simulated log does not read back: ");
		goto out;
	}
	char hj[65], hx[65];
	if ((st = fl_sha256_file(jobs, hj)) || (st = fl_sha256_file(xid, hx)))
		goto out;

	const struct fl_fleet_model *m = &sim->model;
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "schema", "faultline.truth/1");
	cJSON_AddStringToObject(t, "simulated", SIMULATED_NOTE);
	cJSON *s = cJSON_AddObjectToObject(t, "scenario");
	cJSON_AddStringToObject(s, "name", sc->name);
	cJSON_AddStringToObject(s, "file", sc->file);
	if (sc->description)
		cJSON_AddStringToObject(s, "description", sc->description);
	if (sc->rubric)
		cJSON_AddStringToObject(s, "rubric", sc->rubric);
	cJSON_AddNumberToObject(s, "seed", (double)sc->seed);
	cJSON_AddBoolToObject(s, "simulated", 1);
	cJSON *fl = cJSON_AddObjectToObject(t, "fleet");
	cJSON_AddStringToObject(fl, "jobs", sc->jobs_file);
	cJSON_AddStringToObject(fl, "jobs_sha256", hj);
	cJSON_AddStringToObject(fl, "xid", sc->xid_file);
	cJSON_AddStringToObject(fl, "xid_sha256", hx);
	cJSON_AddNumberToObject(fl, "min_gpus", (double)sc->min_gpus);
	cJSON_AddNumberToObject(fl, "min_hours", sc->min_hours);
	cJSON_AddNumberToObject(fl, "ckpt_cost_min", sc->ckpt_cost_min);
	cJSON_AddNumberToObject(fl, "job_gpus", (double)sc->job_gpus);

	cJSON *inj = cJSON_AddObjectToObject(t, "injected");
	cJSON_AddNumberToObject(inj, "nodes", sc->nodes);
	cJSON_AddNumberToObject(inj, "gpus_per_node", sc->gpus_per_node);
	if (m->gpu_mtbf_h > 0) {
		cJSON_AddNumberToObject(inj, "mtbf_hours_per_gpu", m->gpu_mtbf_h);
		cJSON_AddNumberToObject(inj, "mtbf_years_per_gpu", m->gpu_mtbf_h / FL_HOURS_PER_YEAR);
	} else {
		cJSON_AddNullToObject(inj, "mtbf_hours_per_gpu");
		cJSON_AddNullToObject(inj, "mtbf_years_per_gpu");
	}
	double rate_sum = 0;
	for (int n = 0; n < sc->nodes; n++)
		rate_sum += m->node_rate[n];
	cJSON_AddNumberToObject(inj, "mean_node_rate_multiplier", rate_sum / sc->nodes);
	cJSON_AddNumberToObject(inj, "repair_hours", m->repair_h);
	cJSON *fa = cJSON_AddArrayToObject(inj, "faults");
	for (size_t i = 0; i < sc->nfaults; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "fault", sc->faults[i].ops->name);
		cJSON_AddItemToObject(e, "params", params_json(&sc->faults[i]));
		cJSON *varied = NULL;
		for (size_t k = 0; sc->varied && k < sc->faults[i].ops->n_params; k++) {
			if (!sc->faults[i].vary[k])
				continue;
			if (!varied)
				varied = cJSON_AddObjectToObject(e, "varied");
			cJSON *v = cJSON_AddObjectToObject(varied, sc->faults[i].ops->params[k].name);
			cJSON_AddNumberToObject(v, "drawn", sc->faults[i].values[k]);
			const double range[2] = {sc->faults[i].lo[k], sc->faults[i].hi[k]};
			cJSON_AddItemToObject(v, "range", cJSON_CreateDoubleArray(range, 2));
		}
		cJSON_AddItemToArray(fa, e);
	}

	/* the MTBF population as the simulation saw it */
	long risk_jobs = 0, risk_fail = 0, node_fail_jobs = 0;
	double risk_h = 0;
	for (size_t i = 0; i < sim->njobs; i++) {
		const struct fl_fleet_job *j = &sim->jobs[i];
		double d = (double)(j->end - j->start);
		node_fail_jobs += j->state == FJ_NODE_FAIL;
		if (j->gpus >= sc->min_gpus && d >= sc->min_hours * 3600) {
			risk_jobs++;
			risk_h += (double)j->gpus * d / 3600;
			risk_fail += j->state == FJ_NODE_FAIL;
		}
	}
	cJSON *re = cJSON_AddObjectToObject(t, "realised");
	cJSON_AddNumberToObject(re, "jobs", (double)sim->njobs);
	cJSON_AddNumberToObject(re, "node_failures", (double)sim->failures);
	cJSON_AddNumberToObject(re, "node_failures_killing_jobs", (double)sim->failures_busy);
	cJSON_AddNumberToObject(re, "node_failures_correlated", (double)sim->failures_corr);
	cJSON_AddNumberToObject(re, "node_failures_on_bad_nodes", (double)sim->failures_bad_node);
	cJSON_AddNumberToObject(re, "node_fail_jobs", (double)node_fail_jobs);
	cJSON_AddNumberToObject(re, "restarts", (double)sim->restarts);
	cJSON_AddNumberToObject(re, "xid_events", (double)sim->nxid);
	cJSON *ar = fl_fleet_mtbf_json(risk_h, risk_jobs, risk_fail);
	cJSON_AddNumberToObject(ar, "min_gpus", (double)sc->min_gpus);
	cJSON_AddNumberToObject(ar, "min_hours", sc->min_hours);
	if (m->gpu_mtbf_h > 0)
		cJSON_AddNumberToObject(ar, "expected_failures", risk_h / m->gpu_mtbf_h);
	cJSON_AddItemToObject(re, "at_risk", ar);
	cJSON_AddItemToObject(t, "waterfall", waterfall_json(sim));
	cJSON *ak = cJSON_AddObjectToObject(t, "answer_key");
	cJSON_AddNumberToObject(ak, "large_gpu_hour_share",
				cJSON_GetObjectItem(cJSON_GetObjectItem(metrics, "large"), "gpu_hour_share")->valuedouble);
	cJSON_AddStringToObject(ak, "dominant_gpu_hour_state",
				cJSON_GetObjectItem(metrics, "dominant_gpu_hour_state")->valuestring);
	if (m->gpu_mtbf_h > 0) {
		cJSON_AddNumberToObject(ak, "injected_mtbf_years", m->gpu_mtbf_h / FL_HOURS_PER_YEAR);
		double tau_h = sqrt(2 * sc->ckpt_cost_min / 60 * m->gpu_mtbf_h / (double)sc->job_gpus);
		cJSON_AddNumberToObject(ak, "young_interval_min_injected", tau_h * 60);
	}
	cJSON_AddItemToObject(t, "metrics", metrics);
	metrics = NULL;
	if ((st = fl_json_write(truth_path, t)))
		goto out;
	*truth_out = t;
	t = NULL;
out:
	cJSON_Delete(t);
	cJSON_Delete(metrics);
	free(jobs);
	free(xid);
	free(readme);
	free(truth_path);
	strbuf_release(&tname);
	return st;
}
