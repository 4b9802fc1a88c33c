/*
 * c4d-master - the per-job C4D master: accepts the job's agents and CCL
 * clients, takes their communicator registrations and telemetry, keeps the
 * job's events (c4d.c: store, webhooks, HTTP endpoints) and answers
 * operators.  The detection pipeline (lib/matrix) publishes events through
 * c4d_publish().
 */
#define LOG_SUBSYS "master"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "c4_build.h"
#include "daemon.h"
#include "log.h"
#include "master.h"

struct c4d_main {
	struct c4d *m;
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

	if (d->state != NULL && srv_conn_get_data(c) == d->state)
		c4d_main_stats(d)->agents--;
}

static int
c4d_on_admin(struct srv_conn *c, const C4__Envelope *env, struct msg_err *err,
	     struct dmn *d)
{
	const C4__AdminRequest *q = env->admin_request;
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;

	(void)err;
	if (q->op != C4__ADMIN_OP__ADMIN_EVENTS)
		return -1; /* srv answers "not served" */
	c4d_reply_events(((struct c4d_main *)d->state)->m, q, &r);
	srv_send(c, C4__MSG_TYPE__MSG_ADMIN_REPLY, &r, env->seq);
	c4d_reply_free(&r);
	return 0;
}

static int
c4d_on_message(struct srv_conn *c, const C4__Envelope *env, struct msg_err *err,
	       void *arg)
{
	struct dmn *d = arg;
	struct c4d_stats *st = c4d_main_stats(d);
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
		return 0;
	case C4__MSG_TYPE__MSG_TELEMETRY:
		st->telemetry_batches++;
		return 0;
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
	struct c4d_stats *st = c4d_main_stats(d);

	(void)s;
	srv_reply_counter(r, "agents_connected", st->agents,
			  "agent sessions open now", 1);
	srv_reply_counter(r, "comm_registrations", st->comm_registrations,
			  "communicator registrations received", 0);
	srv_reply_counter(r, "telemetry_batches", st->telemetry_batches,
			  "telemetry batches received", 0);
	srv_reply_counter(r, "events_open", st->open, "events open now", 1);
	srv_reply_counter(r, "events_published", st->published,
			  "event transitions accepted", 0);
}

static int
c4d_start(struct dmn *d)
{
	struct c4d_main *cm = calloc(1, sizeof(*cm));

	if (cm == NULL)
		return -1;
	if (c4d_open(&cm->m, d->base, d->conf, d->srv, cm->http_bound,
		     sizeof(cm->http_bound)) < 0) {
		free(cm);
		return -1;
	}
	d->state = cm;
	return 0;
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

/* The event store, webhooks and HTTP keep what they started with. */
static void
c4d_reload(struct dmn *d, const void *old)
{
	const struct c4d_conf *o = old, *n = d->conf;

	if (strcmp(o->state_dir ?: "", n->state_dir ?: "") != 0 ||
	    strcmp(o->http.listen ?: "", n->http.listen ?: "") != 0 ||
	    o->webhooks.n != n->webhooks.n ||
	    o->events.keep_resolved != n->events.keep_resolved)
		log_warnx("reload: state_dir, webhooks, http and events "
			  "changes take a restart");
}

static void
c4d_stop(struct dmn *d)
{
	struct c4d_main *cm = d->state;

	if (cm != NULL)
		c4d_close(cm->m);
	free(cm);
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
	struct dmn_spec spec = c4d_spec;
	int rc = dmn_main(argc, argv, &spec);

	return rc;
}
