/*
 * store_writer.c - the store's threads: the writer, which commits what the
 * loop hands over in one transaction per group, and the checkpointer; and
 * the SQL of every operation (store.c says who commits when).
 */
#define LOG_SUBSYS "c4p-store"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "store_int.h"

static void store_writer_wal_valve(struct c4p_store *s);

/* ---- writing (the writer thread, or the loop when the writer is idle)
 * ----------------------------------------------------------------------- */

int
store_writer_exec(sqlite3 *db, const char *sql, const char *what)
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
store_writer_stmt(struct c4p_store *s, const char *sql)
{
	for (int i = 0; i < STORE_STMTS_MAX; i++) {
		struct store_stmt *e = &s->stmts[i];

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
store_writer_run(struct c4p_store *s, const char *sql, const char *key,
		 const int64_t *v, int nv, const void *blob, size_t bloblen)
{
	sqlite3_stmt *st = store_writer_stmt(s, sql);
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
store_writer_apply_move(struct c4p_store *s, const struct store_op *op)
{
	sqlite3 *db = s->db;
	const struct alloc_change *c = &op->ch;
	sqlite3_stmt *st = NULL;
	struct store_qp *q = NULL;
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
		struct store_qp *e = &q[c->index];

		e->stranded = c->kind == ALLOC_STRANDED;
		if (c->kind == ALLOC_MOVED) {
			e->sport = c->new_sport;
			e->src_port = c->new_path.src_port;
			e->dst_port = c->new_path.dst_port;
			e->up = c->new_path.up;
			e->down = c->new_path.down;
		}
	}
	rc = store_writer_run(s, "UPDATE req SET qps = ?2 WHERE key = ?1",
			      op->key, NULL, 0, q, n * sizeof(*q));
out:
	if (st != NULL)
		sqlite3_finalize(st);
	free(q);
	return rc;
}

static int
store_writer_apply(struct c4p_store *s, const struct store_op *op)
{
	int64_t v[4];

	switch (op->kind) {
	case STORE_OP_JOB:
		v[0] = (int64_t)op->a;
		return store_writer_run(s,
					"INSERT OR REPLACE INTO job(name, id) "
					"VALUES (?, ?)",
					op->key, v, 1, NULL, 0);
	case STORE_OP_PUT:
		v[0] = (int64_t)op->a;
		v[1] = (int64_t)op->b;
		v[2] = (int64_t)op->n;
		return store_writer_run(
			s,
			"INSERT OR REPLACE INTO req(key, job, "
			"expires, nqp, qps) VALUES (?, ?, ?, ?, ?)",
			op->key, v, 3, op->blob,
			op->n * sizeof(struct store_qp));
	case STORE_OP_RENEW:
		v[0] = (int64_t)op->b;
		return store_writer_run(
			s, "UPDATE req SET expires = ?2 WHERE key = ?1",
			op->key, v, 1, NULL, 0);
	case STORE_OP_DEL:
		return store_writer_run(s, "DELETE FROM req WHERE key = ?",
					op->key, NULL, 0, NULL, 0);
	case STORE_OP_DEL_JOB:
		v[0] = (int64_t)op->a;
		return store_writer_run(s, "DELETE FROM req WHERE job = ?",
					NULL, v, 1, NULL, 0);
	case STORE_OP_EXPIRE:
		v[0] = (int64_t)op->a;
		return store_writer_run(s, "DELETE FROM req WHERE expires <= ?",
					NULL, v, 1, NULL, 0);
	case STORE_OP_MOVE:
		return store_writer_apply_move(s, op);
	case STORE_OP_LINK:
		v[0] = (int64_t)op->a;
		v[1] = (int64_t)op->b;
		return store_writer_run(s,
					"INSERT OR REPLACE INTO link(id, up) "
					"VALUES (?, ?)",
					NULL, v, 2, NULL, 0);
	case STORE_OP_CATALOG:
		v[0] = op->ck.sip;
		v[1] = op->ck.dip;
		v[2] = op->ck.side;
		return store_writer_run(
			s,
			"INSERT OR REPLACE INTO catalog(sip, dip, "
			"side, recs) VALUES (?, ?, ?, ?)",
			NULL, v, 3, op->blob,
			op->n * sizeof(struct store_crec));
	}
	return -1;
}

int
store_writer_spin(struct c4p_store *s, bool (*done)(struct c4p_store *))
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
		    STORE_SPIN_NS)
			return 0;
	}
}

/* Writer: something is queued (a hint; the queue is read under mu). */
static bool
store_writer_has_work(struct c4p_store *s)
{
	return atomic_load_explicit(&s->queued, memory_order_acquire);
}

/* Loop: everything it queued has committed. */
bool
store_writer_write(struct c4p_store *s, struct store_op *batch, bool on_loop)
{
	struct store_op *op, *nx;
	struct timespec t0, t1;
	uint64_t last = 0;
	bool ok = true, valve;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Prepared once like the others: no parsing in the commit path. */
	if (store_writer_run(s, "BEGIN", NULL, NULL, 0, NULL, 0) < 0)
		ok = false;
	for (op = batch; ok && op != NULL; op = op->next)
		if (store_writer_apply(s, op) < 0)
			ok = false;
	if (ok && store_writer_run(s, "COMMIT", NULL, NULL, 0, NULL, 0) < 0)
		ok = false;
	if (!ok && !sqlite3_get_autocommit(s->db))
		store_writer_run(s, "ROLLBACK", NULL, NULL, 0, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (op = batch; op != NULL; op = nx) {
		nx = op->next;
		last = op->seq;
		store_op_free(op);
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
store_writer_main(void *arg)
{
	struct c4p_store *s = arg;

	for (;;) {
		struct store_op *batch;
		bool valve;

		store_writer_spin(s, store_writer_has_work);
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
			valve = store_writer_write(s, batch, false);
			event_active(s->done_ev, EV_WRITE, 0);
		}
		if (!valve)
			continue;
		store_writer_wal_valve(s);
		pthread_mutex_lock(&s->mu);
		s->writing = false;
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

/*
 * The checkpointer: every STORE_CHECKPOINT_MS, on its own connection,
 * copies committed WAL frames back into the database file (PASSIVE: it
 * never blocks the writer).  The writer's own automatic checkpoints are
 * off, so a checkpoint never delays an answer.
 */
static void *
store_writer_ckpt_main(void *arg)
{
	struct c4p_store *s = arg;
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
	if (store_writer_exec(db, "PRAGMA journal_mode=WAL",
			      "store: checkpointer") < 0 ||
	    store_writer_exec(db,
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
		ts.tv_sec += STORE_CHECKPOINT_MS / 1000;
		ts.tv_nsec += (long)(STORE_CHECKPOINT_MS % 1000) * 1000000L;
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
		for (int i = 0; i < STORE_CHECKPOINT_TRIES; i++) {
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
int
store_writer_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)db;
	(void)name;
	((struct c4p_store *)arg)->wal_frames = frames;
	return SQLITE_OK;
}

/* The writer completes a checkpoint when the WAL is long and it is idle. */
static void
store_writer_wal_valve(struct c4p_store *s)
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

int
store_writer_start(struct c4p_store *s, char *err, size_t errlen)
{
	if (pthread_create(&s->thr, NULL, store_writer_main, s) != 0) {
		snprintf(err, errlen, "cannot start the store's thread");
		return -1;
	}
	s->started = true;
	if (pthread_create(&s->ckpt_thr, NULL, store_writer_ckpt_main, s) !=
	    0) {
		snprintf(err, errlen, "cannot start the checkpoint thread");
		return -1;
	}
	s->ckpt_started = true;
	return 0;
}
