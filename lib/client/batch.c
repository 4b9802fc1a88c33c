/*
 * batch.c - the messages the CCL client library sends, built on the
 * caller's thread: the TelemetryBatch of one interval and the
 * CommRegister of a communicator, each packed into one frame.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "c4client_int.h"
#include "clock.h"

_Static_assert(
	(int)C4CLIENT_ALLREDUCE == (int)C4__COLL_FUNC__COLL_ALLREDUCE &&
		(int)C4CLIENT_SENDRECV == (int)C4__COLL_FUNC__COLL_SENDRECV &&
		(int)C4CLIENT_ALGO_PAT == (int)C4__ALGORITHM__ALGO_PAT &&
		(int)C4CLIENT_PROTO_SIMPLE == (int)C4__PROTOCOL__PROTO_SIMPLE &&
		(int)C4CLIENT_NET == (int)C4__TRANSPORT_CLASS__TRANSPORT_NET,
	"c4client enums follow c4d.proto");

/* Allocations made while building one message, freed together. */
struct batch_pool {
	void **p;
	size_t n, cap;
	int failed;
};

static void *
batch_pool_track(struct batch_pool *pl, void *p)
{
	if (p == NULL) {
		pl->failed = 1;
		return NULL;
	}
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 64;
		void **v = realloc(pl->p, cap * sizeof(*v));

		if (v == NULL) {
			free(p);
			pl->failed = 1;
			return NULL;
		}
		pl->p = v;
		pl->cap = cap;
	}
	pl->p[pl->n++] = p;
	return p;
}

static void *
batch_pool_alloc(struct batch_pool *pl, size_t n, size_t size)
{
	if (n == 0)
		return NULL;
	return batch_pool_track(pl, calloc(n, size));
}

static void
batch_pool_free(struct batch_pool *pl)
{
	for (size_t i = 0; i < pl->n; i++)
		free(pl->p[i]);
	free(pl->p);
}

/* A DurationStats for sketch s, or NULL when s is NULL or empty. */
static C4__DurationStats *
batch_dur(struct batch_pool *pl, const struct sketch *s)
{
	C4__DurationStats *d;
	C4__QuantileSketch *q;

	if (s == NULL || s->total == 0)
		return NULL;
	d = batch_pool_alloc(pl, 1, sizeof(*d));
	q = batch_pool_alloc(pl, 1, sizeof(*q));
	if (d == NULL || q == NULL)
		return NULL;
	if (sketch_to_pb(s, d, q) < 0) {
		pl->failed = 1;
		return NULL;
	}
	if (q->index != NULL) {
		batch_pool_track(pl, q->index);
		batch_pool_track(pl, q->count);
	}
	return d;
}

static void
batch_colls(struct batch_pool *pl, C4__TelemetryBatch *b,
	    const struct c4client_report *r)
{
	C4__RankCollSummary *cs = batch_pool_alloc(pl, r->ncolls, sizeof(*cs));

	b->colls = batch_pool_alloc(pl, r->ncolls, sizeof(*b->colls));
	if (cs == NULL || b->colls == NULL)
		return;
	b->n_colls = r->ncolls;
	for (size_t i = 0; i < r->ncolls; i++) {
		const struct c4client_coll *in = &r->colls[i];
		C4__RankCollSummary *o = &cs[i];
		C4__OpStats *ops;

		c4__rank_coll_summary__init(o);
		b->colls[i] = o;
		o->has_comm_hash = o->has_rank = 1;
		o->comm_hash = in->comm_hash;
		o->rank = in->rank;
		o->has_first_seq_entered = o->has_last_seq_entered = 1;
		o->first_seq_entered = in->first_seq_entered;
		o->last_seq_entered = in->last_seq_entered;
		o->has_first_seq_completed = o->has_last_seq_completed = 1;
		o->first_seq_completed = in->first_seq_completed;
		o->last_seq_completed = in->last_seq_completed;
		o->has_idle = 1;
		o->idle = in->idle != 0;
		o->has_first_start_ns = in->first_start_ns != 0;
		o->first_start_ns = in->first_start_ns;
		if (in->nops == 0 || in->ops == NULL)
			continue;
		ops = batch_pool_alloc(pl, in->nops, sizeof(*ops));
		o->ops = batch_pool_alloc(pl, in->nops, sizeof(*o->ops));
		if (ops == NULL || o->ops == NULL)
			return;
		o->n_ops = in->nops;
		for (size_t k = 0; k < in->nops; k++) {
			const struct c4client_op *op = &in->ops[k];

			c4__op_stats__init(&ops[k]);
			o->ops[k] = &ops[k];
			ops[k].has_func = ops[k].has_count = 1;
			ops[k].func = (C4__CollFunc)op->func;
			ops[k].count = op->count;
			ops[k].has_bytes = 1;
			ops[k].bytes = op->bytes;
			ops[k].has_algorithm = op->algorithm != 0;
			ops[k].algorithm = (C4__Algorithm)op->algorithm;
			ops[k].has_protocol = op->protocol != 0;
			ops[k].protocol = (C4__Protocol)op->protocol;
			ops[k].has_channels = op->channels != 0;
			ops[k].channels = op->channels;
			ops[k].kernel_time = batch_dur(pl, op->kernel_time);
			ops[k].gap_time = batch_dur(pl, op->gap_time);
			ops[k].enqueue_time = batch_dur(pl, op->enqueue_time);
		}
	}
}

static void
batch_conns(struct batch_pool *pl, C4__TelemetryBatch *b,
	    const struct c4client_report *r)
{
	C4__ConnSummary *cs = batch_pool_alloc(pl, r->nconns, sizeof(*cs));

	b->conns = batch_pool_alloc(pl, r->nconns, sizeof(*b->conns));
	if (cs == NULL || b->conns == NULL)
		return;
	b->n_conns = r->nconns;
	for (size_t i = 0; i < r->nconns; i++) {
		const struct c4client_conn *in = &r->conns[i];
		C4__ConnSummary *o = &cs[i];

		c4__conn_summary__init(o);
		b->conns[i] = o;
		o->has_comm_hash = o->has_src_rank = o->has_dst_rank = 1;
		o->comm_hash = in->comm_hash;
		o->src_rank = in->src_rank;
		o->dst_rank = in->dst_rank;
		o->has_channel_mask = 1;
		o->channel_mask = in->channel_mask;
		o->has_transport = in->transport != 0;
		o->transport = (C4__TransportClass)in->transport;
		o->has_algorithm = in->algorithm != 0;
		o->algorithm = (C4__Algorithm)in->algorithm;
		o->has_bytes = o->has_chunks = o->has_pending_chunks = 1;
		o->bytes = in->bytes;
		o->chunks = in->chunks;
		o->pending_chunks = in->pending_chunks;
		o->has_stalled_ns = in->stalled_ns != 0;
		o->stalled_ns = in->stalled_ns;
		o->transfer_time = batch_dur(pl, in->transfer_time);
		o->has_receiver = in->receiver != 0;
		o->receiver = in->receiver != 0;
		if (in->ntimed > 0 && in->timed_seq != NULL &&
		    in->timed_chunks != NULL && in->timed_mean_ns != NULL) {
			/* Packed before the report returns: no copy needed. */
			o->n_timed_seq = o->n_timed_chunks =
				o->n_timed_mean_ns = in->ntimed;
			o->timed_seq = (uint64_t *)in->timed_seq;
			o->timed_chunks = (uint32_t *)in->timed_chunks;
			o->timed_mean_ns = (uint64_t *)in->timed_mean_ns;
		}
	}
}

static void
batch_waits(struct batch_pool *pl, C4__TelemetryBatch *b,
	    const struct c4client_report *r)
{
	C4__WaitSummary *ws = batch_pool_alloc(pl, r->nwaits, sizeof(*ws));

	b->waits = batch_pool_alloc(pl, r->nwaits, sizeof(*b->waits));
	if (ws == NULL || b->waits == NULL)
		return;
	b->n_waits = r->nwaits;
	for (size_t i = 0; i < r->nwaits; i++) {
		const struct c4client_wait *in = &r->waits[i];
		C4__WaitSummary *o = &ws[i];

		c4__wait_summary__init(o);
		b->waits[i] = o;
		o->has_comm_hash = o->has_rank = 1;
		o->comm_hash = in->comm_hash;
		o->rank = in->rank;
		o->recv_wait = batch_dur(pl, in->recv_wait);
		o->send_peer_wait = batch_dur(pl, in->send_peer_wait);
		o->send_gpu_wait = batch_dur(pl, in->send_gpu_wait);
		o->recv_gpu_wait = batch_dur(pl, in->recv_gpu_wait);
		o->has_steps = 1;
		o->steps = in->steps;
	}
}

static void
batch_progress(struct batch_pool *pl, C4__TelemetryBatch *b,
	       const struct c4client_report *r)
{
	C4__Progress *ps = batch_pool_alloc(pl, r->nprogress, sizeof(*ps));

	b->progress = batch_pool_alloc(pl, r->nprogress, sizeof(*b->progress));
	if (ps == NULL || b->progress == NULL)
		return;
	b->n_progress = r->nprogress;
	for (size_t i = 0; i < r->nprogress; i++) {
		const struct c4client_progress *in = &r->progress[i];
		C4__Progress *o = &ps[i];

		c4__progress__init(o);
		b->progress[i] = o;
		o->has_comm_hash = o->has_rank = 1;
		o->comm_hash = in->comm_hash;
		o->rank = in->rank;
		o->has_last_seq_entered = o->has_last_seq_completed = 1;
		o->last_seq_entered = in->last_seq_entered;
		o->last_seq_completed = in->last_seq_completed;
		o->has_last_change_ns = 1;
		o->last_change_ns = in->last_change_ns;
		o->has_inflight_func = in->inflight_func != 0;
		o->inflight_func = (C4__CollFunc)in->inflight_func;
		o->has_completed_at_enqueue = in->completed_at_enqueue != 0;
		o->completed_at_enqueue = in->completed_at_enqueue != 0;
		if (in->nstuck > 0 && in->stuck_peers != NULL) {
			o->n_stuck_peers = in->nstuck;
			o->stuck_peers = (uint32_t *)in->stuck_peers;
		}
	}
}

uint8_t *
batch_register(struct c4client *c, const struct c4client_reg *g, int destroyed,
	       size_t *len)
{
	C4__CommRegister m = C4__COMM_REGISTER__INIT;
	C4__RankInfo **rp = NULL;
	C4__Envelope env;
	uint8_t *buf;

	m.job_id = c->job;
	m.has_comm_hash = m.has_nranks = 1;
	m.comm_hash = g->hash;
	m.nranks = g->nranks;
	m.name = g->name;
	if (destroyed) {
		m.has_destroyed = 1;
		m.destroyed = 1;
	} else if (g->n > 0) {
		rp = malloc(g->n * sizeof(*rp));
		if (rp == NULL)
			return NULL;
		for (size_t i = 0; i < g->n; i++)
			rp[i] = &g->ranks[i];
		m.ranks = rp;
		m.n_ranks = g->n;
	}
	msg_init_seq(&env, C4__MSG_TYPE__MSG_COMM_REGISTER, &m, ++c->seq);
	buf = msg_frame_new(&env, len);
	free(rp);
	return buf;
}

uint8_t *
batch_report(struct c4client *c, const struct c4client_report *r, size_t *len)
{
	C4__TelemetryBatch b = C4__TELEMETRY_BATCH__INIT;
	struct batch_pool pl = {NULL, 0, 0, 0};
	C4__Envelope env;
	uint8_t *frame = NULL;

	b.job_id = c->job;
	b.host = c->node;
	b.has_interval_id = b.has_interval_start_ns = 1;
	b.interval_start_ns = r->interval_start_ns ? r->interval_start_ns
						   : clock_ns(CLOCK_REALTIME);
	b.has_interval_ms = r->interval_ms != 0;
	b.interval_ms = r->interval_ms;
	batch_colls(&pl, &b, r);
	batch_conns(&pl, &b, r);
	batch_waits(&pl, &b, r);
	batch_progress(&pl, &b, r);
	if (!pl.failed) {
		pthread_mutex_lock(&c->mu);
		msg_init_seq(&env, C4__MSG_TYPE__MSG_TELEMETRY, &b, ++c->seq);
		b.interval_id = r->interval_id ? r->interval_id : ++c->interval;
		pthread_mutex_unlock(&c->mu);
		frame = msg_frame_new(&env, len);
	}
	batch_pool_free(&pl);
	return frame;
}
