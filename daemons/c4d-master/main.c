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

#include "c4_build.h"
#include "daemon.h"
#include "log.h"

struct c4d_conf {
	char *job;
	struct srv_conf server;
	struct cfg_list credentials;
	struct dmn_log_conf log;
};

static const struct cfg_field c4d_fields[] = {
	{"job", CFG_STR, offsetof(struct c4d_conf, job), CFG_REQUIRED, 0, 0,
	 NULL, NULL, "the job this master serves"},
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

static int
c4d_on_message(struct srv_conn *c, const C4__Envelope *env, struct msg_err *err,
	       void *arg)
{
	struct dmn *d = arg;
	struct c4d_state *st = d->state;

	const char *job = c4d_job_of(d->conf), *claimed = NULL;

	(void)c;
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
		st->telemetry_records +=
			env->telemetry->n_colls + env->telemetry->n_conns +
			env->telemetry->n_waits + env->telemetry->n_progress;
		st->dropped_records += env->telemetry->dropped_records;
		return 0;
	default:
		return -1; /* srv answers "not served" */
	}
}

static void
c4d_on_status(struct srv *s, C4__AdminReply *r, void *arg)
{
	struct dmn *d = arg;
	struct c4d_state *st = d->state;

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
}

static int
c4d_start(struct dmn *d)
{
	d->state = calloc(1, sizeof(struct c4d_state));
	return d->state ? 0 : -1;
}

static void
c4d_stop(struct dmn *d)
{
	free(d->state);
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
