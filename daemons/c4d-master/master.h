/*
 * master.h - the c4d-master's configuration, limits and core: the event
 * store (store.c), webhook delivery (webhook.c), the metrics served by
 * lib/daemon's HTTP endpoints, the event JSON (evjson.c) and the in-memory
 * event list that ties them together (c4d.c).  Everything here runs on the
 * daemon's event loop except the store's worker thread, which only store.c
 * touches.
 */
#ifndef C4D_MASTER_H
#define C4D_MASTER_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "c4d.pb-c.h"
#include "cfg.h"
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
#define STORE_SCHEMA_VERSION   1
#define STORE_QUEUE_MAX	       100000 /* jobs waiting for the worker */
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
};
extern const struct cfg_schema webhook_conf_schema;

struct c4d_events_conf {
	int64_t keep_resolved;
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
	struct daemon_log_conf log;
};
extern const struct cfg_schema c4d_schema;

/* ---- the store (store.c) ------------------------------------------------ */
struct store;

struct store_stats {
	uint64_t puts;	    /* transitions committed */
	uint64_t stale;	    /* puts ignored: revision not newer */
	uint64_t errors;    /* failed transactions */
	uint64_t delivered; /* outbox rows marked delivered */
	uint64_t queued;    /* jobs waiting for the worker now */
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

int store_open(struct store **out, struct event_base *base, const char *path,
	       size_t keep_resolved, store_event_fn cb, void *arg, char *err,
	       size_t errlen);
int store_put_event(struct store *st, const C4__Event *ev, uint64_t at_ns,
		    const char *const *webhooks, size_t nwebhooks,
		    const char *payload, size_t len);
int store_outbox_next(struct store *st, const char *webhook, store_next_fn cb,
		      void *arg);
int store_outbox_failed(struct store *st, uint64_t seq, uint64_t next_ns);
int store_mark_delivered(struct store *st, uint64_t seq);
/* Drops every callback registered with arg (its owner is going away). */
void store_forget(struct store *st, void *arg);
void store_get_stats(struct store *st, struct store_stats *out);
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

int webhook_new(struct webhook_set **out, struct event_base *base,
		struct store *st, const char *job, const struct cfg_list *confs,
		char *err, size_t errlen);
/* The names, for store_put_event(). */
const char *const *webhook_names(const struct webhook_set *w, size_t *n);
/* New outbox rows were queued: idle senders look again. */
void webhook_kick(struct webhook_set *w);
size_t webhook_count(const struct webhook_set *w);
void webhook_get_stats(const struct webhook_set *w, size_t i,
		       struct webhook_stats *out);
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
 * address actually bound is written to http_bound.
 */
int c4d_open(struct c4d **out, struct event_base *base,
	     const struct c4d_conf *conf, struct srv *srv, char *http_bound,
	     size_t boundlen);
int c4d_publish(struct c4d *m, const C4__Event *ev);
/* Answers ADMIN_EVENTS into r (owned by m until c4d_reply_free). */
void c4d_reply_events(struct c4d *m, const C4__AdminRequest *q,
		      C4__AdminReply *r);
void c4d_reply_free(C4__AdminReply *r);
struct c4d_stats *c4d_stats(struct c4d *m);
/* The event with that id, or NULL; valid until the next publish. */
const C4__Event *c4d_find(const struct c4d *m, const char *id);
/* Calls fn for every event open now (restart recovery), oldest first. */
void c4d_each_open(const struct c4d *m,
		   void (*fn)(const C4__Event *ev, void *arg), void *arg);
void c4d_close(struct c4d *m);

#endif
