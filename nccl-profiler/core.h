/*
 * core.h - the data the plugin core's files share: the record a producer
 * hands the consumer, the per-communicator state, the per-thread rings and
 * the process-wide state (prof_core, defined in prof.c).  No functions.
 *
 * Who writes what.  NCCL's threads (producer.c) write the Coll slots, the
 * child records and the rings' tails; the aggregation thread (consumer.c,
 * report.c, or the test through prof_tick) owns each communicator's cons
 * field, the rings' heads and the consumer block of prof_core.
 * open/close/init and finalize serialise on prof_core.lock; events never
 * take it.
 */
#ifndef C4_CORE_H
#define C4_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "consumer.h"
#include "pool.h"
#include "prof.h"
#include "ring.h"

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

/* What a producer measured, as it travels through a ring. */
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
	struct consumer_comm cons; /* the consumer's */
};

enum { TRING_FREE, TRING_OWNED };

struct prof_tring {
	struct ring ring;
	_Atomic int state;
	_Atomic pid_t tid;
};

struct prof_core {
	pthread_mutex_t lock; /* open/close/init/finalize, never events */
	int open;
	struct prof_config cfg;
	char *socket_path, *job_id, *token, *detail_file;
	_Atomic uint64_t epoch;
	pid_t pid;
	_Atomic(struct prof_comm *) comms[PROF_COMMS_MAX];
	struct prof_tring rings[PROF_RINGS_MAX];
	_Atomic uint64_t no_ring;
	_Atomic int detail;
	int base_mask; /* events asked for whatever the detail */
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
	/* recording (record.c) */
	FILE *rec;
	pthread_mutex_t rec_lock;
};

/* The one process-wide state, defined and reset by prof.c. */
extern struct prof_core prof_core;

#endif
