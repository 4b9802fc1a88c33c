/*
 * linkest.c: per-cable loss estimates with confidence bounds and the link
 * states judged from them (see linkest.h for the model).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linkest.h"

/* A return path: up to a cable up, a cable down and the other NIC port. */
struct linkest_alt {
	uint32_t e[3];
	uint8_t n;
};

/* A probe group: same source port, TTL and resolved cables in a round. */
struct linkest_grp {
	uint32_t port, up, down;
	uint8_t ttl;
	uint32_t sent, lost;
	double rtt_sum; /* rtt_us x answers */
	size_t alt_first;
	uint32_t nalt;
};

struct linkest_round {
	struct linkest_grp *g;
	size_t n, cap;
	struct linkest_alt *alt;
	size_t nalt, capalt;
};

struct linkest {
	const struct topo *t;
	struct linkest_conf c;
	uint32_t nelem;
	uint32_t *bidx; /* [leaf * nspines + spine]: bundle or TOPO_NONE */
	struct linkest_round r[LINKEST_WINDOW_MAX];
	uint32_t cur; /* the slot being filled */
	double *q, *reach, *lostat, *rtt, *rttn, *qd, *qdn;
	struct linkest_dir *est;
	struct linkest_stats st;
};

static void
linkest_defaults(struct linkest_conf *c)
{
	if (c->window == 0)
		c->window = 3;
	if (c->window > LINKEST_WINDOW_MAX)
		c->window = LINKEST_WINDOW_MAX;
	if (c->z <= 0)
		c->z = 3.0;
	if (c->loss_degraded <= 0)
		c->loss_degraded = 0.01;
	if (c->loss_down <= 0)
		c->loss_down = 0.25;
	if (c->loss_recover <= 0)
		c->loss_recover = 0.005;
	if (c->min_probes <= 0)
		c->min_probes = 50;
	if (c->gbn_window == 0)
		c->gbn_window = 128;
	if (c->queue_us <= 0)
		c->queue_us = 1000;
}

struct linkest *
linkest_new(const struct topo *t, const struct linkest_conf *conf)
{
	struct linkest *e;
	size_t nb;

	if (!t->final)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->t = t;
	if (conf != NULL)
		e->c = *conf;
	linkest_defaults(&e->c);
	e->nelem = 2 * t->nlinks + t->nports;
	nb = (size_t)t->nleaves * t->nspines;
	e->bidx = malloc((nb ? nb : 1) * sizeof(*e->bidx));
	e->q = calloc(e->nelem + 1, sizeof(double));
	e->reach = calloc(e->nelem + 1, sizeof(double));
	e->lostat = calloc(e->nelem + 1, sizeof(double));
	e->rtt = calloc(e->nelem + 1, sizeof(double));
	e->rttn = calloc(e->nelem + 1, sizeof(double));
	e->qd = calloc(e->nelem + 1, sizeof(double));
	e->qdn = calloc(e->nelem + 1, sizeof(double));
	e->est = calloc(e->nelem + 1, sizeof(*e->est));
	if (e->bidx == NULL || e->q == NULL || e->reach == NULL ||
	    e->lostat == NULL || e->rtt == NULL || e->rttn == NULL ||
	    e->qd == NULL || e->qdn == NULL || e->est == NULL) {
		linkest_free(e);
		return NULL;
	}
	for (size_t i = 0; i < nb; i++)
		e->bidx[i] = TOPO_NONE;
	for (uint32_t b = 0; b < t->nbundles; b++)
		e->bidx[(size_t)t->bundles[b].leaf * t->nspines +
			t->bundles[b].spine] = b;
	return e;
}

void
linkest_free(struct linkest *e)
{
	if (e == NULL)
		return;
	for (uint32_t i = 0; i < LINKEST_WINDOW_MAX; i++) {
		free(e->r[i].g);
		free(e->r[i].alt);
	}
	free(e->bidx);
	free(e->q);
	free(e->reach);
	free(e->lostat);
	free(e->rtt);
	free(e->rttn);
	free(e->qd);
	free(e->qdn);
	free(e->est);
	free(e);
}

void
linkest_clear(struct linkest *e)
{
	for (uint32_t i = 0; i < LINKEST_WINDOW_MAX; i++)
		e->r[i].n = e->r[i].nalt = 0;
	memset(e->est, 0, e->nelem * sizeof(*e->est));
}

/*
 * Makes room for one more element of size in *v (*cap elements, n used),
 * doubling from first; 0 or -1 without memory (*v unchanged).
 */
static int
linkest_grow(void **v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t nc;
	void *g;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : first;
	g = realloc(*v, nc * size);
	if (g == NULL)
		return -1;
	*v = g;
	*cap = nc;
	return 0;
}

int
linkest_add(struct linkest *e, uint32_t src_port, uint8_t ttl, uint32_t up,
	    uint32_t down, uint32_t sent, uint32_t received, double rtt_us)
{
	struct linkest_round *r = &e->r[e->cur];
	const struct topo *t = e->t;

	if (src_port >= t->nports || received > sent)
		return -1;
	if (ttl < 1 || ttl > 3 || sent == 0)
		return 0;
	if (ttl >= 2 &&
	    (up >= t->nlinks || t->links[up].leaf != t->ports[src_port].leaf))
		return up == TOPO_NONE ? 0 : -1;
	if (ttl == 3 &&
	    (down >= t->nlinks || t->links[down].spine != t->links[up].spine))
		return down == TOPO_NONE ? 0 : -1;
	if (linkest_grow((void **)&r->g, &r->cap, r->n, sizeof(*r->g), 256) < 0)
		return -1;
	r->g[r->n++] = (struct linkest_grp){
		.port = src_port,
		.up = ttl >= 2 ? up : TOPO_NONE,
		.down = ttl == 3 ? down : TOPO_NONE,
		.ttl = ttl,
		.sent = sent,
		.lost = sent - received,
		.rtt_sum = rtt_us * received,
	};
	return 0;
}

static int
linkest_cmp_grp(const void *x, const void *y)
{
	const struct linkest_grp *a = x, *b = y;

	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	if (a->ttl != b->ttl)
		return a->ttl < b->ttl ? -1 : 1;
	if (a->up != b->up)
		return a->up < b->up ? -1 : 1;
	if (a->down != b->down)
		return a->down < b->down ? -1 : 1;
	return 0;
}

/* Appends one return path; -1 without memory. */
static int
linkest_alt_push(struct linkest_round *r, uint32_t e0, uint32_t e1, uint32_t e2)
{
	struct linkest_alt *a;

	if (linkest_grow((void **)&r->alt, &r->capalt, r->nalt, sizeof(*r->alt),
			 1024) < 0)
		return -1;
	a = &r->alt[r->nalt++];
	a->n = 0;
	if (e0 != TOPO_NONE)
		a->e[a->n++] = e0;
	if (e1 != TOPO_NONE)
		a->e[a->n++] = e1;
	if (e2 != TOPO_NONE)
		a->e[a->n++] = e2;
	return 0;
}

/*
 * The return paths of g's answers: from the answering switch toward the
 * leaves holding the source IP (the source port's leaf, and for a bonded
 * NIC the other port's leaf, arriving on the other port).  -1 without
 * memory; g->nalt stays 0 when there are more than LINKEST_ALTS_MAX.
 */
static int
linkest_alts(struct linkest *e, struct linkest_round *r, struct linkest_grp *g)
{
	const struct topo *t = e->t;
	const struct topo_nic *nic = &t->nics[t->ports[g->port].nic];
	uint32_t tl[2], tx[2], nt = 1, ns = t->nspines;
	uint32_t pe = 2 * t->nlinks; /* first port element */
	size_t first = r->nalt;

	tl[0] = t->ports[g->port].leaf;
	tx[0] = TOPO_NONE;
	for (uint8_t s = 0; s < TOPO_SIDES; s++) {
		uint32_t o = nic->port[s];

		if (o != g->port && t->ports[o].ip == t->ports[g->port].ip) {
			tl[nt] = t->ports[o].leaf;
			tx[nt++] = pe + o;
		}
	}
	g->alt_first = first;
	if (g->ttl == 1) {
		if (linkest_alt_push(r, TOPO_NONE, TOPO_NONE, TOPO_NONE) < 0)
			return -1;
		goto done;
	}
	if (g->ttl == 2) {
		for (uint32_t k = 0; k < nt; k++) {
			uint32_t b = e->bidx[(size_t)tl[k] * ns +
					     t->links[g->up].spine];

			for (uint32_t c = 0;
			     b != TOPO_NONE && c < t->bundles[b].count; c++)
				if (linkest_alt_push(
					    r,
					    2 * (t->bundles[b].first_link + c) +
						    LINKEST_DOWN,
					    tx[k], TOPO_NONE) < 0)
					return -1;
		}
		goto done;
	}
	/* TTL 3: the destination leaf D answers. */
	for (uint32_t k = 0; k < nt; k++)
		if (t->links[g->down].leaf == tl[k]) { /* D holds the IP */
			if (linkest_alt_push(r, tx[k], TOPO_NONE, TOPO_NONE) <
			    0)
				return -1;
			goto done;
		}
	for (uint32_t s = 0; s < ns; s++) {
		uint32_t bd = e->bidx[(size_t)t->links[g->down].leaf * ns + s];

		for (uint32_t k = 0; bd != TOPO_NONE && k < nt; k++) {
			uint32_t bt = e->bidx[(size_t)tl[k] * ns + s];

			if (bt == TOPO_NONE)
				continue;
			if (r->nalt - first +
				    (size_t)t->bundles[bd].count *
					    t->bundles[bt].count >
			    LINKEST_ALTS_MAX) {
				r->nalt = first;
				goto done;
			}
			for (uint32_t c1 = 0; c1 < t->bundles[bd].count; c1++)
				for (uint32_t c2 = 0; c2 < t->bundles[bt].count;
				     c2++)
					if (linkest_alt_push(
						    r,
						    2 * (t->bundles[bd]
								 .first_link +
							 c1) +
							    LINKEST_UP,
						    2 * (t->bundles[bt]
								 .first_link +
							 c2) +
							    LINKEST_DOWN,
						    tx[k]) < 0)
						return -1;
		}
	}
done:
	if (r->nalt - first > LINKEST_ALTS_MAX)
		r->nalt = first;
	g->nalt = (uint32_t)(r->nalt - first);
	return 0;
}

/* Sums equal groups of the round being closed and finds their returns. */
static int
linkest_close(struct linkest *e, struct linkest_round *r)
{
	size_t n = 0;

	if (r->n > 0)
		qsort(r->g, r->n, sizeof(*r->g), linkest_cmp_grp);
	for (size_t i = 0; i < r->n; i++) {
		if (n > 0 && linkest_cmp_grp(&r->g[n - 1], &r->g[i]) == 0) {
			r->g[n - 1].sent += r->g[i].sent;
			r->g[n - 1].lost += r->g[i].lost;
			r->g[n - 1].rtt_sum += r->g[i].rtt_sum;
			continue;
		}
		r->g[n++] = r->g[i];
	}
	r->n = n;
	r->nalt = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (linkest_alts(e, r, &r->g[i]) < 0)
			return -1;
		if (r->g[i].nalt == 0)
			e->st.skipped++;
		else
			e->st.groups++;
	}
	return 0;
}

/* The forward elements of g, in the order a probe crosses them. */
static uint32_t
linkest_fwd(const struct linkest *e, const struct linkest_grp *g, uint32_t *f)
{
	uint32_t n = 0;

	f[n++] = 2 * e->t->nlinks + g->port;
	if (g->ttl >= 2)
		f[n++] = 2 * g->up + LINKEST_UP;
	if (g->ttl == 3)
		f[n++] = 2 * g->down + LINKEST_DOWN;
	return n;
}

/*
 * The E-step of one group: the posterior of its return paths given the
 * current losses, and the probes expected to reach and to be lost at
 * every element of each path, weighted by that posterior.
 */
static void
linkest_estep(struct linkest *e, const struct linkest_round *r,
	      const struct linkest_grp *g, double *w)
{
	const struct linkest_alt *alt = &r->alt[g->alt_first];
	uint32_t f[3], nf = linkest_fwd(e, g, f);
	double pf = 1, top = -INFINITY, sum = 0;
	double recv = (double)(g->sent - g->lost), lost = (double)g->lost;

	for (uint32_t i = 0; i < nf; i++)
		pf *= 1 - e->q[f[i]];
	for (uint32_t a = 0; a < g->nalt; a++) {
		double s = pf;

		for (uint8_t i = 0; i < alt[a].n; i++)
			s *= 1 - e->q[alt[a].e[i]];
		s = s < 1e-12 ? 1e-12 : s > 1 - 1e-12 ? 1 - 1e-12 : s;
		w[a] = recv * log(s) + lost * log1p(-s);
		if (w[a] > top)
			top = w[a];
	}
	for (uint32_t a = 0; a < g->nalt; a++)
		sum += (w[a] = exp(w[a] - top));
	for (uint32_t a = 0; a < g->nalt; a++) {
		double wa = w[a] / sum, pre = 1, s = pf;
		uint32_t path[6], n = 0;

		if (wa < 1e-9)
			continue;
		for (uint32_t i = 0; i < nf; i++)
			path[n++] = f[i];
		for (uint8_t i = 0; i < alt[a].n; i++) {
			path[n++] = alt[a].e[i];
			s *= 1 - e->q[alt[a].e[i]];
		}
		for (uint32_t i = 0; i < n; i++) {
			double qx = e->q[path[i]];

			e->reach[path[i]] += wa * recv;
			if (lost > 0 && s < 1) {
				e->reach[path[i]] +=
					wa * lost * (pre - s) / (1 - s);
				e->lostat[path[i]] +=
					wa * lost * pre * qx / (1 - s);
			}
			pre *= 1 - qx;
		}
	}
}

/* One EM iteration; returns the largest change of an estimate. */
static double
linkest_iterate(struct linkest *e, double *w)
{
	double most = 0;

	memset(e->reach, 0, e->nelem * sizeof(double));
	memset(e->lostat, 0, e->nelem * sizeof(double));
	for (uint32_t s = 0; s < e->c.window; s++)
		for (size_t i = 0; i < e->r[s].n; i++)
			if (e->r[s].g[i].nalt > 0)
				linkest_estep(e, &e->r[s], &e->r[s].g[i], w);
	for (uint32_t x = 0; x < e->nelem; x++) {
		double nq, d;

		if (e->reach[x] <= 0)
			continue;
		nq = e->lostat[x] / e->reach[x];
		nq = nq < 1e-6 ? 1e-6 : nq > 0.999 ? 0.999 : nq;
		d = fabs(nq - e->q[x]);
		if (d > most)
			most = d;
		e->q[x] = nq;
	}
	return most;
}

/*
 * The control of g in its (sorted, closed) round: the same port's group
 * one TTL shorter (TTL 1 for TTL 2; TTL 2 through the same up cable for
 * TTL 3); NULL when none was answered.
 */
static const struct linkest_grp *
linkest_control(const struct linkest_round *r, const struct linkest_grp *g)
{
	struct linkest_grp k = {.port = g->port,
				.ttl = (uint8_t)(g->ttl - 1),
				.up = g->ttl == 3 ? g->up : TOPO_NONE,
				.down = TOPO_NONE};
	const struct linkest_grp *c =
		bsearch(&k, r->g, r->n, sizeof(*r->g), linkest_cmp_grp);

	return c != NULL && c->sent > c->lost ? c : NULL;
}

/*
 * The RTT of the answers that crossed each element forward last (mean
 * over the window), and the queueing delay it adds over its control: the
 * largest mean of one round of the window, so that a round of congestion
 * is not averaged away by the clean rounds before it.
 */
static void
linkest_rtts(struct linkest *e)
{
	double *qd = e->qd, *qn = e->qdn;

	memset(e->rtt, 0, e->nelem * sizeof(double));
	memset(e->rttn, 0, e->nelem * sizeof(double));
	for (uint32_t x = 0; x < e->nelem; x++)
		e->est[x].queue_us = 0;
	for (uint32_t s = 0; s < e->c.window; s++) {
		memset(qd, 0, e->nelem * sizeof(double));
		memset(qn, 0, e->nelem * sizeof(double));
		for (size_t i = 0; i < e->r[s].n; i++) {
			const struct linkest_grp *g = &e->r[s].g[i], *c;
			uint32_t f[3], nf = linkest_fwd(e, g, f);
			double n = g->sent - g->lost;

			e->rtt[f[nf - 1]] += g->rtt_sum;
			e->rttn[f[nf - 1]] += n;
			if (g->ttl < 2 || n == 0 ||
			    (c = linkest_control(&e->r[s], g)) == NULL)
				continue;
			qd[f[nf - 1]] +=
				g->rtt_sum -
				n * c->rtt_sum / (double)(c->sent - c->lost);
			qn[f[nf - 1]] += n;
		}
		for (uint32_t x = 0; x < e->nelem; x++)
			if (qn[x] > 0 && qd[x] / qn[x] > e->est[x].queue_us)
				e->est[x].queue_us = qd[x] / qn[x];
	}
}

int
linkest_round_end(struct linkest *e)
{
	double *w = malloc(LINKEST_ALTS_MAX * sizeof(*w));
	uint32_t it;

	if (w == NULL || linkest_close(e, &e->r[e->cur]) < 0) {
		free(w);
		return -1;
	}
	for (uint32_t x = 0; x < e->nelem; x++)
		e->q[x] = 1e-3;
	for (it = 0; it < LINKEST_EM_ITERS; it++)
		if (linkest_iterate(e, w) < LINKEST_EM_EPS)
			break;
	free(w);
	e->st.em_runs++;
	e->st.em_iters += it;
	linkest_rtts(e);
	for (uint32_t x = 0; x < e->nelem; x++) {
		struct linkest_dir *d = &e->est[x];

		d->reach = e->reach[x];
		d->lost = e->lostat[x];
		d->loss = d->reach > 0 ? d->lost / d->reach : 0;
		linkest_wilson(d->lost, d->reach, e->c.z, &d->lo, &d->hi);
		d->rtt_us = e->rttn[x] > 0 ? e->rtt[x] / e->rttn[x] : 0;
	}
	e->cur = (e->cur + 1) % e->c.window;
	e->r[e->cur].n = e->r[e->cur].nalt = 0;
	return 0;
}

const struct linkest_dir *
linkest_elem(const struct linkest *e, uint32_t elem)
{
	return elem < e->nelem ? &e->est[elem] : NULL;
}

enum linkest_state
linkest_judge(const struct linkest *e, uint32_t link, enum linkest_state cur,
	      double *loss)
{
	double lo = -1, hi = -1, worst = 0, any = 0;

	if (loss != NULL)
		*loss = 0;
	if (link >= e->t->nlinks)
		return cur;
	for (uint32_t d = 0; d < 2; d++) {
		const struct linkest_dir *x = &e->est[2 * link + d];

		if (x->reach < e->c.min_probes)
			continue;
		if (x->hi > hi)
			hi = x->hi;
		if (x->loss > any)
			any = x->loss;
		if (x->queue_us > e->c.queue_us) {
			if (lo < 0)
				lo = 0; /* evidence, but not of a failure */
			continue;
		}
		if (x->lo > lo) {
			lo = x->lo;
			worst = x->loss;
		}
	}
	if (lo < 0)
		return cur;
	/* congested directions still weigh a cable already marked */
	if (loss != NULL)
		*loss = worst > 0 ? worst : any;
	if (lo > e->c.loss_down)
		return LINKEST_BAD;
	if (hi < e->c.loss_recover)
		return LINKEST_OK;
	if (cur == LINKEST_OK && lo > e->c.loss_degraded)
		return LINKEST_DEGRADED;
	if (cur == LINKEST_BAD && hi < e->c.loss_down)
		return LINKEST_DEGRADED;
	return cur;
}

double
linkest_weight(const struct linkest_conf *c, double loss)
{
	double w;

	if (loss <= 0)
		return 1;
	if (loss >= 1)
		return LINKEST_WEIGHT_MIN;
	w = (1 - loss) / (1 + ((double)c->gbn_window - 1) * loss);
	return w < LINKEST_WEIGHT_MIN ? LINKEST_WEIGHT_MIN : w > 1 ? 1 : w;
}

void
linkest_wilson(double k, double n, double z, double *lo, double *hi)
{
	double p, z2, den, mid, half;

	if (n <= 0) {
		*lo = 0;
		*hi = 1;
		return;
	}
	p = k / n;
	p = p < 0 ? 0 : p > 1 ? 1 : p;
	z2 = z * z;
	den = 1 + z2 / n;
	mid = (p + z2 / (2 * n)) / den;
	half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den;
	*lo = mid - half < 0 ? 0 : mid - half;
	*hi = mid + half > 1 ? 1 : mid + half;
}

const struct linkest_stats *
linkest_get_stats(const struct linkest *e)
{
	return &e->st;
}

const struct linkest_conf *
linkest_get_conf(const struct linkest *e)
{
	return &e->c;
}
