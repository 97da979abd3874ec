/* fleet_sim.c — the discrete-event simulation of a fleet: Poisson job
 * arrivals from the scenario's mix, a FIFO scheduler over nodes x GPUs (small
 * jobs best-fit on one node, large jobs on whole free nodes, the queue head
 * reserved once it has waited long), and node failures as a Poisson process
 * per GPU. All times are whole seconds, so the CSV holds exactly what was
 * simulated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "generator/fleet_internal.h"

const char *const fl_fleet_state_names[5] = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"};

/* ---- random numbers ---- */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void fl_rng_seed(struct fl_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fl_rng_next(struct fl_rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double fl_rng_uniform(struct fl_rng *r) { return ((double)(fl_rng_next(r) >> 11) + 0.5) * 0x1.0p-53; }
double fl_rng_exp(struct fl_rng *r, double mean) { return -mean * log(fl_rng_uniform(r)); }
double fl_rng_normal(struct fl_rng *r)
{
	return sqrt(-2 * log(fl_rng_uniform(r))) * cos(2 * M_PI * fl_rng_uniform(r));
}

/* ---- events ---- */

enum { EV_ARRIVE, EV_END, EV_FAIL, EV_REPAIR, EV_NOISE };

struct ev {
	int64_t t;
	uint64_t seq;
	int type, id;
	uint32_t gen;
};

struct heap {
	struct ev *e;
	size_t n, cap;
	uint64_t seq;
};

static int ev_less(const struct ev *a, const struct ev *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

static void push(struct heap *h, int64_t t, int type, int id, uint32_t gen)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 1024;
		h->e = realloc(h->e, h->cap * sizeof(*h->e));
		if (!h->e)
			abort();
	}
	size_t i = h->n++;
	struct ev v = {t, h->seq++, type, id, gen};
	while (i > 0 && ev_less(&v, &h->e[(i - 1) / 2])) {
		h->e[i] = h->e[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->e[i] = v;
}

static struct ev pop(struct heap *h)
{
	struct ev top = h->e[0], last = h->e[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && ev_less(&h->e[c + 1], &h->e[c]))
			c++;
		if (!ev_less(&h->e[c], &last))
			break;
		h->e[i] = h->e[c];
		i = c;
	}
	if (h->n)
		h->e[i] = last;
	return top;
}

/* ---- the fleet ---- */

#define RESERVE_S (4 * 3600) /* the queue head waits at most this long before nodes are held for it */
#define SCAN_LIMIT 256
#define USERS 240

struct sim {
	const struct fl_fleet_scenario *sc;
	struct fl_fleet_sim *out;
	struct fl_rng rng;
	struct heap h;
	int gpn;
	int *free, *up, *njobs_on, *jobs_on; /* jobs_on[node * gpn + k] */
	int *used_on;                        /* per job per node GPUs: kept in the job's node list order */
	size_t cap_jobs;
	/* the FIFO queue, a doubly linked list over job indices */
	int *next, *prev;
	int qhead, qtail;
	long waiting, running, pending;
	int64_t arrivals_end;
};

static struct fl_fleet_job *new_job(struct sim *s)
{
	struct fl_fleet_sim *o = s->out;
	if (o->njobs == s->cap_jobs) {
		s->cap_jobs = s->cap_jobs ? s->cap_jobs * 2 : 4096;
		o->jobs = realloc(o->jobs, s->cap_jobs * sizeof(*o->jobs));
		s->next = realloc(s->next, s->cap_jobs * sizeof(int));
		s->prev = realloc(s->prev, s->cap_jobs * sizeof(int));
		if (!o->jobs || !s->next || !s->prev)
			abort();
	}
	struct fl_fleet_job *j = &o->jobs[o->njobs++];
	memset(j, 0, sizeof(*j));
	return j;
}

static void add_xid(struct sim *s, int64_t t, int gpu, int code)
{
	struct fl_fleet_sim *o = s->out;
	static const size_t chunk = 1024;
	if (o->nxid % chunk == 0) {
		o->xid = realloc(o->xid, (o->nxid + chunk) * sizeof(*o->xid));
		if (!o->xid)
			abort();
	}
	o->xid[o->nxid++] = (struct fl_xid_event){t, gpu, code};
}

/* The checkpoint interval of a job (0: it does not checkpoint). */
static double ckpt_interval(const struct fl_fleet_model *m, long gpus)
{
	if (m->ckpt_min_gpus <= 0 || gpus < m->ckpt_min_gpus || m->ckpt_cost_min <= 0)
		return 0;
	if (m->ckpt_interval_min > 0)
		return m->ckpt_interval_min * 60;
	if (m->gpu_mtbf_h <= 0)
		return 0;
	return sqrt(2 * m->ckpt_cost_min * 60 * m->gpu_mtbf_h * 3600 / (double)gpus);
}

/* Wall time to do w seconds of work, checkpoints and restart included. */
static double wall_of(const struct fl_fleet_model *m, const struct fl_fleet_job *j, double w)
{
	double c = j->ckpt_interval_s > 0 ? floor(w / j->ckpt_interval_s) * m->ckpt_cost_min * 60 : 0;
	return j->restart_s + w + c;
}

static void make_arrival(struct sim *s, int64_t t)
{
	const struct fl_fleet_scenario *sc = s->sc;
	struct fl_fleet_job *j = new_job(s);
	double u = fl_rng_uniform(&s->rng), acc = 0;
	size_t c = 0;
	for (c = 0; c + 1 < sc->ncls; c++)
		if (u < (acc += sc->cls[c].share))
			break;
	const struct fl_fleet_class *k = &sc->cls[c];
	double ug = fl_rng_uniform(&s->rng);
	size_t g = 0;
	while (g + 1 < k->ngpus && ug > k->gpu_weight[g])
		g++;
	j->cls = (int)c;
	j->gpus = k->gpus[g];
	j->user = (int)(fl_rng_next(&s->rng) % USERS);
	j->submit = t;
	double work = fmax(1, floor(k->median_min * 60 * exp(k->sigma * fl_rng_normal(&s->rng)) + 0.5));
	double uo = fl_rng_uniform(&s->rng);
	if (uo < k->p_cancel) {
		j->state = FJ_CANCELLED;
	} else if (uo < k->p_cancel + k->p_fail) {
		j->state = FJ_FAILED;
		work = fmax(1, floor(work * fl_rng_uniform(&s->rng)));
	} else {
		j->state = FJ_COMPLETED;
	}
	j->work_s = work;
	j->ckpt_interval_s = ckpt_interval(&s->out->model, j->gpus);
	s->pending++;
	push(&s->h, t, EV_ARRIVE, (int)(j - s->out->jobs), 0);
}

static void enqueue(struct sim *s, int id)
{
	s->next[id] = -1;
	s->prev[id] = s->qtail;
	if (s->qtail >= 0)
		s->next[s->qtail] = id;
	else
		s->qhead = id;
	s->qtail = id;
	s->waiting++;
}

static void dequeue(struct sim *s, int id)
{
	if (s->prev[id] >= 0)
		s->next[s->prev[id]] = s->next[id];
	else
		s->qhead = s->next[id];
	if (s->next[id] >= 0)
		s->prev[s->next[id]] = s->prev[id];
	else
		s->qtail = s->prev[id];
	s->waiting--;
}

/* Nodes for a job, or 0 when it does not fit now. */
static int place(struct sim *s, long gpus, int *nodes, int *nn)
{
	int N = s->sc->nodes, gpn = s->gpn;
	if (gpus <= gpn) {
		int best = -1;
		for (int n = 0; n < N; n++)
			if (s->up[n] && s->free[n] >= gpus && (best < 0 || s->free[n] < s->free[best])) {
				best = n;
				if (s->free[n] == gpus)
					break;
			}
		if (best < 0)
			return 0;
		nodes[0] = best;
		*nn = 1;
		return 1;
	}
	int need = (int)((gpus + gpn - 1) / gpn), k = 0;
	for (int n = 0; n < N && k < need; n++)
		if (s->up[n] && s->free[n] == gpn)
			nodes[k++] = n;
	if (k < need)
		return 0;
	*nn = need;
	return 1;
}

static void start_job(struct sim *s, int id, int64_t t, const int *nodes, int nn)
{
	struct fl_fleet_job *j = &s->out->jobs[id];
	const struct fl_fleet_model *m = &s->out->model;
	j->start = t;
	j->nnodes = nn;
	if (nn) {
		j->nodes = malloc((size_t)nn * sizeof(int));
		if (!j->nodes)
			abort();
	}
	long left = j->gpus;
	for (int i = 0; i < nn; i++) {
		int n = nodes[i];
		int use = (int)(left < s->gpn ? left : s->gpn);
		left -= use;
		j->nodes[i] = n;
		s->free[n] -= use;
		s->jobs_on[n * s->gpn + s->njobs_on[n]++] = id;
	}
	double wall = wall_of(m, j, j->work_s);
	int64_t dur = (int64_t)ceil(wall);
	int64_t limit = (int64_t)(s->sc->time_limit_h * 3600);
	if (dur > limit) {
		dur = limit;
		j->state = FJ_TIMEOUT;
	}
	j->planned_end = t + dur;
	s->running++;
	push(&s->h, j->planned_end, EV_END, id, j->gen);
}

static void try_schedule(struct sim *s, int64_t t)
{
	int nodes_buf[4096];
	int *nodes = s->sc->nodes <= 4096 ? nodes_buf : malloc((size_t)s->sc->nodes * sizeof(int));
	if (!nodes)
		abort();
	int scanned = 0;
	for (int id = s->qhead; id >= 0 && scanned < SCAN_LIMIT; scanned++) {
		int nx = s->next[id], nn = 0;
		struct fl_fleet_job *j = &s->out->jobs[id];
		if (j->gpus == 0 || place(s, j->gpus, nodes, &nn)) {
			dequeue(s, id);
			start_job(s, id, t, nodes, j->gpus == 0 ? 0 : nn);
		} else if (id == s->qhead && t - j->submit > RESERVE_S) {
			break; /* hold what frees up for the head */
		}
		id = nx;
	}
	if (nodes != nodes_buf)
		free(nodes);
}

static void release_job(struct sim *s, int id)
{
	struct fl_fleet_job *j = &s->out->jobs[id];
	long left = j->gpus;
	for (int i = 0; i < j->nnodes; i++) {
		int n = j->nodes[i];
		int use = (int)(left < s->gpn ? left : s->gpn);
		left -= use;
		s->free[n] += use;
		int *on = &s->jobs_on[n * s->gpn];
		for (int k = 0; k < s->njobs_on[n]; k++)
			if (on[k] == id) {
				on[k] = on[--s->njobs_on[n]];
				break;
			}
	}
	free(j->nodes);
	j->nodes = NULL;
	s->running--;
}

/* Kill a job on a failed node at t: NODE_FAIL; the work since its last
 * checkpoint is lost; perhaps resubmitted from that checkpoint. */
static void kill_job(struct sim *s, int id, int64_t t)
{
	const struct fl_fleet_model *m = &s->out->model;
	struct fl_fleet_job *j = &s->out->jobs[id];
	double e = fmax(0, (double)(t - j->start) - j->restart_s), tau = j->ckpt_interval_s, c = m->ckpt_cost_min * 60;
	double done, saved = 0;
	if (tau > 0) {
		double cycles = floor(e / (tau + c)), rem = e - cycles * (tau + c);
		done = cycles * tau + fmin(rem, tau);
		saved = cycles * tau;
		j->ckpt_s = cycles * c + fmax(0, rem - tau);
	} else {
		done = e;
	}
	j->lost_s = done - saved;
	int planned = j->state;
	double remaining = j->work_s - saved;
	j->state = FJ_NODE_FAIL;
	j->end = t;
	j->gen++;
	release_job(s, id);
	const struct fl_fleet_class *k = &s->sc->cls[j->cls];
	if (planned == FJ_TIMEOUT)
		planned = FJ_COMPLETED; /* the restart gets its own time limit */
	if (remaining >= 1 && fl_rng_uniform(&s->rng) < k->p_restart) {
		struct fl_fleet_job *r = new_job(s);
		j = &s->out->jobs[id]; /* new_job may move the array */
		r->cls = j->cls;
		r->gpus = j->gpus;
		r->user = j->user;
		r->submit = t + (int64_t)ceil(s->sc->restart_delay_min * 60);
		r->state = planned;
		r->work_s = ceil(remaining);
		r->ckpt_interval_s = j->ckpt_interval_s;
		r->restart_s = saved > 0 ? m->restart_min * 60 : 0;
		r->restart_of_failure = 1;
		s->out->restarts++;
		s->pending++;
		push(&s->h, r->submit, EV_ARRIVE, (int)(r - s->out->jobs), 0);
	}
}

/* Node n fails at t (if it is up): its jobs die, it is repaired later. */
static int fail_node(struct sim *s, int n, int64_t t)
{
	const struct fl_fleet_model *m = &s->out->model;
	if (!s->up[n])
		return 0;
	struct fl_fleet_sim *o = s->out;
	o->failures++;
	o->failures_bad_node += m->node_rate[n] > 1;
	int gpu = (int)(fl_rng_next(&s->rng) % (uint64_t)s->gpn);
	add_xid(s, t, n * s->gpn + gpu, m->xid_code);
	o->failures_busy += s->njobs_on[n] > 0;
	while (s->njobs_on[n] > 0)
		kill_job(s, s->jobs_on[n * s->gpn], t);
	s->up[n] = 0;
	push(&s->h, t + (int64_t)ceil(m->repair_h * 3600), EV_REPAIR, n, 0);
	return 1;
}

enum fl_status fl_fleet_simulate(const struct fl_fleet_scenario *sc, struct fl_fleet_sim *o)
{
	memset(o, 0, sizeof(*o));
	struct sim s = {.sc = sc, .out = o, .gpn = sc->gpus_per_node, .qhead = -1, .qtail = -1};
	struct fl_fleet_model *m = &o->model;
	m->nodes = sc->nodes;
	m->gpus_per_node = sc->gpus_per_node;
	m->corr_rack = -1;
	m->xid_code = 79;
	m->node_rate = malloc((size_t)sc->nodes * sizeof(double));
	s.free = malloc((size_t)sc->nodes * sizeof(int));
	s.up = malloc((size_t)sc->nodes * sizeof(int));
	s.njobs_on = calloc((size_t)sc->nodes, sizeof(int));
	s.jobs_on = malloc((size_t)sc->nodes * (size_t)s.gpn * sizeof(int));
	if (!m->node_rate || !s.free || !s.up || !s.njobs_on || !s.jobs_on)
		abort();
	for (int n = 0; n < sc->nodes; n++) {
		m->node_rate[n] = 1;
		s.free[n] = s.gpn;
		s.up[n] = 1;
	}
	enum fl_status st = FL_OK;
	for (size_t i = 0; i < sc->nfaults; i++)
		if ((st = sc->faults[i].ops->apply(sc->faults[i].ops, sc->faults[i].values, m))) {
			st = fl_error_prefix(FL_EINPUT, "'%s': faults[%zu]: ", sc->file, i);
			goto out;
		}
	fl_rng_seed(&s.rng, sc->seed);
	s.arrivals_end = sc->start + (int64_t)(sc->days * 86400);
	double mean_gap = 86400 / sc->jobs_per_day;
	make_arrival(&s, sc->start + (int64_t)ceil(fl_rng_exp(&s.rng, mean_gap)));
	/* each node's own failure clock; the RNG streams are split so that the
	 * failure times do not depend on the job mix */
	struct fl_rng frng;
	fl_rng_seed(&frng, sc->seed ^ 0x6661696c75726573ull);
	if (m->gpu_mtbf_h > 0)
		for (int n = 0; n < sc->nodes; n++)
			push(&s.h, sc->start + (int64_t)ceil(fl_rng_exp(&frng, m->gpu_mtbf_h * 3600 / (s.gpn * m->node_rate[n]))),
			     EV_FAIL, n, 0);
	if (sc->xid_noise_per_day > 0)
		push(&s.h, sc->start + (int64_t)ceil(fl_rng_exp(&frng, 86400 / sc->xid_noise_per_day)), EV_NOISE, 0, 0);
	while (s.h.n && (s.pending || s.waiting || s.running)) {
		struct ev e = pop(&s.h);
		switch (e.type) {
		case EV_ARRIVE: {
			int fresh = !o->jobs[e.id].restart_of_failure;
			s.pending--;
			if (o->jobs[e.id].gpus == 0) {
				start_job(&s, e.id, e.t, NULL, 0); /* CPU-only jobs do not wait for GPUs */
			} else {
				enqueue(&s, e.id);
			}
			if (fresh) {
				int64_t nt = e.t + (int64_t)ceil(fl_rng_exp(&s.rng, mean_gap));
				if (nt < s.arrivals_end)
					make_arrival(&s, nt);
			}
			try_schedule(&s, e.t);
			break;
		}
		case EV_END: {
			struct fl_fleet_job *j = &o->jobs[e.id];
			if (j->gen != e.gen)
				break;
			j->end = e.t;
			if (j->ckpt_interval_s > 0) {
				double w = fmin(j->work_s, (double)(e.t - j->start) - j->restart_s);
				j->ckpt_s = floor(fmax(0, w) / j->ckpt_interval_s) * m->ckpt_cost_min * 60;
			}
			release_job(&s, e.id);
			try_schedule(&s, e.t);
			break;
		}
		case EV_FAIL: {
			int n = e.id;
			push(&s.h, e.t + (int64_t)ceil(fl_rng_exp(&frng, m->gpu_mtbf_h * 3600 / (s.gpn * m->node_rate[n]))),
			     EV_FAIL, n, 0);
			if (!fail_node(&s, n, e.t))
				break;
			if (m->corr_rack >= 0 && n / m->nodes_per_rack == m->corr_rack) {
				int r0 = m->corr_rack * m->nodes_per_rack;
				for (int k = r0; k < r0 + m->nodes_per_rack && k < sc->nodes; k++)
					if (k != n && s.up[k] && fl_rng_uniform(&frng) < m->corr_p && fail_node(&s, k, e.t))
						o->failures_corr++;
			}
			try_schedule(&s, e.t);
			break;
		}
		case EV_REPAIR:
			s.up[e.id] = 1;
			try_schedule(&s, e.t);
			break;
		case EV_NOISE: {
			static const int codes[] = {13, 31, 43};
			int gpu = (int)(fl_rng_next(&frng) % (uint64_t)(sc->nodes * s.gpn));
			add_xid(&s, e.t, gpu, codes[fl_rng_next(&frng) % 3]);
			push(&s.h, e.t + (int64_t)ceil(fl_rng_exp(&frng, 86400 / sc->xid_noise_per_day)), EV_NOISE, 0, 0);
			break;
		}
		}
	}
	for (size_t i = 0; i < o->njobs; i++)
		if (o->jobs[i].end > o->end)
			o->end = o->jobs[i].end;
	/* XID events after the last job are outside the log's window */
	size_t k = 0;
	for (size_t i = 0; i < o->nxid; i++)
		if (o->xid[i].t <= o->end)
			o->xid[k++] = o->xid[i];
	o->nxid = k;
out:
	free(s.h.e);
	free(s.free);
	free(s.up);
	free(s.njobs_on);
	free(s.jobs_on);
	free(s.next);
	free(s.prev);
	return st;
}

void fl_fleet_sim_release(struct fl_fleet_sim *o)
{
	for (size_t i = 0; i < o->njobs; i++)
		free(o->jobs[i].nodes);
	free(o->jobs);
	free(o->xid);
	free(o->model.node_rate);
	memset(o, 0, sizeof(*o));
}
