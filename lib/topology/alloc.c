/*
 * alloc.c: the C4P source-port allocator's bookkeeping (see alloc.h for the
 * contract): slots for QPs and requests, the request index, leases, health
 * changes of the topology and persistence records.  Choosing paths lives
 * in place.c, moving placed QPs in rebal.c, checking restored records in
 * restore.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "errbuf.h"

/* Reports running out of memory; returns -ENOMEM. */
static int
alloc_nomem(char *err, size_t errlen)
{
	errbuf_set(err, errlen, "out of memory");
	return -ENOMEM;
}

int
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
	double cap = 0;

	/* healthy cables at their capacity for placement (see inv_link) */
	for (uint32_t l = bd->first_link; l < bd->first_link + bd->count; l++)
		if (a->t->links[l].up)
			cap += 1.0 / a->inv_link[l];
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
	for (b = 0; b < t->nlinks; b++)
		a->inv_link[b] = 1.0 / t->links[b].gbps;
	for (b = 0; b < t->nbundles; b++)
		alloc_bundle_cap(a, b);
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

uint64_t
alloc_rq_rehash(const void *arg, uint32_t slot)
{
	const struct alloc *a = arg;

	return tmap_str(a->rq[slot].id);
}

uint32_t
alloc_rq_find(const struct alloc *a, const char *id)
{
	struct alloc_key k = {a, id};

	return tmap_find(&a->rq_idx, tmap_str(id), alloc_rq_eq, &k);
}

/* Takes a QP slot; returns it or TOPO_NONE when out of memory. */
uint32_t
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

uint32_t
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
void
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
	out->home_side = q->home;
	out->stranded = q->stranded;
	out->fallback = q->fallback;
	out->path = q->path;
}

void
alloc_rq_drop(struct alloc *a, uint32_t s, uint32_t n, bool stranded_unloaded)
{
	struct alloc_req *r = &a->rq[s];

	for (uint32_t i = 0; i < n; i++) {
		struct alloc_qp *q = &a->qp[r->qps[i]];

		if (!(stranded_unloaded && q->stranded))
			place_load(a, q, -1);
		alloc_qp_put(a, r->qps[i]);
	}
	free(r->qps);
	r->qps = NULL;
	r->nqp = 0;
	r->live = false;
	(void)alloc_fl_push(&a->rq_free, s);
}

/* Releases request slot s and all its QPs; returns the QP count. */
static size_t
alloc_rq_release(struct alloc *a, uint32_t s)
{
	struct alloc_req *r = &a->rq[s];
	size_t n = r->nqp;

	for (uint32_t i = 0; i < r->nqp; i++) {
		a->stranded -= a->qp[r->qps[i]].stranded;
		a->fallback -= a->qp[r->qps[i]].fallback;
	}
	tmap_remove(&a->rq_idx, tmap_str(r->id), s);
	alloc_rq_drop(a, s, r->nqp, true);
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

/*
 * A request id asked again (slot s): the same job and QPs renew its lease
 * to expires and answer the current ports, which counts as the holder
 * learning them (confirmed); anything else is -EEXIST.
 */
static int
alloc_retry(struct alloc *a, uint32_t s, const char *req_id, uint64_t job,
	    uint64_t expires, const struct alloc_qp_req *qps, size_t n,
	    struct alloc_qp_res *out, char *err, size_t errlen)
{
	struct alloc_req *r = &a->rq[s];
	uint32_t i;

	if (r->job != job || r->nqp != n) {
		errbuf_set(err, errlen,
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
		    place_weight(o) != place_weight(&qps[i])) {
			errbuf_set(
				err, errlen,
				"request id %s: QP %u differs from the first "
				"request",
				req_id, i);
			return -EEXIST;
		}
	}
	r->expires = expires;
	for (i = 0; i < n; i++) {
		a->qp[r->qps[i]].conf_sport = a->qp[r->qps[i]].sport;
		alloc_res(&a->qp[r->qps[i]], &out[i]);
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
	if (s != TMAP_EMPTY)
		return alloc_retry(a, s, req_id, job, now + lease_s, qps, n,
				   out, err, errlen);
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
		rc = place_side(a, &q->rq, &q->home, err, errlen);
		q->side = q->home;
		if (rc == 0)
			rc = place_home(a, q, err, errlen);
		if (rc < 0) {
			alloc_qp_put(a, qs);
			goto undo;
		}
		if (q->rq.side == TOPO_SIDE_ANY) {
			/* either side was asked for: neither is a failover */
			q->home = q->side;
			q->fallback = false;
		}
		q->conf_sport = q->sport;
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
	for (i = 0; i < n; i++)
		a->fallback += a->qp[r->qps[i]].fallback;
	a->live_qps += n;
	a->live_reqs++;
	return 0;
undo:
	/* placed QPs are never stranded: every load comes off */
	alloc_rq_drop(a, s, done, false);
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

int
alloc_rebalance(struct alloc *a, size_t max_moves,
		struct alloc_change **changes, size_t *nchanges)
{
	return rebal_run(a, max_moves, changes, nchanges);
}

int
alloc_link_set(struct alloc *a, uint32_t link, bool up,
	       struct alloc_change **changes, size_t *nchanges)
{
	return alloc_links_set(a, &link, &up, 1, changes, nchanges);
}

int
alloc_links_set(struct alloc *a, const uint32_t *links, const bool *up,
		size_t n, struct alloc_change **changes, size_t *nchanges)
{
	bool any_up = false;
	size_t i;

	*changes = NULL;
	*nchanges = 0;
	for (i = 0; i < n; i++)
		if (links[i] >= a->t->nlinks)
			return -EINVAL;
	/* every state first: nothing is placed on a cable this batch takes
	 * down */
	for (i = 0; i < n; i++) {
		(void)topo_link_set_up(a->t, links[i], up[i]);
		alloc_bundle_cap(a, a->t->links[links[i]].bundle);
		any_up |= up[i];
	}
	return rebal_move(a, any_up ? REBAL_SEL_RECOVER : REBAL_SEL_UNHEALTHY,
			  changes, nchanges);
}

int
alloc_link_reweigh(struct alloc *a, uint32_t link, size_t max_moves,
		   struct alloc_change **changes, size_t *nchanges)
{
	const struct catalog_link *cl = catalog_link(a->cat, link);
	double w = cl != NULL ? cl->weight : 1;

	*changes = NULL;
	*nchanges = 0;
	if (link >= a->t->nlinks)
		return -EINVAL;
	if (w < ALLOC_WEIGHT_MIN)
		w = ALLOC_WEIGHT_MIN;
	a->inv_link[link] = 1.0 / (a->t->links[link].gbps * w);
	alloc_bundle_cap(a, a->t->links[link].bundle);
	return rebal_run(a, max_moves, changes, nchanges);
}

int
alloc_port_set(struct alloc *a, uint32_t port, bool up,
	       struct alloc_change **changes, size_t *nchanges)
{
	*changes = NULL;
	*nchanges = 0;
	if (topo_port_set_up(a->t, port, up) < 0)
		return -EINVAL;
	return rebal_move(a, up ? REBAL_SEL_RECOVER : REBAL_SEL_UNHEALTHY,
			  changes, nchanges);
}

int
alloc_recheck(struct alloc *a, struct alloc_change **changes, size_t *nchanges)
{
	int rc;

	*changes = NULL;
	*nchanges = 0;
	if (a->checked_gen == catalog_generation(a->cat))
		return 0;
	rc = rebal_move(a, REBAL_SEL_STALE, changes, nchanges);
	/* placing may fill entries from the hash model: nothing stale */
	if (rc == 0)
		a->checked_gen = catalog_generation(a->cat);
	return rc;
}

int
alloc_confirm(struct alloc *a, const char *req_id, uint32_t index,
	      uint16_t sport)
{
	uint32_t s = alloc_rq_find(a, req_id);
	struct alloc_qp *q;

	if (s == TMAP_EMPTY || index >= a->rq[s].nqp)
		return -ENOENT;
	q = &a->qp[a->rq[s].qps[index]];
	q->conf_sport = sport;
	return sport == q->sport ? 0 : 1;
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
		rec->conf_sport = q->conf_sport;
		rec->side = q->side;
		rec->home_side = q->home;
		rec->stranded = q->stranded;
		rec->fallback = q->fallback;
		rec->path = q->path;
		return 1;
	}
	return 0;
}

int
alloc_restore(struct alloc *a, const struct alloc_record *recs, size_t n,
	      char *err, size_t errlen)
{
	uint32_t *ord = NULL, i, ngroups = 0, *gstart = NULL;
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
	rc = restore_plan(a, recs, (uint32_t)n, ord, gstart, &ngroups, err,
			  errlen);
	if (rc < 0)
		goto out;
	if (alloc_reserve_free(a, n, ngroups) < 0) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	for (done_groups = 0; done_groups < ngroups; done_groups++) {
		if (restore_group(a, recs, ord + gstart[done_groups],
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
	st->fallback = a->fallback;
	for (l = 0; l < a->nqp; l++)
		st->pending +=
			a->qp[l].live && a->qp[l].conf_sport != a->qp[l].sport;
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
