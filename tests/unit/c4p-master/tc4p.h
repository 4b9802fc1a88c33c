/*
 * tc4p.h: a c4p-master context for unit tests: the tfab fabric (4 leaves,
 * 2 spines, hosts h0..h3 with nic0 and nic1), the hash model, a store in
 * a temporary folder, and replies captured instead of sent.
 */
#ifndef C4_TEST_TC4P_H
#define C4_TEST_TC4P_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <protobuf-c/protobuf-c.h>

#include "c4p.h"
#include "hold.h"
#include "jobs.h"
#include "probes.h"
#include "store.h"
#include "tfab.h"

#define TC4P_SENT_MAX 64

/* One captured message: its type and its packed bytes. */
struct tc4p_msg {
	struct c4p_sess *sess;
	C4__MsgType type;
	uint64_t reply_to;
	uint8_t buf[65536];
	size_t len;
};

struct tc4p {
	struct c4p p;
	struct dmn d;
	struct c4p_conf conf;
	char dir[64];
	struct tc4p_msg sent[TC4P_SENT_MAX];
	size_t nsent;
};

static char tc4p_conn; /* sessions' stand-in connection: never used */

static inline int
tc4p_send(struct c4p_sess *sess, C4__MsgType type, const void *body,
	  uint64_t reply_to, void *arg)
{
	struct tc4p *x = arg;
	struct tc4p_msg *m;

	ck_assert_uint_lt(x->nsent, TC4P_SENT_MAX);
	m = &x->sent[x->nsent++];
	m->sess = sess;
	m->type = type;
	m->reply_to = reply_to;
	m->len = protobuf_c_message_get_packed_size(body);
	ck_assert_uint_le(m->len, sizeof(m->buf));
	protobuf_c_message_pack(body, m->buf);
	return 0;
}

static inline void
tc4p_committed(uint64_t seq, void *arg)
{
	struct tc4p *x = arg;

	reply_committed(&x->p.replies, seq);
}

static inline void
tc4p_sess_init(struct c4p_sess *s)
{
	memset(s, 0, sizeof(*s));
	s->conn = (struct srv_conn *)&tc4p_conn;
	s->host = TOPO_NONE;
}

static inline struct tc4p *
tc4p_new(void)
{
	struct tc4p *x = calloc(1, sizeof(*x));
	struct store_restore to;
	char err[256];

	ck_assert_ptr_nonnull(x);
	evthread_use_pthreads();
	snprintf(x->dir, sizeof(x->dir), "/tmp/c4p-unit-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(x->dir));
	x->d.base = event_base_new();
	x->conf.lease = 600000;
	x->conf.hash_seed = 1;
	x->conf.probe.interval = 0;
	x->conf.probe.ports = 4;
	x->conf.probe.rate = 1000;
	x->conf.probe.repeats = 1;
	x->conf.probe.timeout = 100;
	x->conf.probe.window = 3;
	x->conf.probe.confidence_z = 3;
	x->conf.probe.loss_degraded = 0.01;
	x->conf.probe.loss_down = 0.25;
	x->conf.probe.loss_recover = 0.005;
	x->conf.probe.min_probes = 50;
	x->conf.probe.gbn_window = 128;
	x->conf.probe.queue_delay_us = 1000;
	x->conf.probe.hosts_per_leaf = 1;
	x->d.conf = &x->conf;
	x->d.state = &x->p;
	x->p.dmn = &x->d;
	x->p.conf = &x->conf;
	x->p.topo = tfab_new(2, 1, false);
	x->p.model.seed = 1;
	x->p.cat = catalog_new(x->p.topo, &x->p.model);
	x->p.alloc = alloc_new(x->p.topo, x->p.cat);
	x->p.holders = hold_new();
	x->p.replies.send = tc4p_send;
	x->p.replies.send_arg = x;
	x->p.store = store_open(x->dir, false, x->d.base, tc4p_committed, x,
				err, sizeof(err));
	ck_assert_msg(x->p.store != NULL, "%s", err);
	x->p.jobs = jobs_new(x->p.store, 16);
	to = (struct store_restore){jobs_restore, x->p.jobs, x->p.cat,
				    x->p.alloc};
	ck_assert_msg(store_load(x->p.store, &to, err, sizeof(err)) == 0, "%s",
		      err);
	x->p.probes = probes_new(&x->p);
	ck_assert_ptr_nonnull(x->p.probes);
	return x;
}

/*
 * Allocates n (at most 4) QPs h0/nic0 -> h2/nic0, left side, as request
 * "1/r" of job "train" (id 1); res gets them, req their request.
 */
static inline void
tc4p_alloc(struct tc4p *x, size_t n, struct alloc_qp_req *req,
	   struct alloc_qp_res *res)
{
	const struct topo *t = x->p.topo;
	struct alloc_qp_req qs[4];
	char err[256];

	ck_assert_uint_le(n, 4);
	ck_assert_uint_eq(jobs_id(x->p.jobs, "train", 1), 1);
	memset(req, 0, sizeof(*req));
	req->sip = t->ports[tfab_port(t, 0, 0, TOPO_LEFT)].ip;
	req->dip = t->ports[tfab_port(t, 2, 0, TOPO_LEFT)].ip;
	req->side = TOPO_LEFT;
	req->weight = 1;
	for (size_t i = 0; i < n; i++)
		qs[i] = *req;
	ck_assert_msg(alloc_request(x->p.alloc, "1/r", 1, 100, 600, qs, n, res,
				    err, sizeof(err)) == 0,
		      "%s", err);
}

/* Runs the loop until every queued store write has committed. */
static inline void
tc4p_settle(struct tc4p *x)
{
	struct store_stats st;

	for (int i = 0; i < 2000; i++) {
		event_base_loop(x->d.base, EVLOOP_NONBLOCK);
		store_get_stats(x->p.store, &st);
		if (st.committed == st.ops) {
			event_base_loop(x->d.base, EVLOOP_NONBLOCK);
			return;
		}
		usleep(1000);
	}
	ck_abort_msg("store did not commit");
}

static inline void
tc4p_free(struct tc4p *x)
{
	char cmd[128];

	probes_free(x->p.probes);
	reply_drop_all(&x->p.replies);
	store_close(x->p.store);
	jobs_free(x->p.jobs);
	hold_free(x->p.holders);
	alloc_free(x->p.alloc);
	catalog_free(x->p.cat);
	topo_free(x->p.topo);
	event_base_free(x->d.base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
	ck_assert_int_eq(system(cmd), 0);
	free(x);
}

#endif
