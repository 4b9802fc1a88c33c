/*
 * prof.h - the core of the NCCL profiler plugin, independent of the ABI
 * version: per-communicator event records, the handoff from NCCL's
 * threads to the aggregation thread, and the per-interval summaries
 * handed to the client library.
 *
 * Threads.  prof_start/prof_stop/prof_state run on NCCL's threads (the
 * thread issuing collectives and the proxy threads).  They never block and
 * never allocate: records come from fixed pools sized at prof_init, and
 * what is measured is pushed into a ring owned by the calling thread (one
 * of PROF_RINGS_MAX single-producer rings, claimed on the thread's first
 * event).  Every loss (pool empty, ring full, no ring left, stale handle)
 * is counted.  The aggregation thread (or the test, through prof_tick)
 * drains the rings every PROF_DRAIN_MS, builds one report per interval and
 * hands it to the sink (c4client_report by default).
 *
 * Handles.  The handles returned to NCCL are not pointers: they encode the
 * communicator's slot, the record's kind and index, and a generation, so
 * a handle that outlived its record is recognised and counted instead of
 * corrupting a reused one.  Coll records are a ring of PROF_COLLS_DEFAULT
 * slots per communicator that children read with a sequence lock: a Coll's
 * stop means "enqueued", its kernel channels and proxy operations come
 * later on other threads and look up the Coll's sequence number then.
 *
 * Sequence numbers.  NCCL's coll.seqNumber counts per function
 * (comm->seqNumber[func]), so it cannot order an AllReduce against a
 * Broadcast.  The plugin reports its own ordinal instead: the number of
 * Coll events of the communicator so far, from 1.  It is the same on
 * every rank because every rank must issue the same collectives in the
 * same order; progress markers and first/last seq use it.
 *
 * Files.  prof.c: these entry points and the process-wide state (core.h);
 * producer.c: the callbacks; consumer.c: the drain and the aggregates;
 * report.c: the interval's report; sample.c: kernel-channel sampling;
 * record.c and replay.c: recordings; trace.c: the lines on stderr;
 * names.c: NCCL's names; comm.c, ring.c, pool.c: the data structures.
 */
#ifndef C4_PROF_H
#define C4_PROF_H

#include <stdint.h>

#include "c4client.h"
#include "nccl_abi.h"

#define PROF_COMMS_MAX	      4096u  /* communicators alive at once */
#define PROF_RINGS_MAX	      32u    /* NCCL threads that report at once */
#define PROF_RING_DEFAULT     16384u /* records per thread ring */
#define PROF_POOL_DEFAULT     16384u /* kernel-channel/proxy records per comm */
#define PROF_COLLS_DEFAULT    1024u  /* Coll slots per comm (power of two) */
#define PROF_INFLIGHT	      1024u  /* ops tracked until complete, per comm */
#define PROF_INTERVAL_DEFAULT 1000u  /* ms */
#define PROF_INTERVAL_MIN     10u
#define PROF_INTERVAL_MAX     600000u
#define PROF_DRAIN_MS	      10u   /* how often the rings are emptied */
#define PROF_FUNCS	      16u   /* c4client_func values 0..15 */
#define PROF_RING_RETRY	      4096u /* events before a ringless thread retries */
#define PROF_NAME_MAX	      256u /* longest comm name registered (MSG_ID_MAX) */
#define PROF_TIMED	      64u /* ops timed at once per peer and direction */
#define PROF_TIMED_REPORT     32u /* timed ops reported per conn and interval */
#define PROF_KSAMPLE_DEFAULT  500u /* sampled pairs of calls a second */

/* Event kinds the plugin asks for; ProxyStep only with detail on. */
#define PROF_MASK_BASE	 (NCCL_EV_COLL | NCCL_EV_KERNEL_CH | NCCL_EV_PROXY_OP)
#define PROF_MASK_DETAIL NCCL_EV_PROXY_STEP

/* One descriptor, whatever the ABI version (plugin.c converts). */
struct prof_descr {
	int type; /* enum nccl_abi_event_type */
	void *parent;
	int rank;
	/* Coll */
	uint64_t seq;
	int func, algo, proto; /* c4client enums; 0 unknown */
	uint64_t count, bytes;
	uint32_t nchannels;
	/* ProxyOp */
	int pid, channel, peer, nsteps, chunk, is_send;
	/* ProxyStep */
	int step;
	/* KernelCh (channel above) */
	uint64_t ptimer;
	/* CollApi: the call is being captured into a CUDA graph */
	int graph;
};

struct prof_config {
	const char *socket_path; /* NULL: no client session */
	const char *job_id;
	const char *token;
	uint32_t interval_ms;
	uint32_t ring_cap, pool_cap, colls_cap;
	int base_mask; /* events asked for always; 0 PROF_MASK_BASE, <0 none */
	int detail;    /* ProxyStep on at start */
	const char *detail_file; /* detail on while this file exists */
	const char *record_path; /* C4_PROFILER_RECORD */
	int thread;		 /* 0: the caller drives prof_tick */
	int stats; /* 1: counters on stderr at close; 2: and per interval */
	/* kernel-channel events for about this many pairs of collective
	 * calls a second (NCCL 2.28+, ProfilerV5); 0: for every call */
	uint32_t kernel_sample;
};

struct prof_counters {
	uint64_t events, ignored, stale, pool_drops, ring_drops, no_ring,
		orphans, timed_lost, reports, reports_failed;
	/* collective calls seen by CollApi events, those of them with
	 * kernel-channel events, and whether a graph capture made every
	 * call sampled from then on */
	uint64_t calls, calls_sampled, graph_full;
};

/* The sink gets each interval's report; it must copy what it keeps. */
typedef void (*prof_sink_fn)(const struct c4client_report *r, void *arg);

/*
 * Opens the process-wide core: copies cfg (and the strings it points to;
 * the caller keeps its own), allocates the rings, opens the recording
 * and the client session when socket_path and job_id are set, and starts
 * the aggregation thread when cfg->thread is set.  Reads nothing from the
 * environment (plugin.c does).  0, or -1 when already open or on failure
 * (nothing is left open).  Any thread; takes the core's lock.
 */
int prof_open(const struct prof_config *cfg);

/*
 * Closes the core: stops the thread, drains and sends one last report,
 * prints the counters when asked (stats, recording), closes the session
 * and frees every communicator and ring.  Handles and contexts given to
 * NCCL are void afterwards.  A no-op when not open.  Not on the
 * aggregation thread; no callback may run meanwhile.
 */
void prof_close(void);

/*
 * Test and replay hooks, set before prof_open and cleared after
 * prof_close: a clock (ns) instead of CLOCK_MONOTONIC, which also dates
 * reports instead of CLOCK_REALTIME (NULL: the real clocks); a sink that
 * gets each report instead of c4client_report (NULL: the client).  The
 * core keeps the pointers, not what they point to.
 */
void prof_set_clock(uint64_t (*now)(void));
void prof_set_sink(prof_sink_fn fn, void *arg);

/*
 * Turns ProxyStep events on or off; communicators' masks follow at the
 * next report.  Any thread.
 */
void prof_set_detail(int on);

/* The plugin's clock (ns): the test clock, else CLOCK_MONOTONIC. */
uint64_t prof_now(void);

/*
 * The plugin's clock read coarsely (CLOCK_MONOTONIC_COARSE, or the test
 * clock): dates records whose timing comes from GPU timers.  Any thread.
 */
uint64_t prof_now_coarse(void);

/* CLOCK_MONOTONIC and CLOCK_REALTIME (ns), whatever the test clock. */
uint64_t prof_mono(void);
uint64_t prof_realtime(void);

/*
 * NCCL's callbacks (producer.h says what each does).  0 = ncclSuccess,
 * always: the plugin never fails NCCL.  On NCCL's threads; event
 * callbacks never block or allocate.
 */
int prof_init(void **ctx, uint64_t comm_hash, int *mask, const char *name,
	      int nnodes, int nranks, int rank);
int prof_start(void *ctx, void **handle, const struct prof_descr *d);
int prof_stop(void *handle);
int prof_state(void *handle, int state, uint64_t trans_size, uint64_t ptimer);
int prof_finalize(void *ctx);

/*
 * Drains the rings; with report set, also ends the interval: sends its
 * report, reaps finalized communicators, starts the next interval, polls
 * the detail switch and adapts sampling, flushes the recording.  On the
 * aggregation thread, or on the caller's when there is none (cfg.thread
 * 0): never two at once.
 */
void prof_tick(int report);

/*
 * Fills *out with the counters since prof_open, of live and reaped
 * communicators alike.  Reads only; exact on the aggregation thread (or
 * when none runs), an approximation elsewhere.
 */
void prof_counters(struct prof_counters *out);

#endif
