/*
 * restore.c: checking and inserting persisted allocation records (the
 * records alloc_next hands out), for alloc_restore.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "errbuf.h"

static const struct alloc_record *restore_rec_ctx;

static int
restore_cmp_rec(const void *x, const void *y)
{
	const struct alloc_record *a = &restore_rec_ctx[*(const uint32_t *)x];
	const struct alloc_record *b = &restore_rec_ctx[*(const uint32_t *)y];
	int c = strcmp(a->req_id, b->req_id);

	if (c != 0)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Checks that a record's path fits its IPs, side and the topology. */
static int
restore_rec_ok(const struct alloc *a, const struct alloc_record *r, char *err,
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
	    (r->fallback &&
	     (r->home_side >= TOPO_SIDES || r->home_side == r->side)) ||
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
int
restore_group(struct alloc *a, const struct alloc_record *recs,
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
		/* home_side counts only for a fallback (older records) */
		q->home = rec->fallback ? rec->home_side : rec->side;
		q->fallback = rec->fallback;
		q->conf_sport = rec->conf_sport;
		q->stranded = rec->stranded;
		q->live = true;
		if (!q->stranded)
			place_load(a, q, 1);
		r->qps[placed] = qs;
	}
	r->nqp = k;
	r->live = true;
	if (tmap_insert(&a->rq_idx, tmap_str(r->id), s, alloc_rq_rehash, a) < 0)
		goto fail;
	for (i = 0; i < k; i++) {
		const struct alloc_qp *q = &a->qp[r->qps[i]];

		a->stranded += q->stranded;
		a->fallback += q->fallback;
		if (q->id >= a->next_id)
			a->next_id = q->id + 1;
	}
	a->live_qps += k;
	a->live_reqs++;
	return 0;
fail:
	/* stranded QPs were inserted without a load */
	alloc_rq_drop(a, s, placed, true);
	return -ENOMEM;
}

/*
 * Checks records recs[0..n) and orders them for restore_group: ord gets
 * record numbers sorted by request id and index, gstart[0..*ngroups] the
 * start of each request's run in ord (gstart[*ngroups] = n). Both arrays
 * are the caller's (n and n + 1 entries). Returns 0, -EINVAL (a bad or
 * inconsistent record, an incomplete request) or -EEXIST (a request the
 * allocator holds), with a message; the allocator does not change.
 */
int
restore_plan(const struct alloc *a, const struct alloc_record *recs, uint32_t n,
	     uint32_t *ord, uint32_t *gstart, uint32_t *ngroups, char *err,
	     size_t errlen)
{
	uint32_t i, j;

	*ngroups = 0;
	for (i = 0; i < n; i++) {
		if (recs[i].req_id[0] == '\0' ||
		    memchr(recs[i].req_id, '\0', ALLOC_REQID_MAX) == NULL) {
			errbuf_set(err, errlen, "record %u: bad request id", i);
			return -EINVAL;
		}
		if (restore_rec_ok(a, &recs[i], err, errlen) < 0)
			return -EINVAL;
		ord[i] = i;
	}
	restore_rec_ctx = recs;
	qsort(ord, n, sizeof(*ord), restore_cmp_rec);
	restore_rec_ctx = NULL;
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
				return -EINVAL;
			}
		}
		if (j - i != f->nqp) {
			errbuf_set(err, errlen, "request %s: %u of %u QPs",
				   f->req_id, j - i, f->nqp);
			return -EINVAL;
		}
		if (alloc_rq_find(a, f->req_id) != TMAP_EMPTY) {
			errbuf_set(err, errlen, "request %s exists", f->req_id);
			return -EEXIST;
		}
		gstart[(*ngroups)++] = i;
	}
	gstart[*ngroups] = (uint32_t)n;
	return 0;
}
