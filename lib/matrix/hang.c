/*
 * hang.c: communication hang, non-communication hang and node loss, from
 * progress markers only.
 *
 * A communicator is stalled when its highest completed op sequence has not
 * advanced for hang_timeout intervals while some member has entered an op
 * it has not completed, or (ops reported complete when enqueued) while
 * some member has not entered the op the others entered or one of its
 * connections is stuck. Members that never entered that op are the
 * non-communication suspects, unless they are explained: their host is
 * lost, or they are themselves blocked inside another communicator's op
 * (then that communicator carries the event). When every member entered,
 * the connections with chunks posted but no bytes moving are the
 * communication suspects. A host that sends nothing for node_timeout
 * intervals is lost.
 */
#include <string.h>

#include "matrix_int.h"

static int
hang_host_lost(const struct matrix *m, uint32_t hidx)
{
	return m->hosts[hidx].lost;
}

/* Mark hosts lost after node_timeout intervals without any data. */
static void
hang_nodes(struct matrix *m)
{
	uint32_t h;

	for (h = 0; h < m->nhosts; h++) {
		struct host *x = &m->hosts[h];
		uint64_t missed;

		if (x->members == 0) {
			/* Every rank it ran is in retired communicators. */
			x->lost = 0;
			continue;
		}
		if (x->last_seen > 0)
			missed = m->iv + 1 - x->last_seen;
		else
			missed = m->nanalyzed - x->added + 1;
		x->lost = missed >= m->p.node_timeout;
	}
}

/* One node-lost candidate per lost host (opens at once). 0 or -1. */
static int
hang_node_events(struct matrix *m)
{
	struct matrix_event e;
	uint32_t h;

	for (h = 0; h < m->nhosts; h++) {
		const struct host *x = &m->hosts[h];

		if (!x->lost)
			continue;
		memset(&e, 0, sizeof(e));
		e.kind = MATRIX_EV_NODE_LOST;
		if (x->dev != NO_IDX) {
			matrix_suspect_dev(m, &e.suspects[0], x->dev,
					   MATRIX_ROLE_HOST);
			e.nsuspects = 1;
			e.comm = e.suspects[0].comm;
		}
		e.slowdown = 1.0;
		e.score = x->last_seen ? (double)(m->iv + 1 - x->last_seen)
				       : (double)m->p.node_timeout;
		e.confidence = 0.99;
		e.action = MATRIX_ACT_ISOLATE_HOST;
		e.isolate_host = x->host;
		if (persist_observe(
			    m, persist_key(MATRIX_EV_NODE_LOST, x->host, 0), &e,
			    PERSIST_IMMEDIATE, NULL) < 0)
			return -1;
	}
	return 0;
}

/* Non-communication hang candidate: rank of c never entered op k. */
static int
hang_missing(struct matrix *m, const struct comm *c, uint32_t rank, uint64_t k)
{
	struct matrix_event e;
	uint64_t key =
		matrix_rank_event(m, &e, MATRIX_EV_NONCOMM_HANG, c, rank);

	e.slowdown = 1.0;
	e.score = c->stall;
	e.confidence = 0.95;
	e.hang_seq = k;
	return persist_observe(m, key, &e, PERSIST_IMMEDIATE, NULL);
}

/* A cell of comm ci with chunks posted and still no byte moved. */
static int
hang_cell_stuck(const struct cell *x, uint32_t ci)
{
	return x->comm == ci && x->bytes == 0;
}

/*
 * Communication hang of comm ci at op k: one candidate per connection with
 * chunks posted and no bytes moved, or, with no such marker, one ambiguous
 * candidate naming the communicator. Returns 0 or -1.
 */
static int
hang_stuck(struct matrix *m, uint32_t ci, uint64_t k)
{
	const struct comm *c = &m->comms[ci];
	struct matrix_event e;
	uint32_t i, sr, found = 0;

	for (i = 0; i < m->nstuck; i++) {
		const struct cell *x = &m->cells[m->stuck[i]];
		const struct dev *a, *b;

		if (!hang_cell_stuck(x, ci))
			continue;
		a = &m->devs[c->dev[x->src]];
		b = &m->devs[c->dev[x->dst]];
		memset(&e, 0, sizeof(e));
		e.kind = MATRIX_EV_COMM_HANG;
		e.comm = c->hash;
		e.suspects[0].role = MATRIX_ROLE_LINK;
		e.suspects[0].transport = x->tr;
		e.suspects[0].comm = c->hash;
		e.suspects[0].rank = x->src;
		e.suspects[0].peer_rank = x->dst;
		e.suspects[0].host = a->host;
		e.suspects[0].gpu = a->gpu;
		e.suspects[0].nic = a->nic;
		e.suspects[0].port = a->port;
		e.suspects[0].peer_host = b->host;
		e.suspects[0].peer_gpu = b->gpu;
		e.suspects[0].peer_nic = b->nic;
		e.suspects[0].peer_port = b->port;
		e.nsuspects = 1;
		e.ncells = 1;
		e.ncells_total = 1;
		e.cells[0].comm = c->hash;
		e.cells[0].src = x->src;
		e.cells[0].dst = x->dst;
		e.cells[0].algo = x->algo;
		e.slowdown = 1.0;
		e.score = c->stall;
		e.confidence = 0.95;
		e.hang_seq = k;
		e.action = MATRIX_ACT_CHECK_LINK;
		e.isolate_host = a->host;
		if (persist_observe(m,
				    persist_key(MATRIX_EV_COMM_HANG,
						m->eps[x->ep_tx].pkey,
						m->eps[x->ep_rx].pkey),
				    &e, PERSIST_IMMEDIATE, NULL) < 0)
			return -1;
		found++;
	}
	if (found > 0)
		return 0;
	/*
	 * All entered and no connection summary says which connection: name
	 * the op, and the first member that reports ops open to a peer with
	 * nothing moving (rank 0 when none does).
	 */
	for (sr = 0; sr < c->nranks; sr++)
		if (c->rs[sr].seen_iv == m->iv + 1 && c->rs[sr].stuck)
			break;
	if (sr == c->nranks)
		sr = 0;
	memset(&e, 0, sizeof(e));
	e.kind = MATRIX_EV_COMM_HANG;
	e.comm = c->hash;
	e.ambiguous = 1;
	e.slowdown = 1.0;
	e.score = c->stall;
	e.confidence = 0.5;
	e.hang_seq = k;
	e.action = MATRIX_ACT_OBSERVE;
	matrix_suspect_dev(m, &e.suspects[0], c->dev[sr], MATRIX_ROLE_RANK);
	e.suspects[0].comm = c->hash;
	e.suspects[0].rank = e.suspects[0].peer_rank = sr;
	e.nsuspects = 1;
	e.isolate_host = e.suspects[0].host;
	return persist_observe(m,
			       persist_key(MATRIX_EV_COMM_HANG, c->hash, ~0ull),
			       &e, PERSIST_IMMEDIATE, NULL);
}

/*
 * Where a CCL reports an op complete when it is enqueued (no GPU
 * completion: the NCCL plugin's unsampled collectives), every entered op
 * reads as done, and only a member behind the others tells a hang from a
 * quiet communicator.  So: a member at op k whose completion was read at
 * enqueue, and a member that reported itself this interval (not the
 * agent's repeat of older markers) and never entered k.  Members whose
 * completion comes from the GPU cannot be behind an op another finished;
 * if they seem to be, the data is stale, not hung.
 */
static int
hang_behind(const struct matrix *m, const struct comm *c, uint64_t k)
{
	int enq = 0, behind = 0;
	uint32_t r;

	for (r = 0; r < c->nranks; r++) {
		const struct crank *rs = &c->rs[r];

		if (rs->seen_iv != m->iv + 1)
			continue;
		if (rs->enter >= k && rs->enq)
			enq = 1;
		if (rs->enter < k && !rs->carried)
			behind = 1;
	}
	return enq && behind;
}

/*
 * With completion read at enqueue, a communicator stuck on the network
 * reads as done too: every member entered the op and reported it done.
 * What still tells it from a quiet one, where some member's completion
 * was read at enqueue: a member that reports ops open to a peer with
 * nothing moving (Progress.stuck_peers: what the NCCL plugin sends when
 * no proxy op finished, so no connection summary comes), or a connection
 * summary of it with chunks posted and no byte moved this interval.
 */
static int
hang_enq_stuck(const struct matrix *m, const struct comm *c, uint32_t ci)
{
	uint32_t r, i;
	int enq = 0, stuck = 0;

	for (r = 0; r < c->nranks; r++) {
		if (c->rs[r].seen_iv != m->iv + 1)
			continue;
		enq |= c->rs[r].enq;
		stuck |= c->rs[r].stuck;
	}
	if (!enq)
		return 0;
	if (stuck)
		return 1;
	for (i = 0; i < m->nstuck; i++)
		if (hang_cell_stuck(&m->cells[m->stuck[i]], ci))
			return 1;
	return 0;
}

/*
 * Progress of comm ci: count intervals without completion; past
 * hang_timeout with an op entered and not completed, name the members
 * that did not enter it (unless explained by a lost host or a block in
 * another communicator), or, when all entered, the stuck connections.
 */
static int
hang_comm(struct matrix *m, uint32_t ci)
{
	struct comm *c = &m->comms[ci];
	uint64_t done = 0, k = 0;
	uint32_t r, nmiss = 0, nexpl = 0;

	for (r = 0; r < c->nranks; r++) {
		const struct crank *rs = &c->rs[r];

		if (rs->seen_iv == 0)
			continue;
		if (rs->done > done)
			done = rs->done;
		if (rs->enter > k)
			k = rs->enter;
	}
	if (done > c->done_max || !c->any_done) {
		c->any_done = 1;
		c->done_max = done;
		c->stall = 0;
		return 0;
	}
	c->stall++;
	if (c->stall < m->p.hang_timeout)
		return 0;
	if (k <= c->done_max && !hang_behind(m, c, k))
		return hang_enq_stuck(m, c, ci) ? hang_stuck(m, ci, k) : 0;
	for (r = 0; r < c->nranks; r++) {
		const struct crank *rs = &c->rs[r];
		const struct dev *d = &m->devs[c->dev[r]];

		if (rs->seen_iv == m->iv + 1 && rs->enter >= k)
			continue;
		nmiss++;
		if (hang_host_lost(m, d->hidx) ||
		    (d->blk_iv == m->iv && d->blocked)) {
			nexpl++;
			continue;
		}
		if (rs->seen_iv != m->iv + 1)
			continue; /* silent but its host is not lost yet */
		if (hang_missing(m, c, r, k) < 0)
			return -1;
	}
	if (nmiss == 0)
		return hang_stuck(m, ci, k);
	return 0;
}

/* Judge node loss and every communicator's progress. Returns 0 or -1. */
int
hang_detect(struct matrix *m)
{
	uint32_t ci;

	hang_nodes(m);
	if (hang_node_events(m) < 0)
		return -1;
	for (ci = 0; ci < m->ncomms; ci++)
		if (!m->comms[ci].retired && hang_comm(m, ci) < 0)
			return -1;
	return 0;
}
