/*
 * tail.c: slowness in the tail of a connection's transfer times. A delay
 * on a minority of a connection's chunks leaves its median (cell.c's
 * sample) where it was while every collective that waits for the slowest
 * chunk slows down. The statistic is t = log(p90 / p50) per cell and
 * interval: the tail's shape, independent of the link's speed. Each cell
 * keeps its own baseline of t (running mean, then EWMA) and its own
 * spread (mean absolute innovation), learnt from clean samples with each
 * innovation clipped at three spreads, so fault-free heavy tails (a p90
 * that jumps now and then) widen the spread rather than move the
 * baseline. A cell has tail evidence when its growth of t reached
 * log(tail_min) in its last tail_run samples in a row and, as the smaller
 * of this and the previous sample's, z_min spreads, while its median did
 * not move: a fault shifts a tail persistently, a heavy tail without a
 * fault reaches p90 only now and then.
 */
#include <math.h>
#include <string.h>

#include "matrix_int.h"

void
tail_score(struct matrix *m, struct work *w)
{
	const struct matrix_params *p = &m->p;
	struct cbase *b = &m->cbase[w->cell];
	float raw, d, s, lt = logf((float)p->tail_min);

	w->thot = 0;
	if (!isfinite(w->t)) {
		w->t = 0.0f;
		w->tz = NAN; /* no tail this interval: nothing to learn */
		b->tprev = 0.0f;
		b->trun = 0;
		return;
	}
	raw = w->t - b->tbase;
	d = fminf(raw, b->tprev); /* zero before a first sample */
	b->tprev = raw;
	if (raw < lt)
		b->trun = 0;
	else if (b->trun < UINT8_MAX)
		b->trun++;
	s = fmaxf(1.2533f * b->tdev, (float)p->sigma_floor);
	w->t = d;
	w->tz = d / s;
	if (b->twarm < p->warm_intervals || w->hot || w->r >= m->lmin)
		return;
	w->thot = b->trun >= p->tail_run && d >= lt && w->tz >= (float)p->z_min;
}

void
tail_learn(struct matrix *m, const struct work *w)
{
	const struct matrix_params *p = &m->p;
	struct cbase *b = &m->cbase[w->cell];
	float u = b->tprev, a, c;

	if (w->thot || isnan(w->tz))
		return;
	if (b->twarm >= p->warm_intervals) {
		if (u >= logf((float)p->tail_min))
			return; /* a grown tail is not learnt */
		c = 3.0f * fmaxf(1.2533f * b->tdev, (float)p->sigma_floor);
		u = fminf(fmaxf(u, -c), c);
	}
	a = b->twarm < m->inv_len ? m->inv[b->twarm] : (float)p->base_alpha;
	if (b->twarm > 0)
		b->tdev += a * (fabsf(u) - b->tdev);
	b->tbase += a * u;
	if (b->twarm < UINT8_MAX)
		b->twarm++;
}

/*
 * How side sd looks from a link with tail evidence on it: HOT when at
 * least row_min_hot and row_frac of its links have tail evidence, else
 * like cell.c's sides (UNKNOWN, COLD, MIXED); *share gets the share of
 * its other links with tail evidence.
 */
static int
tail_side(const struct matrix *m, const struct side *sd, float *share)
{
	const struct matrix_params *p = &m->p;

	*share = 0.0f;
	if (sd->n >= 2 && sd->ntail >= p->row_min_hot &&
	    sd->ntail >= p->row_frac * (double)sd->n)
		return SIDE_HOT;
	if (sd->n <= 1)
		return SIDE_UNKNOWN;
	*share = (float)(sd->ntail - 1) / (float)(sd->n - 1);
	return *share <= p->cold_frac ? SIDE_COLD : SIDE_MIXED;
}

/*
 * Links with tail evidence and no median evidence become candidates of
 * basis tail: a side whose links have tail evidence alike is a slow
 * transmit or receive side (action observe: a tail alone does not
 * isolate a host), else the link, or ambiguous when the pattern cannot
 * tell. The claimed slowdown is the growth of p90 / p50 over its
 * baseline, the score the strongest cell's z.
 */
int
tail_detect(struct matrix *m)
{
	uint32_t i;

	for (i = 0; i < m->nlwork; i++) {
		const struct link *l = &m->links[m->lwork[i]];
		const struct side *tx, *rx;
		struct cand c;

		if (l->ntail == 0 || l->hot || l->on_hot_side)
			continue;
		tx = &m->eps[l->ep_tx].sd[0];
		rx = &m->eps[l->ep_rx].sd[1];
		memset(&c, 0, sizeof(c));
		c.cell = l->tbest;
		c.r = c.cr = l->tbest_d;
		c.score = c.cz = l->tbest_z;
		c.basis = MATRIX_BASIS_TAIL;
		c.rside = tail_side(m, tx, &c.rshare);
		c.cside = tail_side(m, rx, &c.cshare);
		if (c.rside == SIDE_HOT || c.cside == SIDE_HOT) {
			c.kind = c.rside == SIDE_HOT ? MATRIX_EV_COMM_SLOW_TX
						     : MATRIX_EV_COMM_SLOW_RX;
			if (cand_submit(m, &c) < 0)
				return -1;
			if (c.rside != SIDE_HOT || c.cside != SIDE_HOT)
				continue;
			c.kind = MATRIX_EV_COMM_SLOW_RX;
		} else {
			c.kind = c.rside == SIDE_COLD && c.cside == SIDE_COLD
					 ? MATRIX_EV_COMM_SLOW_LINK
					 : MATRIX_EV_COMM_SLOW_AMBIG;
		}
		if (cand_submit(m, &c) < 0)
			return -1;
	}
	return 0;
}
