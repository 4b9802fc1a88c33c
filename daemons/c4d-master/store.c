/*
 * store.c - the master's event store: SQLite in WAL mode, driven by one
 * worker thread so the event loop never waits for the disk.
 *
 * The loop queues jobs (a transition to commit, an outbox read, an outbox
 * row to mark); the worker runs them in order, one transaction each, and
 * hands finished jobs back through a pipe the loop watches, where their
 * callbacks run.  Because one worker runs the queue in order, a read queued
 * after a put sees that put.
 *
 * A transition, its history row and one outbox row per webhook commit in
 * one transaction with synchronous=FULL: after a crash either all of them
 * exist or none does.  A put whose revision is not newer than the stored
 * one changes nothing, so replays are harmless.
 */
#define LOG_SUBSYS "store"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "log.h"
#include "master.h"

enum store_op {
	STORE_PUT,
	STORE_NEXT,
	STORE_FAILED,
	STORE_DELIVERED,
};

struct store_job {
	struct store_job *next;
	enum store_op op;
	uint64_t queued_ms;
	/* STORE_PUT */
	char *id;
	uint64_t revision, at_ns;
	int kind, state;
	uint64_t first_interval, last_interval, first_seen, last_seen;
	uint8_t *packed;
	size_t packed_len;
	char **webhooks;
	size_t nwebhooks;
	char *payload;
	size_t len;
	/* STORE_NEXT, STORE_FAILED, STORE_DELIVERED */
	char *webhook;
	uint64_t seq, next_ns;
	store_next_fn cb;
	void *arg;
	/* results of STORE_NEXT */
	int rc;
	int found;
	struct store_row row;
	char *row_ce_id, *row_payload;
	uint64_t pending, oldest_ns;
};

struct store_list {
	struct store_job *head, *tail;
	size_t n;
};

struct store {
	sqlite3 *db;
	sqlite3_stmt *s_get_rev, *s_upsert, *s_history, *s_outbox, *s_next,
		*s_count, *s_failed, *s_delivered;
	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store_list todo, done; /* under mu */
	int stopping;		      /* under mu */
	struct store_stats stats;     /* under mu */
	int pipe[2];
	struct event *ev_done;
};

/* The schema of version STORE_SCHEMA_VERSION, one script. */
static const char store_schema_sql[] =
	"CREATE TABLE events ("
	" id TEXT PRIMARY KEY, kind INTEGER NOT NULL, state INTEGER NOT NULL,"
	" revision INTEGER NOT NULL, first_interval INTEGER,"
	" last_interval INTEGER, first_seen_ns INTEGER, last_seen_ns INTEGER,"
	" updated_ns INTEGER NOT NULL, event BLOB NOT NULL);"
	"CREATE TABLE event_history ("
	" id TEXT NOT NULL, revision INTEGER NOT NULL,"
	" state INTEGER NOT NULL, at_ns INTEGER NOT NULL,"
	" event BLOB NOT NULL, PRIMARY KEY (id, revision));"
	"CREATE TABLE outbox ("
	" seq INTEGER PRIMARY KEY AUTOINCREMENT, webhook TEXT NOT NULL,"
	" event_id TEXT NOT NULL, revision INTEGER NOT NULL,"
	" ce_id TEXT NOT NULL, payload TEXT NOT NULL,"
	" attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ns INTEGER,"
	" created_ns INTEGER NOT NULL, delivered_ns INTEGER,"
	" UNIQUE (webhook, ce_id));"
	"CREATE INDEX outbox_pending ON outbox (webhook, seq)"
	" WHERE delivered_ns IS NULL;"
	"CREATE INDEX events_state ON events (state, updated_ns);";

static uint64_t
store_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t
store_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
store_job_free(struct store_job *j)
{
	if (j == NULL)
		return;
	free(j->id);
	free(j->packed);
	for (size_t i = 0; i < j->nwebhooks; i++)
		free(j->webhooks[i]);
	free(j->webhooks);
	free(j->payload);
	free(j->webhook);
	free(j->row_ce_id);
	free(j->row_payload);
	free(j);
}

static void
store_list_push(struct store_list *l, struct store_job *j)
{
	j->next = NULL;
	if (l->tail != NULL)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	l->n++;
}

static int
store_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		log_warnx("%s: %s", sql, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* ---- the worker --------------------------------------------------------- */

/* Commits one transition; 1 if stale (nothing written), 0, or -1. */
static int
store_do_put(struct store *st, struct store_job *j)
{
	sqlite3 *db = st->db;
	sqlite3_stmt *s;
	char ce_id[C4D_EVENT_ID_MAX + 32];
	int rc = -1, step;

	if (store_exec(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	s = st->s_get_rev;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW &&
	    (uint64_t)sqlite3_column_int64(s, 0) >= j->revision) {
		sqlite3_reset(s);
		store_exec(db, "ROLLBACK");
		return 1;
	}
	sqlite3_reset(s);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		goto out;

	s = st->s_upsert;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, j->kind);
	sqlite3_bind_int(s, 3, j->state);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)j->revision);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)j->first_interval);
	sqlite3_bind_int64(s, 6, (sqlite3_int64)j->last_interval);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)j->first_seen);
	sqlite3_bind_int64(s, 8, (sqlite3_int64)j->last_seen);
	sqlite3_bind_int64(s, 9, (sqlite3_int64)j->at_ns);
	sqlite3_bind_blob(s, 10, j->packed, (int)j->packed_len, SQLITE_STATIC);
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_DONE)
		goto out;

	s = st->s_history;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)j->revision);
	sqlite3_bind_int(s, 3, j->state);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)j->at_ns);
	sqlite3_bind_blob(s, 5, j->packed, (int)j->packed_len, SQLITE_STATIC);
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_DONE)
		goto out;

	snprintf(ce_id, sizeof(ce_id), "%s/%llu", j->id,
		 (unsigned long long)j->revision);
	s = st->s_outbox;
	for (size_t i = 0; i < j->nwebhooks; i++) {
		sqlite3_bind_text(s, 1, j->webhooks[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, j->id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 3, (sqlite3_int64)j->revision);
		sqlite3_bind_text(s, 4, ce_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 5, j->payload, (int)j->len, SQLITE_STATIC);
		sqlite3_bind_int64(s, 6, (sqlite3_int64)j->at_ns);
		step = sqlite3_step(s);
		sqlite3_reset(s);
		if (step != SQLITE_DONE)
			goto out;
	}
	if (store_exec(db, "COMMIT") == 0)
		rc = 0;
out:
	if (rc < 0) {
		log_warnx("event %s revision %llu not stored: %s", j->id,
			  (unsigned long long)j->revision, sqlite3_errmsg(db));
		if (!sqlite3_get_autocommit(db))
			store_exec(db, "ROLLBACK");
	}
	return rc;
}

static int
store_do_next(struct store *st, struct store_job *j)
{
	sqlite3_stmt *s = st->s_next;
	int step, rc = 0;

	sqlite3_bind_text(s, 1, j->webhook, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW) {
		const unsigned char *ce = sqlite3_column_text(s, 1);
		const unsigned char *p = sqlite3_column_text(s, 2);
		int plen = sqlite3_column_bytes(s, 2);

		j->found = 1;
		j->row.seq = (uint64_t)sqlite3_column_int64(s, 0);
		j->row_ce_id = strdup(ce ? (const char *)ce : "");
		j->row_payload = malloc((size_t)plen + 1);
		if (j->row_ce_id == NULL || j->row_payload == NULL) {
			rc = -1;
		} else {
			memcpy(j->row_payload, p ? (const char *)p : "",
			       (size_t)plen);
			j->row_payload[plen] = '\0';
		}
		j->row.len = (size_t)plen;
		j->row.attempts = (uint64_t)sqlite3_column_int64(s, 3);
		j->row.created_ns = (uint64_t)sqlite3_column_int64(s, 4);
	} else if (step != SQLITE_DONE) {
		rc = -1;
	}
	sqlite3_reset(s);
	if (rc == 0) {
		s = st->s_count;
		sqlite3_bind_text(s, 1, j->webhook, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			j->pending = (uint64_t)sqlite3_column_int64(s, 0);
			j->oldest_ns = (uint64_t)sqlite3_column_int64(s, 1);
		} else {
			rc = -1;
		}
		sqlite3_reset(s);
	}
	if (rc < 0)
		log_warnx("outbox of %s not read: %s", j->webhook,
			  sqlite3_errmsg(st->db));
	j->row.ce_id = j->row_ce_id;
	j->row.payload = j->row_payload;
	return rc;
}

static int
store_do_mark(struct store *st, struct store_job *j)
{
	sqlite3_stmt *s =
		j->op == STORE_DELIVERED ? st->s_delivered : st->s_failed;
	int step;

	if (j->op == STORE_DELIVERED) {
		sqlite3_bind_int64(s, 1, (sqlite3_int64)store_wall_ns());
		sqlite3_bind_int64(s, 2, (sqlite3_int64)j->seq);
	} else {
		sqlite3_bind_int64(s, 1, (sqlite3_int64)j->next_ns);
		sqlite3_bind_int64(s, 2, (sqlite3_int64)j->seq);
	}
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_DONE) {
		log_warnx("outbox row %llu not updated: %s",
			  (unsigned long long)j->seq, sqlite3_errmsg(st->db));
		return -1;
	}
	return 0;
}

/*
 * Runs one job.  A write that fails (the disk is full, another process
 * holds the lock too long, an I/O error) is retried, with a backoff from
 * STORE_RETRY_MS doubling to STORE_RETRY_MAX_MS, until it succeeds or the
 * store is closing: later jobs wait behind it, so commits stay in order
 * and a transient failure loses nothing.  Meanwhile the store reports
 * itself unhealthy.  Reads fail at once; their callers retry.
 */
static int
store_run(struct store *st, struct store_job *j)
{
	int64_t wait_ms = STORE_RETRY_MS;
	int rc;

	for (;;) {
		struct timespec until;

		switch (j->op) {
		case STORE_PUT:
			rc = store_do_put(st, j);
			break;
		case STORE_NEXT:
			return store_do_next(st, j);
		default:
			rc = store_do_mark(st, j);
			break;
		}
		if (rc >= 0)
			return rc;
		pthread_mutex_lock(&st->mu);
		st->stats.errors++;
		st->stats.healthy = 0;
		if (st->stopping) {
			pthread_mutex_unlock(&st->mu);
			log_warnx("store closing: a failed write is given up");
			return -1;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		/* New jobs signal cv too: an early wake-up only retries. */
		pthread_cond_timedwait(&st->cv, &st->mu, &until);
		pthread_mutex_unlock(&st->mu);
		wait_ms = wait_ms * 2 > STORE_RETRY_MAX_MS ? STORE_RETRY_MAX_MS
							   : wait_ms * 2;
	}
}

static void *
store_worker(void *arg)
{
	struct store *st = arg;
	struct store_job *j;
	char one = 1;

	for (;;) {
		int rc;

		pthread_mutex_lock(&st->mu);
		while (st->todo.head == NULL && !st->stopping)
			pthread_cond_wait(&st->cv, &st->mu);
		j = st->todo.head;
		if (j == NULL) { /* stopping and drained */
			pthread_mutex_unlock(&st->mu);
			break;
		}
		pthread_mutex_unlock(&st->mu);

		rc = store_run(st, j);
		j->rc = rc < 0 ? -1 : 0;

		pthread_mutex_lock(&st->mu);
		st->todo.head = j->next;
		if (st->todo.head == NULL)
			st->todo.tail = NULL;
		st->todo.n--;
		if (rc < 0) { /* store_run() counted failed writes */
			if (j->op == STORE_NEXT)
				st->stats.errors++;
			st->stats.healthy = 0;
		} else if (j->op != STORE_NEXT) {
			st->stats.healthy = 1;
		}
		if (j->op == STORE_PUT && rc == 0)
			st->stats.puts++;
		else if (j->op == STORE_PUT && rc == 1)
			st->stats.stale++;
		else if (j->op == STORE_DELIVERED && rc == 0)
			st->stats.delivered++;
		if (j->op == STORE_NEXT && j->cb != NULL) {
			store_list_push(&st->done, j);
			j = NULL;
		}
		pthread_mutex_unlock(&st->mu);
		if (j == NULL) {
			/* A full pipe already wakes the loop. */
			if (write(st->pipe[1], &one, 1) < 0 && errno != EAGAIN)
				log_warn("store wakeup");
		}
		store_job_free(j);
	}
	return NULL;
}

/* ---- the loop side ------------------------------------------------------ */

static void
store_done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct store *st = arg;
	struct store_list l;
	char buf[256];

	(void)what;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&st->mu);
	l = st->done;
	memset(&st->done, 0, sizeof(st->done));
	pthread_mutex_unlock(&st->mu);
	while (l.head != NULL) {
		struct store_job *j = l.head;

		l.head = j->next;
		if (j->cb != NULL)
			j->cb(j->rc, j->found ? &j->row : NULL, j->pending,
			      j->oldest_ns, j->arg);
		store_job_free(j);
	}
}

static int
store_queue(struct store *st, struct store_job *j)
{
	pthread_mutex_lock(&st->mu);
	if (st->todo.n >= STORE_QUEUE_MAX || st->stopping) {
		st->stats.errors++;
		pthread_mutex_unlock(&st->mu);
		log_warnx("store queue full: job dropped");
		store_job_free(j);
		return -1;
	}
	j->queued_ms = store_now_ms();
	store_list_push(&st->todo, j);
	pthread_cond_signal(&st->cv);
	pthread_mutex_unlock(&st->mu);
	return 0;
}

/*
 * Queues the transition ev (copied: the caller keeps ownership) with one
 * outbox row per named webhook carrying payload.  ev must have an id and
 * a revision; at_ns is the master's time of the transition.  Returns 0
 * once queued, -1 if it cannot be (no memory, queue full).
 */
int
store_put_event(struct store *st, const C4__Event *ev, uint64_t at_ns,
		const char *const *webhooks, size_t nwebhooks,
		const char *payload, size_t len)
{
	struct store_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return -1;
	j->op = STORE_PUT;
	j->id = strdup(ev->id ? ev->id : "");
	j->revision = ev->revision;
	j->at_ns = at_ns;
	j->kind = ev->kind;
	j->state = ev->state;
	j->first_interval = ev->first_interval;
	j->last_interval = ev->last_interval;
	j->first_seen = ev->first_seen_ns;
	j->last_seen = ev->last_seen_ns;
	j->packed_len = c4__event__get_packed_size(ev);
	j->packed = malloc(j->packed_len ? j->packed_len : 1);
	j->payload = malloc(len + 1);
	j->len = len;
	j->webhooks = calloc(nwebhooks ? nwebhooks : 1, sizeof(char *));
	if (j->id == NULL || j->packed == NULL || j->payload == NULL ||
	    j->webhooks == NULL)
		goto fail;
	c4__event__pack(ev, j->packed);
	memcpy(j->payload, payload, len);
	j->payload[len] = '\0';
	for (size_t i = 0; i < nwebhooks; i++) {
		j->webhooks[i] = strdup(webhooks[i]);
		if (j->webhooks[i] == NULL)
			goto fail;
		j->nwebhooks++;
	}
	return store_queue(st, j);
fail:
	store_job_free(j);
	return -1;
}

/*
 * Reads the oldest undelivered outbox row of webhook; cb runs on the loop
 * (unless store_forget(st, arg) is called first).  0 once queued, or -1.
 */
int
store_outbox_next(struct store *st, const char *webhook, store_next_fn cb,
		  void *arg)
{
	struct store_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return -1;
	j->op = STORE_NEXT;
	j->webhook = strdup(webhook);
	j->cb = cb;
	j->arg = arg;
	if (j->webhook == NULL) {
		store_job_free(j);
		return -1;
	}
	return store_queue(st, j);
}

/* Counts a failed attempt on row seq and notes when it is retried. */
int
store_outbox_failed(struct store *st, uint64_t seq, uint64_t next_ns)
{
	struct store_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return -1;
	j->op = STORE_FAILED;
	j->seq = seq;
	j->next_ns = next_ns;
	return store_queue(st, j);
}

/* Marks row seq delivered (a receiver acknowledged it). */
int
store_mark_delivered(struct store *st, uint64_t seq)
{
	struct store_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return -1;
	j->op = STORE_DELIVERED;
	j->seq = seq;
	return store_queue(st, j);
}

void
store_forget(struct store *st, void *arg)
{
	pthread_mutex_lock(&st->mu);
	for (struct store_job *j = st->todo.head; j != NULL; j = j->next)
		if (j->arg == arg)
			j->cb = NULL;
	for (struct store_job *j = st->done.head; j != NULL; j = j->next)
		if (j->arg == arg)
			j->cb = NULL;
	pthread_mutex_unlock(&st->mu);
}

void
store_get_stats(struct store *st, struct store_stats *out)
{
	pthread_mutex_lock(&st->mu);
	*out = st->stats;
	out->queued = st->todo.n;
	out->stall_ms =
		st->todo.head ? store_now_ms() - st->todo.head->queued_ms : 0;
	pthread_mutex_unlock(&st->mu);
	if (out->stall_ms > STORE_STALL_MS)
		out->healthy = 0;
}

/* ---- opening and closing ------------------------------------------------ */

static int
store_prepare(struct store *st, sqlite3_stmt **s, const char *sql)
{
	return sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, s,
				  NULL) == SQLITE_OK
		       ? 0
		       : -1;
}

static int
store_check_schema(struct store *st, char *err, size_t errlen)
{
	sqlite3_stmt *s = NULL;
	int version = -1, ok = 0;

	if (sqlite3_prepare_v2(st->db, "PRAGMA quick_check", -1, &s, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(s, 0);

		ok = t != NULL && strcmp((const char *)t, "ok") == 0;
	}
	sqlite3_finalize(s);
	if (!ok) {
		snprintf(err, errlen, "not a usable database (%s)",
			 sqlite3_errmsg(st->db));
		return -1;
	}
	s = NULL;
	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version == STORE_SCHEMA_VERSION)
		return 0;
	if (version != 0) {
		snprintf(err, errlen,
			 "schema version %d is not %d (written by another "
			 "version of c4d-master?)",
			 version, STORE_SCHEMA_VERSION);
		return -1;
	}
	if (store_exec(st->db, "BEGIN IMMEDIATE") < 0)
		goto fail;
	if (store_exec(st->db, store_schema_sql) < 0)
		goto fail;
	if (store_exec(st->db, "PRAGMA user_version = 1") < 0 ||
	    store_exec(st->db, "COMMIT") < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "cannot create the schema: %s",
		 sqlite3_errmsg(st->db));
	if (!sqlite3_get_autocommit(st->db))
		store_exec(st->db, "ROLLBACK");
	return -1;
}

/* Hands every open event and the newest resolved ones to cb, oldest first. */
static int
store_load(struct store *st, size_t keep_resolved, store_event_fn cb, void *arg,
	   char *err, size_t errlen)
{
	static const char sql[] =
		"SELECT event, updated_ns FROM events WHERE state != 3"
		" UNION ALL SELECT * FROM (SELECT event, updated_ns FROM"
		" events WHERE state = 3 ORDER BY updated_ns DESC LIMIT ?1)"
		" ORDER BY 2";
	sqlite3_stmt *s = NULL;
	int step, rc = -1;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)keep_resolved);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		const void *b = sqlite3_column_blob(s, 0);
		int n = sqlite3_column_bytes(s, 0);
		C4__Event *ev = c4__event__unpack(NULL, (size_t)n, b);

		if (ev == NULL || ev->id == NULL) {
			if (ev != NULL)
				c4__event__free_unpacked(ev, NULL);
			snprintf(err, errlen, "a stored event does not decode");
			sqlite3_finalize(s);
			return -1;
		}
		if (cb != NULL)
			cb(ev, (uint64_t)sqlite3_column_int64(s, 1), arg);
		c4__event__free_unpacked(ev, NULL);
	}
	if (step == SQLITE_DONE)
		rc = 0;
out:
	if (rc < 0)
		snprintf(err, errlen, "cannot read events: %s",
			 sqlite3_errmsg(st->db));
	sqlite3_finalize(s);
	return rc;
}

/*
 * Opens (creating if needed) the database at path, checks it, hands the
 * events to continue to cb (synchronously, before returning), and starts
 * the worker.  Runs before the loop; on error err says why and nothing is
 * left open.
 */
int
store_open(struct store **out, struct event_base *base, const char *path,
	   size_t keep_resolved, store_event_fn cb, void *arg, char *err,
	   size_t errlen)
{
	struct store *st = calloc(1, sizeof(*st));

	*out = NULL;
	if (st == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st->pipe[0] = st->pipe[1] = -1;
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	st->stats.healthy = 1;
	if (sqlite3_open_v2(path, &st->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path,
			 st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(st->db, STORE_BUSY_MS);
	if (store_check_schema(st, err, errlen) < 0)
		goto fail_path;
	if (store_exec(st->db, "PRAGMA journal_mode = WAL") < 0 ||
	    store_exec(st->db, "PRAGMA synchronous = FULL") < 0) {
		snprintf(err, errlen, "cannot set WAL mode: %s",
			 sqlite3_errmsg(st->db));
		goto fail_path;
	}
	if (store_prepare(st, &st->s_get_rev,
			  "SELECT revision FROM events WHERE id = ?1") < 0 ||
	    store_prepare(
		    st, &st->s_upsert,
		    "INSERT INTO events (id, kind, state, revision,"
		    " first_interval, last_interval, first_seen_ns,"
		    " last_seen_ns, updated_ns, event) VALUES (?1, ?2, ?3, ?4,"
		    " ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (id) DO UPDATE SET"
		    " kind = ?2, state = ?3, revision = ?4, first_interval ="
		    " ?5, last_interval = ?6, first_seen_ns = ?7,"
		    " last_seen_ns = ?8, updated_ns = ?9, event = ?10") < 0 ||
	    store_prepare(st, &st->s_history,
			  "INSERT INTO event_history (id, revision, state,"
			  " at_ns, event) VALUES (?1, ?2, ?3, ?4, ?5)") < 0 ||
	    store_prepare(st, &st->s_outbox,
			  "INSERT OR IGNORE INTO outbox (webhook, event_id,"
			  " revision, ce_id, payload, created_ns) VALUES"
			  " (?1, ?2, ?3, ?4, ?5, ?6)") < 0 ||
	    store_prepare(st, &st->s_next,
			  "SELECT seq, ce_id, payload, attempts, created_ns"
			  " FROM outbox WHERE webhook = ?1 AND delivered_ns"
			  " IS NULL ORDER BY seq LIMIT 1") < 0 ||
	    store_prepare(st, &st->s_count,
			  "SELECT count(*), ifnull(min(created_ns), 0) FROM"
			  " outbox WHERE webhook = ?1 AND delivered_ns IS"
			  " NULL") < 0 ||
	    store_prepare(st, &st->s_failed,
			  "UPDATE outbox SET attempts = attempts + 1,"
			  " next_attempt_ns = ?1 WHERE seq = ?2") < 0 ||
	    store_prepare(st, &st->s_delivered,
			  "UPDATE outbox SET delivered_ns = ?1, attempts ="
			  " attempts + 1 WHERE seq = ?2 AND delivered_ns IS"
			  " NULL") < 0) {
		snprintf(err, errlen, "cannot prepare statements: %s",
			 sqlite3_errmsg(st->db));
		goto fail_path;
	}
	if (store_load(st, keep_resolved, cb, arg, err, errlen) < 0)
		goto fail_path;
	if (pipe2(st->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	st->ev_done = event_new(base, st->pipe[0], EV_READ | EV_PERSIST,
				store_done_cb, st);
	if (st->ev_done == NULL || event_add(st->ev_done, NULL) < 0) {
		snprintf(err, errlen, "cannot watch the store pipe");
		goto fail;
	}
	if (pthread_create(&st->thread, NULL, store_worker, st) != 0) {
		snprintf(err, errlen, "cannot start the store worker");
		goto fail;
	}
	st->thread_started = 1;
	*out = st;
	return 0;
fail_path : {
	char msg[512];

	snprintf(msg, sizeof(msg), "%s", err);
	snprintf(err, errlen, "%s: %s", path, msg);
}
fail:
	store_close(st);
	return -1;
}

/*
 * Commits everything still queued, stops the worker and frees st.  Read
 * callbacks still pending are dropped without being called.
 */
void
store_close(struct store *st)
{
	struct store_job *j;

	if (st == NULL)
		return;
	if (st->thread_started) {
		pthread_mutex_lock(&st->mu);
		st->stopping = 1;
		pthread_cond_signal(&st->cv);
		pthread_mutex_unlock(&st->mu);
		pthread_join(st->thread, NULL);
	}
	while ((j = st->done.head) != NULL) {
		st->done.head = j->next;
		store_job_free(j);
	}
	while ((j = st->todo.head) != NULL) {
		st->todo.head = j->next;
		store_job_free(j);
	}
	if (st->ev_done != NULL)
		event_free(st->ev_done);
	if (st->pipe[0] >= 0)
		close(st->pipe[0]);
	if (st->pipe[1] >= 0)
		close(st->pipe[1]);
	sqlite3_finalize(st->s_get_rev);
	sqlite3_finalize(st->s_upsert);
	sqlite3_finalize(st->s_history);
	sqlite3_finalize(st->s_outbox);
	sqlite3_finalize(st->s_next);
	sqlite3_finalize(st->s_count);
	sqlite3_finalize(st->s_failed);
	sqlite3_finalize(st->s_delivered);
	if (st->db != NULL && sqlite3_close(st->db) != SQLITE_OK)
		log_warnx("database not closed cleanly");
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->cv);
	free(st);
}
