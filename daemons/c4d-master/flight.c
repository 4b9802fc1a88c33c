/*
 * flight.c - one-way chunk delivery times (flight.h).
 *
 * Per connection: a direct-mapped table of ops one side has reported and
 * the other not yet (by ordinal), the delivery times matched since the
 * last flight_take, and a ring of per-interval minima for the floor.
 * Connections are found through a u64map keyed by (comm, src, dst).
 */
#include "flight.h"

#include <math.h>
#include <stdlib.h>

#include "mix.h"
#include "u64map.h"

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
	size_t n, cap;
	struct u64map map; /* key of (comm, src, dst) -> index into conns */
	struct flight_stats st;
};

static uint64_t
flight_key(uint64_t comm, uint32_t src, uint32_t dst)
{
	return mix64(comm) ^ ((uint64_t)src << 32 | dst);
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
	u64map_free(&f->map);
	free(f);
}

/*
 * The connection's state; NULL when absent (and not created), without
 * memory, or in the unlikely case that another connection has its key.
 */
static struct flight_conn *
flight_conn(struct flight *f, uint64_t comm, uint32_t src, uint32_t dst,
	    int create)
{
	uint64_t key = flight_key(comm, src, dst);
	struct flight_conn *c, **nc;
	uint32_t idx;
	size_t j;

	if (u64map_get(&f->map, key, &idx) == 0) {
		c = f->conns[idx];
		return c->comm == comm && c->src == src && c->dst == dst ? c
									 : NULL;
	}
	if (!create)
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
	if (c == NULL || u64map_put(&f->map, key, (uint32_t)f->n) < 0) {
		free(c);
		return NULL;
	}
	c->comm = comm;
	c->src = src;
	c->dst = dst;
	for (j = 0; j < FLIGHT_BASE_TICKS; j++)
		c->base[j] = NAN;
	f->conns[f->n++] = c;
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
