/*
 * consumer.h - the aggregation side of the plugin core: drains the
 * producers' rings and joins their records, by communicator and op
 * ordinal, into each communicator's per-interval aggregate.
 *
 * Threads.  Every function here runs on the aggregation thread, or on
 * the thread that calls prof_tick when there is none (tests, replay):
 * one thread at a time, never on NCCL's threads.  The aggregate
 * (struct consumer_comm, a communicator's cons field) is touched by that
 * thread alone, and by report.c on the same thread.
 */
#ifndef C4_CONSUMER_H
#define C4_CONSUMER_H

#include <stdint.h>

#include "prof.h"
#include "sketch.h"

struct prof_comm;

/* One c4client_func's collectives in the interval. */
struct consumer_func {
	uint64_t count, bytes;
	int algo, proto;
	uint32_t channels;
	struct sketch kernel, gap, enq;
};

/* A collective entered and not yet known to be complete. */
struct consumer_flight {
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
struct consumer_timed {
	uint64_t seq; /* 0: free */
	uint32_t chunks;
	uint64_t first, sum, t_last;
};

/* Traffic with one peer rank. */
struct consumer_peer {
	struct consumer_timed
		*timed[2]; /* [is_send]; PROF_TIMED each, lazily */
	uint64_t bytes_steps, bytes_ops, chunks_steps, chunks_ops, chmask;
	struct sketch xfer;
	int used, algo;
	int64_t open_tx, open_rx, pending_tx;
	uint64_t last_tx, last_rx;
};

/* A communicator's aggregate. */
struct consumer_comm {
	struct consumer_func ops[PROF_FUNCS];
	struct consumer_flight flight[PROF_INFLIGHT];
	struct consumer_peer *peers;
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

/*
 * Sets up the zeroed aggregate a of a communicator of nranks ranks: its
 * sketches and its peer table, which a owns.  0, or -1 on ENOMEM (a may
 * then hold part of what it needs: consumer_free releases it).  Called
 * by comm_new before the communicator is published, so on whichever
 * thread creates it.
 */
int consumer_init(struct consumer_comm *a, int nranks);

/*
 * Releases what consumer_init allocated in a (nranks as given there),
 * the timing tables included; a itself is the caller's.  On the thread
 * that frees the communicator, once no producer can reach it.
 */
void consumer_free(struct consumer_comm *a, int nranks);

/*
 * Empties every ring into the communicators' aggregates.  A ring that
 * yields nothing and whose thread has exited goes back to the free list
 * for another thread to claim.  Records of a communicator no longer in
 * prof_core.comms are dropped.  Changes no counter of the producers.
 */
void consumer_drain(void);

/*
 * Ends the waiting for kernel channels that stopped arriving: an op with
 * some channels and none for PROF_KCH_SETTLE_NS before now is complete
 * (NCCL overstated nChannels).  Moves c's completion frontier; called
 * before c's interval is reported.
 */
void consumer_settle(struct prof_comm *c, uint64_t now);

/*
 * Clears c's per-interval sums (op counts and sketches, waits, traffic)
 * after its report; what holds since the start (progress, flights,
 * timing tables, counters) stays.
 */
void consumer_reset(struct prof_comm *c);

/*
 * Forgets the communicators NCCL finalized: their last records have been
 * drained.  Deregisters each from the client session, adds its counters
 * to prof_core.dead, removes it from prof_core.comms and frees it.
 */
void consumer_reap(void);

#endif
