/*
 * c4a-agent - the per-node agent: CCL processes of the node connect to its
 * unix socket; operators reach it over TCP.  Its configuration, the CCL
 * sessions and the interval tick live here; agg.c merges a job's
 * data, upstream.c carries it to the job's master.
 */
#define LOG_SUBSYS "agent"

#include <errno.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/dns.h>

#include "agent.h"
#include "auth.h"
#include "c4_build.h"
#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "srv_tls.h"
#include "token.h"

struct c4a_socket_conf {
	char *path;
	int64_t mode;
	char *group;
};

/* "c4p:": the c4p-master and the probing it asks for. */
struct c4a_c4p_conf {
	char *address;
	char *token;
	char *token_file;
	char *probe_netns;
	int64_t probe_rate;
	struct cfg_pos pos;
	struct tls_files tls;
	bool insecure;
	char *secret; /* filled by validation */
};

struct c4a_conf {
	char *node_name;
	struct c4a_c4p_conf c4p;
	int64_t interval;	 /* ms */
	int64_t buffer_limit;	 /* bytes per master */
	struct cfg_list masters; /* struct agent_master_conf */
	struct c4a_socket_conf socket;
	struct srv_conf server;
	struct cfg_list credentials;
	struct daemon_log_conf log;
};

static const struct cfg_field c4a_socket_fields[] = {
	{"path", CFG_STR, offsetof(struct c4a_socket_conf, path), 0, 0, 0,
	 "/run/c4/agent.sock", NULL, "unix socket for local CCL processes"},
	{"mode", CFG_INT, offsetof(struct c4a_socket_conf, mode), CFG_OCTAL, 0,
	 0777, "0660", NULL,
	 "permissions of the socket file, in octal; 0 keeps the umask's"},
	{"group", CFG_STR, offsetof(struct c4a_socket_conf, group), 0, 0, 0,
	 NULL, NULL, "group given the socket file (CCL users' group)"},
};

static void
c4a_socket_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4a_socket_conf *s = obj;

	if (s->group != NULL && getgrnam(s->group) == NULL)
		cfg_diag_add(d, at, "socket.group: no group '%s'", s->group);
	if (s->path[0] != '/')
		cfg_diag_add(d, at, "socket.path must be absolute");
	else if (strlen(s->path) >= 108)
		cfg_diag_add(d, at, "socket.path longer than 107 bytes");
}

static const struct cfg_schema c4a_socket_schema = {
	"socket", sizeof(struct c4a_socket_conf), c4a_socket_fields,
	CFG_NFIELDS(c4a_socket_fields), c4a_socket_validate};

/*
 * The credential of a master entry: exactly one of token and token_file,
 * of a valid length, or neither when it presents a TLS client
 * certificate (the master then knows it by that).  *secret gets a copy;
 * problems go to d as "what: ...".
 */
static void
c4a_secret(const char *token, const char *token_file, int has_cert,
	   char **secret, const char *what, struct cfg_pos at,
	   struct cfg_diag *d)
{
	char err[256];

	if (token == NULL && token_file == NULL && has_cert)
		return;
	if ((token == NULL) == (token_file == NULL)) {
		cfg_diag_add(d, at,
			     "%s: give exactly one of token and "
			     "token_file",
			     what);
		return;
	}
	if (token != NULL)
		*secret = strdup(token);
	else if ((*secret = token_read(token_file, AUTH_TOKEN_MAX + 1, err,
				       sizeof(err))) == NULL) {
		cfg_diag_add(d, at, "%s: token_file %s: %s", what, token_file,
			     err);
		return;
	}
	if (*secret == NULL || strlen(*secret) < AUTH_TOKEN_MIN ||
	    strlen(*secret) > AUTH_TOKEN_MAX)
		cfg_diag_add(d, at, "%s: token must be %u to %u bytes", what,
			     AUTH_TOKEN_MIN, AUTH_TOKEN_MAX);
}

static void
c4a_master_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct agent_master_conf *m = obj;
	char what[MSG_ID_MAX + 32];

	snprintf(what, sizeof(what), "master of job '%s'", m->job);
	c4a_secret(m->token, m->token_file, m->tls.cert != NULL, &m->secret,
		   what, at, d);
	srv_tls_check_plain(m->address, tls_enabled(&m->tls, 0), m->insecure,
			    what, at, d);
	if (strlen(m->job) > MSG_ID_MAX)
		cfg_diag_add(d, at, "job id longer than %u bytes", MSG_ID_MAX);
}

static const struct cfg_field c4a_master_fields[] = {
	{"job", CFG_STR, offsetof(struct agent_master_conf, job), CFG_REQUIRED,
	 0, 0, NULL, NULL, "the job this master serves"},
	{"address", CFG_ADDR, offsetof(struct agent_master_conf, address),
	 CFG_REQUIRED, 0, 0, NULL, NULL, "the master: host:port or unix:/path"},
	{"token", CFG_STR, offsetof(struct agent_master_conf, token),
	 CFG_SECRET, 0, 0, NULL, NULL, "credential (role agent) for it"},
	{"token_file", CFG_STR, offsetof(struct agent_master_conf, token_file),
	 0, 0, 0, NULL, NULL, "file whose first line is the credential"},
	SRV_TLS_FIELD(offsetof(struct agent_master_conf, tls)),
	{"insecure", CFG_BOOL, offsetof(struct agent_master_conf, insecure), 0,
	 0, 0, "false", NULL, "allow plaintext TCP to a non-loopback address"},
	{NULL, CFG_POS, offsetof(struct agent_master_conf, pos), 0, 0, 0, NULL,
	 NULL, NULL},
	/* Derived at validation; listed so that cfg_free() releases it. */
	{NULL, CFG_STR, offsetof(struct agent_master_conf, secret), CFG_SECRET,
	 0, 0, NULL, NULL, NULL},
};

static const struct cfg_schema c4a_master_schema = {
	"master", sizeof(struct agent_master_conf), c4a_master_fields,
	CFG_NFIELDS(c4a_master_fields), c4a_master_validate};

static void
c4a_c4p_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4a_c4p_conf *c = obj;
	const char *ns = c->probe_netns;

	if (c->address == NULL) {
		if (c->token != NULL || c->token_file != NULL || ns != NULL)
			cfg_diag_add(d, c->pos, "c4p: address is required");
		return;
	}
	c4a_secret(c->token, c->token_file, c->tls.cert != NULL, &c->secret,
		   "c4p", c->pos, d);
	srv_tls_check_plain(c->address, tls_enabled(&c->tls, 0), c->insecure,
			    "c4p", c->pos, d);
	/* A name under /run/netns, as ip-netns(8) makes them. */
	if (ns != NULL && (ns[0] == '\0' || ns[0] == '.' || strchr(ns, '/') ||
			   strlen(ns) > 64))
		cfg_diag_add(d, c->pos,
			     "c4p.probe_netns: '%s' is not a name under "
			     "/run/netns",
			     ns);
	(void)at;
}

static const struct cfg_field c4a_c4p_fields[] = {
	{"address", CFG_ADDR, offsetof(struct c4a_c4p_conf, address), 0, 0, 0,
	 NULL, NULL, "the c4p-master: host:port or unix:/path"},
	{"token", CFG_STR, offsetof(struct c4a_c4p_conf, token), CFG_SECRET, 0,
	 0, NULL, NULL, "credential (role agent) for it"},
	{"token_file", CFG_STR, offsetof(struct c4a_c4p_conf, token_file), 0, 0,
	 0, NULL, NULL, "file whose first line is the credential"},
	{"probe_netns", CFG_STR, offsetof(struct c4a_c4p_conf, probe_netns), 0,
	 0, 0, NULL, NULL,
	 "network namespace (/run/netns/NAME) of the probe sockets"},
	{"probe_rate", CFG_INT, offsetof(struct c4a_c4p_conf, probe_rate), 0, 1,
	 1000000, "2000", NULL, "probe packets per second, at most"},
	SRV_TLS_FIELD(offsetof(struct c4a_c4p_conf, tls)),
	{"insecure", CFG_BOOL, offsetof(struct c4a_c4p_conf, insecure), 0, 0, 0,
	 "false", NULL, "allow plaintext TCP to a non-loopback address"},
	{NULL, CFG_POS, offsetof(struct c4a_c4p_conf, pos), 0, 0, 0, NULL, NULL,
	 NULL},
	{NULL, CFG_STR, offsetof(struct c4a_c4p_conf, secret), CFG_SECRET, 0, 0,
	 NULL, NULL, NULL},
};

static const struct cfg_schema c4a_c4p_schema = {
	"c4p", sizeof(struct c4a_c4p_conf), c4a_c4p_fields,
	CFG_NFIELDS(c4a_c4p_fields), c4a_c4p_validate};

static const struct cfg_field c4a_fields[] = {
	{"node_name", CFG_STR, offsetof(struct c4a_conf, node_name), 0, 0, 0,
	 NULL, NULL, "this node's name (default: the host name)"},
	{"c4p", CFG_SECTION, offsetof(struct c4a_conf, c4p), 0, 0, 0, NULL,
	 &c4a_c4p_schema, "the c4p-master, whose probe tasks this agent runs"},
	{"interval", CFG_DURATION, offsetof(struct c4a_conf, interval), 0, 100,
	 3600000, "1s", NULL, "reporting interval: one batch per job per tick"},
	{"buffer_limit", CFG_SIZE, offsetof(struct c4a_conf, buffer_limit), 0,
	 1024, 16.0 * 1024 * 1024 * 1024, "64MiB", NULL,
	 "bytes of batches kept per master while it is away"},
	{"masters", CFG_LIST, offsetof(struct c4a_conf, masters), 0, 0, 0, NULL,
	 &c4a_master_schema, "the c4d-master of each job on this node"},
	{"socket", CFG_SECTION, offsetof(struct c4a_conf, socket), 0, 0, 0,
	 NULL, &c4a_socket_schema, "local CCL socket"},
	SRV_CONF_FIELD(offsetof(struct c4a_conf, server)),
	DAEMON_CREDS_FIELD(offsetof(struct c4a_conf, credentials)),
	DAEMON_LOG_FIELD(offsetof(struct c4a_conf, log)),
};

static void
c4a_validate(void *obj, struct cfg_pos at, struct cfg_diag *d)
{
	struct c4a_conf *c = obj;
	const struct agent_master_conf *m = c->masters.items;

	auth_validate_list(&c->credentials, at, d);
	for (size_t i = 0; i < c->masters.n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(m[i].job, m[j].job) == 0)
				cfg_diag_add(d, m[i].pos,
					     "job '%s' has a master already "
					     "(one c4d-master per job)",
					     m[i].job);
}

static const struct cfg_schema c4a_schema = {
	"c4a-agent configuration", sizeof(struct c4a_conf), c4a_fields,
	CFG_NFIELDS(c4a_fields), c4a_validate};

static const char *
c4a_node_of(const void *conf)
{
	return ((const struct c4a_conf *)conf)->node_name;
}

/* ---- runtime state ----------------------------------------------------------
 */

struct c4a_job {
	char *job;
	struct agg *agg;
	struct upstream *up;
	uint32_t clients;
};

struct c4a_state {
	struct dmn *d;
	struct evdns_base *dns;
	struct upstream *c4p;  /* session to the c4p-master, if configured */
	struct prober *prober; /* its probe tasks */
	struct event *tick;
	struct c4a_job *jobs;
	size_t njobs;
	uint32_t interval_ms;
	uint64_t interval_id;
	uint64_t interval_start_ns;
	uint64_t clients;
	uint64_t clients_refused;
	uint64_t batches_sent;
	uint64_t records_sent;
};

static struct c4a_job *
c4a_job_find(struct c4a_state *st, const char *job)
{
	for (size_t i = 0; i < st->njobs; i++)
		if (job != NULL && strcmp(st->jobs[i].job, job) == 0)
			return &st->jobs[i];
	return NULL;
}

/* A master session is up: it hears every merged registration again. */
static void
c4a_up_ready(struct upstream *u, void *arg)
{
	struct c4a_job *j = arg;

	for (size_t i = 0; i < agg_ncomms(j->agg); i++) {
		size_t len;
		uint8_t *f = agg_comm_frame(j->agg, i, &len);

		if (f != NULL)
			upstream_send_now(u, f, len);
		free(f);
	}
}

/*
 * The interval tick: one merged batch per job, even with no clients (the
 * master tells a lost node by the absence of its batches).  It comes a
 * twentieth of an interval after each wall-clock boundary, when the local
 * reporters have sent the interval that just ended (clock.h).
 */
static void
c4a_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct c4a_state *st = arg;
	uint64_t now = clock_ns(CLOCK_REALTIME);

	(void)fd;
	(void)what;
	st->interval_id++;
	for (size_t i = 0; i < st->njobs; i++) {
		struct c4a_job *j = &st->jobs[i];
		struct agg_part *parts;
		ssize_t n = agg_take(j->agg, st->interval_id,
				     st->interval_start_ns, st->interval_ms,
				     upstream_take_dropped(j->up), &parts);

		if (n < 0) {
			log_warnx("job %s: no memory for interval %llu", j->job,
				  (unsigned long long)st->interval_id);
			continue;
		}
		for (ssize_t k = 0; k < n; k++) {
			st->batches_sent++;
			st->records_sent += parts[k].records;
			/* The FIFO takes the frame. */
			upstream_send_batch(j->up, parts[k].frame, parts[k].len,
					    parts[k].records, parts[k].dropped);
			parts[k].frame = NULL;
		}
		agg_parts_free(parts, (size_t)n);
	}
	st->interval_start_ns = now;
	if (daemon_tick_arm(st->tick, st->interval_ms,
			    st->interval_ms / CLOCK_TICK_AGENT_DIV, 0) < 0)
		log_warnx("cannot arm the interval tick");
}

/* ---- the c4p-master's session ------------------------------------------ */

static void
c4a_probe_done(const C4__ProbeResult *r, void *arg)
{
	struct c4a_state *st = arg;

	/* A result the master cannot take now is lost: it probes again. */
	if (upstream_send(st->c4p, C4__MSG_TYPE__MSG_PROBE_RESULT, (void *)r) <
	    0)
		log_debug("probe result %llu: no session to the c4p-master",
			  (unsigned long long)r->task_id);
}

static int
c4a_c4p_msg(struct upstream *u, const C4__Envelope *env, void *arg)
{
	struct c4a_state *st = arg;
	char err[256];

	(void)u;
	switch (env->type) {
	case C4__MSG_TYPE__MSG_PROBE_TASK:
		if (prober_task(st->prober, env->probe_task, err, sizeof(err)) <
		    0)
			log_warnx("c4p-master: %s", err);
		return 0;
	case C4__MSG_TYPE__MSG_PATH_REASSIGN:
		/* CCL clients hold their own sessions to the c4p-master. */
		return 0;
	default:
		return 0;
	}
}

/* A new session: tasks of the last one will not be wanted any more. */
static void
c4a_c4p_ready(struct upstream *u, void *arg)
{
	struct c4a_state *st = arg;

	(void)u;
	prober_cancel(st->prober);
}

static int
c4a_c4p_start(struct c4a_state *st, const struct c4a_c4p_conf *c)
{
	struct agent_master_conf m = {0};

	st->prober = prober_new(st->d->base, (uint32_t)c->probe_rate,
				c->probe_netns, c4a_probe_done, st);
	if (st->prober == NULL)
		return -1;
	m.address = c->address;
	m.secret = c->secret;
	m.tls = c->tls;
	m.insecure = c->insecure;
	st->c4p = upstream_new(st->d->base, st->dns, &m, st->d->node, 0,
			       c4a_c4p_ready, st);
	if (st->c4p == NULL)
		return -1;
	upstream_set_handler(st->c4p, c4a_c4p_msg, st);
	log_info("c4p-master %s%s%s", c->address,
		 c->probe_netns ? ", probes in network namespace " : "",
		 c->probe_netns ? c->probe_netns : "");
	return 0;
}

static void
c4a_stop(struct dmn *d)
{
	struct c4a_state *st = d->state;

	if (st == NULL)
		return;
	upstream_free(st->c4p);
	prober_free(st->prober);
	for (size_t i = 0; i < st->njobs; i++) {
		upstream_free(st->jobs[i].up);
		agg_free(st->jobs[i].agg);
		free(st->jobs[i].job);
	}
	free(st->jobs);
	if (st->tick != NULL)
		event_free(st->tick);
	if (st->dns != NULL)
		evdns_base_free(st->dns, 0);
	free(st);
	d->state = NULL;
}

static int
c4a_start(struct dmn *d)
{
	struct c4a_conf *c = d->conf;
	const struct agent_master_conf *m = c->masters.items;
	struct c4a_state *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return -1;
	d->state = st;
	st->d = d;
	st->interval_ms = (uint32_t)c->interval;
	st->interval_start_ns = clock_ns(CLOCK_REALTIME);
	/* Names of masters resolve without blocking the loop. */
	st->dns = evdns_base_new(d->base,
				 EVDNS_BASE_INITIALIZE_NAMESERVERS |
					 EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	if (st->dns == NULL)
		st->dns = evdns_base_new(d->base,
					 EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	st->jobs = calloc(c->masters.n + 1, sizeof(*st->jobs));
	st->tick = event_new(d->base, -1, 0, c4a_tick_cb, st);
	if (st->dns == NULL || st->jobs == NULL || st->tick == NULL)
		goto fail;
	for (size_t i = 0; i < c->masters.n; i++) {
		struct c4a_job *j = &st->jobs[st->njobs];

		j->job = strdup(m[i].job);
		j->agg = agg_new(m[i].job, d->node);
		if (j->job == NULL || j->agg == NULL) {
			free(j->job);
			agg_free(j->agg);
			goto fail;
		}
		j->up = upstream_new(d->base, st->dns, &m[i], d->node,
				     (size_t)c->buffer_limit, c4a_up_ready, j);
		if (j->up == NULL) {
			free(j->job);
			agg_free(j->agg);
			goto fail;
		}
		st->njobs++;
		log_info("job %s: master %s", m[i].job, m[i].address);
	}
	if (c->c4p.address != NULL && c4a_c4p_start(st, &c->c4p) < 0)
		goto fail;
	if (daemon_tick_arm(st->tick, st->interval_ms,
			    st->interval_ms / CLOCK_TICK_AGENT_DIV, 1) < 0)
		goto fail;
	return 0;
fail:
	log_warnx("cannot set up the agent's state");
	c4a_stop(d);
	return -1;
}

/* ---- CCL sessions
 * ------------------------------------------------------------ */

/* A CCL client may only speak for a job that has a master here. */
static int
c4a_on_hello(struct srv_conn *c, const C4__Hello *h, struct msg_err *err,
	     void *arg)
{
	struct dmn *d = arg;
	struct c4a_state *st = d->state;
	struct c4a_job *j;

	if (h->role != C4__ROLE__ROLE_CCL_CLIENT)
		return 0;
	j = c4a_job_find(st, h->job_id);
	if (j == NULL) {
		st->clients_refused++;
		err->code = C4__ERROR_CODE__ERR_NOT_FOUND;
		snprintf(err->text, sizeof(err->text),
			 "no master is configured for job '%.64s' on this "
			 "agent",
			 h->job_id ? h->job_id : "");
		return -1;
	}
	j->clients++;
	st->clients++;
	srv_conn_set_data(c, j);
	return 0;
}

static void
c4a_on_close(struct srv_conn *c, void *arg)
{
	struct dmn *d = arg;
	struct c4a_state *st = d->state;
	struct c4a_job *j = srv_conn_get_data(c);

	if (j != NULL) {
		j->clients--;
		st->clients--;
	}
}

static int
c4a_answer_jobs(struct srv_conn *c, const C4__Envelope *env,
		struct c4a_state *st)
{
	C4__AdminReply r = C4__ADMIN_REPLY__INIT;
	C4__JobInfo *ji = calloc(st->njobs + 1, sizeof(*ji));
	C4__JobInfo **jp = calloc(st->njobs + 1, sizeof(*jp));
	int rc = -1;

	if (ji == NULL || jp == NULL)
		goto out;
	r.has_op = 1;
	r.op = C4__ADMIN_OP__ADMIN_JOBS;
	r.daemon = (char *)"c4a-agent";
	r.node_name = st->d->node;
	for (size_t i = 0; i < st->njobs; i++) {
		const struct c4a_job *j = &st->jobs[i];

		if (env->admin_request->job_id != NULL &&
		    strcmp(env->admin_request->job_id, j->job) != 0)
			continue;
		c4__job_info__init(&ji[r.n_jobs]);
		ji[r.n_jobs].job_id = j->job;
		ji[r.n_jobs].master = (char *)upstream_address(j->up);
		ji[r.n_jobs].has_connected = 1;
		ji[r.n_jobs].connected = upstream_is_ready(j->up);
		ji[r.n_jobs].has_ranks = 1;
		ji[r.n_jobs].ranks = agg_nranks(j->agg);
		ji[r.n_jobs].has_comms = 1;
		ji[r.n_jobs].comms = (uint32_t)agg_ncomms(j->agg);
		ji[r.n_jobs].has_last_interval = 1;
		ji[r.n_jobs].last_interval = st->interval_id;
		jp[r.n_jobs] = &ji[r.n_jobs];
		r.n_jobs++;
	}
	r.jobs = jp;
	rc = srv_send(c, C4__MSG_TYPE__MSG_ADMIN_REPLY, &r, env->seq);
out:
	free(ji);
	free(jp);
	return rc < 0 ? -1 : 0;
}

static int
c4a_on_message(struct srv_conn *c, const C4__Envelope *env, struct msg_err *err,
	       void *arg)
{
	struct dmn *d = arg;
	struct c4a_state *st = d->state;
	struct c4a_job *j = srv_conn_get_data(c);
	const char *claimed = NULL;
	uint8_t *f = NULL;
	size_t len;

	if (env->type == C4__MSG_TYPE__MSG_ADMIN_REQUEST &&
	    env->admin_request->op == C4__ADMIN_OP__ADMIN_JOBS)
		return c4a_answer_jobs(c, env, st);
	if (j == NULL)
		return -1; /* srv answers "not served" */
	if (env->type == C4__MSG_TYPE__MSG_COMM_REGISTER)
		claimed = env->comm_register->job_id;
	else if (env->type == C4__MSG_TYPE__MSG_TELEMETRY)
		claimed = env->telemetry->job_id;
	if (claimed != NULL && claimed[0] != '\0' &&
	    strcmp(claimed, j->job) != 0) {
		err->code = C4__ERROR_CODE__ERR_INVALID;
		snprintf(err->text, sizeof(err->text),
			 "%s for job '%.64s' on a session of job '%.64s'",
			 msg_type_name(env->type), claimed, j->job);
		return -1;
	}
	switch (env->type) {
	case C4__MSG_TYPE__MSG_COMM_REGISTER:
		if (agg_register(j->agg, env->comm_register, &f, &len) < 0) {
			err->code = C4__ERROR_CODE__ERR_LIMIT;
			snprintf(err->text, sizeof(err->text),
				 "communicator registration refused: limit "
				 "or memory");
			return -1;
		}
		if (f != NULL)
			upstream_send_now(j->up, f, len);
		free(f);
		return 0;
	case C4__MSG_TYPE__MSG_TELEMETRY:
		if (agg_add(j->agg, env->telemetry) < 0) {
			err->code = C4__ERROR_CODE__ERR_LIMIT;
			snprintf(err->text, sizeof(err->text),
				 "telemetry refused: more than %u records or "
				 "%u MiB in one interval",
				 AGG_RECORDS_MAX, AGG_BYTES_MAX >> 20);
			return -1;
		}
		return 0;
	default:
		return -1;
	}
}

/* Prometheus-style names; per-job counters carry a job label. */
static void
c4a_job_counter(C4__AdminReply *r, const char *name, const char *job,
		uint64_t v, const char *help, int gauge)
{
	char full[MSG_ID_MAX + 64];

	snprintf(full, sizeof(full), "%s{job=\"%s\"}", name, job);
	srv_reply_counter(r, full, v, help, gauge);
}

static void
c4a_on_status(struct srv *s, C4__AdminReply *r, void *arg)
{
	struct dmn *d = arg;
	struct c4a_state *st = d->state;
	struct agg_stats tot;

	(void)s;
	memset(&tot, 0, sizeof(tot));
	for (size_t i = 0; i < st->njobs; i++) {
		const struct agg_stats *a = agg_get_stats(st->jobs[i].agg);

		tot.batches += a->batches;
		tot.records += a->records;
		tot.registrations += a->registrations;
		tot.records_refused += a->records_refused;
		tot.client_dropped += a->client_dropped;
		tot.progress_filled += a->progress_filled;
	}
	srv_reply_counter(r, "clients_connected", st->clients,
			  "CCL client sessions open now", 1);
	srv_reply_counter(r, "clients_refused", st->clients_refused,
			  "CCL clients of a job without a master here", 0);
	srv_reply_counter(r, "batches_received", tot.batches,
			  "telemetry batches taken from CCL clients", 0);
	srv_reply_counter(r, "records_received", tot.records,
			  "summaries in those batches", 0);
	srv_reply_counter(r, "registrations_received", tot.registrations,
			  "communicator registrations from CCL clients", 0);
	srv_reply_counter(r, "records_refused", tot.records_refused,
			  "summaries above the per-interval limit", 0);
	srv_reply_counter(r, "client_dropped_records", tot.client_dropped,
			  "summaries CCL clients reported lost", 0);
	srv_reply_counter(r, "progress_filled", tot.progress_filled,
			  "progress entries sent for silent ranks", 0);
	srv_reply_counter(r, "intervals", st->interval_id,
			  "reporting intervals ended", 0);
	srv_reply_counter(r, "batches_sent", st->batches_sent,
			  "merged batches handed to the masters' sessions", 0);
	if (st->prober != NULL) {
		const struct prober_stats *ps = prober_get_stats(st->prober);

		srv_reply_counter(r, "c4p_connected",
				  upstream_is_ready(st->c4p),
				  "session to the c4p-master is up", 1);
		srv_reply_counter(r, "probe_tasks", ps->tasks,
				  "probe tasks received", 0);
		srv_reply_counter(r, "probe_tasks_refused", ps->tasks_refused,
				  "probe tasks refused (malformed, queue full)",
				  0);
		srv_reply_counter(r, "probe_tasks_done", ps->tasks_done,
				  "probe results sent", 0);
		srv_reply_counter(r, "probe_tasks_expired", ps->tasks_expired,
				  "probe tasks ended by their deadline", 0);
		srv_reply_counter(r, "probe_tasks_running", ps->active,
				  "probe tasks running now", 1);
		srv_reply_counter(r, "probe_tasks_queued", ps->queued,
				  "probe tasks waiting now", 1);
		srv_reply_counter(r, "probe_sent", ps->sent,
				  "probe packets sent", 0);
		srv_reply_counter(r, "probe_send_errors", ps->send_errors,
				  "probe packets the kernel refused", 0);
		srv_reply_counter(r, "probe_replies", ps->replies,
				  "ICMP answers matched to a probe", 0);
		srv_reply_counter(r, "probe_reached", ps->reached,
				  "answers from the destination", 0);
		srv_reply_counter(r, "probe_timeouts", ps->timeouts,
				  "probes never answered", 0);
		srv_reply_counter(r, "probe_stray", ps->stray,
				  "answers that matched no running probe", 0);
		srv_reply_counter(r, "probe_rehashed", ps->rehashed,
				  "probed ports answered from two paths", 0);
	}
	for (size_t i = 0; i < st->njobs; i++) {
		const struct upstream_stats *u =
			upstream_get_stats(st->jobs[i].up);
		const char *job = st->jobs[i].job;

		c4a_job_counter(r, "master_connected", job, u->connected,
				"session to the job's master is up", 1);
		c4a_job_counter(r, "master_reconnects", job, u->reconnects,
				"sessions opened after the first", 0);
		c4a_job_counter(r, "master_connect_failures", job,
				u->connect_failures,
				"attempts that got no session", 0);
		c4a_job_counter(r, "master_frames_forwarded", job,
				u->frames_forwarded,
				"batches written to the master", 0);
		c4a_job_counter(r, "master_frames_buffered", job,
				u->frames_buffered,
				"batches waiting for the master", 1);
		c4a_job_counter(r, "master_bytes_buffered", job,
				u->bytes_buffered,
				"bytes waiting for the master", 1);
		c4a_job_counter(r, "master_frames_dropped", job,
				u->frames_dropped,
				"batches dropped from a full buffer", 0);
		c4a_job_counter(r, "master_records_dropped", job,
				u->records_dropped,
				"summaries in the dropped batches", 0);
		c4a_job_counter(r, "master_errors", job, u->errors,
				"errors the master reported", 0);
		c4a_job_counter(r, "clients", job, st->jobs[i].clients,
				"CCL client sessions of the job", 1);
	}
}

/* The unix socket for CCL processes, beside the optional TCP listener. */
static int
c4a_listen(struct dmn *d, char *bound, size_t len)
{
	struct c4a_conf *c = d->conf;
	char addr[128];

	snprintf(addr, sizeof(addr), "unix:%s", c->socket.path);
	if (srv_listen(d->srv, addr, (unsigned)c->socket.mode, bound, len) < 0)
		return -1;
	/* CCL processes of other users reach the socket through its group. */
	if (c->socket.group != NULL) {
		struct group *g = getgrnam(c->socket.group);

		if (g == NULL ||
		    chown(c->socket.path, (uid_t)-1, g->gr_gid) < 0) {
			log_warn("socket %s: cannot give it to group %s",
				 c->socket.path, c->socket.group);
			return -1;
		}
	}
	return 0;
}

/* The masters, interval and buffer are set at start: say so if changed. */
static int
c4a_masters_differ(const struct c4a_conf *n, const struct c4a_conf *o)
{
	const struct agent_master_conf *a = n->masters.items,
				       *b = o->masters.items;

	if (n->masters.n != o->masters.n || n->interval != o->interval ||
	    n->buffer_limit != o->buffer_limit)
		return 1;
	for (size_t i = 0; i < n->masters.n; i++)
		if (strcmp(a[i].job, b[i].job) ||
		    strcmp(a[i].address, b[i].address) ||
		    strcmp(a[i].secret, b[i].secret))
			return 1;
	return 0;
}

/* The socket and node name are set at start; say so if a reload differs. */
static void
c4a_reload(struct dmn *d, const void *oldconf)
{
	const struct c4a_conf *n = d->conf, *o = oldconf;

	if (c4a_masters_differ(n, o) ||
	    (n->c4p.address == NULL) != (o->c4p.address == NULL) ||
	    (n->c4p.address && (strcmp(n->c4p.address, o->c4p.address) ||
				strcmp(n->c4p.secret, o->c4p.secret))) ||
	    n->c4p.probe_rate != o->c4p.probe_rate ||
	    (n->c4p.probe_netns == NULL) != (o->c4p.probe_netns == NULL) ||
	    (n->c4p.probe_netns &&
	     strcmp(n->c4p.probe_netns, o->c4p.probe_netns)))
		log_warnx("reload: masters, c4p, interval and buffer_limit "
			  "changes take a restart");

	if (strcmp(n->socket.path, o->socket.path) != 0 ||
	    n->socket.mode != o->socket.mode ||
	    (n->socket.group == NULL) != (o->socket.group == NULL) ||
	    (n->socket.group && strcmp(n->socket.group, o->socket.group)) ||
	    (n->node_name == NULL) != (o->node_name == NULL) ||
	    (n->node_name && strcmp(n->node_name, o->node_name)))
		log_warnx("reload: socket and node_name changes take a "
			  "restart");
}

int
main(int argc, char **argv)
{
	static const struct daemon_spec spec = {
		.name = "c4a-agent",
		.default_config = C4_SYSCONFDIR "/c4a-agent.yaml",
		.schema = &c4a_schema,
		.off_server = offsetof(struct c4a_conf, server),
		.off_creds = offsetof(struct c4a_conf, credentials),
		.off_log = offsetof(struct c4a_conf, log),
		.role = C4__ROLE__ROLE_AGENT,
		.listen = c4a_listen,
		.node_of = c4a_node_of,
		.reload = c4a_reload,
		.start = c4a_start,
		.stop = c4a_stop,
		.ops =
			{
				.on_hello = c4a_on_hello,
				.on_message = c4a_on_message,
				.on_close = c4a_on_close,
				.on_status = c4a_on_status,
			},
	};

	return daemon_main(argc, argv, &spec);
}
