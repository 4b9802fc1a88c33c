/*
 * cand.c: candidates of the comm-slow detector (cell.c, tail.c) become
 * persistence candidates: the floors every candidate passes, the event
 * it claims (kind, suspects in order of likelihood, evidence) and the
 * key naming its physical culprit.
 */
#include <math.h>
#include <string.h>

#include "matrix_int.h"

void
cand_fill_link(const struct matrix *m, struct matrix_suspect *s,
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
cand_fill_side(const struct matrix *m, struct matrix_suspect *s,
	       const struct cell *x, unsigned role)
{
	uint32_t rank = role == MATRIX_ROLE_TX ? x->src : x->dst;

	matrix_suspect_dev(m, s, m->comms[x->comm].dev[rank], role);
	s->transport = x->tr;
	s->comm = m->comms[x->comm].hash;
	s->rank = s->peer_rank = rank;
}

/*
 * The suspects of an ambiguous candidate c on cell x, most likely first:
 * a side whose other links are slowed alike (MIXED; the larger share
 * first), then the link, then a side with no other link to tell
 * (UNKNOWN). A clean (COLD) side is no suspect.
 */
static void
cand_ambig_suspects(const struct matrix *m, struct matrix_event *e,
		    const struct cell *x, const struct cand *c)
{
	int rx_first = c->cside == SIDE_MIXED &&
		       (c->rside != SIDE_MIXED || c->cshare > c->rshare);
	int pass, s;

	/* pass 0: mixed sides, pass 1: the link, pass 2: unknown sides */
	for (pass = 0; pass < 3; pass++) {
		if (pass == 1) {
			cand_fill_link(m, &e->suspects[e->nsuspects++], x);
			continue;
		}
		for (s = 0; s < 2; s++) {
			int rx = rx_first ? !s : s;
			int st = rx ? c->cside : c->rside;

			if (st != (pass == 0 ? SIDE_MIXED : SIDE_UNKNOWN))
				continue;
			cand_fill_side(m, &e->suspects[e->nsuspects++], x,
				       rx ? MATRIX_ROLE_RX : MATRIX_ROLE_TX);
		}
	}
}

/*
 * Hand candidate c to the persistence layer. The key names the physical
 * culprit: the endpoint for rows and columns, the endpoint pair for
 * links; link and ambiguous share a key so a verdict that wavers between
 * them still persists. The summary (isolate_host) names the host of the
 * first suspect.
 */
int
cand_submit(struct matrix *m, const struct cand *c)
{
	const struct cell *x = &m->cells[c->cell];
	uint64_t ka = m->eps[x->ep_tx].pkey, kb = m->eps[x->ep_rx].pkey;
	float lfloor = c->basis == MATRIX_BASIS_TAIL
			       ? logf((float)m->p.tail_min)
			       : m->lmin;
	struct matrix_event e;
	struct probe pr;
	uint64_t key;

	if (!(c->r >= lfloor) ||
	    (!(c->score >= m->p.z_min) && !(c->flags & PERSIST_WEAK)))
		return 0; /* below the effect or evidence floor */
	memset(&e, 0, sizeof(e));
	e.kind = (uint8_t)c->kind;
	e.comm = m->comms[x->comm].hash;
	e.evidence.basis = c->basis;
	e.evidence.accumulated =
		(c->flags & PERSIST_WEAK) && !(c->score >= m->p.z_min);
	e.ncells = 1;
	e.ncells_total = 1;
	e.cells[0].comm = e.comm;
	e.cells[0].src = x->src;
	e.cells[0].dst = x->dst;
	e.cells[0].algo = x->algo;
	e.cells[0].ratio = expf(c->cr);
	e.cells[0].z = c->cz;
	e.slowdown = exp(c->r);
	e.score = c->score;
	pr.kind = PROBE_LINK;
	pr.a = x->link;
	pr.b = 0;
	switch (c->kind) {
	case MATRIX_EV_COMM_SLOW_TX:
	case MATRIX_EV_COMM_SLOW_RX:
		pr.kind = PROBE_SIDE;
		pr.b = c->kind == MATRIX_EV_COMM_SLOW_RX;
		pr.a = pr.b ? x->ep_rx : x->ep_tx;
		key = persist_key(c->kind, pr.b ? kb : ka, 0);
		cand_fill_side(m, &e.suspects[0], x,
			       pr.b ? MATRIX_ROLE_RX : MATRIX_ROLE_TX);
		e.nsuspects = 1;
		e.action = c->basis == MATRIX_BASIS_MEDIAN
				   ? MATRIX_ACT_ISOLATE_HOST
				   : MATRIX_ACT_OBSERVE;
		break;
	case MATRIX_EV_COMM_SLOW_LINK:
		key = persist_key(c->kind, ka, kb);
		cand_fill_link(m, &e.suspects[0], x);
		e.nsuspects = 1;
		e.action = MATRIX_ACT_CHECK_LINK;
		break;
	default: /* ambiguous: list what the pattern cannot exclude */
		key = persist_key(MATRIX_EV_COMM_SLOW_LINK, ka, kb);
		e.ambiguous = 1;
		cand_ambig_suspects(m, &e, x, c);
		e.action = MATRIX_ACT_OBSERVE;
		break;
	}
	e.isolate_host = e.suspects[0].host;
	return persist_observe(m, key, &e, c->flags, &pr);
}
