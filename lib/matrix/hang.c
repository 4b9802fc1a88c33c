/*
 * hang.c: communication hang, non-communication hang and node loss, from
 * progress markers only.
 *
 * Every member of a communicator counts the intervals in which its own
 * markers (seq_enter, seq_done) arrived and did not move: only intervals
 * in which its host was heard from and the summary was the rank's own,
 * not the agent's repeat (matrix_coll.carried), count, so reports that
 * come late or bunched never add up to a hang.  The op a communicator is
 * stuck at is the lowest op k some member is inside (entered, not
 * completed); members that completed it and went on to k + 1 wait for
 * the others.  When every member inside k heard from this interval has
 * been still for hang_timeout intervals:
 *
 * - members whose markers say they never entered k are the
 *   non-communication suspects, unless explained (their host is lost,
 *   they are blocked inside another communicator's op, which then carries
 *   the event, or they entered the op another communicator stands still
 *   at: a partial hang holds them); a member not heard from is named only
 *   once its own markers confirm it did not move;
 * - when every member entered k, the connections of the communicator
 *   with chunks posted and no byte moved name the link (both ends); with
 *   no such connection, one ambiguous event names the members whose own
 *   markers put them inside k, and nobody else.
 *
 * Where ops read as done when enqueued nobody is inside an op: a member
 * behind the others, a stuck connection or a member reporting ops open to
 * a peer tells a hang from a quiet communicator (hang_behind,
 * hang_enq_stuck).  A host is lost after node_timeout intervals unheard,
 * counted only in intervals in which the job was heard from (stall.c) and
 * no summary of its ranks arrived (late reports prove it alive), and
 * link_grace intervals later while its agent's session is still open (a
 * starved or stopped agent reports late; a dead one closes it).  Every
 * communicator is judged before any is named, so what holds a member is
 * known whatever the order of the communicators.
 */
#include <string.h>

#include "matrix_int.h"

/* What hang_judge() found in a communicator this interval (comm.hv). */
enum {
	HANG_NONE = 0, /* moving, or waiting for its members' markers */
	HANG_STOPPED,  /* still, nobody inside an op: a quiet communicator */
	HANG_LOST,     /* a member's host is lost, whose event explains it */
	HANG_ABSENT,   /* stuck at op comm.hk, some member never entered */
	HANG_STUCK     /* stuck at op comm.hk, every member entered */
};

static int
hang_host_lost(const struct matrix *m, uint32_t hidx)
{
	return m->hosts[hidx].lost;
}

void
hang_evidence(struct matrix_event *e, unsigned domain, unsigned basis,
	      uint32_t intervals)
{
	uint8_t n = intervals > UINT8_MAX ? UINT8_MAX : (uint8_t)intervals;

	e->domain = (uint8_t)domain;
	e->evidence.basis = (uint8_t)basis;
	e->evidence.hot_intervals = n;
	e->evidence.window = n;
	e->evidence.z_open = (float)e->score;
	e->evidence.slowdown_open = 1.0f;
	if (e->evidence.nmembers == 0)
		e->evidence.nmembers = 1;
}

/*
 * Count each host's intervals unheard.  An interval in which fewer than
 * stall_frac of the hosts expected to report were heard from counts
 * against nobody: the silence is the job's or the master's (stall.c
 * reports it), not one host's.  Nor does an interval in which summaries
 * of the host's ranks arrived without its heartbeat (host.rep_iv, stamped
 * by hang_ranks()): its reports come late and bunched, and a host whose
 * reports arrive is not lost.
 */
static void
hang_nodes(struct matrix *m)
{
	uint32_t h, expect = 0, heard = 0;
	int quorum;

	for (h = 0; h < m->nhosts; h++) {
		if (m->hosts[h].members == 0)
			continue;
		expect++;
		heard += m->hosts[h].heard;
	}
	quorum = heard > 0 && heard >= m->p.stall_frac * expect;
	if (expect > 0 && !quorum)
		m->silent++;
	else
		m->silent = 0;
	for (h = 0; h < m->nhosts; h++) {
		struct host *x = &m->hosts[h];

		if (x->members == 0) {
			/* Every rank it ran is in retired communicators. */
			x->lost = 0;
			x->miss = 0;
			continue;
		}
		if (x->heard)
			x->miss = 0;
		else if (quorum && x->rep_iv != m->iv + 1)
			x->miss++;
		x->lost = x->miss >=
			  m->p.node_timeout + (x->linked ? m->p.link_grace : 0);
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
		e.score = (double)x->miss;
		e.confidence = 0.99;
		e.action = MATRIX_ACT_ISOLATE_HOST;
		e.isolate_host = x->host;
		hang_evidence(&e, MATRIX_DOM_HOST, MATRIX_BASIS_HEARTBEAT,
			      x->miss);
		if (persist_observe(
			    m, persist_key(MATRIX_EV_NODE_LOST, x->host, 0), &e,
			    PERSIST_IMMEDIATE, NULL) < 0)
			return -1;
	}
	return 0;
}

/* Did rank of c send its own markers this interval, from a heard host? */
static int
hang_fresh(const struct matrix *m, const struct comm *c, uint32_t rank)
{
	const struct crank *rs = &c->rs[rank];

	return rs->seen_iv == m->iv + 1 && !rs->carried &&
	       m->hosts[m->devs[c->dev[rank]].hidx].heard;
}

/* Is rank of c inside op k by its last markers (entered, not done)? */
static int
hang_inside_k(const struct crank *rs, uint64_t k)
{
	return rs->enter == k && rs->enter > rs->done;
}

/*
 * Count the intervals each member of c reported and did not move; stamp
 * the devices heard from (and moving, within stall_timeout) for stall.c
 * and the hosts whose summaries arrived (host.rep_iv) for hang_nodes().
 * c->hk gets the lowest op a member is inside by its last markers
 * (UINT64_MAX: none) and c->hkmax the highest op entered.
 */
static void
hang_ranks(struct matrix *m, struct comm *c)
{
	uint32_t r;

	c->hk = UINT64_MAX;
	c->hkmax = 0;
	for (r = 0; r < c->nranks; r++) {
		struct crank *rs = &c->rs[r];
		struct dev *d = &m->devs[c->dev[r]];

		if (rs->seen_iv == 0)
			continue;
		if (rs->seen_iv == m->iv + 1)
			m->hosts[d->hidx].rep_iv = m->iv + 1;
		if (rs->enter > rs->done && rs->enter < c->hk)
			c->hk = rs->enter;
		if (rs->enter > c->hkmax)
			c->hkmax = rs->enter;
		if (!hang_fresh(m, c, r))
			continue;
		if (!rs->h_have || rs->enter != rs->h_enter ||
		    rs->done != rs->h_done) {
			rs->h_have = 1;
			rs->h_enter = rs->enter;
			rs->h_done = rs->done;
			rs->still = 0;
		} else if (rs->still < UINT32_MAX) {
			rs->still++;
		}
		if (d->hd_iv != m->iv + 1 || rs->still < d->still_min)
			d->still_min = rs->still;
		d->hd_iv = m->iv + 1;
		if (rs->still < m->p.stall_timeout)
			d->mv_iv = m->iv + 1;
	}
}

/*
 * How long c has stood still: the fewest still intervals among the
 * members heard from this interval that are inside op k (all of them when
 * k is UINT64_MAX).  UINT32_MAX when none of those was heard from: the
 * verdict waits for their own markers.
 */
static uint32_t
hang_age(const struct matrix *m, const struct comm *c, uint64_t k)
{
	uint32_t r, age = UINT32_MAX;

	for (r = 0; r < c->nranks; r++) {
		const struct crank *rs = &c->rs[r];

		if (!hang_fresh(m, c, r))
			continue;
		if (k != UINT64_MAX && !hang_inside_k(rs, k))
			continue;
		if (rs->still < age)
			age = rs->still;
	}
	return age;
}

/*
 * Is a member of c that never entered op k explained elsewhere: its host
 * is lost, it is blocked inside another communicator's op, or it took
 * part in the hung op of another communicator (a partial hang: it
 * completed op k there and waits for the others, so the ranks waiting
 * for it here wait on that hang, whose event names the culprit)?
 */
static int
hang_explained(const struct matrix *m, const struct comm *c, uint32_t rank)
{
	const struct dev *d = &m->devs[c->dev[rank]];

	return hang_host_lost(m, d->hidx) ||
	       (d->blk_iv == m->iv && d->blocked) || d->hg_iv == m->iv + 1;
}

/* May rank of c be named as never entering op k? */
static int
hang_nameable(const struct matrix *m, const struct comm *c, uint32_t rank,
	      uint64_t k)
{
	const struct crank *rs = &c->rs[rank];

	return rs->enter < k && !hang_explained(m, c, rank) &&
	       hang_fresh(m, c, rank) && rs->still >= m->p.hang_timeout;
}

/*
 * Non-communication hang of comm ci at op k: one candidate per member
 * whose own markers, still for hang_timeout intervals, say it never
 * entered k.  Isolation is recommended only when one host holds every
 * member named; otherwise the events are ambiguous and observed.
 * Returns 0 or -1.
 */
static int
hang_absent(struct matrix *m, uint32_t ci, uint64_t k)
{
	const struct comm *c = &m->comms[ci];
	struct matrix_event e;
	uint32_t r, host = UINT32_MAX, n = 0;
	int onehost = 1;

	for (r = 0; r < c->nranks; r++) {
		if (!hang_nameable(m, c, r, k))
			continue;
		if (n++ > 0 && m->devs[c->dev[r]].host != host)
			onehost = 0;
		host = m->devs[c->dev[r]].host;
	}
	for (r = 0; n > 0 && r < c->nranks; r++) {
		uint64_t key;

		if (!hang_nameable(m, c, r, k))
			continue;
		key = matrix_rank_event(m, &e, MATRIX_EV_NONCOMM_HANG, c, r);
		e.slowdown = 1.0;
		e.score = c->rs[r].still;
		e.hang_seq = k;
		e.confidence = onehost ? 0.95 : 0.6;
		e.ambiguous = !onehost;
		e.action =
			onehost ? MATRIX_ACT_ISOLATE_HOST : MATRIX_ACT_OBSERVE;
		hang_evidence(&e, MATRIX_DOM_GPU, MATRIX_BASIS_PROGRESS,
			      c->rs[r].still);
		if (persist_observe(m, key, &e, PERSIST_IMMEDIATE, NULL) < 0)
			return -1;
	}
	return 0;
}

/* A cell of comm ci with chunks posted and still no byte moved. */
static int
hang_cell_stuck(const struct cell *x, uint32_t ci)
{
	return x->comm == ci && x->bytes == 0;
}

/*
 * Communication hang of comm ci at op k: one candidate per connection
 * with chunks posted and no byte moved (check the link; ambiguous when
 * several are stuck, since the stall of one starves the others).  Sets
 * *found to their number.  Returns 0 or -1.
 */
static int
hang_links(struct matrix *m, uint32_t ci, uint64_t k, uint32_t *found)
{
	const struct comm *c = &m->comms[ci];
	struct matrix_event e;
	uint32_t i, n = 0;

	for (i = 0; i < m->nstuck; i++)
		n += hang_cell_stuck(&m->cells[m->stuck[i]], ci);
	*found = n;
	for (i = 0; n > 0 && i < m->nstuck; i++) {
		const struct cell *x = &m->cells[m->stuck[i]];

		if (!hang_cell_stuck(x, ci))
			continue;
		memset(&e, 0, sizeof(e));
		e.kind = MATRIX_EV_COMM_HANG;
		e.comm = c->hash;
		cand_fill_link(m, &e.suspects[0], x);
		e.nsuspects = 1;
		e.ncells = 1;
		e.ncells_total = 1;
		e.cells[0].comm = c->hash;
		e.cells[0].src = x->src;
		e.cells[0].dst = x->dst;
		e.cells[0].algo = x->algo;
		e.slowdown = 1.0;
		e.score = c->stall;
		e.confidence = n == 1 ? 0.95 : 0.6;
		e.ambiguous = n > 1;
		e.hang_seq = k;
		e.action = MATRIX_ACT_CHECK_LINK;
		e.isolate_host = e.suspects[0].host;
		hang_evidence(&e, MATRIX_DOM_LINK, MATRIX_BASIS_PROGRESS,
			      c->stall);
		if (persist_observe(m,
				    persist_key(MATRIX_EV_COMM_HANG,
						m->eps[x->ep_tx].pkey,
						m->eps[x->ep_rx].pkey),
				    &e, PERSIST_IMMEDIATE, NULL) < 0)
			return -1;
	}
	return 0;
}

/*
 * Does rank of c carry its own evidence of op k hanging: inside k by its
 * markers, or (pass 0) reporting ops open to a peer with nothing moving?
 */
static int
hang_witness(const struct matrix *m, const struct comm *c, uint32_t rank,
	     uint64_t k, int pass)
{
	const struct crank *rs = &c->rs[rank];

	if (!hang_fresh(m, c, rank))
		return 0;
	return pass == 0 ? rs->stuck : !rs->stuck && hang_inside_k(rs, k);
}

/*
 * Communication hang of comm ci at op k with no connection that shows
 * where: one ambiguous candidate naming the members with their own
 * evidence (hang_witness: those reporting a stuck peer first), never a
 * member without.  Its domain is the GPU or host that holds them all, else
 * the job.  Returns 0 or -1.
 */
static int
hang_inside(struct matrix *m, uint32_t ci, uint64_t k)
{
	const struct comm *c = &m->comms[ci];
	struct matrix_event e;
	uint32_t r, n = 0, dev = NO_IDX, host = UINT32_MAX;
	int pass, onedev = 1, onehost = 1, peer = 0;

	memset(&e, 0, sizeof(e));
	for (pass = 0; pass < 2; pass++)
		for (r = 0; r < c->nranks; r++) {
			struct matrix_suspect *s;

			if (!hang_witness(m, c, r, k, pass))
				continue;
			peer |= pass == 0;
			if (n++ > 0) {
				onedev &= c->dev[r] == dev;
				onehost &= m->devs[c->dev[r]].host == host;
			}
			dev = c->dev[r];
			host = m->devs[dev].host;
			if (e.nsuspects == MATRIX_MAX_SUSPECTS)
				continue;
			s = &e.suspects[e.nsuspects++];
			matrix_suspect_dev(m, s, dev, MATRIX_ROLE_RANK);
			s->comm = c->hash;
			s->rank = s->peer_rank = r;
		}
	if (n == 0)
		return 0;
	e.kind = MATRIX_EV_COMM_HANG;
	e.comm = c->hash;
	e.ambiguous = 1;
	e.slowdown = 1.0;
	e.score = c->stall;
	e.confidence = peer ? 0.5 : 0.3;
	e.hang_seq = k;
	e.action = MATRIX_ACT_OBSERVE;
	e.isolate_host = e.suspects[0].host;
	e.evidence.nmembers = n;
	hang_evidence(&e,
		      onedev	? MATRIX_DOM_GPU
		      : onehost ? MATRIX_DOM_HOST
				: MATRIX_DOM_JOB,
		      MATRIX_BASIS_PROGRESS, c->stall);
	return persist_observe(m,
			       persist_key(MATRIX_EV_COMM_HANG, c->hash, ~0ull),
			       &e, PERSIST_IMMEDIATE, NULL);
}

/* Communication hang of comm ci at op k: its links, else its members. */
static int
hang_stuck(struct matrix *m, uint32_t ci, uint64_t k)
{
	uint32_t found;

	if (hang_links(m, ci, k, &found) < 0)
		return -1;
	return found > 0 ? 0 : hang_inside(m, ci, k);
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

/* Does a member of c run on a lost host (whose event explains c)? */
static int
hang_any_lost(const struct matrix *m, const struct comm *c)
{
	for (uint32_t r = 0; r < c->nranks; r++)
		if (hang_host_lost(m, m->devs[c->dev[r]].hidx))
			return 1;
	return 0;
}

/*
 * Stamp the members of c that entered op k (dev.hg_iv): they took part
 * in an op that stands still, and are no suspects of another
 * communicator's hang.
 */
static void
hang_stamp(struct matrix *m, const struct comm *c, uint64_t k)
{
	uint32_t r;

	for (r = 0; r < c->nranks; r++)
		if (c->rs[r].seen_iv != 0 && c->rs[r].enter >= k)
			m->devs[c->dev[r]].hg_iv = m->iv + 1;
}

/*
 * Judge comm c this interval (c->hv, the op in c->hk) from the markers
 * hang_ranks() took: HANG_NONE while it moves (or waits for its members'
 * own markers), HANG_STOPPED when it stood still for hang_timeout
 * intervals with nobody inside an op and no sign of a hang, HANG_LOST,
 * HANG_ABSENT or HANG_STUCK when it hangs.  The members that entered the
 * op of a hung communicator are stamped (hang_stamp), and so are those
 * that entered op k while the members inside k stood still for an
 * interval: a member that completed op k while others cannot is held by
 * that op, not its culprit, and communicators do not stop in the same
 * interval, so the other's hang may be judged an interval early.
 */
static void
hang_judge(struct matrix *m, uint32_t ci)
{
	struct comm *c = &m->comms[ci];
	uint32_t r, age;

	age = hang_age(m, c, c->hk);
	c->stall = age == UINT32_MAX ? 0 : age;
	c->hv = HANG_NONE;
	if (c->hk != UINT64_MAX && age != UINT32_MAX && age > 0)
		hang_stamp(m, c, c->hk);
	if (age == UINT32_MAX || age < m->p.hang_timeout)
		return;
	if (hang_any_lost(m, c)) {
		c->hv = HANG_LOST;
		return;
	}
	if (c->hk == UINT64_MAX) {
		c->hk = c->hkmax;
		if (hang_behind(m, c, c->hk))
			c->hv = HANG_ABSENT;
		else if (hang_enq_stuck(m, c, ci))
			c->hv = HANG_STUCK;
		else
			c->hv = HANG_STOPPED;
	} else {
		for (r = 0; r < c->nranks; r++)
			if (c->rs[r].enter < c->hk)
				break;
		c->hv = r < c->nranks ? HANG_ABSENT : HANG_STUCK;
	}
	if (c->hv != HANG_STOPPED)
		hang_stamp(m, c, c->hk);
}

/*
 * Judge node loss, every communicator's progress and a stall of the whole
 * job.  Every communicator is judged before any is named, so a member
 * waiting on another communicator's hang is known as such whatever the
 * order.  Returns 0 or -1.
 */
int
hang_detect(struct matrix *m)
{
	uint32_t ci;
	int found = 0, rc = 0;

	for (ci = 0; ci < m->ncomms; ci++)
		if (!m->comms[ci].retired)
			hang_ranks(m, &m->comms[ci]);
	hang_nodes(m);
	if (hang_node_events(m) < 0)
		return -1;
	for (ci = 0; ci < m->ncomms; ci++)
		if (!m->comms[ci].retired)
			hang_judge(m, ci);
	for (ci = 0; ci < m->ncomms && rc == 0; ci++) {
		const struct comm *c = &m->comms[ci];

		if (c->retired || c->hv == HANG_NONE || c->hv == HANG_STOPPED)
			continue;
		found = 1;
		if (c->hv == HANG_ABSENT)
			rc = hang_absent(m, ci, c->hk);
		else if (c->hv == HANG_STUCK)
			rc = hang_stuck(m, ci, c->hk);
	}
	return rc < 0 ? -1 : stall_detect(m, found);
}
