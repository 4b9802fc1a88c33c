/*
 * msg.c - envelope construction, framing and validation of every message.
 */
#include "msg.h"
#include "sketch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define R(x)	 MSG_ROLE_BIT(C4__ROLE__ROLE_##x)
#define ANY	 (R(AGENT) | R(CCL_CLIENT) | R(CTL) | R(MASTER))
#define SERVER	 (R(MASTER) | R(AGENT))
#define REPORTER (R(AGENT) | R(CCL_CLIENT))

/* Limits on an event's lists (the engine sends far fewer). */
#define MSG_EVENT_SUSPECTS_MAX 64u  /* suspects of one event */
#define MSG_EVIDENCE_GPUS_MAX  256u /* member GPUs of its evidence */

typedef int (*msg_check_fn)(const void *body, struct msg_err *err);

struct msg_type_info {
	C4__MsgType type;
	const char *name;
	unsigned senders; /* roles allowed to send it */
	msg_check_fn check;
};

/*
 * Types only the serving side of a session sends (an agent serves its CCL
 * clients, so "agent" alone cannot tell the direction).
 */
static const C4__MsgType msg_server_types[] = {
	C4__MSG_TYPE__MSG_HELLO_REPLY,	 C4__MSG_TYPE__MSG_EVENT,
	C4__MSG_TYPE__MSG_PATH_REPLY,	 C4__MSG_TYPE__MSG_PATH_REPLY_BATCH,
	C4__MSG_TYPE__MSG_PATH_REASSIGN, C4__MSG_TYPE__MSG_PROBE_TASK,
	C4__MSG_TYPE__MSG_LINK_STATE,	 C4__MSG_TYPE__MSG_ADMIN_REPLY,
};

static int __attribute__((format(printf, 3, 4)))
msg_fail(struct msg_err *err, C4__ErrorCode code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return -1;
}

/* A string field: NULL (absent) is fine unless required. */
static int
msg_str(const char *s, size_t max, int required, const char *what,
	struct msg_err *err)
{
	if (s == NULL || s[0] == '\0') {
		if (required)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"%s is required", what);
		return 0;
	}
	if (strnlen(s, max + 1) > max)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"%s longer than %zu bytes", what, max);
	return 0;
}

static int
msg_sketch(const C4__DurationStats *d, const char *what, struct msg_err *err)
{
	if (d == NULL)
		return 0;
	if (d->has_min_ns && d->has_max_ns && d->min_ns > d->max_ns)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"%s: min above max", what);
	if (d->sketch != NULL) {
		const C4__QuantileSketch *s = d->sketch;
		int32_t imax;

		if (s->n_index != s->n_count)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"%s: sketch has %zu indexes but %zu "
					"counts",
					what, s->n_index, s->n_count);
		if (s->n_index > MSG_SKETCH_MAX)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"%s: sketch above %u buckets", what,
					MSG_SKETCH_MAX);
		if (s->relative_accuracy_ppm == 0 ||
		    s->relative_accuracy_ppm >= 1000000)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"%s: sketch accuracy must be 1..999999 "
					"ppm",
					what);
		imax = sketch_index_max(s->relative_accuracy_ppm);
		for (size_t i = 0; i < s->n_index; i++)
			if (s->index[i] < 0 || s->index[i] > imax)
				return msg_fail(err,
						C4__ERROR_CODE__ERR_INVALID,
						"%s: sketch bucket index %d "
						"out of range",
						what, (int)s->index[i]);
	}
	return 0;
}

static int
msg_check_hello(const void *body, struct msg_err *err)
{
	const C4__Hello *m = body;

	if (!m->has_role || m->role == C4__ROLE__ROLE_UNSPECIFIED ||
	    m->role > C4__ROLE__ROLE_MASTER)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"hello: role missing or unknown");
	if (m->has_min_version && m->has_max_version &&
	    m->min_version > m->max_version)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"hello: min_version above max_version");
	if (m->has_credential && m->credential.len > MSG_CREDENTIAL_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"hello: credential longer than %u bytes",
				MSG_CREDENTIAL_MAX);
	if (m->n_capabilities > MSG_CAPS_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"hello: more than %u capabilities",
				MSG_CAPS_MAX);
	for (size_t i = 0; i < m->n_capabilities; i++)
		if (msg_str(m->capabilities[i], MSG_ID_MAX, 1,
			    "hello.capabilities", err) < 0)
			return -1;
	if (msg_str(m->software_version, MSG_ID_MAX, 0,
		    "hello.software_version", err) < 0 ||
	    msg_str(m->job_id, MSG_ID_MAX, 0, "hello.job_id", err) < 0 ||
	    msg_str(m->node_name, MSG_ID_MAX, 0, "hello.node_name", err) < 0)
		return -1;
	/* Reporters belong to a job; masters route them by it. */
	if ((m->role == C4__ROLE__ROLE_CCL_CLIENT) &&
	    (m->job_id == NULL || m->job_id[0] == '\0'))
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"hello: a CCL client must name its job");
	return 0;
}

static int
msg_check_hello_reply(const void *body, struct msg_err *err)
{
	const C4__HelloReply *m = body;

	if (msg_str(m->daemon, MSG_ID_MAX, 0, "hello_reply.daemon", err) < 0 ||
	    msg_str(m->job_id, MSG_ID_MAX, 0, "hello_reply.job_id", err) < 0 ||
	    msg_str(m->software_version, MSG_ID_MAX, 0,
		    "hello_reply.software_version", err) < 0)
		return -1;
	return 0;
}

static int
msg_check_error(const void *body, struct msg_err *err)
{
	const C4__Error *m = body;

	return msg_str(m->text, MSG_TEXT_MAX, 0, "error.text", err);
}

static int
msg_check_goodbye(const void *body, struct msg_err *err)
{
	const C4__Goodbye *m = body;

	return msg_str(m->reason, MSG_TEXT_MAX, 0, "goodbye.reason", err);
}

static int
msg_check_none(const void *body, struct msg_err *err)
{
	(void)body;
	(void)err;
	return 0;
}

static int
msg_check_comm_register(const void *body, struct msg_err *err)
{
	const C4__CommRegister *m = body;

	if (!m->has_comm_hash)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"comm_register: comm_hash is required");
	if (!m->has_nranks || m->nranks == 0 || m->nranks > MSG_RANKS_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"comm_register: nranks must be 1..%u",
				MSG_RANKS_MAX);
	if (m->n_ranks > m->nranks)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"comm_register: %zu rank entries for %u ranks",
				m->n_ranks, m->nranks);
	if (msg_str(m->job_id, MSG_ID_MAX, 0, "comm_register.job_id", err) <
		    0 ||
	    msg_str(m->name, MSG_ID_MAX, 0, "comm_register.name", err) < 0)
		return -1;
	for (size_t i = 0; i < m->n_ranks; i++) {
		const C4__RankInfo *r = m->ranks[i];

		if (!r->has_rank || r->rank >= m->nranks)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"comm_register: rank entry %zu: rank "
					"missing or not below nranks %u",
					i, m->nranks);
		if (msg_str(r->host, MSG_ID_MAX, 1, "rank.host", err) < 0 ||
		    msg_str(r->nic, MSG_ID_MAX, 0, "rank.nic", err) < 0 ||
		    msg_str(r->gpu_uuid, MSG_ID_MAX, 0, "rank.gpu_uuid", err) <
			    0 ||
		    msg_str(r->nic_ip, MSG_ID_MAX, 0, "rank.nic_ip", err) < 0)
			return -1;
	}
	return 0;
}

static int
msg_check_telemetry(const void *body, struct msg_err *err)
{
	const C4__TelemetryBatch *m = body;

	if (!m->has_interval_id)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"telemetry: interval_id is required");
	if (msg_str(m->job_id, MSG_ID_MAX, 0, "telemetry.job_id", err) < 0 ||
	    msg_str(m->host, MSG_ID_MAX, 0, "telemetry.host", err) < 0)
		return -1;
	for (size_t i = 0; i < m->n_colls; i++) {
		const C4__RankCollSummary *c = m->colls[i];

		if (!c->has_comm_hash || !c->has_rank)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"telemetry: coll summary %zu lacks "
					"comm_hash or rank",
					i);
		for (size_t j = 0; j < c->n_ops; j++)
			if (msg_sketch(c->ops[j]->kernel_time, "kernel_time",
				       err) < 0 ||
			    msg_sketch(c->ops[j]->gap_time, "gap_time", err) <
				    0 ||
			    msg_sketch(c->ops[j]->enqueue_time, "enqueue_time",
				       err) < 0)
				return -1;
	}
	for (size_t i = 0; i < m->n_conns; i++) {
		const C4__ConnSummary *c = m->conns[i];

		if (!c->has_comm_hash || !c->has_src_rank || !c->has_dst_rank)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"telemetry: conn summary %zu lacks "
					"comm_hash, src_rank or dst_rank",
					i);
		if (msg_sketch(c->transfer_time, "transfer_time", err) < 0)
			return -1;
	}
	for (size_t i = 0; i < m->n_waits; i++) {
		const C4__WaitSummary *w = m->waits[i];

		if (!w->has_comm_hash || !w->has_rank)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"telemetry: wait summary %zu lacks "
					"comm_hash or rank",
					i);
		if (msg_sketch(w->recv_wait, "recv_wait", err) < 0 ||
		    msg_sketch(w->send_peer_wait, "send_peer_wait", err) < 0 ||
		    msg_sketch(w->send_gpu_wait, "send_gpu_wait", err) < 0 ||
		    msg_sketch(w->recv_gpu_wait, "recv_gpu_wait", err) < 0)
			return -1;
	}
	for (size_t i = 0; i < m->n_progress; i++) {
		const C4__Progress *p = m->progress[i];

		if (!p->has_comm_hash || !p->has_rank)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"telemetry: progress %zu lacks "
					"comm_hash or rank",
					i);
	}
	return 0;
}

/* An enum field: absent is fine; present, it is one of 0..max. */
static int
msg_enum(int has, int v, int max, const char *what, struct msg_err *err)
{
	if (has && (v < 0 || v > max))
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"%s %d is not one of 0..%d", what, v, max);
	return 0;
}

static int
msg_check_suspect(const C4__Suspect *s, size_t i, struct msg_err *err)
{
	char what[64];

	snprintf(what, sizeof(what), "event.suspects[%zu]", i);
	if (msg_enum(s->has_role, s->role, C4__SUSPECT_ROLE__SUSPECT_HOST,
		     "suspect role", err) < 0 ||
	    msg_enum(s->has_transport, s->transport,
		     C4__TRANSPORT_CLASS__TRANSPORT_NET, "suspect transport",
		     err) < 0 ||
	    msg_str(s->host, MSG_ID_MAX, 0, what, err) < 0 ||
	    msg_str(s->nic, MSG_ID_MAX, 0, what, err) < 0 ||
	    msg_str(s->peer_host, MSG_ID_MAX, 0, what, err) < 0 ||
	    msg_str(s->peer_nic, MSG_ID_MAX, 0, what, err) < 0)
		return -1;
	return 0;
}

static int
msg_check_evidence(const C4__Evidence *e, struct msg_err *err)
{
	if (e == NULL)
		return 0;
	if (msg_enum(e->has_basis, e->basis,
		     C4__EVIDENCE_BASIS__BASIS_HEARTBEAT, "evidence basis",
		     err) < 0)
		return -1;
	if (e->n_member_gpus > MSG_EVIDENCE_GPUS_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"event.evidence: %zu member GPUs, at most %u",
				e->n_member_gpus, MSG_EVIDENCE_GPUS_MAX);
	if (e->has_hot_intervals && e->has_window && e->window > 0 &&
	    e->hot_intervals > e->window)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"event.evidence: %u hot intervals in a window "
				"of %u",
				e->hot_intervals, e->window);
	return 0;
}

static int
msg_check_event(const void *body, struct msg_err *err)
{
	const C4__Event *m = body;

	if (msg_str(m->id, MSG_ID_MAX, 1, "event.id", err) < 0 ||
	    msg_str(m->job_id, MSG_ID_MAX, 0, "event.job_id", err) < 0 ||
	    msg_str(m->summary, MSG_TEXT_MAX, 0, "event.summary", err) < 0 ||
	    msg_str(m->action, MSG_TEXT_MAX, 0, "event.action", err) < 0 ||
	    msg_str(m->target, MSG_TEXT_MAX, 0, "event.target", err) < 0)
		return -1;
	if (!m->has_kind || m->kind == C4__EVENT_KIND__EVENT_UNSPECIFIED)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"event: kind is required");
	if (msg_enum(1, m->kind, C4__EVENT_KIND__EVENT_JOB_STALL, "event kind",
		     err) < 0 ||
	    msg_enum(m->has_state, m->state, C4__EVENT_STATE__EVENT_RESOLVED,
		     "event state", err) < 0 ||
	    msg_enum(m->has_domain, m->domain, C4__EVENT_DOMAIN__DOMAIN_JOB,
		     "event domain", err) < 0 ||
	    msg_enum(m->has_action_type, m->action_type,
		     C4__ACTION__ACTION_CHECK_JOB, "event action_type",
		     err) < 0 ||
	    msg_check_evidence(m->evidence, err) < 0)
		return -1;
	if (m->n_suspects > MSG_EVENT_SUSPECTS_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"event: %zu suspects, at most %u",
				m->n_suspects, MSG_EVENT_SUSPECTS_MAX);
	for (size_t i = 0; i < m->n_suspects; i++)
		if (msg_check_suspect(m->suspects[i], i, err) < 0)
			return -1;
	return 0;
}

static int
msg_check_path_request1(const C4__PathRequest *m, struct msg_err *err)
{
	if (msg_str(m->job_id, MSG_ID_MAX, 1, "path_request.job_id", err) < 0 ||
	    msg_str(m->request_id, MSG_ID_MAX, 1, "path_request.request_id",
		    err) < 0 ||
	    msg_str(m->src_nic, MSG_ID_MAX, 1, "path_request.src_nic", err) <
		    0 ||
	    msg_str(m->dst_nic, MSG_ID_MAX, 1, "path_request.dst_nic", err) <
		    0 ||
	    msg_str(m->src_ip, MSG_ID_MAX, 0, "path_request.src_ip", err) < 0 ||
	    msg_str(m->dst_ip, MSG_ID_MAX, 0, "path_request.dst_ip", err) < 0)
		return -1;
	if (!m->has_qp_count || m->qp_count == 0 ||
	    m->qp_count > MSG_QP_COUNT_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"path_request: qp_count must be 1..%u",
				MSG_QP_COUNT_MAX);
	if (m->has_demand && !(m->demand > 0 && m->demand <= 1e6))
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"path_request: demand must be in (0, 1e6]");
	return 0;
}

static int
msg_check_path_request(const void *body, struct msg_err *err)
{
	return msg_check_path_request1(body, err);
}

static int
msg_check_path_request_batch(const void *body, struct msg_err *err)
{
	const C4__PathRequestBatch *m = body;

	if (m->n_requests == 0 || m->n_requests > MSG_BATCH_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"path_request_batch: 1..%u requests",
				MSG_BATCH_MAX);
	for (size_t i = 0; i < m->n_requests; i++)
		if (msg_check_path_request1(m->requests[i], err) < 0)
			return -1;
	return 0;
}

static int
msg_check_path_release(const void *body, struct msg_err *err)
{
	const C4__PathRelease *m = body;

	if (msg_str(m->job_id, MSG_ID_MAX, 1, "path_release.job_id", err) < 0 ||
	    msg_str(m->request_id, MSG_ID_MAX, !m->all_of_job,
		    "path_release.request_id", err) < 0)
		return -1;
	if (m->all_of_job && m->request_id != NULL && m->request_id[0] != '\0')
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"path_release: request_id must be empty with "
				"all_of_job");
	return 0;
}

static int
msg_check_qp_load(const void *body, struct msg_err *err)
{
	const C4__QpLoadUpdate *m = body;

	if (msg_str(m->job_id, MSG_ID_MAX, 1, "qp_load.job_id", err) < 0 ||
	    msg_str(m->host, MSG_ID_MAX, 0, "qp_load.host", err) < 0)
		return -1;
	for (size_t i = 0; i < m->n_qps; i++) {
		const C4__QpLoad *q = m->qps[i];

		if (msg_str(q->request_id, MSG_ID_MAX, 1, "qp_load.request_id",
			    err) < 0 ||
		    msg_sketch(q->completion_time, "completion_time", err) < 0)
			return -1;
		if (!q->has_udp_sport || q->udp_sport == 0 ||
		    q->udp_sport > 65535)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"qp_load: entry %zu: bad udp_sport", i);
	}
	return 0;
}

static int
msg_check_assignments(C4__PathAssignment *const *v, size_t n, const char *what,
		      struct msg_err *err)
{
	if (n > MSG_QP_COUNT_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"%s: more than %u paths", what,
				MSG_QP_COUNT_MAX);
	for (size_t i = 0; i < n; i++) {
		if (!v[i]->has_udp_sport || v[i]->udp_sport == 0 ||
		    v[i]->udp_sport > 65535)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"%s: path %zu: bad udp_sport", what, i);
		if (msg_str(v[i]->src_leaf, MSG_ID_MAX, 0, "path.src_leaf",
			    err) < 0 ||
		    msg_str(v[i]->spine, MSG_ID_MAX, 0, "path.spine", err) <
			    0 ||
		    msg_str(v[i]->dst_leaf, MSG_ID_MAX, 0, "path.dst_leaf",
			    err) < 0)
			return -1;
	}
	return 0;
}

static int
msg_check_path_reply1(const C4__PathReply *m, struct msg_err *err)
{
	if (msg_str(m->request_id, MSG_ID_MAX, 0, "path_reply.request_id",
		    err) < 0 ||
	    msg_str(m->error_text, MSG_TEXT_MAX, 0, "path_reply.error_text",
		    err) < 0)
		return -1;
	return msg_check_assignments(m->paths, m->n_paths, "path_reply", err);
}

static int
msg_check_path_reply(const void *body, struct msg_err *err)
{
	return msg_check_path_reply1(body, err);
}

static int
msg_check_path_reply_batch(const void *body, struct msg_err *err)
{
	const C4__PathReplyBatch *m = body;

	if (m->n_replies > MSG_BATCH_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"path_reply_batch: more than %u replies",
				MSG_BATCH_MAX);
	for (size_t i = 0; i < m->n_replies; i++)
		if (msg_check_path_reply1(m->replies[i], err) < 0)
			return -1;
	return 0;
}

static int
msg_check_path_reassign(const void *body, struct msg_err *err)
{
	const C4__PathReassign *m = body;

	if (msg_str(m->job_id, MSG_ID_MAX, 1, "path_reassign.job_id", err) <
		    0 ||
	    msg_str(m->request_id, MSG_ID_MAX, 1, "path_reassign.request_id",
		    err) < 0 ||
	    msg_str(m->reason, MSG_TEXT_MAX, 0, "path_reassign.reason", err) <
		    0)
		return -1;
	return msg_check_assignments(m->paths, m->n_paths, "path_reassign",
				     err);
}

static int
msg_check_probe_task(const void *body, struct msg_err *err)
{
	const C4__ProbeTask *m = body;

	if (msg_str(m->src_ip, MSG_ID_MAX, 1, "probe_task.src_ip", err) < 0 ||
	    msg_str(m->dst_ip, MSG_ID_MAX, 1, "probe_task.dst_ip", err) < 0 ||
	    msg_str(m->src_dev, MSG_IFNAME_MAX, 0, "probe_task.src_dev", err) <
		    0)
		return -1;
	if (m->n_sports == 0 || m->n_sports > MSG_PROBE_PORTS_MAX)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"probe_task: 1..%u source ports",
				MSG_PROBE_PORTS_MAX);
	for (size_t i = 0; i < m->n_sports; i++)
		if (m->sports[i] == 0 || m->sports[i] > 65535)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"probe_task: source port %u invalid",
					m->sports[i]);
	if (m->has_max_ttl && (m->max_ttl == 0 || m->max_ttl > MSG_TTL_MAX))
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"probe_task: max_ttl must be 1..%u",
				MSG_TTL_MAX);
	return 0;
}

static int
msg_check_probe_result(const void *body, struct msg_err *err)
{
	const C4__ProbeResult *m = body;

	if (!m->has_task_id)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"probe_result: task_id is required");
	if (msg_str(m->src_ip, MSG_ID_MAX, 0, "probe_result.src_ip", err) < 0 ||
	    msg_str(m->dst_ip, MSG_ID_MAX, 0, "probe_result.dst_ip", err) < 0)
		return -1;
	for (size_t i = 0; i < m->n_paths; i++) {
		const C4__ProbePath *p = m->paths[i];

		if (!p->has_sport || p->sport == 0 || p->sport > 65535)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"probe_result: path %zu: bad sport", i);
		if (p->n_hops > MSG_TTL_MAX)
			return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
					"probe_result: more than %u hops",
					MSG_TTL_MAX);
	}
	return 0;
}

static int
msg_check_link_state(const void *body, struct msg_err *err)
{
	const C4__LinkState *m = body;

	if (msg_str(m->link_id, MSG_ID_MAX, 1, "link_state.link_id", err) < 0 ||
	    msg_str(m->reason, MSG_TEXT_MAX, 0, "link_state.reason", err) < 0 ||
	    msg_str(m->a, MSG_ID_MAX, 0, "link_state.a", err) < 0 ||
	    msg_str(m->b, MSG_ID_MAX, 0, "link_state.b", err) < 0)
		return -1;
	return 0;
}

static int
msg_check_admin_request(const void *body, struct msg_err *err)
{
	const C4__AdminRequest *m = body;

	if (!m->has_op || m->op == C4__ADMIN_OP__ADMIN_UNSPECIFIED)
		return msg_fail(err, C4__ERROR_CODE__ERR_INVALID,
				"admin_request: op is required");
	if (msg_str(m->job_id, MSG_ID_MAX, 0, "admin_request.job_id", err) <
		    0 ||
	    msg_str(m->link_id, MSG_ID_MAX, 0, "admin_request.link_id", err) <
		    0 ||
	    msg_str(m->src, MSG_ID_MAX, 0, "admin_request.src", err) < 0 ||
	    msg_str(m->dst, MSG_ID_MAX, 0, "admin_request.dst", err) < 0)
		return -1;
	return 0;
}

static const struct msg_type_info msg_types[] = {
	{C4__MSG_TYPE__MSG_HELLO, "hello", R(AGENT) | R(CCL_CLIENT) | R(CTL),
	 msg_check_hello},
	{C4__MSG_TYPE__MSG_HELLO_REPLY, "hello_reply", SERVER,
	 msg_check_hello_reply},
	{C4__MSG_TYPE__MSG_HEARTBEAT, "heartbeat", ANY, msg_check_none},
	{C4__MSG_TYPE__MSG_ERROR, "error", ANY, msg_check_error},
	{C4__MSG_TYPE__MSG_GOODBYE, "goodbye", ANY, msg_check_goodbye},
	{C4__MSG_TYPE__MSG_COMM_REGISTER, "comm_register", REPORTER,
	 msg_check_comm_register},
	{C4__MSG_TYPE__MSG_TELEMETRY, "telemetry", REPORTER,
	 msg_check_telemetry},
	{C4__MSG_TYPE__MSG_EVENT, "event", R(MASTER), msg_check_event},
	{C4__MSG_TYPE__MSG_PATH_REQUEST, "path_request", REPORTER,
	 msg_check_path_request},
	{C4__MSG_TYPE__MSG_PATH_REQUEST_BATCH, "path_request_batch", REPORTER,
	 msg_check_path_request_batch},
	{C4__MSG_TYPE__MSG_PATH_REPLY, "path_reply", SERVER,
	 msg_check_path_reply},
	{C4__MSG_TYPE__MSG_PATH_REPLY_BATCH, "path_reply_batch", SERVER,
	 msg_check_path_reply_batch},
	{C4__MSG_TYPE__MSG_PATH_RELEASE, "path_release", REPORTER,
	 msg_check_path_release},
	{C4__MSG_TYPE__MSG_PATH_REASSIGN, "path_reassign", SERVER,
	 msg_check_path_reassign},
	{C4__MSG_TYPE__MSG_QP_LOAD, "qp_load", REPORTER, msg_check_qp_load},
	{C4__MSG_TYPE__MSG_PROBE_TASK, "probe_task", R(MASTER),
	 msg_check_probe_task},
	{C4__MSG_TYPE__MSG_PROBE_RESULT, "probe_result", R(AGENT),
	 msg_check_probe_result},
	{C4__MSG_TYPE__MSG_LINK_STATE, "link_state", R(MASTER),
	 msg_check_link_state},
	{C4__MSG_TYPE__MSG_ADMIN_REQUEST, "admin_request", R(CTL),
	 msg_check_admin_request},
	{C4__MSG_TYPE__MSG_ADMIN_REPLY, "admin_reply", SERVER, msg_check_none},
};

static const struct msg_type_info *
msg_type_lookup(C4__MsgType type)
{
	for (size_t i = 0; i < sizeof(msg_types) / sizeof(msg_types[0]); i++)
		if (msg_types[i].type == type)
			return &msg_types[i];
	return NULL;
}

const char *
msg_type_name(C4__MsgType type)
{
	const struct msg_type_info *ti = msg_type_lookup(type);

	return ti ? ti->name : "unknown";
}

static const char *const msg_role_names[] = {"unspecified", "agent",
					     "ccl-client", "ctl", "master"};

const char *
msg_role_name(C4__Role role)
{
	if ((unsigned)role >=
	    sizeof(msg_role_names) / sizeof(msg_role_names[0]))
		return "unknown";
	return msg_role_names[role];
}

int
msg_role_parse(const char *name, C4__Role *out)
{
	for (unsigned i = 1;
	     i < sizeof(msg_role_names) / sizeof(msg_role_names[0]); i++) {
		if (strcmp(name, msg_role_names[i]) == 0) {
			*out = (C4__Role)i;
			return 0;
		}
	}
	return -1;
}

int
msg_from_server_only(C4__MsgType type)
{
	for (size_t i = 0;
	     i < sizeof(msg_server_types) / sizeof(msg_server_types[0]); i++)
		if (msg_server_types[i] == type)
			return 1;
	return 0;
}

int
msg_role_may_send(C4__Role role, C4__MsgType type)
{
	const struct msg_type_info *ti = msg_type_lookup(type);

	if (ti == NULL || (unsigned)role > 31)
		return 0;
	return (ti->senders & MSG_ROLE_BIT(role)) != 0;
}

/* The body member's descriptor: its field number equals the type. */
static const ProtobufCFieldDescriptor *
msg_body_field(C4__MsgType type)
{
	return protobuf_c_message_descriptor_get_field(
		&c4__envelope__descriptor, (unsigned)type);
}

void
msg_init(C4__Envelope *env, C4__MsgType type, void *body)
{
	const ProtobufCFieldDescriptor *fd = msg_body_field(type);

	c4__envelope__init(env);
	env->has_version = 1;
	env->version = C4_PROTO_VERSION;
	env->has_type = 1;
	env->type = type;
	if (fd != NULL && fd->quantifier_offset != 0) {
		env->body_case = (C4__Envelope__BodyCase)type;
		memcpy((char *)env + fd->offset, &body, sizeof(body));
	}
}

void *
msg_body(const C4__Envelope *env)
{
	const ProtobufCFieldDescriptor *fd;
	void *body;

	if (env->body_case == C4__ENVELOPE__BODY__NOT_SET)
		return NULL;
	fd = msg_body_field((C4__MsgType)env->body_case);
	if (fd == NULL)
		return NULL;
	memcpy(&body, (const char *)env + fd->offset, sizeof(body));
	return body;
}

void
msg_init_seq(C4__Envelope *env, C4__MsgType type, void *body, uint64_t seq)
{
	msg_init(env, type, body);
	env->has_seq = 1;
	env->seq = seq;
}

size_t
msg_frame_size(const C4__Envelope *env)
{
	return FRAME_HDR_LEN + c4__envelope__get_packed_size(env);
}

size_t
msg_pack_frame(const C4__Envelope *env, uint8_t *out)
{
	size_t n = c4__envelope__pack(env, out + FRAME_HDR_LEN);

	frame_put_header(out, (uint32_t)n);
	return FRAME_HDR_LEN + n;
}

uint8_t *
msg_frame_new(const C4__Envelope *env, size_t *len)
{
	uint8_t *buf;

	*len = msg_frame_size(env);
	buf = malloc(*len);
	if (buf != NULL)
		msg_pack_frame(env, buf);
	return buf;
}

void *
msg_copy(const void *msg)
{
	const ProtobufCMessage *m = msg;
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);
	void *r;

	if (buf == NULL)
		return NULL;
	protobuf_c_message_pack(m, buf);
	r = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
	free(buf);
	return r;
}

C4__Envelope *
msg_unpack(const uint8_t *body, size_t len, struct msg_err *err)
{
	return msg_unpack_alloc(body, len, err, NULL);
}

C4__Envelope *
msg_unpack_alloc(const uint8_t *body, size_t len, struct msg_err *err,
		 ProtobufCAllocator *alloc)
{
	const struct msg_type_info *ti;
	C4__Envelope *env;

	env = c4__envelope__unpack(alloc, len, body);
	if (env == NULL) {
		msg_fail(err, C4__ERROR_CODE__ERR_MALFORMED,
			 "frame of %zu bytes is not a valid envelope", len);
		return NULL;
	}
	if (!env->has_version || env->version != C4_PROTO_VERSION) {
		msg_fail(err, C4__ERROR_CODE__ERR_BAD_VERSION,
			 "protocol version %u not supported (this side speaks "
			 "%u)",
			 env->has_version ? env->version : 0, C4_PROTO_VERSION);
		goto fail;
	}
	ti = env->has_type ? msg_type_lookup(env->type) : NULL;
	if (ti == NULL) {
		msg_fail(err, C4__ERROR_CODE__ERR_MALFORMED,
			 "message type %d unknown",
			 env->has_type ? (int)env->type : -1);
		goto fail;
	}
	if ((int)env->body_case != (int)env->type || msg_body(env) == NULL) {
		msg_fail(err, C4__ERROR_CODE__ERR_MALFORMED,
			 "type %s does not match the body carried", ti->name);
		goto fail;
	}
	if (ti->check(msg_body(env), err) < 0)
		goto fail;
	return env;
fail:
	c4__envelope__free_unpacked(env, alloc);
	return NULL;
}

void
msg_free(C4__Envelope *env)
{
	if (env != NULL)
		c4__envelope__free_unpacked(env, NULL);
}
