/*
 * sqlq.c - one SQLite database written through a queue (sqlq.h gives the
 * rules).
 *
 * The one connection (opened NOMUTEX: SQLite does not serialise it) is
 * used by one thread at a time: the writer marks it taken (writing, under
 * mu) in the same critical section in which it empties the queue, and
 * waits while the loop holds it; the loop commits only when, under mu, the
 * queue is empty, the writer holds no group and no checkpoint it asked
 * for (valve) is pending.  Groups therefore commit in sequence order,
 * whoever writes them, and never meet a checkpoint.
 *
 * The writer wakes the loop through a pipe the loop watches (a full pipe
 * already wakes it), so the loop's base needs no thread support.
 */
#define LOG_SUBSYS "sqlq"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "sqlq.h"

#define SQLQ_STMTS_MAX 32

struct sqlq_stmt {
	const char *sql; /* a string literal: compared by address */
	sqlite3_stmt *st;
};

struct sqlq {
	struct sqlq_conf conf; /* path points at path */
	char path[4096];
	sqlite3 *db;
	/* stmts and wal_frames: the thread that holds the connection only */
	struct sqlq_stmt stmts[SQLQ_STMTS_MAX];
	int wal_frames;
	pthread_t thr, ckpt_thr;
	bool started, ckpt_started;
	pthread_mutex_t mu;
	pthread_cond_t cv, ckpt_cv;
	struct sqlq_op *head, *tail;	  /* under mu: handed to the writer */
	struct sqlq_op *done, *done_tail; /* under mu: done callbacks due */
	bool stop;			  /* under mu */
	bool sleeping;			  /* under mu: the writer waits on cv */
	bool writing;	   /* under mu: the connection is taken */
	bool valve;	   /* under mu: checkpoint asked of writer */
	uint64_t group_ms; /* under mu: oldest op being written */
	uint64_t committed, commits, inline_commits, failures; /* under mu */
	bool failed, unhealthy;				       /* under mu */
	struct http_hist commit_hist;			       /* under mu */
	_Atomic bool queued;		 /* a hint for the polling writer */
	_Atomic uint64_t committed_hint; /* committed, for the polling loop */
	_Atomic size_t pending;		 /* submitted, not yet finished */
	struct sqlq_op *stage, *stage_tail; /* loop only: not handed over */
	size_t nstage, stage_weight;	    /* loop only */
	bool stage_bulk;		    /* loop only */
	uint64_t next_seq, full;	    /* loop only */
	int pipe[2];
	struct event *done_ev, *await_ev;
};

static uint64_t
sqlq_now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000u;
}

static void
sqlq_ops_free(struct sqlq *q, struct sqlq_op *op)
{
	struct sqlq_op *nx;

	for (; op != NULL; op = nx) {
		nx = op->next;
		atomic_fetch_sub(&q->pending, 1);
		op->free(op);
	}
}

sqlite3 *
sqlq_db(struct sqlq *q)
{
	return q->db;
}

sqlite3_stmt *
sqlq_stmt(struct sqlq *q, const char *sql)
{
	for (int i = 0; i < SQLQ_STMTS_MAX; i++) {
		struct sqlq_stmt *e = &q->stmts[i];

		if (e->sql == sql)
			return e->st;
		if (e->sql != NULL)
			continue;
		if (sqlite3_prepare_v3(q->db, sql, -1,
				       SQLITE_PREPARE_PERSISTENT, &e->st,
				       NULL) != SQLITE_OK) {
			log_warnx("%s: %s", sql, sqlite3_errmsg(q->db));
			return NULL;
		}
		e->sql = sql;
		return e->st;
	}
	log_warnx("%s: more than %d statements", sql, SQLQ_STMTS_MAX);
	return NULL;
}

int
sqlq_exec(struct sqlq *q, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(q->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		log_warnx("%s: %s", sql, msg ? msg : sqlite3_errmsg(q->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* Steps one of the transaction's prepared statements; 0 or -1. */
static int
sqlq_step(struct sqlq *q, const char *sql)
{
	sqlite3_stmt *st = sqlq_stmt(q, sql);
	int rc;

	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* ---- committing (the writer, or the loop when the writer is idle) ----- */

/*
 * Writes batch (operations in sequence order) in one transaction.  On
 * success the operations with a done callback go to the loop's list and
 * the others are freed; on failure batch is left as it was, to retry.
 * The caller holds the connection.  Returns whether it committed and
 * sets *valve when the WAL has grown past wal_max_frames.
 */
static bool
sqlq_write(struct sqlq *q, struct sqlq_op *batch, bool on_loop, bool *valve)
{
	struct sqlq_op *op, *nx, *dh = NULL, *dt = NULL;
	uint64_t last = 0, t0, t1;
	bool ok = true;

	t0 = clock_ns(CLOCK_MONOTONIC);
	/* Prepared once like the others: no parsing in the commit path. */
	if (sqlq_step(q, "BEGIN IMMEDIATE") < 0)
		ok = false;
	for (op = batch; ok && op != NULL; op = op->next)
		if (op->run(q, op) < 0)
			ok = false;
	if (ok && sqlq_step(q, "COMMIT") < 0)
		ok = false;
	if (!ok) {
		log_warnx("the transaction from operation %llu failed: %s",
			  (unsigned long long)batch->seq,
			  sqlite3_errmsg(q->db));
		if (!sqlite3_get_autocommit(q->db))
			sqlq_step(q, "ROLLBACK");
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	*valve = ok && q->conf.checkpoint_ms > 0 &&
		 q->wal_frames >= q->conf.wal_max_frames;
	for (op = ok ? batch : NULL; op != NULL; op = nx) {
		nx = op->next;
		last = op->seq;
		op->next = NULL;
		if (op->done == NULL) {
			atomic_fetch_sub(&q->pending, 1);
			op->free(op);
		} else if (dt != NULL) {
			dt->next = op;
			dt = op;
		} else {
			dh = dt = op;
		}
	}
	pthread_mutex_lock(&q->mu);
	if (ok) {
		if (dh != NULL) {
			if (q->done_tail != NULL)
				q->done_tail->next = dh;
			else
				q->done = dh;
			q->done_tail = dt;
		}
		q->committed = last;
		q->commits++;
		if (on_loop)
			q->inline_commits++;
		q->unhealthy = false;
		http_hist_add(&q->commit_hist, (double)(t1 - t0) * 1e-9);
		atomic_store_explicit(&q->committed_hint, last,
				      memory_order_release);
	} else {
		q->failures++;
		q->failed = q->unhealthy = true;
	}
	pthread_mutex_unlock(&q->mu);
	return ok;
}

/* Wakes the loop's done_ev; a full pipe already wakes it. */
static void
sqlq_wake(struct sqlq *q)
{
	char one = 1;

	if (write(q->pipe[1], &one, 1) < 0 && errno != EAGAIN)
		log_warn("wakeup");
}

/*
 * The writer: commits batch, retrying a failed transaction after a
 * backoff until it commits or the queue stops (then it is given up).
 * Returns whether the WAL wants the valve.
 */
static bool
sqlq_commit(struct sqlq *q, struct sqlq_op *batch)
{
	int64_t wait_ms = q->conf.retry_ms > 0 ? q->conf.retry_ms : 1;
	bool valve = false;

	while (!sqlq_write(q, batch, false, &valve)) {
		struct timespec until;

		sqlq_wake(q); /* the owner learns of the failure now */
		pthread_mutex_lock(&q->mu);
		if (q->stop) {
			pthread_mutex_unlock(&q->mu);
			log_warnx("closing: a failed transaction is given up");
			sqlq_ops_free(q, batch);
			return false;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		/* New work signals cv too: an early wake-up only retries. */
		pthread_cond_timedwait(&q->cv, &q->mu, &until);
		pthread_mutex_unlock(&q->mu);
		wait_ms = wait_ms * 2 > q->conf.retry_max_ms
				  ? q->conf.retry_max_ms
				  : wait_ms * 2;
		if (wait_ms < 1)
			wait_ms = 1;
	}
	sqlq_wake(q);
	return valve;
}

/* The writer completes a checkpoint when the WAL is long and it is idle. */
static void
sqlq_wal_valve(struct sqlq *q)
{
	bool idle;

	if (q->wal_frames < q->conf.wal_max_frames)
		return;
	pthread_mutex_lock(&q->mu);
	idle = q->head == NULL;
	pthread_mutex_unlock(&q->mu);
	if (!idle)
		return;
	if (sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
				      NULL, NULL) != SQLITE_OK)
		log_warnx("checkpoint: %s", sqlite3_errmsg(q->db));
	q->wal_frames = 0;
}

/* Polls done(q) for up to spin_ns; true when it held, false on time. */
static bool
sqlq_spin(struct sqlq *q, bool (*done)(struct sqlq *))
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	for (unsigned i = 1;; i++) {
		if (done(q))
			return true;
		if ((i & 63) != 0)
			continue;
		/* a thread waiting for this core runs (a busy machine) */
		sched_yield();
		if ((int64_t)(clock_ns(CLOCK_MONOTONIC) - t0) > q->conf.spin_ns)
			return false;
	}
}

/* Writer: something is queued (a hint; the queue is read under mu). */
static bool
sqlq_has_work(struct sqlq *q)
{
	return atomic_load_explicit(&q->queued, memory_order_acquire);
}

/*
 * The writer thread: takes everything queued (and marks the connection
 * taken in the same critical section), commits it as one group, wakes
 * the loop, and completes a checkpoint when the WAL is long.
 */
static void *
sqlq_writer_main(void *arg)
{
	struct sqlq *q = arg;

	for (;;) {
		struct sqlq_op *batch;
		bool valve;

		if (q->conf.spin_ns > 0)
			sqlq_spin(q, sqlq_has_work);
		pthread_mutex_lock(&q->mu);
		/* Idle, or the loop holds the connection (it signals). */
		while ((q->head == NULL && !q->valve && !q->stop) ||
		       (q->writing && !q->stop)) {
			q->sleeping = true;
			pthread_cond_wait(&q->cv, &q->mu);
			q->sleeping = false;
		}
		batch = q->head;
		q->head = q->tail = NULL;
		atomic_store_explicit(&q->queued, false, memory_order_relaxed);
		valve = q->valve;
		if (batch == NULL && !valve) { /* stop, and nothing is left */
			pthread_mutex_unlock(&q->mu);
			break;
		}
		q->valve = false;
		q->writing = true;
		q->group_ms = batch != NULL ? batch->queued_ms : 0;
		pthread_mutex_unlock(&q->mu);
		if (batch != NULL)
			valve = sqlq_commit(q, batch);
		if (valve)
			sqlq_wal_valve(q);
		pthread_mutex_lock(&q->mu);
		q->writing = false;
		q->group_ms = 0;
		pthread_mutex_unlock(&q->mu);
	}
	return NULL;
}

/* Waits up to checkpoint_ms on ckpt_cv; false once the queue stops. */
static bool
sqlq_ckpt_wait(struct sqlq *q)
{
	struct timespec ts;
	bool go;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += q->conf.checkpoint_ms / 1000;
	ts.tv_nsec += (long)(q->conf.checkpoint_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&q->mu);
	if (!q->stop)
		pthread_cond_timedwait(&q->ckpt_cv, &q->mu, &ts);
	go = !q->stop;
	pthread_mutex_unlock(&q->mu);
	return go;
}

/*
 * The checkpointer: every checkpoint_ms, on its own connection, copies
 * committed WAL frames back into the database file (PASSIVE: it never
 * blocks the writer).
 */
static void *
sqlq_ckpt_main(void *arg)
{
	struct sqlq *q = arg;
	sqlite3 *db = NULL;
	char *msg = NULL;

	if (sqlite3_open_v2(q->path, &db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		log_warnx("checkpointer: %s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	/*
	 * A connection learns that the file is in WAL mode only once it has
	 * read it; until then a checkpoint does nothing.  Its copies need no
	 * fsync unless SQLQ_SYNC_FULL (the rule of sqlq.h).
	 */
	if (sqlite3_exec(db,
			 q->conf.sync == SQLQ_SYNC_FULL
				 ? "PRAGMA journal_mode=WAL;"
				   "PRAGMA synchronous=FULL"
				 : "PRAGMA journal_mode=WAL;"
				   "PRAGMA synchronous=OFF",
			 NULL, NULL, &msg) != SQLITE_OK) {
		log_warnx("checkpointer: %s", msg ? msg : "?");
		sqlite3_free(msg);
		sqlite3_close(db);
		return NULL;
	}
	while (sqlq_ckpt_wait(q)) {
		/*
		 * Repeat while frames were added meanwhile: each round copies
		 * only the newest, so one soon fits between two commits; the
		 * next commit then starts the WAL over instead of growing it.
		 */
		for (int i = 0; i < 16; i++) {
			int nlog = 0, ncopied = 0;

			if (sqlite3_wal_checkpoint_v2(
				    db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog,
				    &ncopied) != SQLITE_OK ||
			    ncopied >= nlog)
				break;
		}
	}
	sqlite3_close(db);
	return NULL;
}

/* SQLite's WAL hook: the WAL's length after each commit. */
static int
sqlq_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)db;
	(void)name;
	((struct sqlq *)arg)->wal_frames = frames;
	return SQLITE_OK;
}

/* ---- the loop's side --------------------------------------------------- */

/* Runs the done callbacks due and tells the owner how far commits got. */
static void
sqlq_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sqlq *q = arg;
	struct sqlq_op *l, *nx;
	uint64_t committed;
	bool failed;
	char buf[256];

	(void)what;
	if (fd >= 0)
		while (read(fd, buf, sizeof(buf)) > 0)
			;
	pthread_mutex_lock(&q->mu);
	l = q->done;
	q->done = q->done_tail = NULL;
	committed = q->committed;
	failed = q->failed;
	pthread_mutex_unlock(&q->mu);
	for (; l != NULL; l = nx) {
		nx = l->next;
		l->done(l);
		atomic_fetch_sub(&q->pending, 1);
		l->free(l);
	}
	if (q->conf.committed != NULL)
		q->conf.committed(committed, failed, q->conf.arg);
}

/* Loop: hands the stage to the writer (waking it only if it sleeps). */
static void
sqlq_hand_over(struct sqlq *q)
{
	if (q->stage == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	if (q->tail != NULL)
		q->tail->next = q->stage;
	else
		q->head = q->stage;
	q->tail = q->stage_tail;
	atomic_store_explicit(&q->queued, true, memory_order_release);
	/* A polling writer sees the hint; only a sleeping one needs a wake. */
	if (q->sleeping)
		pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	q->stage = q->stage_tail = NULL;
	q->nstage = q->stage_weight = 0;
	q->stage_bulk = false;
}

/*
 * Loop: commits the stage itself when it is small and the writer idle,
 * then reports at once.  A failed commit goes to the writer, which
 * retries it.  Returns true when the stage is gone.
 */
static bool
sqlq_commit_inline(struct sqlq *q)
{
	struct sqlq_op *batch = q->stage;
	bool idle, valve = false, ok;

	if (batch == NULL || q->stage_bulk ||
	    q->nstage > q->conf.inline_ops_max ||
	    q->stage_weight > q->conf.inline_weight_max)
		return false;
	pthread_mutex_lock(&q->mu);
	idle = q->head == NULL && !q->writing && !q->valve && !q->failed;
	if (idle)
		q->writing = true;
	pthread_mutex_unlock(&q->mu);
	if (!idle)
		return false;
	ok = sqlq_write(q, batch, true, &valve);
	pthread_mutex_lock(&q->mu);
	q->writing = false;
	if (valve)
		q->valve = true;
	/* the writer may wait for the connection the loop now lets go */
	if (q->sleeping && (q->valve || q->head != NULL))
		pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	if (!ok)
		sqlq_hand_over(q);
	q->stage = q->stage_tail = NULL;
	q->nstage = q->stage_weight = 0;
	sqlq_done_cb(-1, 0, q);
	return true;
}

static bool
sqlq_caught_up(struct sqlq *q)
{
	return atomic_load_explicit(&q->committed_hint, memory_order_acquire) >=
	       q->next_seq;
}

/*
 * On the loop, after the callbacks of every input that was ready: commits
 * the stage inline when it can, else hands it to the writer; then, when a
 * few operations are uncommitted, polls for their commit for up to
 * spin_ns and reports it at once.  When the bound passes, the writer's
 * wake-up reports it as usual.
 */
static void
sqlq_await_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sqlq *q = arg;
	uint64_t c;

	(void)fd;
	(void)what;
	if (!q->started) /* sqlq_start() hands the stage over */
		return;
	if (sqlq_commit_inline(q))
		return;
	sqlq_hand_over(q);
	if (q->conf.await_ops_max == 0)
		return;
	c = atomic_load_explicit(&q->committed_hint, memory_order_acquire);
	if (c >= q->next_seq || q->next_seq - c > q->conf.await_ops_max)
		return;
	if (sqlq_spin(q, sqlq_caught_up))
		sqlq_done_cb(-1, 0, q);
}

uint64_t
sqlq_submit(struct sqlq *q, struct sqlq_op *op)
{
	if (atomic_load(&q->pending) >= q->conf.queue_max) {
		q->full++;
		log_warnx("queue full (%zu operations): one refused",
			  q->conf.queue_max);
		return 0;
	}
	atomic_fetch_add(&q->pending, 1);
	op->next = NULL;
	op->seq = ++q->next_seq;
	op->queued_ms = sqlq_now_ms();
	if (q->stage_tail != NULL)
		q->stage_tail->next = op;
	else
		q->stage = op;
	q->stage_tail = op;
	q->stage_weight += op->weight;
	q->stage_bulk |= op->bulk;
	/*
	 * A stage that can no longer commit on the loop goes to the writer
	 * at once, so that it commits while the loop works through the round.
	 */
	if (++q->nstage > q->conf.inline_ops_max ||
	    q->stage_weight > q->conf.inline_weight_max || op->bulk ||
	    q->conf.sync == SQLQ_SYNC_FULL)
		sqlq_hand_over(q);
	/* Runs after the other callbacks already active in this round. */
	event_active(q->await_ev, EV_WRITE, 0);
	return q->next_seq; /* op's: op itself may be gone already */
}

void
sqlq_get_stats(struct sqlq *q, struct sqlq_stats *out)
{
	uint64_t oldest;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&q->mu);
	out->committed = q->committed;
	out->commits = q->commits;
	out->inline_commits = q->inline_commits;
	out->failures = q->failures;
	out->failed = q->failed;
	out->healthy = !q->unhealthy;
	out->commit_hist = q->commit_hist;
	oldest = q->group_ms;
	if (oldest == 0 && q->head != NULL)
		oldest = q->head->queued_ms;
	pthread_mutex_unlock(&q->mu);
	if (oldest == 0 && q->stage != NULL)
		oldest = q->stage->queued_ms;
	out->submitted = q->next_seq;
	out->full = q->full;
	out->pending = atomic_load(&q->pending);
	out->stall_ms = oldest != 0 ? sqlq_now_ms() - oldest : 0;
}

/* ---- opening and closing ----------------------------------------------- */

struct sqlq *
sqlq_open(const struct sqlq_conf *conf, struct event_base *base, char *err,
	  size_t errlen)
{
	struct sqlq *q = calloc(1, sizeof(*q));

	if (q == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	q->conf = *conf;
	snprintf(q->path, sizeof(q->path), "%s", conf->path);
	q->conf.path = q->path;
	q->pipe[0] = q->pipe[1] = -1;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	pthread_cond_init(&q->ckpt_cv, NULL);
	if (sqlite3_open_v2(q->path, &q->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", q->path,
			 q->db ? sqlite3_errmsg(q->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(q->db, conf->busy_ms);
	if (pipe2(q->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	q->done_ev = event_new(base, q->pipe[0], EV_READ | EV_PERSIST,
			       sqlq_done_cb, q);
	q->await_ev = event_new(base, -1, 0, sqlq_await_cb, q);
	if (q->done_ev == NULL || q->await_ev == NULL ||
	    event_add(q->done_ev, NULL) < 0) {
		snprintf(err, errlen, "cannot create the queue's events");
		goto fail;
	}
	return q;
fail:
	sqlq_close(q);
	return NULL;
}

int
sqlq_start(struct sqlq *q, char *err, size_t errlen)
{
	bool ckpt = q->conf.checkpoint_ms > 0;

	if (sqlq_exec(q, "PRAGMA journal_mode=WAL") < 0 ||
	    sqlq_exec(q, q->conf.sync == SQLQ_SYNC_FULL
				 ? "PRAGMA synchronous=FULL"
				 : "PRAGMA synchronous=OFF") < 0 ||
	    (ckpt && sqlq_exec(q, "PRAGMA wal_autocheckpoint=0") < 0)) {
		snprintf(err, errlen, "cannot set WAL mode: %s",
			 sqlite3_errmsg(q->db));
		return -1;
	}
	/* after wal_autocheckpoint: that pragma replaces any hook */
	if (ckpt)
		sqlite3_wal_hook(q->db, sqlq_wal_hook, q);
	if (pthread_create(&q->thr, NULL, sqlq_writer_main, q) != 0) {
		snprintf(err, errlen, "cannot start the writer thread");
		return -1;
	}
	q->started = true;
	if (ckpt) {
		if (pthread_create(&q->ckpt_thr, NULL, sqlq_ckpt_main, q) !=
		    0) {
			snprintf(err, errlen,
				 "cannot start the checkpoint thread");
			return -1;
		}
		q->ckpt_started = true;
	}
	/* what was submitted before goes first */
	sqlq_hand_over(q);
	return 0;
}

void
sqlq_close(struct sqlq *q)
{
	if (q == NULL)
		return;
	if (q->started)
		sqlq_hand_over(q);
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_signal(&q->cv);
	pthread_cond_signal(&q->ckpt_cv);
	pthread_mutex_unlock(&q->mu);
	if (q->started)
		pthread_join(q->thr, NULL);
	if (q->ckpt_started)
		pthread_join(q->ckpt_thr, NULL);
	sqlq_ops_free(q, q->done);
	sqlq_ops_free(q, q->head);
	sqlq_ops_free(q, q->stage);
	for (int i = 0; i < SQLQ_STMTS_MAX; i++)
		sqlite3_finalize(q->stmts[i].st);
	if (q->db != NULL && sqlite3_close(q->db) != SQLITE_OK)
		log_warnx("%s not closed cleanly", q->path);
	if (q->done_ev != NULL)
		event_free(q->done_ev);
	if (q->await_ev != NULL)
		event_free(q->await_ev);
	if (q->pipe[0] >= 0)
		close(q->pipe[0]);
	if (q->pipe[1] >= 0)
		close(q->pipe[1]);
	pthread_cond_destroy(&q->cv);
	pthread_cond_destroy(&q->ckpt_cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}
