/*
 * store.c - the master's event store: its schema, its SQL and loading at
 * start.  The writing goes through lib/daemon's SQLite queue (sqlq.h),
 * which runs the jobs on its writer thread so the event loop never waits
 * for the disk.
 *
 * The loop queues jobs (a transition to commit, an outbox read, an outbox
 * row to mark); the queue runs them in order in its transactions, and
 * once a job committed its done callback (store_done) counts it and calls
 * a reader back, on the loop.  Because the queue commits in order, a read
 * queued after a put sees that put.
 *
 * A transition, its history row and one outbox row per webhook commit in
 * one transaction, with SQLQ_SYNC_FULL (an fsync at every commit): after
 * a crash, even of the machine, either all of them exist or none does.  A
 * put whose revision is not newer than the stored one changes nothing, so
 * replays are harmless.
 */
#define LOG_SUBSYS "store"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "clock.h"
#include "log.h"
#include "master.h"
#include "sqlq.h"

enum store_op {
	STORE_PUT,
	STORE_TOUCH, /* last_interval and last_seen of an open event */
	STORE_NEXT,
	STORE_FAILED,
	STORE_DELIVERED,
};

/* One job: an operation of the store's queue (sqlq.h). */
struct store_job {
	struct sqlq_op op; /* first: the queue hands op back */
	struct store *st;
	enum store_op kind;
	/* STORE_PUT */
	char *id;
	uint64_t revision, at_ns;
	int kind_ev, state;
	uint64_t first_interval, last_interval, first_seen, last_seen;
	int has_domain, domain, has_action, action_type;
	char *target; /* NULL: none */
	uint8_t *packed;
	size_t packed_len;
	char **webhooks;
	size_t nwebhooks;
	char *payload;
	size_t len;
	int stale; /* the revision was not newer: nothing written */
	/* STORE_NEXT, STORE_FAILED, STORE_DELIVERED */
	char *webhook;
	uint64_t seq, next_ns;
	store_next_fn cb;
	void *arg;
	struct store_job *rnext, **rprev; /* loop only: readers waiting */
	/* results of STORE_NEXT */
	int rc;
	int found;
	struct store_row row;
	char *row_ce_id, *row_payload;
	uint64_t pending, oldest_ns;
};

/*
 * The store's own state lives on the loop: the queue (sqlq) owns the
 * connection, the thread and the transactions.
 */
struct store {
	struct sqlq *q;
	struct store_stats stats;  /* puts, stale, delivered; read errors */
	int read_failed;	   /* the last read failed, no write since */
	struct store_job *readers; /* reads whose callback is due */
};

static const char store_sql_get_rev[] =
	"SELECT revision FROM events WHERE id = ?1";
static const char store_sql_upsert[] =
	"INSERT INTO events (id, kind, state, revision,"
	" first_interval, last_interval, first_seen_ns,"
	" last_seen_ns, updated_ns, event, domain, action_type, target)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
	" ON CONFLICT (id) DO UPDATE SET"
	" kind = ?2, state = ?3, revision = ?4, first_interval ="
	" ?5, last_interval = ?6, first_seen_ns = ?7,"
	" last_seen_ns = ?8, updated_ns = ?9, event = ?10, domain = ?11,"
	" action_type = ?12, target = ?13";
static const char store_sql_touch[] =
	"UPDATE events SET last_interval = ?2, last_seen_ns = ?3,"
	" event = ?4 WHERE id = ?1 AND revision = ?5 AND state != 3";
static const char store_sql_history[] =
	"INSERT INTO event_history (id, revision, state,"
	" at_ns, event) VALUES (?1, ?2, ?3, ?4, ?5)";
static const char store_sql_outbox[] =
	"INSERT OR IGNORE INTO outbox (webhook, event_id,"
	" revision, ce_id, payload, created_ns) VALUES"
	" (?1, ?2, ?3, ?4, ?5, ?6)";
static const char store_sql_next[] =
	"SELECT seq, ce_id, payload, attempts, created_ns"
	" FROM outbox WHERE webhook = ?1 AND delivered_ns"
	" IS NULL ORDER BY seq LIMIT 1";
static const char store_sql_count[] =
	"SELECT count(*), ifnull(min(created_ns), 0) FROM"
	" outbox WHERE webhook = ?1 AND delivered_ns IS"
	" NULL";
static const char store_sql_failed[] =
	"UPDATE outbox SET attempts = attempts + 1,"
	" next_attempt_ns = ?1 WHERE seq = ?2";
static const char store_sql_delivered[] =
	"UPDATE outbox SET delivered_ns = ?1, attempts ="
	" attempts + 1 WHERE seq = ?2 AND delivered_ns IS"
	" NULL";

/*
 * The schema of version STORE_SCHEMA_VERSION, one script.  domain and
 * action_type hold the c4.EventDomain and c4.Action numbers (NULL: not
 * said, as in rows written by version 1), target the action's target.
 */
static const char store_schema_sql[] =
	"CREATE TABLE events ("
	" id TEXT PRIMARY KEY, kind INTEGER NOT NULL, state INTEGER NOT NULL,"
	" revision INTEGER NOT NULL, first_interval INTEGER,"
	" last_interval INTEGER, first_seen_ns INTEGER, last_seen_ns INTEGER,"
	" updated_ns INTEGER NOT NULL, event BLOB NOT NULL,"
	" domain INTEGER, action_type INTEGER, target TEXT);"
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

/*
 * From version 1: the event columns a controller filters on.  Old rows
 * keep NULL there; their stored events decode as before.
 */
static const char store_migrate_1_sql[] =
	"ALTER TABLE events ADD COLUMN domain INTEGER;"
	"ALTER TABLE events ADD COLUMN action_type INTEGER;"
	"ALTER TABLE events ADD COLUMN target TEXT;";
_Static_assert(STORE_SCHEMA_VERSION == 2, "store_check_schema() sets 2");

static void
store_job_free(struct sqlq_op *op)
{
	struct store_job *j = (struct store_job *)op;

	if (j == NULL)
		return;
	free(j->id);
	free(j->target);
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

/* ---- in the queue's transaction (sqlq.h) -------------------------------- */

/*
 * Writes one transition with its history and outbox rows; a revision
 * that is not newer than the stored one writes nothing (stale).  0, or -1
 * (the transaction is rolled back and retried).
 */
static int
store_do_put(struct sqlq *q, struct store_job *j)
{
	sqlite3_stmt *s;
	char ce_id[C4D_EVENT_ID_MAX + 32];
	int step;

	j->stale = 0;
	if ((s = sqlq_stmt(q, store_sql_get_rev)) == NULL)
		return -1;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW &&
	    (uint64_t)sqlite3_column_int64(s, 0) >= j->revision) {
		sqlite3_reset(s);
		j->stale = 1;
		return 0;
	}
	sqlite3_reset(s);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return -1;

	if ((s = sqlq_stmt(q, store_sql_upsert)) == NULL)
		return -1;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, j->kind_ev);
	sqlite3_bind_int(s, 3, j->state);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)j->revision);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)j->first_interval);
	sqlite3_bind_int64(s, 6, (sqlite3_int64)j->last_interval);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)j->first_seen);
	sqlite3_bind_int64(s, 8, (sqlite3_int64)j->last_seen);
	sqlite3_bind_int64(s, 9, (sqlite3_int64)j->at_ns);
	sqlite3_bind_blob(s, 10, j->packed, (int)j->packed_len, SQLITE_STATIC);
	if (j->has_domain)
		sqlite3_bind_int(s, 11, j->domain);
	else
		sqlite3_bind_null(s, 11);
	if (j->has_action)
		sqlite3_bind_int(s, 12, j->action_type);
	else
		sqlite3_bind_null(s, 12);
	if (j->target != NULL)
		sqlite3_bind_text(s, 13, j->target, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 13);
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_DONE)
		return -1;

	if ((s = sqlq_stmt(q, store_sql_history)) == NULL)
		return -1;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)j->revision);
	sqlite3_bind_int(s, 3, j->state);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)j->at_ns);
	sqlite3_bind_blob(s, 5, j->packed, (int)j->packed_len, SQLITE_STATIC);
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_DONE)
		return -1;

	snprintf(ce_id, sizeof(ce_id), "%s/%llu", j->id,
		 (unsigned long long)j->revision);
	if ((s = sqlq_stmt(q, store_sql_outbox)) == NULL)
		return -1;
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
			return -1;
	}
	return 0;
}

/* Refreshes an open event's row: a newer revision or a resolution wins. */
static int
store_do_touch(struct sqlq *q, struct store_job *j)
{
	sqlite3_stmt *s = sqlq_stmt(q, store_sql_touch);
	int step;

	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, j->id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)j->last_interval);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)j->last_seen);
	sqlite3_bind_blob(s, 4, j->packed, (int)j->packed_len, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)j->revision);
	step = sqlite3_step(s);
	sqlite3_reset(s);
	return step == SQLITE_DONE ? 0 : -1;
}

/* Reads the oldest undelivered row; a failure is j->rc, not the queue's. */
static void
store_do_next(struct sqlq *q, struct store_job *j)
{
	sqlite3_stmt *s = sqlq_stmt(q, store_sql_next);
	int step;

	/* a transaction that is retried runs its read again */
	free(j->row_ce_id);
	free(j->row_payload);
	j->row_ce_id = j->row_payload = NULL;
	j->found = 0;
	j->rc = -1;
	if (s == NULL)
		goto out;
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
		if (j->row_ce_id != NULL && j->row_payload != NULL) {
			memcpy(j->row_payload, p ? (const char *)p : "",
			       (size_t)plen);
			j->row_payload[plen] = '\0';
			j->rc = 0;
		}
		j->row.len = (size_t)plen;
		j->row.attempts = (uint64_t)sqlite3_column_int64(s, 3);
		j->row.created_ns = (uint64_t)sqlite3_column_int64(s, 4);
	} else if (step == SQLITE_DONE) {
		j->rc = 0;
	}
	sqlite3_reset(s);
	if (j->rc == 0 && (s = sqlq_stmt(q, store_sql_count)) != NULL) {
		sqlite3_bind_text(s, 1, j->webhook, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW) {
			j->pending = (uint64_t)sqlite3_column_int64(s, 0);
			j->oldest_ns = (uint64_t)sqlite3_column_int64(s, 1);
		} else {
			j->rc = -1;
		}
		sqlite3_reset(s);
	} else {
		j->rc = -1;
	}
out:
	if (j->rc < 0)
		log_warnx("outbox of %s not read: %s", j->webhook,
			  sqlite3_errmsg(sqlq_db(q)));
	j->row.ce_id = j->row_ce_id;
	j->row.payload = j->row_payload;
}

static int
store_do_mark(struct sqlq *q, struct store_job *j)
{
	sqlite3_stmt *s =
		sqlq_stmt(q, j->kind == STORE_DELIVERED ? store_sql_delivered
							: store_sql_failed);
	int step;

	if (s == NULL)
		return -1;
	if (j->kind == STORE_DELIVERED) {
		sqlite3_bind_int64(s, 1,
				   (sqlite3_int64)clock_ns(CLOCK_REALTIME));
		sqlite3_bind_int64(s, 2, (sqlite3_int64)j->seq);
	} else {
		sqlite3_bind_int64(s, 1, (sqlite3_int64)j->next_ns);
		sqlite3_bind_int64(s, 2, (sqlite3_int64)j->seq);
	}
	step = sqlite3_step(s);
	sqlite3_reset(s);
	if (step != SQLITE_DONE) {
		log_warnx("outbox row %llu not updated: %s",
			  (unsigned long long)j->seq,
			  sqlite3_errmsg(sqlq_db(q)));
		return -1;
	}
	return 0;
}

/*
 * Runs one job in the queue's transaction.  A write that fails fails the
 * transaction, which the queue retries (later jobs wait behind it, so
 * commits stay in order and a transient failure loses nothing); a read
 * fails at once and its caller retries.
 */
static int
store_run(struct sqlq *q, struct sqlq_op *op)
{
	struct store_job *j = (struct store_job *)op;

	switch (j->kind) {
	case STORE_PUT:
		return store_do_put(q, j);
	case STORE_TOUCH:
		return store_do_touch(q, j);
	case STORE_NEXT:
		store_do_next(q, j);
		return 0;
	default:
		return store_do_mark(q, j);
	}
}

/* ---- the loop side ------------------------------------------------------ */

/* On the loop once the job committed: counts it, calls a reader back. */
static void
store_done(struct sqlq_op *op)
{
	struct store_job *j = (struct store_job *)op;
	struct store *st = j->st;

	switch (j->kind) {
	case STORE_PUT:
		if (j->stale)
			st->stats.stale++;
		else
			st->stats.puts++;
		st->read_failed = 0;
		break;
	case STORE_DELIVERED:
		st->stats.delivered++;
		st->read_failed = 0;
		break;
	case STORE_TOUCH:
	case STORE_FAILED:
		st->read_failed = 0;
		break;
	case STORE_NEXT:
		if (j->rc < 0) {
			st->stats.errors++;
			st->read_failed = 1;
		}
		*j->rprev = j->rnext;
		if (j->rnext != NULL)
			j->rnext->rprev = j->rprev;
		if (j->cb != NULL)
			j->cb(j->rc, j->found ? &j->row : NULL, j->pending,
			      j->oldest_ns, j->arg);
		break;
	}
}

/* A new job of kind for st, or NULL (no memory). */
static struct store_job *
store_job_new(struct store *st, enum store_op kind)
{
	struct store_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->op.run = store_run;
	j->op.done = store_done;
	j->op.free = store_job_free;
	j->st = st;
	j->kind = kind;
	return j;
}

/* Queues j (the store's from here on): 0, or -1 if the queue is full. */
static int
store_queue(struct store *st, struct store_job *j)
{
	if (sqlq_submit(st->q, &j->op) == 0) {
		store_job_free(&j->op);
		return -1;
	}
	return 0;
}

/* Copies ev's id, revision, intervals and packed form into j: 0 or -1. */
static int
store_job_event(struct store_job *j, const C4__Event *ev)
{
	j->id = strdup(ev->id ? ev->id : "");
	j->revision = ev->revision;
	j->last_interval = ev->last_interval;
	j->last_seen = ev->last_seen_ns;
	j->packed_len = c4__event__get_packed_size(ev);
	j->packed = malloc(j->packed_len ? j->packed_len : 1);
	if (j->id == NULL || j->packed == NULL)
		return -1;
	c4__event__pack(ev, j->packed);
	return 0;
}

int
store_touch_event(struct store *st, const C4__Event *ev)
{
	struct store_job *j = store_job_new(st, STORE_TOUCH);

	if (j == NULL)
		return -1;
	if (store_job_event(j, ev) < 0) {
		store_job_free(&j->op);
		return -1;
	}
	return store_queue(st, j);
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
	struct store_job *j = store_job_new(st, STORE_PUT);

	if (j == NULL)
		return -1;
	j->at_ns = at_ns;
	j->kind_ev = ev->kind;
	j->state = ev->state;
	j->first_interval = ev->first_interval;
	j->first_seen = ev->first_seen_ns;
	j->has_domain = ev->has_domain;
	j->domain = ev->domain;
	j->has_action = ev->has_action_type;
	j->action_type = ev->action_type;
	j->payload = malloc(len + 1);
	j->len = len;
	j->webhooks = calloc(nwebhooks ? nwebhooks : 1, sizeof(char *));
	if (store_job_event(j, ev) < 0 || j->payload == NULL ||
	    j->webhooks == NULL ||
	    (ev->target != NULL && (j->target = strdup(ev->target)) == NULL))
		goto fail;
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
	store_job_free(&j->op);
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
	struct store_job *j = store_job_new(st, STORE_NEXT);

	if (j == NULL)
		return -1;
	j->webhook = strdup(webhook);
	j->cb = cb;
	j->arg = arg;
	if (j->webhook == NULL) {
		store_job_free(&j->op);
		return -1;
	}
	/* its done callback runs on a later turn of the loop, not here */
	if (store_queue(st, j) < 0)
		return -1;
	j->rprev = &st->readers;
	j->rnext = st->readers;
	if (j->rnext != NULL)
		j->rnext->rprev = &j->rnext;
	st->readers = j;
	return 0;
}

/* Counts a failed attempt on row seq and notes when it is retried. */
int
store_outbox_failed(struct store *st, uint64_t seq, uint64_t next_ns)
{
	struct store_job *j = store_job_new(st, STORE_FAILED);

	if (j == NULL)
		return -1;
	j->seq = seq;
	j->next_ns = next_ns;
	return store_queue(st, j);
}

/* Marks row seq delivered (a receiver acknowledged it). */
int
store_mark_delivered(struct store *st, uint64_t seq)
{
	struct store_job *j = store_job_new(st, STORE_DELIVERED);

	if (j == NULL)
		return -1;
	j->seq = seq;
	return store_queue(st, j);
}

/* Drops every read callback registered with arg; on the loop. */
void
store_forget(struct store *st, void *arg)
{
	for (struct store_job *j = st->readers; j != NULL; j = j->rnext)
		if (j->arg == arg)
			j->cb = NULL;
}

/*
 * Copies the counters into out: the store's own, and the queue's failed
 * attempts and refusals added to errors; healthy is 0 while a write keeps
 * failing, after a failed read, or while the oldest job waits longer than
 * STORE_STALL_MS.  Changes nothing.
 */
void
store_get_stats(struct store *st, struct store_stats *out)
{
	struct sqlq_stats qs;

	sqlq_get_stats(st->q, &qs);
	*out = st->stats;
	out->errors += qs.failures + qs.full;
	out->queued = qs.pending;
	out->stall_ms = qs.stall_ms;
	out->healthy = qs.healthy && !st->read_failed &&
		       out->stall_ms <= STORE_STALL_MS;
}

/* ---- opening and closing ------------------------------------------------ */

static int
store_check_schema(sqlite3 *db, struct sqlq *q, char *err, size_t errlen)
{
	sqlite3_stmt *s = NULL;
	int version = -1, ok = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &s, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(s, 0);

		ok = t != NULL && strcmp((const char *)t, "ok") == 0;
	}
	sqlite3_finalize(s);
	if (!ok) {
		snprintf(err, errlen, "not a usable database (%s)",
			 sqlite3_errmsg(db));
		return -1;
	}
	s = NULL;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version == STORE_SCHEMA_VERSION)
		return 0;
	if (version != 0 && version != 1) {
		snprintf(err, errlen,
			 "schema version %d is not %d (written by another "
			 "version of c4d-master?)",
			 version, STORE_SCHEMA_VERSION);
		return -1;
	}
	/* a new database, or one of version 1 to migrate in place */
	if (sqlq_exec(q, "BEGIN IMMEDIATE") < 0 ||
	    sqlq_exec(q, version == 0 ? store_schema_sql
				      : store_migrate_1_sql) < 0)
		goto fail;
	if (sqlq_exec(q, "PRAGMA user_version = 2") < 0 ||
	    sqlq_exec(q, "COMMIT") < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "cannot create or migrate the schema: %s",
		 sqlite3_errmsg(db));
	if (!sqlite3_get_autocommit(db))
		sqlq_exec(q, "ROLLBACK");
	return -1;
}

/* Hands every open event and the newest resolved ones to cb, oldest first. */
static int
store_load(sqlite3 *db, size_t keep_resolved, store_event_fn cb, void *arg,
	   char *err, size_t errlen)
{
	static const char sql[] =
		"SELECT event, updated_ns FROM events WHERE state != 3"
		" UNION ALL SELECT * FROM (SELECT event, updated_ns FROM"
		" events WHERE state = 3 ORDER BY updated_ns DESC LIMIT ?1)"
		" ORDER BY 2";
	sqlite3_stmt *s = NULL;
	int step, rc = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
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
			 sqlite3_errmsg(db));
	sqlite3_finalize(s);
	return rc;
}

/* Prepares every statement now, so that a bad one fails the open. */
static int
store_prepare(struct sqlq *q)
{
	static const char *const all[] = {
		store_sql_get_rev, store_sql_upsert,	store_sql_history,
		store_sql_outbox,  store_sql_next,	store_sql_count,
		store_sql_failed,  store_sql_delivered, store_sql_touch,
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (sqlq_stmt(q, all[i]) == NULL)
			return -1;
	return 0;
}

/*
 * Opens (creating if needed) the database at path, checks it, hands the
 * events to continue to cb (synchronously, before returning), and starts
 * the queue's writer.  Runs before the loop; on error err says why and
 * nothing is left open.  Every commit is durable against power loss
 * (SQLQ_SYNC_FULL): the master has no setting for it.
 */
int
store_open(struct store **out, struct event_base *base, const char *path,
	   size_t keep_resolved, store_event_fn cb, void *arg, char *err,
	   size_t errlen)
{
	const struct sqlq_conf conf = {
		.path = path,
		.sync = SQLQ_SYNC_FULL,
		.queue_max = STORE_QUEUE_MAX,
		.busy_ms = STORE_BUSY_MS,
		.retry_ms = STORE_RETRY_MS,
		.retry_max_ms = STORE_RETRY_MAX_MS,
	};
	struct store *st = calloc(1, sizeof(*st));
	sqlite3 *db;

	*out = NULL;
	if (st == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st->q = sqlq_open(&conf, base, err, errlen);
	if (st->q == NULL)
		goto fail;
	db = sqlq_db(st->q);
	if (store_check_schema(db, st->q, err, errlen) < 0)
		goto fail_path;
	if (store_prepare(st->q) < 0) {
		snprintf(err, errlen, "cannot prepare statements: %s",
			 sqlite3_errmsg(db));
		goto fail_path;
	}
	if (store_load(db, keep_resolved, cb, arg, err, errlen) < 0 ||
	    sqlq_start(st->q, err, errlen) < 0)
		goto fail_path;
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
 * Commits everything still queued, stops the writer and frees st.  Read
 * callbacks still pending are dropped without being called.
 */
void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	sqlq_close(st->q);
	free(st);
}
