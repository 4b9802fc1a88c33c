/*
 * flight.c - one-way chunk delivery times (flight.h).
 *
 * Per connection: a direct-mapped table of ops one side has reported and
 * the other not yet (by ordinal), the delivery times matched since the
 * last flight_take, and a ring of per-interval minima for the floor.
 * Connections live in an open-addressing table keyed by (comm, src, dst).
 */
#include "flight.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct flight_op {
	uint64_t seq; /* 0: free */
	uint64_t t;
	uint32_t chunks;
	uint8_t receiver;
};

struct flight_conn {
	uint64_t comm;
	uint32_t src, dst;
	struct flight_op pend[FLIGHT_PENDING];
	double got[FLIGHT_SAMPLES];
	uint32_t ngot;
	double base[FLIGHT_BASE_TICKS]; /* per-interval minima; NAN: none */
	uint32_t bpos;
};

struct flight {
	struct flight_conn **conns;
	uint32_t *slot; /* index + 1 into conns; 0: free */
	size_t n, cap, scap;
	struct flight_stats st;
};

static uint64_t
flight_hash(uint64_t comm, uint32_t src, uint32_t dst)
{
	uint64_t x = comm ^ ((uint64_t)src << 32 | dst) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}

struct flight *
flight_new(void)
{
	return calloc(1, sizeof(struct flight));
}

void
flight_free(struct flight *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->conns[i]);
	free(f->conns);
	free(f->slot);
	free(f);
}

static int
flight_rehash(struct flight *f)
{
	size_t cap = f->scap ? f->scap * 2 : 64, i, j;
	uint32_t *slot = calloc(cap, sizeof(*slot));

	if (slot == NULL)
		return -1;
	for (i = 0; i < f->n; i++) {
		const struct flight_conn *c = f->conns[i];

		j = flight_hash(c->comm, c->src, c->dst) & (cap - 1);
		while (slot[j] != 0)
			j = (j + 1) & (cap - 1);
		slot[j] = (uint32_t)i + 1;
	}
	free(f->slot);
	f->slot = slot;
	f->scap = cap;
	return 0;
}

static struct flight_conn *
flight_conn(struct flight *f, uint64_t comm, uint32_t src, uint32_t dst,
	    int create)
{
	struct flight_conn *c, **nc;
	size_t j;

	if (f->scap > 0) {
		j = flight_hash(comm, src, dst) & (f->scap - 1);
		for (; f->slot[j] != 0; j = (j + 1) & (f->scap - 1)) {
			c = f->conns[f->slot[j] - 1];
			if (c->comm == comm && c->src == src && c->dst == dst)
				return c;
		}
	}
	if (!create)
		return NULL;
	if ((f->n + 1) * 2 > f->scap && flight_rehash(f) < 0)
		return NULL;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;

		nc = realloc(f->conns, cap * sizeof(*nc));
		if (nc == NULL)
			return NULL;
		f->conns = nc;
		f->cap = cap;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->comm = comm;
	c->src = src;
	c->dst = dst;
	for (j = 0; j < FLIGHT_BASE_TICKS; j++)
		c->base[j] = NAN;
	f->conns[f->n] = c;
	j = flight_hash(comm, src, dst) & (f->scap - 1);
	while (f->slot[j] != 0)
		j = (j + 1) & (f->scap - 1);
	f->slot[j] = (uint32_t)++f->n;
	f->st.conns = f->n;
	return c;
}

int
flight_add(struct flight *f, uint64_t comm, uint32_t src, uint32_t dst,
	   int receiver, const uint64_t *seq, const uint32_t *chunks,
	   const uint64_t *mean_ns, size_t n)
{
	struct flight_conn *c;
	struct flight_op *o;
	size_t i;

	if (n == 0)
		return 0;
	c = flight_conn(f, comm, src, dst, 1);
	if (c == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (seq[i] == 0 || chunks[i] == 0)
			continue;
		o = &c->pend[seq[i] % FLIGHT_PENDING];
		if (o->seq == seq[i] && o->receiver != (receiver != 0)) {
			if (o->chunks != chunks[i]) {
				f->st.mismatch++;
			} else {
				uint64_t ts = receiver ? o->t : mean_ns[i];
				uint64_t tr = receiver ? mean_ns[i] : o->t;

				f->st.matched++;
				if (c->ngot < FLIGHT_SAMPLES)
					c->got[c->ngot++] =
						(double)tr - (double)ts;
			}
			o->seq = 0;
			continue;
		}
		if (o->seq != 0)
			f->st.unmatched++;
		o->seq = seq[i];
		o->t = mean_ns[i];
		o->chunks = chunks[i];
		o->receiver = receiver != 0;
	}
	return 0;
}

static int
flight_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
flight_take(struct flight *f, uint64_t comm, uint32_t src, uint32_t dst,
	    double *excess_ns)
{
	struct flight_conn *c = flight_conn(f, comm, src, dst, 0);
	double med, floor;
	uint32_t i;

	if (c == NULL || c->ngot == 0)
		return 0;
	qsort(c->got, c->ngot, sizeof(c->got[0]), flight_cmp);
	med = c->ngot % 2 ? c->got[c->ngot / 2]
			  : (c->got[c->ngot / 2 - 1] + c->got[c->ngot / 2]) / 2;
	c->bpos = (c->bpos + 1) % FLIGHT_BASE_TICKS;
	c->base[c->bpos] = c->got[0];
	floor = c->got[0];
	for (i = 0; i < FLIGHT_BASE_TICKS; i++)
		if (!isnan(c->base[i]) && c->base[i] < floor)
			floor = c->base[i];
	c->ngot = 0;
	*excess_ns = med > floor ? med - floor : 0;
	return 1;
}

void
flight_get_stats(const struct flight *f, struct flight_stats *out)
{
	*out = f->st;
}
