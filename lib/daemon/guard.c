/*
 * guard.c - per-source admission and failed-login throttling.
 */
#include "guard.h"

#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "fnv.h"
#include "u64map.h"

struct guard_src {
	uint64_t key;
	int64_t seen;	     /* last time anything happened */
	int64_t last_fail;   /* last failed hello */
	int64_t next_turn;   /* earliest time the next hello is checked */
	int64_t logged;	     /* last line logged; -1: never */
	uint64_t suppressed; /* lines left out since */
	uint32_t unauth;     /* connections awaiting their hello */
	uint32_t fails;	     /* failed hellos since the source was quiet */
	int used;
};

struct guard {
	struct u64map index; /* key -> slot in v */
	struct guard_src *v;
	size_t n, cap; /* slots used at some time, allocated */
	uint32_t *free_slots;
	size_t nfree;
	uint64_t live;
};

struct guard *
guard_new(void)
{
	return calloc(1, sizeof(struct guard));
}

void
guard_free(struct guard *g)
{
	if (g == NULL)
		return;
	u64map_free(&g->index);
	free(g->v);
	free(g->free_slots);
	free(g);
}

uint64_t
guard_key(const struct sockaddr *sa, socklen_t salen)
{
	(void)salen;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		return fnv1a64(FNV1A64_INIT, &in->sin_addr,
			       sizeof(in->sin_addr));
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		return fnv1a64(FNV1A64_INIT, &in6->sin6_addr,
			       sizeof(in6->sin6_addr));
	}
	return fnv1a64_str(FNV1A64_INIT, "unix");
}

static void
guard_drop(struct guard *g, uint32_t slot)
{
	struct guard_src *e = &g->v[slot];

	u64map_del(&g->index, e->key);
	e->used = 0;
	g->free_slots[g->nfree++] = slot;
	g->live--;
}

/*
 * Frees a slot when the table is full: the source seen longest ago with
 * no connection waiting.  0, or -1 when every source has one.
 */
static int
guard_evict(struct guard *g)
{
	size_t best = g->n;

	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].used && g->v[i].unauth == 0 &&
		    (best == g->n || g->v[i].seen < g->v[best].seen))
			best = i;
	if (best == g->n)
		return -1;
	guard_drop(g, (uint32_t)best);
	return 0;
}

/* The entry of src, created when create is set; NULL when none. */
static struct guard_src *
guard_get(struct guard *g, uint64_t src, int create, int64_t now)
{
	struct guard_src *e;
	uint32_t slot;

	if (u64map_get(&g->index, src, &slot) == 0)
		return &g->v[slot];
	if (!create)
		return NULL;
	if (g->live >= GUARD_SOURCES_MAX && guard_evict(g) < 0)
		return NULL;
	if (g->nfree > 0) {
		slot = g->free_slots[--g->nfree];
	} else {
		if (g->n == g->cap) {
			size_t cap = g->cap ? g->cap * 2 : 64;
			struct guard_src *v = realloc(g->v, cap * sizeof(*v));
			uint32_t *f;

			if (v == NULL)
				return NULL;
			g->v = v;
			f = realloc(g->free_slots, cap * sizeof(*f));
			if (f == NULL)
				return NULL;
			g->free_slots = f;
			g->cap = cap;
		}
		slot = (uint32_t)g->n++;
	}
	if (u64map_put(&g->index, src, slot) < 0) {
		g->free_slots[g->nfree++] = slot;
		return NULL;
	}
	e = &g->v[slot];
	memset(e, 0, sizeof(*e));
	e->key = src;
	e->used = 1;
	e->logged = -1;
	e->seen = now;
	g->live++;
	return e;
}

/* Forgets the failures of a source quiet for lim->forget_ms. */
static void
guard_age(struct guard_src *e, const struct guard_limits *lim, int64_t now)
{
	if (e->fails > 0 && now - e->last_fail >= lim->forget_ms) {
		e->fails = 0;
		e->next_turn = 0;
	}
	e->seen = now;
}

/* Drops an entry that holds nothing worth remembering. */
static void
guard_tidy(struct guard *g, struct guard_src *e)
{
	if (e->unauth == 0 && e->fails == 0 && e->suppressed == 0)
		guard_drop(g, (uint32_t)(e - g->v));
}

int
guard_open(struct guard *g, uint64_t src, const struct guard_limits *lim,
	   int64_t now)
{
	struct guard_src *e = guard_get(g, src, 1, now);

	if (e == NULL)
		return -1;
	guard_age(e, lim, now);
	if ((int64_t)e->unauth >= lim->per_source)
		return -1;
	e->unauth++;
	return 0;
}

void
guard_done(struct guard *g, uint64_t src)
{
	struct guard_src *e = guard_get(g, src, 0, 0);

	if (e == NULL || e->unauth == 0)
		return;
	e->unauth--;
	guard_tidy(g, e);
}

/* The delay after the source's failures: 0 within the free ones. */
static int64_t
guard_delay(const struct guard_src *e, const struct guard_limits *lim)
{
	int64_t d = lim->delay_ms;

	if ((int64_t)e->fails < lim->fail_free)
		return 0;
	for (int64_t k = lim->fail_free; k < (int64_t)e->fails; k++) {
		if (d >= lim->delay_max_ms)
			break;
		d *= 2;
	}
	return d < lim->delay_max_ms ? d : lim->delay_max_ms;
}

int64_t
guard_turn(struct guard *g, uint64_t src, const struct guard_limits *lim,
	   int64_t now)
{
	struct guard_src *e = guard_get(g, src, 0, now);
	int64_t delay, at;

	if (e == NULL)
		return 0;
	guard_age(e, lim, now);
	delay = guard_delay(e, lim);
	if (delay == 0)
		return 0;
	at = e->next_turn > now ? e->next_turn : now;
	if (at - now > lim->delay_max_ms)
		return -1;
	e->next_turn = at + delay;
	return at - now;
}

int64_t
guard_failed(struct guard *g, uint64_t src, const struct guard_limits *lim,
	     int64_t now)
{
	struct guard_src *e = guard_get(g, src, 1, now);
	int64_t delay;

	if (e == NULL)
		return lim->delay_ms;
	guard_age(e, lim, now);
	if (e->fails < GUARD_FAILS_MAX)
		e->fails++;
	e->last_fail = now;
	delay = guard_delay(e, lim);
	if (delay > 0 && e->next_turn < now + delay)
		e->next_turn = now + delay;
	return delay;
}

int
guard_log(struct guard *g, uint64_t src, const struct guard_limits *lim,
	  int64_t now, uint64_t *suppressed)
{
	struct guard_src *e = guard_get(g, src, 1, now);

	*suppressed = 0;
	if (e == NULL)
		return 1;
	if (e->logged >= 0 && now - e->logged < lim->log_interval_ms) {
		e->suppressed++;
		return 0;
	}
	*suppressed = e->suppressed;
	e->suppressed = 0;
	e->logged = now;
	return 1;
}

uint64_t
guard_sources(const struct guard *g)
{
	return g->live;
}
