/*
 * wait.c: non-communication slow detection (the ring wait chain).
 *
 * In a bulk-synchronous job a rank that is late to its collectives (slow
 * GPU, extra compute, data loading) makes everyone else wait for it. From
 * durations measured on its own host that rank shows: a longer gap between
 * its collectives (its own compute), the shortest collective kernels (it
 * arrives last and waits for nobody) and the least RecvWait/SendPeerWait.
 * Each communicator compares its members with each other and with their
 * own clean history; the verdict is per device, whichever communicator saw
 * it.
 */
#include <math.h>
#include <string.h>

#include "matrix_int.h"

/*
 * Where one summary's gaps lie (us): the geometric mean of their median
 * and 90th percentile, from MATRIX_GAP_QMIN samples on; 0 when the summary
 * has fewer or no quantiles.  A training loop's gaps are two crowds,
 * collectives back to back inside a step and the compute between steps;
 * a late rank shows in either, so the median alone would miss lateness
 * before a step's first collective only, and the 90th percentile alone
 * would ignore the bulk.  Neither moves with the pause of milliseconds
 * that now and then lands in one of a few hundred sampled gaps, which
 * made the mean of a healthy member wander by a third from one interval
 * to the next and hid a rank late by a fifth of its step.
 */
static double
wait_q(const struct matrix_stats *g)
{
	if (g->count >= MATRIX_GAP_QMIN && g->p50 > 0 && g->p90 >= g->p50 &&
	    isfinite(g->p90))
		return sqrt(g->p50 * g->p90);
	return 0;
}

/*
 * Take the per-rank collective and wait summaries: progress markers, the
 * blocked flag of each device, and this interval's gap, kernel and wait
 * samples. Summaries naming unknown communicators or ranks are skipped.
 * Returns 0.
 */
int
wait_ingest(struct matrix *m, const struct matrix_input *in)
{
	uint32_t ci;
	size_t i;

	for (i = 0; i < in->ncoll; i++) {
		const struct matrix_coll *s = &in->coll[i];
		struct crank *rs;
		struct dev *d;
		double q;

		if (matrix_comm_find(m, s->comm, &ci) < 0 ||
		    s->rank >= m->comms[ci].nranks)
			continue;
		rs = &m->comms[ci].rs[s->rank];
		d = &m->devs[m->comms[ci].dev[s->rank]];
		if (rs->seen_iv != m->iv + 1) {
			/* first summary of this member in this interval */
			rs->seen_iv = m->iv + 1;
			rs->enter = rs->done = 0;
			rs->enq = 0;
			rs->carried = 1;
			rs->stuck = 0;
			rs->gs = rs->ks = rs->ws = rs->gl = 0;
			rs->qall = 1;
			rs->gn = rs->kn = rs->wn = 0;
		}
		if (s->seq_enter > rs->enter)
			rs->enter = s->seq_enter;
		if (s->seq_done > rs->done)
			rs->done = s->seq_done;
		/* of the highest done: read at enqueue, or repeated */
		if (s->seq_done >= rs->done)
			rs->enq = s->done_at_enqueue;
		if (!s->carried)
			rs->carried = 0;
		if (s->stuck)
			rs->stuck = 1;
		if (d->blk_iv != m->iv) {
			d->blk_iv = m->iv;
			d->blocked = 0;
		}
		if (s->seq_enter > s->seq_done)
			d->blocked = 1;
		if (s->nops == 0 || s->gap.count == 0 || s->kernel.count == 0 ||
		    !(s->gap.sum > 0) || !(s->kernel.sum > 0) ||
		    !isfinite(s->gap.sum) || !isfinite(s->kernel.sum))
			continue;
		/* the gap above its p99 counts as p99 (matrix_stats.wsum) */
		rs->gs += s->gap.wsum > 0 ? s->gap.wsum : s->gap.sum;
		q = wait_q(&s->gap);
		if (q > 0)
			rs->gl += q * (double)s->gap.count;
		else
			rs->qall = 0;
		rs->gn += s->gap.count;
		rs->ks += s->kernel.sum;
		rs->kn += s->kernel.count;
	}
	for (i = 0; i < in->nwait; i++) {
		const struct matrix_wait *w = &in->wait[i];
		struct crank *rs;

		if (matrix_comm_find(m, w->comm, &ci) < 0 ||
		    w->rank >= m->comms[ci].nranks)
			continue;
		rs = &m->comms[ci].rs[w->rank];
		if (rs->seen_iv != m->iv + 1)
			continue;
		if (!isfinite(w->recv_wait_us + w->send_peer_wait_us))
			continue;
		rs->ws += w->recv_wait_us + w->send_peer_wait_us;
		rs->wn += w->nsteps;
	}
	return 0;
}

/* Did this member report usable gap and kernel stats this interval? */
static int
wait_fresh(const struct matrix *m, const struct crank *rs)
{
	return rs->seen_iv == m->iv + 1 && rs->gn > 0 && rs->kn > 0;
}

/*
 * Is a rank late by x now (robust z) alike its lateness xprev before? A
 * slow GPU is late by the same share interval after interval; two
 * compute stalls in a row are two independent draws (see spike_alike()).
 */
static int
wait_alike(float x, float xprev, float z)
{
	float d = fabsf(x - xprev), big = fmaxf(x, xprev);
	float sig = z > 0.0f ? x / z : 0.0f;

	return d <= 0.25f * big || d <= 3.0f * sig;
}

/*
 * Shift rank rs's lateness x (robust z) of this fresh interval into its
 * history and say whether it may count as late: always when placed by
 * quantiles (means 0), else only when it was late in one of its three
 * fresh intervals before too. A compute stall of one step (a
 * data-loading hiccup, a page-fault storm) makes a rank late in one
 * interval; a slow GPU is late interval after interval: the cells'
 * spike filter for ranks. *pre is PERSIST_PRIOR when it was late just
 * before by about as much and chance pairs are rare in the job
 * (spike_begin()), else 0.
 */
static int
wait_history(struct matrix *m, struct crank *rs, float x, float z, int means,
	     unsigned *pre)
{
	float zmin = (float)m->p.z_min;
	int was = (rs->lhist & 1u) != 0, prev = (rs->lhist & 7u) != 0;

	*pre = 0;
	if (means) {
		spike_note(&m->spr, rs->late && z >= zmin,
			   was && rs->zprev >= zmin);
		if (was && m->spr.fast && wait_alike(x, rs->xprev, z))
			*pre = PERSIST_PRIOR;
	}
	rs->lhist = (uint8_t)((rs->lhist << 1) | rs->late);
	rs->xprev = x;
	rs->zprev = z;
	return prev || !means;
}

/*
 * Non-communication slow candidate for rank of c (per device key): r the
 * log ratio of its mean gap, z its score, cost what it costs the
 * collectives (wait_cost).  A cost under twice min_slowdown is weak
 * evidence whatever z says: over a few members the spread is tiny, so a
 * few seconds of host jitter on one rank (a 1.07x dip of a healthy job,
 * seen on GPUs) scores as high as a failing GPU, and only persistence
 * tells them apart.
 */
static int
wait_observe(struct matrix *m, const struct comm *c, uint32_t rank, float r,
	     float z, unsigned flags, unsigned basis)
{
	struct matrix_event e;
	struct probe pr;
	uint64_t key =
		matrix_rank_event(m, &e, MATRIX_EV_NONCOMM_SLOW, c, rank);

	e.ncells = 1;
	e.ncells_total = 1;
	e.cells[0].comm = c->hash;
	e.cells[0].src = e.cells[0].dst = rank;
	e.cells[0].ratio = expf(r);
	e.cells[0].z = z;
	e.slowdown = exp(r);
	e.score = z;
	e.evidence.basis = (uint8_t)basis;
	pr.kind = PROBE_RANK;
	pr.a = (uint32_t)(c - m->comms);
	pr.b = rank;
	return persist_observe(m, key, &e, flags, &pr);
}

/*
 * Fewest reporting members for a verdict: min_group, or all of a smaller
 * communicator down to two (which is judged on its members' own history).
 */
static uint32_t
wait_quorum(const struct matrix *m, const struct comm *c)
{
	return c->nranks < m->p.min_group ? 2 : m->p.min_group;
}

/*
 * The own noise of a small communicator's member (log units): its clean
 * samples' spread, shrunk towards half of min_slowdown with the weight of
 * MATRIX_VAR_PRIOR samples, so that a few quiet intervals cannot make a
 * tiny spread (and a huge z) out of nothing.
 */
static float
wait_own_sigma(const struct matrix *m, const struct crank *rs)
{
	float n = fminf((float)rs->gwarm, 1.0f / (float)m->p.base_alpha);

	float s0 = 0.5f * m->lmin;

	return fmaxf(sqrtf((n * rs->gvar + MATRIX_VAR_PRIOR * s0 * s0) /
			   (n + MATRIX_VAR_PRIOR)),
		     (float)m->p.sigma_floor);
}

/*
 * What a late member costs its communicator (log units): the part x of
 * its mean gap beyond the usual (the other members' median), over the
 * cycle of one op without it (the usual gap and the member's own kernel
 * time, which is the transfer alone since it waits for nobody).  Everyone
 * else waits that long, so this is the slowdown of the collectives, while
 * x is that of the gap alone: a gap of microseconds between back-to-back
 * collectives can grow by a fifth with a moment of host jitter and cost
 * the job nothing.  Needs rs->lk (wait_medians).
 */
static float
wait_cost(const struct crank *rs, float x)
{
	double g = rs->gs / (double)rs->gn;
	double usual = g * exp(-(double)x);
	double cycle = usual + exp((double)rs->lk);

	return cycle > 0 ? (float)log1p((g - usual) / cycle) : 0.0f;
}

/*
 * Medians of log kernel time and log wait per step over the members that
 * reported this interval (*medw NAN when too few reported waits), taking
 * the members' logs on the way. Uses the second half of m->scratch,
 * leaving the first to the caller.
 */
static void
wait_medians(struct matrix *m, struct comm *c, float *medk, float *medw)
{
	float *v = m->scratch + c->nranks;
	uint32_t r, n = 0;

	for (r = 0; r < c->nranks; r++) {
		struct crank *rs = &c->rs[r];

		if (!wait_fresh(m, rs))
			continue;
		rs->lk = logf((float)(rs->ks / (double)rs->kn));
		rs->lw = rs->wn > 0 && rs->ws > 0
				 ? logf((float)(rs->ws / (double)rs->wn))
				 : NAN;
		v[n++] = rs->lk;
	}
	*medk = matrix_median(v, n);
	n = 0;
	for (r = 0; r < c->nranks; r++)
		if (wait_fresh(m, &c->rs[r]) && !isnan(c->rs[r].lw))
			v[n++] = c->rs[r].lw;
	*medw = n >= wait_quorum(m, c) ? matrix_median(v, n) : NAN;
}

/*
 * Median log mean gap of the members other than rank that reported,
 * what rank's lateness is measured against (in a pair the other
 * member's, not the midpoint, which would halve it).  Uses v (nranks).
 */
static float
wait_others(const struct matrix *m, const struct comm *c, uint32_t rank,
	    float *v)
{
	uint32_t r, n = 0;

	for (r = 0; r < c->nranks; r++)
		if (r != rank && wait_fresh(m, &c->rs[r]))
			v[n++] = c->rs[r].lm;
	return matrix_median(v, n);
}

/*
 * A host-local communicator's median log gap medg against its own
 * baseline: min_slowdown above it (once warm) marks the host as computing
 * slower than it used to, the sign of a host slowed as a whole that
 * wait_waited() needs; otherwise the baseline learns from it.
 */
static void
wait_local(struct matrix *m, struct comm *c, float medg)
{
	float a;

	if (c->gwarm >= m->p.warm_intervals && medg - c->gbase >= m->lmin) {
		m->hosts[m->devs[c->dev[0]].hidx].slow_iv = m->iv + 1;
		m->slow_iv = m->iv + 1;
		return;
	}
	a = c->gwarm < m->inv_len ? m->inv[c->gwarm] : (float)m->p.base_alpha;
	c->gbase += a * (medg - c->gbase);
	if (c->gwarm < UINT8_MAX)
		c->gwarm++;
}

/*
 * The member everyone else waits for, though its own gap here is usual:
 * its kernels are the shortest by cold_slowdown and cold_z_min over the
 * members' spread, its waits at most the median.  Kernel times are
 * compared across members only, never with a baseline of the member's
 * own, so the thresholds are those before a baseline exists: the last
 * to arrive by chance, a few percent late, is no culprit.  It is late because
 * of what it did before, on other communicators: a host slowed as a whole is
 * equally late inside its own (tensor-parallel) communicator, so only the
 * cross-host communicators show it, as this.  Only when a host-local
 * communicator of its host computes slower than it used to (wait_local),
 * which a rank late from waiting on another (a pipeline stage behind a
 * slow one) does not.  Not when a host-local
 * communicator of its host had a late member of its own within weak_n
 * intervals (one slow GPU makes its whole host late: the gap names it).
 * The slowdown, the others' cycle (usual gap and kernel) over its own,
 * must reach cold_slowdown too; the evidence is weak (weak_k of weak_n).
 * Returns 0 or -1.
 */
static int
wait_waited(struct matrix *m, struct comm *c)
{
	const struct matrix_params *p = &m->p;
	float *v = m->scratch, medk, medw, sig, g;
	uint32_t r, n = 0;

	wait_medians(m, c, &medk, &medw);
	for (r = 0; r < c->nranks; r++)
		if (wait_fresh(m, &c->rs[r]))
			v[n++] = fabsf(c->rs[r].lk - medk);
	sig = fmaxf(1.4826f * matrix_median(v, n), (float)p->sigma_floor);
	for (r = 0; r < c->nranks; r++) {
		const struct crank *rs = &c->rs[r];
		const struct host *h = &m->hosts[m->devs[c->dev[r]].hidx];
		float x = medk - rs->lk, lr;

		if (!wait_fresh(m, rs) || rs->late || x < m->lcold ||
		    x < (float)p->cold_z_min * sig)
			continue;
		if (!isnan(medw) && !isnan(rs->lw) && rs->lw > medw)
			continue;
		if (h->slow_iv != m->iv + 1 ||
		    (h->lead_iv != 0 && h->lead_iv + p->weak_n > m->iv + 1))
			continue;
		g = expf(wait_others(m, c, r, v));
		lr = logf((g + expf(medk)) / (g + expf(rs->lk)));
		if (lr < m->lcold)
			continue;
		if (wait_observe(m, c, r, lr, x / sig, PERSIST_WEAK,
				 MATRIX_BASIS_KERNEL) < 0)
			return -1;
	}
	return 0;
}

/*
 * Judge one communicator: medians of log gap, log kernel time and log wait
 * over the members that reported, each member's gap against the median
 * and its own baseline, a robust z over the members, the wait-chain
 * confirmation (kernel time and wait not above the median) and the cost
 * to the collectives (wait_cost) of at least min_slowdown.
 *
 * A communicator smaller than min_group (2 or 3 members: one GPU pair, a
 * small pipeline stage) has no spread over members to speak of. Its
 * members are judged on their own history instead: z is the deviation
 * from the member's baseline over its own noise (wait_own_sigma). Before
 * the baseline is warm only a gap lcold beyond the others' counts, and
 * only when the others' kernels are measurably longer (they wait for it).
 */
/* A clean gap sample q of rs: a running mean first, then an EWMA. */
static void
wait_learn(const struct matrix *m, struct crank *rs, float q)
{
	float a = rs->gwarm < m->inv_len ? m->inv[rs->gwarm]
					 : (float)m->p.base_alpha;

	if (rs->gwarm > 0) {
		float d = q - rs->gbase;

		rs->gvar += a * (d * d - rs->gvar);
	}
	rs->gbase += a * (q - rs->gbase);
	if (rs->gwarm < UINT8_MAX)
		rs->gwarm++;
}

static int
wait_comm(struct matrix *m, struct comm *c)
{
	const struct matrix_params *p = &m->p;
	float *v = m->scratch;
	float medg, medk, medw = NAN, medr, mad, sig = 0;
	float clean = m->lmin;
	int small = c->nranks < p->min_group, useq = 1;
	uint32_t r, n = 0;

	/*
	 * Means are not on the scale of the quantiles (a mean is 1.2 to 1.5
	 * times the quantiles' in runs on GPUs): all members are placed by
	 * one of them, the quantiles when every member's summaries had them.
	 */
	for (r = 0; r < c->nranks; r++) {
		struct crank *rs = &c->rs[r];

		if (!wait_fresh(m, rs))
			continue;
		rs->lm = logf((float)(rs->gs / (double)rs->gn));
		if (!rs->qall)
			useq = 0;
		n++;
	}
	if (n < wait_quorum(m, c) || n * 2 < c->nranks)
		return 0;
	n = 0;
	for (r = 0; r < c->nranks; r++) {
		struct crank *rs = &c->rs[r];

		if (!wait_fresh(m, rs))
			continue;
		rs->lg = useq ? logf((float)(rs->gl / (double)rs->gn)) : rs->lm;
		v[n++] = rs->lg;
	}
	medg = matrix_median(v, n);
	if (c->local)
		wait_local(m, c, medg);
	n = 0;
	for (r = 0; r < c->nranks; r++) {
		struct crank *rs = &c->rs[r];
		float q;

		if (!wait_fresh(m, rs))
			continue;
		q = rs->lg - medg;
		v[n++] = rs->gwarm >= p->warm_intervals ? q - rs->gbase : q;
	}
	medr = matrix_median(v, n);
	if (!small) {
		for (r = 0; r < n; r++)
			v[r] = fabsf(v[r] - medr);
		mad = matrix_median(v, n);
		sig = fmaxf(1.4826f * mad, (float)p->sigma_floor);
	}
	medk = NAN; /* kernel and wait medians only when a gap stands out */
	for (r = 0; r < c->nranks; r++) {
		struct crank *rs = &c->rs[r];
		int warm = rs->gwarm >= p->warm_intervals, hot, prev;
		unsigned pre;
		float q, x, z, lr = 0, cost = 0;

		if (!wait_fresh(m, rs))
			continue;
		q = rs->lg - medg;
		x = (warm ? q - rs->gbase : q) - medr;
		z = x / (small ? wait_own_sigma(m, rs) : sig);
		rs->late = x >= m->lmin;
		prev = wait_history(m, rs, x, z, warm && !useq, &pre);
		if (c->local && rs->late && z >= (float)p->z_min)
			m->hosts[m->devs[c->dev[r]].hidx].lead_iv = m->iv + 1;
		if (warm)
			hot = prev && x >= m->lmin && z >= (float)p->z_min;
		else if (small)
			hot = x >= m->lcold;
		else
			hot = x >= m->lcold && z >= (float)p->cold_z_min;
		/* the culprit waits least: short kernels, little wait */
		if (hot && isnan(medk))
			wait_medians(m, c, &medk, &medw);
		if (hot && rs->lk > (small && !warm ? medk - m->lmin : medk))
			hot = 0;
		if (hot && !isnan(medw) && !isnan(rs->lw) && rs->lw > medw)
			hot = 0;
		/*
		 * and its lateness must cost the collectives min_slowdown,
		 * priced on its mean gap against the other members' median
		 */
		if (hot) {
			lr = rs->lm - wait_others(m, c, r, v);
			cost = wait_cost(rs, lr);
		}
		if (hot && cost < m->lmin)
			hot = 0;
		if (hot) {
			if (wait_observe(
				    m, c, r, lr, z,
				    (cost < 2.0f * m->lmin ? PERSIST_WEAK : 0) |
					    pre,
				    MATRIX_BASIS_WAIT) < 0)
				return -1;
			continue;
		}
		if (warm && x >= clean)
			continue;
		wait_learn(m, rs, q);
	}
	/* local ones are judged first: no host slower, nothing to do */
	if (!small && !c->local && m->slow_iv == m->iv + 1)
		return wait_waited(m, c);
	return 0;
}

/* Run the wait-chain judgment on every communicator. Returns 0 or -1. */
int
wait_detect(struct matrix *m)
{
	uint32_t ci, maxn = 0;
	int pass;

	for (ci = 0; ci < m->ncomms; ci++)
		if (m->comms[ci].nranks > maxn)
			maxn = m->comms[ci].nranks;
	if (mem_grow((void **)&m->scratch, &m->cscratch, 2 * maxn + 1,
		     sizeof(*m->scratch)) < 0)
		return -1;
	spike_begin(m, &m->spr);
	/* host-local communicators first: they say whose host leads */
	for (pass = 0; pass < 2; pass++)
		for (ci = 0; ci < m->ncomms; ci++) {
			struct comm *c = &m->comms[ci];

			if (c->nranks < 2 || c->retired ||
			    c->local != (pass == 0))
				continue;
			if (wait_comm(m, c) < 0)
				return -1;
		}
	return 0;
}
