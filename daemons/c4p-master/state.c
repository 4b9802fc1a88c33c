/*
 * state.c - the c4p-master's SQLite store (state_dir/c4p-master.db).
 *
 * Tables: job (id, name); req (one row per request: key, job, lease end,
 * QP count and a blob of its QPs); link (cable health); catalog
 * (records learnt from probes; hash-model records are recomputed).
 *
 * Every change is an operation with a sequence number.  The loop sends an
 * answer that depends on a change only after that change committed, so a
 * port the master handed out is on disk (in the WAL) before anyone can use
 * it: after kill -9 the restarted master knows it and never hands the same
 * slot out twice.  A commit is in the WAL file (the kernel's page cache)
 * when COMMIT returns, which survives the process dying; sync_full
 * (synchronous=FULL) also survives power loss, at the cost of an fsync per
 * group.  Without sync_full the connection runs synchronous=OFF: in WAL
 * mode NORMAL adds fsyncs only to checkpoints (which run without them here
 * anyway) and to the first commit after the WAL starts over, where the
 * fsync of the new WAL header writes back the whole WAL (tens of
 * milliseconds measured) on whichever thread commits next: the loop too.
 *
 * Who commits.  The loop keeps the operations of one round of callbacks
 * to itself (the stage) and, once every input that was ready is handled:
 *
 *  - when the stage is small (STATE_INLINE_OPS_MAX, STATE_INLINE_QPS_MAX)
 *    and the writer thread is idle (nothing queued, no group in hand), it
 *    commits the stage itself in one transaction and answers at once: a
 *    lone request then costs no thread hand-off at all (each one a
 *    cross-vCPU wake-up on a virtual machine, more than the commit);
 *  - otherwise it hands the stage to the writer thread, which takes
 *    everything queued, writes it in one transaction (group commit) and
 *    wakes the loop with the highest sequence number committed.  A stage
 *    that stops being small goes to the writer at once, so that it commits
 *    while the loop still works through the round; so does a deletion by
 *    job or by lease (many rows), and with sync_full every operation (an
 *    fsync never runs on the loop).
 *
 * The one connection (opened NOMUTEX: SQLite does not serialise it) is
 * used by one thread at a time: the writer marks it taken (writing, under
 * mu) in the same critical section in which it empties the queue, and
 * waits while the loop holds it; the loop commits only when, under mu, the
 * queue is empty, the writer holds no group and no checkpoint it asked
 * for (valve) is pending.  Groups therefore commit in sequence order,
 * whoever writes them, and never meet a checkpoint.
 *
 * Checkpoints never run inside a commit: a checkpointer thread on its own
 * connection copies the WAL back every STATE_CHECKPOINT_MS, and the writer
 * completes a checkpoint itself when the WAL passes STATE_WAL_MAX_FRAMES
 * and nothing waits, so that the WAL starts over instead of growing.
 *
 * A write that fails is fatal: the loop is stopped, since a master that
 * cannot record allocations must not answer with them.
 */
#define LOG_SUBSYS "c4p-store"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <sqlite3.h>

#include "c4p.h"
#include "log.h"

#define STATE_SCHEMA_VERSION   1
#define STATE_BUSY_MS	       5000
#define STATE_STMTS_MAX	       16
#define STATE_CHECKPOINT_MS    1000 /* WAL copied back into the file */
#define STATE_CHECKPOINT_TRIES 16   /* quick repeats to catch up fully */
/*
 * WAL frames (4 KiB) after which the writer itself finishes the copy when
 * no write waits: under a steady stream the checkpointer never catches up
 * completely, and only a complete checkpoint lets the WAL start over.
 * Most frames are copied already, so this pause is short and rare.
 */
#define STATE_WAL_MAX_FRAMES 16384
/*
 * How long the idle writer polls its queue before it sleeps on the
 * condition variable.  A request that arrives within this window is taken
 * without a futex wake-up of a sleeping thread: on a virtual machine the
 * wake-up of an idle vCPU (an IPI through the hypervisor) costs tens of
 * microseconds, more than the commit itself.  Bounded so that an idle
 * master does not burn a core.
 */
#define STATE_SPIN_NS 100000L
/*
 * The loop waits (polling, for at most STATE_SPIN_NS) for the commit of
 * its own writes only when at most this many are uncommitted and it has
 * handled every input that was ready: a lone request then gets its answer
 * without the loop going to sleep and being woken again (the same costly
 * cross-vCPU wake-up).  Larger groups take longer than the bound anyway.
 */
#define STATE_AWAIT_OPS_MAX 8
/*
 * The loop commits a round's operations itself (see the top) only when
 * they are at most this many: the transaction of a few rows takes 10-20
 * microseconds, less than two thread wake-ups; a larger group would hold
 * the loop up and goes to the writer, which overlaps it with the loop.
 */
#define STATE_INLINE_OPS_MAX 8
/* Nor when they carry more QPs or catalog records than this (blobs). */
#define STATE_INLINE_QPS_MAX 256

enum state_op_kind {
	ST_JOB,
	ST_PUT,
	ST_RENEW,
	ST_DEL,
	ST_DEL_JOB,
	ST_EXPIRE,
	ST_MOVE,
	ST_LINK,
	ST_CATALOG,
};

/* One QP as stored in req.qps (native byte order: the file is local). */
struct state_qp {
	uint64_t qp_id;
	uint32_t sip, dip, weight;
	uint32_t src_port, dst_port, up, down;
	uint16_t sport;
	uint8_t rside, side, stranded, pad[3];
};

/* One catalog record as stored in catalog.recs. */
struct state_crec {
	uint32_t src_port, dst_port, up, down;
	uint16_t sport, loss;
	uint8_t origin, pad[3];
};

struct state_op {
	struct state_op *next;
	enum state_op_kind kind;
	uint64_t seq;
	char key[C4P_KEY_MAX];
	uint64_t a, b; /* job id / expires / now / link / ... */
	size_t n;
	void *blob; /* state_qp[n] or state_crec[n] */
	struct alloc_change ch;
	struct catalog_key ck;
};

struct state_stmt {
	const char *sql; /* a string literal: compared by address */
	sqlite3_stmt *st;
};

struct state {
	sqlite3 *db;
	/* stmts and wal_frames: the thread that holds the connection only */
	struct state_stmt stmts[STATE_STMTS_MAX];
	char path[4096];
	pthread_t thr, ckpt_thr;
	bool ckpt_started, sync_full;
	int wal_frames;		/* the WAL's length after the last commit */
	int wal_max;		/* STATE_WAL_MAX_FRAMES, or the test's */
	pthread_cond_t ckpt_cv; /* under mu, with stop */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct state_op *head, *tail;
	bool stop, failed, started;
	bool sleeping;	     /* under mu: the writer waits on cv */
	bool writing;	     /* under mu: the connection is taken for a group */
	bool valve;	     /* under mu: the loop asks for state_wal_valve */
	_Atomic bool queued; /* a hint for the polling writer: head != NULL */
	_Atomic uint64_t committed_hint; /* committed, for the polling loop */
	struct event *await_ev; /* loop: end of a round (commit or hand over) */
	struct state_op *stage, *stage_tail; /* loop only: not handed over */
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

static void state_wal_valve(struct state *s);

static const char state_ddl[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA wal_autocheckpoint=0;"
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	"CREATE TABLE IF NOT EXISTS job(id INTEGER PRIMARY KEY,"
	" name TEXT UNIQUE NOT NULL);"
	"CREATE TABLE IF NOT EXISTS req(key TEXT PRIMARY KEY,"
	" job INTEGER NOT NULL, expires INTEGER NOT NULL,"
	" nqp INTEGER NOT NULL, qps BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS link(id INTEGER PRIMARY KEY,"
	" up INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS catalog(sip INTEGER, dip INTEGER,"
	" side INTEGER, recs BLOB NOT NULL, PRIMARY KEY(sip, dip, side));";

/* ---- writing (the writer thread, or the loop when the writer is idle)
 * ----------------------------------------------------------------------- */

static int
state_exec(sqlite3 *db, const char *sql, const char *what)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		log_errx("%s: %s", what, msg ? msg : "?");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* The writer's prepared statement for sql (prepared once, kept). */
static sqlite3_stmt *
state_stmt(struct state *s, const char *sql)
{
	for (int i = 0; i < STATE_STMTS_MAX; i++) {
		struct state_stmt *e = &s->stmts[i];

		if (e->sql == sql)
			return e->st;
		if (e->sql == NULL) {
			if (sqlite3_prepare_v3(s->db, sql, -1,
					       SQLITE_PREPARE_PERSISTENT,
					       &e->st, NULL) != SQLITE_OK)
				return NULL;
			e->sql = sql;
			return e->st;
		}
	}
	return NULL;
}

/*
 * Runs sql (a string literal) with the key as text, then nv integers,
 * then a blob, bound in that order.  0 or -1.
 */
static int
state_run(struct state *s, const char *sql, const char *key, const int64_t *v,
	  int nv, const void *blob, size_t bloblen)
{
	sqlite3_stmt *st = state_stmt(s, sql);
	int i = 1, rc = -1;

	if (st == NULL)
		goto out;
	if (key != NULL)
		sqlite3_bind_text(st, i++, key, -1, SQLITE_STATIC);
	for (int k = 0; k < nv; k++)
		sqlite3_bind_int64(st, i++, v[k]);
	if (blob != NULL)
		sqlite3_bind_blob(st, i++, blob, (int)bloblen, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_DONE)
		rc = 0;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
out:
	if (rc < 0)
		log_errx("store: %s: %s", sql, sqlite3_errmsg(s->db));
	return rc;
}

/* Rewrites one QP of a stored request after a move. */
static int
state_apply_move(struct state *s, const struct state_op *op)
{
	sqlite3 *db = s->db;
	const struct alloc_change *c = &op->ch;
	sqlite3_stmt *st = NULL;
	struct state_qp *q = NULL;
	size_t n = 0;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT qps FROM req WHERE key = ?", -1, &st,
			       NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW) {
		rc = 0; /* released meanwhile: nothing to move */
		goto out;
	}
	n = (size_t)sqlite3_column_bytes(st, 0) / sizeof(*q);
	q = malloc(n * sizeof(*q) + 1);
	if (q == NULL)
		goto out;
	memcpy(q, sqlite3_column_blob(st, 0), n * sizeof(*q));
	sqlite3_finalize(st);
	st = NULL;
	if (c->index < n) {
		struct state_qp *e = &q[c->index];

		e->stranded = c->kind == ALLOC_STRANDED;
		if (c->kind == ALLOC_MOVED) {
			e->sport = c->new_sport;
			e->src_port = c->new_path.src_port;
			e->dst_port = c->new_path.dst_port;
			e->up = c->new_path.up;
			e->down = c->new_path.down;
		}
	}
	rc = state_run(s, "UPDATE req SET qps = ?2 WHERE key = ?1", op->key,
		       NULL, 0, q, n * sizeof(*q));
out:
	if (st != NULL)
		sqlite3_finalize(st);
	free(q);
	return rc;
}

static int
state_apply(struct state *s, const struct state_op *op)
{
	int64_t v[4];

	switch (op->kind) {
	case ST_JOB:
		v[0] = (int64_t)op->a;
		return state_run(s,
				 "INSERT OR REPLACE INTO job(name, id) "
				 "VALUES (?, ?)",
				 op->key, v, 1, NULL, 0);
	case ST_PUT:
		v[0] = (int64_t)op->a;
		v[1] = (int64_t)op->b;
		v[2] = (int64_t)op->n;
		return state_run(s,
				 "INSERT OR REPLACE INTO req(key, job, "
				 "expires, nqp, qps) VALUES (?, ?, ?, ?, ?)",
				 op->key, v, 3, op->blob,
				 op->n * sizeof(struct state_qp));
	case ST_RENEW:
		v[0] = (int64_t)op->b;
		return state_run(s,
				 "UPDATE req SET expires = ?2 WHERE key = ?1",
				 op->key, v, 1, NULL, 0);
	case ST_DEL:
		return state_run(s, "DELETE FROM req WHERE key = ?", op->key,
				 NULL, 0, NULL, 0);
	case ST_DEL_JOB:
		v[0] = (int64_t)op->a;
		return state_run(s, "DELETE FROM req WHERE job = ?", NULL, v, 1,
				 NULL, 0);
	case ST_EXPIRE:
		v[0] = (int64_t)op->a;
		return state_run(s, "DELETE FROM req WHERE expires <= ?", NULL,
				 v, 1, NULL, 0);
	case ST_MOVE:
		return state_apply_move(s, op);
	case ST_LINK:
		v[0] = (int64_t)op->a;
		v[1] = (int64_t)op->b;
		return state_run(s,
				 "INSERT OR REPLACE INTO link(id, up) "
				 "VALUES (?, ?)",
				 NULL, v, 2, NULL, 0);
	case ST_CATALOG:
		v[0] = op->ck.sip;
		v[1] = op->ck.dip;
		v[2] = op->ck.side;
		return state_run(s,
				 "INSERT OR REPLACE INTO catalog(sip, dip, "
				 "side, recs) VALUES (?, ?, ?, ?)",
				 NULL, v, 3, op->blob,
				 op->n * sizeof(struct state_crec));
	}
	return -1;
}

static void
state_op_free(struct state_op *op)
{
	free(op->blob);
	free(op);
}

/*
 * Polls until done(s) or STATE_SPIN_NS passed (see there), yielding the
 * core now and then so that a thread waiting for it runs (a busy
 * machine).  Returns 1 when done(s), 0 on the time bound.
 */
static int
state_spin(struct state *s, bool (*done)(struct state *))
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 1;; i++) {
		if (done(s))
			return 1;
		if ((i & 63) != 0)
			continue;
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec -
			    t0.tv_nsec >
		    STATE_SPIN_NS)
			return 0;
	}
}

/* Writer: something is queued (a hint; the queue is read under mu). */
static bool
state_has_work(struct state *s)
{
	return atomic_load_explicit(&s->queued, memory_order_acquire);
}

/* Loop: everything it queued has committed. */
static bool
state_caught_up(struct state *s)
{
	return atomic_load_explicit(&s->committed_hint, memory_order_acquire) >=
	       s->next_seq;
}

/*
 * Writes batch (operations in sequence order) in one transaction, frees
 * it and records the outcome: the highest sequence number committed, or
 * the failure.  The caller holds the connection (writing); on_loop tells
 * whether it is the loop.  Returns true when the writer is to run
 * state_wal_valve before it lets the connection go; otherwise the
 * connection is free on return (the loop asks the writer for the valve).
 */
static bool
state_write(struct state *s, struct state_op *batch, bool on_loop)
{
	struct state_op *op, *nx;
	struct timespec t0, t1;
	uint64_t last = 0;
	bool ok = true, valve;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Prepared once like the others: no parsing in the commit path. */
	if (state_run(s, "BEGIN", NULL, NULL, 0, NULL, 0) < 0)
		ok = false;
	for (op = batch; ok && op != NULL; op = op->next)
		if (state_apply(s, op) < 0)
			ok = false;
	if (ok && state_run(s, "COMMIT", NULL, NULL, 0, NULL, 0) < 0)
		ok = false;
	if (!ok && !sqlite3_get_autocommit(s->db))
		state_run(s, "ROLLBACK", NULL, NULL, 0, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (op = batch; op != NULL; op = nx) {
		nx = op->next;
		last = op->seq;
		state_op_free(op);
	}
	valve = ok && s->wal_frames >= s->wal_max;
	pthread_mutex_lock(&s->mu);
	if (ok) {
		s->committed = last;
		s->commits++;
		if (on_loop)
			s->inline_commits++;
		http_hist_add(&s->commit_hist,
			      (double)(t1.tv_sec - t0.tv_sec) +
				      (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
		atomic_store_explicit(&s->committed_hint, last,
				      memory_order_release);
	} else {
		s->failed = true;
	}
	if (valve && on_loop)
		s->valve = true;
	/* the writer may wait for the connection the loop now lets go */
	if (on_loop && s->sleeping && (s->valve || s->head != NULL))
		pthread_cond_signal(&s->cv);
	s->writing = valve && !on_loop;
	pthread_mutex_unlock(&s->mu);
	return valve && !on_loop;
}

/*
 * The writer thread: takes everything queued (and marks the connection
 * taken in the same critical section, see the top), writes it as one
 * group and wakes the loop; completes a checkpoint when the WAL is long.
 */
static void *
state_main(void *arg)
{
	struct state *s = arg;

	for (;;) {
		struct state_op *batch;
		bool valve;

		state_spin(s, state_has_work);
		pthread_mutex_lock(&s->mu);
		/*
		 * Nothing to do, or the loop holds the connection: it signals
		 * when it lets go with a checkpoint asked for.
		 */
		while ((s->head == NULL && !s->valve && !s->stop) ||
		       (s->writing && !s->stop)) {
			s->sleeping = true;
			pthread_cond_wait(&s->cv, &s->mu);
			s->sleeping = false;
		}
		batch = s->head;
		s->head = s->tail = NULL;
		atomic_store_explicit(&s->queued, false, memory_order_relaxed);
		valve = s->valve;
		if (batch == NULL && !valve) { /* stop, and nothing is left */
			pthread_mutex_unlock(&s->mu);
			break;
		}
		s->valve = false;
		s->writing = true;
		pthread_mutex_unlock(&s->mu);
		if (batch != NULL) {
			valve = state_write(s, batch, false);
			event_active(s->done_ev, EV_WRITE, 0);
		}
		if (!valve)
			continue;
		state_wal_valve(s);
		pthread_mutex_lock(&s->mu);
		s->writing = false;
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

/*
 * The checkpointer: every STATE_CHECKPOINT_MS, on its own connection,
 * copies committed WAL frames back into the database file (PASSIVE: it
 * never blocks the writer).  The writer's own automatic checkpoints are
 * off, so a checkpoint never delays an answer.
 */
static void *
state_ckpt_main(void *arg)
{
	struct state *s = arg;
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(s->path, &db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		log_warnx("store: checkpointer: %s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	/*
	 * A connection learns that the file is in WAL mode only once it has
	 * read it; until then a checkpoint does nothing.  Its copies need no
	 * fsync unless sync_full: the kernel's cache survives a crash of the
	 * process.
	 */
	if (state_exec(db, "PRAGMA journal_mode=WAL", "store: checkpointer") <
		    0 ||
	    state_exec(db,
		       s->sync_full ? "PRAGMA synchronous=FULL"
				    : "PRAGMA synchronous=OFF",
		       "store: checkpointer") < 0) {
		sqlite3_close(db);
		return NULL;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += STATE_CHECKPOINT_MS / 1000;
		ts.tv_nsec += (long)(STATE_CHECKPOINT_MS % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->ckpt_cv, &s->mu, &ts);
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->mu);
		/*
		 * Repeat while frames were added meanwhile: each round copies
		 * only the newest, so one soon fits between two commits; the
		 * next commit then starts the WAL over instead of growing it.
		 */
		for (int i = 0; i < STATE_CHECKPOINT_TRIES; i++) {
			int nlog = 0, ncopied = 0;

			if (sqlite3_wal_checkpoint_v2(
				    db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog,
				    &ncopied) != SQLITE_OK ||
			    ncopied >= nlog)
				break;
		}
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	sqlite3_close(db);
	return NULL;
}

/* SQLite's WAL hook: the WAL's length after each commit. */
static int
state_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)db;
	(void)name;
	((struct state *)arg)->wal_frames = frames;
	return SQLITE_OK;
}

/* The writer completes a checkpoint when the WAL is long and it is idle. */
static void
state_wal_valve(struct state *s)
{
	bool idle;

	if (s->wal_frames < s->wal_max)
		return;
	pthread_mutex_lock(&s->mu);
	idle = s->head == NULL;
	pthread_mutex_unlock(&s->mu);
	if (!idle)
		return;
	if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
				      NULL, NULL) != SQLITE_OK)
		log_warnx("store: checkpoint: %s", sqlite3_errmsg(s->db));
	s->wal_frames = 0;
}

/* On the loop: report the commit (or stop the daemon on failure). */
static void
state_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct state *s = arg;
	uint64_t committed;
	bool failed;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&s->mu);
	committed = s->committed;
	failed = s->failed;
	pthread_mutex_unlock(&s->mu);
	if (failed) {
		log_errx("store: a write failed; stopping rather than answer "
			 "with allocations that are not recorded");
		event_base_loopbreak(s->base);
		return;
	}
	s->cb(committed, s->cb_arg);
}

/* Loop: hands the stage to the writer (waking it only if it sleeps). */
static void
state_hand_over(struct state *s)
{
	if (s->stage == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	if (s->tail != NULL)
		s->tail->next = s->stage;
	else
		s->head = s->stage;
	s->tail = s->stage_tail;
	atomic_store_explicit(&s->queued, true, memory_order_release);
	/* A polling writer sees the hint; only a sleeping one needs a wake. */
	if (s->sleeping)
		pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	s->stage = s->stage_tail = NULL;
	s->nstage = s->nstage_qps = 0;
}

/*
 * Loop: commits the stage itself when it is small and the writer idle
 * (see the top), then reports the commit, or the failure, at once.
 * Returns true when it did.
 */
static bool
state_commit_inline(struct state *s)
{
	struct state_op *batch = s->stage;
	bool idle;

	/* state_queue handed over every stage that is not small */
	if (batch == NULL)
		return false;
	pthread_mutex_lock(&s->mu);
	/* a checkpoint asked of the writer (valve) takes the connection next */
	idle = s->head == NULL && !s->writing && !s->valve && !s->failed;
	if (idle)
		s->writing = true;
	pthread_mutex_unlock(&s->mu);
	if (!idle)
		return false;
	s->stage = s->stage_tail = NULL;
	s->nstage = s->nstage_qps = 0;
	state_write(s, batch, true);
	state_done_cb(-1, 0, s);
	return true;
}

/*
 * On the loop, after the callbacks of every input that was ready: commits
 * the stage inline when it can, else hands it to the writer; then, when a
 * few writes are uncommitted, polls for their commit for up to
 * STATE_SPIN_NS and reports it at once (see STATE_AWAIT_OPS_MAX).  When
 * the bound passes, the writer's wake-up (done_ev) reports it as usual.
 */
static void
state_await_cb(evutil_socket_t fd, short what, void *arg)
{
	struct state *s = arg;
	uint64_t c;

	(void)fd;
	(void)what;
	if (state_commit_inline(s))
		return;
	state_hand_over(s);
	c = atomic_load_explicit(&s->committed_hint, memory_order_acquire);
	if (c >= s->next_seq || s->next_seq - c > STATE_AWAIT_OPS_MAX)
		return;
	if (state_spin(s, state_caught_up))
		state_done_cb(-1, 0, s);
}

static struct state_op *
state_op_new(struct state *s, enum state_op_kind kind, const char *key)
{
	struct state_op *op = calloc(1, sizeof(*op));

	if (op == NULL) {
		log_errx("store: out of memory");
		pthread_mutex_lock(&s->mu);
		s->failed = true;
		pthread_mutex_unlock(&s->mu);
		return NULL;
	}
	op->kind = kind;
	if (key != NULL)
		snprintf(op->key, sizeof(op->key), "%s", key);
	return op;
}

/*
 * Adds op (NULL: out of memory, fatal) to the stage and returns its
 * sequence number.  op belongs to the store from here: never read it
 * after.  The stage goes to the writer at once when it is no longer small
 * (STATE_INLINE_OPS_MAX, STATE_INLINE_QPS_MAX), when op deletes by job or
 * by lease (many rows: milliseconds for a large job), or with sync_full;
 * otherwise at the end of the round (state_await_cb).
 */
static uint64_t
state_queue(struct state *s, struct state_op *op)
{
	if (op == NULL) {
		event_active(s->done_ev, EV_WRITE, 0);
		return s->next_seq;
	}
	op->seq = ++s->next_seq;
	if (s->stage_tail != NULL)
		s->stage_tail->next = op;
	else
		s->stage = op;
	s->stage_tail = op;
	s->nstage_qps += op->n;
	if (++s->nstage > STATE_INLINE_OPS_MAX ||
	    s->nstage_qps > STATE_INLINE_QPS_MAX || op->kind == ST_DEL_JOB ||
	    op->kind == ST_EXPIRE || s->sync_full)
		state_hand_over(s);
	/* Runs after the other callbacks already active in this round. */
	event_active(s->await_ev, EV_WRITE, 0);
	return s->next_seq; /* op's: op itself may be gone already */
}

/* ---- public
 * ------------------------------------------------------------------- */

struct state *
state_open(const char *dir, bool sync_full, struct event_base *base,
	   void (*committed)(uint64_t seq, void *arg), void *arg, char *err,
	   size_t errlen)
{
	struct state *s = calloc(1, sizeof(*s));
	char *path;

	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->ckpt_cv, NULL);
	s->base = base;
	s->cb = committed;
	s->cb_arg = arg;
	path = s->path;
	snprintf(s->path, sizeof(s->path), "%s/%s", dir, C4P_DB_NAME);
	/* Tests make the writer's checkpoint frequent (docs/c4p.md 7.3). */
	s->wal_max = STATE_WAL_MAX_FRAMES;
	if (getenv("C4P_TEST_WAL_MAX_FRAMES") != NULL) {
		long v = strtol(getenv("C4P_TEST_WAL_MAX_FRAMES"), NULL, 10);

		if (v >= 1 && v <= STATE_WAL_MAX_FRAMES)
			s->wal_max = (int)v;
	}
	if (sqlite3_open_v2(path, &s->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path,
			 s->db ? sqlite3_errmsg(s->db) : "cannot open");
		goto fail;
	}
	sqlite3_busy_timeout(s->db, STATE_BUSY_MS);
	s->sync_full = sync_full;
	if (state_exec(s->db, state_ddl, path) < 0 ||
	    state_exec(s->db,
		       sync_full ? "PRAGMA synchronous=FULL"
				 : "PRAGMA synchronous=OFF",
		       path) < 0 ||
	    state_exec(s->db, "INSERT OR IGNORE INTO meta VALUES('schema', 1)",
		       path) < 0) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
		goto fail;
	}
	/* after the DDL: its wal_autocheckpoint pragma replaces any hook */
	sqlite3_wal_hook(s->db, state_wal_hook, s);
	s->done_ev = event_new(base, -1, 0, state_done_cb, s);
	s->await_ev = event_new(base, -1, 0, state_await_cb, s);
	if (s->done_ev == NULL || s->await_ev == NULL) {
		snprintf(err, errlen, "cannot create the store's event");
		goto fail;
	}
	return s;
fail:
	state_close(s);
	return NULL;
}

/* Loads jobs. */
static int
state_load_jobs(struct state *s, struct c4p *p, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1, r;

	if (sqlite3_prepare_v2(s->db, "SELECT id, name FROM job ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);

		if (name == NULL || id != p->njobs + 1 ||
		    c4p_job_id(p, name, 2) != id) {
			snprintf(err, errlen, "job table: bad row %llu",
				 (unsigned long long)id);
			sqlite3_finalize(st);
			return -1;
		}
	}
	if (r == SQLITE_DONE)
		rc = 0;
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "jobs: %s", sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	return rc;
}

static int
state_load_catalog(struct state *s, struct c4p *p, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct catalog_rec *recs = NULL;
	int rc = -1, r;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT sip, dip, side, recs FROM catalog", -1,
			       &st, NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct catalog_key k;
		size_t n = (size_t)sqlite3_column_bytes(st, 3) /
			   sizeof(struct state_crec);
		const struct state_crec *c = sqlite3_column_blob(st, 3);

		k.sip = (uint32_t)sqlite3_column_int64(st, 0);
		k.dip = (uint32_t)sqlite3_column_int64(st, 1);
		k.side = (uint8_t)sqlite3_column_int64(st, 2);
		free(recs);
		recs = calloc(n + 1, sizeof(*recs));
		if (recs == NULL)
			goto out;
		for (size_t i = 0; i < n; i++) {
			struct state_crec e;

			memcpy(&e, &c[i], sizeof(e));
			recs[i].path.src_port = e.src_port;
			recs[i].path.dst_port = e.dst_port;
			recs[i].path.up = e.up;
			recs[i].path.down = e.down;
			recs[i].sport = e.sport;
			recs[i].loss_permille = e.loss;
			recs[i].origin = e.origin;
		}
		if (catalog_add(p->cat, &k, recs, n, err, errlen) < 0)
			goto out;
	}
	if (r == SQLITE_DONE)
		rc = 0;
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "catalog: %s", sqlite3_errmsg(s->db));
	free(recs);
	sqlite3_finalize(st);
	return rc;
}

static int
state_load_reqs(struct state *s, struct c4p *p, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct alloc_record *recs = NULL;
	size_t n = 0, cap = 0;
	int rc = -1, r;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT key, job, expires, nqp, qps FROM req",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		size_t nqp = (size_t)sqlite3_column_int64(st, 3);
		const struct state_qp *q = sqlite3_column_blob(st, 4);

		if (key == NULL || nqp == 0 ||
		    (size_t)sqlite3_column_bytes(st, 4) !=
			    nqp * sizeof(struct state_qp)) {
			snprintf(err, errlen, "req table: bad row %s",
				 key ? key : "?");
			goto out;
		}
		if (n + nqp > cap) {
			size_t nc = cap ? cap * 2 : 1024;
			void *g;

			while (nc < n + nqp)
				nc *= 2;
			g = realloc(recs, nc * sizeof(*recs));
			if (g == NULL)
				goto out;
			recs = g;
			cap = nc;
		}
		for (size_t i = 0; i < nqp; i++) {
			struct alloc_record *a = &recs[n++];
			struct state_qp e;

			memcpy(&e, &q[i], sizeof(e));
			memset(a, 0, sizeof(*a));
			snprintf(a->req_id, sizeof(a->req_id), "%s", key);
			a->job = (uint64_t)sqlite3_column_int64(st, 1);
			a->expires = (uint64_t)sqlite3_column_int64(st, 2);
			a->index = (uint32_t)i;
			a->nqp = (uint32_t)nqp;
			a->qp_id = e.qp_id;
			a->req.sip = e.sip;
			a->req.dip = e.dip;
			a->req.side = e.rside;
			a->req.weight = e.weight;
			a->sport = e.sport;
			a->side = e.side;
			a->stranded = e.stranded;
			a->path.src_port = e.src_port;
			a->path.dst_port = e.dst_port;
			a->path.up = e.up;
			a->path.down = e.down;
		}
	}
	if (r != SQLITE_DONE)
		goto out;
	if (n > 0 && alloc_restore(p->alloc, recs, n, err, errlen) < 0)
		goto out;
	rc = 0;
	log_info("restored %zu QPs", n);
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "requests: %s", sqlite3_errmsg(s->db));
	free(recs);
	sqlite3_finalize(st);
	return rc;
}

/* Cables recorded down: mark them down again (moving QPs still on them). */
static int
state_load_links(struct state *s, struct c4p *p, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1, r;

	if (sqlite3_prepare_v2(s->db, "SELECT id FROM link WHERE up = 0", -1,
			       &st, NULL) != SQLITE_OK)
		goto out;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		uint32_t id = (uint32_t)sqlite3_column_int64(st, 0);
		struct alloc_change *ch = NULL;
		size_t nch = 0;

		if (alloc_link_set(p->alloc, id, false, &ch, &nch) < 0) {
			snprintf(err, errlen, "link table: bad link %u", id);
			goto out;
		}
		/* Records are saved after moves, so normally nothing moves. */
		for (size_t i = 0; i < nch; i++)
			state_move(s, &ch[i]);
		free(ch);
	}
	if (r == SQLITE_DONE)
		rc = 0;
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "links: %s", sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	return rc;
}

int
state_load(struct state *s, struct c4p *p, char *err, size_t errlen)
{
	err[0] = '\0';
	if (state_load_jobs(s, p, err, errlen) < 0 ||
	    state_load_catalog(s, p, err, errlen) < 0 ||
	    state_load_reqs(s, p, err, errlen) < 0 ||
	    state_load_links(s, p, err, errlen) < 0)
		return -1;
	if (pthread_create(&s->thr, NULL, state_main, s) != 0) {
		snprintf(err, errlen, "cannot start the store's thread");
		return -1;
	}
	s->started = true;
	if (pthread_create(&s->ckpt_thr, NULL, state_ckpt_main, s) != 0) {
		snprintf(err, errlen, "cannot start the checkpoint thread");
		return -1;
	}
	s->ckpt_started = true;
	return 0;
}

uint64_t
state_job(struct state *s, uint64_t id, const char *name)
{
	struct state_op *op = state_op_new(s, ST_JOB, name);

	if (op != NULL)
		op->a = id;
	return state_queue(s, op);
}

uint64_t
state_put(struct state *s, const char *key, uint64_t job, uint64_t expires,
	  const struct alloc_record *recs, size_t n)
{
	struct state_op *op = state_op_new(s, ST_PUT, key);
	struct state_qp *q;

	if (op == NULL)
		return state_queue(s, NULL);
	q = calloc(n ? n : 1, sizeof(*q));
	if (q == NULL) {
		free(op);
		return state_queue(s, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		q[i].qp_id = recs[i].qp_id;
		q[i].sip = recs[i].req.sip;
		q[i].dip = recs[i].req.dip;
		q[i].weight = recs[i].req.weight;
		q[i].rside = recs[i].req.side;
		q[i].sport = recs[i].sport;
		q[i].side = recs[i].side;
		q[i].stranded = recs[i].stranded;
		q[i].src_port = recs[i].path.src_port;
		q[i].dst_port = recs[i].path.dst_port;
		q[i].up = recs[i].path.up;
		q[i].down = recs[i].path.down;
	}
	op->a = job;
	op->b = expires;
	op->n = n;
	op->blob = q;
	return state_queue(s, op);
}

uint64_t
state_renew(struct state *s, const char *key, uint64_t expires)
{
	struct state_op *op = state_op_new(s, ST_RENEW, key);

	if (op != NULL)
		op->b = expires;
	return state_queue(s, op);
}

uint64_t
state_del(struct state *s, const char *key)
{
	return state_queue(s, state_op_new(s, ST_DEL, key));
}

uint64_t
state_del_job(struct state *s, uint64_t job)
{
	struct state_op *op = state_op_new(s, ST_DEL_JOB, NULL);

	if (op != NULL)
		op->a = job;
	return state_queue(s, op);
}

uint64_t
state_expire(struct state *s, uint64_t now)
{
	struct state_op *op = state_op_new(s, ST_EXPIRE, NULL);

	if (op != NULL)
		op->a = now;
	return state_queue(s, op);
}

uint64_t
state_move(struct state *s, const struct alloc_change *ch)
{
	struct state_op *op = state_op_new(s, ST_MOVE, ch->req_id);

	if (op != NULL)
		op->ch = *ch;
	return state_queue(s, op);
}

uint64_t
state_link(struct state *s, uint32_t link, bool up)
{
	struct state_op *op = state_op_new(s, ST_LINK, NULL);

	if (op != NULL) {
		op->a = link;
		op->b = up;
	}
	return state_queue(s, op);
}

uint64_t
state_catalog(struct state *s, const struct catalog_entry *e)
{
	struct state_op *op = state_op_new(s, ST_CATALOG, NULL);
	struct state_crec *c;

	if (op == NULL)
		return state_queue(s, NULL);
	c = calloc(e->n ? e->n : 1, sizeof(*c));
	if (c == NULL) {
		free(op);
		return state_queue(s, NULL);
	}
	for (size_t i = 0; i < e->n; i++) {
		c[i].src_port = e->recs[i].path.src_port;
		c[i].dst_port = e->recs[i].path.dst_port;
		c[i].up = e->recs[i].path.up;
		c[i].down = e->recs[i].path.down;
		c[i].sport = e->recs[i].sport;
		c[i].loss = e->recs[i].loss_permille;
		c[i].origin = e->recs[i].origin;
	}
	op->ck = e->key;
	op->n = e->n;
	op->blob = c;
	return state_queue(s, op);
}

void
state_get_stats(const struct state *s, struct state_stats *st)
{
	pthread_mutex_t *mu = (pthread_mutex_t *)&s->mu;

	pthread_mutex_lock(mu);
	st->commits = s->commits;
	st->inline_commits = s->inline_commits;
	st->committed = s->committed;
	st->failed = s->failed;
	st->commit_hist = s->commit_hist;
	pthread_mutex_unlock(mu);
	st->ops = s->next_seq;
}

static void
state_ops_free(struct state_op *op)
{
	struct state_op *nx;

	for (; op != NULL; op = nx) {
		nx = op->next;
		state_op_free(op);
	}
}

void
state_close(struct state *s)
{
	if (s == NULL)
		return;
	/* The writer writes what is staged before it stops. */
	if (s->started)
		state_hand_over(s);
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_cond_signal(&s->ckpt_cv);
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->thr, NULL);
	if (s->ckpt_started)
		pthread_join(s->ckpt_thr, NULL);
	for (int i = 0; i < STATE_STMTS_MAX; i++)
		sqlite3_finalize(s->stmts[i].st);
	state_ops_free(s->head);
	state_ops_free(s->stage);
	if (s->done_ev != NULL)
		event_free(s->done_ev);
	if (s->await_ev != NULL)
		event_free(s->await_ev);
	if (s->db != NULL)
		sqlite3_close(s->db);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->ckpt_cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
