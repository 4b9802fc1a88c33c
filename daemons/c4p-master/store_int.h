/*
 * store_int.h - what the store's three files share (store.c: the loop's
 * side; store_writer.c: the threads and the SQL; store_load.c: loading).
 * Nothing outside them includes it.
 */
#ifndef C4P_STORE_INT_H
#define C4P_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <event2/event.h>
#include <sqlite3.h>

#include "store.h"

#define STORE_SCHEMA_VERSION   1
#define STORE_BUSY_MS	       5000
#define STORE_STMTS_MAX	       16
#define STORE_CHECKPOINT_MS    1000 /* WAL copied back into the file */
#define STORE_CHECKPOINT_TRIES 16   /* quick repeats to catch up fully */
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
 * The loop commits a round's operations itself (see the top) only when
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
	uint8_t rside, side, stranded, pad[3];
};

/* One catalog record as stored in catalog.recs. */
struct store_crec {
	uint32_t src_port, dst_port, up, down;
	uint16_t sport, loss;
	uint8_t origin, pad[3];
};

struct store_op {
	struct store_op *next;
	enum store_op_kind kind;
	uint64_t seq;
	char key[ALLOC_REQID_MAX];
	uint64_t a, b; /* job id / expires / now / link / ... */
	size_t n;
	void *blob; /* store_qp[n] or store_crec[n] */
	struct alloc_change ch;
	struct catalog_key ck;
};

struct store_stmt {
	const char *sql; /* a string literal: compared by address */
	sqlite3_stmt *st;
};

struct c4p_store {
	sqlite3 *db;
	/* stmts and wal_frames: the thread that holds the connection only */
	struct store_stmt stmts[STORE_STMTS_MAX];
	char path[4096];
	pthread_t thr, ckpt_thr;
	bool ckpt_started, sync_full;
	int wal_frames;		/* the WAL's length after the last commit */
	int wal_max;		/* STORE_WAL_MAX_FRAMES, or the test's */
	pthread_cond_t ckpt_cv; /* under mu, with stop */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store_op *head, *tail;
	bool stop, failed, started;
	bool sleeping; /* under mu: the writer waits on cv */
	bool writing;  /* under mu: the connection is taken for a group */
	bool valve;    /* under mu: the loop asks for store_writer_wal_valve */
	_Atomic bool queued; /* a hint for the polling writer: head != NULL */
	_Atomic uint64_t committed_hint; /* committed, for the polling loop */
	struct event *await_ev; /* loop: end of a round (commit or hand over) */
	struct store_op *stage, *stage_tail; /* loop only: not handed over */
	size_t nstage, nstage_qps;	     /* loop only: ops, QPs staged */
	uint64_t next_seq;		     /* loop only */
	uint64_t committed;		     /* under mu */
	uint64_t commits;		     /* under mu */
	uint64_t inline_commits;      /* under mu: of those, by the loop */
	struct http_hist commit_hist; /* under mu: BEGIN to COMMIT, s */
	struct event *done_ev;
	struct event_base *base;
	void (*cb)(uint64_t, void *);
	void *cb_arg;
};

/* ---- store.c */
/* Frees one operation (and its blob). */
void store_op_free(struct store_op *op);

/* ---- store_writer.c */
/* Runs sql on db outside any prepared statement; 0, or -1 (logged). */
int store_writer_exec(sqlite3 *db, const char *sql, const char *what);
/*
 * Writes batch in one transaction, frees it and records the outcome (see
 * store_writer.c); the caller holds the connection.
 */
bool store_writer_write(struct c4p_store *s, struct store_op *batch,
			bool on_loop);
/* Polls done(s) for up to STORE_SPIN_NS; 1 when it held, 0 on time. */
int store_writer_spin(struct c4p_store *s, bool (*done)(struct c4p_store *));
/* SQLite's WAL hook (sqlite3_wal_hook) recording the WAL's length. */
int store_writer_wal_hook(void *arg, sqlite3 *db, const char *name, int frames);
/* Starts the writer and checkpointer threads; 0, or -1 with err. */
int store_writer_start(struct c4p_store *s, char *err, size_t errlen);

#endif
