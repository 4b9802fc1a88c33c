/*
 * telemetry.c - agents' registrations and telemetry batches to the
 * detection engine's records, queued per host.
 */
#define LOG_SUBSYS "ingest"

#include "telemetry.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sketch.h"
#include "vec.h"

int
telemetry_init(struct telemetry *t, struct hosts *hosts, struct matrix *m,
	       struct ingest_stats *st)
{
	memset(t, 0, sizeof(*t));
	t->hosts = hosts;
	t->m = m;
	t->st = st;
	t->fl = flight_new();
	return t->fl != NULL ? 0 : -1;
}

/* ---- registration ------------------------------------------------------ */

/* A communicator destroyed by the job leaves the engine's judgement. */
static void
telemetry_retire(struct telemetry *t, uint64_t hash)
{
	uint32_t ci;

	if (u64map_get(&t->comm_map, hash, &ci) == 0 && t->comms[ci].added &&
	    !t->comms[ci].retired) {
		matrix_comm_retire(t->m, hash);
		t->comms[ci].retired = 1;
		log_info("communicator %016" PRIx64 " destroyed", hash);
	}
}

void
telemetry_set_limits(struct telemetry *t, uint64_t max, uint64_t max_per_link)
{
	t->max_comms = max;
	t->max_comms_per_link = max_per_link;
}

/* The count of link (created at 0), or NULL without memory. */
static struct telemetry_link *
telemetry_link_get(struct telemetry *t, const void *link)
{
	uint32_t li;

	if (u64map_get(&t->link_map, (uintptr_t)link, &li) == 0)
		return &t->links[li];
	if (vec_reserve((void **)&t->links, &t->clinks, t->nlinks + 1,
			sizeof(*t->links)) < 0 ||
	    u64map_put(&t->link_map, (uintptr_t)link, (uint32_t)t->nlinks) < 0)
		return NULL;
	t->links[t->nlinks].link = link;
	t->links[t->nlinks].comms = 0;
	return &t->links[t->nlinks++];
}

void
telemetry_unlink(struct telemetry *t, const void *link)
{
	uint32_t li;

	if (u64map_get(&t->link_map, (uintptr_t)link, &li) < 0)
		return;
	u64map_del(&t->link_map, (uintptr_t)link);
	if (li + 1 < t->nlinks) {
		t->links[li] = t->links[t->nlinks - 1];
		u64map_put(&t->link_map, (uintptr_t)t->links[li].link, li);
	}
	t->nlinks--;
}

/*
 * May the session counted in l (NULL: none) introduce one more
 * communicator?  0, or -1 with err set (ERR_LIMIT, counted) at a cap.
 */
static int
telemetry_comm_admit(struct telemetry *t, const C4__CommRegister *m,
		     const struct telemetry_link *l, struct msg_err *err)
{
	if (t->max_comms > 0 && t->ncomms >= t->max_comms) {
		snprintf(err->text, sizeof(err->text),
			 "communicator %016" PRIx64
			 " refused: the job has %zu communicators "
			 "(limits.max_comms)",
			 m->comm_hash, t->ncomms);
	} else if (l != NULL && t->max_comms_per_link > 0 &&
		   l->comms >= t->max_comms_per_link) {
		snprintf(err->text, sizeof(err->text),
			 "communicator %016" PRIx64
			 " refused: this session registered %" PRIu64
			 " communicators (limits.max_comms_per_session)",
			 m->comm_hash, l->comms);
	} else {
		return 0;
	}
	err->code = C4__ERROR_CODE__ERR_LIMIT;
	t->st->comms_refused++;
	return -1;
}

/*
 * The communicator m registers, created on its first registration if the
 * caps allow it (introduced by session link).
 */
static struct telemetry_comm *
telemetry_comm_get(struct telemetry *t, const C4__CommRegister *m,
		   const void *link, struct msg_err *err)
{
	struct telemetry_link *l;
	struct telemetry_comm *c;
	uint32_t ci;

	if (u64map_get(&t->comm_map, m->comm_hash, &ci) == 0) {
		c = &t->comms[ci];
		if (c->nranks != m->nranks) {
			err->code = C4__ERROR_CODE__ERR_INVALID;
			snprintf(err->text, sizeof(err->text),
				 "communicator %016" PRIx64
				 " registered with %u ranks, now %u",
				 m->comm_hash, c->nranks, m->nranks);
			return NULL;
		}
		return c;
	}
	l = link != NULL ? telemetry_link_get(t, link) : NULL;
	if ((link != NULL && l == NULL) ||
	    telemetry_comm_admit(t, m, l, err) < 0)
		return NULL;
	if (vec_reserve((void **)&t->comms, &t->ccomms, t->ncomms + 1,
			sizeof(*t->comms)) < 0)
		return NULL;
	ci = (uint32_t)t->ncomms;
	c = &t->comms[ci];
	memset(c, 0, sizeof(*c));
	c->hash = m->comm_hash;
	c->nranks = m->nranks;
	c->map = calloc(m->nranks, sizeof(*c->map));
	c->known = calloc(m->nranks, 1);
	c->name = m->name ? strdup(m->name) : NULL;
	if (c->map == NULL || c->known == NULL ||
	    u64map_put(&t->comm_map, m->comm_hash, ci) < 0) {
		free(c->map);
		free(c->known);
		free(c->name);
		return NULL;
	}
	t->ncomms++;
	t->st->comms = t->ncomms;
	if (l != NULL)
		l->comms++;
	return c;
}

/* Records where each rank of m runs; the engine's map is fixed once added. */
static int
telemetry_place_ranks(struct telemetry *t, struct telemetry_comm *c,
		      const C4__CommRegister *m)
{
	for (size_t i = 0; i < m->n_ranks; i++) {
		const C4__RankInfo *r = m->ranks[i];
		struct matrix_rank_loc loc;
		struct hosts_entry *h;
		uint32_t hid;

		h = hosts_find(t->hosts, r->host, 1, &hid);
		t->st->hosts = t->hosts->n;
		if (h == NULL)
			return -1;
		memset(&loc, 0, sizeof(loc));
		loc.host = hid;
		loc.gpu = (uint16_t)(r->has_gpu ? r->gpu : r->local_rank);
		if (hosts_nic(h, r->nic, &loc.nic) < 0)
			return -1;
		loc.port = (uint8_t)(r->has_nic_port ? r->nic_port : 1);
		hosts_add_gpu(h, loc.gpu);
		if (c->added)
			continue;
		c->map[r->rank] = loc;
		if (!c->known[r->rank]) {
			c->known[r->rank] = 1;
			c->nknown++;
		}
	}
	return 0;
}

int
telemetry_register(struct telemetry *t, const C4__CommRegister *m,
		   const void *link, struct msg_err *err)
{
	struct telemetry_comm *c;

	if (m->has_destroyed && m->destroyed) {
		/*
		 * The job destroyed the communicator: its ranks go quiet on
		 * purpose, which must not read as a hang or a lost node.
		 */
		telemetry_retire(t, m->comm_hash);
		t->st->registrations++;
		return 0;
	}
	c = telemetry_comm_get(t, m, link, err);
	if (c == NULL)
		return -1;
	t->st->registrations++;
	if (telemetry_place_ranks(t, c, m) < 0)
		return -1;
	if (c->retired) {
		/* Registered again after a destroy: the engine judges anew. */
		c->retired = 0;
		matrix_comm_add(t->m, c->hash, c->nranks, c->map);
	}
	if (!c->added && c->nknown == c->nranks) {
		if (matrix_comm_add(t->m, c->hash, c->nranks, c->map) < 0) {
			err->code = C4__ERROR_CODE__ERR_INVALID;
			snprintf(err->text, sizeof(err->text),
				 "communicator %016" PRIx64
				 ": the detection engine refused it",
				 c->hash);
			return -1;
		}
		c->added = 1;
		log_info("communicator %016" PRIx64 " (%s, %u ranks) complete",
			 c->hash, c->name ? c->name : "-", c->nranks);
	}
	return 0;
}

/* ---- telemetry --------------------------------------------------------- */

/* Wire duration stats (ns) to engine stats (us). */
static void
telemetry_duration(const C4__DurationStats *d, struct matrix_stats *o)
{
	static const double qs[3] = {0.50, 0.90, 0.99};
	double q[3];

	memset(o, 0, sizeof(*o));
	if (d == NULL || d->count == 0)
		return;
	o->count = d->count;
	o->sum = (double)d->sum_ns / 1e3;
	o->min = (double)d->min_ns / 1e3;
	o->max = (double)d->max_ns / 1e3;

	if (d->sketch != NULL && d->sketch->n_index > 0 &&
	    sketch_pb_quantiles(d, qs, 3, q) == 0) {
		o->p50 = q[0] / 1e3;
		o->p90 = q[1] / 1e3;
		o->p99 = q[2] / 1e3;
		/* floored above 0, which means "not given" */
		if (d->count >= MATRIX_WSUM_MIN)
			o->wsum = fmax(o->sum - sketch_pb_excess(d, q[2]) / 1e3,
				       1e-6);
	} else {
		o->p50 = o->p90 = o->p99 = o->sum / (double)o->count;
	}
}

static uint8_t
telemetry_algo(C4__Algorithm a, C4__CollFunc f)
{
	if (f == C4__COLL_FUNC__COLL_SENDRECV ||
	    f == C4__COLL_FUNC__COLL_ALLTOALL)
		return MATRIX_ALGO_P2P;
	switch (a) {
	case C4__ALGORITHM__ALGO_RING:
		return MATRIX_ALGO_RING;
	case C4__ALGORITHM__ALGO_TREE:
	case C4__ALGORITHM__ALGO_NVLS_TREE:
		return MATRIX_ALGO_TREE;
	case C4__ALGORITHM__ALGO_P2P:
		return MATRIX_ALGO_P2P;
	default:
		return MATRIX_ALGO_OTHER;
	}
}

static uint8_t
telemetry_transport(C4__TransportClass t)
{
	switch (t) {
	case C4__TRANSPORT_CLASS__TRANSPORT_NVLINK:
		return MATRIX_TR_NVLINK;
	case C4__TRANSPORT_CLASS__TRANSPORT_PCIE:
		return MATRIX_TR_PCIE;
	case C4__TRANSPORT_CLASS__TRANSPORT_SHM:
		return MATRIX_TR_SHM;
	default:
		return MATRIX_TR_NET;
	}
}

/*
 * The cumulative markers of (comm, rank): a RankCollSummary's sequence
 * numbers are those entered and completed within the interval (0 when
 * none), a Progress entry's the newest ever; the engine wants the latter.
 */
static const C4__Progress *
telemetry_progress_of(const C4__TelemetryBatch *b, uint64_t comm, uint32_t rank)
{
	for (size_t i = 0; i < b->n_progress; i++)
		if (b->progress[i]->comm_hash == comm &&
		    b->progress[i]->rank == rank)
			return b->progress[i];
	return NULL;
}

static int
telemetry_window_coll(struct hosts_window *w, const C4__RankCollSummary *c,
		      const C4__OpStats *op, const C4__Progress *p)
{
	struct matrix_coll *o;

	if (vec_reserve((void **)&w->coll, &w->ccoll, w->ncoll + 1,
			sizeof(*w->coll)) < 0)
		return -1;
	o = &w->coll[w->ncoll++];
	memset(o, 0, sizeof(*o));
	o->comm = c->comm_hash;
	o->rank = c->rank;
	o->seq_enter_first = c->first_seq_entered;
	o->seq_enter = c->last_seq_entered;
	o->seq_done_first = c->first_seq_completed;
	o->seq_done = c->last_seq_completed;
	if (p != NULL) {
		o->seq_enter = p->last_seq_entered;
		o->seq_done = p->last_seq_completed;
		o->done_at_enqueue =
			p->has_completed_at_enqueue && p->completed_at_enqueue;
		o->carried = p->has_carried && p->carried;
		o->stuck = p->n_stuck_peers > 0;
	}
	o->t_first_ns = (int64_t)c->first_start_ns;
	if (op != NULL) {
		o->op = (uint8_t)op->func;
		o->algo = telemetry_algo(op->algorithm, op->func);
		o->proto = (uint8_t)op->protocol;
		o->nops = (uint32_t)op->count;
		o->bytes = op->bytes;
		telemetry_duration(op->kernel_time, &o->kernel);
		telemetry_duration(op->gap_time, &o->gap);
	}
	return 0;
}

/* 1 when comm is a registered 2-rank communicator (see telemetry_add_flights).
 */
static int
telemetry_pair(const struct telemetry *t, uint64_t comm)
{
	uint32_t ci;

	return u64map_get(&t->comm_map, comm, &ci) == 0 &&
	       t->comms[ci].nranks == 2;
}

/*
 * The one-way timing a connection summary carries goes to the flight
 * matcher at once (its other end may be on another host), for the 2-rank
 * communicators that use it.  Returns 1 for a summary that carries
 * nothing else (the receiver's, or a sender's without traffic this
 * interval), 0 otherwise, -1 without memory.
 */
static int
telemetry_timing(struct telemetry *t, const C4__ConnSummary *c)
{
	int only =
		c->receiver || (c->bytes == 0 && c->chunks == 0 &&
				c->pending_chunks == 0 && c->n_timed_seq > 0);

	if (c->n_timed_seq == 0 || !telemetry_pair(t, c->comm_hash))
		return only;
	if (c->n_timed_chunks != c->n_timed_seq ||
	    c->n_timed_mean_ns != c->n_timed_seq) {
		t->st->timing_refused++;
		return only;
	}
	if (flight_add(t->fl, c->comm_hash, c->src_rank, c->dst_rank,
		       c->receiver, c->timed_seq, c->timed_chunks,
		       c->timed_mean_ns, c->n_timed_seq) < 0)
		return -1;
	return only;
}

/* Fills a window from one batch; the records are checked by the engine. */
static int
telemetry_window_fill(struct telemetry *t, struct hosts_window *w,
		      const C4__TelemetryBatch *b)
{
	hosts_window_clear(w);
	for (size_t i = 0; i < b->n_colls; i++) {
		const C4__RankCollSummary *c = b->colls[i];
		const C4__Progress *p =
			telemetry_progress_of(b, c->comm_hash, c->rank);

		if (c->n_ops == 0 && telemetry_window_coll(w, c, NULL, p) < 0)
			return -1;
		for (size_t j = 0; j < c->n_ops; j++)
			if (telemetry_window_coll(w, c, c->ops[j], p) < 0)
				return -1;
	}
	/* Progress markers of ranks with no collective summary. */
	for (size_t i = 0; i < b->n_progress; i++) {
		const C4__Progress *p = b->progress[i];
		C4__RankCollSummary c = C4__RANK_COLL_SUMMARY__INIT;
		int dup = 0;

		for (size_t j = 0; j < b->n_colls && !dup; j++)
			dup = b->colls[j]->comm_hash == p->comm_hash &&
			      b->colls[j]->rank == p->rank;
		if (dup)
			continue;
		c.comm_hash = p->comm_hash;
		c.rank = p->rank;
		if (telemetry_window_coll(w, &c, NULL, p) < 0)
			return -1;
	}
	if (vec_reserve((void **)&w->conn, &w->cconn, b->n_conns,
			sizeof(*w->conn)) < 0 ||
	    vec_reserve((void **)&w->wait, &w->cwait, b->n_waits,
			sizeof(*w->wait)) < 0)
		return -1;
	for (size_t i = 0; i < b->n_conns; i++) {
		const C4__ConnSummary *c = b->conns[i];
		struct matrix_conn *o;
		int only = telemetry_timing(t, c);

		if (only < 0)
			return -1;
		if (only)
			continue;
		o = &w->conn[w->nconn++];
		memset(o, 0, sizeof(*o));
		o->comm = c->comm_hash;
		o->src = c->src_rank;
		o->dst = c->dst_rank;
		o->channels = c->channel_mask;
		o->transport = telemetry_transport(c->transport);
		o->algo = telemetry_algo(c->algorithm,
					 C4__COLL_FUNC__COLL_UNSPECIFIED);
		o->bytes = c->bytes;
		o->chunks = c->chunks;
		o->pending = c->pending_chunks;
		telemetry_duration(c->transfer_time, &o->xfer);
	}
	for (size_t i = 0; i < b->n_waits; i++) {
		const C4__WaitSummary *s = b->waits[i];
		struct matrix_wait *o = &w->wait[w->nwait++];

		memset(o, 0, sizeof(*o));
		o->comm = s->comm_hash;
		o->rank = s->rank;
		o->nsteps = s->steps;
		o->recv_wait_us =
			s->recv_wait ? (double)s->recv_wait->sum_ns / 1e3 : 0;
		o->send_peer_wait_us =
			s->send_peer_wait
				? (double)s->send_peer_wait->sum_ns / 1e3
				: 0;
		o->send_gpu_wait_us =
			s->send_gpu_wait
				? (double)s->send_gpu_wait->sum_ns / 1e3
				: 0;
	}
	return 0;
}
int
telemetry_batch(struct telemetry *t, const char *node,
		const C4__TelemetryBatch *b, const void *link,
		struct msg_err *err)
{
	const char *name = b->host && b->host[0] ? b->host : node;
	struct hosts_window *w;
	struct hosts_entry *h;
	uint32_t hid;
	int dropped;

	if (name == NULL || name[0] == '\0') {
		err->code = C4__ERROR_CODE__ERR_INVALID;
		snprintf(err->text, sizeof(err->text),
			 "telemetry without a host name");
		return -1;
	}
	h = hosts_find(t->hosts, name, 1, &hid);
	t->st->hosts = t->hosts->n;
	if (h == NULL)
		return -1;
	h->link = link;
	w = hosts_slot(h, &dropped);
	t->st->windows_dropped += (uint64_t)dropped;
	if (telemetry_window_fill(t, w, b) < 0) {
		hosts_window_clear(w);
		return -1;
	}
	hosts_push(h);
	t->st->batches++;
	t->st->records += b->n_colls + b->n_conns + b->n_waits + b->n_progress;
	return 0;
}

/*
 * In a 2-rank communicator a chunk's transfer time is what its sender saw
 * (SendWait) plus the queueing on the path that both ends' timings show
 * (flight.h): a transport that calls a chunk sent once a socket buffer
 * took it hides the second from the first, and a pair has no other
 * connection to be compared with.  Larger communicators keep SendWait
 * alone: there the queueing also stretches the connections whose
 * acknowledgements share the slow path, and the delay matrix, which finds
 * the slow one by comparing connections, took far longer to settle on it
 * (docs/nccl.md, 7.1); their timings are not kept.
 */
void
telemetry_add_flights(struct telemetry *t, struct matrix_conn *conn, size_t n)
{
	struct flight_stats fs;
	double ex;

	for (size_t i = 0; i < n; i++) {
		struct matrix_conn *o = &conn[i];

		if (!telemetry_pair(t, o->comm) ||
		    flight_take(t->fl, o->comm, o->src, o->dst, &ex) <= 0 ||
		    o->xfer.count == 0 || !(ex > 0))
			continue;
		ex /= 1e3; /* us, as the stats */
		o->xfer.sum += ex * (double)o->xfer.count;
		o->xfer.min += ex;
		o->xfer.max += ex;
		o->xfer.p50 += ex;
		o->xfer.p90 += ex;
		o->xfer.p99 += ex;
	}
	flight_get_stats(t->fl, &fs);
	t->st->flights_matched = fs.matched;
	t->st->flights_unmatched = fs.unmatched + fs.mismatch;
}

const struct telemetry_comm *
telemetry_comm_find(const struct telemetry *t, uint64_t hash)
{
	uint32_t ci;

	return u64map_get(&t->comm_map, hash, &ci) == 0 ? &t->comms[ci] : NULL;
}

uint64_t
telemetry_comms_incomplete(const struct telemetry *t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->ncomms; i++)
		n += !t->comms[i].added;
	return n;
}

void
telemetry_free(struct telemetry *t)
{
	flight_free(t->fl);
	for (size_t i = 0; i < t->ncomms; i++) {
		free(t->comms[i].map);
		free(t->comms[i].known);
		free(t->comms[i].name);
	}
	free(t->comms);
	u64map_free(&t->comm_map);
	free(t->links);
	u64map_free(&t->link_map);
	memset(t, 0, sizeof(*t));
}
