/*
 * test_prof.c - the profiler plugin's core without NCCL or a GPU.
 *
 * The replay test feeds a recording (a .rec file in tests/data/nccl, format in
 * nccl-profiler/replay.c) through the same callbacks NCCL calls and checks
 * the per-interval summaries: op counts and bytes, kernel time from the
 * GPU timers, per-peer transfers from SendWait, waits, progress markers.
 * The committed fixture is hand-built
 * (tests/unit/nccl-profiler/make_fixture.py documents the event order it
 * follows); a real capture from the GPU machine may replace it, keeping
 * these assertions' shape.
 *
 * The other tests drive the callbacks directly: stale and doubled
 * handles, pool exhaustion, PXN proxy ops, the live activation mask,
 * progress of a rank whose kernel never finishes, and many threads.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names.h"
#include "prof.h"
#include "replay.h"

#define REPORTS_MAX 8

struct seen_op {
	int func, algo, proto;
	uint64_t count, bytes;
	uint32_t channels;
	uint64_t kernel_n, enq_n, gap_n;
	double kernel_p50, enq_p50;
};

struct seen_report {
	size_t ncolls, nconns, nwaits, nprogress;
	struct seen_op op;
	int idle;
	uint64_t first_entered, last_entered, last_completed_iv;
	uint64_t conn_src, conn_dst, conn_bytes, conn_chunks, conn_mask,
		conn_xfer_n;
	int conn_transport;
	uint32_t conn_pending;
	double conn_xfer_p50;
	size_t conn_ntimed, rx_ntimed;
	int conn_receiver;
	uint32_t rx_src, rx_dst;
	uint64_t rx_bytes;
	int64_t flight0;
	uint64_t steps;
	double recv_p50, peer_p50, gpu_p50, rgpu_p50;
	uint64_t entered, completed;
	int inflight;
	size_t nstuck;
	int done_enq;
};

struct seen {
	int n;
	struct seen_report r[REPORTS_MAX];
};

static double
q50(const struct sketch *s)
{
	return s != NULL ? sketch_quantile(s, 0.5) : -1;
}

static void
capture(const struct c4client_report *rep, void *arg)
{
	struct seen *s = arg;
	struct seen_report *x;

	if (s->n >= REPORTS_MAX)
		return;
	x = &s->r[s->n++];
	x->ncolls = rep->ncolls;
	x->nconns = rep->nconns;
	x->nwaits = rep->nwaits;
	x->nprogress = rep->nprogress;
	if (rep->ncolls > 0) {
		const struct c4client_coll *c = &rep->colls[0];

		x->idle = c->idle;
		x->first_entered = c->first_seq_entered;
		x->last_entered = c->last_seq_entered;
		x->last_completed_iv = c->last_seq_completed;
		if (c->nops > 0) {
			const struct c4client_op *o = &c->ops[0];

			x->op.func = o->func;
			x->op.algo = o->algorithm;
			x->op.proto = o->protocol;
			x->op.count = o->count;
			x->op.bytes = o->bytes;
			x->op.channels = o->channels;
			x->op.kernel_n =
				o->kernel_time ? o->kernel_time->total : 0;
			x->op.enq_n =
				o->enqueue_time ? o->enqueue_time->total : 0;
			x->op.gap_n = o->gap_time ? o->gap_time->total : 0;
			x->op.kernel_p50 = q50(o->kernel_time);
			x->op.enq_p50 = q50(o->enqueue_time);
		}
	}
	if (rep->nconns > 0) {
		const struct c4client_conn *c = &rep->conns[0];

		x->conn_src = c->src_rank;
		x->conn_dst = c->dst_rank;
		x->conn_bytes = c->bytes;
		x->conn_chunks = c->chunks;
		x->conn_mask = c->channel_mask;
		x->conn_transport = c->transport;
		x->conn_pending = c->pending_chunks;
		x->conn_xfer_n = c->transfer_time ? c->transfer_time->total : 0;
		x->conn_xfer_p50 = q50(c->transfer_time);
		x->conn_ntimed = c->ntimed;
		x->conn_receiver = c->receiver;
		for (size_t i = 1; i < rep->nconns; i++)
			if (rep->conns[i].receiver) {
				x->rx_src = rep->conns[i].src_rank;
				x->rx_dst = rep->conns[i].dst_rank;
				x->rx_ntimed = rep->conns[i].ntimed;
				x->rx_bytes = rep->conns[i].bytes;
				if (c->ntimed > 0 && rep->conns[i].ntimed > 0 &&
				    c->timed_seq[0] ==
					    rep->conns[i].timed_seq[0])
					x->flight0 =
						(int64_t)rep->conns[i]
							.timed_mean_ns[0] -
						(int64_t)c->timed_mean_ns[0];
			}
	}
	if (rep->nwaits > 0) {
		const struct c4client_wait *w = &rep->waits[0];

		x->steps = w->steps;
		x->recv_p50 = q50(w->recv_wait);
		x->peer_p50 = q50(w->send_peer_wait);
		x->gpu_p50 = q50(w->send_gpu_wait);
		x->rgpu_p50 = q50(w->recv_gpu_wait);
	}
	if (rep->nprogress > 0) {
		x->entered = rep->progress[0].last_seq_entered;
		x->completed = rep->progress[0].last_seq_completed;
		x->inflight = rep->progress[0].inflight_func;
		x->nstuck = rep->progress[0].nstuck;
		x->done_enq = rep->progress[0].completed_at_enqueue;
	}
}

/* Within the sketch's 1% (plus a little). */
#define ck_assert_near(v, want)                                                \
	ck_assert_msg((v) > (want)*0.98 && (v) < (want)*1.02,                  \
		      "%s = %f, want %f", #v, (double)(v), (double)(want))

START_TEST(test_replay_fixture)
{
	char path[1024], err[256] = "";
	const char *dir = getenv("C4_TEST_DATA");
	struct prof_config cfg = {.interval_ms = 1000};
	struct seen *s = calloc(1, sizeof(*s));
	FILE *f;
	int n;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/nccl/allreduce-socket-r0.rec", dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = replay_run(f, &cfg, capture, s, err, sizeof(err));
	fclose(f);
	ck_assert_msg(n > 0, "replay: %s", err);
	ck_assert_int_eq(n, 282);
	/* 1..2 s, 2..3 s, and the empty one of prof_close. */
	ck_assert_int_eq(s->n, 3);

	/* Interval 1: ops 0..3 (our seq = NCCL's + 1). */
	ck_assert_uint_eq(s->r[0].ncolls, 1);
	ck_assert_int_eq(s->r[0].idle, 0);
	ck_assert_int_eq(s->r[0].op.func, C4CLIENT_ALLREDUCE);
	ck_assert_int_eq(s->r[0].op.algo, C4CLIENT_ALGO_RING);
	ck_assert_int_eq(s->r[0].op.proto, C4CLIENT_PROTO_SIMPLE);
	ck_assert_uint_eq(s->r[0].op.count, 4);
	ck_assert_uint_eq(s->r[0].op.bytes, 4 * 1048576);
	ck_assert_uint_eq(s->r[0].op.channels, 2);
	ck_assert_uint_eq(s->r[0].op.kernel_n, 4);
	ck_assert_near(s->r[0].op.kernel_p50, 520000);
	ck_assert_uint_eq(s->r[0].op.enq_n, 4);
	ck_assert_near(s->r[0].op.enq_p50, 20000);
	ck_assert_uint_eq(s->r[0].op.gap_n, 3);
	ck_assert_uint_eq(s->r[0].first_entered, 1);
	ck_assert_uint_eq(s->r[0].last_entered, 4);
	ck_assert_uint_eq(s->r[0].last_completed_iv, 4);
	/* One connection, 0 -> 1, 4 ops x 2 channels x 2 steps. */
	ck_assert_uint_eq(s->r[0].nconns, 2);
	/*
	 * One-way timing: ops 1..3 settled (op 4's chunks are younger than
	 * the settle time), on the sender's summary and on the receiver's
	 * (1 -> 0, timing only); each op's chunks arrive 65 us after they
	 * were ready to leave.
	 */
	ck_assert_uint_eq(s->r[0].conn_ntimed, 3);
	ck_assert_int_eq(s->r[0].conn_receiver, 0);
	ck_assert_uint_eq(s->r[0].rx_src, 1);
	ck_assert_uint_eq(s->r[0].rx_dst, 0);
	ck_assert_uint_eq(s->r[0].rx_ntimed, 3);
	ck_assert_uint_eq(s->r[0].rx_bytes, 0);
	ck_assert_int_eq(s->r[0].flight0, 65000);
	ck_assert_uint_eq(s->r[0].conn_src, 0);
	ck_assert_uint_eq(s->r[0].conn_dst, 1);
	ck_assert_uint_eq(s->r[0].conn_chunks, 16);
	ck_assert_uint_eq(s->r[0].conn_bytes, 16 * 524288);
	ck_assert_uint_eq(s->r[0].conn_mask, 3);
	ck_assert_int_eq(s->r[0].conn_transport, C4CLIENT_NET);
	ck_assert_uint_eq(s->r[0].conn_pending, 0);
	ck_assert_uint_eq(s->r[0].conn_xfer_n, 16);
	ck_assert_near(s->r[0].conn_xfer_p50, 100000);
	/* Waits of 16 send and 16 receive steps. */
	ck_assert_uint_eq(s->r[0].steps, 32);
	ck_assert_near(s->r[0].recv_p50, 80000);
	ck_assert_near(s->r[0].peer_p50, 5000);
	ck_assert_near(s->r[0].gpu_p50, 10000);
	ck_assert_near(s->r[0].rgpu_p50, 5000);
	ck_assert_uint_eq(s->r[0].entered, 4);
	ck_assert_uint_eq(s->r[0].completed, 4);
	ck_assert_int_eq(s->r[0].inflight, 0);
	ck_assert_uint_eq(s->r[0].nstuck, 0);

	/* Interval 2: op 4 alone; the comm is finalized in it. */
	ck_assert_uint_eq(s->r[1].op.count, 1);
	ck_assert_uint_eq(s->r[1].first_entered, 5);
	ck_assert_uint_eq(s->r[1].entered, 5);
	ck_assert_uint_eq(s->r[1].completed, 5);
	ck_assert_uint_eq(s->r[1].conn_chunks, 4);
	ck_assert_uint_eq(s->r[1].op.gap_n, 1);

	/* After finalize the comm is gone. */
	ck_assert_uint_eq(s->r[2].ncolls, 0);
	free(s);
}
END_TEST

/*
 * Recordings of rank 0 made by NCCL 2.28.9 on H200s (scripts/gpu-e2e's
 * capture scenario, 2 ranks, 36 all-reduces): one over the socket
 * transport (proxy events), one over NVLink P2P (Coll and KernelCh only).
 * Checked for what must hold whatever the timing: every collective
 * counted, completed and ordered, kernel times and GPU-timed gaps, and
 * per-peer transfers exactly where a proxy exists.
 */
static void
replay_gpu(const char *name, int socket)
{
	char path[1024], err[256] = "";
	const char *dir = getenv("C4_TEST_DATA");
	struct prof_config cfg = {.interval_ms = 1000};
	struct seen *s = calloc(1, sizeof(*s));
	uint64_t ops = 0, kernels = 0, gaps = 0, xfers = 0, steps = 0;
	uint64_t entered = 0, completed = 0;
	size_t conns = 0;
	FILE *f;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/nccl/%s", dir, name);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(replay_run(f, &cfg, capture, s, err, sizeof(err)) > 0,
		      "replay: %s", err);
	fclose(f);
	for (int i = 0; i < s->n; i++) {
		const struct seen_report *x = &s->r[i];

		if (x->ncolls > 0) {
			ck_assert_int_eq(x->op.func, C4CLIENT_ALLREDUCE);
			ops += x->op.count;
			kernels += x->op.kernel_n;
			gaps += x->op.gap_n;
		}
		conns += x->nconns;
		xfers += x->conn_xfer_n;
		steps += x->steps;
		if (x->nprogress > 0) {
			ck_assert_uint_ge(x->entered, entered);
			ck_assert_uint_le(x->completed, x->entered);
			entered = x->entered;
			completed = x->completed;
		}
	}
	ck_assert_uint_eq(ops, 36);
	ck_assert_uint_eq(entered, 36);
	ck_assert_uint_eq(completed, 36);
	ck_assert_uint_eq(kernels, 36);
	/* A gap between every two kernels, from the GPU's own timers. */
	ck_assert_uint_ge(gaps, 30);
	if (socket) {
		ck_assert_uint_gt(conns, 0);
		ck_assert_uint_gt(xfers, 0);
		ck_assert_uint_gt(steps, 0);
	} else {
		ck_assert_uint_eq(conns, 0);
		ck_assert_uint_eq(steps, 0);
	}
	free(s);
}

START_TEST(test_replay_gpu_socket)
{
	replay_gpu("gpu-h200-socket-r0.rec", 1);
}
END_TEST

START_TEST(test_replay_gpu_p2p)
{
	replay_gpu("gpu-h200-p2p-r0.rec", 0);
}
END_TEST

START_TEST(test_replay_rejects_garbage)
{
	struct prof_config cfg = {.interval_ms = 1000};
	struct seen s = {0};
	char err[256] = "";
	FILE *f = tmpfile();

	fputs("I 1 0x1 abc 1 2 0\nS 2 0x1 0x2 nonsense\n", f);
	rewind(f);
	ck_assert_int_eq(replay_run(f, &cfg, capture, &s, err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "line 2"));
	fclose(f);
}
END_TEST

static uint64_t fake_now = 1000000000ull;

static uint64_t
fake_clock(void)
{
	return fake_now;
}

static void
open_core(uint32_t pool, struct seen *s)
{
	struct prof_config cfg = {
		.interval_ms = 1000, .pool_cap = pool, .detail = 1};

	prof_set_clock(fake_clock);
	prof_set_sink(capture, s);
	ck_assert_int_eq(prof_open(&cfg), 0);
}

static void *
coll(void *ctx, uint64_t seq, uint32_t nch)
{
	struct prof_descr d = {.type = NCCL_EV_COLL,
			       .seq = seq,
			       .func = C4CLIENT_ALLREDUCE,
			       .bytes = 4096,
			       .nchannels = nch};
	void *h;

	prof_start(ctx, &h, &d);
	ck_assert_ptr_nonnull(h);
	prof_stop(h);
	return h;
}

static void *
kch(void *ctx, void *parent, int channel)
{
	struct prof_descr d = {.type = NCCL_EV_KERNEL_CH,
			       .parent = parent,
			       .channel = channel,
			       .ptimer = 1000};
	void *h;

	prof_start(ctx, &h, &d);
	return h;
}

START_TEST(test_inactive_when_closed)
{
	int mask = -1;
	void *ctx = (void *)1;

	ck_assert_int_eq(prof_init(&ctx, 1, &mask, NULL, 1, 2, 0), 0);
	ck_assert_ptr_null(ctx);
	ck_assert_int_eq(mask, 0);
}
END_TEST

START_TEST(test_stale_and_double_stop)
{
	struct seen s = {0};
	struct prof_counters k;
	int mask = 0;
	void *ctx, *c, *h;

	open_core(0, &s);
	ck_assert_int_eq(prof_init(&ctx, 7, &mask, "t", 1, 2, 0), 0);
	ck_assert_int_eq(mask, PROF_MASK_BASE | PROF_MASK_DETAIL);
	c = coll(ctx, 0, 1);
	h = kch(ctx, c, 0);
	ck_assert_ptr_nonnull(h);
	prof_stop(h);
	prof_stop(h); /* twice */
	prof_state(h, NCCL_ST_KERNEL_CH_STOP, 0, 5);
	/* Forged handles of a slot that does not exist are ignored. */
	prof_stop((void *)(uintptr_t)(4095ull << 52 | 2ull << 50 | 7));
	prof_stop(NULL);
	prof_counters(&k);
	ck_assert_uint_eq(k.stale, 2);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

START_TEST(test_pool_exhaustion_counts_drops)
{
	struct seen s = {0};
	struct prof_counters k;
	int mask, i, got = 0;
	void *ctx, *c, *h[20];

	open_core(16, &s);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	c = coll(ctx, 0, 20);
	for (i = 0; i < 20; i++) {
		h[i] = kch(ctx, c, i);
		got += h[i] != NULL;
	}
	ck_assert_int_eq(got, 16);
	prof_counters(&k);
	ck_assert_uint_eq(k.pool_drops, 4);
	for (i = 0; i < 20; i++)
		if (h[i] != NULL)
			prof_stop(h[i]);
	/* The records came back: a new one can be had. */
	ck_assert_ptr_nonnull(kch(ctx, c, 0));
	prof_finalize(ctx);
	prof_close();
}
END_TEST

START_TEST(test_mask_is_live)
{
	struct seen s = {0};
	int mask = 0;
	void *ctx;

	open_core(0, &s);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	ck_assert_int_eq(mask & PROF_MASK_DETAIL, PROF_MASK_DETAIL);
	prof_set_detail(0);
	prof_tick(1);
	ck_assert_int_eq(mask, PROF_MASK_BASE);
	prof_set_detail(1);
	prof_tick(1);
	ck_assert_int_eq(mask, PROF_MASK_BASE | PROF_MASK_DETAIL);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

START_TEST(test_events_list)
{
	struct seen s = {0};
	struct prof_config cfg = {.interval_ms = 1000};
	char err[128];
	int base = 0, detail = 0, mask;
	void *ctx;

	ck_assert_int_eq(names_events_parse("coll,kernel", &base, &detail, err,
					    sizeof(err)),
			 0);
	ck_assert_int_eq(base, NCCL_EV_COLL | NCCL_EV_KERNEL_CH);
	ck_assert_int_eq(detail, 0);
	ck_assert_int_eq(names_events_parse("coll, proxy,step", &base, &detail,
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(base, NCCL_EV_COLL | NCCL_EV_PROXY_OP);
	ck_assert_int_eq(detail, 1);
	ck_assert_int_eq(
		names_events_parse("none", &base, &detail, err, sizeof(err)),
		0);
	ck_assert_int_eq(base, -1);
	ck_assert_int_eq(names_events_parse("coll,kernal", &base, &detail, err,
					    sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "\"kernal\""));
	ck_assert_int_eq(
		names_events_parse("kernel", &base, &detail, err, sizeof(err)),
		-1);
	ck_assert_int_eq(names_events_parse("coll,step", &base, &detail, err,
					    sizeof(err)),
			 -1);
	ck_assert_int_eq(names_events_parse("none,coll", &base, &detail, err,
					    sizeof(err)),
			 -1);
	ck_assert_int_eq(
		names_events_parse(",", &base, &detail, err, sizeof(err)), -1);

	/* The mask NCCL reads follows the list; step stays live. */
	prof_set_clock(fake_clock);
	prof_set_sink(capture, &s);
	cfg.base_mask = NCCL_EV_COLL;
	ck_assert_int_eq(prof_open(&cfg), 0);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	ck_assert_int_eq(mask, NCCL_EV_COLL);
	prof_set_detail(1);
	prof_tick(1);
	ck_assert_int_eq(mask, NCCL_EV_COLL | PROF_MASK_DETAIL);
	prof_finalize(ctx);
	prof_close();
	cfg.base_mask = -1;
	ck_assert_int_eq(prof_open(&cfg), 0);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	ck_assert_int_eq(mask, 0);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

START_TEST(test_pxn_proxy_op)
{
	struct seen s = {0};
	struct prof_descr d = {.type = NCCL_EV_PROXY_OP,
			       .parent = (void *)0xdeadbeef, /* not ours */
			       .pid = -1,
			       .peer = 1,
			       .nsteps = 3,
			       .chunk = 1000,
			       .is_send = 1,
			       .channel = 5};
	int mask = 0;
	void *ctx, *h;

	open_core(0, &s);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	prof_start(ctx, &h, &d);
	ck_assert_ptr_nonnull(h);
	prof_stop(h);
	prof_tick(1);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(s.r[0].nconns, 1);
	ck_assert_uint_eq(s.r[0].conn_chunks, 3); /* no steps: from the op */
	ck_assert_uint_eq(s.r[0].conn_bytes, 3000);
	ck_assert_uint_eq(s.r[0].conn_mask, 1u << 5);
	/* A peer outside the communicator is not a connection. */
	d.peer = 9;
	prof_start(ctx, &h, &d);
	prof_stop(h);
	prof_tick(1);
	ck_assert_uint_eq(s.r[1].nconns, 0);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

/*
 * A rank whose kernel never finishes: entered advances, completed stays,
 * the in-flight function is reported, and the proxy op that never moves
 * makes its peer "stuck" after an interval.
 */
START_TEST(test_progress_of_a_stuck_op)
{
	struct seen s = {0};
	struct prof_descr op = {.type = NCCL_EV_PROXY_OP,
				.peer = 1,
				.nsteps = 2,
				.chunk = 8,
				.is_send = 1};
	int mask = 0;
	void *ctx, *c, *k, *o;

	open_core(0, &s);
	op.pid = (int)getpid();
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	c = coll(ctx, 0, 1);
	k = kch(ctx, c, 0);
	prof_state(k, NCCL_ST_KERNEL_CH_STOP, 0, 2000);
	prof_stop(k);
	c = coll(ctx, 1, 1);
	k = kch(ctx, c, 0);
	op.parent = c;
	prof_start(ctx, &o, &op);
	fake_now += 3000000000ull;
	prof_tick(1);
	ck_assert_uint_eq(s.r[0].entered, 2);
	ck_assert_uint_eq(s.r[0].completed, 1);
	ck_assert_int_eq(s.r[0].inflight, C4CLIENT_ALLREDUCE);
	ck_assert_uint_eq(s.r[0].nstuck, 1);
	ck_assert_uint_eq(s.r[0].nconns, 0); /* nothing sent yet */
	prof_stop(o);
	prof_stop(k);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

/*
 * One collective call as NCCL 2.28 makes it: CollApi (graph: captured),
 * then its Coll.
 */
static void *
api_coll(void *ctx, int graph)
{
	struct prof_descr api = {.type = NCCL_EV_COLL_API, .graph = graph};
	struct prof_descr d = {.type = NCCL_EV_COLL,
			       .func = C4CLIENT_ALLREDUCE,
			       .bytes = 4096,
			       .nchannels = 1};
	void *a, *c;

	prof_start(ctx, &a, &api);
	ck_assert_ptr_nonnull(a);
	d.parent = a;
	prof_start(ctx, &c, &d);
	prof_stop(c);
	prof_stop(a);
	return c;
}

/*
 * Kernel-channel sampling (NCCL 2.28): each call's CollApi event sets
 * NCCL's mask for the call after and hands the call's own choice (what
 * NCCL copied, read here before the event as NCCL reads it) to its Coll.
 * Every call is sampled until the first report (call 0 by the mask NCCL
 * was given, then pairs from call 1); 1,000 calls a second and
 * a rate of 1 pair a second then leave a chance of 1 in 1,000.  Sampled
 * calls come in pairs and complete on their kernel channels, the others
 * when enqueued; gaps are only measured between neighbours.
 */
START_TEST(test_kernel_sampling)
{
	struct seen s = {0};
	struct prof_config cfg = {
		.interval_ms = 1000, .detail = 1, .kernel_sample = 1};
	struct prof_counters pc;
	unsigned sampled2 = 0, pairs2 = 0, run = 0, single = 0;
	int mask = 0;
	void *ctx;

	prof_set_clock(fake_clock);
	prof_set_sink(capture, &s);
	ck_assert_int_eq(prof_open(&cfg), 0);
	prof_init(&ctx, 9, &mask, NULL, 1, 2, 0);
	for (unsigned i = 0; i < 4000; i++) {
		int copied = (mask & NCCL_EV_KERNEL_CH) != 0;
		struct prof_descr kd = {.type = NCCL_EV_KERNEL_CH,
					.ptimer = 10000ull * (i + 1)};
		void *c = api_coll(ctx, 0), *k;

		if (copied) {
			kd.parent = c;
			prof_start(ctx, &k, &kd);
			prof_state(k, NCCL_ST_KERNEL_CH_STOP, 0,
				   10000ull * (i + 1) + 5000);
			prof_stop(k);
		}
		/* runs of sampled calls begun in the second phase */
		if (copied) {
			run++;
		} else if (run > 0) {
			if (i - run > 1000) {
				single += run % 2;
				pairs2 += run / 2;
			}
			run = 0;
		}
		if (i >= 1000)
			sampled2 += copied;
		if (i == 999) {
			fake_now += 1000000000ull;
			prof_tick(1);
		}
	}
	fake_now += 1000000000ull;
	prof_tick(1);
	ck_assert_int_eq(s.n, 2);
	/* first interval: every call sampled, every gap measured */
	ck_assert_uint_eq(s.r[0].last_completed_iv, 1000);
	ck_assert_uint_eq(s.r[0].op.kernel_n, 1000);
	ck_assert_uint_eq(s.r[0].op.gap_n, 999);
	/* then about 6 of 3,000: pairs, gaps within them only */
	ck_assert_uint_eq(s.r[1].last_entered, 4000);
	ck_assert_uint_eq(s.r[1].last_completed_iv, 4000);
	ck_assert_uint_gt(sampled2, 0);
	ck_assert_uint_lt(sampled2, 100);
	ck_assert_uint_eq(single, 0);
	ck_assert_uint_eq(s.r[1].op.kernel_n, sampled2);
	ck_assert_uint_ge(s.r[1].op.gap_n, pairs2);
	ck_assert_uint_le(s.r[1].op.gap_n, sampled2 / 2 + 1);
	prof_counters(&pc);
	ck_assert_uint_eq(pc.orphans, 0);
	ck_assert_uint_eq(pc.stale, 0);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

/* One sampled call and the unsampled ones after it (NCCL copied *mask). */
static void *
ks_call(void *ctx, int *mask, int sampled, int graph)
{
	/* what NCCL copied for this call, as if the call before chose it */
	if (sampled)
		*mask |= NCCL_EV_KERNEL_CH;
	else
		*mask &= ~NCCL_EV_KERNEL_CH;
	return api_coll(ctx, graph);
}

/*
 * Unsampled ops enqueued behind a sampled op that has not finished are not
 * done either (one communicator's ops finish in order); when it finishes,
 * they are.  A graph capture makes every call after it sampled.
 */
START_TEST(test_sampled_frontier_and_graph)
{
	struct seen s = {0};
	struct prof_config cfg = {
		.interval_ms = 1000, .detail = 1, .kernel_sample = 1};
	struct prof_counters pc;
	int mask = 0;
	void *ctx, *c1, *k;

	prof_set_clock(fake_clock);
	prof_set_sink(capture, &s);
	ck_assert_int_eq(prof_open(&cfg), 0);
	prof_init(&ctx, 11, &mask, NULL, 1, 2, 0);
	c1 = ks_call(ctx, &mask, 1, 0);
	for (int i = 0; i < 4; i++)
		ks_call(ctx, &mask, 0, 0);
	fake_now += 1000000000ull;
	prof_tick(1);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(s.r[0].entered, 5);
	ck_assert_uint_eq(s.r[0].completed, 0);
	ck_assert_int_eq(s.r[0].inflight, C4CLIENT_ALLREDUCE);
	/* the sampled op finishes on the GPU: all five are done */
	k = kch(ctx, c1, 0);
	prof_state(k, NCCL_ST_KERNEL_CH_STOP, 0, 2000);
	prof_stop(k);
	fake_now += 1000000000ull;
	prof_tick(1);
	ck_assert_uint_eq(s.r[1].completed, 5);
	ck_assert_int_eq(s.r[1].done_enq, 1);
	/* with nothing sampled in flight, unsampled ops are done at once */
	ks_call(ctx, &mask, 0, 0);
	fake_now += 1000000000ull;
	prof_tick(1);
	ck_assert_uint_eq(s.r[2].completed, 6);
	/* a capture: every call after it has kernel channels */
	ks_call(ctx, &mask, 0, 1);
	for (int i = 0; i < 3000; i++) {
		ck_assert_int_ne(mask & NCCL_EV_KERNEL_CH, 0);
		k = kch(ctx, ks_call(ctx, &mask, 1, 0), 0);
		prof_state(k, NCCL_ST_KERNEL_CH_STOP, 0, 2000);
		prof_stop(k);
	}
	prof_counters(&pc);
	ck_assert_uint_eq(pc.graph_full, 1);
	ck_assert_uint_eq(pc.calls, 3007);
	ck_assert_uint_eq(pc.calls_sampled, 3001);
	ck_assert_uint_eq(pc.orphans, 0);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

/*
 * The calls a process samples: bit i of out for call i.  Calls alternate
 * between a data-parallel communicator (dp, the same on every rank) and a
 * tensor-parallel one (tp, different on each rank).
 */
static void
ks_run(uint64_t dp, uint64_t tp, int rank, unsigned n, uint64_t *out)
{
	struct prof_config cfg = {
		.interval_ms = 1000, .detail = 1, .kernel_sample = 100};
	struct seen s = {0};
	int mask = 0;
	void *ctx[2];

	prof_set_clock(fake_clock);
	prof_set_sink(capture, &s);
	ck_assert_int_eq(prof_open(&cfg), 0);
	prof_init(&ctx[0], dp, &mask, NULL, 1, 2, rank);
	prof_init(&ctx[1], tp, &mask, NULL, 1, 2, 0);
	for (unsigned i = 0; i < n; i++) {
		struct prof_descr api = {.type = NCCL_EV_COLL_API};
		void *a;

		if (mask & NCCL_EV_KERNEL_CH)
			out[i / 64] |= 1ull << (i % 64);
		prof_start(ctx[i % 2], &a, &api);
		prof_stop(a);
		fake_now += 100000; /* 10,000 calls a second */
	}
	prof_finalize(ctx[1]);
	prof_finalize(ctx[0]);
	prof_close();
}

/*
 * Ranks that make the same calls sample the same ones (a sampled call's
 * host cost then delays them all alike), whatever other communicators
 * they interleave, in pairs, at about the rate asked for once the call
 * rate is known.  A new communicator does not change the choice.
 */
START_TEST(test_sampling_same_on_every_rank)
{
	enum { N = 8192 };
	static uint64_t a[N / 64], b[N / 64];
	unsigned na = 0, odd = 0, run = 0;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	ks_run(0x5eed, 0x1111, 0, N, a);
	ks_run(0x5eed, 0x2222, 1, N, b);
	for (unsigned i = 2048; i < N; i++) {
		int x = (a[i / 64] >> (i % 64)) & 1;

		na += x;
		if (x) {
			run++;
		} else {
			odd += run == 1;
			run = 0;
		}
	}
	ck_assert_int_eq(memcmp(a, b, sizeof(a)), 0);
	/* 10,000 calls/s for 100 pairs/s: a pair in 2^7 calls, ~96 here */
	ck_assert_uint_gt(na, 40);
	ck_assert_uint_lt(na, 250);
	ck_assert_uint_eq(odd, 0);
}
END_TEST

/* Channels that never reach nChannels still complete the op, late. */
START_TEST(test_settle_short_channels)
{
	struct seen s = {0};
	int mask = 0;
	void *ctx, *c, *k;

	open_core(0, &s);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	c = coll(ctx, 0, 4);
	k = kch(ctx, c, 0);
	prof_state(k, NCCL_ST_KERNEL_CH_STOP, 0, 9000);
	prof_stop(k);
	prof_tick(1);
	ck_assert_uint_eq(s.r[0].completed, 0);
	fake_now += 200000000ull;
	prof_tick(1);
	ck_assert_uint_eq(s.r[1].completed, 1);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

/*
 * NCCL numbers collectives per function: AllReduce 0 and Broadcast 0 are
 * two ops.  The plugin's ordinal tells them apart (entered 2, both done),
 * and a communicator it cannot observe leaves NCCL's shared mask alone.
 */
START_TEST(test_ordinal_across_functions)
{
	struct seen s = {0};
	struct prof_descr d = {.type = NCCL_EV_COLL, .seq = 0, .nchannels = 1};
	int mask, mask2;
	void *ctx, *ctx2, *c, *k;

	open_core(0, &s);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	mask2 = 12345;
	prof_init(&ctx2, 8, &mask2, NULL, 1, 2, 5); /* rank out of range */
	ck_assert_ptr_null(ctx2);
	ck_assert_int_eq(mask2, 12345);
	d.func = C4CLIENT_ALLREDUCE;
	prof_start(ctx, &c, &d);
	prof_stop(c);
	k = kch(ctx, c, 0);
	prof_state(k, NCCL_ST_KERNEL_CH_STOP, 0, 3000);
	prof_stop(k);
	d.func = C4CLIENT_BROADCAST;
	prof_start(ctx, &c, &d);
	prof_stop(c);
	k = kch(ctx, c, 0);
	prof_state(k, NCCL_ST_KERNEL_CH_STOP, 0, 3000);
	prof_stop(k);
	prof_tick(1);
	ck_assert_uint_eq(s.r[0].entered, 2);
	ck_assert_uint_eq(s.r[0].completed, 2);
	ck_assert_uint_eq(s.r[0].first_entered, 1);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

#define MT_THREADS 4
#define MT_OPS	   20000

struct mt {
	void *ctx;
	void *coll;
	int id;
};

static void *
mt_worker(void *arg)
{
	struct mt *m = arg;
	struct prof_descr op = {.type = NCCL_EV_PROXY_OP,
				.parent = m->coll,
				.peer = 1,
				.nsteps = 1,
				.chunk = 1,
				.is_send = 1};
	struct prof_descr st = {.type = NCCL_EV_PROXY_STEP};
	void *o, *p;
	int i;

	op.pid = (int)getpid();
	for (i = 0; i < MT_OPS; i++) {
		prof_start(m->ctx, &o, &op);
		if (o == NULL)
			continue;
		st.parent = o;
		prof_start(m->ctx, &p, &st);
		if (p != NULL) {
			prof_state(p, NCCL_ST_STEP_SEND_WAIT, 1, 0);
			prof_stop(p);
		}
		prof_stop(o);
	}
	return NULL;
}

START_TEST(test_many_threads)
{
	struct seen s = {0};
	struct prof_counters k;
	struct mt m[MT_THREADS];
	pthread_t t[MT_THREADS];
	int mask, i;
	void *ctx, *c;

	open_core(64, &s);
	prof_init(&ctx, 7, &mask, NULL, 1, 2, 0);
	c = coll(ctx, 0, 0);
	for (i = 0; i < MT_THREADS; i++) {
		m[i].ctx = ctx;
		m[i].coll = c;
		m[i].id = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, mt_worker, &m[i]),
				 0);
	}
	for (i = 0; i < 200; i++)
		prof_tick(0);
	for (i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	prof_tick(1);
	prof_counters(&k);
	ck_assert_uint_eq(k.stale, 0);
	/* Every op either arrived, or was dropped and counted. */
	ck_assert_uint_le(s.r[0].conn_chunks, (uint64_t)MT_THREADS * MT_OPS);
	ck_assert_uint_gt(s.r[0].conn_chunks + k.pool_drops + k.ring_drops, 0);
	prof_finalize(ctx);
	prof_close();
}
END_TEST

START_TEST(test_names)
{
	ck_assert_int_eq(names_func_code("AllReduce"), C4CLIENT_ALLREDUCE);
	ck_assert_int_eq(names_func_code("ReduceScatter"),
			 C4CLIENT_REDUCESCATTER);
	ck_assert_int_eq(names_func_code("Bogus"), C4CLIENT_FUNC_OTHER);
	ck_assert_int_eq(names_func_code(NULL), 0);
	ck_assert_int_eq(names_algo_code("RING"), C4CLIENT_ALGO_RING);
	ck_assert_int_eq(names_algo_code("NVLSTree"), C4CLIENT_ALGO_NVLS_TREE);
	ck_assert_int_eq(names_proto_code("LL128"), C4CLIENT_PROTO_LL128);
	ck_assert_int_eq(names_proto_code("x"), 0);
	ck_assert_uint_eq(names_dtype_size("ncclFloat32"), 4);
	ck_assert_uint_eq(names_dtype_size("ncclBfloat16"), 2);
	ck_assert_uint_eq(names_dtype_size("ncclUint64"), 8);
	ck_assert_uint_eq(names_dtype_size("ncclInt8"), 1);
	ck_assert_uint_eq(names_dtype_size("ncclFloat8e5m2"), 1);
	ck_assert_uint_eq(names_dtype_size("what"), 0);
}
END_TEST

static Suite *
prof_suite(void)
{
	Suite *s = suite_create("nccl-prof");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_replay_fixture);
	tcase_add_test(tc, test_replay_gpu_socket);
	tcase_add_test(tc, test_replay_gpu_p2p);
	tcase_add_test(tc, test_replay_rejects_garbage);
	tcase_add_test(tc, test_inactive_when_closed);
	tcase_add_test(tc, test_stale_and_double_stop);
	tcase_add_test(tc, test_pool_exhaustion_counts_drops);
	tcase_add_test(tc, test_mask_is_live);
	tcase_add_test(tc, test_events_list);
	tcase_add_test(tc, test_pxn_proxy_op);
	tcase_add_test(tc, test_progress_of_a_stuck_op);
	tcase_add_test(tc, test_settle_short_channels);
	tcase_add_test(tc, test_kernel_sampling);
	tcase_add_test(tc, test_sampled_frontier_and_graph);
	tcase_add_test(tc, test_sampling_same_on_every_rank);
	tcase_add_test(tc, test_ordinal_across_functions);
	tcase_add_test(tc, test_many_threads);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(prof_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
