/*
 * c4p_client.c - the blocking "ports for these QPs" client (c4p_client.h).
 */
#include "c4p_client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
c4p_client_port_set(struct c4p_client_port *o, const C4__PathAssignment *pa)
{
	o->sport = (uint16_t)pa->udp_sport;
	o->side = (uint8_t)pa->side;
	o->qp_index = pa->qp_index;
	snprintf(o->spine, sizeof(o->spine), "%s", pa->spine ? pa->spine : "");
}

int
c4p_client_connect(struct c4p_client *c, const char *addr, const char *token,
		   const char *job, int role, int timeout_ms)
{
	return c4p_client_connect_tls(c, addr, token, job, role, timeout_ms,
				      NULL);
}

int
c4p_client_connect_tls(struct c4p_client *c, const char *addr,
		       const char *token, const char *job, int role,
		       int timeout_ms, const struct tls_files *tls)
{
	struct cli_hello h = {(C4__Role)role, token, job, NULL, tls};

	memset(c, 0, sizeof(*c));
	snprintf(c->job, sizeof(c->job), "%s", job ? job : "");
	if (cli_connect(&c->cli, addr, &h, timeout_ms) < 0) {
		snprintf(c->err, sizeof(c->err), "%s", c->cli.err);
		return -1;
	}
	c->cli.spin_us = C4P_CLIENT_SPIN_US;
	return 0;
}

void
c4p_client_close(struct c4p_client *c)
{
	cli_close(&c->cli);
}

int
c4p_client_request(struct c4p_client *c, const struct c4p_client_req *r,
		   size_t n, struct c4p_client_port *ports, int *errs)
{
	C4__PathRequestBatch b = C4__PATH_REQUEST_BATCH__INIT;
	C4__PathRequest *rq = calloc(n ? n : 1, sizeof(*rq));
	C4__PathRequest **v = calloc(n ? n : 1, sizeof(*v));
	C4__Envelope *env = NULL;
	const C4__PathReplyBatch *rb;
	size_t off = 0;
	int failed = 0, rc = -1;

	c->err[0] = '\0';
	if (rq == NULL || v == NULL) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		c4__path_request__init(&rq[i]);
		rq[i].job_id = c->job;
		rq[i].request_id = (char *)r[i].request_id;
		rq[i].src_nic = (char *)r[i].src_nic;
		rq[i].dst_nic = (char *)r[i].dst_nic;
		rq[i].has_src_side = r[i].side != 0;
		rq[i].src_side = (C4__PortSide)r[i].side;
		rq[i].has_qp_count = 1;
		rq[i].qp_count = r[i].qp_count;
		v[i] = &rq[i];
	}
	b.requests = v;
	b.n_requests = n;
	env = cli_call(&c->cli, C4__MSG_TYPE__MSG_PATH_REQUEST_BATCH, &b);
	if (env == NULL || env->type != C4__MSG_TYPE__MSG_PATH_REPLY_BATCH) {
		snprintf(c->err, sizeof(c->err), "%s",
			 env ? "unexpected answer" : c->cli.err);
		goto out;
	}
	rb = env->path_reply_batch;
	if (rb->n_replies != n) {
		snprintf(c->err, sizeof(c->err), "%zu answers for %zu requests",
			 rb->n_replies, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const C4__PathReply *pr = rb->replies[i];
		int code = pr->has_error ? (int)pr->error : 0;

		if (errs != NULL)
			errs[i] = code;
		memset(&ports[off], 0, r[i].qp_count * sizeof(*ports));
		if (code != 0 || pr->n_paths != r[i].qp_count) {
			if (failed++ == 0)
				snprintf(c->err, sizeof(c->err), "%s: %s",
					 r[i].request_id,
					 pr->error_text ? pr->error_text
							: "wrong QP count");
		} else {
			for (size_t k = 0; k < pr->n_paths; k++)
				c4p_client_port_set(&ports[off + k],
						    pr->paths[k]);
			c->lease_ms = pr->lease_ms;
		}
		off += r[i].qp_count;
	}
	rc = failed;
out:
	msg_free(env);
	free(rq);
	free(v);
	return rc;
}

long
c4p_client_release(struct c4p_client *c, const char *request_id)
{
	C4__PathRelease r = C4__PATH_RELEASE__INIT;
	C4__Envelope *env;
	long n;

	r.job_id = c->job;
	r.request_id = (char *)(request_id ? request_id : "");
	r.has_all_of_job = request_id == NULL;
	r.all_of_job = request_id == NULL;
	env = cli_call(&c->cli, C4__MSG_TYPE__MSG_PATH_RELEASE, &r);
	if (env == NULL || env->type != C4__MSG_TYPE__MSG_PATH_REPLY) {
		snprintf(c->err, sizeof(c->err), "%s",
			 env ? "unexpected answer" : c->cli.err);
		msg_free(env);
		return -1;
	}
	n = env->path_reply->released;
	msg_free(env);
	return n;
}

int
c4p_client_confirm(struct c4p_client *c, const char *request_id,
		   const struct c4p_client_port *ports, size_t n)
{
	C4__QpLoadUpdate u = C4__QP_LOAD_UPDATE__INIT;
	C4__QpLoad *v, **pv;
	int rc;

	if (n == 0)
		return 0;
	v = calloc(n, sizeof(*v));
	pv = calloc(n, sizeof(*pv));
	if (v == NULL || pv == NULL) {
		free(v);
		free(pv);
		snprintf(c->err, sizeof(c->err), "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		c4__qp_load__init(&v[i]);
		v[i].request_id = (char *)request_id;
		v[i].has_udp_sport = 1;
		v[i].udp_sport = ports[i].sport;
		v[i].has_qp_index = 1;
		v[i].qp_index = ports[i].qp_index;
		pv[i] = &v[i];
	}
	u.job_id = c->job;
	u.qps = pv;
	u.n_qps = n;
	rc = cli_send(&c->cli, C4__MSG_TYPE__MSG_QP_LOAD, &u, NULL);
	if (rc < 0)
		snprintf(c->err, sizeof(c->err), "%s", c->cli.err);
	free(v);
	free(pv);
	return rc < 0 ? -1 : 0;
}

int
c4p_client_poll(struct c4p_client *c, const char *request_id,
		struct c4p_client_port *ports, size_t n, int timeout_ms)
{
	int saved = c->cli.timeout_ms, changed = -1;
	C4__Envelope *env;

	c->cli.timeout_ms = timeout_ms;
	for (;;) {
		env = cli_recv(&c->cli);
		if (env == NULL) {
			changed = strstr(c->cli.err, "no answer") ? 0 : -1;
			snprintf(c->err, sizeof(c->err), "%s", c->cli.err);
			break;
		}
		if (env->type == C4__MSG_TYPE__MSG_PATH_REASSIGN &&
		    (request_id == NULL ||
		     strcmp(env->path_reassign->request_id, request_id) == 0)) {
			const C4__PathReassign *m = env->path_reassign;
			struct c4p_client_port *done =
				calloc(m->n_paths + 1, sizeof(*done));
			size_t nd = 0;

			changed = 0;
			for (size_t i = 0; i < m->n_paths; i++)
				if (m->paths[i]->qp_index < n) {
					c4p_client_port_set(
						&ports[m->paths[i]->qp_index],
						m->paths[i]);
					changed++;
				}
			/* the ports in use now, each QP once (a QP moved twice
			 * in one message ends on its last entry): the master's
			 * confirmation */
			for (size_t i = 0; done != NULL && i < m->n_paths;
			     i++) {
				uint32_t q = m->paths[i]->qp_index;
				bool seen = false;

				for (size_t k = 0; k < nd; k++)
					seen |= done[k].qp_index == q;
				if (q < n && !seen)
					done[nd++] = ports[q];
			}
			/* a session that fails here fails the next call too;
			 * without it the next renewal confirms them */
			if (done != NULL)
				(void)c4p_client_confirm(c, m->request_id, done,
							 nd);
			free(done);
			msg_free(env);
			break;
		}
		msg_free(env);
	}
	c->cli.timeout_ms = saved;
	return changed;
}
