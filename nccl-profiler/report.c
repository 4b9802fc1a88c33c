/*
 * report.c - the interval's report (report.h): builds one
 * c4client_report from every communicator's aggregate and hands it to
 * the sink or the client session.
 */
#include "report.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "core.h"
#include "trace.h"

static const struct sketch *
report_sketch(const struct sketch *s)
{
	return s->total > 0 ? s : NULL;
}

struct report_build {
	struct c4client_coll *colls;
	struct c4client_op *ops;
	struct c4client_conn *conns;
	struct c4client_wait *waits;
	struct c4client_progress *prog;
	uint32_t *stuck;
	uint64_t *tseq, *tmean;
	uint32_t *tchunks;
	size_t ncolls, nops, nconns, nwaits, nprog, nstuck, ntimed;
	uint64_t rt_off; /* CLOCK_REALTIME - the plugin's clock */
};

/*
 * Moves the settled ops of table e (no chunk for PROF_KCH_SETTLE_NS) into
 * cn's timing lists: at most PROF_TIMED_REPORT of them, every stride-th
 * op ordinal with the smallest power-of-two stride that fits, so that
 * both ends of a connection mostly pick the same ops.  Returns the count.
 */
static size_t
report_timed(struct report_build *b, struct consumer_timed *e, uint64_t now,
	     struct c4client_conn *cn)
{
	uint64_t stride = 1;
	size_t n = 0, i;

	if (e == NULL)
		return 0;
	for (i = 0; i < PROF_TIMED; i++)
		if (e[i].seq != 0 && now > e[i].t_last + PROF_KCH_SETTLE_NS)
			n++;
	while (n > PROF_TIMED_REPORT * stride)
		stride *= 2;
	cn->timed_seq = &b->tseq[b->ntimed];
	cn->timed_chunks = &b->tchunks[b->ntimed];
	cn->timed_mean_ns = &b->tmean[b->ntimed];
	cn->ntimed = 0;
	for (i = 0; i < PROF_TIMED; i++) {
		if (e[i].seq == 0 || now <= e[i].t_last + PROF_KCH_SETTLE_NS)
			continue;
		if (e[i].seq % stride == 0 && cn->ntimed < PROF_TIMED_REPORT) {
			b->tseq[b->ntimed] = e[i].seq;
			b->tchunks[b->ntimed] = e[i].chunks;
			b->tmean[b->ntimed] =
				e[i].first + e[i].sum / e[i].chunks + b->rt_off;
			b->ntimed++;
			cn->ntimed++;
		}
		e[i].seq = 0;
	}
	return cn->ntimed;
}

/* c's collectives of the interval: one c4client_coll and its ops. */
static void
report_ops(struct report_build *b, struct prof_comm *c)
{
	struct consumer_comm *a = &c->cons;
	struct c4client_coll *co = &b->colls[b->ncolls++];
	uint32_t f;

	memset(co, 0, sizeof(*co));
	co->comm_hash = c->hash;
	co->rank = (uint32_t)c->rank;
	co->ops = &b->ops[b->nops];
	for (f = 0; f < PROF_FUNCS; f++) {
		struct consumer_func *o = &a->ops[f];
		struct c4client_op *op;

		if (o->count == 0)
			continue;
		op = &b->ops[b->nops++];
		op->func = (int)f;
		op->count = o->count;
		op->bytes = o->bytes;
		op->algorithm = o->algo;
		op->protocol = o->proto;
		op->channels = o->channels;
		op->kernel_time = report_sketch(&o->kernel);
		op->gap_time = report_sketch(&o->gap);
		op->enqueue_time = report_sketch(&o->enq);
		co->nops++;
		if (prof_core.stats >= 2)
			trace_op(c, f, o);
	}
	co->idle = !a->any_entered;
	co->first_seq_entered = a->first_entered;
	co->last_seq_entered = a->last_entered_iv;
	co->first_seq_completed = a->first_completed;
	co->last_seq_completed = a->last_completed_iv;
	co->first_start_ns = a->first_start_rt;
}

/*
 * c's connections with traffic this interval, as the sender sees them,
 * and the peers whose ops stayed open longer than an interval (stuck).
 */
static void
report_conns(struct report_build *b, struct prof_comm *c, uint64_t now,
	     uint64_t interval_ns)
{
	struct consumer_comm *a = &c->cons;
	int p;

	for (p = 0; p < c->nranks; p++) {
		struct consumer_peer *pe = &a->peers[p];
		struct c4client_conn *cn;
		int has_steps = pe->chunks_steps > 0;
		uint64_t last =
			pe->last_tx > pe->last_rx ? pe->last_tx : pe->last_rx;

		if ((pe->open_tx > 0 || pe->open_rx > 0) && now > last &&
		    now - last > interval_ns)
			b->stuck[b->nstuck++] = (uint32_t)p;
		if (!pe->used)
			continue;
		cn = &b->conns[b->nconns++];
		memset(cn, 0, sizeof(*cn));
		cn->comm_hash = c->hash;
		cn->src_rank = (uint32_t)c->rank;
		cn->dst_rank = (uint32_t)p;
		cn->channel_mask = pe->chmask;
		cn->transport = C4CLIENT_NET;
		cn->algorithm = pe->algo;
		cn->bytes = has_steps ? pe->bytes_steps : pe->bytes_ops;
		cn->chunks = has_steps ? pe->chunks_steps : pe->chunks_ops;
		cn->pending_chunks =
			pe->pending_tx > 0 ? (uint32_t)pe->pending_tx : 0;
		cn->stalled_ns = pe->open_tx > 0 && now > pe->last_tx
					 ? now - pe->last_tx
					 : 0;
		cn->transfer_time = report_sketch(&pe->xfer);
		report_timed(b, pe->timed[1], now, cn);
	}
}

/* Timing without traffic this interval, and the receiver's side. */
static void
report_timing(struct report_build *b, struct prof_comm *c, uint64_t now)
{
	struct consumer_comm *a = &c->cons;
	int p;

	for (p = 0; p < c->nranks; p++) {
		struct consumer_peer *pe = &a->peers[p];
		struct c4client_conn *cn;
		int rx;

		for (rx = 0; rx < 2; rx++) {
			if (pe->timed[!rx] == NULL || (!rx && pe->used))
				continue;
			cn = &b->conns[b->nconns];
			memset(cn, 0, sizeof(*cn));
			cn->comm_hash = c->hash;
			cn->src_rank = rx ? (uint32_t)p : (uint32_t)c->rank;
			cn->dst_rank = rx ? (uint32_t)c->rank : (uint32_t)p;
			cn->transport = C4CLIENT_NET;
			cn->receiver = rx;
			if (report_timed(b, pe->timed[!rx], now, cn) > 0)
				b->nconns++;
		}
	}
}

/* c's waits and progress; its stuck peers are b->stuck from stuck0. */
static void
report_progress(struct report_build *b, struct prof_comm *c, size_t stuck0)
{
	struct consumer_comm *a = &c->cons;
	struct c4client_progress *pg;

	if (a->steps > 0) {
		struct c4client_wait *w = &b->waits[b->nwaits++];

		memset(w, 0, sizeof(*w));
		w->comm_hash = c->hash;
		w->rank = (uint32_t)c->rank;
		w->recv_wait = report_sketch(&a->wait[0]);
		w->send_peer_wait = report_sketch(&a->wait[1]);
		w->send_gpu_wait = report_sketch(&a->wait[2]);
		w->recv_gpu_wait = report_sketch(&a->wait[3]);
		w->steps = a->steps;
	}
	if (a->last_entered > 0) {
		pg = &b->prog[b->nprog++];
		memset(pg, 0, sizeof(*pg));
		pg->comm_hash = c->hash;
		pg->rank = (uint32_t)c->rank;
		pg->last_seq_entered = a->last_entered;
		pg->last_seq_completed = a->last_completed;
		pg->completed_at_enqueue = a->done_enq;
		pg->last_change_ns = a->last_change;
		pg->inflight_func = a->last_entered > a->last_completed
					    ? a->inflight_func
					    : 0;
		pg->nstuck = b->nstuck - stuck0;
		pg->stuck_peers = pg->nstuck ? &b->stuck[stuck0] : NULL;
	}
}

static void
report_comm(struct report_build *b, struct prof_comm *c, uint64_t now,
	    uint64_t interval_ns)
{
	size_t stuck0 = b->nstuck;

	report_ops(b, c);
	report_conns(b, c, now, interval_ns);
	report_timing(b, c, now);
	report_progress(b, c, stuck0);
}

void
report_send(uint64_t now)
{
	struct report_build b;
	struct c4client_report rep;
	size_t ncomm = 0, nranks = 0;
	uint32_t i;
	struct prof_comm *c;
	uint64_t interval_ns = (uint64_t)prof_core.cfg.interval_ms * 1000000ull;

	memset(&b, 0, sizeof(b));
	for (i = 0; i < PROF_COMMS_MAX; i++)
		if ((c = atomic_load(&prof_core.comms[i])) != NULL) {
			ncomm++;
			nranks += (size_t)c->nranks;
		}
	if (ncomm > 0) {
		b.colls = calloc(ncomm, sizeof(*b.colls));
		b.ops = calloc(ncomm * PROF_FUNCS, sizeof(*b.ops));
		b.conns = calloc(2 * nranks, sizeof(*b.conns));
		b.tseq =
			calloc(2 * nranks * PROF_TIMED_REPORT, sizeof(*b.tseq));
		b.tmean = calloc(2 * nranks * PROF_TIMED_REPORT,
				 sizeof(*b.tmean));
		b.tchunks = calloc(2 * nranks * PROF_TIMED_REPORT,
				   sizeof(*b.tchunks));
		b.rt_off = prof_core.clock != NULL
				   ? 0
				   : prof_realtime() - prof_mono();
		b.waits = calloc(ncomm, sizeof(*b.waits));
		b.prog = calloc(ncomm, sizeof(*b.prog));
		b.stuck = calloc(nranks, sizeof(*b.stuck));
		if (b.colls == NULL || b.ops == NULL || b.conns == NULL ||
		    b.waits == NULL || b.prog == NULL || b.stuck == NULL ||
		    b.tseq == NULL || b.tmean == NULL || b.tchunks == NULL) {
			prof_core.reports_failed++;
			goto out;
		}
		for (i = 0; i < PROF_COMMS_MAX; i++)
			if ((c = atomic_load(&prof_core.comms[i])) != NULL) {
				consumer_settle(c, now);
				report_comm(&b, c, now, interval_ns);
			}
	}
	memset(&rep, 0, sizeof(rep));
	rep.interval_id = ++prof_core.interval_id;
	rep.interval_start_ns = prof_core.interval_start_rt;
	rep.interval_ms = prof_core.cfg.interval_ms;
	rep.ncolls = b.ncolls;
	rep.colls = b.colls;
	rep.nconns = b.nconns;
	rep.conns = b.conns;
	rep.nwaits = b.nwaits;
	rep.waits = b.waits;
	rep.nprogress = b.nprog;
	rep.progress = b.prog;
	if (prof_core.sink != NULL)
		prof_core.sink(&rep, prof_core.sink_arg);
	else if (prof_core.client != NULL &&
		 c4client_report(prof_core.client, &rep) < 0)
		prof_core.reports_failed++;
	prof_core.reports++;
out:
	for (i = 0; i < PROF_COMMS_MAX; i++)
		if ((c = atomic_load(&prof_core.comms[i])) != NULL)
			consumer_reset(c);
	free(b.colls);
	free(b.ops);
	free(b.conns);
	free(b.waits);
	free(b.prog);
	free(b.stuck);
	free(b.tseq);
	free(b.tmean);
	free(b.tchunks);
}
