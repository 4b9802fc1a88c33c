/*
 * store.c - the c4p-master's SQLite store (state_dir/c4p-master.db): the
 * loop's side.
 *
 * Tables: job (id, name); req (one row per request: key, job, lease end,
 * QP count and a blob of its QPs); link (cable health); catalog
 * (records learnt from probes; hash-model records are recomputed).
 *
 * Every change is an operation with a sequence number, written through
 * lib/daemon's SQLite queue (sqlq.h: its rule says when a write is
 * durable and when the owner is told).  The loop sends an answer that
 * depends on a change only after that change committed, so a port the
 * master handed out is on disk (in the WAL) before anyone can use it:
 * after kill -9 the restarted master knows it and never hands the same
 * slot out twice.  The setting sync_full picks SQLQ_SYNC_FULL (an fsync
 * per commit: also survives power loss); without it SQLQ_SYNC_PROCESS
 * (synchronous=OFF: in WAL mode NORMAL would add fsyncs only to
 * checkpoints and to the first commit after the WAL starts over, where
 * the fsync of the new WAL header writes back the whole WAL, tens of
 * milliseconds measured, on whichever thread commits next: the loop too).
 *
 * Who commits.  The loop stages the operations of one round of callbacks
 * and, once every input that was ready is handled, commits them itself
 * when they are few and small (STORE_INLINE_OPS_MAX, STORE_INLINE_QPS_MAX)
 * and the writer thread is idle: a lone request then costs no thread
 * hand-off at all (each one a cross-vCPU wake-up on a virtual machine,
 * more than the commit).  Otherwise the writer takes everything queued
 * and writes it in one transaction (group commit).  A deletion by job or
 * by lease (many rows) is bulk and goes to the writer at once, and with
 * sync_full every operation does (an fsync never runs on the loop).
 *
 * Checkpoints never run inside a commit: a checkpointer thread copies the
 * WAL back every STORE_CHECKPOINT_MS, and the writer completes one itself
 * when the WAL passes STORE_WAL_MAX_FRAMES and nothing waits.
 *
 * A write that fails is fatal: the loop is stopped, since a master that
 * cannot record allocations must not answer with them.  So is one that
 * cannot be queued (no memory, STORE_QUEUE_MAX).
 */
#define LOG_SUBSYS "c4p-store"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"
#include "store_int.h"

static const char store_ddl[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	"CREATE TABLE IF NOT EXISTS job(id INTEGER PRIMARY KEY,"
	" name TEXT UNIQUE NOT NULL);"
	"CREATE TABLE IF NOT EXISTS req(key TEXT PRIMARY KEY,"
	" job INTEGER NOT NULL, expires INTEGER NOT NULL,"
	" nqp INTEGER NOT NULL, qps BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS link(id INTEGER PRIMARY KEY,"
	" up INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS catalog(sip INTEGER, dip INTEGER,"
	" side INTEGER, recs BLOB NOT NULL, PRIMARY KEY(sip, dip, side));"
	"INSERT OR IGNORE INTO meta VALUES('schema', 1)";

/* The loop stops: a write is lost or failed (see the top). */
static void
store_fail(struct c4p_store *s)
{
	log_errx("store: a write failed; stopping rather than answer "
		 "with allocations that are not recorded");
	event_base_loopbreak(s->base);
}

static void
store_fail_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	store_fail(arg);
}

/* The queue's committed callback, on the loop. */
static void
store_committed(uint64_t seq, bool failed, void *arg)
{
	struct c4p_store *s = arg;

	if (failed || s->lost) {
		store_fail(s);
		return;
	}

	s->cb(seq, s->cb_arg);
}

static struct store_op *
store_op_new(enum store_op_kind kind, const char *key)
{
	struct store_op *op = calloc(1, sizeof(*op));

	if (op == NULL) {
		log_errx("store: out of memory");
		return NULL;
	}
	op->op.run = store_writer_run_op;
	op->op.free = store_writer_free_op;
	op->kind = kind;
	/* many rows: milliseconds for a large job, never on the loop */
	op->op.bulk = kind == STORE_OP_DEL_JOB || kind == STORE_OP_EXPIRE;
	if (key != NULL)
		snprintf(op->key, sizeof(op->key), "%s", key);
	return op;
}

/*
 * Submits op (NULL: out of memory) and returns its sequence number.  op
 * belongs to the queue from here: never read it after.  An operation
 * that cannot be queued stops the daemon (see the top); the number
 * returned is then the previous one.
 */
static uint64_t
store_queue(struct c4p_store *s, struct store_op *op)
{
	uint64_t seq;

	if (op != NULL) {
		op->op.weight = op->n;
		seq = sqlq_submit(s->q, &op->op);
		if (seq != 0)
			return s->last_seq = seq;
		store_writer_free_op(&op->op);
	}
	s->lost = true;
	/* on the loop: a break asked for before it runs would be forgotten */
	event_active(s->fail_ev, EV_WRITE, 0);
	return s->last_seq;
}

/* ---- public
 * ------------------------------------------------------------------- */

struct c4p_store *
store_open(const char *dir, bool sync_full, struct event_base *base,
	   void (*committed)(uint64_t seq, void *arg), void *arg, char *err,
	   size_t errlen)
{
	struct sqlq_conf conf = {
		.sync = sync_full ? SQLQ_SYNC_FULL : SQLQ_SYNC_PROCESS,
		.queue_max = STORE_QUEUE_MAX,
		.busy_ms = STORE_BUSY_MS,
		.retry_ms = STORE_RETRY_MS,
		.retry_max_ms = STORE_RETRY_MAX_MS,
		.checkpoint_ms = STORE_CHECKPOINT_MS,
		.wal_max_frames = STORE_WAL_MAX_FRAMES,
		.inline_ops_max = STORE_INLINE_OPS_MAX,
		.inline_weight_max = STORE_INLINE_QPS_MAX,
		.await_ops_max = STORE_AWAIT_OPS_MAX,
		.spin_ns = STORE_SPIN_NS,
		.committed = store_committed,
	};
	struct c4p_store *s = calloc(1, sizeof(*s));
	char path[4096];

	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base = base;
	s->cb = committed;
	s->cb_arg = arg;
	snprintf(path, sizeof(path), "%s/%s", dir, STORE_DB_NAME);
	conf.path = path;
	conf.arg = s;
	/* Tests make the writer's checkpoint frequent (docs/c4p.md 7.3). */
	if (getenv("C4P_TEST_WAL_MAX_FRAMES") != NULL) {
		long v = strtol(getenv("C4P_TEST_WAL_MAX_FRAMES"), NULL, 10);

		if (v >= 1 && v <= STORE_WAL_MAX_FRAMES)
			conf.wal_max_frames = (int)v;
	}
	s->fail_ev = event_new(base, -1, 0, store_fail_cb, s);
	if (s->fail_ev == NULL) {
		snprintf(err, errlen, "cannot create the store's event");
		goto fail;
	}
	s->q = sqlq_open(&conf, base, err, errlen);
	if (s->q == NULL)
		goto fail;
	if (sqlq_exec(s->q, store_ddl) < 0) {
		snprintf(err, errlen, "%s: %s", path,
			 sqlite3_errmsg(sqlq_db(s->q)));
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
	struct store_op *op = store_op_new(STORE_OP_JOB, name);

	if (op != NULL)
		op->a = id;
	return store_queue(s, op);
}

uint64_t
store_put(struct c4p_store *s, const char *key, uint64_t job, uint64_t expires,
	  const struct alloc_record *recs, size_t n)
{
	struct store_op *op = store_op_new(STORE_OP_PUT, key);
	struct store_qp *q;

	if (op == NULL)
		return store_queue(s, NULL);
	q = calloc(n ? n : 1, sizeof(*q));
	if (q == NULL) {
		store_writer_free_op(&op->op);
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
		q[i].home = recs[i].fallback ? recs[i].home_side + 1 : 0;
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
	struct store_op *op = store_op_new(STORE_OP_RENEW, key);

	if (op != NULL)
		op->b = expires;
	return store_queue(s, op);
}

uint64_t
store_del(struct c4p_store *s, const char *key)
{
	return store_queue(s, store_op_new(STORE_OP_DEL, key));
}

uint64_t
store_del_job(struct c4p_store *s, uint64_t job)
{
	struct store_op *op = store_op_new(STORE_OP_DEL_JOB, NULL);

	if (op != NULL)
		op->a = job;
	return store_queue(s, op);
}

uint64_t
store_expire(struct c4p_store *s, uint64_t now)
{
	struct store_op *op = store_op_new(STORE_OP_EXPIRE, NULL);

	if (op != NULL)
		op->a = now;
	return store_queue(s, op);
}

uint64_t
store_move(struct c4p_store *s, const struct alloc_change *ch)
{
	struct store_op *op = store_op_new(STORE_OP_MOVE, ch->req_id);

	if (op != NULL)
		op->ch = *ch;
	return store_queue(s, op);
}

uint64_t
store_link(struct c4p_store *s, uint32_t link, bool up)
{
	struct store_op *op = store_op_new(STORE_OP_LINK, NULL);

	if (op != NULL) {
		op->a = link;
		op->b = up;
	}
	return store_queue(s, op);
}

uint64_t
store_catalog(struct c4p_store *s, const struct catalog_entry *e)
{
	struct store_op *op = store_op_new(STORE_OP_CATALOG, NULL);
	struct store_crec *c;

	if (op == NULL)
		return store_queue(s, NULL);
	c = calloc(e->n ? e->n : 1, sizeof(*c));
	if (c == NULL) {
		store_writer_free_op(&op->op);
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
	struct sqlq_stats qs;

	sqlq_get_stats(s->q, &qs);
	st->commits = qs.commits;
	st->inline_commits = qs.inline_commits;
	st->committed = qs.committed;
	st->failed = qs.failed || s->lost;
	st->commit_hist = qs.commit_hist;
	st->ops = s->last_seq;
}

void
store_close(struct c4p_store *s)
{
	if (s == NULL)
		return;
	/* The writer writes what is queued before it stops. */
	sqlq_close(s->q);
	if (s->fail_ev != NULL)
		event_free(s->fail_ev);
	free(s);
}
