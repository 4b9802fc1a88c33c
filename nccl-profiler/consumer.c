/*
 * consumer.c - the aggregation side of the plugin core (consumer.h).
 *
 * Drains every ring and joins the records by communicator and op
 * sequence into per-interval state (struct consumer_comm).  Everything
 * here is touched by the aggregation thread alone (or the caller of
 * prof_tick when there is no thread).
 */
#include "consumer.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "comm.h"
#include "core.h"

int
consumer_init(struct consumer_comm *a, int nranks)
{
	uint32_t f;
	int i;

	a->peers = calloc((size_t)nranks, sizeof(*a->peers));
	if (a->peers == NULL)
		return -1;
	for (f = 0; f < PROF_FUNCS; f++) {
		sketch_init(&a->ops[f].kernel, 0);
		sketch_init(&a->ops[f].gap, 0);
		sketch_init(&a->ops[f].enq, 0);
	}
	for (i = 0; i < 4; i++)
		sketch_init(&a->wait[i], 0);
	for (i = 0; i < nranks; i++)
		sketch_init(&a->peers[i].xfer, 0);
	return 0;
}

void
consumer_free(struct consumer_comm *a, int nranks)
{
	int i;
	uint32_t f;

	for (f = 0; f < PROF_FUNCS; f++) {
		sketch_free(&a->ops[f].kernel);
		sketch_free(&a->ops[f].gap);
		sketch_free(&a->ops[f].enq);
	}
	for (i = 0; i < 4; i++)
		sketch_free(&a->wait[i]);
	if (a->peers != NULL)
		for (i = 0; i < nranks; i++) {
			sketch_free(&a->peers[i].xfer);
			free(a->peers[i].timed[0]);
			free(a->peers[i].timed[1]);
		}
	free(a->peers);
}

static void
consumer_complete(struct prof_comm *c, uint64_t seq, uint64_t t)
{
	struct consumer_comm *a = &c->cons;

	if (seq == 0 || seq <= a->last_completed)
		return;
	a->last_completed = seq;
	a->last_change = t;
	a->last_done_t = t;
	if (!a->any_completed) {
		a->any_completed = 1;
		a->first_completed = seq;
	}
	a->last_completed_iv = seq;
}

/* Finishes op f: its kernel time, and completion of it and all before. */
static void
consumer_flight_done(struct prof_comm *c, struct consumer_flight *f, uint64_t t)
{
	struct consumer_comm *a = &c->cons;

	if (f->kdone > 0 && f->gmax > f->gmin && f->func < (int)PROF_FUNCS) {
		sketch_add(&a->ops[f->func].kernel, f->gmax - f->gmin);
		/*
		 * The gap is the GPU's time between two collectives: this
		 * kernel's start after the last one's end, one clock.  The
		 * CPU enqueues far ahead of the GPU, so its own timestamps
		 * say nothing about a rank that is late to a collective.
		 */
		if (a->last_gpu_end != 0 && a->last_gpu_seq + 1 == f->seq &&
		    f->gmin >= a->last_gpu_end)
			sketch_add(&a->ops[f->func].gap,
				   f->gmin - a->last_gpu_end);
		a->last_gpu_end = f->gmax;
		a->last_gpu_seq = f->seq;
		a->gpu_timers = 1;
	}
	if (f->seq > a->last_completed)
		a->done_enq = !f->expect_kch;
	consumer_complete(c, f->seq, t);
	f->seq = 0;
}

/*
 * Completion of ops read at enqueue (no kernel channels: the unsampled
 * ones) moves only up to the first op still waiting for its kernel
 * channels.  Ops of one communicator finish in order on the GPU, so an op
 * enqueued after a sampled op that has not finished has not finished
 * either; counting it done would hide that op, and a hang behind it.  A
 * slot that holds no record of an op already entered (a dropped record,
 * or one evicted by ops PROF_INFLIGHT later) does not stop the frontier.
 */
static void
consumer_advance(struct prof_comm *c, uint64_t t)
{
	struct consumer_comm *a = &c->cons;
	uint64_t s;

	for (s = a->last_completed + 1; s <= a->last_entered; s++) {
		struct consumer_flight *f = &a->flight[s % PROF_INFLIGHT];

		if (f->seq == s && !f->ready)
			return;
		if (f->seq == s) {
			consumer_flight_done(c, f, t);
		} else {
			a->done_enq = 1;
			consumer_complete(c, s, t);
		}
	}
}

static void
consumer_coll_start(struct prof_comm *c, const struct prof_rec *r)
{
	struct consumer_comm *a = &c->cons;
	struct consumer_func *o = &a->ops[r->func < PROF_FUNCS ? r->func : 0];
	struct consumer_flight *f = &a->flight[r->seq % PROF_INFLIGHT];

	o->count++;
	o->bytes += r->v[0];
	o->algo = r->algo;
	o->proto = r->proto;
	o->channels = r->nch;
	/* Without GPU timers, the host's view is the best there is. */
	if (a->last_done_t != 0 && !a->gpu_timers)
		sketch_add(&o->gap,
			   r->t > a->last_done_t ? r->t - a->last_done_t : 0);
	if (!a->any_entered) {
		a->any_entered = 1;
		a->first_entered = r->seq;
		a->first_start_rt = r->v[1];
	}
	a->last_entered_iv = r->seq;
	if (r->seq > a->last_entered) {
		a->last_entered = r->seq;
		a->last_change = r->t;
		a->inflight_func = r->func;
	}
	if (f->seq != 0 && f->seq != r->seq)
		a->orphans++; /* evicted before it completed */
	memset(f, 0, sizeof(*f));
	f->seq = r->seq;
	f->func = r->func;
	f->nch = r->nch;
	f->expect_kch = r->v[2] != 0 && r->nch > 0;
}

static void
consumer_coll_stop(struct prof_comm *c, const struct prof_rec *r)
{
	struct consumer_comm *a = &c->cons;
	struct consumer_flight *f = &a->flight[r->seq % PROF_INFLIGHT];

	if (r->func < PROF_FUNCS)
		sketch_add(&a->ops[r->func].enq, r->v[0]);
	/* Without kernel channels, "enqueued" is all we will learn. */
	if (f->seq == r->seq && !f->expect_kch) {
		f->ready = 1;
		consumer_advance(c, r->t);
	}
}

static void
consumer_kch(struct prof_comm *c, const struct prof_rec *r)
{
	struct consumer_comm *a = &c->cons;
	struct consumer_flight *f = &a->flight[r->seq % PROF_INFLIGHT];
	uint64_t s;

	if (r->seq == 0 || f->seq != r->seq) {
		a->orphans++;
		return;
	}
	if (r->v[1] > r->v[0]) {
		if (f->kdone == 0 || r->v[0] < f->gmin)
			f->gmin = r->v[0];
		if (r->v[1] > f->gmax)
			f->gmax = r->v[1];
	}
	f->kdone++;
	f->t_last = r->t;
	if (f->kdone >= f->nch) {
		/* Kernels of one stream run in order: earlier ops are done. */
		s = a->last_completed + 1;
		if (r->seq > PROF_INFLIGHT && s < r->seq - PROF_INFLIGHT)
			s = r->seq - PROF_INFLIGHT;
		for (; s < r->seq; s++) {
			struct consumer_flight *e =
				&a->flight[s % PROF_INFLIGHT];

			if (e->seq == s)
				consumer_flight_done(c, e, r->t);
		}
		consumer_flight_done(c, f, r->t);
		consumer_advance(c, r->t);
	}
}

static void
consumer_proxy_op(struct prof_comm *c, const struct prof_rec *r)
{
	struct consumer_peer *p = &c->cons.peers[r->peer];

	if (r->kind == REC_OP_START) {
		if (r->is_send) {
			p->open_tx++;
			p->pending_tx += (int64_t)r->v[0];
			p->last_tx = r->t;
		} else {
			p->open_rx++;
			p->last_rx = r->t;
		}
		return;
	}
	if (r->is_send) {
		p->open_tx--;
		p->pending_tx -= (int64_t)r->v[0];
		p->last_tx = r->t;
		p->used = 1;
		p->algo = r->algo;
		p->chmask |= 1ull << (r->channel & 63);
		p->bytes_ops += r->v[0] * r->v[1];
		p->chunks_ops += r->v[0];
	} else {
		p->open_rx--;
		p->last_rx = r->t;
	}
}

/* Counts chunk time t of op seq in p's table for direction dir. */
static void
consumer_timed_add(struct consumer_comm *a, struct consumer_peer *p, int dir,
		   uint64_t seq, uint64_t t)
{
	struct consumer_timed *e;

	if (seq == 0 || t == 0)
		return;
	if (p->timed[dir] == NULL &&
	    (p->timed[dir] = calloc(PROF_TIMED, sizeof(*e))) == NULL)
		return;
	e = &p->timed[dir][seq % PROF_TIMED];
	if (e->seq != seq) {
		if (e->seq != 0)
			a->timed_lost++;
		e->seq = seq;
		e->chunks = 0;
		e->first = e->t_last = t;
		e->sum = 0;
	}
	/* Offsets from the earliest chunk: an earlier one moves the base. */
	if (t < e->first) {
		e->sum += (e->first - t) * e->chunks;
		e->first = t;
	}
	e->sum += t - e->first;
	e->chunks++;
	if (t > e->t_last)
		e->t_last = t;
}

static void
consumer_step(struct prof_comm *c, const struct prof_rec *r)
{
	struct consumer_comm *a = &c->cons;
	struct consumer_peer *p = &c->cons.peers[r->peer];

	a->steps++;
	/* One-way timing serves 2-rank communicators (c4d-master's ingest). */
	if (c->nranks == 2)
		consumer_timed_add(a, p, r->is_send != 0, r->seq,
				   r->v[ST_N + 2]);
	if (r->is_send) {
		sketch_add(&a->wait[1], r->v[ST_SEND_PEER]);
		sketch_add(&a->wait[2], r->v[ST_SEND_GPU]);
		if (r->v[ST_SEND] > 0) {
			sketch_add(&p->xfer, r->v[ST_SEND]);
			p->chunks_steps++;
			p->bytes_steps += r->v[ST_N];
		}
		p->used = 1;
		p->algo = r->algo;
		p->chmask |= 1ull << (r->channel & 63);
		p->last_tx = r->t;
	} else {
		sketch_add(&a->wait[0], r->v[ST_RECV]);
		sketch_add(&a->wait[3], r->v[ST_RECV_GPU]);
		p->last_rx = r->t;
	}
}

static void
consumer_record(const struct prof_rec *r)
{
	struct prof_comm *c = r->comm < PROF_COMMS_MAX
				      ? atomic_load(&prof_core.comms[r->comm])
				      : NULL;

	if (c == NULL)
		return;
	if ((r->kind == REC_OP_START || r->kind == REC_OP_STOP ||
	     r->kind == REC_STEP) &&
	    (r->peer < 0 || r->peer >= c->nranks))
		return;
	switch (r->kind) {
	case REC_COLL_START:
		consumer_coll_start(c, r);
		break;
	case REC_COLL_STOP:
		consumer_coll_stop(c, r);
		break;
	case REC_KCH:
		consumer_kch(c, r);
		break;
	case REC_OP_START:
	case REC_OP_STOP:
		consumer_proxy_op(c, r);
		break;
	case REC_STEP:
		consumer_step(c, r);
		break;
	}
}

/* An op whose channels stopped arriving is done (nChannels overstated). */
void
consumer_settle(struct prof_comm *c, uint64_t now)
{
	struct consumer_comm *a = &c->cons;
	struct consumer_flight *f;
	uint64_t s = a->last_completed + 1;

	if (a->last_entered > PROF_INFLIGHT &&
	    s < a->last_entered - PROF_INFLIGHT)
		s = a->last_entered - PROF_INFLIGHT;
	for (; s <= a->last_entered; s++) {
		f = &a->flight[s % PROF_INFLIGHT];
		/* t_last may be after now: read before the last drain */
		if (f->seq != s || f->kdone == 0 ||
		    now < f->t_last + PROF_KCH_SETTLE_NS)
			continue;
		consumer_flight_done(c, f, f->t_last);
	}
	consumer_advance(c, now);
}

static int
consumer_tid_alive(pid_t tid)
{
	return tid <= 0 || syscall(SYS_tgkill, prof_core.pid, tid, 0) == 0 ||
	       errno != ESRCH;
}

void
consumer_drain(void)
{
	struct prof_rec r;
	uint32_t i;
	int n;

	for (i = 0; i < PROF_RINGS_MAX; i++) {
		struct prof_tring *tr = &prof_core.rings[i];

		if (tr->ring.slots == NULL ||
		    atomic_load(&tr->state) == TRING_FREE)
			continue;
		for (n = 0; ring_pop(&tr->ring, &r) == 0; n++)
			consumer_record(&r);
		/* A ring whose thread exited goes back to the free list. */
		if (n == 0 && !consumer_tid_alive(atomic_load(&tr->tid)))
			atomic_store(&tr->state, TRING_FREE);
	}
}

void
consumer_reset(struct prof_comm *c)
{
	struct consumer_comm *a = &c->cons;
	uint32_t f;
	int p, i;

	for (f = 0; f < PROF_FUNCS; f++) {
		struct consumer_func *o = &a->ops[f];

		o->count = o->bytes = 0;
		sketch_reset(&o->kernel);
		sketch_reset(&o->gap);
		sketch_reset(&o->enq);
	}
	for (i = 0; i < 4; i++)
		sketch_reset(&a->wait[i]);
	a->steps = 0;
	for (p = 0; p < c->nranks; p++) {
		struct consumer_peer *pe = &a->peers[p];

		if (!pe->used && pe->chunks_ops == 0 && pe->xfer.total == 0)
			continue;
		pe->used = 0;
		pe->bytes_steps = pe->bytes_ops = 0;
		pe->chunks_steps = pe->chunks_ops = pe->chmask = 0;
		sketch_reset(&pe->xfer);
	}
	a->any_entered = a->any_completed = 0;
	a->first_entered = a->last_entered_iv = 0;
	a->first_completed = a->last_completed_iv = 0;
	a->first_start_rt = 0;
}

/* Comms NCCL finalized: their last records are in; forget them. */
void
consumer_reap(void)
{
	uint32_t i;
	struct prof_comm *c;

	for (i = 0; i < PROF_COMMS_MAX; i++) {
		c = atomic_load(&prof_core.comms[i]);
		if (c == NULL || !atomic_load(&c->finalized))
			continue;
		if (prof_core.client != NULL)
			c4client_deregister(prof_core.client, c->hash);
		prof_core.dead.events += atomic_load(&c->events);
		prof_core.dead.ignored += atomic_load(&c->ignored);
		prof_core.dead.stale += atomic_load(&c->stale);
		prof_core.dead.pool_drops += pool_drops(&c->pool);
		prof_core.dead.orphans += c->cons.orphans;
		prof_core.dead.timed_lost += c->cons.timed_lost;
		atomic_store(&prof_core.comms[i], NULL);
		comm_free(c);
	}
}
