/*
 * api.c - what agents and CCL clients ask the c4p-master: ports for QPs
 * (PathRequest, PathRequestBatch), releases (PathRelease), QP load reports
 * (QpLoadUpdate) and probe results (ProbeResult); the sessions they come
 * on; and the lapse of leases.
 *
 * Every answer that depends on a change of state waits (reply.c) until
 * the store has committed that change; answers that change nothing are
 * sent at once unless answers are already waiting, in which case they
 * queue behind them so that each session sees its answers in order.
 *
 * Jobs: a session whose hello named a job may only ask, renew and release
 * for that job.  An agent session without a job relays for the jobs of its
 * node, limited to the jobs its credential names (api_job_allowed).
 */
#define LOG_SUBSYS "c4p-api"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "auth.h"
#include "hold.h"
#include "jobs.h"
#include "link.h"
#include "metrics.h"
#include "nic.h"
#include "probes.h"
#include "store.h"
#include "log.h"
#include "path.h"

/* Most QPs one message may ask for (the sum over a batch). */
#define API_MSG_QPS_MAX ALLOC_MAX_BATCH

static uint64_t
api_now_s(void)
{
	return (uint64_t)time(NULL);
}

/* ---- sessions
 * ----------------------------------------------------------------- */

int
api_on_hello(struct srv_conn *c, const C4__Hello *h, struct msg_err *err,
	     void *arg)
{
	struct dmn *d = arg;
	struct c4p *p = d->state;
	struct c4p_sess *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		err->code = C4__ERROR_CODE__ERR_INTERNAL;
		snprintf(err->text, sizeof(err->text), "out of memory");
		return -1;
	}
	s->conn = c;
	s->host = TOPO_NONE;
	srv_conn_set_data(c, s);
	/* An agent named after a host of the topology probes from it. */
	if (p != NULL && h->has_role && h->role == C4__ROLE__ROLE_AGENT)
		probes_agent(p->probes, s, h->node_name);
	return 0;
}

void
api_on_close(struct srv_conn *c, void *arg)
{
	struct dmn *d = arg;
	struct c4p *p = d->state;
	struct c4p_sess *s = srv_conn_get_data(c);

	if (s == NULL)
		return;
	srv_conn_set_data(c, NULL);
	/* Their holders learn of later moves on their next request. */
	if (p != NULL && s->requests > 0)
		hold_drop_sess(p->holders, s);
	if (p != NULL)
		probes_agent_gone(p->probes, s);
	s->conn = NULL;
	if (s->pending == 0)
		free(s);
}

/* ---- helpers
 * ------------------------------------------------------------------ */

/*
 * May the session of from act for job?  0, or -1 with err (ERR_AUTH).
 * A session whose hello named a job acts for that job only.  An agent
 * session without a job relays for the ranks of its node, and only for
 * the jobs its credential names: a credential with jobs ["*"] (or no
 * jobs list) is an explicit relay for every job; any other credential
 * reaches no job beyond its list, so one agent token can neither read nor
 * release the allocations of another job.
 */
static int
api_job_allowed(struct c4p *p, const struct api_from *from, const char *job,
		const char *what, struct msg_err *err)
{
	const char *own = from->job;
	const struct auth_credential *cred = NULL;

	if (own != NULL && strcmp(own, job) == 0)
		return 0;
	if (own == NULL && from->role == C4__ROLE__ROLE_AGENT &&
	    from->sess->conn != NULL) {
		cred = auth_find(&p->conf->credentials,
				 srv_conn_cred(from->sess->conn));
		if (cred != NULL &&
		    auth_allows(cred, C4__ROLE__ROLE_AGENT, job))
			return 0;
	}
	err->code = C4__ERROR_CODE__ERR_AUTH;
	snprintf(err->text, sizeof(err->text),
		 "%s for job '%s' refused: this session belongs to %s%s%s%s",
		 what, job, own ? "job '" : "no job", own ? own : "",
		 own ? "'" : "",
		 cred != NULL || own == NULL ? " and its credential does not "
					       "name the job"
					     : "");
	return -1;
}

static int
api_key(char *key, uint64_t job, const char *req_id, char *err, size_t len)
{
	int n = snprintf(key, C4P_KEY_MAX, "%llu/%s", (unsigned long long)job,
			 req_id);

	if (n < 0 || n >= C4P_KEY_MAX) {
		snprintf(err, len,
			 "request_id '%.40s...' is too long (at most "
			 "%d bytes with the job number)",
			 req_id, C4P_KEY_MAX - 1);
		return -1;
	}
	return 0;
}

/* ---- path requests
 * ------------------------------------------------------------ */

/* Resolves one request into QPs; 0 or -1 with err. */
static int
api_resolve(struct c4p *p, const C4__PathRequest *r, struct alloc_qp_req *q,
	    char *err, size_t len)
{
	const struct topo *t = p->topo;
	uint32_t sn = nic_lookup(t, r->src_nic);
	uint32_t dn = nic_lookup(t, r->dst_nic);
	uint8_t side = TOPO_SIDE_ANY;

	if (sn == TOPO_NONE || dn == TOPO_NONE) {
		snprintf(err, len,
			 "unknown NIC '%s' (name one as HOST/NIC or by an IP "
			 "of the topology)",
			 sn == TOPO_NONE ? r->src_nic : r->dst_nic);
		return -1;
	}
	if (r->has_src_side && r->src_side == C4__PORT_SIDE__SIDE_LEFT)
		side = TOPO_LEFT;
	else if (r->has_src_side && r->src_side == C4__PORT_SIDE__SIDE_RIGHT)
		side = TOPO_RIGHT;
	q->side = side;
	q->sip = t->ports[t->nics[sn].port[side == TOPO_RIGHT]].ip;
	q->dip = t->ports[t->nics[dn].port[side == TOPO_RIGHT]].ip;
	if (r->src_ip != NULL && r->src_ip[0] != '\0' &&
	    topo_ip_parse(r->src_ip, &q->sip) < 0) {
		snprintf(err, len, "src_ip '%s' is not an IPv4 address",
			 r->src_ip);
		return -1;
	}
	if (r->dst_ip != NULL && r->dst_ip[0] != '\0' &&
	    topo_ip_parse(r->dst_ip, &q->dip) < 0) {
		snprintf(err, len, "dst_ip '%s' is not an IPv4 address",
			 r->dst_ip);
		return -1;
	}
	if (topo_nic_by_ip(t, q->sip) != sn ||
	    topo_nic_by_ip(t, q->dip) != dn) {
		snprintf(err, len, "src_ip/dst_ip do not belong to %s/%s",
			 r->src_nic, r->dst_nic);
		return -1;
	}
	q->weight = r->has_demand ? (uint32_t)fmax(1.0, lround(r->demand)) : 1;
	return 0;
}

static void
api_reply_error(C4__PathReply *out, C4__ErrorCode code, const char *text,
		struct arena *ar)
{
	out->has_error = 1;
	out->error = code;
	out->error_text = arena_strdup(ar, text);
}

/*
 * A pair without catalog entry (on a side the request may use) gets an
 * on-demand probe; true when one was asked for.
 */
static bool
api_want_probe(struct c4p *p, const struct alloc_qp_req *q)
{
	bool asked = false;

	for (uint8_t s = 0; s < TOPO_SIDES; s++) {
		struct catalog_key k = {q->sip, q->dip, s};

		if ((q->side != TOPO_SIDE_ANY && q->side != s) ||
		    catalog_find(p->cat, &k) != NULL)
			continue;
		probes_want(p->probes, &k);
		asked = true;
	}
	return asked;
}

/*
 * Allocates (or renews) one request and fills out; returns the store
 * sequence number of the change (0 when nothing changed).
 */
static uint64_t
api_request_one(struct c4p *p, const struct api_from *from,
		const C4__PathRequest *r, struct arena *ar, C4__PathReply *out)
{
	char key[C4P_KEY_MAX], err[256];
	struct msg_err me = {0, ""};
	struct alloc_qp_req *qps = NULL;
	struct alloc_qp_res *res = NULL;
	struct alloc_record *recs = NULL;
	uint32_t n = r->qp_count, lease_s = (uint32_t)(p->conf->lease / 1000);
	uint64_t job, now = api_now_s(), seq = 0;
	bool existed;
	int rc;

	c4__path_reply__init(out);
	out->request_id = arena_strdup(ar, r->request_id);
	p->st.path_requests++;
	if (api_job_allowed(p, from, r->job_id, "path request", &me) < 0) {
		api_reply_error(out, me.code, me.text, ar);
		goto fail;
	}
	job = jobs_id(p->jobs, r->job_id, 1);
	if (job == 0) {
		api_reply_error(out, C4__ERROR_CODE__ERR_INTERNAL,
				"job table full", ar);
		goto fail;
	}
	qps = calloc(n, sizeof(*qps));
	res = calloc(n, sizeof(*res));
	recs = calloc(n, sizeof(*recs));
	if (qps == NULL || res == NULL || recs == NULL) {
		api_reply_error(out, C4__ERROR_CODE__ERR_INTERNAL,
				"out of memory", ar);
		goto fail;
	}
	if (api_key(key, job, r->request_id, err, sizeof(err)) < 0 ||
	    api_resolve(p, r, &qps[0], err, sizeof(err)) < 0) {
		api_reply_error(out, C4__ERROR_CODE__ERR_INVALID, err, ar);
		goto fail;
	}
	for (uint32_t i = 1; i < n; i++)
		qps[i] = qps[0];
	existed = alloc_lookup(p->alloc, key, res, n) == 0;
	rc = alloc_request(p->alloc, key, job, now, lease_s, qps, n, res, err,
			   sizeof(err));
	if (rc < 0) {
		char text[320];

		if (rc == -EEXIST)
			snprintf(text, sizeof(text),
				 "request id '%s' is in use with other QPs "
				 "(%s)",
				 r->request_id, err);
		else if (rc == -ENOENT)
			snprintf(text, sizeof(text), "no healthy path: %s%s",
				 err,
				 api_want_probe(p, &qps[0])
					 ? " (a probe of the pair is under "
					   "way: ask again)"
					 : "");
		else
			snprintf(text, sizeof(text), "%s", err);
		api_reply_error(out, C4__ERROR_CODE__ERR_INVALID, text, ar);
		goto fail;
	}
	if (existed) {
		seq = store_renew(p->store, key, now + lease_s);
	} else {
		for (uint32_t i = 0; i < n; i++) {
			recs[i].qp_id = res[i].qp_id;
			recs[i].req = qps[i];
			recs[i].sport = res[i].sport;
			recs[i].side = res[i].side;
			recs[i].home_side = res[i].home_side;
			recs[i].fallback = res[i].fallback;
			recs[i].conf_sport = res[i].sport;
			recs[i].stranded = res[i].stranded;
			recs[i].path = res[i].path;
		}
		seq = store_put(p->store, key, job, now + lease_s, recs, n);
	}
	from->sess->requests++;
	if (hold_set(p->holders, key, from->sess) < 0)
		log_warnx("out of memory: holder of %s not tracked", key);
	out->paths = arena_calloc(ar, n, sizeof(*out->paths));
	if (out->paths != NULL) {
		C4__PathAssignment *pa = arena_calloc(ar, n, sizeof(*pa));

		for (uint32_t i = 0; pa != NULL && i < n; i++) {
			reply_assignment(p->topo, &pa[i], i, res[i].sport,
					 res[i].side, &res[i].path);
			reply_fallback(&pa[i], res[i].fallback,
				       res[i].home_side);
			out->paths[i] = &pa[i];
		}
		out->n_paths = pa != NULL ? n : 0;
	}
	out->has_lease_ms = 1;
	out->lease_ms = lease_s * 1000u;
	p->st.path_qps += n;
	goto out;
fail:
	metrics_path_error(p, out->error);
	log_debug("path request %s of job %s: %s", r->request_id, r->job_id,
		  out->error_text ? out->error_text : "?");
out:
	free(qps);
	free(res);
	free(recs);
	return seq;
}

static int
api_path_request(struct c4p *p, const struct api_from *from,
		 const C4__Envelope *env, struct msg_err *err)
{
	const C4__PathRequest *const *rq;
	size_t nrq, total = 0;
	struct reply *pe;
	uint64_t seq = 0;

	if (env->type == C4__MSG_TYPE__MSG_PATH_REQUEST) {
		rq = (const C4__PathRequest *const *)&env->path_request;
		nrq = 1;
	} else {
		rq = (const C4__PathRequest *const *)
			     env->path_request_batch->requests;
		nrq = env->path_request_batch->n_requests;
	}
	for (size_t i = 0; i < nrq; i++)
		total += rq[i]->qp_count;
	if (total > API_MSG_QPS_MAX) {
		err->code = C4__ERROR_CODE__ERR_INVALID;
		snprintf(err->text, sizeof(err->text),
			 "%s asks for %zu QPs; at most %u in one message",
			 msg_type_name(env->type), total, API_MSG_QPS_MAX);
		metrics_path_error(p, err->code);
		return -1;
	}
	pe = reply_new(from->sess,
		       nrq == 1 && env->type == C4__MSG_TYPE__MSG_PATH_REQUEST
			       ? C4__MSG_TYPE__MSG_PATH_REPLY
			       : C4__MSG_TYPE__MSG_PATH_REPLY_BATCH,
		       env->seq);
	if (pe == NULL) {
		err->code = C4__ERROR_CODE__ERR_INTERNAL;
		snprintf(err->text, sizeof(err->text), "out of memory");
		return -1;
	}
	if (pe->type == C4__MSG_TYPE__MSG_PATH_REPLY) {
		C4__PathReply *out = arena_alloc(&pe->arena, sizeof(*out));

		if (out != NULL)
			seq = api_request_one(p, from, rq[0], &pe->arena, out);
		pe->body = out;
	} else {
		C4__PathReplyBatch *b = arena_alloc(&pe->arena, sizeof(*b));
		C4__PathReply *outs =
			arena_calloc(&pe->arena, nrq, sizeof(*outs));
		C4__PathReply **v = arena_calloc(&pe->arena, nrq, sizeof(*v));

		if (b != NULL && outs != NULL && v != NULL) {
			c4__path_reply_batch__init(b);
			for (size_t i = 0; i < nrq; i++) {
				uint64_t s = api_request_one(
					p, from, rq[i], &pe->arena, &outs[i]);

				if (s > seq)
					seq = s;
				v[i] = &outs[i];
			}
			b->replies = v;
			b->n_replies = nrq;
			pe->body = b;
		}
	}
	if (pe->body == NULL)
		log_warnx("out of memory: path reply dropped");
	reply_submit(&p->replies, pe, seq);
	return 0;
}

static int
api_path_release(struct c4p *p, const struct api_from *from,
		 const C4__Envelope *env, struct msg_err *err)
{
	const C4__PathRelease *r = env->path_release;
	uint64_t job, seq = 0;
	size_t freed = 0;
	struct reply *pe;
	C4__PathReply *out;

	if (api_job_allowed(p, from, r->job_id, "release", err) < 0)
		return -1;
	job = jobs_id(p->jobs, r->job_id, 0);
	p->st.path_releases++;
	if (job != 0 && r->all_of_job) {
		freed = alloc_release_job(p->alloc, job);
		if (freed > 0)
			seq = store_del_job(p->store, job);
	} else if (job != 0) {
		char key[C4P_KEY_MAX];

		if (api_key(key, job, r->request_id, err->text,
			    sizeof(err->text)) < 0) {
			err->code = C4__ERROR_CODE__ERR_INVALID;
			return -1;
		}
		freed = alloc_release(p->alloc, key);
		if (freed > 0) {
			seq = store_del(p->store, key);
			hold_del(p->holders, key);
		}
	}
	p->st.path_released_qps += freed;
	pe = reply_new(from->sess, C4__MSG_TYPE__MSG_PATH_REPLY, env->seq);
	if (pe == NULL)
		return 0;
	out = arena_alloc(&pe->arena, sizeof(*out));
	if (out != NULL) {
		c4__path_reply__init(out);
		out->request_id = arena_strdup(
			&pe->arena, r->request_id ? r->request_id : "");
		out->has_released = 1;
		out->released = (uint32_t)freed;
		pe->body = out;
	}
	reply_submit(&p->replies, pe, seq);
	return 0;
}

void
api_expire(struct c4p *p)
{
	uint64_t now = api_now_s();
	size_t n = alloc_expire(p->alloc, now);

	if (n > 0) {
		store_expire(p->store, now);
		p->st.path_expired += n;
		log_info("%zu QPs released: leases lapsed", n);
	}
	/* a probe round may have ended on its deadline */
	api_recheck(p);
}

void
api_recheck(struct c4p *p)
{
	struct alloc_change *ch = NULL;
	size_t n = 0;

	if (alloc_recheck(p->alloc, &ch, &n) < 0) {
		log_warnx("out of memory: QPs not checked against the catalog");
		return;
	}
	if (n > 0) {
		p->st.recheck_moves += n;
		link_moves(p, ch, n,
			   "catalog changed: port no longer takes its path");
	}
	free(ch);
}

/*
 * QpLoad entries that name their QP (qp_index) report the port it sends
 * from: the holder's confirmation of its port, or a disagreement.
 */
static int
api_qp_load(struct c4p *p, const struct api_from *from,
	    const C4__QpLoadUpdate *u, struct msg_err *err)
{
	uint64_t job;

	p->st.qp_load_updates++;
	p->st.qp_load_qps += u->n_qps;
	if (u->job_id == NULL)
		return 0;
	if (api_job_allowed(p, from, u->job_id, "QP report", err) < 0)
		return -1;
	job = jobs_id(p->jobs, u->job_id, 0);
	for (size_t i = 0; job != 0 && i < u->n_qps; i++) {
		const C4__QpLoad *q = u->qps[i];
		char key[C4P_KEY_MAX], e[128];
		int rc;

		if (!q->has_qp_index || !q->has_udp_sport ||
		    q->request_id == NULL ||
		    api_key(key, job, q->request_id, e, sizeof(e)) < 0)
			continue;
		rc = alloc_confirm(p->alloc, key, q->qp_index,
				   (uint16_t)q->udp_sport);
		if (rc == 0) {
			p->st.port_confirms++;
		} else if (rc == 1) {
			p->st.port_disagreements++;
			log_warnx("%s QP %u reports port %u, not the allocated "
				  "one",
				  key, q->qp_index, q->udp_sport);
		}
	}
	return 0;
}

/* ---- load and probes
 * ---------------------------------------------------------- */

static int
api_probe_result(struct c4p *p, struct c4p_sess *sess, const C4__ProbeResult *r,
		 struct msg_err *err)
{
	const struct topo *t = p->topo;
	struct probe_result pr;
	char e[256];

	p->st.probe_results++;
	/* an agent reports a task it could not run (no sockets, or its
	 * deadline passed) as a result without paths */
	if (r->n_paths == 0)
		p->st.probe_tasks_failed++;
	/* An answer to a task of the running round. */
	if (probes_result(p->probes, sess, r) == 0)
		return 0;
	memset(&pr, 0, sizeof(pr));
	if (r->src_ip == NULL || r->dst_ip == NULL ||
	    topo_ip_parse(r->src_ip, &pr.src_ip) < 0 ||
	    topo_ip_parse(r->dst_ip, &pr.dst_ip) < 0) {
		err->code = C4__ERROR_CODE__ERR_INVALID;
		snprintf(err->text, sizeof(err->text),
			 "probe_result: src_ip and dst_ip must be IPv4 "
			 "addresses");
		return -1;
	}
	for (size_t i = 0; i < r->n_paths; i++) {
		const C4__ProbePath *pp = r->paths[i];
		uint32_t sp, dp;
		const struct catalog_entry *ce;
		struct catalog_key k;

		pr.sport = (uint16_t)pp->sport;
		pr.src_leaf = pp->src_leaf ? topo_leaf_by_name(t, pp->src_leaf)
					   : TOPO_NONE;
		pr.dst_leaf = pp->dst_leaf ? topo_leaf_by_name(t, pp->dst_leaf)
					   : TOPO_NONE;
		pr.spine = pp->spine && pp->spine[0]
				   ? topo_spine_by_name(t, pp->spine)
				   : TOPO_NONE;
		pr.hops = pr.spine == TOPO_NONE ? 1 : 3;
		pr.up_link = pr.down_link = TOPO_NONE;
		sp = topo_port_by_ip(t, pr.src_ip, TOPO_LEFT);
		dp = topo_port_by_ip(t, pr.dst_ip, TOPO_LEFT);
		pr.side = sp != TOPO_NONE && t->ports[sp].leaf == pr.src_leaf
				  ? TOPO_LEFT
				  : TOPO_RIGHT;
		pr.dst_side =
			dp != TOPO_NONE && t->ports[dp].leaf == pr.dst_leaf
				? TOPO_LEFT
				: TOPO_RIGHT;
		if (pr.src_leaf == TOPO_NONE || pr.dst_leaf == TOPO_NONE ||
		    catalog_add_probe(p->cat, &pr, e, sizeof(e)) < 0) {
			p->st.probe_rejected++;
			log_debug("probe %s->%s sport %u rejected", r->src_ip,
				  r->dst_ip, pr.sport);
			continue;
		}
		p->st.probe_paths++;
		k.sip = pr.src_ip;
		k.dip = pr.dst_ip;
		k.side = pr.side;
		ce = catalog_find(p->cat, &k);
		if (ce != NULL)
			store_catalog(p->store, ce);
	}
	return 0;
}

int
api_handle(struct c4p *p, const struct api_from *from, const C4__Envelope *env,
	   struct msg_err *err)
{
	int rc;

	switch (env->type) {
	case C4__MSG_TYPE__MSG_PATH_REQUEST:
	case C4__MSG_TYPE__MSG_PATH_REQUEST_BATCH:
		return api_path_request(p, from, env, err);
	case C4__MSG_TYPE__MSG_PATH_RELEASE:
		return api_path_release(p, from, env, err);
	case C4__MSG_TYPE__MSG_QP_LOAD:
		/* confirmations; as load, the input of a later rebalancing */
		return api_qp_load(p, from, env->qp_load, err);
	case C4__MSG_TYPE__MSG_PROBE_RESULT:
		rc = api_probe_result(p, from->sess, env->probe_result, err);
		api_recheck(p);
		return rc;
	default:
		return -1;
	}
}
