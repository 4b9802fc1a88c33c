/*
 * prof.c - the plugin's core: records, handoff and aggregation (prof.h).
 *
 * Producer side (NCCL's threads): prof_start/prof_state/prof_stop.  Coll
 * records are slots of a per-communicator ring written by the thread that
 * issues collectives and read by children under a sequence lock; kernel
 * channel, proxy op and proxy step records come from a lock-free pool.
 * Measurements leave as fixed-size records through the calling thread's
 * single-producer ring.
 *
 * Consumer side (the aggregation thread, or prof_tick in tests): drains
 * every ring, joins records by communicator and op sequence into per-
 * interval state (struct agg), and once per interval builds a
 * c4client_report.  Everything the consumer owns is touched by it alone.
 */
#include "prof.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "mix.h"
#include "pool.h"
#include "ring.h"
#include "sketch.h"

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
/* A kernel channel's stop comes microseconds after its siblings'. */
#define PROF_KCH_SETTLE_NS (100ull * 1000 * 1000)

enum prof_rec_kind {
	REC_COLL_START = 1,
	REC_COLL_STOP,
	REC_KCH,
	REC_OP_START,
	REC_OP_STOP,
	REC_STEP,
};

/* Step states, as indices of prof_child.dur and prof_rec.v. */
enum {
	ST_SEND_GPU,
	ST_SEND_PEER,
	ST_SEND,
	ST_RECV,
	ST_RECV_GPU,
	ST_RECV_FLUSH,
	ST_N
};

struct prof_rec {
	uint8_t kind, is_send, channel, func;
	uint16_t comm;
	uint8_t algo, proto;
	int32_t peer;
	uint32_t nch;
	uint64_t seq; /* the comm's collective ordinal (from 1); 0: unknown */
	uint64_t t;   /* CLOCK_MONOTONIC (or the test clock), ns */
	uint64_t v[9];
};

struct prof_coll {
	_Atomic uint64_t tag; /* the Coll's counter; 0 while written */
	_Atomic uint64_t seq, t_start;
	_Atomic int func, algo;
};

struct prof_child {
	_Atomic uint32_t gen;
	int type;
	uint64_t seq;
	int func, algo;
	int channel, peer, is_send, nsteps, chunk;
	uint64_t t_start, gpu_start, gpu_stop;
	int state;
	uint64_t t_state, trans;
	uint64_t t_mark; /* send: ready to leave; recv: arrived (0: not yet) */
	uint64_t dur[ST_N];
};

struct agg_op {
	uint64_t count, bytes;
	int algo, proto;
	uint32_t channels;
	struct sketch kernel, gap, enq;
};

struct agg_flight {
	uint64_t seq; /* 0: free */
	int func, expect_kch;
	int ready; /* no kernel channels: done once all before it are */
	uint32_t nch, kdone;
	uint64_t gmin, gmax, t_last;
};

/*
 * One op's chunks on one connection, for one-way timing: when they were
 * ready to leave (sender) or had arrived (receiver), as a sum of offsets
 * from the first, so that the mean needs no wide arithmetic.
 */
struct agg_timed {
	uint64_t seq; /* 0: free */
	uint32_t chunks;
	uint64_t first, sum, t_last;
};

struct agg_peer {
	struct agg_timed *timed[2]; /* [is_send]; PROF_TIMED each, lazily */
	uint64_t bytes_steps, bytes_ops, chunks_steps, chunks_ops, chmask;
	struct sketch xfer;
	int used, algo;
	int64_t open_tx, open_rx, pending_tx;
	uint64_t last_tx, last_rx;
};

struct agg {
	struct agg_op ops[PROF_FUNCS];
	struct agg_flight flight[PROF_INFLIGHT];
	struct agg_peer *peers;
	struct sketch wait[4]; /* recv, send_peer, send_gpu, recv_gpu */
	uint64_t steps;
	/* this interval */
	int any_entered, any_completed;
	uint64_t first_entered, last_entered_iv, first_completed,
		last_completed_iv, first_start_rt;
	/* since the start */
	uint64_t last_entered, last_completed, last_change, last_done_t;
	int done_enq; /* last_completed was read at enqueue (unsampled) */
	uint64_t last_gpu_end; /* GPU timer at the end of the last kernel */
	uint64_t last_gpu_seq; /* the op it ended (gaps need neighbours) */
	int gpu_timers;	       /* kernels carry GPU timers: gaps from them */
	int inflight_func;
	uint64_t orphans;
	uint64_t timed_lost; /* timed ops evicted before they were reported */
};

struct prof_comm {
	uint32_t slot;
	uint64_t hash;
	int rank, nranks, nnodes;
	int *mask;
	uint32_t ncolls;
	struct prof_coll *colls;
	_Atomic uint64_t coll_next;
	struct pool pool;
	struct prof_child *child;
	_Atomic uint64_t stale, ignored, events;
	_Atomic int finalized;
	struct agg agg; /* the consumer's */
};

enum { TRING_FREE, TRING_OWNED };

struct prof_tring {
	struct ring ring;
	_Atomic int state;
	_Atomic pid_t tid;
};

static struct {
	pthread_mutex_t lock; /* open/close/init/finalize, never events */
	int open;
	struct prof_config cfg;
	char *socket_path, *job_id, *token, *detail_file;
	_Atomic uint64_t epoch;
	pid_t pid;
	_Atomic(struct prof_comm *) comms[PROF_COMMS_MAX];
	struct prof_tring rings[PROF_RINGS_MAX];
	_Atomic uint64_t no_ring, events, ignored;
	_Atomic int detail;
	int base_mask; /* events asked for whatever the detail */
	/* kernel-channel sampling (prof_ks_sampled); ks_rate 0: every call */
	uint32_t ks_rate;	     /* sampled pairs per second wanted */
	_Atomic uint32_t ks_shift;   /* a pair starts at 1 call in 2^shift */
	uint64_t ks_adapted;	     /* ks_calls at the last prof_ks_adapt */
	_Atomic uint64_t ks_calls;   /* calls ever (the fast estimate) */
	_Atomic uint64_t ks_t0;	     /* prof_now() at the last 1024th */
	_Atomic uint64_t ks_sampled; /* calls with kernel channels, ever */
	_Atomic int ks_full;	     /* a graph capture: every call from now */
	uint64_t (*clock)(void);
	prof_sink_fn sink;
	void *sink_arg;
	struct c4client *client;
	pthread_t thread;
	int have_thread;
	_Atomic int stop;
	/* consumer */
	uint64_t interval_id, interval_start, interval_start_rt, reports,
		reports_failed;
	struct prof_counters dead; /* of communicators already reaped */
	int stats;		   /* print the counters at close */
	/* recording */
	FILE *rec;
	pthread_mutex_t rec_lock;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .rec_lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local struct prof_tring *t_ring;
static _Thread_local uint64_t t_epoch;
static _Thread_local uint32_t t_retry;

static uint64_t
prof_mono(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint64_t
prof_realtime(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t
prof_now(void)
{
	return g.clock ? g.clock() : prof_mono();
}

/*
 * The host time of a kernel channel's stop.  GPU timers time the kernel;
 * this only dates the record (completion, the 100 ms settle), so the
 * coarse clock does: NCCL's proxy thread calls three times per channel of
 * every collective, and full clock reads were most of the plugin's cost
 * there (bench/run prof-events).  The test clock when there is one.
 */
static uint64_t
prof_now_coarse(void)
{
	return g.clock ? g.clock() : clock_ns(CLOCK_MONOTONIC_COARSE);
}

void
prof_set_clock(uint64_t (*now)(void))
{
	g.clock = now;
}

void
prof_set_sink(prof_sink_fn fn, void *arg)
{
	g.sink = fn;
	g.sink_arg = arg;
}

/* ---- names ---------------------------------------------------------- */

/*
 * NCCL's names (ncclFuncToString and friends) mapped to our enums.  Only
 * known names are mapped; anything else counts as "other".
 */
int
prof_func_code(const char *s)
{
	static const struct {
		const char *name;
		int code;
	} t[] = {
		{"AllReduce", C4CLIENT_ALLREDUCE},
		{"AllGather", C4CLIENT_ALLGATHER},
		{"ReduceScatter", C4CLIENT_REDUCESCATTER},
		{"Broadcast", C4CLIENT_BROADCAST},
		{"Reduce", C4CLIENT_REDUCE},
		{"AllToAll", C4CLIENT_ALLTOALL},
		{"SendRecv", C4CLIENT_SENDRECV},
		{"Send", C4CLIENT_SENDRECV},
		{"Recv", C4CLIENT_SENDRECV},
	};
	size_t i;

	if (s == NULL)
		return 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(s, t[i].name) == 0)
			return t[i].code;
	return C4CLIENT_FUNC_OTHER;
}

int
prof_algo_code(const char *s)
{
	static const struct {
		const char *name;
		int code;
	} t[] = {
		{"Ring", C4CLIENT_ALGO_RING},
		{"Tree", C4CLIENT_ALGO_TREE},
		{"CollNetDirect", C4CLIENT_ALGO_COLLNET_DIRECT},
		{"CollNetChain", C4CLIENT_ALGO_COLLNET_CHAIN},
		{"NVLS", C4CLIENT_ALGO_NVLS},
		{"NVLSTree", C4CLIENT_ALGO_NVLS_TREE},
		{"PAT", C4CLIENT_ALGO_PAT},
	};
	size_t i;

	if (s == NULL)
		return 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcasecmp(s, t[i].name) == 0)
			return t[i].code;
	return C4CLIENT_ALGO_OTHER;
}

int
prof_proto_code(const char *s)
{
	if (s == NULL)
		return 0;
	if (strcasecmp(s, "LL") == 0)
		return C4CLIENT_PROTO_LL;
	if (strcasecmp(s, "LL128") == 0)
		return C4CLIENT_PROTO_LL128;
	if (strcasecmp(s, "Simple") == 0)
		return C4CLIENT_PROTO_SIMPLE;
	return 0;
}

/* "ncclFloat32", "ncclBfloat16", "ncclInt8", "ncclFloat8e4m3", ... */
size_t
prof_dtype_size(const char *s)
{
	size_t n;

	if (s == NULL)
		return 0;
	if (strncmp(s, "ncclFloat8", 10) == 0)
		return 1;
	n = strlen(s);
	if (n >= 2 && strcmp(s + n - 2, "64") == 0)
		return 8;
	if (n >= 2 && strcmp(s + n - 2, "32") == 0)
		return 4;
	if (n >= 2 && strcmp(s + n - 2, "16") == 0)
		return 2;
	if (n >= 1 && s[n - 1] == '8')
		return 1;
	return 0;
}

/* ---- recording ------------------------------------------------------ */

/*
 * Recording writes one line per callback (record format in prof_replay).
 * It takes a mutex on NCCL's threads: a diagnostic mode, not for
 * production runs.
 */
static void prof_rec_line(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void
prof_rec_line(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g.rec_lock);
	if (g.rec != NULL) {
		va_start(ap, fmt);
		vfprintf(g.rec, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&g.rec_lock);
}

/* ---- configuration -------------------------------------------------- */

int
prof_events_parse(const char *s, int *base, int *detail, char *err,
		  size_t errlen)
{
	static const struct {
		const char *name;
		int bit;
	} names[] = {{"coll", NCCL_EV_COLL},
		     {"kernel", NCCL_EV_KERNEL_CH},
		     {"proxy", NCCL_EV_PROXY_OP},
		     {"step", NCCL_EV_PROXY_STEP}};
	int mask = 0, none = 0;
	size_t i, n;

	while (*s != '\0') {
		n = strcspn(s, ", ");
		if (n == 0) {
			s++;
			continue;
		}
		if (n == 4 && strncmp(s, "none", 4) == 0) {
			none = 1;
		} else {
			for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (strlen(names[i].name) == n &&
				    strncmp(s, names[i].name, n) == 0)
					break;
			if (i == sizeof(names) / sizeof(names[0])) {
				snprintf(
					err, errlen,
					"unknown event \"%.*s\" (coll, kernel, "
					"proxy, step or none)",
					(int)(n > 32 ? 32 : n), s);
				return -1;
			}
			mask |= names[i].bit;
		}
		s += n;
	}
	if (none && mask != 0) {
		snprintf(err, errlen, "\"none\" with other events");
		return -1;
	}
	if (!none && mask == 0) {
		snprintf(err, errlen, "no event named");
		return -1;
	}
	if ((mask & (NCCL_EV_KERNEL_CH | NCCL_EV_PROXY_OP)) != 0 &&
	    (mask & NCCL_EV_COLL) == 0) {
		snprintf(err, errlen, "kernel and proxy need coll");
		return -1;
	}
	if ((mask & NCCL_EV_PROXY_STEP) != 0 &&
	    (mask & NCCL_EV_PROXY_OP) == 0) {
		snprintf(err, errlen, "step needs proxy");
		return -1;
	}
	*detail = (mask & NCCL_EV_PROXY_STEP) != 0;
	mask &= ~NCCL_EV_PROXY_STEP;
	*base = none ? -1 : mask;
	return 0;
}

/* ---- handles -------------------------------------------------------- */

static void *
prof_handle(uint32_t slot, uint64_t kind, uint64_t payload)
{
	return (void *)(uintptr_t)((uint64_t)slot << H_COMM_SHIFT |
				   kind << H_KIND_SHIFT |
				   (payload & H_PAYLOAD_MASK));
}

static struct prof_comm *
prof_handle_comm(const void *h, uint64_t *kind, uint64_t *payload)
{
	uint64_t v = (uint64_t)(uintptr_t)h;
	uint32_t slot = (uint32_t)(v >> H_COMM_SHIFT);

	*kind = (v >> H_KIND_SHIFT) & 3;
	*payload = v & H_PAYLOAD_MASK;
	if (h == NULL || slot >= PROF_COMMS_MAX)
		return NULL;
	return atomic_load_explicit(&g.comms[slot], memory_order_acquire);
}

/* Reads Coll number ctr of c under its sequence lock.  0 or -1 (stale). */
static int
prof_coll_read(struct prof_comm *c, uint64_t ctr, uint64_t *seq, int *func,
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
prof_child_get(struct prof_comm *c, uint64_t payload)
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
prof_ring_claim(void)
{
	uint64_t epoch = atomic_load_explicit(&g.epoch, memory_order_acquire);
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
		if (g.rings[i].ring.slots == NULL)
			continue;
		if (atomic_compare_exchange_strong(&g.rings[i].state, &expect,
						   TRING_OWNED)) {
			atomic_store(&g.rings[i].tid,
				     (pid_t)syscall(SYS_gettid));
			t_ring = &g.rings[i];
			return t_ring;
		}
	}
	t_retry = PROF_RING_RETRY;
	return NULL;
}

static void
prof_push(const struct prof_rec *r)
{
	struct prof_tring *tr = prof_ring_claim();

	if (tr == NULL) {
		atomic_fetch_add_explicit(&g.no_ring, 1, memory_order_relaxed);
		return;
	}
	ring_push(&tr->ring, r);
}

/* ---- callbacks ------------------------------------------------------ */

static int
prof_mask_value(void)
{
	return g.base_mask | (atomic_load(&g.detail) ? PROF_MASK_DETAIL : 0);
}

/*
 * Kernel-channel sampling (C4_PROFILER_KERNEL_SAMPLE).  With kernel-channel
 * events on, NCCL adds a proxy operation per channel to every collective,
 * which costs a 1 MB all-reduce on NVLink 10-40 %.  NCCL 2.28 copies its
 * mask for every collective call (ncclProfilerStartGroupApiEvent, even
 * inside a group) and then starts the call's CollApi event; so the plugin
 * sets the kernel-channel bit there for the call after, and the bit NCCL
 * just copied (the value before that change) travels as the CollApi
 * handle to the Coll, whose parent that is.  Exact for a process that
 * issues collectives from one thread at a time.
 *
 * Sampled calls come in pairs, so that the GPU's gap between two
 * collectives is still measured.  Which calls: a pair starts at the
 * process's collective call s when the low ks_shift bits of a hash of s
 * are zero.
 * Ranks whose processes make the same collective calls in the same order
 * (the members of a data- or tensor-parallel group, whatever other
 * communicators they interleave) make the same choice, so a sampled
 * call's extra cost on the host (NCCL's proxy operations, some µs) makes
 * all of them late alike: chosen apart, each rank would be late on its
 * own sampled calls, and every rank would look like a late rank in what it
 * measures.  ks_shift comes from the call rate, for about ks_rate pairs a
 * second; it moves up when the rate is half a power of two above 2^shift
 * and down when it is one and a half below, so that ranks of nearly equal
 * rates keep the shift they share; a smaller shift's choices include a
 * larger one's.
 */
/* Does a pair start at the process's call s? */
static int
prof_ks_start(uint64_t s, uint32_t shift)
{
	uint64_t low = shift >= 63 ? ~0ull : (1ull << shift) - 1;

	return (mix64(s * 0x9e3779b97f4a7c15ull) & low) == 0;
}

/* Is the process's collective call s (from 1) sampled? */
static int
prof_ks_sampled(uint64_t s)
{
	uint32_t shift =
		atomic_load_explicit(&g.ks_shift, memory_order_relaxed);

	if (atomic_load_explicit(&g.ks_full, memory_order_relaxed))
		return 1;
	return prof_ks_start(s, shift) ||
	       (s > 1 && prof_ks_start(s - 1, shift));
}

/*
 * The shift that gives about ks_rate pairs a second at this call rate:
 * log2 of (rate / ks_rate), rounded, changed only when that is half a
 * power of two above the shift or one and a half below it.
 */
static void
prof_ks_set(double per_s)
{
	uint32_t k = atomic_load_explicit(&g.ks_shift, memory_order_relaxed);
	double want = log2(per_s / (double)g.ks_rate);

	if (!(want > k + 0.5) && !(want < k - 1.5))
		return;
	want = want < 0.5 ? 0.0 : floor(want + 0.5);
	atomic_store(&g.ks_shift, want > 40.0 ? 40u : (uint32_t)want);
}

/*
 * Once per interval, from the calls it saw.  An interval without calls
 * (a pause for a checkpoint) keeps the shift it had, so that the calls
 * after it are not all sampled; busy processes get a faster estimate
 * every 1024 calls (prof_start_collapi).
 */
static void
prof_ks_adapt(void)
{
	uint64_t calls = atomic_load(&g.ks_calls), n = calls - g.ks_adapted;

	g.ks_adapted = calls;
	if (g.ks_rate == 0 || n == 0)
		return;
	prof_ks_set((double)n * 1000.0 / (double)g.cfg.interval_ms);
}

/* A CollApi event: choose for the next call, tell what this one has. */
static void *
prof_start_collapi(struct prof_comm *c, const struct prof_descr *d)
{
	int prev;
	uint64_t n, now, t0;

	/*
	 * A captured call's kernel channels come back at every replay, and
	 * only if the capture had them: replays are seen through nothing
	 * else.  Ranks choose apart, so one that captured a call sampled
	 * would count replays its peers never see.  From the first capture
	 * on, every call is sampled (the call being captured now was
	 * chosen at the call before it).
	 */
	if (d->graph && !atomic_load_explicit(&g.ks_full, memory_order_relaxed))
		atomic_store(&g.ks_full, 1);

	n = atomic_fetch_add_explicit(&g.ks_calls, 1, memory_order_relaxed);
	/* a window that spans a pause is left to prof_ks_adapt */
	if (((n + 1) & 1023) == 0) {
		now = prof_now();
		t0 = atomic_exchange(&g.ks_t0, now);
		if (t0 != 0 && now > t0 &&
		    now - t0 <= (uint64_t)g.cfg.interval_ms * 1000000ull)
			prof_ks_set(1024.0 * 1e9 / (double)(now - t0));
	}
	/* this is call n + 1: choose for call n + 2 */
	prev = prof_ks_sampled(n + 2)
		       ? __atomic_fetch_or(c->mask, NCCL_EV_KERNEL_CH,
					   __ATOMIC_RELAXED)
		       : __atomic_fetch_and(c->mask, ~NCCL_EV_KERNEL_CH,
					    __ATOMIC_RELAXED);
	if (prev & NCCL_EV_KERNEL_CH)
		atomic_fetch_add_explicit(&g.ks_sampled, 1,
					  memory_order_relaxed);
	return prof_handle(
		c->slot, H_KIND_API,
		H_API_KNOWN |
			((prev & NCCL_EV_KERNEL_CH) != 0 ? H_API_KCH : 0));
}

/* The H_API_* bits of an API handle, or 0. */
static uint64_t
prof_api_bits(const void *h)
{
	uint64_t kind, payload;

	if (prof_handle_comm(h, &kind, &payload) == NULL || kind != H_KIND_API)
		return 0;
	return payload & (H_API_KNOWN | H_API_KCH);
}

static void
prof_agg_free(struct prof_comm *c)
{
	struct agg *a = &c->agg;
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
		for (i = 0; i < c->nranks; i++) {
			sketch_free(&a->peers[i].xfer);
			free(a->peers[i].timed[0]);
			free(a->peers[i].timed[1]);
		}
	free(a->peers);
}

static void
prof_comm_free(struct prof_comm *c)
{
	if (c == NULL)
		return;
	prof_agg_free(c);
	pool_free(&c->pool);
	free(c->child);
	free(c->colls);
	free(c);
}

static struct prof_comm *
prof_comm_new(uint64_t hash, int nnodes, int nranks, int rank)
{
	struct prof_comm *c = calloc(1, sizeof(*c));
	uint32_t f, n = PROF_COLLS_DEFAULT;
	int i;

	if (c == NULL)
		return NULL;
	c->hash = hash;
	c->rank = rank;
	c->nranks = nranks;
	c->nnodes = nnodes;
	while (n < g.cfg.colls_cap)
		n <<= 1;
	c->ncolls = n;
	c->colls = calloc(n, sizeof(*c->colls));
	c->child = calloc(g.cfg.pool_cap, sizeof(*c->child));
	c->agg.peers = calloc((size_t)nranks, sizeof(*c->agg.peers));
	if (c->colls == NULL || c->child == NULL || c->agg.peers == NULL ||
	    pool_init(&c->pool, g.cfg.pool_cap) < 0)
		goto fail;
	for (f = 0; f < PROF_FUNCS; f++) {
		sketch_init(&c->agg.ops[f].kernel, 0);
		sketch_init(&c->agg.ops[f].gap, 0);
		sketch_init(&c->agg.ops[f].enq, 0);
	}
	for (i = 0; i < 4; i++)
		sketch_init(&c->agg.wait[i], 0);
	for (i = 0; i < nranks; i++)
		sketch_init(&c->agg.peers[i].xfer, 0);
	return c;
fail:
	prof_comm_free(c);
	return NULL;
}

int
prof_init(void **ctx, uint64_t comm_hash, int *mask, const char *name,
	  int nnodes, int nranks, int rank)
{
	struct prof_comm *c;
	struct c4client_rank r;
	struct c4client_comm cm;
	const char *lr;
	uint32_t i;
	int ret = -1;

	*ctx = NULL;
	pthread_mutex_lock(&g.lock);
	/*
	 * NCCL's mask is one variable for all communicators of the process:
	 * it is cleared only when the plugin is off as a whole.
	 */
	if (!g.open) {
		if (mask != NULL)
			*mask = 0;
		ret = 0; /* inactive: NCCL goes on without events */
		goto out;
	}
	if (nranks <= 0 || rank < 0 || rank >= nranks) {
		ret = 0; /* this communicator unobserved */
		goto out;
	}
	c = prof_comm_new(comm_hash, nnodes, nranks, rank);
	if (c == NULL)
		goto out;
	for (i = 0; i < PROF_COMMS_MAX; i++)
		if (atomic_load(&g.comms[i]) == NULL)
			break;
	if (i == PROF_COMMS_MAX) {
		prof_comm_free(c);
		ret = 0;
		goto out;
	}
	c->slot = i;
	c->mask = mask;
	atomic_store_explicit(&g.comms[i], c, memory_order_release);
	if (mask != NULL) {
		/*
		 * Every bit but the kernel channels' once sampling drives
		 * that one: a new communicator (perhaps on NCCL's own init
		 * thread) must not change the bit chosen for the next call.
		 */
		int want = prof_mask_value();

		if (g.ks_rate != 0 && __atomic_load_n(mask, __ATOMIC_RELAXED)) {
			__atomic_fetch_and(mask, want | NCCL_EV_KERNEL_CH,
					   __ATOMIC_RELAXED);
			__atomic_fetch_or(mask, want & ~NCCL_EV_KERNEL_CH,
					  __ATOMIC_RELAXED);
		} else {
			__atomic_store_n(mask, want, __ATOMIC_RELAXED);
		}
	}
	if (g.client != NULL) {
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
		c4client_register(g.client, &cm);
	}
	if (g.rec != NULL)
		prof_rec_line("I %llu %p %llx %d %d %d\n",
			      (unsigned long long)prof_now(), (void *)c,
			      (unsigned long long)comm_hash, nnodes, nranks,
			      rank);
	*ctx = c;
	ret = 0;
out:
	pthread_mutex_unlock(&g.lock);
	return ret;
}

static void
prof_rec_start(uint64_t now, const void *ctx, void *h,
	       const struct prof_descr *d)
{
	prof_rec_line("S %llu %p %p %d %p %d %llu %d %d %d %llu %llu %u %d %d "
		      "%d %d %d %d %d %llu\n",
		      (unsigned long long)now, ctx, h, d->type, d->parent,
		      d->rank, (unsigned long long)d->seq, d->func, d->algo,
		      d->proto, (unsigned long long)d->count,
		      (unsigned long long)d->bytes, d->nchannels,
		      d->pid == g.pid ? 0 : 1, d->channel, d->peer, d->nsteps,
		      d->chunk, d->is_send, d->step,
		      (unsigned long long)d->ptimer);
}

static void *
prof_start_coll(struct prof_comm *c, const struct prof_descr *d, uint64_t now)
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
	r.v[1] = g.clock ? now : prof_realtime();
	api = prof_api_bits(d->parent);
	if (api & H_API_KNOWN)
		r.v[2] = (api & H_API_KCH) != 0;
	else
		r.v[2] = m == NULL || (__atomic_load_n(m, __ATOMIC_RELAXED) &
				       NCCL_EV_KERNEL_CH) != 0;
	prof_push(&r);
	return prof_handle(c->slot, H_KIND_COLL, ctr);
}

static struct prof_child *
prof_child_new(struct prof_comm *c, int type, uint64_t now, void **h)
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
	*h = prof_handle(c->slot, H_KIND_CHILD,
			 (uint64_t)gen << H_IDX_BITS | (uint64_t)idx);
	return ch;
}

/* The Coll a child names as parent, if it is one of c's and still there. */
static int
prof_parent_coll(struct prof_comm *c, void *parent, uint64_t *seq, int *func,
		 int *algo)
{
	uint64_t kind, payload, t;
	struct prof_comm *pc = prof_handle_comm(parent, &kind, &payload);

	if (pc != c || kind != H_KIND_COLL)
		return -1;
	return prof_coll_read(c, payload, seq, func, algo, &t);
}

int
prof_start(void *ctx, void **handle, const struct prof_descr *d)
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
			      g.rec != NULL || g.clock
		      ? prof_now()
		      : 0;
	atomic_fetch_add_explicit(&c->events, 1, memory_order_relaxed);
	switch (d->type) {
	case NCCL_EV_COLL:
		h = prof_start_coll(c, d, now);
		break;
	case NCCL_EV_COLL_API:
		if (g.ks_rate == 0 || c->mask == NULL) {
			atomic_fetch_add(&c->ignored, 1);
			break;
		}
		h = prof_start_collapi(c, d);
		break;
	case NCCL_EV_KERNEL_CH:
		ch = prof_child_new(c, d->type, now, &h);
		if (ch == NULL)
			break;
		if (prof_parent_coll(c, d->parent, &ch->seq, &ch->func,
				     &ch->algo) < 0)
			ch->seq = 0; /* a P2p's, or a Coll we lost */
		ch->channel = d->channel;
		ch->gpu_start = d->ptimer;
		break;
	case NCCL_EV_PROXY_OP:
		ch = prof_child_new(c, d->type, now, &h);
		if (ch == NULL)
			break;
		/* A PXN op's parent lives in another process. */
		if (d->pid != g.pid ||
		    prof_parent_coll(c, d->parent, &ch->seq, &ch->func,
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
		prof_push(&r);
		break;
	case NCCL_EV_PROXY_STEP:
		if (prof_handle_comm(d->parent, &kind, &payload) != c ||
		    kind != H_KIND_CHILD ||
		    (op = prof_child_get(c, payload)) == NULL ||
		    op->type != NCCL_EV_PROXY_OP || op->peer < 0) {
			atomic_fetch_add(&c->stale, 1);
			break;
		}
		ch = prof_child_new(c, d->type, now, &h);
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
	if (g.rec != NULL)
		prof_rec_start(now, ctx, h, d);
	return 0;
}

static int
prof_state_index(int state)
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
prof_state(void *handle, int state, uint64_t trans_size, uint64_t ptimer)
{
	uint64_t kind, payload, now = 0;
	struct prof_comm *c = prof_handle_comm(handle, &kind, &payload);
	struct prof_child *ch = c != NULL && kind == H_KIND_CHILD
					? prof_child_get(c, payload)
					: NULL;
	int si;

	/* Only proxy steps use the host time of a state. */
	if (g.rec != NULL || g.clock ||
	    (ch != NULL && ch->type == NCCL_EV_PROXY_STEP))
		now = prof_now();
	if (g.rec != NULL)
		prof_rec_line("R %llu %p %d %llu %llu\n",
			      (unsigned long long)now, handle, state,
			      (unsigned long long)trans_size,
			      (unsigned long long)ptimer);
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
		   (si = prof_state_index(state)) >= 0) {
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
prof_stop(void *handle)
{
	uint64_t kind, payload, now, seq, t_start;
	struct prof_comm *c = prof_handle_comm(handle, &kind, &payload);
	struct prof_child *ch = c != NULL && kind == H_KIND_CHILD
					? prof_child_get(c, payload)
					: NULL;
	struct prof_rec r;
	int func, algo, i;

	/* With GPU timers the host time only dates the record. */
	if (g.rec == NULL && ch != NULL && ch->type == NCCL_EV_KERNEL_CH &&
	    ch->gpu_stop > ch->gpu_start)
		now = prof_now_coarse();
	else
		now = prof_now();

	if (g.rec != NULL)
		prof_rec_line("E %llu %p\n", (unsigned long long)now, handle);
	if (c == NULL)
		return 0;
	if (kind == H_KIND_API)
		return 0; /* CollApi: nothing to record */
	memset(&r, 0, sizeof(r));
	r.comm = (uint16_t)c->slot;
	r.t = now;
	if (kind == H_KIND_COLL) {
		if (prof_coll_read(c, payload, &seq, &func, &algo, &t_start) <
		    0) {
			atomic_fetch_add(&c->stale, 1);
			return 0;
		}
		r.kind = REC_COLL_STOP;
		r.seq = seq;
		r.func = (uint8_t)func;
		r.v[0] = now > t_start ? now - t_start : 0;
		prof_push(&r);
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
		prof_push(&r);
		break;
	case NCCL_EV_PROXY_OP:
		if (ch->peer < 0)
			break;
		r.kind = REC_OP_STOP;
		r.v[0] = ch->nsteps > 0 ? (uint64_t)ch->nsteps : 0;
		r.v[1] = ch->chunk > 0 ? (uint64_t)ch->chunk : 0;
		r.v[2] = now - ch->t_start;
		prof_push(&r);
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
		prof_push(&r);
		break;
	}
	/* A second stop of this handle is now recognised as stale. */
	atomic_fetch_add_explicit(&ch->gen, 1, memory_order_release);
	pool_put(&c->pool, (uint32_t)(ch - c->child));
	return 0;
}

int
prof_finalize(void *ctx)
{
	struct prof_comm *c = ctx;

	if (g.rec != NULL)
		prof_rec_line("F %llu %p\n", (unsigned long long)prof_now(),
			      ctx);
	if (c != NULL)
		atomic_store_explicit(&c->finalized, 1, memory_order_release);
	return 0;
}

/* ---- aggregation (the consumer) -------------------------------------- */

static void
agg_complete(struct prof_comm *c, uint64_t seq, uint64_t t)
{
	struct agg *a = &c->agg;

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
agg_flight_done(struct prof_comm *c, struct agg_flight *f, uint64_t t)
{
	struct agg *a = &c->agg;

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
	agg_complete(c, f->seq, t);
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
agg_advance(struct prof_comm *c, uint64_t t)
{
	struct agg *a = &c->agg;
	uint64_t s;

	for (s = a->last_completed + 1; s <= a->last_entered; s++) {
		struct agg_flight *f = &a->flight[s % PROF_INFLIGHT];

		if (f->seq == s && !f->ready)
			return;
		if (f->seq == s) {
			agg_flight_done(c, f, t);
		} else {
			a->done_enq = 1;
			agg_complete(c, s, t);
		}
	}
}

static void
agg_coll_start(struct prof_comm *c, const struct prof_rec *r)
{
	struct agg *a = &c->agg;
	struct agg_op *o = &a->ops[r->func < PROF_FUNCS ? r->func : 0];
	struct agg_flight *f = &a->flight[r->seq % PROF_INFLIGHT];

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
agg_coll_stop(struct prof_comm *c, const struct prof_rec *r)
{
	struct agg *a = &c->agg;
	struct agg_flight *f = &a->flight[r->seq % PROF_INFLIGHT];

	if (r->func < PROF_FUNCS)
		sketch_add(&a->ops[r->func].enq, r->v[0]);
	/* Without kernel channels, "enqueued" is all we will learn. */
	if (f->seq == r->seq && !f->expect_kch) {
		f->ready = 1;
		agg_advance(c, r->t);
	}
}

static void
agg_kch(struct prof_comm *c, const struct prof_rec *r)
{
	struct agg *a = &c->agg;
	struct agg_flight *f = &a->flight[r->seq % PROF_INFLIGHT];
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
			struct agg_flight *e = &a->flight[s % PROF_INFLIGHT];

			if (e->seq == s)
				agg_flight_done(c, e, r->t);
		}
		agg_flight_done(c, f, r->t);
		agg_advance(c, r->t);
	}
}

static void
agg_op(struct prof_comm *c, const struct prof_rec *r)
{
	struct agg_peer *p = &c->agg.peers[r->peer];

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
agg_timed_add(struct agg *a, struct agg_peer *p, int dir, uint64_t seq,
	      uint64_t t)
{
	struct agg_timed *e;

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
agg_step(struct prof_comm *c, const struct prof_rec *r)
{
	struct agg *a = &c->agg;
	struct agg_peer *p = &c->agg.peers[r->peer];

	a->steps++;
	/* One-way timing serves 2-rank communicators (c4d-master's ingest). */
	if (c->nranks == 2)
		agg_timed_add(a, p, r->is_send != 0, r->seq, r->v[ST_N + 2]);
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
agg_record(const struct prof_rec *r)
{
	struct prof_comm *c = r->comm < PROF_COMMS_MAX
				      ? atomic_load(&g.comms[r->comm])
				      : NULL;

	if (c == NULL)
		return;
	if ((r->kind == REC_OP_START || r->kind == REC_OP_STOP ||
	     r->kind == REC_STEP) &&
	    (r->peer < 0 || r->peer >= c->nranks))
		return;
	switch (r->kind) {
	case REC_COLL_START:
		agg_coll_start(c, r);
		break;
	case REC_COLL_STOP:
		agg_coll_stop(c, r);
		break;
	case REC_KCH:
		agg_kch(c, r);
		break;
	case REC_OP_START:
	case REC_OP_STOP:
		agg_op(c, r);
		break;
	case REC_STEP:
		agg_step(c, r);
		break;
	}
}

/* An op whose channels stopped arriving is done (nChannels overstated). */
static void
agg_settle(struct prof_comm *c, uint64_t now)
{
	struct agg *a = &c->agg;
	struct agg_flight *f;
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
		agg_flight_done(c, f, f->t_last);
	}
	agg_advance(c, now);
}

static int
prof_tid_alive(pid_t tid)
{
	return tid <= 0 || syscall(SYS_tgkill, g.pid, tid, 0) == 0 ||
	       errno != ESRCH;
}

static void
prof_drain(void)
{
	struct prof_rec r;
	uint32_t i;
	int n;

	for (i = 0; i < PROF_RINGS_MAX; i++) {
		struct prof_tring *tr = &g.rings[i];

		if (tr->ring.slots == NULL ||
		    atomic_load(&tr->state) == TRING_FREE)
			continue;
		for (n = 0; ring_pop(&tr->ring, &r) == 0; n++)
			agg_record(&r);
		/* A ring whose thread exited goes back to the free list. */
		if (n == 0 && !prof_tid_alive(atomic_load(&tr->tid)))
			atomic_store(&tr->state, TRING_FREE);
	}
}

/* The sketch, or NULL when it holds nothing (the client omits it). */
static const struct sketch *
sk(const struct sketch *s)
{
	return s->total > 0 ? s : NULL;
}

struct prof_build {
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
prof_build_timed(struct prof_build *b, struct agg_timed *e, uint64_t now,
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

/* C4_PROFILER_STATS=2: one op kind's interval on stderr. */
static void
prof_trace_op(const struct prof_comm *c, uint32_t f, const struct agg_op *o)
{
	uint64_t kn = o->kernel.total, gn = o->gap.total;
	double p99 = gn ? sketch_quantile(&o->gap, 0.99) : 0.0, capped = 0;

	/* what the master makes of the gaps' sum: above p99 counts as p99 */
	if (gn)
		capped = fmax((double)o->gap.sum - sketch_excess(&o->gap, p99),
			      0) /
			 (double)gn;
	fprintf(stderr,
		"c4-nccl-profiler: pid %ld comm %016llx rank %d interval %llu "
		"func %u ops %llu kernel_n %llu kernel_mean_ns %llu gap_n %llu "
		"gap_mean_ns %llu gap_p50_ns %.0f gap_p90_ns %.0f gap_p99_ns "
		"%.0f gap_max_ns %llu gap_capped_mean_ns %.0f shift %u\n",
		(long)g.pid, (unsigned long long)c->hash, c->rank,
		(unsigned long long)g.interval_id, f,
		(unsigned long long)o->count, (unsigned long long)kn,
		(unsigned long long)(kn ? o->kernel.sum / kn : 0),
		(unsigned long long)gn,
		(unsigned long long)(gn ? o->gap.sum / gn : 0),
		gn ? sketch_quantile(&o->gap, 0.5) : 0.0,
		gn ? sketch_quantile(&o->gap, 0.9) : 0.0, p99,
		(unsigned long long)o->gap.max, capped,
		(unsigned)atomic_load(&g.ks_shift));
}

static void
prof_build_comm(struct prof_build *b, struct prof_comm *c, uint64_t now,
		uint64_t interval_ns)
{
	struct agg *a = &c->agg;
	struct c4client_coll *co = &b->colls[b->ncolls++];
	struct c4client_progress *pg;
	uint32_t f;
	int p;
	size_t stuck0 = b->nstuck;

	memset(co, 0, sizeof(*co));
	co->comm_hash = c->hash;
	co->rank = (uint32_t)c->rank;
	co->ops = &b->ops[b->nops];
	for (f = 0; f < PROF_FUNCS; f++) {
		struct agg_op *o = &a->ops[f];
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
		op->kernel_time = sk(&o->kernel);
		op->gap_time = sk(&o->gap);
		op->enqueue_time = sk(&o->enq);
		co->nops++;
		if (g.stats >= 2)
			prof_trace_op(c, f, o);
	}
	co->idle = !a->any_entered;
	co->first_seq_entered = a->first_entered;
	co->last_seq_entered = a->last_entered_iv;
	co->first_seq_completed = a->first_completed;
	co->last_seq_completed = a->last_completed_iv;
	co->first_start_ns = a->first_start_rt;

	for (p = 0; p < c->nranks; p++) {
		struct agg_peer *pe = &a->peers[p];
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
		cn->transfer_time = sk(&pe->xfer);
		prof_build_timed(b, pe->timed[1], now, cn);
	}
	/* Timing without traffic this interval, and the receiver's side. */
	for (p = 0; p < c->nranks; p++) {
		struct agg_peer *pe = &a->peers[p];
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
			if (prof_build_timed(b, pe->timed[!rx], now, cn) > 0)
				b->nconns++;
		}
	}
	if (a->steps > 0) {
		struct c4client_wait *w = &b->waits[b->nwaits++];

		memset(w, 0, sizeof(*w));
		w->comm_hash = c->hash;
		w->rank = (uint32_t)c->rank;
		w->recv_wait = sk(&a->wait[0]);
		w->send_peer_wait = sk(&a->wait[1]);
		w->send_gpu_wait = sk(&a->wait[2]);
		w->recv_gpu_wait = sk(&a->wait[3]);
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
prof_reset_interval(struct prof_comm *c)
{
	struct agg *a = &c->agg;
	uint32_t f;
	int p, i;

	for (f = 0; f < PROF_FUNCS; f++) {
		struct agg_op *o = &a->ops[f];

		o->count = o->bytes = 0;
		sketch_reset(&o->kernel);
		sketch_reset(&o->gap);
		sketch_reset(&o->enq);
	}
	for (i = 0; i < 4; i++)
		sketch_reset(&a->wait[i]);
	a->steps = 0;
	for (p = 0; p < c->nranks; p++) {
		struct agg_peer *pe = &a->peers[p];

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

static void
prof_report(uint64_t now)
{
	struct prof_build b;
	struct c4client_report rep;
	size_t ncomm = 0, nranks = 0;
	uint32_t i;
	struct prof_comm *c;
	uint64_t interval_ns = (uint64_t)g.cfg.interval_ms * 1000000ull;

	memset(&b, 0, sizeof(b));
	for (i = 0; i < PROF_COMMS_MAX; i++)
		if ((c = atomic_load(&g.comms[i])) != NULL) {
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
		b.rt_off = g.clock != NULL ? 0 : prof_realtime() - prof_mono();
		b.waits = calloc(ncomm, sizeof(*b.waits));
		b.prog = calloc(ncomm, sizeof(*b.prog));
		b.stuck = calloc(nranks, sizeof(*b.stuck));
		if (b.colls == NULL || b.ops == NULL || b.conns == NULL ||
		    b.waits == NULL || b.prog == NULL || b.stuck == NULL ||
		    b.tseq == NULL || b.tmean == NULL || b.tchunks == NULL) {
			g.reports_failed++;
			goto out;
		}
		for (i = 0; i < PROF_COMMS_MAX; i++)
			if ((c = atomic_load(&g.comms[i])) != NULL) {
				agg_settle(c, now);
				prof_build_comm(&b, c, now, interval_ns);
			}
	}
	memset(&rep, 0, sizeof(rep));
	rep.interval_id = ++g.interval_id;
	rep.interval_start_ns = g.interval_start_rt;
	rep.interval_ms = g.cfg.interval_ms;
	rep.ncolls = b.ncolls;
	rep.colls = b.colls;
	rep.nconns = b.nconns;
	rep.conns = b.conns;
	rep.nwaits = b.nwaits;
	rep.waits = b.waits;
	rep.nprogress = b.nprog;
	rep.progress = b.prog;
	if (g.sink != NULL)
		g.sink(&rep, g.sink_arg);
	else if (g.client != NULL && c4client_report(g.client, &rep) < 0)
		g.reports_failed++;
	g.reports++;
out:
	for (i = 0; i < PROF_COMMS_MAX; i++)
		if ((c = atomic_load(&g.comms[i])) != NULL)
			prof_reset_interval(c);
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

/* Comms NCCL finalized: their last records are in; forget them. */
static void
prof_reap(void)
{
	uint32_t i;
	struct prof_comm *c;

	for (i = 0; i < PROF_COMMS_MAX; i++) {
		c = atomic_load(&g.comms[i]);
		if (c == NULL || !atomic_load(&c->finalized))
			continue;
		if (g.client != NULL)
			c4client_deregister(g.client, c->hash);
		g.dead.events += atomic_load(&c->events);
		g.dead.ignored += atomic_load(&c->ignored);
		g.dead.stale += atomic_load(&c->stale);
		g.dead.pool_drops += pool_drops(&c->pool);
		g.dead.orphans += c->agg.orphans;
		g.dead.timed_lost += c->agg.timed_lost;
		atomic_store(&g.comms[i], NULL);
		prof_comm_free(c);
	}
}

static void
prof_detail_poll(void)
{
	struct stat st;
	int want, on;
	uint32_t i;
	struct prof_comm *c;

	if (g.detail_file != NULL) {
		want = stat(g.detail_file, &st) == 0;
		atomic_store(&g.detail, want);
	}
	/* Only the detail bit: kernel channels may be sampled meanwhile. */
	on = atomic_load(&g.detail);
	for (i = 0; i < PROF_COMMS_MAX; i++) {
		c = atomic_load(&g.comms[i]);
		if (c == NULL || c->mask == NULL || atomic_load(&c->finalized))
			continue;
		if (on && !(__atomic_load_n(c->mask, __ATOMIC_RELAXED) &
			    PROF_MASK_DETAIL))
			__atomic_fetch_or(c->mask, PROF_MASK_DETAIL,
					  __ATOMIC_RELAXED);
		else if (!on && (__atomic_load_n(c->mask, __ATOMIC_RELAXED) &
				 PROF_MASK_DETAIL))
			__atomic_fetch_and(c->mask, ~PROF_MASK_DETAIL,
					   __ATOMIC_RELAXED);
	}
	prof_ks_adapt();
}

void
prof_set_detail(int on)
{
	atomic_store(&g.detail, on != 0);
}

void
prof_tick(int report)
{
	uint64_t now = prof_now();

	prof_drain();
	if (report) {
		prof_report(now);
		prof_reap();
		g.interval_start = now;
		g.interval_start_rt = g.clock ? now : prof_realtime();
		prof_detail_poll();
		/* A recording survives a process that never finalizes. */
		if (g.rec != NULL) {
			pthread_mutex_lock(&g.rec_lock);
			fflush(g.rec);
			pthread_mutex_unlock(&g.rec_lock);
		}
	}
}

/*
 * Drains every PROF_DRAIN_MS and reports at each wall-clock multiple of
 * the interval (c4client_next_boundary), so that c4a-agent, which sends
 * a little after each boundary, carries the interval that just ended.
 */
static void *
prof_thread(void *arg)
{
	const uint64_t drain = PROF_DRAIN_MS * 1000000ull;
	const uint64_t iv = (uint64_t)g.cfg.interval_ms * 1000000ull;
	uint64_t now = prof_realtime(), wait;
	uint64_t next = c4client_next_boundary(now, g.cfg.interval_ms, 1);
	struct timespec ts;

	(void)arg;
	while (!atomic_load(&g.stop)) {
		/* Drain every PROF_DRAIN_MS, and wake at the boundary. */
		wait = next > now && next - now < drain ? next - now : drain;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)wait;
		nanosleep(&ts, NULL);
		now = prof_realtime();
		/* The wall clock stepped back: aim at its next boundary. */
		if (next > now + iv)
			next = c4client_next_boundary(now, g.cfg.interval_ms,
						      1);
		if (now >= next) {
			next = c4client_next_boundary(now, g.cfg.interval_ms,
						      0);
			prof_tick(1);
		} else {
			prof_tick(0);
		}
	}
	return NULL;
}

void
prof_counters(struct prof_counters *out)
{
	uint32_t i;
	struct prof_comm *c;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < PROF_COMMS_MAX; i++) {
		c = atomic_load(&g.comms[i]);
		if (c == NULL)
			continue;
		out->events += atomic_load(&c->events);
		out->ignored += atomic_load(&c->ignored);
		out->stale += atomic_load(&c->stale);
		out->pool_drops += pool_drops(&c->pool);
		out->orphans += c->agg.orphans;
		out->timed_lost += c->agg.timed_lost;
	}
	for (i = 0; i < PROF_RINGS_MAX; i++)
		if (g.rings[i].ring.slots != NULL)
			out->ring_drops += ring_drops(&g.rings[i].ring);
	out->no_ring = atomic_load(&g.no_ring);
	out->events += g.dead.events;
	out->ignored += g.dead.ignored;
	out->stale += g.dead.stale;
	out->pool_drops += g.dead.pool_drops;
	out->orphans += g.dead.orphans;
	out->timed_lost += g.dead.timed_lost;
	out->reports = g.reports;
	out->reports_failed = g.reports_failed;
	out->calls = atomic_load(&g.ks_calls);
	out->calls_sampled = atomic_load(&g.ks_sampled);
	out->graph_full = (uint64_t)atomic_load(&g.ks_full);
}

static char *
prof_strdup(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

static void
prof_free_all(void)
{
	uint32_t i;

	for (i = 0; i < PROF_COMMS_MAX; i++) {
		prof_comm_free(atomic_load(&g.comms[i]));
		atomic_store(&g.comms[i], NULL);
	}
	for (i = 0; i < PROF_RINGS_MAX; i++) {
		ring_free(&g.rings[i].ring);
		atomic_store(&g.rings[i].state, TRING_FREE);
	}
	free(g.socket_path);
	free(g.job_id);
	free(g.token);
	free(g.detail_file);
	g.socket_path = g.job_id = g.token = g.detail_file = NULL;
	if (g.rec != NULL)
		fclose(g.rec);
	g.rec = NULL;
}

int
prof_open(const struct prof_config *cfg)
{
	struct c4client_opts o;
	uint32_t i;

	pthread_mutex_lock(&g.lock);
	if (g.open) {
		pthread_mutex_unlock(&g.lock);
		return -1;
	}
	g.cfg = *cfg;
	if (g.cfg.interval_ms < PROF_INTERVAL_MIN ||
	    g.cfg.interval_ms > PROF_INTERVAL_MAX)
		g.cfg.interval_ms = PROF_INTERVAL_DEFAULT;
	if (g.cfg.ring_cap == 0)
		g.cfg.ring_cap = PROF_RING_DEFAULT;
	if (g.cfg.pool_cap == 0 || g.cfg.pool_cap > POOL_CAP_MAX)
		g.cfg.pool_cap = PROF_POOL_DEFAULT;
	if (g.cfg.colls_cap == 0 || g.cfg.colls_cap > (1u << 20))
		g.cfg.colls_cap = PROF_COLLS_DEFAULT;
	g.socket_path = prof_strdup(cfg->socket_path);
	g.job_id = prof_strdup(cfg->job_id);
	g.token = prof_strdup(cfg->token);
	g.detail_file = prof_strdup(cfg->detail_file);
	g.cfg.socket_path = g.socket_path;
	g.cfg.job_id = g.job_id;
	g.cfg.token = g.token;
	g.cfg.detail_file = g.detail_file;
	g.cfg.record_path = NULL;
	g.pid = getpid();
	atomic_store(&g.detail, cfg->detail != 0);
	g.base_mask = cfg->base_mask == 0  ? PROF_MASK_BASE
		      : cfg->base_mask < 0 ? 0
					   : cfg->base_mask;
	g.ks_rate = (g.base_mask & NCCL_EV_KERNEL_CH) ? cfg->kernel_sample : 0;
	atomic_store(&g.ks_shift, 0); /* every call until a rate is known */
	g.ks_adapted = 0;
	atomic_store(&g.ks_calls, 0);
	atomic_store(&g.ks_t0, 0);
	atomic_store(&g.ks_sampled, 0);
	atomic_store(&g.ks_full, 0);
	g.stats = cfg->stats;
	atomic_fetch_add(&g.epoch, 1);
	atomic_store(&g.no_ring, 0);
	g.interval_id = g.reports = g.reports_failed = 0;
	memset(&g.dead, 0, sizeof(g.dead));
	for (i = 0; i < PROF_RINGS_MAX; i++)
		if (ring_init(&g.rings[i].ring, g.cfg.ring_cap,
			      sizeof(struct prof_rec)) < 0)
			goto fail;
	if (cfg->record_path != NULL) {
		g.rec = fopen(cfg->record_path, "w");
		if (g.rec == NULL)
			goto fail;
		fprintf(g.rec, "# c4-nccl-profiler record 1\n");
	}
	if (g.socket_path != NULL && g.job_id != NULL) {
		memset(&o, 0, sizeof(o));
		o.socket_path = g.socket_path;
		o.job_id = g.job_id;
		o.token = g.token;
		g.client = c4client_open(&o);
	}
	g.interval_start = prof_now();
	g.interval_start_rt = g.clock ? g.interval_start : prof_realtime();
	atomic_store(&g.stop, 0);
	g.have_thread = 0;
	if (cfg->thread) {
		if (pthread_create(&g.thread, NULL, prof_thread, NULL) != 0)
			goto fail;
		pthread_setname_np(g.thread, "c4-nccl-prof");
		g.have_thread = 1;
	}
	g.open = 1;
	pthread_mutex_unlock(&g.lock);
	return 0;
fail:
	if (g.client != NULL)
		c4client_close(g.client);
	g.client = NULL;
	prof_free_all();
	pthread_mutex_unlock(&g.lock);
	return -1;
}

void
prof_close(void)
{
	pthread_mutex_lock(&g.lock);
	if (!g.open) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	g.open = 0;
	pthread_mutex_unlock(&g.lock);
	if (g.have_thread) {
		atomic_store(&g.stop, 1);
		pthread_join(g.thread, NULL);
		g.have_thread = 0;
	}
	prof_tick(1);
	if (g.stats || g.rec != NULL) {
		struct prof_counters k;
		char line[512];

		prof_counters(&k);
		snprintf(line, sizeof(line),
			 "c4-nccl-profiler: pid %ld events %llu ignored %llu "
			 "stale %llu pool_drops %llu ring_drops %llu no_ring "
			 "%llu orphans %llu timed_lost %llu reports %llu "
			 "reports_failed %llu calls %llu calls_sampled %llu "
			 "graph_full %llu\n",
			 (long)g.pid, (unsigned long long)k.events,
			 (unsigned long long)k.ignored,
			 (unsigned long long)k.stale,
			 (unsigned long long)k.pool_drops,
			 (unsigned long long)k.ring_drops,
			 (unsigned long long)k.no_ring,
			 (unsigned long long)k.orphans,
			 (unsigned long long)k.timed_lost,
			 (unsigned long long)k.reports,
			 (unsigned long long)k.reports_failed,
			 (unsigned long long)k.calls,
			 (unsigned long long)k.calls_sampled,
			 (unsigned long long)k.graph_full);
		if (g.stats)
			fputs(line, stderr);
		if (g.rec != NULL)
			fprintf(g.rec, "# %s", line);
	}
	if (g.client != NULL)
		c4client_close(g.client);
	g.client = NULL;
	pthread_mutex_lock(&g.lock);
	prof_free_all();
	atomic_fetch_add(&g.epoch, 1);
	pthread_mutex_unlock(&g.lock);
}
