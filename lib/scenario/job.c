/*
 * job.c: the job model: devices, communicators and their connections for
 * each layout of scen.h.
 */
#include <stdlib.h>
#include <string.h>

#include "scen_int.h"

/* Grow *p to hold need elements of elem bytes (doubling). 0 or -1. */
static int
job_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
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
job_dev(const struct scen *s, uint32_t host, uint32_t gpu)
{
	return host * SCEN_GPUS_PER_HOST + gpu;
}

/* Add a communicator over devs[0..n) (rank = index). Returns index or -1. */
static int
job_comm_add(struct scen *s, uint8_t phase, uint32_t n, const uint32_t *devs,
	     double compute_us, double coll_us)
{
	struct scomm *c;
	uint32_t i;

	if (job_grow((void **)&s->comms, &s->ccomms, s->ncomms + 1,
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
job_conn_find(struct scen *s, uint32_t ci, uint32_t src, uint32_t dst,
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
job_conn_add(struct scen *s, uint32_t ci, uint32_t src, uint32_t dst,
	     uint8_t algo, uint64_t channels, uint32_t chunk,
	     uint32_t chunks_step)
{
	struct scomm *c = &s->comms[ci];
	struct sconn *x;
	uint32_t i;

	if (src == dst)
		return 0;
	/* one connection per (src, dst, algo): merge channel sets */
	if (job_conn_find(s, ci, src, dst, algo, &i) < 0)
		return -1;
	if (s->cvals[i] != 0) {
		s->conns[s->cvals[i] - 1].channels |= channels;
		return 0;
	}
	s->cvals[i] = s->nconns + 1;
	if (job_grow((void **)&s->conns, &s->cconns, s->nconns + 1,
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
	x->tr = s->devs[x->sdev].host == s->devs[x->ddev].host
			? MATRIX_TR_NVLINK
			: MATRIX_TR_NET;
	if (x->tr == MATRIX_TR_NET)
		c->net = 1;
	x->channels = channels;
	x->chunk = chunk;
	x->chunks_step = chunks_step;
	x->hetero = rng_lognorm(&s->rng, s->p.noise.hetero_sigma);
	return 0;
}

static int
job_ring(struct scen *s, uint32_t ci, uint64_t ch)
{
	uint32_t n = s->comms[ci].nranks, i;

	for (i = 0; i < n; i++)
		if (job_conn_add(s, ci, i, (i + 1) % n, MATRIX_ALGO_RING, ch,
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
job_tree(struct scen *s, uint32_t ci, const uint32_t *ranks, uint32_t n,
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

			if (job_conn_add(s, ci, ranks[c], ranks[pa],
					 MATRIX_ALGO_TREE, ch, SCEN_TREE_CHUNK,
					 32) < 0 ||
			    job_conn_add(s, ci, ranks[pa], ranks[c],
					 MATRIX_ALGO_TREE, ch, SCEN_TREE_CHUNK,
					 32) < 0)
				return -1;
		}
	}
	return 0;
}

/* Tensor parallel: one comm per host over its 8 GPUs, NVLink ring (+ mesh). */
static int
job_tp(struct scen *s, uint8_t phase, int mesh)
{
	uint32_t h, g, k, devs[SCEN_GPUS_PER_HOST];
	int ci;

	for (h = 0; h < s->nhosts; h++) {
		for (g = 0; g < SCEN_GPUS_PER_HOST; g++)
			devs[g] = job_dev(s, h, g);
		ci = job_comm_add(s, phase, SCEN_GPUS_PER_HOST, devs, 60e3,
				  6e3);
		if (ci < 0)
			return -1;
		for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
			if (job_conn_add(s, (uint32_t)ci, g,
					 (g + 1) % SCEN_GPUS_PER_HOST,
					 MATRIX_ALGO_RING, 0xff, SCEN_NVL_CHUNK,
					 32) < 0)
				return -1;
			for (k = 0; mesh && k < SCEN_GPUS_PER_HOST; k++)
				if (job_conn_add(s, (uint32_t)ci, g, k,
						 MATRIX_ALGO_P2P, 0x1,
						 SCEN_NVL_CHUNK, 16) < 0)
					return -1;
		}
	}
	return 0;
}

/* DP rails: for each GPU index, one comm over hosts h0, h0+step, ... */
static int
job_dp(struct scen *s, uint8_t phase, uint32_t h0, uint32_t nh, int tree)
{
	uint32_t g, i, *devs, *ranks;
	int ci, rc = -1;

	devs = malloc((size_t)nh * sizeof(*devs));
	ranks = malloc((size_t)nh * sizeof(*ranks));
	if (devs == NULL || ranks == NULL)
		goto out;
	for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
		for (i = 0; i < nh; i++) {
			devs[i] = job_dev(s, h0 + i, g);
			ranks[i] = i;
		}
		ci = job_comm_add(s, phase, nh, devs, 80e3, 30e3);
		if (ci < 0 || job_ring(s, (uint32_t)ci, 0x3) < 0)
			goto out;
		if (tree && job_tree(s, (uint32_t)ci, ranks, nh, -1) < 0)
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
job_layout_pp(struct scen *s)
{
	uint32_t hs = s->nhosts / SCEN_PP_STAGES, st, h, g, pair[2];
	int ci;

	if (job_tp(s, 0, 0) < 0)
		return -1;
	for (st = 0; st + 1 < SCEN_PP_STAGES; st++) {
		for (h = 0; h < hs; h++) {
			for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
				pair[0] = job_dev(s, st * hs + h, g);
				pair[1] = job_dev(s, (st + 1) * hs + h, g);
				ci = job_comm_add(s, (uint8_t)(1 + (st & 1)), 2,
						  pair, 20e3, 3e3);
				if (ci < 0 ||
				    job_conn_add(s, (uint32_t)ci, 0, 1,
						 MATRIX_ALGO_P2P, 0x1,
						 SCEN_P2P_CHUNK, 32) < 0 ||
				    job_conn_add(s, (uint32_t)ci, 1, 0,
						 MATRIX_ALGO_P2P, 0x1,
						 SCEN_P2P_CHUNK, 32) < 0)
					return -1;
			}
		}
	}
	for (st = 0; st < SCEN_PP_STAGES; st++)
		if (job_dp(s, 3, st * hs, hs, 1) < 0)
			return -1;
	return 0;
}

/*
 * One DP comm over all ranks: 8 channels, channel c's ring runs through
 * the GPUs of each host over NVLink and leaves it from a different GPU's
 * NIC; one tree over hosts per channel on NIC c.
 */
static int
job_layout_flat(struct scen *s)
{
	uint32_t n = s->ndevs, H = s->nhosts, h, c, *all, *ranks;
	int ci, rc = -1;

	all = malloc((size_t)n * sizeof(*all));
	ranks = malloc((size_t)H * sizeof(*ranks));
	if (all == NULL || ranks == NULL)
		goto out;
	for (h = 0; h < n; h++)
		all[h] = h;
	ci = job_comm_add(s, 0, n, all, 100e3, 40e3);
	if (ci < 0)
		goto out;
	for (c = 0; c < SCEN_GPUS_PER_HOST; c++) {
		for (h = 0; h < H; h++) {
			uint32_t g, first = c, last = (c + 7) % 8;

			for (g = 0; g < 7; g++)
				if (job_conn_add(s, (uint32_t)ci,
						 h * 8 + (first + g) % 8,
						 h * 8 + (first + g + 1) % 8,
						 MATRIX_ALGO_RING, 1ull << c,
						 SCEN_RING_CHUNK, 64) < 0)
					goto out;
			if (H > 1 && job_conn_add(s, (uint32_t)ci, h * 8 + last,
						  ((h + 1) % H) * 8 + c,
						  MATRIX_ALGO_RING, 1ull << c,
						  SCEN_RING_CHUNK, 64) < 0)
				goto out;
			ranks[h] = h * 8 + c;
		}
		if (H > 1 && job_tree(s, (uint32_t)ci, ranks, H, c & 1) < 0)
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
job_layout_ep(struct scen *s)
{
	uint32_t b, g, i, j, devs[SCEN_EP_SIZE];
	int ci;

	if (job_tp(s, 0, 1) < 0)
		return -1;
	for (b = 0; b + SCEN_EP_SIZE <= s->nhosts; b += SCEN_EP_SIZE) {
		for (g = 0; g < SCEN_GPUS_PER_HOST; g++) {
			for (i = 0; i < SCEN_EP_SIZE; i++)
				devs[i] = job_dev(s, b + i, g);
			ci = job_comm_add(s, 1, SCEN_EP_SIZE, devs, 30e3, 8e3);
			if (ci < 0)
				return -1;
			for (i = 0; i < SCEN_EP_SIZE; i++)
				for (j = 0; j < SCEN_EP_SIZE; j++)
					if (job_conn_add(s, (uint32_t)ci, i, j,
							 MATRIX_ALGO_P2P, 0x1,
							 SCEN_EP_CHUNK, 16) < 0)
						return -1;
		}
	}
	return job_dp(s, 2, 0, s->nhosts, 1);
}

/* Build the communicators and connections of the chosen layout. */
int
job_build(struct scen *s)
{
	switch (s->p.layout) {
	case SCEN_L_TP_DP:
		return job_tp(s, 0, 0) < 0 ? -1 : job_dp(s, 1, 0, s->nhosts, 1);
	case SCEN_L_TP_PP_DP:
		return job_layout_pp(s);
	case SCEN_L_DP_FLAT:
		return job_layout_flat(s);
	case SCEN_L_TP_EP_DP:
		return job_layout_ep(s);
	case SCEN_L_DP_RING:
		return job_tp(s, 0, 0) < 0 ? -1 : job_dp(s, 1, 0, s->nhosts, 0);
	}
	return -1;
}
