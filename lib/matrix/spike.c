/*
 * spike.c: the spike filter of the connection detector (cell.c).  A
 * heavy-tailed spike (most of a connection's chunks slow for part of one
 * interval) must not make a cell hot or feed its CUSUM; a fault must still
 * count from its first interval when other cells confirm it, and a fault
 * that flaps must still count.
 */
#include <math.h>

#include "matrix_int.h"

/* hmask bits of the samples four to six intervals before */
#define SPIKE_FAR 0x38u
/* hmask bits of the samples two to seven intervals before */
#define SPIKE_EARLIER 0x7eu

/*
 * Is w's raw sample slowed (the hot rule of a warm cell, before the spike
 * filter)?
 */
static int
spike_raw_hot(const struct matrix *m, const struct work *w)
{
	return m->cbase[w->cell].warm >= m->p.warm_intervals &&
	       w->r >= m->lmin && w->z >= (float)m->p.z_min;
}

/*
 * Are w's raw sample and the cell's sample before it slowed alike? A
 * fault slows a connection by the same factor interval after interval;
 * two heavy-tailed spikes in a row are two independent draws. Alike: the
 * log slowdowns differ by at most a quarter of the larger one, or by
 * three times the noise the z scores imply (a small slowdown's samples
 * scatter by their noise).
 */
static int
spike_alike(const struct work *w, const struct cbase *b)
{
	float d = fabsf(w->r - b->rprev), big = fmaxf(w->r, b->rprev);
	float sig = w->z > 0.0f ? w->r / w->z : 0.0f;

	return d <= 0.25f * big || d <= 3.0f * sig;
}

/*
 * A cell counts as slowed only as much as it was in one of its three
 * samples before too: w's r and z become the smaller of theirs and the
 * larger of those samples', so a spike of one interval (a heavy tail
 * reaching the median) cannot make a cell hot or feed its CUSUM, while a
 * fault that flaps (on one interval in two or three) still can. The raw
 * values are kept in b for the next samples and for the baseline's
 * update. Before a first sample, earlier ones count as not slowed. With
 * now set (corroborated in this interval, spike_corroborated()) the
 * sample counts as it is, and so does a slowed one while the job's spike
 * rate is low (spike_begin()) and the cell was slowed four to six
 * samples before: a sparse flapping fault, whose hits come more than
 * three intervals apart, still adds up to the flap rule (persist.c),
 * while two spikes that far apart are rare where spikes are rare.
 * w->pre says the filter let a slowed sample
 * through because the one just before it was slowed too: the evidence
 * then spans two intervals, and persistence counts both (cand.c).
 */
void
spike_filter(struct matrix *m, struct cbase *b, struct work *w, int now)
{
	float r = w->r, z = w->z;
	int hot = spike_raw_hot(m, w), was;

	if (!b->have_prev)
		b->rprev = b->zprev = b->rprev2 = b->zprev2 = b->rprev3 =
			b->zprev3 = 0.0f;
	was = b->rprev >= m->lmin && b->zprev >= (float)m->p.z_min;
	/* only an isolated spike counts: a flapping cell is no noise */
	if (m->cbase[w->cell].warm >= m->p.warm_intervals)
		spike_note(&m->spc, hot, was && !(b->hmask & SPIKE_EARLIER));
	w->pre = m->spc.fast && !now && hot && was && spike_alike(w, b);
	if (!now && !(m->spc.fast && hot && (b->hmask & SPIKE_FAR))) {
		w->r = fminf(r, fmaxf(b->rprev, fmaxf(b->rprev2, b->rprev3)));
		w->z = fminf(z, fmaxf(b->zprev, fmaxf(b->zprev2, b->zprev3)));
	}
	b->hmask = (uint8_t)((b->hmask << 1) | (hot != 0));
	b->rprev3 = b->rprev2;
	b->zprev3 = b->zprev2;
	b->rprev2 = b->rprev;
	b->zprev2 = b->zprev;
	b->rprev = r;
	b->zprev = z;
	b->have_prev = 1;
}

/* Counts w on its link and on both endpoints' sides, before the filter. */
void
spike_count(struct matrix *m, const struct work *w, uint32_t stamp)
{
	const struct cell *x = &m->cells[w->cell];
	struct link *l = &m->links[w->link];
	int hot = spike_raw_hot(m, w);
	struct ep *e[2] = {&m->eps[x->ep_tx], &m->eps[x->ep_rx]};

	if (l->rstamp != stamp) {
		l->rstamp = stamp;
		l->rhot = 0;
	}
	l->rhot += hot;
	for (int s = 0; s < 2; s++) {
		if (e[s]->rstamp != stamp) {
			e[s]->rstamp = stamp;
			e[s]->rn[0] = e[s]->rn[1] = 0;
			e[s]->rhot[0] = e[s]->rhot[1] = 0;
		}
		e[s]->rn[s]++;
		e[s]->rhot[s] += hot;
	}
}

/*
 * A heavy-tailed spike hits one cell; a fault slows every cell of its
 * link, or most cells of a NIC's or GPU's side, in the same interval.  So
 * a slowed sample counts at once (no spike filter) when another cell of
 * its link is slowed too, or its transmit or receive side is slowed as a
 * side would be judged hot (row_min_hot cells and row_frac of them).
 */
int
spike_corroborated(const struct matrix *m, const struct work *w)
{
	const struct cell *x = &m->cells[w->cell];
	const struct ep *e[2] = {&m->eps[x->ep_tx], &m->eps[x->ep_rx]};

	if (!spike_raw_hot(m, w))
		return 0;
	if (m->links[w->link].rhot >= 2)
		return 1;
	for (int s = 0; s < 2; s++)
		if (e[s]->rhot[s] >= m->p.row_min_hot &&
		    e[s]->rhot[s] >= m->p.row_frac * e[s]->rn[s])
			return 1;
	return 0;
}

void
spike_begin(const struct matrix *m, struct spike_rate *sr)
{
	double d = m->p.spike_decay, q;

	sr->on = sr->on * d + sr->on_now;
	sr->n = sr->n * d + sr->n_now;
	sr->n_last = sr->n_now;
	sr->on_now = sr->n_now = 0;
	/* the rate is known once a whole interval's samples were seen */
	q = sr->n >= 1.0 ? sr->on / sr->n : 1.0;
	sr->fast = m->p.pair_max > 0 && sr->n_last > 0 &&
		   sr->n >= (double)sr->n_last &&
		   q * q * sr->n_last <= m->p.pair_max;
}

void
spike_note(struct spike_rate *sr, int hot, int was_hot)
{
	sr->n_now++;
	sr->on_now += was_hot && !hot;
}
