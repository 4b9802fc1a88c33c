/*
 * store_int.h - what the store's three files share (store.c: the loop's
 * side; store_writer.c: the SQL of every write; store_load.c: loading).
 * Nothing outside them includes it.
 */
#ifndef C4P_STORE_INT_H
#define C4P_STORE_INT_H

#include <stdbool.h>

#include <event2/event.h>
#include <sqlite3.h>

#include "sqlq.h"
#include "store.h"

#define STORE_SCHEMA_VERSION 1
#define STORE_BUSY_MS	     5000
#define STORE_CHECKPOINT_MS  1000 /* WAL copied back into the file */
/*
 * Operations submitted and not committed.  The loop's writes are small
 * and commit within milliseconds; a queue this long means the disk is
 * gone, and the master stops rather than answer without recording.
 */
#define STORE_QUEUE_MAX	   1000000
#define STORE_RETRY_MS	   100	/* the writer retries a failed commit ... */
#define STORE_RETRY_MAX_MS 5000 /* ... while the loop stops the daemon */
/*
 * WAL frames (4 KiB) after which the writer itself finishes the copy when
 * no write waits: under a steady stream the checkpointer never catches up
 * completely, and only a complete checkpoint lets the WAL start over.
 * Most frames are copied already, so this pause is short and rare.
 */
#define STORE_WAL_MAX_FRAMES 16384
/*
 * How long the idle writer polls its queue before it sleeps on the
 * condition variable.  A request that arrives within this window is taken
 * without a futex wake-up of a sleeping thread: on a virtual machine the
 * wake-up of an idle vCPU (an IPI through the hypervisor) costs tens of
 * microseconds, more than the commit itself.  Bounded so that an idle
 * master does not burn a core.
 */
#define STORE_SPIN_NS 100000L
/*
 * The loop waits (polling, for at most STORE_SPIN_NS) for the commit of
 * its own writes only when at most this many are uncommitted and it has
 * handled every input that was ready: a lone request then gets its answer
 * without the loop going to sleep and being woken again (the same costly
 * cross-vCPU wake-up).  Larger groups take longer than the bound anyway.
 */
#define STORE_AWAIT_OPS_MAX 8
/*
 * The loop commits a round's operations itself (see store.c) only when
 * they are at most this many: the transaction of a few rows takes 10-20
 * microseconds, less than two thread wake-ups; a larger group would hold
 * the loop up and goes to the writer, which overlaps it with the loop.
 */
#define STORE_INLINE_OPS_MAX 8
/* Nor when they carry more QPs or catalog records than this (blobs). */
#define STORE_INLINE_QPS_MAX 256

enum store_op_kind {
	STORE_OP_JOB,
	STORE_OP_PUT,
	STORE_OP_RENEW,
	STORE_OP_DEL,
	STORE_OP_DEL_JOB,
	STORE_OP_EXPIRE,
	STORE_OP_MOVE,
	STORE_OP_LINK,
	STORE_OP_CATALOG,
};

/* One QP as stored in req.qps (native byte order: the file is local). */
struct store_qp {
	uint64_t qp_id;
	uint32_t sip, dip, weight;
	uint32_t src_port, dst_port, up, down;
	uint16_t sport;
	uint8_t rside, side, stranded;
	uint8_t home; /* a fallback's home side + 1; 0: home is side */
	uint8_t pad[2];
};

/* One catalog record as stored in catalog.recs. */
struct store_crec {
	uint32_t src_port, dst_port, up, down;
	uint16_t sport, loss;
	uint8_t origin, pad[3];
};

/* One write: an operation of the store's queue (sqlq.h). */
struct store_op {
	struct sqlq_op op; /* first: the queue hands op back */
	enum store_op_kind kind;
	char key[ALLOC_REQID_MAX];
	uint64_t a, b; /* job id / expires / now / link / ... */
	size_t n;
	void *blob; /* store_qp[n] or store_crec[n] */
	struct alloc_change ch;
	struct catalog_key ck;
};

/* The store: the queue holds the connection, the threads, the writes. */
struct c4p_store {
	struct sqlq *q;
	struct event_base *base;
	uint64_t last_seq;     /* the newest operation's sequence number */
	bool lost;	       /* an operation could not be queued */
	struct event *fail_ev; /* stops the loop after a lost operation */
	void (*cb)(uint64_t, void *);
	void *cb_arg;
};

/* ---- store_writer.c */
/*
 * The queue's run callback of every operation (sqlq_op.run): writes op
 * inside the open transaction; 0, or -1 (logged).  Changes only the
 * database.
 */
int store_writer_run_op(struct sqlq *q, struct sqlq_op *op);
/* Frees an operation and its blob (sqlq_op.free); on any thread. */
void store_writer_free_op(struct sqlq_op *op);

#endif
