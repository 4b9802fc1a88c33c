/*
 * fault.c: the fault model: choosing culprits, which faults are active in
 * an interval, and how far they slow a connection or a GPU, and freezing
 * progress at a hang.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scen_int.h"

uint32_t
fault_intermittent_mask(struct rng *r)
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
const struct sconn *
fault_pick_net_conn(struct scen *s)
{
	uint32_t tries;

	for (tries = 0; tries < 1000000; tries++) {
		const struct sconn *x =
			&s->conns[rng_below(&s->rng, s->nconns)];

		if (x->tr == MATRIX_TR_NET)
			return x;
	}
	return NULL;
}

const struct sconn *
fault_pick_conn_if(struct scen *s, unsigned algo, uint32_t min_rank)
{
	uint32_t tries;

	for (tries = 0; tries < 100000; tries++) {
		const struct sconn *x =
			&s->conns[rng_below(&s->rng, s->nconns)];

		if (x->tr == MATRIX_TR_NET &&
		    (algo == MATRIX_ALGO_COUNT || x->algo == algo) &&
		    x->src >= min_rank && x->dst >= min_rank)
			return x;
	}
	return NULL;
}

double
fault_pareto(struct rng *r, double xm, double alpha, double cap)
{
	double u = 1.0 - rng_unif(r); /* (0, 1] */

	return fmin(cap, xm * pow(u, -1.0 / alpha));
}

static int
fault_active(const struct scen_fault *f, uint32_t iv)
{
	if (iv < f->start || (f->end != 0 && iv >= f->end))
		return 0;
	return (f->on_mask >> ((iv - f->start) % 32)) & 1;
}

double
fault_level(const struct scen_fault *f, uint32_t iv)
{
	double frac = 1.0;

	if (!fault_active(f, iv))
		return 1.0;
	if (f->ramp > 0 && iv - f->start + 1 < f->ramp)
		frac = (double)(iv - f->start + 1) / f->ramp;
	return 1.0 + (f->slowdown - 1.0) * frac;
}

/* Is x a ring neighbour of f's connection in the same communicator? */
static int
fault_ring_next(const struct scen *s, const struct sconn *x,
		const struct scen_fault *f)
{
	return x->algo == MATRIX_ALGO_RING &&
	       s->comms[x->comm].hash == f->comm &&
	       (x->dst == f->src || x->src == f->dst) &&
	       !(x->src == f->src && x->dst == f->dst);
}

double
fault_conn_mix(const struct scen *s, const struct sconn *x, uint32_t iv,
	       double *share)
{
	const struct sdev *a = &s->devs[x->sdev], *b = &s->devs[x->ddev];
	uint32_t i;

	*share = 0;
	for (i = 0; i < s->nfaults; i++) {
		const struct scen_fault *t = &s->faults[i];

		if (t->base == SCEN_F_SLOW_CONN && t->share > 0 &&
		    x->tr == MATRIX_TR_NET && a->host == t->host &&
		    a->gpu == t->gpu && b->host == t->peer_host &&
		    b->gpu == t->peer_gpu && fault_level(t, iv) > 1.0) {
			*share = t->share;
			return fault_level(t, iv);
		}
	}
	return 1.0;
}

/* Slowdown factor of connection x in this interval from active faults. */
double
fault_conn(const struct scen *s, const struct sconn *x, uint32_t iv)
{
	const struct sdev *a = &s->devs[x->sdev], *b = &s->devs[x->ddev];
	double f = 1.0, l;
	uint32_t i;

	for (i = 0; i < s->nfaults; i++) {
		const struct scen_fault *t = &s->faults[i];

		l = fault_level(t, iv);
		if (l == 1.0)
			continue;
		/* backpressure reaches ring neighbours of any transport */
		if (t->base == SCEN_F_SLOW_CONN && t->spread > 0 &&
		    fault_ring_next(s, x, t))
			f *= 1.0 + (l - 1.0) * t->spread;
		if (x->tr != MATRIX_TR_NET)
			continue;
		if (t->base == SCEN_F_SLOW_CONN && t->share == 0 &&
		    a->host == t->host && a->gpu == t->gpu &&
		    b->host == t->peer_host && b->gpu == t->peer_gpu)
			f *= l;
		if (t->base == SCEN_F_SLOW_TX && a->host == t->host &&
		    a->gpu == t->gpu)
			f *= l;
		if (t->base == SCEN_F_SLOW_RX && b->host == t->host &&
		    b->gpu == t->gpu)
			f *= l;
		if (t->base == SCEN_F_SLOW_HOST_NIC &&
		    (a->host == t->host || b->host == t->host))
			f *= l;
	}
	return f;
}

/* Compute slowdown of device dev in interval iv from active faults. */
double
fault_gpu(const struct scen *s, uint32_t dev, uint32_t iv)
{
	const struct sdev *d = &s->devs[dev];
	double f = 1.0;
	uint32_t i;

	for (i = 0; i < s->nfaults; i++) {
		const struct scen_fault *t = &s->faults[i];

		if (t->base == SCEN_F_SLOW_GPU && d->host == t->host &&
		    d->gpu == t->gpu)
			f *= fault_level(t, iv);
		if (t->base == SCEN_F_SLOW_HOST && d->host == t->host)
			f *= fault_level(t, iv);
	}
	return f;
}

/* 1 when a hang or node loss is active in interval iv. */
static int
fault_hang_at(const struct scen *s, uint32_t iv)
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

static int
fault_in_set(const struct scen *s, uint32_t dev, unsigned kind,
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
fault_hang_freeze(struct scen *s, const struct scen_fault *f)
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
		inS[r] = (uint8_t)fault_in_set(s, r, f->base, f);
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
		for (r = 0; r < s->comms[xc].nranks; r++) {
			struct sacc *a = &s->acc[s->comms[xc].acc + r];

			a->enter++;
			/* partial hang: the first ranks got past op k */
			if (r < f->partial) {
				a->done++;
				a->enter += f->moved_on;
			}
		}
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

/*
 * Start interval iv's faults: hosts lost by now go silent for good, and the
 * first hang or node loss to start freezes progress (once per job).
 * Returns 1 when a hang or node loss is active in iv, else 0. Draws
 * nothing from the job's random stream.
 */
int
fault_advance(struct scen *s, uint32_t iv)
{
	uint32_t i;

	for (i = 0; i < s->nfaults; i++) {
		const struct scen_fault *f = &s->faults[i];

		if (f->base == SCEN_F_NODE_LOST && iv >= f->start)
			s->lost[f->host] = 1;
		if (!s->hung && iv >= f->start &&
		    (f->base == SCEN_F_COMM_HANG ||
		     f->base == SCEN_F_NONCOMM_HANG ||
		     f->base == SCEN_F_NODE_LOST)) {
			fault_hang_freeze(s, f);
			s->hung = 1;
		}
	}
	return fault_hang_at(s, iv);
}
