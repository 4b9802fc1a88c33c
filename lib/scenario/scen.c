/*
 * scen.c: the public face of the scenario generator (scen.h): parameters,
 * building and freeing a job, registering it, injecting faults and
 * producing one interval's summaries.  The job model lives in job.c, the
 * fault model in fault.c and the summaries in emit.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scen_int.h"

static const char *const scen_layout_names[SCEN_L_COUNT] = {
	"tp8-dp", "tp8-pp4-dp", "dp-flat", "tp8-ep8-dp", "dp-ring",
};

static const char *const scen_fault_names[SCEN_F_COUNT] = {
	"none",	     "slow-conn",    "slow-tx",	      "slow-rx",
	"slow-gpu",  "intermittent", "comm-hang",     "noncomm-hang",
	"node-lost", "slow-host",    "slow-host-nic",
};

const char *
scen_layout_name(unsigned layout)
{
	return layout < SCEN_L_COUNT ? scen_layout_names[layout] : "unknown";
}

const char *
scen_fault_name(unsigned kind)
{
	return kind < SCEN_F_COUNT ? scen_fault_names[kind] : "unknown";
}

int
scen_layout_parse(const char *name)
{
	int i;

	for (i = 0; i < SCEN_L_COUNT; i++)
		if (strcmp(name, scen_layout_names[i]) == 0)
			return i;
	return -1;
}

int
scen_fault_parse(const char *name)
{
	int i;

	for (i = 0; i < SCEN_F_COUNT; i++)
		if (strcmp(name, scen_fault_names[i]) == 0)
			return i;
	return -1;
}

/* Defaults: 64 ranks, tp8-dp, 8 steps per interval, the noise of scen.h. */
void
scen_params_default(struct scen_params *p)
{
	memset(p, 0, sizeof(*p));
	p->nranks = 64;
	p->layout = SCEN_L_TP_DP;
	p->steps = 8;
	p->seed = 1;
	p->noise.jitter_sigma = 0.20;
	p->noise.spike_prob = 0.002;
	p->noise.spike_max = 30.0;
	p->noise.hetero_sigma = 0.04;
	p->noise.link_sigma = 0.01;
	p->noise.host_sigma = 0.005;
	p->noise.drift_sigma = 0.03;
	p->noise.burst_prob = 5e-5;
	p->noise.gpu_sigma = 0.02;
	p->noise.compute_sigma = 0.03;
	p->noise.clock_offset_s = 2.0;
}

/*
 * The arrays of the phenomena beyond the base model, and the NIC drift
 * drawn after the job was built (so a seed builds the same job with and
 * without it). 0 or -1 without memory.
 */
static int
scen_new_extra(struct scen *s)
{
	const struct scen_noise *nz = &s->p.noise;
	uint32_t i;

	s->coll_host = calloc(s->nacc, sizeof(*s->coll_host));
	s->wait_host = calloc(s->nacc, sizeof(*s->wait_host));
	s->conn_host = calloc(s->nconns, sizeof(*s->conn_host));
	s->conn_p50 = calloc(s->nconns, sizeof(*s->conn_p50));
	s->conn_dfac = calloc(s->nconns, sizeof(*s->conn_dfac));
	s->conn_dshare = calloc(s->nconns, sizeof(*s->conn_dshare));
	if (s->coll_host == NULL || s->wait_host == NULL ||
	    s->conn_host == NULL || s->conn_p50 == NULL ||
	    s->conn_dfac == NULL || s->conn_dshare == NULL)
		return -1;
	if (nz->nic_drift_share <= 0)
		return 0;
	s->nic_drift = calloc(s->ndevs, sizeof(*s->nic_drift));
	if (s->nic_drift == NULL)
		return -1;
	for (i = 0; i < s->ndevs; i++)
		if (rng_unif(&s->rng) < nz->nic_drift_share)
			s->nic_drift[i] =
				nz->nic_drift_min +
				(nz->nic_drift_max - nz->nic_drift_min) *
					rng_unif(&s->rng);
	return 0;
}

/*
 * Build a job. Returns NULL on invalid parameters (rank count not a
 * multiple of 8, too small for the layout) or memory exhaustion.
 */
struct scen *
scen_new(const struct scen_params *p)
{
	struct scen *s;
	uint32_t i, h;

	if (p->nranks < 2 * SCEN_GPUS_PER_HOST || p->nranks > SCEN_MAX_RANKS ||
	    p->nranks % SCEN_GPUS_PER_HOST || p->layout >= SCEN_L_COUNT ||
	    p->steps == 0)
		return NULL;
	if ((p->noise.nic_drift_share > 0 && p->noise.nic_drift_span == 0) ||
	    ((p->noise.tail_prob > 0 || p->noise.tail_p50_prob > 0 ||
	      p->noise.gap_tail_prob > 0) &&
	     (!(p->noise.tail_alpha > 0) || !(p->noise.tail_cap >= 2.0))))
		return NULL;
	if (p->layout == SCEN_L_TP_PP_DP &&
	    (p->nranks / SCEN_GPUS_PER_HOST) % (2 * SCEN_PP_STAGES))
		return NULL;
	if (p->layout == SCEN_L_TP_EP_DP &&
	    (p->nranks / SCEN_GPUS_PER_HOST) % SCEN_EP_SIZE)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->p = *p;
	rng_seed(&s->rng, p->seed);
	s->ndevs = p->nranks;
	s->nhosts = p->nranks / SCEN_GPUS_PER_HOST;
	s->devs = calloc(s->ndevs, sizeof(*s->devs));
	s->host_off_ns = calloc(s->nhosts, sizeof(*s->host_off_ns));
	s->host_drift = calloc(s->nhosts, sizeof(*s->host_drift));
	s->nic_noise = calloc(s->ndevs, sizeof(*s->nic_noise));
	s->lost = calloc(s->nhosts, 1);
	if (s->devs == NULL || s->host_off_ns == NULL ||
	    s->host_drift == NULL || s->nic_noise == NULL || s->lost == NULL)
		goto fail;
	for (h = 0; h < s->nhosts; h++) {
		s->host_off_ns[h] = (2.0 * rng_unif(&s->rng) - 1.0) *
				    p->noise.clock_offset_s * 1e9;
		s->host_drift[h] = (2.0 * rng_unif(&s->rng) - 1.0) * 50e-6;
	}
	for (i = 0; i < s->ndevs; i++) {
		s->devs[i].host = i / SCEN_GPUS_PER_HOST;
		s->devs[i].gpu = (uint16_t)(i % SCEN_GPUS_PER_HOST);
		s->devs[i].speed = rng_lognorm(&s->rng, p->noise.gpu_sigma);
	}
	if (job_build(s) < 0)
		goto fail;
	s->acc = calloc(s->nacc, sizeof(*s->acc));
	s->conn_factor = calloc(s->nconns, sizeof(*s->conn_factor));
	s->out_coll = calloc(s->nacc, sizeof(*s->out_coll));
	s->out_wait = calloc(s->nacc, sizeof(*s->out_wait));
	s->out_conn = calloc(s->nconns, sizeof(*s->out_conn));
	s->out_hosts = calloc(s->nhosts, sizeof(*s->out_hosts));
	if (s->acc == NULL || s->conn_factor == NULL || s->out_coll == NULL ||
	    s->out_wait == NULL || s->out_conn == NULL || s->out_hosts == NULL)
		goto fail;
	if (scen_new_extra(s) < 0)
		goto fail;
	return s;
fail:
	scen_free(s);
	return NULL;
}

/* Free a job; NULL is fine. */
void
scen_free(struct scen *s)
{
	uint32_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->ncomms; i++)
		free(s->comms[i].dev);
	free(s->comms);
	free(s->conns);
	free(s->ckeys);
	free(s->cvals);
	free(s->devs);
	free(s->acc);
	free(s->host_off_ns);
	free(s->host_drift);
	free(s->nic_noise);
	free(s->conn_factor);
	free(s->lost);
	free(s->out_coll);
	free(s->out_wait);
	free(s->out_conn);
	free(s->out_hosts);
	free(s->coll_host);
	free(s->wait_host);
	free(s->conn_host);
	free(s->nic_drift);
	free(s->conn_p50);
	free(s->conn_dfac);
	free(s->conn_dshare);
	late_free(s);
	free(s);
}

/* The number of hosts of the job. */
uint32_t
scen_nhosts(const struct scen *s)
{
	return s->nhosts;
}

uint32_t
scen_ncomms(const struct scen *s)
{
	return s->ncomms;
}

int
scen_comm(const struct scen *s, uint32_t i, uint64_t *hash, uint32_t *nranks)
{
	if (i >= s->ncomms)
		return -1;
	*hash = s->comms[i].hash;
	*nranks = s->comms[i].nranks;
	return 0;
}

int
scen_rank_loc(const struct scen *s, uint32_t i, uint32_t rank,
	      struct matrix_rank_loc *loc)
{
	const struct sdev *d;

	if (i >= s->ncomms || rank >= s->comms[i].nranks)
		return -1;
	d = &s->devs[s->comms[i].dev[rank]];
	memset(loc, 0, sizeof(*loc));
	loc->host = d->host;
	loc->gpu = d->gpu;
	loc->nic = d->gpu; /* one NIC port per GPU */
	loc->port = 0;
	return 0;
}

int
scen_register(struct scen *s, struct matrix *m)
{
	struct matrix_rank_loc *map = NULL;
	uint32_t i, r, cap = 0;
	int rc = -1;

	for (i = 0; i < s->ncomms; i++)
		if (s->comms[i].nranks > cap)
			cap = s->comms[i].nranks;
	map = calloc(cap, sizeof(*map));
	if (map == NULL)
		return -1;
	for (i = 0; i < s->ncomms; i++) {
		const struct scomm *c = &s->comms[i];

		for (r = 0; r < c->nranks; r++)
			scen_rank_loc(s, i, r, &map[r]);
		if (matrix_comm_add(m, c->hash, c->nranks, map) < 0)
			goto out;
	}
	rc = 0;
out:
	free(map);
	return rc;
}

int
scen_add_fault(struct scen *s, unsigned kind, double slowdown, uint32_t start,
	       struct scen_fault *out)
{
	struct scen_fault_spec sp;

	memset(&sp, 0, sizeof(sp));
	sp.kind = kind;
	sp.slowdown = slowdown;
	sp.start = start;
	return scen_add_fault_spec(s, &sp, out);
}

/* Does the refinement of *sp fit its kind? */
static int
scen_spec_ok(const struct scen_fault_spec *sp)
{
	int conn = sp->kind == SCEN_F_SLOW_CONN;

	if (sp->kind == SCEN_F_NONE || sp->kind >= SCEN_F_COUNT ||
	    !(sp->slowdown >= 1.0))
		return 0;
	if ((sp->spread != 0 &&
	     (!conn || !(sp->spread > 0) || sp->spread >= 1.0)) ||
	    (sp->share != 0 && (!conn || !(sp->share > 0) || sp->share >= 1.0)))
		return 0;
	if (sp->partial != 0 && (sp->kind != SCEN_F_COMM_HANG ||
				 !(sp->partial > 0) || sp->partial > 1.0))
		return 0;
	return !sp->want_ring || conn || sp->kind == SCEN_F_COMM_HANG;
}

/*
 * The connection culprit of a slow-conn or comm-hang fault: a ring one
 * when asked, and for a partial hang one whose ends are not rank 0 (the
 * ranks below its lower end complete); f->partial is set from sp.
 */
static int
scen_pick_conn(struct scen *s, const struct scen_fault_spec *sp,
	       struct scen_fault *f)
{
	const struct sconn *x;
	uint32_t lo;

	x = fault_pick_conn_if(
		s, sp->want_ring ? MATRIX_ALGO_RING : MATRIX_ALGO_COUNT,
		sp->partial > 0 ? 1 : 0);
	if (x == NULL)
		return -1;
	f->host = s->devs[x->sdev].host;
	f->gpu = s->devs[x->sdev].gpu;
	f->peer_host = s->devs[x->ddev].host;
	f->peer_gpu = s->devs[x->ddev].gpu;
	f->comm = s->comms[x->comm].hash;
	f->src = x->src;
	f->dst = x->dst;
	lo = x->src < x->dst ? x->src : x->dst;
	if (sp->partial > 0) {
		f->partial = (uint32_t)ceil(sp->partial * lo);
		f->moved_on = sp->moved_on != 0;
	}
	return 0;
}

int
scen_add_fault_spec(struct scen *s, const struct scen_fault_spec *sp,
		    struct scen_fault *out)
{
	struct scen_fault f;
	uint32_t d;

	if (s->nfaults >= SCEN_MAX_FAULTS || !scen_spec_ok(sp))
		return -1;
	memset(&f, 0, sizeof(f));
	f.kind = (uint8_t)sp->kind;
	f.base = (uint8_t)sp->kind;
	f.slowdown = sp->slowdown;
	f.start = sp->start;
	f.on_mask = sp->on_mask ? sp->on_mask : UINT32_MAX;
	f.ramp = sp->ramp;
	f.spread = sp->spread;
	f.share = sp->share;
	if (sp->kind == SCEN_F_INTERMITTENT) {
		f.base = (uint8_t)(SCEN_F_SLOW_CONN + rng_below(&s->rng, 4));
		f.on_mask = fault_intermittent_mask(&s->rng);
	}
	switch (f.base) {
	case SCEN_F_SLOW_CONN:
	case SCEN_F_COMM_HANG:
		if (scen_pick_conn(s, sp, &f) < 0)
			return -1;
		break;
	case SCEN_F_NODE_LOST:
	case SCEN_F_SLOW_HOST:
	case SCEN_F_SLOW_HOST_NIC:
		f.host = f.peer_host = rng_below(&s->rng, s->nhosts);
		break;
	default:
		d = rng_below(&s->rng, s->ndevs);
		f.host = f.peer_host = s->devs[d].host;
		f.gpu = f.peer_gpu = s->devs[d].gpu;
		break;
	}
	s->faults[s->nfaults++] = f;
	if (out != NULL)
		*out = f;
	return 0;
}

int
scen_stall(struct scen *s, uint32_t start, uint32_t len)
{
	if (len == 0 || s->stall_len != 0)
		return -1;
	s->stall_start = start;
	s->stall_len = len;
	s->stall_steps =
		1 + (s->p.steps > 1 ? rng_below(&s->rng, s->p.steps - 1) : 0);
	s->stall_gap_us = (double)len * SCEN_INTERVAL_NS / 1e3;
	return 0;
}

int
scen_clear_fault(struct scen *s, unsigned i, uint32_t end)
{
	uint8_t b;

	if (i >= s->nfaults || end <= s->faults[i].start)
		return -1;
	b = s->faults[i].base;
	if (b == SCEN_F_COMM_HANG || b == SCEN_F_NONCOMM_HANG ||
	    b == SCEN_F_NODE_LOST)
		return -1;
	s->faults[i].end = end;
	return 0;
}

/*
 * Produce interval iv's summaries into *in (arrays owned by s, valid until
 * the next call). Intervals must be produced in increasing order starting
 * at 0. Returns 0, or -1 when holding late reports runs out of memory.
 */
int
scen_interval(struct scen *s, uint32_t iv, struct matrix_input *in)
{
	double drift = rng_lognorm(&s->rng, s->p.noise.drift_sigma);
	uint32_t i, nc, nw, nx, nh = 0, nsteps = s->p.steps;
	int hung, skew = 1;

	hung = fault_advance(s, iv);
	if (s->stall_len > 0 && iv >= s->stall_start &&
	    iv < s->stall_start + s->stall_len) {
		/* some steps, then every rank stops between two ops */
		nsteps = iv == s->stall_start ? s->stall_steps : 0;
		skew = 0;
	}
	if (hung)
		nsteps = 0;
	emit_factors(s, iv, drift);
	emit_steps(s, iv, nsteps, skew);
	emit_colls(s, iv, &nc, &nw);
	nx = emit_conns(s, hung, nsteps);
	for (i = 0; i < s->nhosts; i++)
		if (!s->lost[i])
			s->out_hosts[nh++] = i;
	memset(in, 0, sizeof(*in));
	in->interval = iv;
	in->coll = s->out_coll;
	in->ncoll = nc;
	in->wait = s->out_wait;
	in->nwait = nw;
	in->conn = s->out_conn;
	in->nconn = nx;
	in->hosts = s->out_hosts;
	in->nhosts = nh;
	return s->late.n > 0 ? late_apply(s, in) : 0;
}
