/*
 * fixture.h: hand-built inputs for the lib/matrix unit tests. A tiny job
 * of N hosts with one GPU and one NIC port each; every test builds its
 * connections and per-interval summaries here, with a small deterministic
 * jitter so robust spreads are not zero.
 */
#ifndef FIXTURE_H
#define FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "matrix.h"

#define FX_MAX_CONN  256
#define FX_MAX_RANK  64
#define FX_CHUNK     (1u << 20)
#define FX_CHUNKS    64
#define FX_US_PER_MB 40.0

struct fx {
	uint64_t comm;
	uint32_t nranks;
	struct matrix_rank_loc loc[FX_MAX_RANK];
	struct matrix_conn conn[FX_MAX_CONN];
	double slow[FX_MAX_CONN]; /* factor on conn i this interval */
	size_t nconn;
	struct matrix_coll coll[FX_MAX_RANK];
	struct matrix_wait wait[FX_MAX_RANK];
	uint64_t seed;
	double jit;	   /* uniform jitter amplitude (default 0.01) */
	int chunks_follow; /* a slowed connection moves fewer chunks */
};

static inline double
fx_jitter(struct fx *f)
{
	f->seed = f->seed * 6364136223846793005ull + 1442695040888963407ull;
	return 1.0 +
	       (f->jit > 0 ? f->jit : 0.01) *
		       ((double)(f->seed >> 11) / (double)(1ull << 53) - 0.5);
}

/* One rank per host; ranks 0..n-1 on hosts 0..n-1, GPU 0, NIC 0. */
static inline void
fx_init(struct fx *f, uint32_t nranks, uint64_t comm)
{
	uint32_t r;

	memset(f, 0, sizeof(*f));
	f->comm = comm;
	f->nranks = nranks;
	f->seed = comm;
	for (r = 0; r < nranks; r++)
		f->loc[r].host = r;
}

static inline void
fx_conn(struct fx *f, uint32_t src, uint32_t dst, uint8_t algo)
{
	struct matrix_conn *c = &f->conn[f->nconn++];

	memset(c, 0, sizeof(*c));
	c->comm = f->comm;
	c->src = src;
	c->dst = dst;
	c->algo = algo;
	c->transport = MATRIX_TR_NET;
	c->channels = 1;
}

static inline void
fx_ring(struct fx *f)
{
	uint32_t r;

	for (r = 0; r < f->nranks; r++)
		fx_conn(f, r, (r + 1) % f->nranks, MATRIX_ALGO_RING);
}

/* Heap-ordered binary tree, edges both ways. */
static inline void
fx_tree(struct fx *f)
{
	uint32_t r;

	for (r = 1; r < f->nranks; r++) {
		fx_conn(f, r, (r - 1) / 2, MATRIX_ALGO_TREE);
		fx_conn(f, (r - 1) / 2, r, MATRIX_ALGO_TREE);
	}
}

/* Fill this interval's transfer statistics (slow[] applied, then reset). */
static inline void
fx_fill(struct fx *f, struct matrix_input *in, uint64_t iv)
{
	size_t i;

	for (i = 0; i < f->nconn; i++) {
		struct matrix_conn *c = &f->conn[i];
		double s = f->slow[i] > 0 ? f->slow[i] : 1.0;
		double t = FX_US_PER_MB * s * fx_jitter(f);

		c->chunks = f->chunks_follow ? (uint64_t)(FX_CHUNKS / s)
					     : FX_CHUNKS;
		c->bytes = (uint64_t)c->chunks * FX_CHUNK;
		c->pending = 0;
		c->xfer.count = c->chunks;
		c->xfer.p50 = t;
		c->xfer.p90 = t * 1.3;
		c->xfer.p99 = t * 1.8;
		c->xfer.min = t * 0.7;
		c->xfer.max = t * 2.5;
		c->xfer.sum = t * c->chunks * 1.05;
		f->slow[i] = 0;
	}
	memset(in, 0, sizeof(*in));
	in->interval = iv;
	in->conn = f->conn;
	in->nconn = f->nconn;
}

/* Slow every connection matching (src or any, dst or any) by factor. */
static inline void
fx_slow(struct fx *f, int64_t src, int64_t dst, double factor)
{
	size_t i;

	for (i = 0; i < f->nconn; i++)
		if ((src < 0 || f->conn[i].src == (uint32_t)src) &&
		    (dst < 0 || f->conn[i].dst == (uint32_t)dst))
			f->slow[i] = factor;
}

/* Find the first event of kind in state among ev[0..n), or NULL. */
static inline const struct matrix_event *
fx_find(const struct matrix_event *ev, size_t n, unsigned kind, unsigned state)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ev[i].kind == kind && ev[i].state == state)
			return &ev[i];
	return NULL;
}

#endif /* FIXTURE_H */
