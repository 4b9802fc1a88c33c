/*
 * master.h - the c4d-master's configuration, limits and core: the event
 * store (store.c), webhook delivery (webhook.c), the metrics served by
 * lib/daemon's HTTP endpoints, the event JSON (evjson.c) and the in-memory
 * event list that ties them together (c4d.c).  Everything here runs on the
 * daemon's event loop except the writer thread of the store's queue
 * (lib/daemon/sqlq.h), which runs only store.c's SQL.
 */
#ifndef C4D_MASTER_H
#define C4D_MASTER_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "c4d.pb-c.h"
#include "cfg.h"
#include "tls.h"
#include "daemon.h"
#include "evjson.h"
#include "http.h"
#include "srv.h"

/* ---- limits ------------------------------------------------------------- */
#define C4D_DB_NAME	       "c4d-master.db"
#define C4D_STATE_ROOT	       "/var/lib/c4" /* default: <root>/job-<job> */
#define C4D_KEEP_RESOLVED_DEF  "1000"	     /* resolved events in memory */
#define C4D_KEEP_RESOLVED_MAX  1000000
#define C4D_EVENT_ID_MAX       256	      /* bytes of an event id */
#define C4D_EVENT_MAX	       (1024u * 1024) /* packed size of one event */
#define C4D_EVENTS_REPLY_MAX   1000	      /* events per ADMIN_EVENTS */
#define C4D_EVENTS_REPLY_BYTES (1024u * 1024) /* under FRAME_MAX_DEFAULT */
#define C4D_WEBHOOKS_MAX       16
#define C4D_COMMS_DEF	       "65536" /* limits.max_comms */
#define C4D_COMMS_SESSION_DEF  "16384" /* limits.max_comms_per_session */
#define C4D_COMMS_MAX	       (1u << 24)
#define STORE_SCHEMA_VERSION   2
#define STORE_QUEUE_MAX	       100000 /* jobs not committed yet */
#define STORE_STALL_MS	       10000  /* oldest job: unhealthy above */
#define STORE_RETRY_MS	       100    /* first wait after a failed write */
#define STORE_RETRY_MAX_MS     5000
#define STORE_BUSY_MS	       5000 /* sqlite3_busy_timeout */
#define WEBHOOK_BACKOFF_MIN_MS 200  /* first retry delay */
#define WEBHOOK_TOKEN_MAX      1024
#define WEBHOOK_URL_MAX	       2048
#define WEBHOOK_RESP_HEADERS   16384 /* bytes a receiver may answer */
#define WEBHOOK_RESP_BODY      65536

/* ---- configuration ------------------------------------------------------ */
struct webhook_conf {
	char *name;
	char *url;
	int64_t timeout;     /* ms */
	int64_t max_backoff; /* ms */
	char *token;
	char *token_file;
	struct cfg_pos pos;
	struct tls_files tls; /* https: ca (else the system's), client cert */
};
extern const struct cfg_schema webhook_conf_schema;

struct c4d_events_conf {
	int64_t keep_resolved;
};

/* The "limits:" section: what one job's agents may make the master keep. */
struct c4d_limits_conf {
	int64_t max_comms;	       /* communicators of the job */
	int64_t max_comms_per_session; /* introduced by one session */
};

/* The "detection:" section (durations in ms). */
struct c4d_detect_conf {
	int64_t interval;
	int64_t hang_timeout;
	int64_t node_timeout;
	int64_t persist_k;
	int64_t persist_n;
	double min_slowdown;
};

struct c4d_conf {
	char *job;
	char *state_dir;
	struct c4d_detect_conf detection;
	struct srv_conf server;
	struct cfg_list credentials;
	struct cfg_list webhooks; /* struct webhook_conf */
	struct http_conf http;
	struct c4d_events_conf events;
	struct c4d_limits_conf limits;
	struct daemon_log_conf log;
};
extern const struct cfg_schema c4d_schema;

/* ---- the store (store.c) ------------------------------------------------ */
struct store;

struct store_stats {
	uint64_t puts;	    /* transitions committed */
	uint64_t stale;	    /* puts ignored: revision not newer */
	uint64_t errors;    /* failed transactions, reads, full queue */
	uint64_t delivered; /* outbox rows marked delivered */
	uint64_t queued;    /* jobs not committed (or called back) yet */
	uint64_t stall_ms;  /* age of the oldest waiting job */
	int healthy;
};

/* One undelivered outbox row, owned by the store until the callback ends. */
struct store_row {
	uint64_t seq;
	const char *ce_id;
	const char *payload;
	size_t len;
	uint64_t attempts;
	uint64_t created_ns;
};

/* Called on the loop for each event to continue after a restart. */
typedef void (*store_event_fn)(const C4__Event *ev, uint64_t updated_ns,
			       void *arg);
/*
 * Called on the loop with the oldest undelivered row of a webhook (NULL:
 * none), how many are undelivered and when the oldest was created (ns).
 * rc is -1 if the read failed.
 */
typedef void (*store_next_fn)(int rc, const struct store_row *row,
			      uint64_t pending, uint64_t oldest_ns, void *arg);

/*
 * Opens (creating if needed) the database at path, hands the events to
 * continue to cb synchronously before returning, and starts the worker
 * thread.  Runs before the loop.  base is kept; cb is not called after
 * return.  Returns 0 with *out set, or -1 with *out NULL, err saying why
 * and nothing left open.  The other store_ functions are called on base's
 * thread; store_close() frees the store.
 */
int store_open(struct store **out, struct event_base *base, const char *path,
	       size_t keep_resolved, store_event_fn cb, void *arg, char *err,
	       size_t errlen);
/*
 * Queues transition ev (copied: the caller keeps ownership) with one
 * outbox row carrying payload (copied) per named webhook.  ev must have
 * an id and a revision; at_ns is the master's time of the transition.
 * Returns 0 once queued, or -1 when it cannot be (no memory, queue full).
 */
int store_put_event(struct store *st, const C4__Event *ev, uint64_t at_ns,
		    const char *const *webhooks, size_t nwebhooks,
		    const char *payload, size_t len);
/*
 * Queues a refresh of the stored open event ev (copied): its
 * last_interval, last_seen_ns and stored form, for the row of the same id
 * and revision only.  No history or outbox row: it is not a transition.
 * Returns 0 once queued, or -1 when it cannot be.
 */
int store_touch_event(struct store *st, const C4__Event *ev);
/*
 * Queues a read of webhook's oldest undelivered outbox row; cb runs on the
 * loop with it, unless store_forget(st, arg) comes first.  webhook is
 * copied.  Returns 0 once queued, or -1 without memory.
 */
int store_outbox_next(struct store *st, const char *webhook, store_next_fn cb,
		      void *arg);
/*
 * Queue an update of outbox row seq: store_outbox_failed() counts a
 * failed attempt and notes when it is retried (next_ns);
 * store_mark_delivered() marks it delivered.  Both return 0 once queued,
 * or -1 without memory (the row is then left as it was).
 */
int store_outbox_failed(struct store *st, uint64_t seq, uint64_t next_ns);
int store_mark_delivered(struct store *st, uint64_t seq);
/* Drops every callback registered with arg (its owner is going away). */
void store_forget(struct store *st, void *arg);
/*
 * Copies the counters into *out (taken under the store's lock), with the
 * queue's length and stall; healthy is cleared when the oldest job waits
 * too long.
 */
void store_get_stats(struct store *st, struct store_stats *out);
/*
 * Commits everything still queued, stops the worker and frees st (NULL
 * is fine).  Read callbacks still pending are dropped without being
 * called.
 */
void store_close(struct store *st);

/* ---- webhooks (webhook.c) ----------------------------------------------- */
struct webhook_set;

struct webhook_stats {
	const char *name;
	uint64_t delivered; /* events acknowledged with a 2xx */
	uint64_t failed;    /* attempts that failed or timed out */
	uint64_t pending;   /* undelivered outbox rows (as last read) */
	uint64_t oldest_age_ms;
};

/*
 * Creates one sender per webhook of confs (struct webhook_conf items),
 * each reading its token file now and starting to deliver the store's
 * undelivered rows.  Strings are copied; base and st are kept and must
 * outlive the senders.  Returns 0 with *out set, or -1 with *out NULL and
 * err filled (a bad URL, an unreadable token file, out of memory).  Runs
 * on base's thread, like every webhook_ function.
 */
int webhook_new(struct webhook_set **out, struct event_base *base,
		struct store *st, const char *job, const struct cfg_list *confs,
		char *err, size_t errlen);
/* The names, for store_put_event(). */
const char *const *webhook_names(const struct webhook_set *w, size_t *n);
/* New outbox rows were queued: idle senders look again. */
void webhook_kick(struct webhook_set *w);
/*
 * The number of webhooks, and a copy of webhook i's counters into *out
 * (i < webhook_count(); out->name points into w).  Change nothing.
 */
size_t webhook_count(const struct webhook_set *w);
void webhook_get_stats(const struct webhook_set *w, size_t i,
		       struct webhook_stats *out);
/*
 * Stops every sender and frees w (NULL is fine).  Requests in flight are
 * abandoned: their rows stay undelivered in the store and go out again
 * after the next start.  The store stays open.
 */
void webhook_free(struct webhook_set *w);
/* The CloudEvents 1.0 JSON body of ev (malloc'd, one line). */
char *webhook_cloudevent(const char *job, const C4__Event *ev, uint64_t time_ns,
			 size_t *len);

/* HTTP endpoints: lib/daemon/http.h. */

/* ---- the master core (c4d.c) -------------------------------------------- */
struct c4d;

struct c4d_stats {
	uint64_t published; /* transitions accepted */
	uint64_t duplicate; /* publishes of a revision already known */
	uint64_t refused;   /* invalid events */
	uint64_t open;	    /* open events now */
	uint64_t resolved;  /* resolved events held in memory */
	/* Session counters, kept by main.c's srv hooks. */
	uint64_t agents;
	uint64_t comm_registrations;
	uint64_t telemetry_batches;
	uint64_t telemetry_records; /* summaries in those batches */
	uint64_t dropped_records;   /* summaries senders reported lost */
};

/*
 * Opens the store (continuing the events that were open), the webhook
 * senders and the HTTP listener.  srv may be NULL (tests).  The HTTP
 * address actually bound is written to http_bound.  conf's strings are
 * copied; base and srv are kept and must outlive the master.  Returns 0
 * with *out set, or -1 with *out NULL (failures of the store, the
 * webhooks and HTTP are logged).  Every c4d_ function runs on base's
 * thread.
 */
int c4d_open(struct c4d **out, struct event_base *base,
	     const struct c4d_conf *conf, struct srv *srv, char *http_bound,
	     size_t boundlen);
/*
 * Publishes one transition of a detected event; the one entry point of
 * the detection pipeline.  ev stays the caller's.  Revision 0 (or absent)
 * means "the next one"; a revision not newer than the one known is a
 * duplicate and changes nothing.  The transition is remembered at once,
 * committed with its outbox rows on the store's worker, then delivered by
 * every webhook.  Returns 0 (also for a duplicate), or -1 for an invalid
 * event or when it could not be queued.  c4d.c gives the details.
 */
int c4d_publish(struct c4d *m, const C4__Event *ev);
/*
 * Notes that the open event id still had evidence in last_interval, seen
 * at last_seen_ns: the event list and the store keep both; no revision,
 * no webhook delivery.  Unknown, resolved and older news change nothing.
 * Returns 0, or -1 when the store could not queue it (the list has it).
 */
int c4d_touch(struct c4d *m, const char *id, uint64_t last_interval,
	      uint64_t last_seen_ns);
/* Answers ADMIN_EVENTS into r (owned by m until c4d_reply_free). */
void c4d_reply_events(struct c4d *m, const C4__AdminRequest *q,
		      C4__AdminReply *r);
/*
 * Frees the event array c4d_reply_events() allocated in r and empties it;
 * the events themselves are m's, and r itself is the caller's.
 */
void c4d_reply_free(C4__AdminReply *r);
/*
 * The master's counters, owned by m and updated in place; main.c's
 * session hooks write the session counters through this pointer.
 */
struct c4d_stats *c4d_stats(struct c4d *m);
/* The event with that id, or NULL; valid until the next publish. */
const C4__Event *c4d_find(const struct c4d *m, const char *id);
/* Calls fn for every event open now (restart recovery), oldest first. */
void c4d_each_open(const struct c4d *m,
		   void (*fn)(const C4__Event *ev, void *arg), void *arg);
/*
 * Stops HTTP and the webhook senders, commits what the store still has
 * queued, and frees everything m holds (NULL is fine).  srv stays.
 */
void c4d_close(struct c4d *m);

#endif
