/*
 * alloc.c: the C4P source-port allocator (see alloc.h for the contract).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "errbuf.h"
#include "tmap.h"

struct alloc_req {
	char id[ALLOC_REQID_MAX];
	uint64_t job;
	uint64_t expires;
	uint32_t *qps; /* QP slots in index order */
	uint32_t nqp;
	bool live;
};

struct alloc_qp {
	uint64_t id;
	uint32_t req;
	uint32_t index;
	struct alloc_qp_req rq;
	struct path path;
	uint16_t sport;
	uint8_t side;
	bool live;
	bool stranded;
};

/* A growable stack of free slot numbers. */
struct alloc_freelist {
	uint32_t *v;
	uint32_t n, cap;
};

struct alloc {
	struct topo *t;
	struct catalog *cat;
	uint64_t *lup, *ldown; /* per cable direction */
	uint64_t *bup, *bdown; /* per bundle direction */
	double *inv_bcap;      /* 1 / healthy capacity per bundle (0: none) */
	uint64_t *ptx, *prx;   /* per port */
	struct alloc_qp *qp;
	uint32_t nqp, qp_cap;
	struct alloc_freelist qp_free;
	struct alloc_req *rq;
	uint32_t nrq, rq_cap;
	struct alloc_freelist rq_free;
	struct tmap rq_idx;
	uint64_t next_id;
	size_t live_qps, live_reqs, stranded;
	double *inv_link; /* 1 / cable capacity */
	/* last catalog entry used (QPs of a batch share few keys) */
	struct catalog_key ckey;
	const struct catalog_entry *cent;
	uint64_t cgen;
};

/* Reports running out of memory; returns -ENOMEM. */
static int
alloc_nomem(char *err, size_t errlen)
{
	errbuf_set(err, errlen, "out of memory");
	return -ENOMEM;
}

static int
alloc_fl_push(struct alloc_freelist *f, uint32_t s)
{
	if (f->n == f->cap) {
		uint32_t ncap = f->cap == 0 ? 64 : f->cap * 2;
		uint32_t *nv = realloc(f->v, (size_t)ncap * sizeof(*nv));

		if (nv == NULL)
			return -1;
		f->v = nv;
		f->cap = ncap;
	}
	f->v[f->n++] = s;
	return 0;
}

static void
alloc_bundle_cap(struct alloc *a, uint32_t b)
{
	const struct topo_bundle *bd = &a->t->bundles[b];
	double cap;

	cap = topo_bundle_healthy(a->t, b) * a->t->links[bd->first_link].gbps;
	a->inv_bcap[b] = cap > 0 ? 1.0 / cap : 0;
}

struct alloc *
alloc_new(struct topo *t, struct catalog *c)
{
	struct alloc *a;
	uint32_t b;

	if (!t->final)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return NULL;
	a->t = t;
	a->cat = c;
	a->next_id = 1;
	a->lup = calloc((size_t)t->nlinks + 1, sizeof(uint64_t));
	a->ldown = calloc((size_t)t->nlinks + 1, sizeof(uint64_t));
	a->bup = calloc((size_t)t->nbundles + 1, sizeof(uint64_t));
	a->bdown = calloc((size_t)t->nbundles + 1, sizeof(uint64_t));
	a->inv_bcap = calloc((size_t)t->nbundles + 1, sizeof(double));
	a->ptx = calloc((size_t)t->nports + 1, sizeof(uint64_t));
	a->inv_link = calloc((size_t)t->nlinks + 1, sizeof(double));
	a->prx = calloc((size_t)t->nports + 1, sizeof(uint64_t));
	if (a->lup == NULL || a->ldown == NULL || a->bup == NULL ||
	    a->bdown == NULL || a->inv_bcap == NULL || a->ptx == NULL ||
	    a->prx == NULL || a->inv_link == NULL) {
		alloc_free(a);
		return NULL;
	}
	for (b = 0; b < t->nbundles; b++)
		alloc_bundle_cap(a, b);
	for (b = 0; b < t->nlinks; b++)
		a->inv_link[b] = 1.0 / t->links[b].gbps;
	return a;
}

void
alloc_free(struct alloc *a)
{
	uint32_t i;

	if (a == NULL)
		return;
	for (i = 0; i < a->nrq; i++)
		free(a->rq[i].qps);
	free(a->rq);
	free(a->qp);
	free(a->qp_free.v);
	free(a->rq_free.v);
	tmap_free(&a->rq_idx);
	free(a->lup);
	free(a->ldown);
	free(a->bup);
	free(a->bdown);
	free(a->inv_bcap);
	free(a->ptx);
	free(a->prx);
	free(a->inv_link);
	free(a);
}

/* ---- request index ------------------------------------------------------ */

struct alloc_key {
	const struct alloc *a;
	const char *id;
};

static bool
alloc_rq_eq(const void *arg, uint32_t slot)
{
	const struct alloc_key *k = arg;

	return strcmp(k->a->rq[slot].id, k->id) == 0;
}

static uint64_t
alloc_rq_rehash(const void *arg, uint32_t slot)
{
	const struct alloc *a = arg;

	return tmap_str(a->rq[slot].id);
}

static uint32_t
alloc_rq_find(const struct alloc *a, const char *id)
{
	struct alloc_key k = {a, id};

	return tmap_find(&a->rq_idx, tmap_str(id), alloc_rq_eq, &k);
}

/* ---- loads ----------------------------------------------------------------
 */

static uint64_t
alloc_w(const struct alloc_qp_req *r)
{
	return r->weight == 0 ? 1 : r->weight;
}

/* Adds (sign > 0) or removes the QP's weight along its path. */
static void
alloc_load(struct alloc *a, const struct alloc_qp *q, int sign)
{
	const struct path *p = &q->path;
	uint64_t w = alloc_w(&q->rq);

	if (sign < 0)
		w = (uint64_t)0 - w; /* unsigned wrap-around subtracts */
	a->ptx[p->src_port] += w;
	a->prx[p->dst_port] += w;
	if (p->up == TOPO_NONE)
		return;
	a->lup[p->up] += w;
	a->ldown[p->down] += w;
	a->bup[a->t->links[p->up].bundle] += w;
	a->bdown[a->t->links[p->down].bundle] += w;
}

static double
alloc_max2(double x, double y)
{
	return x > y ? x : y;
}

/*
 * Chooses the best healthy same-side record of e for a QP of weight w
 * toward side (see the contract in alloc.h). Returns the record or NULL.
 */
static const struct catalog_rec *
alloc_pick(const struct alloc *a, const struct catalog_entry *e, uint8_t side,
	   uint64_t w)
{
	const struct topo *t = a->t;
	const struct catalog_rec *best = NULL;
	double b1 = 0, b2 = 0, b3 = 0;
	uint32_t i;

	/* all same-side records share both ports: check them once */
	if (!t->ports[e->src_port].up)
		return NULL;
	for (i = 0; i < e->n; i++) {
		const struct catalog_rec *r = &e->recs[i];
		const struct path *p = &r->path;
		double c1, c2, c3, su, sd;
		uint32_t bu, bd;

		if (r->dst_side != side)
			continue;
		if (!t->ports[p->dst_port].up)
			return NULL;
		if (p->up == TOPO_NONE) {
			/* same leaf: the direct path is the only one */
			if (r->loss_permille <= CATALOG_LOSS_MAX)
				return r;
			continue;
		}
		su = (double)(a->lup[p->up] + w) * a->inv_link[p->up];
		sd = (double)(a->ldown[p->down] + w) * a->inv_link[p->down];
		c1 = alloc_max2(su, sd);
		if (best != NULL && c1 > b1)
			continue;
		if (r->loss_permille > CATALOG_LOSS_MAX ||
		    !t->links[p->up].up || !t->links[p->down].up)
			continue;
		bu = t->links[p->up].bundle;
		bd = t->links[p->down].bundle;
		c2 = alloc_max2((double)(a->bup[bu] + w) * a->inv_bcap[bu],
				(double)(a->bdown[bd] + w) * a->inv_bcap[bd]);
		c3 = su + sd;
		if (best == NULL || c1 < b1 ||
		    (c1 == b1 && (c2 < b2 || (c2 == b2 && c3 < b3)))) {
			best = r;
			b1 = c1;
			b2 = c2;
			b3 = c3;
		}
	}
	return best;
}

/*
 * Resolves the request's ports and side. *side_out is the side to use;
 * for TOPO_SIDE_ANY the one whose source tx and destination rx are less
 * loaded (left on a tie). Returns 0 or -EINVAL with a message.
 */
static int
alloc_side(const struct alloc *a, const struct alloc_qp_req *r,
	   uint8_t *side_out, char *err, size_t errlen)
{
	const struct topo *t = a->t;
	uint32_t sn = topo_nic_by_ip(t, r->sip), dn = topo_nic_by_ip(t, r->dip);
	double best = 0;
	uint8_t s, pick = TOPO_SIDES;

	if (sn == TOPO_NONE || dn == TOPO_NONE) {
		errbuf_set(err, errlen, "unknown source or destination IP");
		return -EINVAL;
	}
	if (sn == dn) {
		errbuf_set(err, errlen, "source and destination are one NIC");
		return -EINVAL;
	}
	if (r->side != TOPO_SIDE_ANY && r->side >= TOPO_SIDES) {
		errbuf_set(err, errlen, "bad side %u", r->side);
		return -EINVAL;
	}
	for (s = 0; s < TOPO_SIDES; s++) {
		uint32_t sp = t->nics[sn].port[s], dp = t->nics[dn].port[s];
		double c;

		if (r->side != TOPO_SIDE_ANY && r->side != s)
			continue;
		if (t->ports[sp].ip != r->sip || t->ports[dp].ip != r->dip)
			continue; /* unbonded: the IP names the other side */
		c = alloc_max2((double)a->ptx[sp] / t->ports[sp].gbps,
			       (double)a->prx[dp] / t->ports[dp].gbps);
		if (pick == TOPO_SIDES || c < best) {
			pick = s;
			best = c;
		}
	}
	if (pick == TOPO_SIDES) {
		errbuf_set(err, errlen,
			   "no same-side port pair for these IPs and side");
		return -EINVAL;
	}
	*side_out = pick;
	return 0;
}

/*
 * Places QP q (rq and side set) on its best path: sets path and sport and
 * adds the load. Returns 0, -ENOENT (no catalog entry or no healthy path)
 * with a message.
 */
static int
alloc_place(struct alloc *a, struct alloc_qp *q, char *err, size_t errlen)
{
	struct catalog_key k = {q->rq.sip, q->rq.dip, q->side};
	const struct catalog_entry *e;
	const struct catalog_rec *r;

	if (a->cent != NULL && a->cgen == catalog_generation(a->cat) &&
	    a->ckey.sip == k.sip && a->ckey.dip == k.dip &&
	    a->ckey.side == k.side) {
		e = a->cent;
	} else {
		e = catalog_get(a->cat, &k, err, errlen);
		if (e == NULL)
			return -ENOENT;
		a->cent = e;
		a->ckey = k;
		a->cgen = catalog_generation(a->cat);
	}
	r = alloc_pick(a, e, q->side, alloc_w(&q->rq));
	if (r == NULL) {
		errbuf_set(err, errlen, "no healthy same-side path");
		return -ENOENT;
	}
	q->path = r->path;
	q->sport = r->sport;
	alloc_load(a, q, 1);
	return 0;
}

/* Takes a QP slot; returns it or TOPO_NONE when out of memory. */
static uint32_t
alloc_qp_slot(struct alloc *a)
{
	if (a->qp_free.n > 0)
		return a->qp_free.v[--a->qp_free.n];
	if (a->nqp == a->qp_cap) {
		uint32_t ncap = a->qp_cap == 0 ? 1024 : a->qp_cap * 2;
		struct alloc_qp *nq =
			realloc(a->qp, (size_t)ncap * sizeof(*nq));

		if (nq == NULL)
			return TOPO_NONE;
		a->qp = nq;
		a->qp_cap = ncap;
	}
	return a->nqp++;
}

static uint32_t
alloc_rq_slot(struct alloc *a)
{
	if (a->rq_free.n > 0)
		return a->rq_free.v[--a->rq_free.n];
	if (a->nrq == a->rq_cap) {
		uint32_t ncap = a->rq_cap == 0 ? 256 : a->rq_cap * 2;
		struct alloc_req *nr =
			realloc(a->rq, (size_t)ncap * sizeof(*nr));

		if (nr == NULL)
			return TOPO_NONE;
		a->rq = nr;
		a->rq_cap = ncap;
	}
	a->rq[a->nrq].qps = NULL;
	return a->nrq++;
}

/* Frees a QP slot (its load must already be off if it was placed). */
static void
alloc_qp_put(struct alloc *a, uint32_t s)
{
	a->qp[s].live = false;
	/* cannot fail for lack of memory: the list never exceeds nqp and
	 * was grown when the slot was first taken */
	(void)alloc_fl_push(&a->qp_free, s);
}

static void
alloc_res(const struct alloc_qp *q, struct alloc_qp_res *out)
{
	memset(out, 0,
	       sizeof(*out)); /* padding too: answers compare bytewise */
	out->qp_id = q->id;
	out->sport = q->sport;
	out->side = q->side;
	out->stranded = q->stranded;
	out->path = q->path;
}

/* Releases request slot s and all its QPs; returns the QP count. */
static size_t
alloc_rq_release(struct alloc *a, uint32_t s)
{
	struct alloc_req *r = &a->rq[s];
	size_t n = r->nqp;
	uint32_t i;

	for (i = 0; i < r->nqp; i++) {
		struct alloc_qp *q = &a->qp[r->qps[i]];

		if (q->stranded)
			a->stranded--;
		else
			alloc_load(a, q, -1);
		alloc_qp_put(a, r->qps[i]);
	}
	tmap_remove(&a->rq_idx, tmap_str(r->id), s);
	free(r->qps);
	r->qps = NULL;
	r->nqp = 0;
	r->live = false;
	(void)alloc_fl_push(&a->rq_free, s);
	a->live_qps -= n;
	a->live_reqs--;
	return n;
}

/*
 * Reserves room so that freeing nqps more QP slots and nreqs request slots can
 * never fail: the free lists get capacity for every slot in existence.
 */
static int
alloc_reserve_free(struct alloc *a, size_t nqps, size_t nreqs)
{
	struct alloc_freelist *f[2] = {&a->qp_free, &a->rq_free};
	size_t need[2] = {(size_t)a->nqp + nqps, (size_t)a->nrq + nreqs};
	int i;

	for (i = 0; i < 2; i++) {
		if (f[i]->cap < need[i]) {
			uint32_t *nv = realloc(f[i]->v, need[i] * sizeof(*nv));

			if (nv == NULL)
				return -1;
			f[i]->v = nv;
			f[i]->cap = (uint32_t)need[i];
		}
	}
	return 0;
}

int
alloc_request(struct alloc *a, const char *req_id, uint64_t job, uint64_t now,
	      uint32_t lease_s, const struct alloc_qp_req *qps, size_t n,
	      struct alloc_qp_res *out, char *err, size_t errlen)
{
	struct alloc_req *r;
	uint32_t s, i, done = 0;
	uint64_t first_id = a->next_id;
	int rc;

	if (req_id == NULL || req_id[0] == '\0' ||
	    strlen(req_id) >= ALLOC_REQID_MAX) {
		errbuf_set(err, errlen, "request id empty or too long");
		return -EINVAL;
	}
	if (n == 0 || n > ALLOC_MAX_BATCH || lease_s == 0 ||
	    lease_s > ALLOC_MAX_LEASE_S) {
		errbuf_set(err, errlen, "QP count or lease out of range");
		return -EINVAL;
	}
	s = alloc_rq_find(a, req_id);
	if (s != TMAP_EMPTY) {
		r = &a->rq[s];
		if (r->job != job || r->nqp != n) {
			errbuf_set(
				err, errlen,
				"request id %s in use by job %llu with %u QPs",
				req_id, (unsigned long long)r->job, r->nqp);
			return -EEXIST;
		}
		/* a retry must ask for the same QPs, else it is a new request
		 * under a reused id */
		for (i = 0; i < n; i++) {
			const struct alloc_qp_req *o = &a->qp[r->qps[i]].rq;

			if (o->sip != qps[i].sip || o->dip != qps[i].dip ||
			    o->side != qps[i].side ||
			    alloc_w(o) != alloc_w(&qps[i])) {
				errbuf_set(err, errlen,
					   "request id %s: QP %u differs from "
					   "the first request",
					   req_id, i);
				return -EEXIST;
			}
		}
		r->expires = now + lease_s;
		for (i = 0; i < n; i++)
			alloc_res(&a->qp[r->qps[i]], &out[i]);
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (qps[i].weight > ALLOC_MAX_WEIGHT) {
			errbuf_set(err, errlen, "QP %u: weight over %u", i,
				   ALLOC_MAX_WEIGHT);
			return -EINVAL;
		}
	}
	/* nothing is taken yet: running out of memory here just returns */
	if (alloc_reserve_free(a, n, 1) < 0)
		return alloc_nomem(err, errlen);
	s = alloc_rq_slot(a);
	if (s == TOPO_NONE)
		return alloc_nomem(err, errlen);
	r = &a->rq[s];
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", req_id);
	r->job = job;
	r->expires = now + lease_s;
	r->qps = malloc(n * sizeof(uint32_t));
	if (r->qps == NULL) {
		(void)alloc_fl_push(&a->rq_free, s);
		return alloc_nomem(err, errlen);
	}
	for (done = 0; done < n; done++) {
		uint32_t qs = alloc_qp_slot(a);
		struct alloc_qp *q;

		if (qs == TOPO_NONE) {
			errbuf_set(err, errlen, "out of memory");
			rc = -ENOMEM;
			goto undo;
		}
		q = &a->qp[qs];
		memset(q, 0, sizeof(*q));
		q->rq = qps[done];
		q->req = s;
		q->index = done;
		rc = alloc_side(a, &q->rq, &q->side, err, errlen);
		if (rc == 0)
			rc = alloc_place(a, q, err, errlen);
		if (rc < 0) {
			alloc_qp_put(a, qs);
			goto undo;
		}
		q->id = a->next_id++;
		q->live = true;
		r->qps[done] = qs;
		alloc_res(q, &out[done]);
	}
	r->nqp = (uint32_t)n;
	r->live = true;
	if (tmap_insert(&a->rq_idx, tmap_str(r->id), s, alloc_rq_rehash, a) <
	    0) {
		errbuf_set(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto undo;
	}
	a->live_qps += n;
	a->live_reqs++;
	return 0;
undo:
	for (i = 0; i < done; i++) {
		alloc_load(a, &a->qp[r->qps[i]], -1);
		alloc_qp_put(a, r->qps[i]);
	}
	free(r->qps);
	r->qps = NULL;
	r->nqp = 0;
	r->live = false;
	(void)alloc_fl_push(&a->rq_free, s);
	a->next_id = first_id;
	return rc;
}

int
alloc_lookup(const struct alloc *a, const char *req_id,
	     struct alloc_qp_res *out, size_t n)
{
	uint32_t s = alloc_rq_find(a, req_id), i;

	if (s == TMAP_EMPTY || a->rq[s].nqp != n)
		return -ENOENT;
	for (i = 0; i < n; i++)
		alloc_res(&a->qp[a->rq[s].qps[i]], &out[i]);
	return 0;
}

size_t
alloc_release(struct alloc *a, const char *req_id)
{
	uint32_t s = alloc_rq_find(a, req_id);

	return s == TMAP_EMPTY ? 0 : alloc_rq_release(a, s);
}

size_t
alloc_release_job(struct alloc *a, uint64_t job)
{
	size_t n = 0;
	uint32_t s;

	for (s = 0; s < a->nrq; s++)
		if (a->rq[s].live && a->rq[s].job == job)
			n += alloc_rq_release(a, s);
	return n;
}

size_t
alloc_renew_job(struct alloc *a, uint64_t job, uint64_t now, uint32_t lease_s)
{
	size_t n = 0;
	uint32_t s;

	if (lease_s > ALLOC_MAX_LEASE_S)
		lease_s = ALLOC_MAX_LEASE_S;
	for (s = 0; s < a->nrq; s++) {
		if (a->rq[s].live && a->rq[s].job == job) {
			a->rq[s].expires = now + lease_s;
			n++;
		}
	}
	return n;
}

size_t
alloc_expire(struct alloc *a, uint64_t now)
{
	size_t n = 0;
	uint32_t s;

	for (s = 0; s < a->nrq; s++)
		if (a->rq[s].live && a->rq[s].expires <= now)
			n += alloc_rq_release(a, s);
	return n;
}

/* ---- health changes ------------------------------------------------------
 */

struct alloc_changes {
	struct alloc_change *v;
	size_t n, cap;
};

static int
alloc_change_push(const struct alloc *a, struct alloc_changes *c,
		  const struct alloc_qp *q, const struct path *old_path,
		  uint16_t old_sport, uint8_t kind)
{
	struct alloc_change *ch;

	if (c->n == c->cap) {
		size_t ncap = c->cap == 0 ? 64 : c->cap * 2;
		struct alloc_change *nv = realloc(c->v, ncap * sizeof(*nv));

		if (nv == NULL)
			return -1;
		c->v = nv;
		c->cap = ncap;
	}
	ch = &c->v[c->n++];
	memset(ch, 0, sizeof(*ch));
	ch->qp_id = q->id;
	ch->job = a->rq[q->req].job;
	snprintf(ch->req_id, sizeof(ch->req_id), "%s", a->rq[q->req].id);
	ch->index = q->index;
	ch->old_sport = old_sport;
	ch->new_sport = q->sport;
	ch->kind = kind;
	ch->old_path = *old_path;
	ch->new_path = q->path;
	return 0;
}

static const struct alloc *alloc_sort_ctx;

static int
alloc_cmp_id(const void *x, const void *y)
{
	uint64_t a = alloc_sort_ctx->qp[*(const uint32_t *)x].id;
	uint64_t b = alloc_sort_ctx->qp[*(const uint32_t *)y].id;

	return a < b ? -1 : a > b;
}

enum alloc_sel { ALLOC_SEL_LINK, ALLOC_SEL_PORT, ALLOC_SEL_STRANDED };

static bool
alloc_selected(const struct alloc_qp *q, enum alloc_sel sel, uint32_t id)
{
	if (!q->live)
		return false;
	switch (sel) {
	case ALLOC_SEL_LINK:
		return !q->stranded && path_uses_link(&q->path, id);
	case ALLOC_SEL_PORT:
		return !q->stranded &&
		       (q->path.src_port == id || q->path.dst_port == id);
	case ALLOC_SEL_STRANDED:
		return q->stranded;
	}
	return false;
}

/*
 * Moves every QP selected by (sel, id): takes them all off the loads, then
 * places them again one by one in QP id order. Returns 0 or -ENOMEM.
 */
static int
alloc_move(struct alloc *a, enum alloc_sel sel, uint32_t id,
	   struct alloc_change **changes, size_t *nchanges)
{
	struct alloc_changes ch = {0};
	uint32_t *sel_v = NULL, n = 0, i;
	bool push_failed = false;
	int rc = -ENOMEM;

	*changes = NULL;
	*nchanges = 0;
	for (i = 0; i < a->nqp; i++)
		n += alloc_selected(&a->qp[i], sel, id);
	if (n == 0)
		return 0;
	sel_v = malloc((size_t)n * sizeof(*sel_v));
	if (sel_v == NULL)
		return -ENOMEM;
	n = 0;
	for (i = 0; i < a->nqp; i++)
		if (alloc_selected(&a->qp[i], sel, id))
			sel_v[n++] = i;
	alloc_sort_ctx = a;
	qsort(sel_v, n, sizeof(*sel_v), alloc_cmp_id);
	alloc_sort_ctx = NULL;
	for (i = 0; i < n; i++)
		if (!a->qp[sel_v[i]].stranded)
			alloc_load(a, &a->qp[sel_v[i]], -1);
	for (i = 0; i < n; i++) {
		struct alloc_qp *q = &a->qp[sel_v[i]];
		struct path old = q->path;
		uint16_t old_sport = q->sport;
		bool was_stranded = q->stranded;
		uint8_t kind = ALLOC_MOVED;

		if (alloc_place(a, q, NULL, 0) == 0) {
			q->stranded = false;
			if (was_stranded)
				a->stranded--;
		} else {
			kind = ALLOC_STRANDED;
			if (!was_stranded) {
				q->stranded = true;
				a->stranded++;
			}
		}
		/* a stranded QP that stays stranded is no news */
		if (was_stranded && kind == ALLOC_STRANDED)
			continue;
		if (kind == ALLOC_MOVED && !was_stranded &&
		    q->sport == old_sport && path_equal(&q->path, &old))
			continue;
		/* keep placing the rest even when the report runs out of
		 * memory: the loads must stay consistent */
		if (alloc_change_push(a, &ch, q, &old, old_sport, kind) < 0)
			push_failed = true;
	}
	if (!push_failed) {
		*changes = ch.v;
		*nchanges = ch.n;
		ch.v = NULL;
		rc = 0;
	}
	free(ch.v);
	free(sel_v);
	return rc;
}

/* The worst normalized cable load of path p if weight w were added. */
static double
alloc_worst(const struct alloc *a, const struct path *p, uint64_t w)
{
	if (p->up == TOPO_NONE)
		return 0;
	return alloc_max2((double)(a->lup[p->up] + w) * a->inv_link[p->up],
			  (double)(a->ldown[p->down] + w) *
				  a->inv_link[p->down]);
}

int
alloc_rebalance(struct alloc *a, size_t max_moves,
		struct alloc_change **changes, size_t *nchanges)
{
	struct alloc_changes ch = {0};
	uint32_t *sel_v = NULL, *pos = NULL, n = 0, i, pass;
	size_t moves = 0;
	int rc = -ENOMEM;

	*changes = NULL;
	*nchanges = 0;
	sel_v = malloc(((size_t)a->nqp + 1) * sizeof(*sel_v));
	pos = malloc(((size_t)a->nqp + 1) * sizeof(*pos));
	if (sel_v == NULL || pos == NULL)
		goto out;
	for (i = 0; i < a->nqp; i++) {
		pos[i] = TOPO_NONE;
		if (a->qp[i].live && !a->qp[i].stranded &&
		    a->qp[i].path.up != TOPO_NONE)
			sel_v[n++] = i;
	}
	alloc_sort_ctx = a;
	qsort(sel_v, n, sizeof(*sel_v), alloc_cmp_id);
	alloc_sort_ctx = NULL;
	for (pass = 0; pass < ALLOC_REBALANCE_PASSES; pass++) {
		size_t before = moves;

		for (i = 0; i < n && moves < max_moves; i++) {
			struct alloc_qp *q = &a->qp[sel_v[i]];
			struct path old = q->path;
			uint16_t old_sport = q->sport;
			uint64_t w = alloc_w(&q->rq);
			double cur;

			alloc_load(a, q, -1);
			cur = alloc_worst(a, &old, w);
			if (alloc_place(a, q, NULL, 0) < 0) {
				q->path =
					old; /* cannot happen: old is healthy */
				q->sport = old_sport;
				alloc_load(a, q, 1);
				continue;
			}
			if (path_equal(&q->path, &old))
				continue;
			/* move only on a strict gain, else put it back */
			alloc_load(a, q, -1);
			if (!(alloc_worst(a, &q->path, w) < cur)) {
				q->path = old;
				q->sport = old_sport;
				alloc_load(a, q, 1);
				continue;
			}
			alloc_load(a, q, 1);
			moves++;
			if (pos[sel_v[i]] != TOPO_NONE) {
				struct alloc_change *c = &ch.v[pos[sel_v[i]]];

				c->new_sport = q->sport;
				c->new_path = q->path;
				continue;
			}
			pos[sel_v[i]] = (uint32_t)ch.n;
			if (alloc_change_push(a, &ch, q, &old, old_sport,
					      ALLOC_MOVED) < 0)
				goto out;
		}
		if (moves == before)
			break;
	}
	*changes = ch.v;
	*nchanges = ch.n;
	ch.v = NULL;
	rc = 0;
out:
	free(ch.v);
	free(sel_v);
	free(pos);
	return rc;
}

int
alloc_link_set(struct alloc *a, uint32_t link, bool up,
	       struct alloc_change **changes, size_t *nchanges)
{
	*changes = NULL;
	*nchanges = 0;
	if (topo_link_set_up(a->t, link, up) < 0)
		return -EINVAL;
	alloc_bundle_cap(a, a->t->links[link].bundle);
	if (up)
		return alloc_move(a, ALLOC_SEL_STRANDED, 0, changes, nchanges);
	return alloc_move(a, ALLOC_SEL_LINK, link, changes, nchanges);
}

int
alloc_port_set(struct alloc *a, uint32_t port, bool up,
	       struct alloc_change **changes, size_t *nchanges)
{
	*changes = NULL;
	*nchanges = 0;
	if (topo_port_set_up(a->t, port, up) < 0)
		return -EINVAL;
	if (up)
		return alloc_move(a, ALLOC_SEL_STRANDED, 0, changes, nchanges);
	return alloc_move(a, ALLOC_SEL_PORT, port, changes, nchanges);
}

/* ---- persistence ----------------------------------------------------------
 */

int
alloc_next(const struct alloc *a, size_t *cursor, struct alloc_record *rec)
{
	while (*cursor < a->nqp) {
		const struct alloc_qp *q = &a->qp[(*cursor)++];
		const struct alloc_req *r;

		if (!q->live)
			continue;
		r = &a->rq[q->req];
		memset(rec, 0, sizeof(*rec));
		snprintf(rec->req_id, sizeof(rec->req_id), "%s", r->id);
		rec->job = r->job;
		rec->expires = r->expires;
		rec->index = q->index;
		rec->nqp = r->nqp;
		rec->qp_id = q->id;
		rec->req = q->rq;
		rec->sport = q->sport;
		rec->side = q->side;
		rec->stranded = q->stranded;
		rec->path = q->path;
		return 1;
	}
	return 0;
}

static const struct alloc_record *alloc_rec_ctx;

static int
alloc_cmp_rec(const void *x, const void *y)
{
	const struct alloc_record *a = &alloc_rec_ctx[*(const uint32_t *)x];
	const struct alloc_record *b = &alloc_rec_ctx[*(const uint32_t *)y];
	int c = strcmp(a->req_id, b->req_id);

	if (c != 0)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Checks that a record's path fits its IPs, side and the topology. */
static int
alloc_rec_ok(const struct alloc *a, const struct alloc_record *r, char *err,
	     size_t errlen)
{
	const struct topo *t = a->t;
	const struct path *p = &r->path;

	if (r->side >= TOPO_SIDES || p->src_port >= t->nports ||
	    p->dst_port >= t->nports ||
	    t->ports[p->src_port].ip != r->req.sip ||
	    t->ports[p->dst_port].ip != r->req.dip ||
	    t->ports[p->src_port].side != r->side ||
	    t->ports[p->dst_port].side != r->side ||
	    r->req.weight > ALLOC_MAX_WEIGHT) {
		errbuf_set(err, errlen, "record %s/%u: ports do not fit",
			   r->req_id, r->index);
		return -EINVAL;
	}
	if (p->up == TOPO_NONE && p->down == TOPO_NONE &&
	    t->ports[p->src_port].leaf == t->ports[p->dst_port].leaf)
		return 0;
	if (p->up >= t->nlinks || p->down >= t->nlinks ||
	    t->links[p->up].leaf != t->ports[p->src_port].leaf ||
	    t->links[p->down].leaf != t->ports[p->dst_port].leaf ||
	    t->links[p->up].spine != t->links[p->down].spine) {
		errbuf_set(err, errlen, "record %s/%u: cables do not fit",
			   r->req_id, r->index);
		return -EINVAL;
	}
	return 0;
}

/*
 * Inserts one complete, checked request: the k records recs[ord[0..k)] in
 * index order. Returns 0, or -ENOMEM with nothing inserted.
 */
static int
alloc_restore_group(struct alloc *a, const struct alloc_record *recs,
		    const uint32_t *ord, uint32_t k)
{
	const struct alloc_record *f = &recs[ord[0]];
	uint32_t s = alloc_rq_slot(a), i, placed = 0;
	struct alloc_req *r;

	if (s == TOPO_NONE)
		return -ENOMEM;
	r = &a->rq[s];
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", f->req_id);
	r->job = f->job;
	r->expires = f->expires;
	r->qps = malloc((size_t)k * sizeof(uint32_t));
	if (r->qps == NULL)
		goto fail;
	for (placed = 0; placed < k; placed++) {
		const struct alloc_record *rec = &recs[ord[placed]];
		uint32_t qs = alloc_qp_slot(a);
		struct alloc_qp *q;

		if (qs == TOPO_NONE)
			goto fail;
		q = &a->qp[qs];
		memset(q, 0, sizeof(*q));
		q->id = rec->qp_id;
		q->req = s;
		q->index = rec->index;
		q->rq = rec->req;
		q->path = rec->path;
		q->sport = rec->sport;
		q->side = rec->side;
		q->stranded = rec->stranded;
		q->live = true;
		if (!q->stranded)
			alloc_load(a, q, 1);
		r->qps[placed] = qs;
	}
	r->nqp = k;
	r->live = true;
	if (tmap_insert(&a->rq_idx, tmap_str(r->id), s, alloc_rq_rehash, a) < 0)
		goto fail;
	for (i = 0; i < k; i++) {
		const struct alloc_qp *q = &a->qp[r->qps[i]];

		a->stranded += q->stranded;
		if (q->id >= a->next_id)
			a->next_id = q->id + 1;
	}
	a->live_qps += k;
	a->live_reqs++;
	return 0;
fail:
	for (i = 0; i < placed; i++) {
		struct alloc_qp *q = &a->qp[r->qps[i]];

		if (!q->stranded)
			alloc_load(a, q, -1);
		alloc_qp_put(a, r->qps[i]);
	}
	free(r->qps);
	r->qps = NULL;
	r->nqp = 0;
	r->live = false;
	(void)alloc_fl_push(&a->rq_free, s);
	return -ENOMEM;
}

int
alloc_restore(struct alloc *a, const struct alloc_record *recs, size_t n,
	      char *err, size_t errlen)
{
	uint32_t *ord = NULL, i, j, ngroups = 0, *gstart = NULL;
	uint32_t done_groups = 0;
	int rc = -EINVAL;

	if (n == 0)
		return 0;
	if (n > UINT32_MAX / 2) {
		errbuf_set(err, errlen, "too many records");
		return -EINVAL;
	}
	ord = malloc(n * sizeof(*ord));
	gstart = malloc((n + 1) * sizeof(*gstart));
	if (ord == NULL || gstart == NULL) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (recs[i].req_id[0] == '\0' ||
		    memchr(recs[i].req_id, '\0', ALLOC_REQID_MAX) == NULL) {
			errbuf_set(err, errlen, "record %u: bad request id", i);
			goto out;
		}
		if (alloc_rec_ok(a, &recs[i], err, errlen) < 0)
			goto out;
		ord[i] = i;
	}
	alloc_rec_ctx = recs;
	qsort(ord, n, sizeof(*ord), alloc_cmp_rec);
	alloc_rec_ctx = NULL;
	/* groups: one per request id; indices 0..nqp-1, one job, one lease */
	for (i = 0; i < n; i = j) {
		const struct alloc_record *f = &recs[ord[i]];

		for (j = i;
		     j < n && strcmp(recs[ord[j]].req_id, f->req_id) == 0;
		     j++) {
			const struct alloc_record *r = &recs[ord[j]];

			if (r->index != j - i || r->nqp != f->nqp ||
			    r->job != f->job || r->expires != f->expires) {
				errbuf_set(err, errlen,
					   "request %s: records inconsistent",
					   f->req_id);
				goto out;
			}
		}
		if (j - i != f->nqp) {
			errbuf_set(err, errlen, "request %s: %u of %u QPs",
				   f->req_id, j - i, f->nqp);
			goto out;
		}
		if (alloc_rq_find(a, f->req_id) != TMAP_EMPTY) {
			errbuf_set(err, errlen, "request %s exists", f->req_id);
			rc = -EEXIST;
			goto out;
		}
		gstart[ngroups++] = i;
	}
	gstart[ngroups] = (uint32_t)n;
	if (alloc_reserve_free(a, n, ngroups) < 0) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	for (done_groups = 0; done_groups < ngroups; done_groups++) {
		if (alloc_restore_group(a, recs, ord + gstart[done_groups],
					gstart[done_groups + 1] -
						gstart[done_groups]) < 0) {
			rc = alloc_nomem(err, errlen);
			goto out;
		}
	}
	rc = 0;
out:
	/* out of memory half-way: roll back the requests restored so far */
	for (i = 0; rc == -ENOMEM && i < done_groups; i++)
		alloc_release(a, recs[ord[gstart[i]]].req_id);
	free(ord);
	free(gstart);
	return rc;
}

int
alloc_link_load(const struct alloc *a, uint32_t link, uint64_t *up,
		uint64_t *down)
{
	if (link >= a->t->nlinks)
		return -1;
	*up = a->lup[link];
	*down = a->ldown[link];
	return 0;
}

void
alloc_stats(const struct alloc *a, struct alloc_stats *st)
{
	uint64_t sum = 0, mx = 0;
	size_t n = 0;
	uint32_t l;

	memset(st, 0, sizeof(*st));
	st->qps = a->live_qps;
	st->requests = a->live_reqs;
	st->stranded = a->stranded;
	for (l = 0; l < a->t->nlinks; l++) {
		if (!a->t->links[l].up)
			continue;
		sum += a->lup[l] + a->ldown[l];
		if (a->lup[l] > mx)
			mx = a->lup[l];
		if (a->ldown[l] > mx)
			mx = a->ldown[l];
		n += 2;
	}
	st->max_link_load = mx;
	st->mean_link_load = n == 0 ? 0 : (double)sum / (double)n;
}
