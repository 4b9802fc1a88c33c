/*
 * c4d.c - the master's core: the one entry point for detected events
 * (c4d_publish), the in-memory list of the job's events that admin queries
 * are answered from, and the wiring of store, webhooks and HTTP.
 *
 * The list holds every open event and the newest keep_resolved resolved
 * ones, ordered by the master's time of their last transition (updated_ns,
 * strictly increasing), so ADMIN_EVENTS pages through it with since_ns and
 * never touches SQLite on the loop.
 */
#define LOG_SUBSYS "master"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include <event2/buffer.h>

#include "clock.h"
#include "log.h"
#include "master.h"

struct c4d_entry {
	struct c4d_entry *prev, *next;
	C4__Event *ev; /* owned, unpacked copy */
	uint64_t updated_ns;
};

struct c4d {
	struct event_base *base;
	char *job;
	size_t keep_resolved;
	struct srv *srv;
	struct store *store;
	struct webhook_set *wh;
	struct http *http;
	struct c4d_entry *head, *tail; /* oldest transition first */
	uint64_t last_ns;
	struct c4d_stats stats;
};

static struct c4d_entry *
c4d_lookup(const struct c4d *m, const char *id)
{
	for (struct c4d_entry *e = m->tail; e != NULL; e = e->prev)
		if (strcmp(e->ev->id, id) == 0)
			return e;
	return NULL;
}

static void
c4d_unlink(struct c4d *m, struct c4d_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		m->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		m->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
c4d_append(struct c4d *m, struct c4d_entry *e)
{
	e->prev = m->tail;
	e->next = NULL;
	if (m->tail)
		m->tail->next = e;
	else
		m->head = e;
	m->tail = e;
}

static void
c4d_entry_free(struct c4d_entry *e)
{
	if (e->ev != NULL)
		c4__event__free_unpacked(e->ev, NULL);
	free(e);
}

/* Drops the oldest resolved events beyond keep_resolved. */
static void
c4d_trim(struct c4d *m)
{
	struct c4d_entry *e = m->head, *next;

	for (; e != NULL && m->stats.resolved > (uint64_t)m->keep_resolved;
	     e = next) {
		next = e->next;
		if (e->ev->state != C4__EVENT_STATE__EVENT_RESOLVED)
			continue;
		c4d_unlink(m, e);
		c4d_entry_free(e);
		m->stats.resolved--;
	}
}

/* Puts ev (copied) at the tail of the list, replacing its older state. */
static int
c4d_remember(struct c4d *m, const C4__Event *ev, uint64_t updated_ns)
{
	struct c4d_entry *e = c4d_lookup(m, ev->id);
	C4__Event *copy = msg_copy(ev);

	if (copy == NULL)
		return -1;
	if (e == NULL) {
		e = calloc(1, sizeof(*e));
		if (e == NULL) {
			c4__event__free_unpacked(copy, NULL);
			return -1;
		}
	} else {
		if (e->ev->state == C4__EVENT_STATE__EVENT_RESOLVED)
			m->stats.resolved--;
		else
			m->stats.open--;
		c4d_unlink(m, e);
		c4__event__free_unpacked(e->ev, NULL);
	}
	e->ev = copy;
	e->updated_ns = updated_ns;
	if (updated_ns > m->last_ns)
		m->last_ns = updated_ns;
	if (copy->state == C4__EVENT_STATE__EVENT_RESOLVED)
		m->stats.resolved++;
	else
		m->stats.open++;
	c4d_append(m, e);
	c4d_trim(m);
	return 0;
}

static void
c4d_restore_cb(const C4__Event *ev, uint64_t updated_ns, void *arg)
{
	struct c4d *m = arg;

	if (c4d_remember(m, ev, updated_ns) < 0)
		log_warnx("event %s not restored: out of memory", ev->id);
}

/*
 * Publishes one transition of a detected event; the one entry point of the
 * detection pipeline.  ev stays the caller's.  Its id names the event
 * for its whole life; revision 0 (or absent) means "the next one", which
 * the master assigns; a revision that is not newer than the one known is a
 * duplicate and changes nothing.  first_seen_ns / last_seen_ns default to
 * the master's clock.  The transition is remembered for admin queries at
 * once, committed with its outbox rows in one transaction on the store's
 * worker, and then delivered by every webhook.  Returns 0 (also for a
 * duplicate), or -1 for an invalid event or when it could not be queued.
 * Ids are never reused for a new incident: the master forgets resolved
 * events beyond keep_resolved, and a forgotten id published again would
 * restart at revision 1, which the store ignores as stale.
 */
int
c4d_publish(struct c4d *m, const C4__Event *in)
{
	struct c4d_entry *prev;
	C4__Event ev;
	uint64_t now = clock_ns(CLOCK_REALTIME);
	const char *const *names;
	size_t nnames, len;
	char *payload;
	int rc;

	if (in->id == NULL || in->id[0] == '\0' ||
	    strlen(in->id) > C4D_EVENT_ID_MAX || !in->has_state ||
	    in->state < C4__EVENT_STATE__EVENT_OPEN ||
	    in->state > C4__EVENT_STATE__EVENT_RESOLVED ||
	    c4__event__get_packed_size(in) > C4D_EVENT_MAX) {
		m->stats.refused++;
		log_warnx("refused an invalid event '%.64s'",
			  in->id ? in->id : "");
		return -1;
	}
	prev = c4d_lookup(m, in->id);
	ev = *in;
	if (!ev.has_revision || ev.revision == 0) {
		ev.has_revision = 1;
		ev.revision = prev ? prev->ev->revision + 1 : 1;
	} else if (prev != NULL && ev.revision <= prev->ev->revision) {
		m->stats.duplicate++;
		return 0;
	}
	ev.job_id = m->job; /* every event of this master is of its job */
	if (!ev.has_first_seen_ns || ev.first_seen_ns == 0) {
		ev.has_first_seen_ns = 1;
		ev.first_seen_ns = prev ? prev->ev->first_seen_ns : now;
	}
	if (!ev.has_last_seen_ns || ev.last_seen_ns == 0) {
		ev.has_last_seen_ns = 1;
		ev.last_seen_ns = now;
	}
	/* updated_ns orders the list and the since_ns cursor: strictly up. */
	if (now <= m->last_ns)
		now = m->last_ns + 1;
	payload = webhook_cloudevent(m->job, &ev, now, &len);
	if (payload == NULL)
		return -1;
	names = webhook_names(m->wh, &nnames);
	rc = store_put_event(m->store, &ev, now, names, nnames, payload, len);
	free(payload);
	if (rc < 0)
		return -1;
	if (c4d_remember(m, &ev, now) < 0)
		log_warnx("event %s stored but not kept in memory", ev.id);
	m->stats.published++;
	log_info("event %s revision %llu %s: %s", ev.id,
		 (unsigned long long)ev.revision, evjson_state_name(ev.state),
		 ev.summary ? ev.summary : evjson_kind_name(ev.kind));
	webhook_kick(m->wh);
	return 0;
}

/*
 * An open event's evidence went on in last_interval, seen at last_seen_ns:
 * the list and the store's row take both, without a transition (no
 * revision, no history, nothing for webhooks; the list's order stays).
 */
int
c4d_touch(struct c4d *m, const char *id, uint64_t last_interval,
	  uint64_t last_seen_ns)
{
	struct c4d_entry *e = c4d_lookup(m, id);

	if (e == NULL || e->ev->state == C4__EVENT_STATE__EVENT_RESOLVED ||
	    last_interval <= e->ev->last_interval)
		return 0;
	e->ev->has_last_interval = e->ev->has_last_seen_ns = 1;
	e->ev->last_interval = last_interval;
	if (last_seen_ns > e->ev->last_seen_ns)
		e->ev->last_seen_ns = last_seen_ns;
	return store_touch_event(m->store, e->ev);
}

const C4__Event *
c4d_find(const struct c4d *m, const char *id)
{
	struct c4d_entry *e = c4d_lookup(m, id);

	return e ? e->ev : NULL;
}

void
c4d_each_open(const struct c4d *m, void (*fn)(const C4__Event *ev, void *arg),
	      void *arg)
{
	for (const struct c4d_entry *e = m->head; e != NULL; e = e->next)
		if (e->ev->state != C4__EVENT_STATE__EVENT_RESOLVED)
			fn(e->ev, arg);
}

struct c4d_stats *
c4d_stats(struct c4d *m)
{
	return &m->stats;
}

/*
 * Events whose last transition is at or after q->since_ns, oldest first,
 * at most q->limit (0: C4D_EVENTS_REPLY_MAX) and C4D_EVENTS_REPLY_BYTES;
 * r->more says the answer was cut, r->next_since_ns where to go on.  The
 * events in r point into the list: send r before the next publish.
 */
void
c4d_reply_events(struct c4d *m, const C4__AdminRequest *q, C4__AdminReply *r)
{
	size_t limit = q->limit ? q->limit : C4D_EVENTS_REPLY_MAX;
	size_t bytes = 0, n = 0;
	struct c4d_entry *e;

	if (limit > C4D_EVENTS_REPLY_MAX)
		limit = C4D_EVENTS_REPLY_MAX;
	r->has_op = 1;
	r->op = C4__ADMIN_OP__ADMIN_EVENTS;
	r->has_next_since_ns = 1;
	r->next_since_ns = q->since_ns;
	for (e = m->head; e != NULL && e->updated_ns < q->since_ns;)
		e = e->next;
	for (struct c4d_entry *x = e; x != NULL; x = x->next)
		n++;
	r->events = calloc(n ? n : 1, sizeof(*r->events));
	if (r->events == NULL)
		return;
	for (; e != NULL; e = e->next) {
		size_t sz = c4__event__get_packed_size(e->ev);

		if (r->n_events == limit ||
		    (r->n_events > 0 && bytes + sz > C4D_EVENTS_REPLY_BYTES)) {
			r->has_more = 1;
			r->more = 1;
			break;
		}
		bytes += sz;
		r->events[r->n_events++] = e->ev;
		r->next_since_ns = e->updated_ns + 1;
	}
}

void
c4d_reply_free(C4__AdminReply *r)
{
	free(r->events);
	r->events = NULL;
	r->n_events = 0;
}

/* ---- metrics and health ------------------------------------------------- */

static void
c4d_metrics(struct evbuffer *b, void *arg)
{
	struct c4d *m = arg;
	struct store_stats ss;
	struct webhook_stats ws;
	char labels[600], name[1200], job[512], hook[512];

	http_label_escape(job, sizeof(job), m->job);
	snprintf(labels, sizeof(labels), "daemon=\"c4d-master\",job=\"%s\"",
		 job);
	if (m->srv != NULL)
		http_metrics_srv(b, m->srv, labels);
#define C4D_METRIC(n, help, gauge, v) http_metric(b, n, help, gauge, labels, v)
	C4D_METRIC("c4d_agents_connected", "agent sessions open now", 1,
		   m->stats.agents);
	C4D_METRIC("c4d_comm_registrations_total",
		   "communicator registrations received", 0,
		   m->stats.comm_registrations);
	C4D_METRIC("c4d_telemetry_batches_total", "telemetry batches received",
		   0, m->stats.telemetry_batches);
	C4D_METRIC("c4d_events_published_total", "event transitions accepted",
		   0, m->stats.published);
	C4D_METRIC("c4d_events_duplicate_total",
		   "event publishes of a revision already known", 0,
		   m->stats.duplicate);
	C4D_METRIC("c4d_events_refused_total", "invalid events refused", 0,
		   m->stats.refused);
	C4D_METRIC("c4d_events_open", "events open now", 1, m->stats.open);
	C4D_METRIC("c4d_events_resolved_kept", "resolved events kept in memory",
		   1, m->stats.resolved);
	store_get_stats(m->store, &ss);
	C4D_METRIC("c4d_store_commits_total",
		   "event transitions committed to the store", 0, ss.puts);
	C4D_METRIC("c4d_store_stale_total",
		   "stored transitions ignored as not newer", 0, ss.stale);
	C4D_METRIC("c4d_store_errors_total", "failed store operations", 0,
		   ss.errors);
	C4D_METRIC("c4d_store_queue", "store jobs waiting for the worker", 1,
		   ss.queued);
	C4D_METRIC("c4d_store_healthy", "1 while the store worker is healthy",
		   1, (uint64_t)ss.healthy);
#undef C4D_METRIC
	if (webhook_count(m->wh) == 0)
		return;
	{
		static const struct {
			const char *name, *help;
			int gauge;
		} wm[] = {
			{"c4d_webhook_delivered_total",
			 "events acknowledged by the webhook", 0},
			{"c4d_webhook_failed_total",
			 "delivery attempts that failed or timed out", 0},
			{"c4d_webhook_queue", "undelivered outbox rows", 1},
			{"c4d_webhook_oldest_age_seconds",
			 "age of the oldest undelivered row", 1},
		};

		for (size_t k = 0; k < sizeof(wm) / sizeof(wm[0]); k++) {
			http_metric_head(b, wm[k].name, wm[k].help,
					 wm[k].gauge);
			for (size_t i = 0; i < webhook_count(m->wh); i++) {
				uint64_t v;

				webhook_get_stats(m->wh, i, &ws);
				v = k == 0   ? ws.delivered
				    : k == 1 ? ws.failed
				    : k == 2 ? ws.pending
					     : ws.oldest_age_ms / 1000;
				http_label_escape(hook, sizeof(hook), ws.name);
				snprintf(name, sizeof(name),
					 "%s,webhook=\"%s\"", labels, hook);
				http_metric_value(b, wm[k].name, name, v);
			}
		}
	}
}

static int
c4d_health(char *why, size_t len, void *arg)
{
	struct c4d *m = arg;
	struct store_stats ss;

	store_get_stats(m->store, &ss);
	if (ss.healthy)
		return 1;
	if (ss.stall_ms > STORE_STALL_MS)
		snprintf(why, len, "store worker stalled for %llu ms",
			 (unsigned long long)ss.stall_ms);
	else
		snprintf(why, len, "store writes are failing");
	return 0;
}

/* ---- opening and closing ------------------------------------------------ */

/*
 * The database path: in state_dir, else in systemd's $STATE_DIRECTORY
 * (StateDirectory=c4/job-%i), else in C4D_STATE_ROOT/job-<job>.  The
 * directory itself is created if missing, its parent is not.
 */
static int
c4d_db_path(const struct c4d_conf *conf, char *buf, size_t len)
{
	const char *env = getenv("STATE_DIRECTORY");
	char dir[4096];
	int n;

	if (conf->state_dir != NULL)
		n = snprintf(dir, sizeof(dir), "%s", conf->state_dir);
	else if (env != NULL && env[0] != '\0')
		n = snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(env, ":"),
			     env);
	else
		n = snprintf(dir, sizeof(dir), "%s/job-%s", C4D_STATE_ROOT,
			     conf->job);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -1;
	if (mkdir(dir, 0750) < 0 && errno != EEXIST)
		log_warn("%s", dir);
	n = snprintf(buf, len, "%s/%s", dir, C4D_DB_NAME);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
c4d_open(struct c4d **out, struct event_base *base, const struct c4d_conf *conf,
	 struct srv *srv, char *http_bound, size_t boundlen)
{
	struct c4d *m = calloc(1, sizeof(*m));
	char path[4096], err[1024];

	*out = NULL;
	if (http_bound != NULL && boundlen > 0)
		http_bound[0] = '\0';
	if (m == NULL)
		return -1;
	m->base = base;
	m->job = strdup(conf->job);
	m->keep_resolved = (size_t)conf->events.keep_resolved;
	if (m->job == NULL)
		goto fail;
	m->srv = srv;
	if (c4d_db_path(conf, path, sizeof(path)) < 0) {
		log_warnx("state_dir is too long");
		goto fail;
	}
	if (store_open(&m->store, base, path,
		       (size_t)conf->events.keep_resolved, c4d_restore_cb, m,
		       err, sizeof(err)) < 0) {
		log_warnx("event store: %s", err);
		goto fail;
	}
	log_info("event store %s: %llu open events continued", path,
		 (unsigned long long)m->stats.open);
	if (webhook_new(&m->wh, base, m->store, conf->job, &conf->webhooks, err,
			sizeof(err)) < 0) {
		log_warnx("webhooks: %s", err);
		goto fail;
	}
	if (conf->http.listen != NULL &&
	    http_open(&m->http, base, conf->http.listen, c4d_metrics,
		      c4d_health, m, http_bound, boundlen, err,
		      sizeof(err)) < 0) {
		log_warnx("http: %s", err);
		goto fail;
	}
	*out = m;
	return 0;
fail:
	c4d_close(m);
	return -1;
}

/*
 * Stops HTTP and the webhook senders, commits what the store still has
 * queued, and frees everything.
 */
void
c4d_close(struct c4d *m)
{
	struct c4d_entry *e, *next;

	if (m == NULL)
		return;
	http_free(m->http);
	webhook_free(m->wh);
	store_close(m->store);
	for (e = m->head; e != NULL; e = next) {
		next = e->next;
		c4d_entry_free(e);
	}
	free(m->job);
	free(m);
}

/* ---- configuration ------------------------------------------------------ */

static const struct cfg_field c4d_events_fields[] = {
	{"keep_resolved", CFG_INT,
	 offsetof(struct c4d_events_conf, keep_resolved), 0, 0,
	 C4D_KEEP_RESOLVED_MAX, C4D_KEEP_RESOLVED_DEF, NULL,
	 "resolved events kept in memory for c4ctl events"},
};
static const struct cfg_schema c4d_events_schema = {
	"events", sizeof(struct c4d_events_conf), c4d_events_fields,
	CFG_NFIELDS(c4d_events_fields), NULL};

static const struct cfg_field c4d_limits_fields[] = {
	{"max_comms", CFG_INT, offsetof(struct c4d_limits_conf, max_comms), 0,
	 1, C4D_COMMS_MAX, C4D_COMMS_DEF, NULL,
	 "communicators of the job (destroyed ones count)"},
	{"max_comms_per_session", CFG_INT,
	 offsetof(struct c4d_limits_conf, max_comms_per_session), 0, 1,
	 C4D_COMMS_MAX, C4D_COMMS_SESSION_DEF, NULL,
	 "communicators one session may introduce"},
};

static void
c4d_limits_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4d_limits_conf *c = obj;

	if (c->max_comms_per_session > c->max_comms)
		cfg_diag_add(d, at,
			     "limits: max_comms_per_session above max_comms");
}

static const struct cfg_schema c4d_limits_schema = {
	"limits", sizeof(struct c4d_limits_conf), c4d_limits_fields,
	CFG_NFIELDS(c4d_limits_fields), c4d_limits_validate};

static const struct cfg_field c4d_detect_fields[] = {
	{"interval", CFG_DURATION, offsetof(struct c4d_detect_conf, interval),
	 0, 100, 600000, "1s", NULL, "analysis period (agents report at it)"},
	{"hang_timeout", CFG_DURATION,
	 offsetof(struct c4d_detect_conf, hang_timeout), 0, 100, 3600000, "2s",
	 NULL, "no op completes for this long: a hang"},
	{"node_timeout", CFG_DURATION,
	 offsetof(struct c4d_detect_conf, node_timeout), 0, 100, 3600000, "2s",
	 NULL, "no data from a host for this long: node lost"},
	{"persist_k", CFG_INT, offsetof(struct c4d_detect_conf, persist_k), 0,
	 1, 16, "2", NULL, "an anomaly must be seen in k ..."},
	{"persist_n", CFG_INT, offsetof(struct c4d_detect_conf, persist_n), 0,
	 1, 16, "3", NULL, "... of the last n intervals"},
	{"min_slowdown", CFG_DOUBLE,
	 offsetof(struct c4d_detect_conf, min_slowdown), 0, 1.0, 100.0, "1.05",
	 NULL, "least slowdown reported"},
};

static void
c4d_detect_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4d_detect_conf *c = obj;

	if (c->persist_k > c->persist_n)
		cfg_diag_add(d, at, "detection: persist_k above persist_n");
}

static const struct cfg_schema c4d_detect_schema = {
	"detection", sizeof(struct c4d_detect_conf), c4d_detect_fields,
	CFG_NFIELDS(c4d_detect_fields), c4d_detect_validate};

static const struct cfg_field c4d_fields[] = {
	{"job", CFG_STR, offsetof(struct c4d_conf, job), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "the job this master serves"},
	{"detection", CFG_SECTION, offsetof(struct c4d_conf, detection), 0, 0,
	 0, NULL, &c4d_detect_schema, "the detection pipeline"},
	{"state_dir", CFG_STR, offsetof(struct c4d_conf, state_dir), 0, 0, 0,
	 NULL, NULL, "directory of the event database"},
	SRV_CONF_FIELD(offsetof(struct c4d_conf, server)),
	DAEMON_CREDS_FIELD(offsetof(struct c4d_conf, credentials)),
	{"webhooks", CFG_LIST, offsetof(struct c4d_conf, webhooks), 0, 0,
	 C4D_WEBHOOKS_MAX, NULL, &webhook_conf_schema,
	 "receivers of events as CloudEvents"},
	HTTP_CONF_FIELD(offsetof(struct c4d_conf, http)),
	{"events", CFG_SECTION, offsetof(struct c4d_conf, events), 0, 0, 0,
	 NULL, &c4d_events_schema, "the in-memory event list"},
	{"limits", CFG_SECTION, offsetof(struct c4d_conf, limits), 0, 0, 0,
	 NULL, &c4d_limits_schema, "what the job's agents may make it keep"},
	DAEMON_LOG_FIELD(offsetof(struct c4d_conf, log)),
};

static void
c4d_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4d_conf *c = obj;
	const struct webhook_conf *w = c->webhooks.items;

	if (c->server.listen == NULL)
		cfg_diag_add(d, at, "server.listen is required");
	auth_validate_list(&c->credentials, at, d);
	if (c->job != NULL &&
	    (c->job[0] == '\0' || strchr(c->job, '/') != NULL ||
	     strcmp(c->job, ".") == 0 || strcmp(c->job, "..") == 0))
		cfg_diag_add(d, at, "job '%s' cannot name a directory", c->job);
	http_conf_validate(&c->http, at, d);
	if (c->webhooks.n > C4D_WEBHOOKS_MAX)
		cfg_diag_add(d, at, "at most %d webhooks", C4D_WEBHOOKS_MAX);
	for (size_t i = 0; i < c->webhooks.n; i++)
		for (size_t k = 0; k < i; k++)
			if (w[i].name && w[k].name &&
			    strcmp(w[i].name, w[k].name) == 0)
				cfg_diag_add(d, w[i].pos,
					     "webhook name '%s' is used twice",
					     w[i].name);
}

const struct cfg_schema c4d_schema = {"c4d-master configuration",
				      sizeof(struct c4d_conf), c4d_fields,
				      CFG_NFIELDS(c4d_fields), c4d_validate};
