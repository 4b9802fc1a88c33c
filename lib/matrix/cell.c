/*
 * cell.c: communication-slow detection on the sparse delay matrix.
 *
 * A cell is one directed connection (communicator, algorithm, src, dst)
 * that carried traffic. Its sample per interval is the median per-chunk
 * transfer time divided by the chunk size (time per byte), measured on the
 * sender's host. Cells are compared with their class (same communicator,
 * transport and chunk-size class; small classes are pooled across
 * communicators) and with their own clean history, so static per-link
 * differences and job-wide drift both cancel. Cells then fold into
 * physical links (transmit endpoint -> receive endpoint) and links are
 * judged by endpoint side: the transmit side of a NIC port or GPU (a row)
 * and the receive side (a column).
 *
 * Cost: a few passes over this interval's work items and links; memory
 * per cell and per link, never per pair of ranks.
 */
#include <math.h>
#include <string.h>

#include "matrix_int.h"

/* Find or create the physical link tx -> rx (endpoint indices). 0 or -1. */
static int
cell_link_get(struct matrix *m, uint32_t tx, uint32_t rx, uint32_t *idx)
{
	uint64_t key = ((uint64_t)tx << 32) | rx;
	struct link *l;

	if (u64map_get(&m->link_map, key, idx) == 0)
		return 0;
	if (mem_grow((void **)&m->links, &m->clinks, m->nlinks + 1,
		     sizeof(*m->links)) < 0)
		return -1;
	if (mem_map_put(&m->link_map, key, m->nlinks) < 0)
		return -1;
	l = &m->links[m->nlinks];
	memset(l, 0, sizeof(*l));
	l->ep_tx = tx;
	l->ep_rx = rx;
	*idx = m->nlinks++;
	return 0;
}

/*
 * Find or create the cell of summary cn, the pos-th of this interval.
 * Agents send summaries in a stable order, so the cell found at the same
 * position last interval is tried before the hash map.
 */
static int
cell_get(struct matrix *m, uint32_t ci, const struct matrix_conn *cn,
	 uint32_t pos, uint32_t *idx)
{
	const struct comm *c = &m->comms[ci];
	uint64_t key = CELL_KEY(ci, cn->algo, cn->src, cn->dst);
	struct cell *x;
	int net = cn->transport == MATRIX_TR_NET;

	if (pos < m->nhint && m->hint[pos] < m->ncells &&
	    m->cells[m->hint[pos]].key == key) {
		*idx = m->hint[pos];
		return 0;
	}
	if (u64map_get(&m->cell_map, key, idx) == 0)
		goto hint;
	if (mem_grow((void **)&m->cells, &m->ccells, m->ncells + 1,
		     sizeof(*m->cells)) < 0 ||
	    mem_grow((void **)&m->cbase, &m->ccbase, m->ncells + 1,
		     sizeof(*m->cbase)) < 0)
		return -1;
	if (mem_map_put(&m->cell_map, key, m->ncells) < 0)
		return -1;
	x = &m->cells[m->ncells];
	memset(x, 0, sizeof(*x));
	memset(&m->cbase[m->ncells], 0, sizeof(m->cbase[0]));
	m->cbase[m->ncells].isig = INFINITY; /* no own noise yet */
	m->cbase[m->ncells].lcls = NO_IDX;
	x->key = key;
	x->comm = ci;
	x->src = cn->src;
	x->dst = cn->dst;
	x->net = (uint8_t)net;
	x->algo = cn->algo;
	x->tr = cn->transport;
	x->ep_tx = net ? m->devs[c->dev[cn->src]].ep_net
		       : m->devs[c->dev[cn->src]].ep_gpu;
	x->ep_rx = net ? m->devs[c->dev[cn->dst]].ep_net
		       : m->devs[c->dev[cn->dst]].ep_gpu;
	x->cls = NO_IDX;
	if (cell_link_get(m, x->ep_tx, x->ep_rx, &x->link) < 0)
		return -1;
	*idx = m->ncells++;
hint:
	if (pos >= m->chint && mem_grow((void **)&m->hint, &m->chint, pos + 1,
					sizeof(*m->hint)) < 0)
		return -1;
	m->hint[pos] = *idx;
	if (pos >= m->nhint)
		m->nhint = pos + 1;
	return 0;
}

/* Find or create the persistent class of key. Returns 0 or -1. */
static int
cell_cls_get(struct matrix *m, uint64_t key, uint32_t *idx)
{
	struct cls *k;

	if (u64map_get(&m->cls_map, key, idx) == 0)
		return 0;
	if (mem_grow((void **)&m->cls, &m->ccls, m->ncls + 1, sizeof(*m->cls)) <
	    0)
		return -1;
	if (mem_map_put(&m->cls_map, key, m->ncls) < 0)
		return -1;
	k = &m->cls[m->ncls];
	memset(k, 0, sizeof(*k));
	k->key = key;
	k->parent = NO_IDX;
	*idx = m->ncls++;
	return 0;
}

/* Count n more samples in class cl this interval. Returns 0 or -1. */
static int
cell_cls_touch(struct matrix *m, uint32_t cl, uint32_t n)
{
	struct cls *k = &m->cls[cl];

	if (k->iv != m->iv + 1) {
		if (mem_grow((void **)&m->clwork, &m->cclwork, m->nclwork + 1,
			     sizeof(*m->clwork)) < 0)
			return -1;
		m->clwork[m->nclwork++] = cl;
		k->iv = m->iv + 1;
		k->n = k->off = k->fill = k->cnt = 0;
		k->parent = NO_IDX;
	}
	k->n += n;
	return 0;
}

static unsigned
cell_size_class(uint64_t chunk)
{
	/* floor(log2(chunk)), 0 for 0 and 1 */
	return chunk > 1 ? 63u - (unsigned)__builtin_clzll(chunk) : 0;
}

/*
 * Log of the connection's tail over its median, p90 / p50, times its
 * bytes (summaries of one connection add up), or NAN when the summary
 * has no usable p90.
 */
static float
cell_tail_of(const struct matrix_conn *cn)
{
	if (!(cn->xfer.p90 >= cn->xfer.p50) || !isfinite(cn->xfer.p90))
		return NAN;
	return (float)(log(cn->xfer.p90 / cn->xfer.p50) * (double)cn->bytes);
}

static int
cell_stuck_add(struct matrix *m, uint32_t idx)
{
	if (mem_grow((void **)&m->stuck, &m->cstuck, m->nstuck + 1,
		     sizeof(*m->stuck)) < 0)
		return -1;
	m->stuck[m->nstuck++] = idx;
	return 0;
}

/*
 * Take this interval's connection summaries: find or create their cells,
 * note stuck connections for hang.c and queue usable samples for
 * cell_detect(). Several summaries of one connection add up. Summaries
 * naming unknown communicators or ranks are skipped. Returns 0 or -1 on
 * memory exhaustion.
 */
int
cell_ingest(struct matrix *m, const struct matrix_input *in)
{
	uint32_t ci, idx, cl;
	struct cell *x;
	struct work *w;
	size_t i;

	m->nwork = 0;
	m->nstuck = 0;
	m->nclwork = 0;
	for (i = 0; i < in->nconn; i++) {
		const struct matrix_conn *cn = &in->conn[i];
		uint64_t chunk;
		uint16_t shape;

		if (matrix_comm_find(m, cn->comm, &ci) < 0)
			continue;
		if (cn->src >= m->comms[ci].nranks ||
		    cn->dst >= m->comms[ci].nranks || cn->src == cn->dst ||
		    cn->algo >= MATRIX_ALGO_COUNT ||
		    cn->transport >= MATRIX_TR_COUNT)
			continue;
		if (cell_get(m, ci, cn, (uint32_t)i, &idx) < 0)
			return -1;
		x = &m->cells[idx];
		if (x->iv != m->iv + 1) {
			x->iv = m->iv + 1;
			x->pending = 0;
			x->bytes = 0;
			x->widx = NO_IDX;
		}
		/* stuck: chunks posted, no byte moved (listed once) */
		if (x->bytes == 0 && x->pending == 0 && cn->bytes == 0 &&
		    cn->pending > 0 && cell_stuck_add(m, idx) < 0)
			return -1;
		x->pending += cn->pending;
		x->bytes += cn->bytes;
		if (cn->chunks < m->p.min_chunks || cn->bytes == 0 ||
		    cn->xfer.count == 0 || !(cn->xfer.p50 > 0) ||
		    !isfinite(cn->xfer.p50) || matrix_back(m, ci, cn->src))
			continue;
		chunk = cn->bytes / cn->chunks;
		if (chunk == 0)
			continue;
		if (x->widx != NO_IDX) {
			w = &m->work[x->widx];
			w->tsum += (float)(cn->xfer.p50 * (double)cn->chunks);
			w->bsum += (float)cn->bytes;
			w->t += cell_tail_of(cn);
			continue;
		}
		/*
		 * Like with like: same communicator, transport, chunk size
		 * and chunk count (the median of n chunks is as precise as
		 * 1/sqrt(n)), each as a power-of-two class.
		 */
		shape = (uint16_t)(cell_size_class(chunk) |
				   (cell_size_class(cn->chunks) << 8));
		if (x->cls == NO_IDX || x->shape != shape) {
			if (cell_cls_get(
				    m,
				    ((uint64_t)(ci + 1) << 24) |
					    ((uint64_t)(shape >> 8) << 16) |
					    ((uint64_t)cn->transport << 8) |
					    (shape & 0xffu),
				    &cl) < 0)
				return -1;
			x = &m->cells[idx];
			x->cls = cl;
			x->shape = shape;
		}
		if (m->nwork >= m->cwork &&
		    mem_grow((void **)&m->work, &m->cwork, m->nwork + 1,
			     sizeof(*m->work)) < 0)
			return -1;
		x->widx = m->nwork;
		w = &m->work[m->nwork++];
		w->cell = idx;
		w->cls = x->cls;
		w->link = x->link;
		w->tsum = (float)(cn->xfer.p50 * (double)cn->chunks);
		w->bsum = (float)cn->bytes;
		w->t = cell_tail_of(cn);
		w->hot = 0;
		w->thot = 0;
		if (m->cls[x->cls].iv == m->iv + 1)
			m->cls[x->cls].n++; /* the common case, inline */
		else if (cell_cls_touch(m, x->cls, 1) < 0)
			return -1;
	}
	return 0;
}

/*
 * Pool classes smaller than min_class into one class per (transport, size
 * class); point work items at their final class; size each final class's
 * sample (every step-th item, about MATRIX_STAT_SAMPLE of them) and lay the
 * samples out in m->scratch.
 */
static int
cell_classify(struct matrix *m)
{
	uint32_t i, n0 = m->nclwork, off = 0, p;

	for (i = 0; i < n0; i++) {
		uint32_t n = m->cls[m->clwork[i]].n;

		if (n >= m->p.min_class)
			continue;
		if (cell_cls_get(m, m->cls[m->clwork[i]].key & 0xffffffu, &p) <
			    0 ||
		    cell_cls_touch(m, p, n) < 0)
			return -1;
		m->cls[m->clwork[i]].parent = p;
	}
	for (i = 0; i < m->nwork; i++) {
		p = m->cls[m->work[i].cls].parent;
		if (p != NO_IDX)
			m->work[i].cls = p;
	}
	for (i = 0; i < m->nclwork; i++) {
		struct cls *k = &m->cls[m->clwork[i]];

		k->off = off;
		k->fill = 0;
		k->cnt = 0;
		k->step = k->n > MATRIX_STAT_SAMPLE ? k->n / MATRIX_STAT_SAMPLE
						    : 1;
		if (k->parent == NO_IDX)
			off += (k->n + k->step - 1) / k->step;
	}
	return mem_grow((void **)&m->scratch, &m->cscratch, off + 1,
			sizeof(*m->scratch));
}

static void
cell_sample_begin(struct matrix *m)
{
	uint32_t i;

	for (i = 0; i < m->nclwork; i++)
		m->cls[m->clwork[i]].fill = m->cls[m->clwork[i]].cnt = 0;
}

static void
cell_sample(struct matrix *m, struct cls *k, float v)
{
	/* cnt counts down to the next sampled item (no division) */
	if (k->cnt == 0) {
		m->scratch[k->off + k->fill++] = v;
		k->cnt = k->step;
	}
	k->cnt--;
}

/* Side rx (0 row, 1 column) of endpoint ep (reset by cell_sides_reset). */
static struct side *
cell_side_of(struct matrix *m, uint32_t ep, int rx)
{
	return &m->eps[ep].sd[rx];
}

/* Reset every endpoint side for this interval (one linear pass). */
static void
cell_sides_reset(struct matrix *m)
{
	uint32_t i;
	int s;

	for (i = 0; i < m->neps; i++)
		for (s = 0; s < 2; s++) {
			struct side *sd = &m->eps[i].sd[s];

			sd->n = sd->ncons = sd->ntail = sd->nind = 0;
			sd->held = 0;
			sd->sum_r = sd->sum_z = 0;
			sd->status = SIDE_UNKNOWN;
			sd->rmax = -INFINITY;
		}
}

/*
 * Fold scored work item w into its link's sums for this interval. The
 * first cell of a link this interval counts the link on both its sides; a
 * link becomes a candidate for the verdicts only when one of its cells is
 * hot or slowed by at least half of min_slowdown (a link whose mean is
 * that high has such a cell), so the verdicts never walk all links.
 */
static int
cell_link_add(struct matrix *m, const struct work *w)
{
	struct link *l = &m->links[w->link];
	uint32_t stamp = (uint32_t)(m->iv + 1);

	if (l->stamp != stamp) {
		struct side *tx = cell_side_of(m, l->ep_tx, 0);
		struct side *rx = cell_side_of(m, l->ep_rx, 1);

		l->stamp = stamp;
		l->k = l->ncold = l->nhot = l->nacc = l->npre = 0;
		l->r = l->z = 0;
		l->hot = l->elevated = l->on_hot_side = l->cand = 0;
		l->ntail = 0;
		l->best = w->cell;
		l->best_r = -INFINITY;
		if (tx->n < UINT16_MAX)
			tx->n++;
		if (rx->n < UINT16_MAX)
			rx->n++;
	}
	l->k++;
	l->r += w->r;
	l->z += w->z;
	l->nhot += w->hot;
	l->nacc += w->acc;
	l->npre += w->hot && w->pre;
	if (m->cbase[w->cell].warm < m->p.warm_intervals)
		l->ncold++;
	if (w->r > l->best_r) {
		l->best = w->cell;
		l->best_r = w->r;
		l->best_z = w->z;
	}
	if (w->thot) {
		/* a side counts a link with tail evidence once */
		if (l->ntail++ == 0) {
			cell_side_of(m, l->ep_tx, 0)->ntail++;
			cell_side_of(m, l->ep_rx, 1)->ntail++;
		}
		if (l->ntail == 1 || w->t > l->tbest_d) {
			l->tbest = w->cell;
			l->tbest_d = w->t;
			l->tbest_z = w->tz;
		}
	}
	if (!l->cand && (w->hot || w->thot || w->r >= m->lelev)) {
		if (m->nlwork >= m->caplwork &&
		    mem_grow((void **)&m->lwork, &m->caplwork, m->nlwork + 1,
			     sizeof(*m->lwork)) < 0)
			return -1;
		m->lwork[m->nlwork++] = w->link;
		l->cand = 1;
	}
	return 0;
}

/*
 * Classes seen for the first time (top-level, enough cells, no level yet)
 * start their level at the exact median of x = log time per byte over
 * the interval's cells; other classes are left alone.
 */
static void
cell_level_fresh(struct matrix *m)
{
	uint32_t i;
	int fresh = 0;

	for (i = 0; i < m->nclwork; i++) {
		const struct cls *k = &m->cls[m->clwork[i]];

		if (k->parent == NO_IDX && !k->have_med &&
		    k->n >= MATRIX_CLS_MIN)
			fresh = 1;
	}
	if (!fresh)
		return;
	cell_sample_begin(m);
	for (i = 0; i < m->nwork; i++) {
		struct work *w = &m->work[i];

		cell_sample(m, &m->cls[w->cls], logf(w->tsum / w->bsum));
	}
	for (i = 0; i < m->nclwork; i++) {
		struct cls *k = &m->cls[m->clwork[i]];

		if (k->parent == NO_IDX && !k->have_med &&
		    k->n >= MATRIX_CLS_MIN) {
			k->med = matrix_median(m->scratch + k->off, k->fill);
			k->have_med = 1;
		}
	}
}

/*
 * Score every usable cell against its class. The class level L is the
 * median of (x - baseline) over the class, x the log time per byte; it is
 * carried from the previous interval and corrected by this interval's
 * median shift, so one median pass suffices: r' = x - L_prev - base, L =
 * L_prev + median(r'), r = r' - median(r'), q = x - L (what the baseline
 * learns). A cell without a warm baseline uses base 0. z = r over a
 * robust spread: the larger of 1.4826 MAD of r over the class and the
 * cell's own noise. Class statistics come from an evenly strided sample
 * (all cells up to MATRIX_STAT_SAMPLE): the robust statistics of 2,048 cells
 * are as good as those of 200,000, and cost stays linear. A class seen
 * for the first time gets its level from an exact pass first. Each scored
 * cell is folded into its link. Returns 0 or -1.
 */
static int
cell_score(struct matrix *m)
{
	const struct matrix_params *p = &m->p;
	uint32_t i, j;

	cell_level_fresh(m);
	cell_sample_begin(m);
	for (i = 0; i < m->nwork; i++) {
		struct work *w = &m->work[i];
		struct cls *k = &m->cls[w->cls];
		struct cbase *b = &m->cbase[w->cell];

		if (k->n < MATRIX_CLS_MIN)
			continue;
		/*
		 * A cell that changed class (its chunk count or size moved to
		 * another power of two, as when its path slowed down a lot)
		 * keeps its own history: the baseline is re-expressed against
		 * the new class's level.
		 */
		if (b->lcls != w->cls && b->lcls != NO_IDX)
			b->base += b->lvl - k->med;
		w->t /= w->bsum;
		w->q = logf(w->tsum / w->bsum) - k->med; /* tsum is dead now */
		w->r = b->warm >= p->warm_intervals ? w->q - b->base : w->q;
		cell_sample(m, k, w->r);
	}
	for (i = 0; i < m->nclwork; i++) {
		struct cls *k = &m->cls[m->clwork[i]];
		float *v = m->scratch + k->off;

		if (k->parent != NO_IDX || k->n < MATRIX_CLS_MIN)
			continue;
		k->medr = matrix_median(v, k->fill);
		for (j = 0; j < k->fill; j++)
			v[j] = fabsf(v[j] - k->medr);
		k->sig = fmaxf(1.4826f * matrix_median(v, k->fill),
			       (float)p->sigma_floor);
		k->isig = 1.0f / k->sig;
		/*
		 * A pair keeps its first level: the two directions of a
		 * 2-rank ring are coupled (a slow sender also delays the
		 * acknowledgements of what it receives), so a level that
		 * followed them would cancel the very slowdown to be found.
		 * Its cells are judged against their own history alone.
		 */
		if (k->n < MATRIX_CLS_USABLE)
			k->medr = 0.0f;
		k->med += k->medr;
	}
	for (i = 0; i < m->nwork; i++) {
		struct work *w = &m->work[i];
		const struct cls *k = &m->cls[w->cls];
		const struct cbase *b = &m->cbase[w->cell];

		if (k->n < MATRIX_CLS_MIN)
			continue;
		w->r -= k->medr;
		w->q -= k->medr;
		/*
		 * The larger of the class's and the cell's own (shrunk)
		 * noise. A pair (the two directions of a 2-rank ring) has no
		 * spread of its own: its cells are judged on their own noise,
		 * and only once warm.
		 */
		w->z = w->r * (k->n < MATRIX_CLS_USABLE
				       ? (isfinite(b->isig) ? b->isig : 0.0f)
				       : fminf(k->isig, b->isig));
		spike_count(m, w, (uint32_t)(m->iv + 1));
	}
	spike_begin(m, &m->spc);
	for (i = 0; i < m->nwork; i++) {
		struct work *w = &m->work[i];
		const struct cls *k = &m->cls[w->cls];
		struct cbase *b = &m->cbase[w->cell];
		int pair;

		if (k->n < MATRIX_CLS_MIN)
			continue;
		pair = k->n < MATRIX_CLS_USABLE;
		spike_filter(m, b, w, spike_corroborated(m, w));
		w->acc = 0;
		if (pair && b->warm < p->warm_intervals) {
			w->hot = 0;
		} else if (b->warm >= p->warm_intervals) {
			float inc = fminf(w->z, (float)p->z_strong) -
				    (float)p->cusum_k;

			w->hot = w->r >= m->lmin && w->z >= (float)p->z_min;
			/*
			 * CUSUM: z persistently above cusum_k adds up (one
			 * interval's share capped at z_strong, so a single
			 * burst cannot carry it); with the slowdown still
			 * there now it is strong evidence.
			 */
			if (inc > 0.0f || b->cus > 0.0f)
				b->cus = fminf(fmaxf(0.0f, b->cus + inc),
					       2.0f * (float)p->cusum_h);
			if (b->cus >= (float)p->cusum_h && w->r >= m->lmin &&
			    w->z >= (float)p->cusum_k) {
				w->hot = 1;
				w->acc = 1;
			}
		} else {
			w->hot = w->r >= m->lcold &&
				 w->z >= (float)p->cold_z_min;
		}
		tail_score(m, w);
		if (cell_link_add(m, w) < 0)
			return -1;
	}
	return 0;
}

/*
 * A link is consistent with its side's hottest link when it is slowed by
 * at least half as much (in log units) and is itself elevated. A slow NIC
 * slows all its links alike; a slow path slows one.
 */
static int
cell_consistent(const struct matrix *m, const struct side *sd,
		const struct link *l)
{
	if (l->ncold > 0)
		return l->hot; /* cold cells: only under the cold thresholds */
	return l->r >= 0.5f * sd->rmax && l->r >= m->lelev;
}

/*
 * Judge a side once its sums are complete: HOT when enough of its links
 * are consistently slowed (count and share), their mean slowdown reaches
 * min_slowdown and their combined z reaches z_min.
 */
static void
cell_side_judge(struct matrix *m, struct side *sd)
{
	const struct matrix_params *p = &m->p;

	sd->status = SIDE_MIXED;
	if (sd->n >= 2 && sd->ncons >= p->row_min_hot &&
	    sd->ncons >= p->row_frac * (double)sd->n &&
	    sd->sum_r / (float)sd->ncons >= m->lmin &&
	    sd->sum_z / sqrtf((float)sd->ncons) >= (float)p->z_min)
		sd->status = SIDE_HOT;
}

/*
 * The share of the other links of a side that are consistent with link l
 * on it (0 when l is its only link).
 */
static double
cell_side_share(struct matrix *m, uint32_t ep, int rx, const struct link *l)
{
	const struct side *sd = cell_side_of(m, ep, rx);
	uint32_t cons;

	if (sd->n <= 1)
		return 0;
	cons = sd->ncons - (cell_consistent(m, sd, l) ? 1 : 0);
	return (double)cons / (double)(sd->n - 1);
}

/*
 * Is HOT side sd explained by the sides at the other ends of its links?
 * Every consistent link of it ends at a HOT side, and each of those is
 * slowed on links that sd's kind of side does not explain: a host whose
 * NICs all receive slowly makes the transmit sides of the NICs that send
 * only to it look slow too, and the receivers' other links tell which is
 * which. Where neither end has such links (a pure pairing) both stay.
 */
static int
cell_explained(const struct side *sd)
{
	return sd->nind == 0 && !sd->held;
}

/*
 * Count, for every HOT side, its consistent hot links whose other side is
 * not HOT (nind), then mark the HOT sides without such links that face a
 * side without them either (held). Runs before the verdicts.
 */
static void
cell_explain(struct matrix *m)
{
	uint32_t i;
	int pass, s;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < m->nlhot; i++) {
			const struct link *l = &m->links[m->lhot[i]];
			struct side *sd[2] = {cell_side_of(m, l->ep_tx, 0),
					      cell_side_of(m, l->ep_rx, 1)};

			for (s = 0; s < 2; s++)
				if (sd[s]->status == SIDE_UNKNOWN)
					cell_side_judge(m, sd[s]);
			for (s = 0; s < 2; s++) {
				struct side *a = sd[s], *b = sd[!s];

				if (a->status != SIDE_HOT ||
				    !cell_consistent(m, a, l))
					continue;
				if (pass == 0 && b->status != SIDE_HOT &&
				    a->nind < UINT16_MAX)
					a->nind++;
				if (pass == 1 && a->nind == 0 &&
				    b->status == SIDE_HOT && b->nind == 0)
					a->held = 1;
			}
		}
}

/*
 * How the rest of a side looks from one hot link l on it: HOT (the side
 * itself is slow), UNKNOWN (l is its only link), COLD (at most cold_frac
 * of the other links are consistent with l) or MIXED.
 */
static int
cell_side(struct matrix *m, uint32_t ep, int rx, const struct link *l)
{
	struct side *sd = cell_side_of(m, ep, rx);

	if (sd->status == SIDE_UNKNOWN)
		cell_side_judge(m, sd);
	if (sd->status == SIDE_HOT && cell_explained(sd))
		return SIDE_MIXED;
	if (sd->status == SIDE_HOT)
		return SIDE_HOT;
	if (sd->n <= 1)
		return SIDE_UNKNOWN;
	if (cell_side_share(m, ep, rx, l) <= m->p.cold_frac)
		return SIDE_COLD;
	return SIDE_MIXED;
}

/*
 * Hand link l's candidate of kind (median evidence) to cand_submit():
 * a row or column claims its consistent links' mean slowdown and combined
 * z, a link its own. A link hot by accumulated (CUSUM) evidence is strong
 * evidence when its z reaches z_min and weak evidence below.
 */
static int
cell_observe(struct matrix *m, const struct link *l, unsigned kind, int rside,
	     int cside)
{
	struct cand c;

	memset(&c, 0, sizeof(c));
	c.cell = l->best;
	c.kind = kind;
	c.r = l->r;
	c.score = l->z;
	c.cr = l->best_r;
	c.cz = l->best_z;
	c.rside = rside;
	c.cside = cside;
	c.basis = MATRIX_BASIS_MEDIAN;
	if (kind == MATRIX_EV_COMM_SLOW_TX || kind == MATRIX_EV_COMM_SLOW_RX) {
		const struct cell *x = &m->cells[l->best];
		const struct side *sd = kind == MATRIX_EV_COMM_SLOW_TX
						? cell_side_of(m, x->ep_tx, 0)
						: cell_side_of(m, x->ep_rx, 1);
		float n = (float)(sd->ncons ? sd->ncons : 1);

		c.r = sd->sum_r / n;
		c.score = sd->sum_z / sqrtf(n);
	} else if (l->nacc > 0) {
		c.flags = l->z >= (float)m->p.z_min ? PERSIST_STRONG
						    : PERSIST_WEAK;
	}
	/* every hot cell of the link held back once and slowed since */
	if (l->nhot > 0 && l->npre == l->nhot)
		c.flags |= PERSIST_PRIOR;
	c.rshare = (float)cell_side_share(m, l->ep_tx, 0, l);
	c.cshare = (float)cell_side_share(m, l->ep_rx, 1, l);
	return cand_submit(m, &c);
}
/*
 * Candidate links: mean r and combined z, hot, elevated; the sides'
 * maxima over elevated links (any other link of a side is below them);
 * then the sides' sums over consistent links. Returns 0 or -1.
 */
static int
cell_links_score(struct matrix *m)
{
	const struct matrix_params *p = &m->p;
	uint32_t i;

	m->nlhot = 0;
	for (i = 0; i < m->nlwork; i++) {
		struct link *l = &m->links[m->lwork[i]];
		struct side *tx, *rx;

		l->r = l->r / (float)l->k;
		l->z = l->z / sqrtf((float)l->k);
		if (l->ncold > 0)
			l->hot = l->nhot > 0 && l->r >= m->lcold;
		else
			l->hot = l->r >= m->lmin &&
				 (l->z >= (float)p->z_min || l->nacc > 0);
		l->elevated = l->r >= m->lelev || l->hot;
		if (!l->elevated)
			continue;
		tx = cell_side_of(m, l->ep_tx, 0);
		rx = cell_side_of(m, l->ep_rx, 1);
		if (l->r > tx->rmax) {
			tx->rmax = l->r;
			tx->lmax = m->lwork[i];
		}
		if (l->r > rx->rmax) {
			rx->rmax = l->r;
			rx->lmax = m->lwork[i];
		}
		if (m->nlhot >= m->caplhot &&
		    mem_grow((void **)&m->lhot, &m->caplhot, m->nlhot + 1,
			     sizeof(*m->lhot)) < 0)
			return -1;
		m->lhot[m->nlhot++] = m->lwork[i];
	}
	for (i = 0; i < m->nlhot; i++) {
		const struct link *l = &m->links[m->lhot[i]];
		struct side *sd[2];
		int s;

		sd[0] = cell_side_of(m, l->ep_tx, 0);
		sd[1] = cell_side_of(m, l->ep_rx, 1);
		for (s = 0; s < 2; s++) {
			if (!cell_consistent(m, sd[s], l))
				continue;
			if (sd[s]->ncons < UINT16_MAX)
				sd[s]->ncons++;
			sd[s]->sum_r += l->r;
			sd[s]->sum_z += l->z;
		}
	}
	return 0;
}

/*
 * The side rx (0 transmit, 1 receive) next to endpoint ep on a ring: that
 * of ep itself or of the other endpoint of its device, whichever has the
 * hotter link. A ring runs through devices, not endpoints: a rank may
 * receive over NVLink and send on over its NIC. A NIC port shared by
 * several GPUs stands for its representative device.
 */
static const struct side *
cell_ring_side(struct matrix *m, uint32_t ep, int rx)
{
	const struct dev *d = &m->devs[m->eps[ep].dev];
	const struct side *a = cell_side_of(m, ep, rx);
	const struct side *b =
		cell_side_of(m, m->eps[ep].net ? d->ep_gpu : d->ep_net, rx);

	return b->rmax > a->rmax ? b : a;
}

/*
 * Back-pressure: a slow link delays its neighbours on a ring (upstream
 * links wait for credits, so their transfers take longer; downstream
 * links get its data late), and they theirs, less and less: a neighbour
 * takes on a share of the culprit's extra time. From link l, walk to the
 * hottest neighbour (the hottest elevated link into the device l starts
 * from or out of the device it ends at) while it is hotter, a few hops at
 * most; l is explained when its extra time (slowdown - 1) is at most
 * bp_frac of one of theirs. A link explained within the last flap_n
 * intervals stays explained while a neighbour is hotter at all: the
 * share it claims wavers with noise, and evidence that old still counts
 * for persistence.
 */
static int
cell_backpressure(struct matrix *m, struct link *l)
{
	const struct link *cur = l;
	uint32_t now = (uint32_t)(m->iv + 1);
	int sticky = l->bp_iv != 0 && now - l->bp_iv < m->p.flap_n;
	float ex = expm1f(l->r);
	int hop;

	for (hop = 0; hop < 4; hop++) {
		const struct side *up = cell_ring_side(m, cur->ep_tx, 1);
		const struct side *down = cell_ring_side(m, cur->ep_rx, 0);
		const struct side *nb = up->rmax >= down->rmax ? up : down;

		if (!(nb->rmax > cur->r))
			return 0;
		if (sticky || ex <= (float)m->p.bp_frac * expm1f(nb->rmax)) {
			l->bp_iv = now;
			return 1;
		}
		cur = &m->links[nb->lmax];
	}
	return 0;
}

/*
 * Judge every row (transmit side) and column (receive side) over links
 * and hand candidates on: slow rows and columns, then hot links on
 * neither (a link when both sides are otherwise clean, ambiguous when the
 * pattern cannot tell) unless a hotter neighbour explains them. Returns
 * 0 or -1.
 */
static int
cell_verdicts(struct matrix *m)
{
	uint32_t i;

	cell_explain(m);
	for (i = 0; i < m->nlhot; i++) {
		struct link *l = &m->links[m->lhot[i]];
		int rs, cs;

		rs = cell_side(m, l->ep_tx, 0, l);
		cs = cell_side(m, l->ep_rx, 1, l);
		l->on_hot_side = rs == SIDE_HOT || cs == SIDE_HOT;
		if (rs == SIDE_HOT &&
		    cell_consistent(m, cell_side_of(m, l->ep_tx, 0), l) &&
		    cell_observe(m, l, MATRIX_EV_COMM_SLOW_TX, rs, cs) < 0)
			return -1;
		if (cs == SIDE_HOT &&
		    cell_consistent(m, cell_side_of(m, l->ep_rx, 1), l) &&
		    cell_observe(m, l, MATRIX_EV_COMM_SLOW_RX, rs, cs) < 0)
			return -1;
		if (!l->hot || rs == SIDE_HOT || cs == SIDE_HOT ||
		    cell_backpressure(m, l))
			continue;
		if (cell_observe(m, l,
				 rs == SIDE_COLD && cs == SIDE_COLD
					 ? MATRIX_EV_COMM_SLOW_LINK
					 : MATRIX_EV_COMM_SLOW_AMBIG,
				 rs, cs) < 0)
			return -1;
	}
	return 0;
}

/*
 * Update the baseline of work item w's cell from a clean sample (own
 * noise included); a sample above min_slowdown that is not hot, with no
 * CUSUM evidence building, only lets the baseline creep by creep_max, so
 * slow drift is followed while a step stays a step.
 */
static void
cell_learn(struct matrix *m, const struct work *w)
{
	const struct matrix_params *p = &m->p;
	const struct cls *k = &m->cls[w->cls];
	struct cbase *b = &m->cbase[w->cell];
	float a, n, s2;

	if (b->warm >= p->warm_intervals && b->rprev >= m->lmin) {
		if (b->cus <= 0.0f)
			b->base += fminf(w->q - b->base, (float)p->creep_max);
		return;
	}
	/* a clean sample: a running mean first, then an EWMA */
	a = b->warm < m->inv_len ? m->inv[b->warm] : (float)p->base_alpha;
	if (b->warm > 0) {
		float d = w->q - b->base;

		b->var += a * (d * d - b->var);
	}
	b->base += a * (w->q - b->base);
	if (b->warm < UINT8_MAX)
		b->warm++;
	/*
	 * The cell's own noise, estimated from few samples, shrunk towards
	 * its class's: (n var + n0 sig^2) / (n + n0), n clean samples (at
	 * most the EWMA's memory), n0 = MATRIX_VAR_PRIOR; kept as an inverse
	 * for the next interval's z.
	 */
	n = fminf((float)b->warm, 1.0f / (float)p->base_alpha);
	s2 = k->sig * k->sig;
	b->isig = 1.0f / sqrtf((n * b->var + MATRIX_VAR_PRIOR * s2) /
			       (n + MATRIX_VAR_PRIOR));
}

/*
 * Score every cell sampled this interval and fold cells into links; judge
 * rows, columns and links (median evidence), then tails; update clean
 * cells' baselines. Returns 0 or -1.
 */
int
cell_detect(struct matrix *m)
{
	uint32_t i;

	m->nlwork = 0;
	m->nlhot = 0;
	cell_sides_reset(m);
	if (m->nwork == 0)
		return 0;
	if (cell_classify(m) < 0)
		return -1;
	if (cell_score(m) < 0 || cell_links_score(m) < 0)
		return -1;
	if (cell_verdicts(m) < 0 || tail_detect(m) < 0)
		return -1;
	for (i = 0; i < m->nwork; i++) {
		const struct work *w = &m->work[i];
		const struct link *l = &m->links[w->link];
		struct cbase *b = &m->cbase[w->cell];

		if (m->cls[w->cls].n < MATRIX_CLS_MIN)
			continue;
		b->lvl = m->cls[w->cls].med;
		b->lcls = w->cls;
		if (w->hot || l->hot)
			continue;
		if (l->elevated && l->on_hot_side)
			continue;
		tail_learn(m, w);
		cell_learn(m, w);
	}
	return 0;
}
