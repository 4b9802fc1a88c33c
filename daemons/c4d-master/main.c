/*
 * c4d-master - the per-job C4D master: accepts the job's agents and CCL
 * clients, runs the detection pipeline (ingest.c, lib/matrix) over their
 * registrations and telemetry every interval, keeps the job's events
 * (c4d.c: store, webhooks, HTTP endpoints) and answers operators.
 */
#define LOG_SUBSYS "master"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "c4_build.h"
#include "clock.h"
#include "daemon.h"
#include "ingest.h"
#include "log.h"
#include "master.h"

struct c4d_main {
	struct c4d *m;
	struct ingest *ingest;
	struct event *tick; /* analysis, a tenth past each boundary */
	uint32_t interval_ms;
	char http_bound[256];
};

static const char *
c4d_job_of(const void *conf)
{
	return ((const struct c4d_conf *)conf)->job;
}

static struct c4d_stats *
c4d_main_stats(struct dmn *d)
{
	return c4d_stats(((struct c4d_main *)d->state)->m);
}

/* Agents and CCL clients of other jobs never reach this job's master. */
static int
c4d_on_hello(struct srv_conn *c, const C4__Hello *h, struct msg_err *err,
	     void *arg)
{
	struct dmn *d = arg;
	const char *job = c4d_job_of(d->conf);

	if (h->role == C4__ROLE__ROLE_CTL)
		return 0;
	if (h->job_id == NULL || strcmp(h->job_id, job) != 0) {
		err->code = C4__ERROR_CODE__ERR_AUTH;
		snprintf(err->text, sizeof(err->text),
			 "%s of job '%s' may not talk to the master of job "
			 "'%s'",
			 msg_role_name(h->role), h->job_id ? h->job_id : "",
			 job);
		return -1;
	}
	if (h->role == C4__ROLE__ROLE_AGENT) {
		c4d_main_stats(d)->agents++;
		srv_conn_set_data(c, d->state);
	}
	return 0;
}

static void
c4d_on_close(struct srv_conn *c, void *arg)
{
	struct dmn *d = arg;

	if (d->state == NULL)
		return;
	if (srv_conn_get_data(c) == d->state)
		c4d_main_stats(d)->agents--;
	/* Any session may have registered communicators (its cap ends). */
	ingest_unlink(((struct c4d_main *)d->state)->ingest, c);
}

/* Admin views: events (from memory), the job, its ranks, the matrix. */
static int
c4d_on_admin(struct srv_conn *c, const C4__Envelope *env, struct msg_err *err,
	     struct dmn *d)
{
	struct c4d_main *cm = d->state;
	const C4__AdminRequest *q = env->admin_request;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;
	uint64_t comm = q->has_comm_hash ? q->comm_hash : 0;
	struct arena a;
	int rc;

	if (q->op == C4__ADMIN_OP__ADMIN_EVENTS) {
		c4d_reply_events(cm->m, q, &r);
		srv_send(c, C4__MSG_TYPE__MSG_ADMIN_REPLY, &r, env->seq);
		c4d_reply_free(&r);
		return 0;
	}
	arena_init(&a);
	r.has_op = 1;
	r.op = q->op;
	r.daemon = (char *)"c4d-master";
	switch (q->op) {
	case C4__ADMIN_OP__ADMIN_JOBS:
		rc = ingest_reply_job(
			cm->ingest, (uint32_t)c4d_main_stats(d)->agents,
			(uint32_t)c4d_main_stats(d)->open, &a, &r);
		break;
	case C4__ADMIN_OP__ADMIN_RANKS:
		rc = ingest_reply_ranks(cm->ingest, comm, &a, &r);
		break;
	case C4__ADMIN_OP__ADMIN_MATRIX:
		rc = ingest_reply_matrix(cm->ingest, comm, &a, &r);
		break;
	default:
		arena_free(&a);
		return -1; /* srv answers "not served" */
	}
	if (rc == 0) {
		srv_send(c, C4__MSG_TYPE__MSG_ADMIN_REPLY, &r, env->seq);
	} else {
		err->code = C4__ERROR_CODE__ERR_INTERNAL;
		snprintf(err->text, sizeof(err->text), "out of memory");
	}
	arena_free(&a);
	return rc;
}

static int
c4d_on_message(struct srv_conn *c, const C4__Envelope *env, struct msg_err *err,
	       void *arg)
{
	struct dmn *d = arg;
	struct c4d_main *cm = d->state;
	struct c4d_stats *st = c4d_main_stats(d);
	const char *job = c4d_job_of(d->conf), *claimed = NULL;
	const C4__TelemetryBatch *b;

	if (env->type == C4__MSG_TYPE__MSG_COMM_REGISTER)
		claimed = env->comm_register->job_id;
	else if (env->type == C4__MSG_TYPE__MSG_TELEMETRY)
		claimed = env->telemetry->job_id;
	/* A job named inside a message must be this master's job. */
	if (claimed != NULL && claimed[0] != '\0' &&
	    strcmp(claimed, job) != 0) {
		err->code = C4__ERROR_CODE__ERR_INVALID;
		snprintf(err->text, sizeof(err->text),
			 "%s for job '%s' sent to the master of job '%s'",
			 msg_type_name(env->type), claimed, job);
		return -1;
	}
	switch (env->type) {
	case C4__MSG_TYPE__MSG_COMM_REGISTER:
		st->comm_registrations++;
		return ingest_register(cm->ingest, env->comm_register, c, err);
	case C4__MSG_TYPE__MSG_TELEMETRY:
		b = env->telemetry;
		st->telemetry_batches++;
		st->telemetry_records +=
			b->n_colls + b->n_conns + b->n_waits + b->n_progress;
		st->dropped_records += b->dropped_records;
		return ingest_telemetry(cm->ingest, srv_conn_node(c), b, c,
					err);
	case C4__MSG_TYPE__MSG_ADMIN_REQUEST:
		return c4d_on_admin(c, env, err, d);
	default:
		return -1; /* srv answers "not served" */
	}
}

static void
c4d_on_status(struct srv *s, C4__AdminReply *r, void *arg)
{
	struct dmn *d = arg;
	struct c4d_main *cm = d->state;
	struct c4d_stats *st = c4d_main_stats(d);
	const struct ingest_stats *is = ingest_get_stats(cm->ingest);

	(void)s;
	srv_reply_counter(r, "agents_connected", st->agents,
			  "agent sessions open now", 1);
	srv_reply_counter(r, "comm_registrations", st->comm_registrations,
			  "communicator registrations received", 0);
	srv_reply_counter(r, "telemetry_batches", st->telemetry_batches,
			  "telemetry batches received", 0);
	srv_reply_counter(r, "telemetry_records", st->telemetry_records,
			  "summaries in those batches", 0);
	srv_reply_counter(r, "dropped_records", st->dropped_records,
			  "summaries the senders reported lost on the way", 0);
	srv_reply_counter(r, "intervals", is->ticks, "intervals analysed", 0);
	srv_reply_counter(r, "hosts", is->hosts, "hosts known", 1);
	srv_reply_counter(r, "comms", is->comms, "communicators known", 1);
	srv_reply_counter(r, "comms_incomplete", is->comms_incomplete,
			  "communicators with ranks not yet registered", 1);
	srv_reply_counter(r, "comms_refused", is->comms_refused,
			  "new communicators refused at limits.max_comms*", 0);
	srv_reply_counter(r, "windows_dropped", is->windows_dropped,
			  "host intervals dropped: sent faster than analysed",
			  0);
	srv_reply_counter(r, "flights_matched", is->flights_matched,
			  "ops timed by both ends of a connection", 0);
	srv_reply_counter(r, "flights_unmatched", is->flights_unmatched,
			  "ops timed by one end only", 0);
	srv_reply_counter(r, "timing_refused", is->timing_refused,
			  "connection timings with unequal lists", 0);
	srv_reply_counter(r, "events_opened", is->events_open,
			  "events opened by the detectors", 0);
	srv_reply_counter(r, "events_updated", is->events_updated,
			  "event updates by the detectors", 0);
	srv_reply_counter(r, "events_resolved", is->events_resolved,
			  "events resolved by the detectors", 0);
	srv_reply_counter(r, "analysis_us_last", is->analysis_us_last,
			  "time of the last analysis, microseconds", 1);
	srv_reply_counter(r, "analysis_us_max", is->analysis_us_max,
			  "longest analysis, microseconds", 1);
	srv_reply_counter(r, "events_open", st->open, "events open now", 1);
	srv_reply_counter(r, "events_published", st->published,
			  "event transitions accepted", 0);
}

/* Every transition of the pipeline goes to the store and the webhooks. */
static void
c4d_publish_cb(void *arg, const C4__Event *ev)
{
	struct c4d_main *cm = arg;

	if (c4d_publish(cm->m, ev) < 0)
		log_warnx("event %s: not published", ev->id);
}

/* An open event's evidence goes on: last_seen, not a transition. */
static void
c4d_touch_cb(void *arg, const char *id, uint64_t last_interval,
	     uint64_t last_seen_ns)
{
	struct c4d_main *cm = arg;

	if (c4d_touch(cm->m, id, last_interval, last_seen_ns) < 0)
		log_warnx("event %s: last seen not stored", id);
}

static void
c4d_adopt_cb(const C4__Event *ev, void *arg)
{
	struct c4d_main *cm = arg;

	if (ingest_adopt(cm->ingest, ev) < 0)
		log_warnx("event %s: cannot be continued; it stays open",
			  ev->id);
}

static void
c4d_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct c4d_main *cm = arg;

	(void)fd;
	(void)what;
	ingest_tick(cm->ingest, clock_ns(CLOCK_REALTIME));
	if (daemon_tick_arm(cm->tick, cm->interval_ms,
			    cm->interval_ms / CLOCK_TICK_MASTER_DIV, 0) < 0)
		log_warnx("cannot arm the analysis tick");
}

static unsigned
c4d_intervals(int64_t ms, int64_t interval)
{
	return (unsigned)((ms + interval - 1) / interval);
}

static int
c4d_start(struct dmn *d)
{
	const struct c4d_conf *c = d->conf;
	struct c4d_main *cm = calloc(1, sizeof(*cm));
	struct ingest_params p;

	if (cm == NULL)
		return -1;
	d->state = cm;
	if (c4d_open(&cm->m, d->base, d->conf, d->srv, cm->http_bound,
		     sizeof(cm->http_bound)) < 0)
		return -1;
	memset(&p, 0, sizeof(p));
	p.hang_intervals =
		c4d_intervals(c->detection.hang_timeout, c->detection.interval);
	p.node_intervals =
		c4d_intervals(c->detection.node_timeout, c->detection.interval);
	p.persist_k = (unsigned)c->detection.persist_k;
	p.persist_n = (unsigned)c->detection.persist_n;
	p.min_slowdown = c->detection.min_slowdown;
	p.max_comms = (uint64_t)c->limits.max_comms;
	p.max_comms_per_session = (uint64_t)c->limits.max_comms_per_session;
	cm->ingest = ingest_new(c->job, &p, c4d_publish_cb, cm);
	cm->tick = event_new(d->base, -1, 0, c4d_tick_cb, cm);
	if (cm->ingest == NULL || cm->tick == NULL)
		return -1;
	ingest_set_touch(cm->ingest, c4d_touch_cb);
	/* Events open at the last stop continue under their ids. */
	c4d_each_open(cm->m, c4d_adopt_cb, cm);
	cm->interval_ms = (uint32_t)c->detection.interval;
	return daemon_tick_arm(cm->tick, cm->interval_ms,
			       cm->interval_ms / CLOCK_TICK_MASTER_DIV, 1);
}

/* Reports the HTTP address next to server.listen (C4_LISTEN=). */
static int
c4d_listen(struct dmn *d, char *bound, size_t len)
{
	struct c4d_main *cm = d->state;

	if (cm->http_bound[0] != '\0')
		snprintf(bound, len, "http://%s", cm->http_bound);
	return 0;
}

/* The store, webhooks, HTTP and the detectors keep what they started with. */
static void
c4d_reload(struct dmn *d, const void *old)
{
	const struct c4d_conf *o = old, *n = d->conf;
	struct c4d_main *cm = d->state;

	/* The caps apply to the next new communicator. */
	ingest_set_limits(cm->ingest, (uint64_t)n->limits.max_comms,
			  (uint64_t)n->limits.max_comms_per_session);

	if (strcmp(o->state_dir ?: "", n->state_dir ?: "") != 0 ||
	    strcmp(o->http.listen ?: "", n->http.listen ?: "") != 0 ||
	    o->webhooks.n != n->webhooks.n ||
	    o->events.keep_resolved != n->events.keep_resolved ||
	    memcmp(&o->detection, &n->detection, sizeof(o->detection)) != 0)
		log_warnx("reload: state_dir, webhooks, http, events and "
			  "detection changes take a restart");
}

static void
c4d_stop(struct dmn *d)
{
	struct c4d_main *cm = d->state;

	if (cm == NULL)
		return;
	if (cm->tick != NULL)
		event_free(cm->tick);
	ingest_free(cm->ingest);
	if (cm->m != NULL)
		c4d_close(cm->m);
	free(cm);
	d->state = NULL;
}

static const struct daemon_spec c4d_spec = {
	.name = "c4d-master",
	.default_config = C4_SYSCONFDIR "/c4d-master.yaml",
	.schema = &c4d_schema,
	.off_server = offsetof(struct c4d_conf, server),
	.off_creds = offsetof(struct c4d_conf, credentials),
	.off_log = offsetof(struct c4d_conf, log),
	.role = C4__ROLE__ROLE_MASTER,
	/* The pipeline and event list copy what they keep. */
	.arena_decode = 1,
	.job_of = c4d_job_of,
	.start = c4d_start,
	.listen = c4d_listen,
	.reload = c4d_reload,
	.stop = c4d_stop,
	.ops =
		{
			.on_hello = c4d_on_hello,
			.on_message = c4d_on_message,
			.on_close = c4d_on_close,
			.on_status = c4d_on_status,
		},
};

int
main(int argc, char **argv)
{
	struct daemon_spec spec = c4d_spec;

	return daemon_main(argc, argv, &spec);
}
