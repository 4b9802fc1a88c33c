/*
 * scen.c: layouts, fault placement and per-interval summaries of the
 * synthetic jobs described in c4scenario.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scen_int.h"

struct sdev {
	uint32_t host;
	uint16_t gpu;
	double speed; /* static compute factor */
	double t;     /* local time within the step, us */
	double comp;  /* compute of the current phase, us */
	uint32_t comms[SCEN_MAX_DEV_COMMS];
	uint8_t ncomms;
	uint8_t idle; /* non-communication hang: never enters again */
};

struct scomm {
	uint64_t hash;
	uint32_t nranks;
	uint32_t *dev;
	uint32_t acc; /* first member accumulator */
	uint8_t phase;
	uint8_t net;
	double compute_us; /* compute before this collective */
	double coll_us;	   /* transfer time of one collective */
	double slow;	   /* this interval: worst connection factor */
	uint64_t done;	   /* cumulative completed ops */
	uint8_t intersect; /* hang bookkeeping */
};

struct sconn {
	uint32_t comm;
	uint32_t src, dst;
	uint32_t sdev, ddev;
	uint8_t algo, tr;
	uint64_t channels;
	uint32_t chunk;
	uint32_t chunks_step;
	double hetero;
};

/* per (comm, rank) accumulators of one interval */
struct sacc {
	uint32_t n;
	double ksum, kmin, kmax, klog, klog2;
	double gsum, gmin, gmax, glog, glog2;
	double recv, peer, gpuw;
	uint64_t enter, done;
	uint8_t blocked;
};

struct scen {
	struct scen_params p;
	struct rng rng;
	uint32_t nhosts, ndevs;
	struct sdev *devs;
	struct scomm *comms;
	uint32_t ncomms, ccomms;
	struct sconn *conns;
	uint32_t nconns, cconns;
	struct sacc *acc;
	uint32_t nacc;
	uint64_t *ckeys; /* (comm, src, dst, algo) -> conn index + 1 */
	uint32_t *cvals;
	uint32_t ccap;
	double *host_off_ns;
	double *host_drift;
	double *nic_noise;
	double *conn_factor;
	struct scen_fault faults[SCEN_MAX_FAULTS];
	uint32_t nfaults;
	int hung; /* hang state computed */
	uint8_t *lost;
	struct c4m_coll *out_coll;
	struct c4m_conn *out_conn;
	struct c4m_wait *out_wait;
	uint32_t *out_hosts;
};

static const char *const scen_layout_names[SCEN_L_COUNT] = {
	"tp8-dp", "tp8-pp4-dp", "dp-flat", "tp8-ep8-dp", "dp-ring",
};

static const char *const scen_fault_names[SCEN_F_COUNT] = {
	"none",		"slow-conn", "slow-tx",	     "slow-rx",	  "slow-gpu",
	"intermittent", "comm-hang", "noncomm-hang", "node-lost",
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

/* Defaults: 64 ranks, tp8-dp, 8 steps per interval, the noise of c4scenario.h.
 */
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

/* Grow *p to hold need elements of elem bytes (doubling). 0 or -1. */
static int
scen_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t ncap = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, (size_t)ncap * elem);
	if (np == NULL)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

static uint32_t
scen_dev(const struct scen *s, uint32_t host, uint32_t gpu)
{
	return host * SCEN_GPUS_PER_HOST + gpu;
}

/* Add a communicator over devs[0..n) (rank = index). Returns index or -1. */
static int
scen_comm_add(struct scen *s, uint8_t phase, uint32_t n, const uint32_t *devs,
	      double compute_us, double coll_us)
{
	struct scomm *c;
	uint32_t i;

	if (scen_grow((void **)&s->comms, &s->ccomms, s->ncomms + 1,
		      sizeof(*s->comms)) < 0)
		return -1;
	c = &s->comms[s->ncomms];
	memset(c, 0, sizeof(*c));
	c->dev = malloc((size_t)n * sizeof(*c->dev));
	if (c->dev == NULL)
		return -1;
	memcpy(c->dev, devs, (size_t)n * sizeof(*devs));
	c->nranks = n;
	c->phase = phase;
	c->compute_us = compute_us;
	c->coll_us = coll_us;
	c->hash = rng_next(&s->rng) | 1;
	c->acc = s->nacc;
	s->nacc += n;
	for (i = 0; i < n; i++) {
		struct sdev *d = &s->devs[devs[i]];

		if (d->ncomms < SCEN_MAX_DEV_COMMS)
			d->comms[d->ncomms++] = s->ncomms;
	}
	return (int)s->ncomms++;
}

/*
 * Find the slot of (comm, src, dst, algo) in the dedup table, growing it
 * when half full. *slot holds conn index + 1 there, or 0 when new (the
 * caller then fills it). Returns 0 or -1.
 */
static int
scen_conn_find(struct scen *s, uint32_t ci, uint32_t src, uint32_t dst,
	       uint8_t algo, uint32_t *slot)
{
	uint64_t key = ((uint64_t)ci << 40) ^ ((uint64_t)src << 20) ^ dst ^
		       ((uint64_t)algo << 62);
	uint32_t i, mask;

	if (2 * (uint64_t)(s->nconns + 1) > s->ccap) {
		uint32_t ncap = s->ccap ? s->ccap * 2 : 1024, j;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint32_t *nv = calloc(ncap, sizeof(*nv));

		if (nk == NULL || nv == NULL) {
			free(nk);
			free(nv);
			return -1;
		}
		for (j = 0; j < s->ccap; j++) {
			if (s->cvals[j] == 0)
				continue;
			i = (uint32_t)(s->ckeys[j] * 0x9e3779b97f4a7c15ull >>
				       40) &
			    (ncap - 1);
			while (nv[i] != 0)
				i = (i + 1) & (ncap - 1);
			nk[i] = s->ckeys[j];
			nv[i] = s->cvals[j];
		}
		free(s->ckeys);
		free(s->cvals);
		s->ckeys = nk;
		s->cvals = nv;
		s->ccap = ncap;
	}
	mask = s->ccap - 1;
	i = (uint32_t)(key * 0x9e3779b97f4a7c15ull >> 40) & mask;
	while (s->cvals[i] != 0 && s->ckeys[i] != key)
		i = (i + 1) & mask;
	s->ckeys[i] = key;
	*slot = i;
	return 0;
}

/*
 * Add connection src -> dst of comm ci with algo, once per (src, dst,
 * algo) (channel sets merge), with a static heterogeneity factor drawn
 * now. Transport follows placement: NVLink inside a host, else network.
 */
static int
scen_conn_add(struct scen *s, uint32_t ci, uint32_t src, uint32_t dst,
	      uint8_t algo, uint64_t channels, uint32_t chunk,
	      uint32_t chunks_step)
{
	struct scomm *c = &s->comms[ci];
	struct sconn *x;
	uint32_t i;

	if (src == dst)
		return 0;
	/* one connection per (src, dst, algo): merge channel sets */
	if (scen_conn_find(s, ci, src, dst, algo, &i) < 0)
		return -1;
	if (s->cvals[i] != 0) {
		s->conns[s->cvals[i] - 1].channels |= channels;
		return 0;
	}
	s->cvals[i] = s->nconns + 1;
	if (scen_grow((void **)&s->conns, &s->cconns, s->nconns + 1,
		      sizeof(*s->conns)) < 0)
		return -1;
	x = &s->conns[s->nconns++];
	memset(x, 0, sizeof(*x));
	x->comm = ci;
	x->src = src;
	x->dst = dst;
	x->sdev = c->dev[src];
	x->ddev = c->dev[dst];
	x->algo = algo;
	x->tr = s->devs[x->sdev].host == s->devs[x->ddev].host ? C4M_TR_NVLINK
							       : C4M_TR_NET;
	if (x->tr == C4M_TR_NET)
		c->net = 1;
	x->channels = channels;
	x->chunk = chunk;
	x->chunks_step = chunks_step;
	x->hetero = rng_lognorm(&s->rng, s->p.noise.hetero_sigma);
	return 0;
}

static int
scen_ring(struct scen *s, uint32_t ci, uint64_t ch)
{
	uint32_t n = s->comms[ci].nranks, i;

	for (i = 0; i < n; i++)
		if (scen_conn_add(s, ci, i, (i + 1) % n, C4M_ALGO_RING, ch,
				  SCEN_RING_CHUNK, 64) < 0)
			return -1;
	return 0;
}

/*
 * Double binary tree over ranks perm(0..n): tree 0 is heap ordered, tree 1
 * its mirror, so the leaves of one are inner nodes of the other. Edges go
 * both ways (reduce up, broadcast down).
 */
static int
scen_tree(struct scen *s, uint32_t ci, const uint32_t *ranks, uint32_t n,
	  int which)
{
	uint32_t i, t;

	for (t = 0; t < 2; t++) {
		if (which >= 0 && (int)t != which)
			continue;
		for (i = 1; i < n; i++) {
			uint32_t c = t ? n - 1 - i : i;
			uint32_t pa = t ? n - 1 - (i - 1) / 2 : (i - 1) / 2;
			uint64_t ch = t ? 0xf0 : 0x0f;

			if (scen_conn_add(s, ci, ranks[c], ranks[pa],
					  C4M_ALGO_TREE, ch, SCEN_TREE_CHUNK,
					  32) < 0 ||
			    scen_conn_add(s, ci, ranks[pa], ranks[c],
					  C4M_ALGO_TREE, ch, SCEN_TREE_CHUNK,
					  32) < 0)
				return -1;
		}
	}
	return 0;
}

/* Tensor parallel: one comm per host over its 8 GPUs, NVLink ring (+ mesh). */
static int
scen_tp(struct scen *s, uint8_t phase, int mesh)
{
	uint32_t h, g, k, devs[SCEN_GPUS_PER_HOST];
	int ci;

	for (h = 0; h < s->nhosts; h++) {
		for (g = 0; g < SCEN_GPUS_PER_HOST; g++)
			devs[g] = scen_dev(s, h, g);
		ci = scen_comm_add(s, phase, SCEN_GPUS_PER_HOST, devs, 60e3,
				   6e3);
		if (ci < 0)
			return -1;
		for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
			if (scen_conn_add(s, (uint32_t)ci, g,
					  (g + 1) % SCEN_GPUS_PER_HOST,
					  C4M_ALGO_RING, 0xff, SCEN_NVL_CHUNK,
					  32) < 0)
				return -1;
			for (k = 0; mesh && k < SCEN_GPUS_PER_HOST; k++)
				if (scen_conn_add(s, (uint32_t)ci, g, k,
						  C4M_ALGO_P2P, 0x1,
						  SCEN_NVL_CHUNK, 16) < 0)
					return -1;
		}
	}
	return 0;
}

/* DP rails: for each GPU index, one comm over hosts h0, h0+step, ... */
static int
scen_dp(struct scen *s, uint8_t phase, uint32_t h0, uint32_t nh, int tree)
{
	uint32_t g, i, *devs, *ranks;
	int ci, rc = -1;

	devs = malloc((size_t)nh * sizeof(*devs));
	ranks = malloc((size_t)nh * sizeof(*ranks));
	if (devs == NULL || ranks == NULL)
		goto out;
	for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
		for (i = 0; i < nh; i++) {
			devs[i] = scen_dev(s, h0 + i, g);
			ranks[i] = i;
		}
		ci = scen_comm_add(s, phase, nh, devs, 80e3, 30e3);
		if (ci < 0 || scen_ring(s, (uint32_t)ci, 0x3) < 0)
			goto out;
		if (tree && scen_tree(s, (uint32_t)ci, ranks, nh, -1) < 0)
			goto out;
	}
	rc = 0;
out:
	free(devs);
	free(ranks);
	return rc;
}

/* TP, then PP send/recv pairs between 4 stages, then DP inside each stage. */
static int
scen_layout_pp(struct scen *s)
{
	uint32_t hs = s->nhosts / SCEN_PP_STAGES, st, h, g, pair[2];
	int ci;

	if (scen_tp(s, 0, 0) < 0)
		return -1;
	for (st = 0; st + 1 < SCEN_PP_STAGES; st++) {
		for (h = 0; h < hs; h++) {
			for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
				pair[0] = scen_dev(s, st * hs + h, g);
				pair[1] = scen_dev(s, (st + 1) * hs + h, g);
				ci = scen_comm_add(s, (uint8_t)(1 + (st & 1)),
						   2, pair, 20e3, 3e3);
				if (ci < 0 ||
				    scen_conn_add(s, (uint32_t)ci, 0, 1,
						  C4M_ALGO_P2P, 0x1,
						  SCEN_P2P_CHUNK, 32) < 0 ||
				    scen_conn_add(s, (uint32_t)ci, 1, 0,
						  C4M_ALGO_P2P, 0x1,
						  SCEN_P2P_CHUNK, 32) < 0)
					return -1;
			}
		}
	}
	for (st = 0; st < SCEN_PP_STAGES; st++)
		if (scen_dp(s, 3, st * hs, hs, 1) < 0)
			return -1;
	return 0;
}

/*
 * One DP comm over all ranks: 8 channels, channel c's ring runs through
 * the GPUs of each host over NVLink and leaves it from a different GPU's
 * NIC; one tree over hosts per channel on NIC c.
 */
static int
scen_layout_flat(struct scen *s)
{
	uint32_t n = s->ndevs, H = s->nhosts, h, c, *all, *ranks;
	int ci, rc = -1;

	all = malloc((size_t)n * sizeof(*all));
	ranks = malloc((size_t)H * sizeof(*ranks));
	if (all == NULL || ranks == NULL)
		goto out;
	for (h = 0; h < n; h++)
		all[h] = h;
	ci = scen_comm_add(s, 0, n, all, 100e3, 40e3);
	if (ci < 0)
		goto out;
	for (c = 0; c < SCEN_GPUS_PER_HOST; c++) {
		for (h = 0; h < H; h++) {
			uint32_t g, first = c, last = (c + 7) % 8;

			for (g = 0; g < 7; g++)
				if (scen_conn_add(s, (uint32_t)ci,
						  h * 8 + (first + g) % 8,
						  h * 8 + (first + g + 1) % 8,
						  C4M_ALGO_RING, 1ull << c,
						  SCEN_RING_CHUNK, 64) < 0)
					goto out;
			if (H > 1 &&
			    scen_conn_add(s, (uint32_t)ci, h * 8 + last,
					  ((h + 1) % H) * 8 + c, C4M_ALGO_RING,
					  1ull << c, SCEN_RING_CHUNK, 64) < 0)
				goto out;
			ranks[h] = h * 8 + c;
		}
		if (H > 1 && scen_tree(s, (uint32_t)ci, ranks, H, c & 1) < 0)
			goto out;
	}
	rc = 0;
out:
	free(all);
	free(ranks);
	return rc;
}

/* TP mesh, expert all-to-all in groups of 8 hosts per rail, DP rails. */
static int
scen_layout_ep(struct scen *s)
{
	uint32_t b, g, i, j, devs[SCEN_EP_SIZE];
	int ci;

	if (scen_tp(s, 0, 1) < 0)
		return -1;
	for (b = 0; b + SCEN_EP_SIZE <= s->nhosts; b += SCEN_EP_SIZE) {
		for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
			for (i = 0; i < SCEN_EP_SIZE; i++)
				devs[i] = scen_dev(s, b + i, g);
			ci = scen_comm_add(s, 1, SCEN_EP_SIZE, devs, 30e3, 8e3);
			if (ci < 0)
				return -1;
			for (i = 0; i < SCEN_EP_SIZE; i++)
				for (j = 0; j < SCEN_EP_SIZE; j++)
					if (scen_conn_add(s, (uint32_t)ci, i, j,
							  C4M_ALGO_P2P, 0x1,
							  SCEN_EP_CHUNK,
							  16) < 0)
						return -1;
		}
	}
	return scen_dp(s, 2, 0, s->nhosts, 1);
}

/* Build the communicators and connections of the chosen layout. */
static int
scen_build(struct scen *s)
{
	switch (s->p.layout) {
	case SCEN_L_TP_DP:
		return scen_tp(s, 0, 0) < 0 ? -1
					    : scen_dp(s, 1, 0, s->nhosts, 1);
	case SCEN_L_TP_PP_DP:
		return scen_layout_pp(s);
	case SCEN_L_DP_FLAT:
		return scen_layout_flat(s);
	case SCEN_L_TP_EP_DP:
		return scen_layout_ep(s);
	case SCEN_L_DP_RING:
		return scen_tp(s, 0, 0) < 0 ? -1
					    : scen_dp(s, 1, 0, s->nhosts, 0);
	}
	return -1;
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
	if (scen_build(s) < 0)
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
	free(s);
}

uint32_t
scen_nhosts(const struct scen *s)
{
	return s->nhosts;
}

size_t
scen_nconns(const struct scen *s)
{
	return s->nconns;
}

/* Register every communicator of the job with the engine. Returns 0/-1. */
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
	      struct c4m_rank_loc *loc)
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
	struct c4m_rank_loc *map = NULL;
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

static uint32_t
scen_intermittent_mask(struct rng *r)
{
	uint32_t mask = 0, pos = 0, len;

	while (pos < 32) {
		len = 1 + rng_below(r, 3); /* on for 1..3 intervals */
		while (len-- > 0 && pos < 32)
			mask |= 1u << pos++;
		pos += 1 + rng_below(r, 2); /* off for 1..2 */
	}
	return mask;
}

/* A random network connection, or NULL when the job has none. */
static const struct sconn *
scen_pick_net_conn(struct scen *s)
{
	uint32_t tries;

	for (tries = 0; tries < 1000000; tries++) {
		const struct sconn *x =
			&s->conns[rng_below(&s->rng, s->nconns)];

		if (x->tr == C4M_TR_NET)
			return x;
	}
	return NULL;
}

/*
 * Inject a fault of kind starting at interval start, choosing its culprit
 * at random (seeded). slowdown applies to the slow kinds. The ground truth
 * is copied to *out when out is not NULL. Returns 0, or -1 when the kind
 * is invalid, the job has no network connection, or SCEN_MAX_FAULTS are
 * already injected.
 */
int
scen_add_fault(struct scen *s, unsigned kind, double slowdown, uint32_t start,
	       struct scen_fault *out)
{
	struct scen_fault f;
	const struct sconn *x;
	uint32_t d;

	if (kind == SCEN_F_NONE || kind >= SCEN_F_COUNT ||
	    s->nfaults >= SCEN_MAX_FAULTS || !(slowdown >= 1.0))
		return -1;
	memset(&f, 0, sizeof(f));
	f.kind = (uint8_t)kind;
	f.base = (uint8_t)kind;
	f.slowdown = slowdown;
	f.start = start;
	f.on_mask = UINT32_MAX;
	if (kind == SCEN_F_INTERMITTENT) {
		f.base = (uint8_t)(SCEN_F_SLOW_CONN + rng_below(&s->rng, 4));
		f.on_mask = scen_intermittent_mask(&s->rng);
	}
	switch (f.base) {
	case SCEN_F_SLOW_CONN:
	case SCEN_F_COMM_HANG:
		x = scen_pick_net_conn(s);
		if (x == NULL)
			return -1;
		f.host = s->devs[x->sdev].host;
		f.gpu = s->devs[x->sdev].gpu;
		f.peer_host = s->devs[x->ddev].host;
		f.peer_gpu = s->devs[x->ddev].gpu;
		f.comm = s->comms[x->comm].hash;
		f.src = x->src;
		f.dst = x->dst;
		break;
	case SCEN_F_NODE_LOST:
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

static int
scen_active(const struct scen_fault *f, uint32_t iv)
{
	if (iv < f->start || (f->end != 0 && iv >= f->end))
		return 0;
	return (f->on_mask >> ((iv - f->start) % 32)) & 1;
}

/* Slowdown factor of connection x in this interval from active faults. */
static double
scen_conn_fault(const struct scen *s, const struct sconn *x, uint32_t iv)
{
	const struct sdev *a = &s->devs[x->sdev], *b = &s->devs[x->ddev];
	double f = 1.0;
	uint32_t i;

	if (x->tr != C4M_TR_NET)
		return 1.0;
	for (i = 0; i < s->nfaults; i++) {
		const struct scen_fault *t = &s->faults[i];

		if (!scen_active(t, iv))
			continue;
		if (t->base == SCEN_F_SLOW_CONN && a->host == t->host &&
		    a->gpu == t->gpu && b->host == t->peer_host &&
		    b->gpu == t->peer_gpu)
			f *= t->slowdown;
		if (t->base == SCEN_F_SLOW_TX && a->host == t->host &&
		    a->gpu == t->gpu)
			f *= t->slowdown;
		if (t->base == SCEN_F_SLOW_RX && b->host == t->host &&
		    b->gpu == t->gpu)
			f *= t->slowdown;
	}
	return f;
}

/* Compute slowdown of device dev in interval iv from active faults. */
static double
scen_gpu_fault(const struct scen *s, uint32_t dev, uint32_t iv)
{
	const struct sdev *d = &s->devs[dev];
	double f = 1.0;
	uint32_t i;

	for (i = 0; i < s->nfaults; i++) {
		const struct scen_fault *t = &s->faults[i];

		if (t->base == SCEN_F_SLOW_GPU && scen_active(t, iv) &&
		    d->host == t->host && d->gpu == t->gpu)
			f *= t->slowdown;
	}
	return f;
}

/* 1 when a hang or node loss is active in interval iv. */
static int
scen_hang_at(const struct scen *s, uint32_t iv)
{
	uint32_t i;

	for (i = 0; i < s->nfaults; i++) {
		uint8_t b = s->faults[i].base;

		if ((b == SCEN_F_COMM_HANG || b == SCEN_F_NONCOMM_HANG ||
		     b == SCEN_F_NODE_LOST) &&
		    iv >= s->faults[i].start)
			return 1;
	}
	return 0;
}

static void
scen_acc_reset(struct sacc *a)
{
	uint64_t e = a->enter, d = a->done;
	uint8_t b = a->blocked;

	memset(a, 0, sizeof(*a));
	a->enter = e;
	a->done = d;
	a->blocked = b;
	a->kmin = a->gmin = INFINITY;
}

/* Account one collective of a member: kernel, gap, waits. */
static void
scen_acc_add(struct sacc *a, double kernel, double gap, double recv,
	     double peer)
{
	a->n++;
	a->ksum += kernel;
	a->kmin = fmin(a->kmin, kernel);
	a->kmax = fmax(a->kmax, kernel);
	a->klog += log(kernel);
	a->klog2 += log(kernel) * log(kernel);
	a->gsum += gap;
	a->gmin = fmin(a->gmin, gap);
	a->gmax = fmax(a->gmax, gap);
	a->glog += log(gap);
	a->glog2 += log(gap) * log(gap);
	a->recv += recv;
	a->peer += peer;
}

/* One training step: every phase's compute, then its collectives. */
static void
scen_step(struct scen *s, uint32_t iv)
{
	const struct scen_noise *nz = &s->p.noise;
	uint32_t ph, ci, r;

	for (r = 0; r < s->ndevs; r++)
		s->devs[r].t = 0;
	for (ph = 0; ph < SCEN_MAX_PHASES; ph++) {
		for (ci = 0; ci < s->ncomms; ci++) {
			struct scomm *c = &s->comms[ci];
			double amax = 0, T, end;

			if (c->phase != ph)
				continue;
			for (r = 0; r < c->nranks; r++) {
				struct sdev *d = &s->devs[c->dev[r]];

				d->comp =
					c->compute_us * d->speed *
						scen_gpu_fault(s, c->dev[r],
							       iv) *
						rng_lognorm(&s->rng,
							    nz->compute_sigma) +
					SCEN_LAUNCH_US;
				d->t += d->comp;
				if (d->t > amax)
					amax = d->t;
			}
			T = c->coll_us * c->slow * rng_lognorm(&s->rng, 0.02);
			end = amax + T;
			for (r = 0; r < c->nranks; r++) {
				struct sdev *d = &s->devs[c->dev[r]];
				double waited = amax - d->t;
				double recv =
					waited +
					T * (0.2 + 0.1 * rng_unif(&s->rng));
				double peer = T * 0.05 * rng_unif(&s->rng);

				scen_acc_add(&s->acc[c->acc + r], end - d->t,
					     d->comp, recv, peer);
				d->t = end;
			}
		}
	}
}

static int
scen_in_set(const struct scen *s, uint32_t dev, unsigned kind,
	    const struct scen_fault *f)
{
	const struct sdev *d = &s->devs[dev];

	if (kind == SCEN_F_NODE_LOST)
		return d->host == f->host;
	if (kind == SCEN_F_NONCOMM_HANG)
		return d->host == f->host && d->gpu == f->gpu;
	return 0;
}

/*
 * Freeze progress at the first hang: the culprit set S (members of the
 * stuck communicator, the idle rank, or the lost host's ranks) stops; every
 * other rank blocks in the first of its communicators (in step order) that
 * contains a member of S, and is idle elsewhere.
 */
static void
scen_hang_freeze(struct scen *s, const struct scen_fault *f)
{
	uint32_t ci, r, i, j, xc = UINT32_MAX;
	uint8_t *inS = calloc(s->ndevs, 1);

	if (inS == NULL)
		return;
	for (ci = 0; ci < s->ncomms; ci++) {
		if (f->base == SCEN_F_COMM_HANG && s->comms[ci].hash == f->comm)
			xc = ci;
	}
	for (r = 0; r < s->ndevs; r++)
		inS[r] = (uint8_t)scen_in_set(s, r, f->base, f);
	if (xc != UINT32_MAX)
		for (r = 0; r < s->comms[xc].nranks; r++)
			inS[s->comms[xc].dev[r]] = 1;
	for (ci = 0; ci < s->ncomms; ci++) {
		struct scomm *c = &s->comms[ci];

		c->intersect = 0;
		for (r = 0; r < c->nranks; r++) {
			struct sacc *a = &s->acc[c->acc + r];

			a->done = c->done;
			a->enter = c->done;
			if (inS[c->dev[r]])
				c->intersect = 1;
		}
	}
	if (xc != UINT32_MAX)
		for (r = 0; r < s->comms[xc].nranks; r++)
			s->acc[s->comms[xc].acc + r].enter++;
	for (r = 0; r < s->ndevs; r++) {
		struct sdev *d = &s->devs[r];
		uint32_t best = UINT32_MAX;

		if (inS[r])
			continue;
		for (i = 0; i < d->ncomms; i++) {
			const struct scomm *c = &s->comms[d->comms[i]];

			if (c->intersect && (best == UINT32_MAX ||
					     c->phase < s->comms[best].phase))
				best = d->comms[i];
		}
		if (best == UINT32_MAX)
			continue;
		for (j = 0; j < s->comms[best].nranks; j++)
			if (s->comms[best].dev[j] == r)
				s->acc[s->comms[best].acc + j].enter++;
	}
	free(inS);
}

/* Stats from n samples' sum, min, max and log moments (lognormal quantiles). */
static void
scen_stats(struct c4m_stats *st, uint32_t n, double sum, double mn, double mx,
	   double lsum, double l2)
{
	double mu, var;

	memset(st, 0, sizeof(*st));
	if (n == 0)
		return;
	mu = lsum / n;
	var = l2 / n - mu * mu;
	if (var < 0)
		var = 0;
	st->count = n;
	st->sum = sum;
	st->min = mn;
	st->max = mx;
	st->p50 = exp(mu);
	st->p90 = fmin(mx, exp(mu + 1.2816 * sqrt(var)));
	st->p99 = fmin(mx, exp(mu + 2.3263 * sqrt(var)));
}

/* Per-chunk transfer statistics of n chunks with median time base. */
static void
scen_xfer(struct scen *s, struct c4m_stats *st, uint64_t n, double base)
{
	const struct scen_noise *nz = &s->p.noise;
	double sg = nz->jitter_sigma, rn = sqrt((double)n);
	uint32_t k, i;
	double extra = 0, smax = 0;

	st->count = n;
	st->p50 = base * exp(sg * 1.2533 / rn * rng_norm(&s->rng));
	st->p90 = base * exp(sg * (1.2816 + 1.71 / rn * rng_norm(&s->rng)));
	st->p99 = base * exp(sg * (2.3263 + 3.7 / rn * rng_norm(&s->rng)));
	st->min = base * exp(-sg * (2.0 + 0.5 * rng_unif(&s->rng)) -
			     sg * sqrt(2.0 * log((double)n)));
	st->max = base * exp(sg * sqrt(2.0 * log((double)n)) +
			     0.3 * sg * rng_norm(&s->rng));
	k = rng_poisson(&s->rng, (double)n * nz->spike_prob);
	for (i = 0; i < k; i++) {
		double m = 3.0 + (nz->spike_max - 3.0) * rng_unif(&s->rng);

		extra += base * (m - 1.0);
		if (base * m > smax)
			smax = base * m;
	}
	if (smax > st->max)
		st->max = smax;
	if (k > n / 100 && smax > st->p99)
		st->p99 = smax;
	st->sum = (double)n * base * exp(0.5 * sg * sg) + extra;
}

/*
 * Produce interval iv's summaries into *in (arrays owned by s, valid until
 * the next call). Intervals must be produced in increasing order starting
 * at 0. Returns 0.
 */
int
scen_interval(struct scen *s, uint32_t iv, struct c4m_input *in)
{
	const struct scen_noise *nz = &s->p.noise;
	double drift = rng_lognorm(&s->rng, nz->drift_sigma);
	uint32_t i, r, ci, st, nc = 0, nw = 0, nx = 0, nh = 0;
	int hung;

	for (i = 0; i < s->nfaults; i++) {
		const struct scen_fault *f = &s->faults[i];

		if (f->base == SCEN_F_NODE_LOST && iv >= f->start)
			s->lost[f->host] = 1;
		if (!s->hung && iv >= f->start &&
		    (f->base == SCEN_F_COMM_HANG ||
		     f->base == SCEN_F_NONCOMM_HANG ||
		     f->base == SCEN_F_NODE_LOST)) {
			scen_hang_freeze(s, f);
			s->hung = 1;
		}
	}
	hung = scen_hang_at(s, iv);
	for (i = 0; i < s->ndevs; i++)
		s->nic_noise[i] = rng_lognorm(&s->rng, nz->host_sigma);
	for (ci = 0; ci < s->ncomms; ci++)
		s->comms[ci].slow = 1.0;
	for (i = 0; i < s->nconns; i++) {
		struct sconn *x = &s->conns[i];
		double fault = scen_conn_fault(s, x, iv), burst = 1.0;
		struct scomm *c = &s->comms[x->comm];

		if (rng_unif(&s->rng) < nz->burst_prob)
			burst = 1.2 + 0.8 * rng_unif(&s->rng);
		s->conn_factor[i] =
			x->hetero * rng_lognorm(&s->rng, nz->link_sigma) *
			s->nic_noise[x->sdev] *
			(x->tr == C4M_TR_NET ? drift : 1.0) * burst * fault;
		if (fault * burst > c->slow)
			c->slow = fault * burst;
	}
	for (i = 0; i < s->nacc; i++)
		scen_acc_reset(&s->acc[i]);
	if (!hung) {
		for (st = 0; st < s->p.steps; st++)
			scen_step(s, iv);
		for (ci = 0; ci < s->ncomms; ci++) {
			struct scomm *c = &s->comms[ci];

			c->done += s->p.steps;
			for (r = 0; r < c->nranks; r++) {
				struct sacc *a = &s->acc[c->acc + r];

				a->done = c->done;
				a->enter = c->done + (rng_unif(&s->rng) <
						      SCEN_SNAPSHOT_SKEW);
			}
		}
	}
	for (ci = 0; ci < s->ncomms; ci++) {
		const struct scomm *c = &s->comms[ci];

		for (r = 0; r < c->nranks; r++) {
			const struct sdev *d = &s->devs[c->dev[r]];
			const struct sacc *a = &s->acc[c->acc + r];
			struct c4m_coll *o;

			if (s->lost[d->host])
				continue;
			o = &s->out_coll[nc++];
			memset(o, 0, sizeof(*o));
			o->comm = c->hash;
			o->rank = r;
			o->algo = C4M_ALGO_RING;
			o->nops = a->n;
			o->bytes = (uint64_t)a->n * (64u << 20);
			scen_stats(&o->kernel, a->n, a->ksum, a->kmin, a->kmax,
				   a->klog, a->klog2);
			scen_stats(&o->gap, a->n, a->gsum, a->gmin, a->gmax,
				   a->glog, a->glog2);
			o->seq_done = a->done;
			o->seq_enter = a->enter;
			o->seq_done_first = a->n ? a->done - a->n + 1 : 0;
			o->seq_enter_first = a->n ? a->done - a->n + 1 : 0;
			o->t_first_ns =
				(int64_t)(s->host_off_ns[d->host] +
					  (double)iv * SCEN_INTERVAL_NS *
						  (1.0 +
						   s->host_drift[d->host]));
			if (!c->net || a->n == 0)
				continue;
			s->out_wait[nw].comm = c->hash;
			s->out_wait[nw].rank = r;
			s->out_wait[nw].nsteps = a->n;
			s->out_wait[nw].recv_wait_us = a->recv;
			s->out_wait[nw].send_peer_wait_us = a->peer;
			s->out_wait[nw].send_gpu_wait_us = 0;
			nw++;
		}
	}
	for (i = 0; i < s->nconns; i++) {
		const struct sconn *x = &s->conns[i];
		const struct scomm *c = &s->comms[x->comm];
		struct c4m_conn *o;
		double per_b = x->tr == C4M_TR_NET ? SCEN_NET_US_PER_B
						   : SCEN_NVLINK_US_PER_B;

		if (s->lost[s->devs[x->sdev].host])
			continue;
		o = &s->out_conn[nx++];
		memset(o, 0, sizeof(*o));
		o->comm = c->hash;
		o->src = x->src;
		o->dst = x->dst;
		o->channels = x->channels;
		o->transport = x->tr;
		o->algo = x->algo;
		if (hung) {
			for (r = 0; r < s->nfaults; r++)
				if (s->faults[r].base == SCEN_F_COMM_HANG &&
				    s->faults[r].comm == c->hash &&
				    s->faults[r].src == x->src &&
				    s->faults[r].dst == x->dst)
					o->pending = x->chunks_step;
			continue;
		}
		o->chunks = (uint64_t)x->chunks_step * s->p.steps;
		o->bytes = o->chunks * x->chunk;
		scen_xfer(s, &o->xfer, o->chunks,
			  x->chunk * per_b * s->conn_factor[i]);
	}
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
	return 0;
}
