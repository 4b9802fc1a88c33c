/*
 * persist.c: candidates become events. Every detector reports candidate
 * anomalies per interval under a key naming the kind and the culprit; this
 * layer keeps a short history per key and decides: OPEN when the candidate
 * was seen with strong evidence (score >= z_strong) in persist_k of the
 * last persist_n intervals, or at all in weak_k of the last weak_n, or
 * strong in flap_k of the last flap_n (a fault that flaps; at once for
 * hangs and lost nodes, whose detectors apply their own timeout). Weak evidence
 * waits longer because among hundreds of thousands of links a z of 4 to 6 twice
 * in a row happens by chance; a real fault keeps it up. UPDATED when the
 * slowdown moved by update_delta, RESOLVED after resolve_n clean intervals, or
 * twice the longest clean run seen inside the event if that is longer (at most
 * resolve_max), so an intermittent fault stays one event. One key has at most
 * one open event; the event id is the key. What is published (and with which
 * action) the final pass decides (domain.c).
 */
#include <math.h>
#include <string.h>

#include "mix.h"
#include "matrix_int.h"

/* One splitmix64 step from state x (the ids' mixing; they must not change). */
static uint64_t
persist_mix(uint64_t x)
{
	return splitmix64(&x);
}

/*
 * Stable key (and event id) for a kind and up to two physical identities.
 * UINT64_MAX is never returned (it once was the map's empty key; ids stay
 * what they were).
 */
uint64_t
persist_key(unsigned kind, uint64_t a, uint64_t b)
{
	uint64_t k =
		persist_mix(persist_mix((uint64_t)kind * 0x100000001b3ull ^ a) ^
			    (b * 0x9e3779b97f4a7c15ull + 1));

	return k == UINT64_MAX ? k - 1 : k;
}

/* Fold a second observation e of one key into dst (cells, score). */
static void
persist_merge(struct matrix_event *dst, const struct matrix_event *e)
{
	uint8_t i, w;

	dst->ncells_total += e->ncells_total;
	dst->evidence.accumulated |= e->evidence.accumulated;
	if (e->score > dst->score)
		dst->score = e->score;
	for (i = 0; i < e->ncells; i++) {
		if (dst->ncells < MATRIX_MAX_CELLS) {
			dst->cells[dst->ncells++] = e->cells[i];
			continue;
		}
		/* keep the strongest cells: replace the weakest */
		for (w = 0; w < dst->ncells; w++)
			if (dst->cells[w].ratio < e->cells[i].ratio)
				break;
		if (w < dst->ncells) {
			uint8_t lo = 0, j;

			for (j = 1; j < dst->ncells; j++)
				if (dst->cells[j].ratio < dst->cells[lo].ratio)
					lo = j;
			dst->cells[lo] = e->cells[i];
		}
	}
}

/*
 * Record candidate e under key for the current interval. Several
 * observations of one key in an interval are merged (cells, strongest
 * score, mean log slowdown). flags: PERSIST_IMMEDIATE opens without
 * waiting for persistence; PERSIST_STRONG counts the evidence as strong
 * (accumulated over intervals); PERSIST_WEAK counts it as weak whatever
 * its score (an effect too small to act on quickly); PERSIST_PRIOR says
 * a filter held the evidence back an interval, which then counts too.
 * pr (or NULL) says
 * where the culprit is
 * observed. Returns 0 or -1 on memory exhaustion.
 */
int
persist_observe(struct matrix *m, uint64_t key, const struct matrix_event *e,
		unsigned flags, const struct probe *pr)
{
	struct track *t;
	uint32_t idx;

	if (u64map_get(&m->trk_map, key, &idx) < 0) {
		if (mem_grow((void **)&m->trk, &m->ctrk, m->ntrk + 1,
			     sizeof(*m->trk)) < 0)
			return -1;
		if (mem_map_put(&m->trk_map, key, m->ntrk) < 0)
			return -1;
		idx = m->ntrk++;
		t = &m->trk[idx];
		memset(t, 0, sizeof(*t));
		t->key = key;
		t->live = 1;
	}
	t = &m->trk[idx];
	t->immediate = (flags & PERSIST_IMMEDIATE) != 0;
	if (flags & PERSIST_STRONG)
		t->acc_strong = 1;
	if (flags & PERSIST_PRIOR)
		t->prior = 1;
	if (pr != NULL)
		t->probe = *pr;
	if (!t->seen)
		t->sscore = 0;
	if (!(flags & PERSIST_WEAK) && e->score > t->sscore)
		t->sscore = e->score;
	if (!t->seen) {
		uint64_t first = t->ev.first_interval;
		uint8_t state = t->ev.state, act = t->ev.action;
		struct matrix_evidence ex = t->ev.evidence;

		t->seen = 1;
		t->ev = *e;
		t->ev.id = key;
		t->ev.first_interval = first;
		t->ev.state = state;
		if (t->open) {
			/* what it opened with, and its published action */
			t->ev.evidence = ex;
			t->ev.action = act;
		}
		t->sum_r = log(e->slowdown > 0 ? e->slowdown : 1.0);
		t->hits_r = 1;
		return 0;
	}
	persist_merge(&t->ev, e);
	t->sum_r += log(e->slowdown > 0 ? e->slowdown : 1.0);
	t->hits_r++;
	return 0;
}

unsigned
persist_popcount(uint64_t x)
{
	unsigned n = 0;

	while (x) {
		x &= x - 1;
		n++;
	}
	return n;
}

/* Was the culprit of track t observed (clean or not) this interval? */
static int
persist_sampled(const struct matrix *m, const struct track *t)
{
	const struct probe *pr = &t->probe;
	uint32_t stamp = (uint32_t)(m->iv + 1);

	switch (pr->kind) {
	case PROBE_LINK:
		return m->links[pr->a].stamp == stamp;
	case PROBE_SIDE:
		return m->eps[pr->a].sd[pr->b].n > 0; /* reset each interval */
	case PROBE_RANK: {
		const struct crank *rs = &m->comms[pr->a].rs[pr->b];

		return rs->seen_iv == m->iv + 1 && rs->gn > 0 && rs->kn > 0;
	}
	}
	return 1;
}

/*
 * Clean intervals after which open track t resolves: resolve_n, or twice
 * the longest clean run seen inside the event (a fault slow one interval
 * in three has runs of two), at most resolve_max.
 */
static unsigned
persist_resolve_after(const struct matrix_params *p, const struct track *t)
{
	unsigned n = 2u * t->gapmax;

	if (n > p->resolve_max)
		n = p->resolve_max;
	return n > p->resolve_n ? n : p->resolve_n;
}

int
persist_emit_event(struct matrix *m, const struct matrix_event *e,
		   unsigned state)
{
	if (mem_grow((void **)&m->out, &m->cout, m->nout + 1, sizeof(*m->out)) <
	    0)
		return -1;
	m->out[m->nout] = *e;
	m->out[m->nout].state = (uint8_t)state;
	m->nout++;
	return 0;
}

static int
persist_emit(struct matrix *m, const struct track *t, unsigned state)
{
	return persist_emit_event(m, &t->ev, state);
}

/*
 * The window of the rule that opens track t now, 0 when none does: a
 * detector's own timing, strong evidence in persist_k of persist_n, any
 * in weak_k of weak_n (those two report the longer of their windows),
 * else strong evidence in flap_k of flap_n (an intermittent fault).
 */
static unsigned
persist_opens(const struct matrix_params *p, const struct track *t)
{
	uint32_t nmask = (1u << p->persist_n) - 1;
	uint32_t wmask = (1u << p->weak_n) - 1;
	uint32_t fmask = (1u << p->flap_n) - 1;

	if (!t->seen)
		return 0;
	if (t->immediate ||
	    persist_popcount(t->strong & nmask) >= p->persist_k ||
	    persist_popcount(t->hist & wmask) >= p->weak_k)
		return p->persist_n > p->weak_n ? p->persist_n : p->weak_n;
	if (persist_popcount(t->strong & fmask) >= p->flap_k)
		return p->flap_n;
	return 0;
}

/*
 * The evidence an event opens with (w: the window of the rule that
 * opened it): its score, slowdown and history.
 */
static void
persist_evidence(struct track *t, unsigned w)
{
	unsigned hot = persist_popcount(t->hist & ((1u << w) - 1));

	t->ev.evidence.z_open = (float)t->ev.score;
	t->ev.evidence.slowdown_open = (float)t->ev.slowdown;
	/* hangs and lost nodes count their own intervals (their timeout) */
	if (t->immediate && t->ev.evidence.hot_intervals > hot)
		return;
	t->ev.evidence.window = (uint8_t)w;
	t->ev.evidence.hot_intervals = (uint8_t)hot;
}

/*
 * Open track t (w: the window of the rule that opened it): its first
 * interval is its oldest evidence in the window, and the longest clean
 * run between its hits there counts as seen inside the event, so an
 * intermittent fault that opened it stays one event. 0 or -1.
 */
static int
persist_open(struct matrix *m, struct track *t, unsigned w)
{
	unsigned b, old = 0, run = 0;

	t->clean = t->gapmax = 0;
	for (b = 0; b < w; b++) {
		if (!(t->hist & (1u << b))) {
			run++;
			continue;
		}
		if (run > t->gapmax && b > run)
			t->gapmax = (uint8_t)run; /* between two hits */
		run = 0;
		old = b;
	}
	t->open = 1;
	t->ev.first_interval = m->iv - old;
	t->reported_slowdown = t->ev.slowdown;
	persist_evidence(t, w);
	if (persist_emit(m, t, MATRIX_ST_OPEN) < 0)
		return -1;
	t->ev.state = MATRIX_ST_OPEN;
	return 0;
}

/*
 * Close the interval: shift every history, open, update and resolve
 * events, and forget candidates that went quiet without opening. Returns
 * 0 or -1 on memory exhaustion.
 */
int
persist_finish(struct matrix *m)
{
	const struct matrix_params *p = &m->p;
	uint32_t nmask = (1u << p->persist_n) - 1;
	uint32_t keep =
		((1u << p->weak_n) - 1) | ((1u << p->flap_n) - 1) | nmask;
	uint32_t i;

	for (i = 0; i < m->ntrk; i++) {
		struct track *t = &m->trk[i];
		unsigned hits, w;
		int strong;

		if (t->open && !t->seen && !t->immediate &&
		    !persist_sampled(m, t))
			continue; /* no data on the culprit: hold, no verdict */

		strong = t->seen && (t->sscore >= p->z_strong || t->acc_strong);
		if (t->seen && t->prior) {
			/* a filter held it back an interval: it was there */
			t->hist |= 1;
			t->strong |= (uint32_t)strong;
		}
		t->hist = (t->hist << 1) | t->seen;
		t->strong = (t->strong << 1) | (uint32_t)strong;
		t->acc_strong = t->prior = 0;
		hits = persist_popcount(t->hist & nmask);
		if (t->seen) {
			domain_classify(&t->ev);
			t->ev.slowdown = exp(t->sum_r / t->hits_r);
			t->ev.last_interval = m->iv;
			if (!t->immediate)
				t->ev.confidence =
					fmin(0.99, 1.0 - exp(-(double)hits *
							     t->ev.score /
							     (2.0 * p->z_min)));
		}
		if (!t->open) {
			if ((w = persist_opens(p, t)) > 0) {
				if (persist_open(m, t, w) < 0)
					return -1;
			} else if ((t->hist & keep) == 0) {
				t->live = 0;
			}
		} else if (t->seen) {
			double d = t->ev.slowdown / t->reported_slowdown - 1.0;

			if (t->clean > t->gapmax)
				t->gapmax = t->clean;
			t->clean = 0;
			if (fabs(d) >= p->update_delta) {
				t->reported_slowdown = t->ev.slowdown;
				if (persist_emit(m, t, MATRIX_ST_UPDATED) < 0)
					return -1;
				t->ev.state = MATRIX_ST_UPDATED;
			}
		} else if (++t->clean >= persist_resolve_after(p, t)) {
			if (persist_emit(m, t, MATRIX_ST_RESOLVED) < 0)
				return -1;
			t->live = 0;
		}
		t->seen = 0;
	}
	return 0;
}

/*
 * Forget the candidates persist_finish() let go of, keeping the map's
 * indices right. Returns 0 or -1 on memory exhaustion.
 */
int
persist_compact(struct matrix *m)
{
	uint32_t i, j;

	/* compact, keeping the map's indices right */
	for (i = j = 0; i < m->ntrk; i++) {
		if (!m->trk[i].live) {
			u64map_del(&m->trk_map, m->trk[i].key);
			continue;
		}
		if (i != j) {
			m->trk[j] = m->trk[i];
			if (mem_map_put(&m->trk_map, m->trk[j].key, j) < 0)
				return -1;
		}
		j++;
	}
	m->ntrk = j;
	return 0;
}

/*
 * Every published event open now: candidates published as events of their
 * own (folded members stay published until they resolve), host events and
 * the job event.  Unpublished candidates (folded before their OPEN, or
 * below the contract) are no events.
 */
void
matrix_open_each(const struct matrix *m,
		 void (*fn)(const struct matrix_event *e, void *arg), void *arg)
{
	uint32_t i;

	if (m == NULL || fn == NULL)
		return;
	for (i = 0; i < m->ntrk; i++)
		if (m->trk[i].open && m->trk[i].live && m->trk[i].pub)
			fn(&m->trk[i].ev, arg);
	for (i = 0; i < m->ngrp; i++)
		if (m->grp[i].open && m->grp[i].live)
			fn(&m->grp[i].ev, arg);
	if (m->job.open)
		fn(&m->job.ev, arg);
}

/* Free the tracked candidates and events (m itself stays). */
void
persist_free(struct matrix *m)
{
	mem_free(m->trk);
	m->trk = NULL;
	m->ntrk = m->ctrk = 0;
}
