/*
 * c4d-master - the per-job C4D master: accepts the job's agents and CCL
 * clients, takes their communicator registrations and telemetry, and
 * answers operators.  The detection pipeline (lib/matrix), the event store
 * and webhooks build on this session layer.
 */
#define LOG_SUBSYS "master"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "c4_build.h"
#include "daemon.h"
#include "ingest.h"
#include "log.h"

struct c4d_detect_conf {
	int64_t interval;     /* ms */
	int64_t hang_timeout; /* ms */
	int64_t node_timeout; /* ms */
	int64_t persist_k;
	int64_t persist_n;
	double min_slowdown;
};

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

struct c4d_conf {
	char *job;
	struct c4d_detect_conf detection;
	struct srv_conf server;
	struct cfg_list credentials;
	struct dmn_log_conf log;
};

static const struct cfg_field c4d_fields[] = {
	{"job", CFG_STR, offsetof(struct c4d_conf, job), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "the job this master serves"},
	{"detection", CFG_SECTION, offsetof(struct c4d_conf, detection), 0, 0,
	 0, NULL, &c4d_detect_schema, "the detection pipeline"},
	SRV_CONF_FIELD(offsetof(struct c4d_conf, server)),
	DMN_CREDS_FIELD(offsetof(struct c4d_conf, credentials)),
	DMN_LOG_FIELD(offsetof(struct c4d_conf, log)),
};

static void
c4d_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4d_conf *c = obj;

	if (c->server.listen == NULL)
		cfg_diag_add(d, at, "server.listen is required");
	auth_validate_list(&c->credentials, at, d);
}

static const struct cfg_schema c4d_schema = {
	"c4d-master configuration", sizeof(struct c4d_conf), c4d_fields,
	CFG_NFIELDS(c4d_fields), c4d_validate};

struct c4d_state {
	uint64_t comm_registrations;
	uint64_t telemetry_batches;
	uint64_t telemetry_records;
	uint64_t dropped_records;
	uint64_t agents;
	struct ingest *ingest;
	struct event *tick;
};

static const char *
c4d_job_of(const void *conf)
{
	return ((const struct c4d_conf *)conf)->job;
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
		struct c4d_state *st = d->state;

		st->agents++;
		srv_conn_set_data(c, st);
	}
	return 0;
}

static void
c4d_on_close(struct srv_conn *c, void *arg)
{
	struct dmn *d = arg;
	struct c4d_state *st = d->state;

	if (srv_conn_get_data(c) == st)
		st->agents--;
}

/* Admin views of the job: its summary, ranks, and the delay matrix. */
static int
c4d_admin(struct dmn *d, struct srv_conn *c, const C4__Envelope *env,
	  struct msg_err *err)
{
	struct c4d_state *st = d->state;
	const C4__AdminRequest *q = env->admin_request;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;
	uint64_t comm = q->has_comm_hash ? q->comm_hash : 0;
	struct arena a;
	int rc = 0;

	arena_init(&a);
	r.has_op = 1;
	r.op = q->op;
	r.daemon = (char *)"c4d-master";
	switch (q->op) {
	case C4__ADMIN_OP__ADMIN_JOBS: {
		const struct ingest_stats *is = ingest_get_stats(st->ingest);
		C4__JobInfo *j = arena_alloc(&a, sizeof(*j));
		C4__JobInfo **v = arena_alloc(&a, sizeof(*v));

		if (j == NULL || v == NULL) {
			rc = -1;
			break;
		}
		c4__job_info__init(j);
		j->job_id = (char *)c4d_job_of(d->conf);
		j->has_agents = j->has_ranks = j->has_comms = 1;
		j->has_last_interval = 1;
		j->agents = (uint32_t)st->agents;
		j->ranks = ingest_ranks_known(st->ingest);
		j->comms = (uint32_t)is->comms;
		j->last_interval = ingest_interval(st->ingest);
		j->has_open_events = 1;
		j->open_events =
			(uint32_t)(is->events_open - is->events_resolved);
		v[0] = j;
		r.jobs = v;
		r.n_jobs = 1;
		break;
	}
	case C4__ADMIN_OP__ADMIN_RANKS:
		rc = ingest_reply_ranks(st->ingest, comm, &a, &r);
		break;
	case C4__ADMIN_OP__ADMIN_MATRIX:
		rc = ingest_reply_matrix(st->ingest, comm, &a, &r);
		break;
	default:
		arena_free(&a);
		return -1;
	}
	if (rc == 0)
		srv_send(c, C4__MSG_TYPE__MSG_ADMIN_REPLY, &r, env->seq);
	else {
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
	struct c4d_state *st = d->state;

	const char *job = c4d_job_of(d->conf), *claimed = NULL;

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
		return ingest_register(st->ingest, env->comm_register, err);
	case C4__MSG_TYPE__MSG_TELEMETRY:
		st->telemetry_batches++;
		st->telemetry_records +=
			env->telemetry->n_colls + env->telemetry->n_conns +
			env->telemetry->n_waits + env->telemetry->n_progress;
		st->dropped_records += env->telemetry->dropped_records;
		return ingest_telemetry(st->ingest, srv_conn_node(c),
					env->telemetry, err);
	case C4__MSG_TYPE__MSG_ADMIN_REQUEST:
		return c4d_admin(d, c, env, err);
	default:
		return -1; /* srv answers "not served" */
	}
}

static void
c4d_on_status(struct srv *s, C4__AdminReply *r, void *arg)
{
	struct dmn *d = arg;
	struct c4d_state *st = d->state;
	const struct ingest_stats *is = ingest_get_stats(st->ingest);

	(void)s;
	srv_reply_counter(r, "intervals", is->ticks, "intervals analysed", 0);
	srv_reply_counter(r, "hosts", is->hosts, "hosts known", 1);
	srv_reply_counter(r, "comms", is->comms, "communicators known", 1);
	srv_reply_counter(r, "comms_incomplete", is->comms_incomplete,
			  "communicators with ranks not yet registered", 1);
	srv_reply_counter(r, "windows_dropped", is->windows_dropped,
			  "host intervals dropped: sent faster than analysed",
			  0);
	srv_reply_counter(r, "events_opened", is->events_open, "events opened",
			  0);
	srv_reply_counter(r, "events_updated", is->events_updated,
			  "event updates", 0);
	srv_reply_counter(r, "events_resolved", is->events_resolved,
			  "events resolved", 0);
	srv_reply_counter(r, "analysis_us_last", is->analysis_us_last,
			  "time of the last analysis, microseconds", 1);
	srv_reply_counter(r, "analysis_us_max", is->analysis_us_max,
			  "longest analysis, microseconds", 1);
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
}

/* Receives every event transition of the pipeline. */
static void
c4d_publish(void *arg, const C4__Event *ev)
{
	(void)arg;
	(void)ev;
}

static void
c4d_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dmn *d = arg;
	struct c4d_state *st = d->state;
	struct timespec ts;

	(void)fd;
	(void)what;
	clock_gettime(CLOCK_REALTIME, &ts);
	ingest_tick(st->ingest,
		    (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
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
	struct ingest_params p;
	struct c4d_state *st;
	struct timeval tv;

	st = d->state = calloc(1, sizeof(struct c4d_state));
	if (st == NULL)
		return -1;
	memset(&p, 0, sizeof(p));
	p.interval_ms = c->detection.interval;
	p.hang_intervals =
		c4d_intervals(c->detection.hang_timeout, c->detection.interval);
	p.node_intervals =
		c4d_intervals(c->detection.node_timeout, c->detection.interval);
	p.persist_k = (unsigned)c->detection.persist_k;
	p.persist_n = (unsigned)c->detection.persist_n;
	p.min_slowdown = c->detection.min_slowdown;
	st->ingest = ingest_new(c->job, &p, c4d_publish, d);
	st->tick = event_new(d->base, -1, EV_PERSIST, c4d_tick_cb, d);
	if (st->ingest == NULL || st->tick == NULL)
		return -1;
	tv.tv_sec = c->detection.interval / 1000;
	tv.tv_usec = (c->detection.interval % 1000) * 1000;
	return event_add(st->tick, &tv);
}

static void
c4d_stop(struct dmn *d)
{
	struct c4d_state *st = d->state;

	if (st == NULL)
		return;
	if (st->tick != NULL)
		event_free(st->tick);
	ingest_free(st->ingest);
	free(st);
	d->state = NULL;
}

static const struct dmn_spec c4d_spec = {
	.name = "c4d-master",
	.default_config = C4_SYSCONFDIR "/c4d-master.yaml",
	.schema = &c4d_schema,
	.off_server = offsetof(struct c4d_conf, server),
	.off_creds = offsetof(struct c4d_conf, credentials),
	.off_log = offsetof(struct c4d_conf, log),
	.role = C4__ROLE__ROLE_MASTER,
	.job_of = c4d_job_of,
	.start = c4d_start,
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
	struct dmn_spec spec = c4d_spec;
	int rc = dmn_main(argc, argv, &spec);

	return rc;
}
