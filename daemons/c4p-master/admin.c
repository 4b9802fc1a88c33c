/*
 * admin.c - operator requests to the c4p-master (c4ctl, role ctl):
 *   ADMIN_PATHS     the catalog for a NIC pair (both sides);
 *   ADMIN_LINKS     every leaf-spine cable: state, QPs each way, capacity;
 *   ADMIN_FABRIC    the same, for the utilisation picture;
 *   ADMIN_LINK_SET  a cable down or up: QPs move, holders are told, and
 *                   the answer waits until the change is committed;
 *   ADMIN_PROBE     a probe round now (or right after the running one);
 *   ADMIN_ALLOCS    allocations, of one job if job_id is set (at most
 *                   C4P_ALLOCS_MAX QPs, or limit; `more` says if cut).
 */
#define LOG_SUBSYS "c4p-admin"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrplan.h"
#include "admin.h"
#include "jobs.h"
#include "link.h"
#include "nic.h"
#include "probes.h"
#include "log.h"
#include "path.h"

/* The probes' estimate of a cable in words, into buf. */
static const char *
admin_link_reason(const struct catalog_link *cl, char *buf, size_t len)
{
	snprintf(
		buf, len,
		"probe loss %.3f%% [%.3f%%, %.3f%%], weight %.3f, rtt %.0f us, "
		"queue %.0f us",
		cl->loss * 100, cl->loss_lo * 100, cl->loss_hi * 100,
		cl->weight, cl->rtt_us, cl->queue_us);
	return buf;
}

static C4__LinkState *
admin_link(struct c4p *p, struct arena *ar, uint32_t id)
{
	const struct topo *t = p->topo;
	const struct topo_link *l = &t->links[id];
	C4__LinkState *s = arena_alloc(ar, sizeof(*s));
	char name[3 * TOPO_NAME_MAX], rb[160];
	uint64_t up = 0, down = 0;
	const struct catalog_link *cl;

	if (s == NULL)
		return NULL;
	c4__link_state__init(s);
	addrplan_link_name(t, id, name, sizeof(name));
	alloc_link_load(p->alloc, id, &up, &down);
	s->link_id = arena_strdup(ar, name);
	s->has_status = 1;
	s->status =
		l->up ? C4__LINK_STATUS__LINK_UP : C4__LINK_STATUS__LINK_DOWN;
	/* What probes judge: degraded, the loss estimate, since when. */
	cl = catalog_link(p->cat, id);
	if (l->up && cl->state == CATALOG_LINK_DEGRADED)
		s->status = C4__LINK_STATUS__LINK_DEGRADED;
	s->has_loss_ppm = 1;
	s->loss_ppm = (uint32_t)(cl->loss * 1e6 + 0.5);
	s->has_since_ns = cl->since_ns != 0;
	s->since_ns = cl->since_ns;
	s->reason = arena_strdup(ar, admin_link_reason(cl, rb, sizeof(rb)));
	s->a = t->leaves[l->leaf].name;
	s->b = t->spines[l->spine].name;
	s->has_qps = 1;
	s->qps = (uint32_t)(up + down);
	s->has_qps_up = 1;
	s->qps_up = (uint32_t)up;
	s->has_qps_down = 1;
	s->qps_down = (uint32_t)down;
	s->has_gbps = 1;
	s->gbps = l->gbps;
	/* load: the busier direction's weight per 100 Gbit/s of capacity */
	s->has_load = 1;
	s->load = (double)(up > down ? up : down) * 100.0 / l->gbps;
	return s;
}

static int
admin_links(struct c4p *p, C4__AdminReply *r, struct arena *ar)
{
	uint32_t n = p->topo->nlinks;

	r->links = arena_calloc(ar, n ? n : 1, sizeof(*r->links));
	if (r->links == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		r->links[i] = admin_link(p, ar, i);
		if (r->links[i] == NULL)
			return -1;
	}
	r->n_links = n;
	return 0;
}

/* Names the path's cables in pp (parallel cables differ): 0 or -1. */
static int
admin_cable_names(const struct topo *t, struct arena *ar, C4__ProbePath *pp,
		  const struct path *p)
{
	char name[3 * TOPO_NAME_MAX];

	if (p->up == TOPO_NONE)
		return 0;
	addrplan_link_name(t, p->up, name, sizeof(name));
	pp->up_link = arena_strdup(ar, name);
	addrplan_link_name(t, p->down, name, sizeof(name));
	pp->down_link = arena_strdup(ar, name);
	return pp->up_link != NULL && pp->down_link != NULL ? 0 : -1;
}

static int
admin_paths(struct c4p *p, const C4__AdminRequest *q, C4__AdminReply *r,
	    struct arena *ar, struct msg_err *err)
{
	const struct topo *t = p->topo;
	uint32_t sn, dn;
	size_t total = 0;

	if (q->src == NULL || q->dst == NULL) {
		snprintf(err->text, sizeof(err->text),
			 "paths: src and dst are required");
		return -1;
	}
	sn = nic_lookup(t, q->src);
	dn = nic_lookup(t, q->dst);
	if (sn == TOPO_NONE || dn == TOPO_NONE) {
		snprintf(err->text, sizeof(err->text),
			 "paths: unknown NIC '%s' (HOST/NIC or an IP)",
			 sn == TOPO_NONE ? q->src : q->dst);
		return -1;
	}
	for (uint8_t side = 0; side < TOPO_SIDES; side++) {
		struct catalog_key k;
		const struct catalog_entry *e;
		char e2[256];
		C4__ProbePath **v;

		k.sip = t->ports[t->nics[sn].port[side]].ip;
		k.dip = t->ports[t->nics[dn].port[side]].ip;
		k.side = side;
		e = catalog_get(p->cat, &k, e2, sizeof(e2));
		if (e == NULL)
			continue;
		v = arena_calloc(ar, total + e->n + 1, sizeof(*v));
		if (v == NULL)
			return -1;
		if (total > 0)
			memcpy(v, r->paths, total * sizeof(*v));
		r->paths = v;
		for (uint32_t i = 0; i < e->n; i++) {
			const struct catalog_rec *rec = &e->recs[i];
			C4__ProbePath *pp = arena_alloc(ar, sizeof(*pp));
			uint32_t spine = path_spine(t, &rec->path);

			if (pp == NULL)
				return -1;
			c4__probe_path__init(pp);
			pp->has_sport = 1;
			pp->sport = rec->sport;
			pp->src_leaf =
				t->leaves[t->ports[rec->path.src_port].leaf]
					.name;
			pp->dst_leaf =
				t->leaves[t->ports[rec->path.dst_port].leaf]
					.name;
			pp->spine = spine == TOPO_NONE ? (char *)""
						       : t->spines[spine].name;
			pp->has_reached = 1;
			pp->reached = rec->origin == CATALOG_FROM_PROBE;
			pp->has_side = 1;
			pp->side = side == TOPO_LEFT
					   ? C4__PORT_SIDE__SIDE_LEFT
					   : C4__PORT_SIDE__SIDE_RIGHT;
			pp->has_healthy = 1;
			pp->healthy = path_healthy(t, &rec->path);
			if (admin_cable_names(t, ar, pp, &rec->path) < 0)
				return -1;
			r->paths[total++] = pp;
		}
		r->n_paths = total;
	}
	return 0;
}

static const struct alloc_record *admin_sort_ctx;

static int
admin_cmp_rec(const void *x, const void *y)
{
	const struct alloc_record *a = &admin_sort_ctx[*(const size_t *)x];
	const struct alloc_record *b = &admin_sort_ctx[*(const size_t *)y];
	int c = strcmp(a->req_id, b->req_id);

	if (c != 0)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

static int
admin_allocs(struct c4p *p, const C4__AdminRequest *q, C4__AdminReply *r,
	     struct arena *ar)
{
	const struct topo *t = p->topo;
	struct alloc_record *recs = NULL;
	size_t n = 0, cap = 0, cur = 0, *ix = NULL, nalloc = 0, limit;
	uint64_t job = 0;
	struct alloc_record rec;
	int rc = -1;

	limit = q->has_limit && q->limit > 0 && q->limit < C4P_ALLOCS_MAX
			? q->limit
			: C4P_ALLOCS_MAX;
	if (q->job_id != NULL && q->job_id[0] != '\0') {
		job = jobs_id(p->jobs, q->job_id, 0);
		if (job == 0)
			return 0; /* a job never seen has no allocations */
	}
	while (alloc_next(p->alloc, &cur, &rec) == 1) {
		if (job != 0 && rec.job != job)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			void *g = realloc(recs, nc * sizeof(*recs));

			if (g == NULL)
				goto out;
			recs = g;
			cap = nc;
		}
		recs[n++] = rec;
	}
	ix = malloc((n ? n : 1) * sizeof(*ix));
	if (ix == NULL)
		goto out;
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	admin_sort_ctx = recs;
	qsort(ix, n, sizeof(*ix), admin_cmp_rec);
	admin_sort_ctx = NULL;
	if (n > limit) {
		r->has_more = 1;
		r->more = 1;
	}
	r->allocs = arena_calloc(ar, n ? n : 1, sizeof(*r->allocs));
	if (r->allocs == NULL)
		goto out;
	for (size_t i = 0, j; i < n && i < limit; i = j) {
		const struct alloc_record *a = &recs[ix[i]];
		const char *slash = strchr(a->req_id, '/');
		C4__Allocation *al = arena_alloc(ar, sizeof(*al));
		char nic[2 * TOPO_NAME_MAX + 2];

		for (j = i + 1;
		     j < n && strcmp(recs[ix[j]].req_id, a->req_id) == 0; j++)
			;
		if (al == NULL)
			goto out;
		c4__allocation__init(al);
		al->job_id = (char *)jobs_name(p->jobs, a->job);
		al->request_id =
			arena_strdup(ar, slash ? slash + 1 : a->req_id);
		nic_name(t, a->path.src_port, nic, sizeof(nic));
		al->src_nic = arena_strdup(ar, nic);
		nic_name(t, a->path.dst_port, nic, sizeof(nic));
		al->dst_nic = arena_strdup(ar, nic);
		al->has_side = 1;
		al->side = a->req.side == TOPO_LEFT ? C4__PORT_SIDE__SIDE_LEFT
			   : a->req.side == TOPO_RIGHT
				   ? C4__PORT_SIDE__SIDE_RIGHT
				   : C4__PORT_SIDE__SIDE_UNSPECIFIED;
		al->has_lease_expires_ns = 1;
		al->lease_expires_ns = a->expires * 1000000000ull;
		al->paths = arena_calloc(ar, j - i, sizeof(*al->paths));
		if (al->paths == NULL)
			goto out;
		for (size_t k = i; k < j; k++) {
			const struct alloc_record *b = &recs[ix[k]];
			C4__PathAssignment *pa = arena_alloc(ar, sizeof(*pa));

			if (pa == NULL)
				goto out;
			reply_assignment(t, pa, b->index, b->sport, b->side,
					 &b->path);
			reply_fallback(pa, b->fallback, b->home_side);
			pa->has_confirmed_sport = 1;
			pa->confirmed_sport = b->conf_sport;
			pa->has_pending = 1;
			pa->pending = b->conf_sport != b->sport;
			al->paths[al->n_paths++] = pa;
		}
		r->allocs[nalloc++] = al;
		r->n_allocs = nalloc;
	}
	rc = 0;
out:
	free(recs);
	free(ix);
	return rc;
}

/* Returns the store sequence the answer must wait for, or -1. */
static int64_t
admin_link_set(struct c4p *p, const C4__AdminRequest *q, C4__AdminReply *r,
	       struct arena *ar, struct msg_err *err)
{
	uint32_t link;
	bool up;
	char reason[256];
	int64_t seq;

	if (q->link_id == NULL || !q->has_link_status ||
	    (q->link_status != C4__LINK_STATUS__LINK_UP &&
	     q->link_status != C4__LINK_STATUS__LINK_DOWN)) {
		snprintf(err->text, sizeof(err->text),
			 "link set: link_id and link_status (up or down) are "
			 "required");
		return -1;
	}
	link = addrplan_link_lookup(p->topo, q->link_id);
	if (link == TOPO_NONE) {
		snprintf(err->text, sizeof(err->text),
			 "link set: no link '%s' (see c4ctl links)",
			 q->link_id);
		return -1;
	}
	up = q->link_status == C4__LINK_STATUS__LINK_UP;
	snprintf(reason, sizeof(reason), "link %s %s", q->link_id,
		 up ? "up" : "down");
	/* The operator's word stands: probes do not undo it. */
	probes_forget(p->probes, link);
	seq = link_set_state(p, link, up, reason, &r->moved, &r->stranded);
	if (seq < 0) {
		snprintf(err->text, sizeof(err->text),
			 "link set: out of memory");
		return -1;
	}
	r->has_moved = 1;
	r->has_stranded = 1;
	r->links = arena_calloc(ar, 1, sizeof(*r->links));
	if (r->links != NULL) {
		r->links[0] = admin_link(p, ar, link);
		r->n_links = r->links[0] != NULL;
	}
	return seq;
}

int
admin_handle(struct c4p *p, struct c4p_sess *sess, const C4__Envelope *env,
	     struct msg_err *err)
{
	const C4__AdminRequest *q = env->admin_request;
	struct reply *pe;
	C4__AdminReply *r;
	int64_t seq = 0;

	switch (q->op) {
	case C4__ADMIN_OP__ADMIN_PATHS:
	case C4__ADMIN_OP__ADMIN_LINKS:
	case C4__ADMIN_OP__ADMIN_LINK_SET:
	case C4__ADMIN_OP__ADMIN_ALLOCS:
	case C4__ADMIN_OP__ADMIN_FABRIC:
	case C4__ADMIN_OP__ADMIN_PROBE:
		break;
	default:
		return -1; /* srv answers "not served" */
	}
	pe = reply_new(sess, C4__MSG_TYPE__MSG_ADMIN_REPLY, env->seq);
	if (pe == NULL)
		goto oom;
	r = arena_alloc(&pe->arena, sizeof(*r));
	if (r == NULL)
		goto oom;
	c4__admin_reply__init(r);
	r->has_op = 1;
	r->op = q->op;
	r->daemon = (char *)"c4p-master";
	err->code = C4__ERROR_CODE__ERR_INVALID;
	switch (q->op) {
	case C4__ADMIN_OP__ADMIN_PATHS:
		if (admin_paths(p, q, r, &pe->arena, err) < 0)
			goto fail;
		break;
	case C4__ADMIN_OP__ADMIN_LINKS:
	case C4__ADMIN_OP__ADMIN_FABRIC:
		if (admin_links(p, r, &pe->arena) < 0)
			goto oom;
		break;
	case C4__ADMIN_OP__ADMIN_LINK_SET:
		seq = admin_link_set(p, q, r, &pe->arena, err);
		if (seq < 0)
			goto fail;
		break;
	case C4__ADMIN_OP__ADMIN_ALLOCS:
		if (admin_allocs(p, q, r, &pe->arena) < 0)
			goto oom;
		break;
	case C4__ADMIN_OP__ADMIN_PROBE: {
		size_t tasks;

		if (probes_round(p->probes, "asked by an operator") < 0)
			goto oom;
		r->has_probe_round = r->has_probe_tasks = 1;
		r->probe_round = probes_rounds(p->probes, &tasks);
		r->probe_tasks = (uint32_t)tasks;
		break;
	}
	default:
		break;
	}
	err->code = C4__ERROR_CODE__ERR_UNSPECIFIED;
	pe->body = r;
	reply_submit(&p->replies, pe, (uint64_t)seq);
	return 0;
oom:
	snprintf(err->text, sizeof(err->text), "out of memory");
	err->code = C4__ERROR_CODE__ERR_INTERNAL;
fail:
	if (pe != NULL)
		reply_submit(&p->replies, pe, 0); /* body NULL: sends nothing */
	return -1;
}
