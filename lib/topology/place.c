/*
 * place.c: choosing a QP's path (the C4P rule of alloc.h) and keeping the
 * per-port, per-cable and per-bundle loads its choices rest on.
 */
#include <errno.h>

#include "alloc_int.h"
#include "errbuf.h"

uint64_t
place_weight(const struct alloc_qp_req *r)
{
	return r->weight == 0 ? 1 : r->weight;
}

/* Adds (sign > 0) or removes the QP's weight along its path. */
void
place_load(struct alloc *a, const struct alloc_qp *q, int sign)
{
	const struct path *p = &q->path;
	uint64_t w = place_weight(&q->rq);

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
place_max2(double x, double y)
{
	return x > y ? x : y;
}

/*
 * Chooses the best healthy same-side record of e for a QP of weight w
 * toward side (see the contract in alloc.h). Returns the record or NULL.
 */
static const struct catalog_rec *
place_pick(const struct alloc *a, const struct catalog_entry *e, uint8_t side,
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
		c1 = place_max2(su, sd);
		if (best != NULL && c1 > b1)
			continue;
		if (r->loss_permille > CATALOG_LOSS_MAX ||
		    !t->links[p->up].up || !t->links[p->down].up)
			continue;
		bu = t->links[p->up].bundle;
		bd = t->links[p->down].bundle;
		c2 = place_max2((double)(a->bup[bu] + w) * a->inv_bcap[bu],
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

/* True when both NICs carry the request's IPs on side s. */
static bool
place_side_ok(const struct topo *t, uint32_t sn, uint32_t dn,
	      const struct alloc_qp_req *r, uint8_t s)
{
	return t->ports[t->nics[sn].port[s]].ip == r->sip &&
	       t->ports[t->nics[dn].port[s]].ip == r->dip;
}

/*
 * Resolves the request's ports and side. *side_out is the side to use;
 * for TOPO_SIDE_ANY the one whose source tx and destination rx are less
 * loaded (left on a tie). Returns 0 or -EINVAL with a message.
 */
int
place_side(const struct alloc *a, const struct alloc_qp_req *r,
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
		if (!place_side_ok(t, sn, dn, r, s))
			continue; /* unbonded: the IP names the other side */
		c = place_max2((double)a->ptx[sp] / t->ports[sp].gbps,
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
int
place_qp(struct alloc *a, struct alloc_qp *q, char *err, size_t errlen)
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
	r = place_pick(a, e, q->side, place_weight(&q->rq));
	if (r == NULL) {
		errbuf_set(err, errlen, "no healthy same-side path");
		return -ENOENT;
	}
	q->path = r->path;
	q->sport = r->sport;
	place_load(a, q, 1);
	return 0;
}

/* The worst normalized cable load of path p if weight w were added. */
double
place_worst(const struct alloc *a, const struct path *p, uint64_t w)
{
	if (p->up == TOPO_NONE)
		return 0;
	return place_max2((double)(a->lup[p->up] + w) * a->inv_link[p->up],
			  (double)(a->ldown[p->down] + w) *
				  a->inv_link[p->down]);
}

int
place_home(struct alloc *a, struct alloc_qp *q, char *err, size_t errlen)
{
	const struct topo *t = a->t;
	uint32_t sn = topo_nic_by_ip(t, q->rq.sip);
	uint32_t dn = topo_nic_by_ip(t, q->rq.dip);
	uint8_t entry = q->side,
		other = q->home == TOPO_LEFT ? TOPO_RIGHT : TOPO_LEFT;
	int rc;

	q->side = q->home;
	rc = place_qp(a, q, err, errlen);
	if (rc == 0) {
		q->fallback = false;
		return 0;
	}
	/* the bond's failover: the same IPs on the other pair of ports */
	if (sn != TOPO_NONE && dn != TOPO_NONE &&
	    place_side_ok(t, sn, dn, &q->rq, other)) {
		q->side = other;
		if (place_qp(a, q, NULL, 0) == 0) {
			q->fallback = true;
			return 0;
		}
	}
	q->side = entry;
	return rc;
}

bool
place_valid(const struct alloc *a, const struct alloc_qp *q)
{
	struct catalog_key k = {q->rq.sip, q->rq.dip, q->side};
	const struct catalog_entry *e;

	if (!path_healthy(a->t, &q->path))
		return false;
	e = catalog_find(a->cat, &k);
	if (e == NULL)
		return false;
	for (uint32_t i = 0; i < e->n; i++)
		if (e->recs[i].sport == q->sport)
			return path_equal(&e->recs[i].path, &q->path) &&
			       e->recs[i].loss_permille <= CATALOG_LOSS_MAX;
	return false;
}
