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

enum cell_side { SIDE_UNKNOWN = 0, SIDE_COLD, SIDE_MIXED, SIDE_HOT };

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
		    !isfinite(cn->xfer.p50))
			continue;
		chunk = cn->bytes / cn->chunks;
		if (chunk == 0)
			continue;
		if (x->widx != NO_IDX) {
			w = &m->work[x->widx];
			w->tsum += (float)(cn->xfer.p50 * (double)cn->chunks);
			w->bsum += (float)cn->bytes;
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
		w->hot = 0;
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

			sd->n = sd->ncons = 0;
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
		l->k = l->ncold = l->nhot = l->nacc = 0;
		l->r = l->z = 0;
		l->hot = l->elevated = l->on_hot_side = l->cand = 0;
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
	if (m->cbase[w->cell].warm < m->p.warm_intervals)
		l->ncold++;
	if (w->r > l->best_r) {
		l->best = w->cell;
		l->best_r = w->r;
		l->best_z = w->z;
	}
	if (!l->cand && (w->hot || w->r >= m->lelev)) {
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
		struct cbase *b = &m->cbase[w->cell];
		int pair;

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
		pair = k->n < MATRIX_CLS_USABLE;
		w->z = w->r * (pair ? (isfinite(b->isig) ? b->isig : 0.0f)
				    : fminf(k->isig, b->isig));
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
 * How the rest of a side looks from one hot link l on it: HOT (the side
 * itself is slow), UNKNOWN (l is its only link), COLD (at most cold_frac
 * of the other links are consistent with l) or MIXED.
 */
static int
cell_side(struct matrix *m, uint32_t ep, int rx, const struct link *l)
{
	struct side *sd = cell_side_of(m, ep, rx);
	uint32_t others, cons;

	if (sd->status == SIDE_UNKNOWN)
		cell_side_judge(m, sd);
	if (sd->status == SIDE_HOT)
		return SIDE_HOT;
	if (sd->n <= 1)
		return SIDE_UNKNOWN;
	others = sd->n - 1;
	cons = sd->ncons - (cell_consistent(m, sd, l) ? 1 : 0);
	if (cons <= m->p.cold_frac * (double)others)
		return SIDE_COLD;
	return SIDE_MIXED;
}

/* A link suspect for cell x: both endpoints, ranks, NIC ports. */
static void
cell_fill_link(const struct matrix *m, struct matrix_suspect *s,
	       const struct cell *x)
{
	const struct dev *a = &m->devs[m->comms[x->comm].dev[x->src]];
	const struct dev *b = &m->devs[m->comms[x->comm].dev[x->dst]];

	memset(s, 0, sizeof(*s));
	s->role = MATRIX_ROLE_LINK;
	s->transport = x->tr;
	s->comm = m->comms[x->comm].hash;
	s->rank = x->src;
	s->peer_rank = x->dst;
	s->host = a->host;
	s->gpu = a->gpu;
	s->nic = a->nic;
	s->port = a->port;
	s->peer_host = b->host;
	s->peer_gpu = b->gpu;
	s->peer_nic = b->nic;
	s->peer_port = b->port;
}

/* A suspect for one side (tx: the source of x, rx: its destination). */
static void
cell_fill_side(const struct matrix *m, struct matrix_suspect *s,
	       const struct cell *x, unsigned role)
{
	uint32_t rank = role == MATRIX_ROLE_TX ? x->src : x->dst;

	matrix_suspect_dev(m, s, m->comms[x->comm].dev[rank], role);
	s->transport = x->tr;
	s->comm = m->comms[x->comm].hash;
	s->rank = s->peer_rank = rank;
}

/*
 * Report candidate kind for link l (evidence: its strongest cell). The key
 * names the physical culprit: the endpoint for rows and columns, the
 * endpoint pair for links; link and ambiguous share a key so a verdict
 * that wavers between them still persists.
 */
static int
cell_observe(struct matrix *m, const struct link *l, unsigned kind, int rside,
	     int cside)
{
	const struct cell *x = &m->cells[l->best];
	const struct dev *a = &m->devs[m->comms[x->comm].dev[x->src]];
	const struct dev *b = &m->devs[m->comms[x->comm].dev[x->dst]];
	uint64_t ka = m->eps[x->ep_tx].pkey, kb = m->eps[x->ep_rx].pkey;
	struct matrix_event e;
	struct probe pr;
	uint64_t key;

	memset(&e, 0, sizeof(e));
	e.kind = (uint8_t)kind;
	e.comm = m->comms[x->comm].hash;
	e.ncells = 1;
	e.ncells_total = 1;
	e.cells[0].comm = e.comm;
	e.cells[0].src = x->src;
	e.cells[0].dst = x->dst;
	e.cells[0].algo = x->algo;
	e.cells[0].ratio = expf(l->best_r);
	e.cells[0].z = l->best_z;
	e.slowdown = exp(l->r);
	e.score = l->z;
	if (kind == MATRIX_EV_COMM_SLOW_TX || kind == MATRIX_EV_COMM_SLOW_RX) {
		/* a row or column: its combined z is the evidence */
		const struct side *sd =
			&m->eps[kind == MATRIX_EV_COMM_SLOW_TX ? x->ep_tx
							       : x->ep_rx]
				 .sd[kind == MATRIX_EV_COMM_SLOW_RX];

		e.score = sd->sum_z / sqrtf((float)(sd->ncons ? sd->ncons : 1));
	}
	switch (kind) {
	case MATRIX_EV_COMM_SLOW_TX:
		key = persist_key(kind, ka, 0);
		cell_fill_side(m, &e.suspects[0], x, MATRIX_ROLE_TX);
		e.nsuspects = 1;
		e.action = MATRIX_ACT_ISOLATE_HOST;
		e.isolate_host = a->host;
		break;
	case MATRIX_EV_COMM_SLOW_RX:
		key = persist_key(kind, kb, 0);
		cell_fill_side(m, &e.suspects[0], x, MATRIX_ROLE_RX);
		e.nsuspects = 1;
		e.action = MATRIX_ACT_ISOLATE_HOST;
		e.isolate_host = b->host;
		break;
	case MATRIX_EV_COMM_SLOW_LINK:
		key = persist_key(kind, ka, kb);
		cell_fill_link(m, &e.suspects[0], x);
		e.nsuspects = 1;
		e.action = MATRIX_ACT_CHECK_LINK;
		e.isolate_host = a->host;
		break;
	default: /* ambiguous: list what the pattern cannot exclude */
		key = persist_key(MATRIX_EV_COMM_SLOW_LINK, ka, kb);
		e.ambiguous = 1;
		if (rside != SIDE_COLD)
			cell_fill_side(m, &e.suspects[e.nsuspects++], x,
				       MATRIX_ROLE_TX);
		if (cside != SIDE_COLD && rside == SIDE_COLD)
			cell_fill_side(m, &e.suspects[e.nsuspects++], x,
				       MATRIX_ROLE_RX);
		cell_fill_link(m, &e.suspects[e.nsuspects++], x);
		if (cside != SIDE_COLD && rside != SIDE_COLD)
			cell_fill_side(m, &e.suspects[e.nsuspects++], x,
				       MATRIX_ROLE_RX);
		e.action = MATRIX_ACT_OBSERVE;
		e.isolate_host = a->host;
		break;
	}
	if (kind == MATRIX_EV_COMM_SLOW_TX || kind == MATRIX_EV_COMM_SLOW_RX) {
		pr.kind = PROBE_SIDE;
		pr.a = kind == MATRIX_EV_COMM_SLOW_TX ? x->ep_tx : x->ep_rx;
		pr.b = kind == MATRIX_EV_COMM_SLOW_RX;
	} else {
		pr.kind = PROBE_LINK;
		pr.a = x->link;
		pr.b = 0;
	}
	return persist_observe(m, key, &e,
			       kind != MATRIX_EV_COMM_SLOW_TX &&
					       kind != MATRIX_EV_COMM_SLOW_RX &&
					       l->nacc > 0
				       ? PERSIST_STRONG
				       : 0,
			       &pr);
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
		if (l->r > tx->rmax)
			tx->rmax = l->r;
		if (l->r > rx->rmax)
			rx->rmax = l->r;
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
 * Score every cell sampled this interval and fold cells into links; judge
 * every row (transmit side) and column (receive side) over links; hand
 * candidates to the persistence layer (slow rows and columns, then hot
 * links on neither: a link when both sides are otherwise clean, ambiguous
 * when the pattern cannot tell); update clean cells' baselines. Returns 0
 * or -1.
 */
int
cell_detect(struct matrix *m)
{
	const struct matrix_params *p = &m->p;
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
		if (l->hot && rs != SIDE_HOT && cs != SIDE_HOT &&
		    cell_observe(m, l,
				 rs == SIDE_COLD && cs == SIDE_COLD
					 ? MATRIX_EV_COMM_SLOW_LINK
					 : MATRIX_EV_COMM_SLOW_AMBIG,
				 rs, cs) < 0)
			return -1;
	}
	for (i = 0; i < m->nwork; i++) {
		const struct work *w = &m->work[i];
		const struct link *l = &m->links[w->link];
		struct cbase *b = &m->cbase[w->cell];
		float a;

		if (m->cls[w->cls].n < MATRIX_CLS_MIN)
			continue;
		b->lvl = m->cls[w->cls].med;
		b->lcls = w->cls;
		if (w->hot || l->hot)
			continue;
		if (l->elevated && l->on_hot_side)
			continue;
		if (b->warm >= p->warm_intervals && w->r >= m->lmin)
			continue;
		/* a clean sample: a running mean first, then an EWMA */
		a = b->warm < m->inv_len ? m->inv[b->warm]
					 : (float)p->base_alpha;
		if (b->warm > 0) {
			float d = w->q - b->base;

			b->var += a * (d * d - b->var);
		}
		b->base += a * (w->q - b->base);
		if (b->warm < UINT8_MAX)
			b->warm++;
		/*
		 * The cell's own noise, estimated from few samples, shrunk
		 * towards its class's: (n var + n0 sig^2) / (n + n0), n clean
		 * samples (at most the EWMA's memory), n0 = MATRIX_VAR_PRIOR;
		 * kept as an inverse for the next interval's z.
		 */
		{
			const struct cls *k = &m->cls[w->cls];
			float n = fminf((float)b->warm,
					1.0f / (float)p->base_alpha);
			float s2 = k->sig * k->sig;

			b->isig = 1.0f /
				  sqrtf((n * b->var + MATRIX_VAR_PRIOR * s2) /
					(n + MATRIX_VAR_PRIOR));
		}
	}
	return 0;
}
