/*
 * producer.c - the callbacks NCCL calls (producer.h), on NCCL's threads.
 *
 * Coll records are slots of a per-communicator ring written by the
 * thread that issues collectives and read by children under a sequence
 * lock; kernel channel, proxy op and proxy step records come from a
 * lock-free pool.  Measurements leave as fixed-size records through the
 * calling thread's single-producer ring, for the consumer to drain.
 */
#include "producer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "comm.h"
#include "core.h"
#include "record.h"
#include "sample.h"

/* Handle layout: comm slot (12 bits) | kind (2) | payload (50). */
#define H_COMM_SHIFT   52
#define H_KIND_SHIFT   50
#define H_PAYLOAD_MASK ((1ull << H_KIND_SHIFT) - 1)
#define H_KIND_COLL    1ull
#define H_KIND_CHILD   2ull
#define H_KIND_API     3ull /* CollApi: payload H_API_* bits */
#define H_API_KNOWN    2ull /* the group's kernel-channel choice is known */
#define H_API_KCH      1ull /* ... and it has kernel-channel events */
#define H_IDX_BITS     20   /* POOL_CAP_MAX */
#define H_GEN_MASK     ((1ull << (H_KIND_SHIFT - H_IDX_BITS)) - 1)

static _Thread_local struct prof_tring *t_ring;
static _Thread_local uint64_t t_epoch;
static _Thread_local uint32_t t_retry;

/* ---- handles -------------------------------------------------------- */

static void *
producer_handle(uint32_t slot, uint64_t kind, uint64_t payload)
{
	return (void *)(uintptr_t)((uint64_t)slot << H_COMM_SHIFT |
				   kind << H_KIND_SHIFT |
				   (payload & H_PAYLOAD_MASK));
}

static struct prof_comm *
producer_handle_comm(const void *h, uint64_t *kind, uint64_t *payload)
{
	uint64_t v = (uint64_t)(uintptr_t)h;
	uint32_t slot = (uint32_t)(v >> H_COMM_SHIFT);

	*kind = (v >> H_KIND_SHIFT) & 3;
	*payload = v & H_PAYLOAD_MASK;
	if (h == NULL || slot >= PROF_COMMS_MAX)
		return NULL;
	return atomic_load_explicit(&prof_core.comms[slot],
				    memory_order_acquire);
}

/* Reads Coll number ctr of c under its sequence lock.  0 or -1 (stale). */
static int
producer_coll_read(struct prof_comm *c, uint64_t ctr, uint64_t *seq, int *func,
		   int *algo, uint64_t *t_start)
{
	struct prof_coll *s = &c->colls[ctr & (c->ncolls - 1)];

	if (atomic_load_explicit(&s->tag, memory_order_acquire) != ctr)
		return -1;
	*seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
	*func = atomic_load_explicit(&s->func, memory_order_relaxed);
	*algo = atomic_load_explicit(&s->algo, memory_order_relaxed);
	*t_start = atomic_load_explicit(&s->t_start, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->tag, memory_order_relaxed) != ctr)
		return -1;
	return 0;
}

/* The child record a handle names, or NULL if it is stale. */
static struct prof_child *
producer_child_get(struct prof_comm *c, uint64_t payload)
{
	uint32_t idx = (uint32_t)(payload & ((1u << H_IDX_BITS) - 1));
	uint32_t gen = (uint32_t)(payload >> H_IDX_BITS);
	struct prof_child *ch;

	if (idx >= c->pool.cap)
		return NULL;
	ch = &c->child[idx];
	if ((atomic_load_explicit(&ch->gen, memory_order_acquire) &
	     H_GEN_MASK) != gen)
		return NULL;
	return ch;
}

/* ---- rings ---------------------------------------------------------- */

static struct prof_tring *
producer_ring_claim(void)
{
	uint64_t epoch =
		atomic_load_explicit(&prof_core.epoch, memory_order_acquire);
	uint32_t i;
	int expect;

	if (t_ring != NULL && t_epoch == epoch)
		return t_ring;
	t_ring = NULL;
	if (t_retry > 0 && t_epoch == epoch) {
		t_retry--;
		return NULL;
	}
	t_epoch = epoch;
	for (i = 0; i < PROF_RINGS_MAX; i++) {
		expect = TRING_FREE;
		if (prof_core.rings[i].ring.slots == NULL)
			continue;
		if (atomic_compare_exchange_strong(&prof_core.rings[i].state,
						   &expect, TRING_OWNED)) {
			atomic_store(&prof_core.rings[i].tid,
				     (pid_t)syscall(SYS_gettid));
			t_ring = &prof_core.rings[i];
			return t_ring;
		}
	}
	t_retry = PROF_RING_RETRY;
	return NULL;
}

static void
producer_push(const struct prof_rec *r)
{
	struct prof_tring *tr = producer_ring_claim();

	if (tr == NULL) {
		atomic_fetch_add_explicit(&prof_core.no_ring, 1,
					  memory_order_relaxed);
		return;
	}
	ring_push(&tr->ring, r);
}

/* ---- callbacks ------------------------------------------------------ */

static int
producer_mask(void)
{
	return prof_core.base_mask |
	       (atomic_load(&prof_core.detail) ? PROF_MASK_DETAIL : 0);
}

/* A CollApi event: choose for the next call, tell what this one has. */
static void *
producer_collapi(struct prof_comm *c, const struct prof_descr *d)
{
	int kch = sample_call(c->mask, d->graph);

	return producer_handle(c->slot, H_KIND_API,
			       H_API_KNOWN | (kch ? H_API_KCH : 0));
}

/* The H_API_* bits of an API handle, or 0. */
static uint64_t
producer_api_bits(const void *h)
{
	uint64_t kind, payload;

	if (producer_handle_comm(h, &kind, &payload) == NULL ||
	    kind != H_KIND_API)
		return 0;
	return payload & (H_API_KNOWN | H_API_KCH);
}

int
producer_init(void **ctx, uint64_t comm_hash, int *mask, const char *name,
	      int nnodes, int nranks, int rank)
{
	struct prof_comm *c;
	struct c4client_rank r;
	struct c4client_comm cm;
	const char *lr;
	uint32_t i;
	int ret = -1;

	*ctx = NULL;
	pthread_mutex_lock(&prof_core.lock);
	/*
	 * NCCL's mask is one variable for all communicators of the process:
	 * it is cleared only when the plugin is off as a whole.
	 */
	if (!prof_core.open) {
		if (mask != NULL)
			*mask = 0;
		ret = 0; /* inactive: NCCL goes on without events */
		goto out;
	}
	if (nranks <= 0 || rank < 0 || rank >= nranks) {
		ret = 0; /* this communicator unobserved */
		goto out;
	}
	c = comm_new(comm_hash, nnodes, nranks, rank);
	if (c == NULL)
		goto out;
	for (i = 0; i < PROF_COMMS_MAX; i++)
		if (atomic_load(&prof_core.comms[i]) == NULL)
			break;
	if (i == PROF_COMMS_MAX) {
		comm_free(c);
		ret = 0;
		goto out;
	}
	c->slot = i;
	c->mask = mask;
	atomic_store_explicit(&prof_core.comms[i], c, memory_order_release);
	if (mask != NULL) {
		/*
		 * Every bit but the kernel channels' once sampling drives
		 * that one: a new communicator (perhaps on NCCL's own init
		 * thread) must not change the bit chosen for the next call.
		 */
		int want = producer_mask();

		if (sample_on() && __atomic_load_n(mask, __ATOMIC_RELAXED)) {
			__atomic_fetch_and(mask, want | NCCL_EV_KERNEL_CH,
					   __ATOMIC_RELAXED);
			__atomic_fetch_or(mask, want & ~NCCL_EV_KERNEL_CH,
					  __ATOMIC_RELAXED);
		} else {
			__atomic_store_n(mask, want, __ATOMIC_RELAXED);
		}
	}
	if (prof_core.client != NULL) {
		memset(&r, 0, sizeof(r));
		r.rank = (uint32_t)rank;
		lr = getenv("LOCAL_RANK");
		if (lr != NULL)
			r.local_rank = r.gpu = (uint32_t)strtoul(lr, NULL, 10);
		memset(&cm, 0, sizeof(cm));
		cm.comm_hash = comm_hash;
		cm.nranks = (uint32_t)nranks;
		/* The agent refuses names above MSG_ID_MAX (256). */
		cm.name = name != NULL && strlen(name) <= PROF_NAME_MAX ? name
									: NULL;
		cm.nlocal = 1;
		cm.ranks = &r;
		c4client_register(prof_core.client, &cm);
	}
	if (prof_core.rec != NULL)
		record_init(prof_now(), c, comm_hash, nnodes, nranks, rank);
	*ctx = c;
	ret = 0;
out:
	pthread_mutex_unlock(&prof_core.lock);
	return ret;
}

static void *
producer_coll(struct prof_comm *c, const struct prof_descr *d, uint64_t now)
{
	uint64_t ctr = atomic_fetch_add(&c->coll_next, 1) + 1, api;
	struct prof_coll *s = &c->colls[ctr & (c->ncolls - 1)];
	struct prof_rec r;
	int *m = c->mask;

	atomic_store_explicit(&s->tag, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->seq, ctr, memory_order_relaxed);
	atomic_store_explicit(&s->func, d->func, memory_order_relaxed);
	atomic_store_explicit(&s->algo, d->algo, memory_order_relaxed);
	atomic_store_explicit(&s->t_start, now, memory_order_relaxed);
	atomic_store_explicit(&s->tag, ctr, memory_order_release);

	memset(&r, 0, sizeof(r));
	r.kind = REC_COLL_START;
	r.comm = (uint16_t)c->slot;
	r.func = (uint8_t)d->func;
	r.algo = (uint8_t)d->algo;
	r.proto = (uint8_t)d->proto;
	r.nch = d->nchannels;
	r.seq = ctr;
	r.t = now;
	r.v[0] = d->bytes;
	r.v[1] = prof_core.clock ? now : prof_realtime();
	api = producer_api_bits(d->parent);
	if (api & H_API_KNOWN)
		r.v[2] = (api & H_API_KCH) != 0;
	else
		r.v[2] = m == NULL || (__atomic_load_n(m, __ATOMIC_RELAXED) &
				       NCCL_EV_KERNEL_CH) != 0;
	producer_push(&r);
	return producer_handle(c->slot, H_KIND_COLL, ctr);
}

static struct prof_child *
producer_child_new(struct prof_comm *c, int type, uint64_t now, void **h)
{
	int64_t idx = pool_get(&c->pool);
	struct prof_child *ch;
	uint32_t gen;

	if (idx < 0)
		return NULL;
	ch = &c->child[idx];
	gen = (atomic_load_explicit(&ch->gen, memory_order_relaxed) + 1) &
	      H_GEN_MASK;
	if (gen == 0)
		gen = 1;
	ch->type = type;
	ch->seq = 0;
	ch->func = ch->algo = 0;
	ch->channel = ch->peer = ch->is_send = ch->nsteps = ch->chunk = 0;
	ch->t_start = now;
	ch->gpu_start = ch->gpu_stop = 0;
	ch->state = -1;
	ch->t_state = now;
	ch->trans = 0;
	ch->t_mark = 0;
	memset(ch->dur, 0, sizeof(ch->dur));
	atomic_store_explicit(&ch->gen, gen, memory_order_release);
	*h = producer_handle(c->slot, H_KIND_CHILD,
			     (uint64_t)gen << H_IDX_BITS | (uint64_t)idx);
	return ch;
}

/* The Coll a child names as parent, if it is one of c's and still there. */
static int
producer_parent_coll(struct prof_comm *c, void *parent, uint64_t *seq,
		     int *func, int *algo)
{
	uint64_t kind, payload, t;
	struct prof_comm *pc = producer_handle_comm(parent, &kind, &payload);

	if (pc != c || kind != H_KIND_COLL)
		return -1;
	return producer_coll_read(c, payload, seq, func, algo, &t);
}

int
producer_start(void *ctx, void **handle, const struct prof_descr *d)
{
	struct prof_comm *c = ctx;
	struct prof_child *ch, *op;
	uint64_t now, kind, payload;
	struct prof_rec r;
	void *h = NULL;

	*handle = NULL;
	if (c == NULL)
		return 0;
	/*
	 * A kernel channel's start needs no host time (see
	 * prof_now_coarse), nor does a CollApi event.
	 */
	now = (d->type != NCCL_EV_KERNEL_CH && d->type != NCCL_EV_COLL_API) ||
			      prof_core.rec != NULL || prof_core.clock
		      ? prof_now()
		      : 0;
	atomic_fetch_add_explicit(&c->events, 1, memory_order_relaxed);
	switch (d->type) {
	case NCCL_EV_COLL:
		h = producer_coll(c, d, now);
		break;
	case NCCL_EV_COLL_API:
		if (!sample_on() || c->mask == NULL) {
			atomic_fetch_add(&c->ignored, 1);
			break;
		}
		h = producer_collapi(c, d);
		break;
	case NCCL_EV_KERNEL_CH:
		ch = producer_child_new(c, d->type, now, &h);
		if (ch == NULL)
			break;
		if (producer_parent_coll(c, d->parent, &ch->seq, &ch->func,
					 &ch->algo) < 0)
			ch->seq = 0; /* a P2p's, or a Coll we lost */
		ch->channel = d->channel;
		ch->gpu_start = d->ptimer;
		break;
	case NCCL_EV_PROXY_OP:
		ch = producer_child_new(c, d->type, now, &h);
		if (ch == NULL)
			break;
		/* A PXN op's parent lives in another process. */
		if (d->pid != prof_core.pid ||
		    producer_parent_coll(c, d->parent, &ch->seq, &ch->func,
					 &ch->algo) < 0)
			ch->seq = 0;
		ch->channel = d->channel;
		ch->peer = d->peer;
		ch->is_send = d->is_send != 0;
		ch->nsteps = d->nsteps;
		ch->chunk = d->chunk;
		if (ch->peer < 0 || ch->peer >= c->nranks) {
			ch->peer = -1;
			break;
		}
		memset(&r, 0, sizeof(r));
		r.kind = REC_OP_START;
		r.comm = (uint16_t)c->slot;
		r.is_send = (uint8_t)ch->is_send;
		r.channel = (uint8_t)ch->channel;
		r.algo = (uint8_t)ch->algo;
		r.peer = ch->peer;
		r.seq = ch->seq;
		r.t = now;
		r.v[0] = ch->nsteps > 0 ? (uint64_t)ch->nsteps : 0;
		producer_push(&r);
		break;
	case NCCL_EV_PROXY_STEP:
		if (producer_handle_comm(d->parent, &kind, &payload) != c ||
		    kind != H_KIND_CHILD ||
		    (op = producer_child_get(c, payload)) == NULL ||
		    op->type != NCCL_EV_PROXY_OP || op->peer < 0) {
			atomic_fetch_add(&c->stale, 1);
			break;
		}
		ch = producer_child_new(c, d->type, now, &h);
		if (ch == NULL)
			break;
		ch->seq = op->seq;
		ch->algo = op->algo;
		ch->channel = op->channel;
		ch->peer = op->peer;
		ch->is_send = op->is_send;
		break;
	default:
		atomic_fetch_add(&c->ignored, 1);
		break;
	}
	*handle = h;
	if (prof_core.rec != NULL)
		record_start(now, ctx, h, d);
	return 0;
}

static int
producer_state_index(int state)
{
	switch (state) {
	case NCCL_ST_STEP_SEND_GPU_WAIT:
		return ST_SEND_GPU;
	case NCCL_ST_STEP_SEND_PEER_WAIT:
		return ST_SEND_PEER;
	case NCCL_ST_STEP_SEND_WAIT:
		return ST_SEND;
	case NCCL_ST_STEP_RECV_WAIT:
		return ST_RECV;
	case NCCL_ST_STEP_RECV_GPU_WAIT:
		return ST_RECV_GPU;
	case NCCL_ST_STEP_RECV_FLUSH_WAIT:
		return ST_RECV_FLUSH;
	default:
		return -1;
	}
}

int
producer_state(void *handle, int state, uint64_t trans_size, uint64_t ptimer)
{
	uint64_t kind, payload, now = 0;
	struct prof_comm *c = producer_handle_comm(handle, &kind, &payload);
	struct prof_child *ch = c != NULL && kind == H_KIND_CHILD
					? producer_child_get(c, payload)
					: NULL;
	int si;

	/* Only proxy steps use the host time of a state. */
	if (prof_core.rec != NULL || prof_core.clock ||
	    (ch != NULL && ch->type == NCCL_EV_PROXY_STEP))
		now = prof_now();
	if (prof_core.rec != NULL)
		record_state(now, handle, state, trans_size, ptimer);
	if (c == NULL)
		return 0;
	if (ch == NULL) {
		if (kind != H_KIND_COLL && kind != H_KIND_API)
			atomic_fetch_add(&c->stale, 1);
		return 0;
	}
	if (ch->type == NCCL_EV_KERNEL_CH && state == NCCL_ST_KERNEL_CH_STOP) {
		ch->gpu_stop = ptimer;
	} else if (ch->type == NCCL_EV_PROXY_STEP &&
		   (si = producer_state_index(state)) >= 0) {
		if (ch->state >= 0 && now > ch->t_state)
			ch->dur[ch->state] += now - ch->t_state;
		/* The one-way marks: data handed to the network, data in. */
		if (si == ST_SEND && ch->t_mark == 0)
			ch->t_mark = now;
		else if (ch->state == ST_RECV && si != ST_RECV)
			ch->t_mark = now;
		ch->state = si;
		ch->t_state = now;
		if (trans_size > ch->trans)
			ch->trans = trans_size;
	} else if (!(ch->type == NCCL_EV_PROXY_OP &&
		     state == NCCL_ST_OP_IN_PROGRESS)) {
		atomic_fetch_add(&c->ignored, 1);
	}
	return 0;
}

int
producer_stop(void *handle)
{
	uint64_t kind, payload, now, seq, t_start;
	struct prof_comm *c = producer_handle_comm(handle, &kind, &payload);
	struct prof_child *ch = c != NULL && kind == H_KIND_CHILD
					? producer_child_get(c, payload)
					: NULL;
	struct prof_rec r;
	int func, algo, i;

	/* With GPU timers the host time only dates the record. */
	if (prof_core.rec == NULL && ch != NULL &&
	    ch->type == NCCL_EV_KERNEL_CH && ch->gpu_stop > ch->gpu_start)
		now = prof_now_coarse();
	else
		now = prof_now();

	if (prof_core.rec != NULL)
		record_stop(now, handle);
	if (c == NULL)
		return 0;
	if (kind == H_KIND_API)
		return 0; /* CollApi: nothing to record */
	memset(&r, 0, sizeof(r));
	r.comm = (uint16_t)c->slot;
	r.t = now;
	if (kind == H_KIND_COLL) {
		if (producer_coll_read(c, payload, &seq, &func, &algo,
				       &t_start) < 0) {
			atomic_fetch_add(&c->stale, 1);
			return 0;
		}
		r.kind = REC_COLL_STOP;
		r.seq = seq;
		r.func = (uint8_t)func;
		r.v[0] = now > t_start ? now - t_start : 0;
		producer_push(&r);
		return 0;
	}
	if (ch == NULL) {
		atomic_fetch_add(&c->stale, 1);
		return 0;
	}
	r.seq = ch->seq;
	r.channel = (uint8_t)ch->channel;
	r.peer = ch->peer;
	r.is_send = (uint8_t)ch->is_send;
	r.algo = (uint8_t)ch->algo;
	switch (ch->type) {
	case NCCL_EV_KERNEL_CH:
		r.kind = REC_KCH;
		r.v[0] = ch->gpu_start;
		r.v[1] = ch->gpu_stop;
		producer_push(&r);
		break;
	case NCCL_EV_PROXY_OP:
		if (ch->peer < 0)
			break;
		r.kind = REC_OP_STOP;
		r.v[0] = ch->nsteps > 0 ? (uint64_t)ch->nsteps : 0;
		r.v[1] = ch->chunk > 0 ? (uint64_t)ch->chunk : 0;
		r.v[2] = now - ch->t_start;
		producer_push(&r);
		break;
	case NCCL_EV_PROXY_STEP:
		if (ch->state >= 0 && now > ch->t_state)
			ch->dur[ch->state] += now - ch->t_state;
		r.kind = REC_STEP;
		for (i = 0; i < ST_N; i++)
			r.v[i] = ch->dur[i];
		r.v[ST_N] = ch->trans;
		r.v[ST_N + 1] = ch->state >= 0; /* saw a state at all */
		/* A receive that ends in RecvWait has its data now. */
		r.v[ST_N + 2] = ch->t_mark != 0	       ? ch->t_mark
				: ch->state == ST_RECV ? now
						       : 0;
		producer_push(&r);
		break;
	}
	/* A second stop of this handle is now recognised as stale. */
	atomic_fetch_add_explicit(&ch->gen, 1, memory_order_release);
	pool_put(&c->pool, (uint32_t)(ch - c->child));
	return 0;
}

int
producer_finalize(void *ctx)
{
	struct prof_comm *c = ctx;

	if (prof_core.rec != NULL)
		record_finalize(prof_now(), ctx);
	if (c != NULL)
		atomic_store_explicit(&c->finalized, 1, memory_order_release);
	return 0;
}
