/*
 * store.c - the c4p-master's SQLite store (state_dir/c4p-master.db): the
 * loop's side.
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
 *  - when the stage is small (STORE_INLINE_OPS_MAX, STORE_INLINE_QPS_MAX)
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
 * connection copies the WAL back every STORE_CHECKPOINT_MS, and the writer
 * completes a checkpoint itself when the WAL passes STORE_WAL_MAX_FRAMES
 * and nothing waits, so that the WAL starts over instead of growing.
 *
 * A write that fails is fatal: the loop is stopped, since a master that
 * cannot record allocations must not answer with them.
 */
#define LOG_SUBSYS "c4p-store"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/thread.h>

#include "log.h"
#include "store_int.h"

static const char store_ddl[] =
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

void
store_op_free(struct store_op *op)
{
	free(op->blob);
	free(op);
}

/*
 * Polls until done(s) or STORE_SPIN_NS passed (see there), yielding the
 * core now and then so that a thread waiting for it runs (a busy
 * machine).  Returns 1 when done(s), 0 on the time bound.
 */
static bool
store_caught_up(struct c4p_store *s)
{
	return atomic_load_explicit(&s->committed_hint, memory_order_acquire) >=
	       s->next_seq;
}

/*
 * Writes batch (operations in sequence order) in one transaction, frees
 * it and records the outcome: the highest sequence number committed, or
 * the failure.  The caller holds the connection (writing); on_loop tells
 * whether it is the loop.  Returns true when the writer is to run
 * store_writer_wal_valve before it lets the connection go; otherwise the
 * connection is free on return (the loop asks the writer for the valve).
 */
static void
store_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct c4p_store *s = arg;
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
store_hand_over(struct c4p_store *s)
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
store_commit_inline(struct c4p_store *s)
{
	struct store_op *batch = s->stage;
	bool idle;

	/* store_queue handed over every stage that is not small */
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
	store_writer_write(s, batch, true);
	store_done_cb(-1, 0, s);
	return true;
}

/*
 * On the loop, after the callbacks of every input that was ready: commits
 * the stage inline when it can, else hands it to the writer; then, when a
 * few writes are uncommitted, polls for their commit for up to
 * STORE_SPIN_NS and reports it at once (see STORE_AWAIT_OPS_MAX).  When
 * the bound passes, the writer's wake-up (done_ev) reports it as usual.
 */
static void
store_await_cb(evutil_socket_t fd, short what, void *arg)
{
	struct c4p_store *s = arg;
	uint64_t c;

	(void)fd;
	(void)what;
	if (store_commit_inline(s))
		return;
	store_hand_over(s);
	c = atomic_load_explicit(&s->committed_hint, memory_order_acquire);
	if (c >= s->next_seq || s->next_seq - c > STORE_AWAIT_OPS_MAX)
		return;
	if (store_writer_spin(s, store_caught_up))
		store_done_cb(-1, 0, s);
}

static struct store_op *
store_op_new(struct c4p_store *s, enum store_op_kind kind, const char *key)
{
	struct store_op *op = calloc(1, sizeof(*op));

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
 * (STORE_INLINE_OPS_MAX, STORE_INLINE_QPS_MAX), when op deletes by job or
 * by lease (many rows: milliseconds for a large job), or with sync_full;
 * otherwise at the end of the round (store_await_cb).
 */
static uint64_t
store_queue(struct c4p_store *s, struct store_op *op)
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
	if (++s->nstage > STORE_INLINE_OPS_MAX ||
	    s->nstage_qps > STORE_INLINE_QPS_MAX ||
	    op->kind == STORE_OP_DEL_JOB || op->kind == STORE_OP_EXPIRE ||
	    s->sync_full)
		store_hand_over(s);
	/* Runs after the other callbacks already active in this round. */
	event_active(s->await_ev, EV_WRITE, 0);
	return s->next_seq; /* op's: op itself may be gone already */
}

/* ---- public
 * ------------------------------------------------------------------- */

struct c4p_store *
store_open(const char *dir, bool sync_full, struct event_base *base,
	   void (*committed)(uint64_t seq, void *arg), void *arg, char *err,
	   size_t errlen)
{
	struct c4p_store *s = calloc(1, sizeof(*s));
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
	snprintf(s->path, sizeof(s->path), "%s/%s", dir, STORE_DB_NAME);
	/* Tests make the writer's checkpoint frequent (docs/c4p.md 7.3). */
	s->wal_max = STORE_WAL_MAX_FRAMES;
	if (getenv("C4P_TEST_WAL_MAX_FRAMES") != NULL) {
		long v = strtol(getenv("C4P_TEST_WAL_MAX_FRAMES"), NULL, 10);

		if (v >= 1 && v <= STORE_WAL_MAX_FRAMES)
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
	sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
	s->sync_full = sync_full;
	if (store_writer_exec(s->db, store_ddl, path) < 0 ||
	    store_writer_exec(s->db,
			      sync_full ? "PRAGMA synchronous=FULL"
					: "PRAGMA synchronous=OFF",
			      path) < 0 ||
	    store_writer_exec(s->db,
			      "INSERT OR IGNORE INTO meta VALUES('schema', 1)",
			      path) < 0) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
		goto fail;
	}
	/* after the DDL: its wal_autocheckpoint pragma replaces any hook */
	sqlite3_wal_hook(s->db, store_writer_wal_hook, s);
	s->done_ev = event_new(base, -1, 0, store_done_cb, s);
	s->await_ev = event_new(base, -1, 0, store_await_cb, s);
	if (s->done_ev == NULL || s->await_ev == NULL) {
		snprintf(err, errlen, "cannot create the store's event");
		goto fail;
	}
	return s;
fail:
	store_close(s);
	return NULL;
}

/* Loads jobs. */
uint64_t
store_job(struct c4p_store *s, uint64_t id, const char *name)
{
	struct store_op *op = store_op_new(s, STORE_OP_JOB, name);

	if (op != NULL)
		op->a = id;
	return store_queue(s, op);
}

uint64_t
store_put(struct c4p_store *s, const char *key, uint64_t job, uint64_t expires,
	  const struct alloc_record *recs, size_t n)
{
	struct store_op *op = store_op_new(s, STORE_OP_PUT, key);
	struct store_qp *q;

	if (op == NULL)
		return store_queue(s, NULL);
	q = calloc(n ? n : 1, sizeof(*q));
	if (q == NULL) {
		free(op);
		return store_queue(s, NULL);
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
	return store_queue(s, op);
}

uint64_t
store_renew(struct c4p_store *s, const char *key, uint64_t expires)
{
	struct store_op *op = store_op_new(s, STORE_OP_RENEW, key);

	if (op != NULL)
		op->b = expires;
	return store_queue(s, op);
}

uint64_t
store_del(struct c4p_store *s, const char *key)
{
	return store_queue(s, store_op_new(s, STORE_OP_DEL, key));
}

uint64_t
store_del_job(struct c4p_store *s, uint64_t job)
{
	struct store_op *op = store_op_new(s, STORE_OP_DEL_JOB, NULL);

	if (op != NULL)
		op->a = job;
	return store_queue(s, op);
}

uint64_t
store_expire(struct c4p_store *s, uint64_t now)
{
	struct store_op *op = store_op_new(s, STORE_OP_EXPIRE, NULL);

	if (op != NULL)
		op->a = now;
	return store_queue(s, op);
}

uint64_t
store_move(struct c4p_store *s, const struct alloc_change *ch)
{
	struct store_op *op = store_op_new(s, STORE_OP_MOVE, ch->req_id);

	if (op != NULL)
		op->ch = *ch;
	return store_queue(s, op);
}

uint64_t
store_link(struct c4p_store *s, uint32_t link, bool up)
{
	struct store_op *op = store_op_new(s, STORE_OP_LINK, NULL);

	if (op != NULL) {
		op->a = link;
		op->b = up;
	}
	return store_queue(s, op);
}

uint64_t
store_catalog(struct c4p_store *s, const struct catalog_entry *e)
{
	struct store_op *op = store_op_new(s, STORE_OP_CATALOG, NULL);
	struct store_crec *c;

	if (op == NULL)
		return store_queue(s, NULL);
	c = calloc(e->n ? e->n : 1, sizeof(*c));
	if (c == NULL) {
		free(op);
		return store_queue(s, NULL);
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
	return store_queue(s, op);
}

void
store_get_stats(const struct c4p_store *s, struct store_stats *st)
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
store_ops_free(struct store_op *op)
{
	struct store_op *nx;

	for (; op != NULL; op = nx) {
		nx = op->next;
		store_op_free(op);
	}
}

void
store_close(struct c4p_store *s)
{
	if (s == NULL)
		return;
	/* The writer writes what is staged before it stops. */
	if (s->started)
		store_hand_over(s);
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_cond_signal(&s->ckpt_cv);
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->thr, NULL);
	if (s->ckpt_started)
		pthread_join(s->ckpt_thr, NULL);
	for (int i = 0; i < STORE_STMTS_MAX; i++)
		sqlite3_finalize(s->stmts[i].st);
	store_ops_free(s->head);
	store_ops_free(s->stage);
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
