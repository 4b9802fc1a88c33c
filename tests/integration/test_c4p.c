/*
 * test_c4p.c - c4p-master as a real process over real TCP with a real
 * SQLite file: allocations through lib/rdma's client, bad requests, a
 * release refused across jobs, a link taken down with c4ctl (the holder
 * gets PathReassign, the table shows the new ports), kill -9 in the middle
 * of a stream and a restart on the same state (nothing lost, nothing
 * handed out twice: later answers equal those of a master that never
 * crashed), who commits (the loop for lone requests, the writer thread
 * for groups and with sync_full), a broken topology reported by -n with
 * every position, and /metrics and /healthz fetched over real HTTP.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4p_client.h"
#include "harness.h"

#define OPS_TOKEN	    "operator-token-0001"
#define CCL_TOKEN	    "ccl-token-any-job-01"
#define TIMEOUT_MS	    10000
#define STREAM_N	    40 /* requests sent before the kill */
#define STREAM_QPS	    8
#define STORE_LONE	    5	/* lone requests, one round trip each */
#define STORE_BATCH	    40	/* requests in one PathRequestBatch */
#define STORE_VALVE_LONE    500 /* lone requests per client, tiny WAL */
#define STORE_VALVE_CLIENTS 4

/* The master on the paper's testbed, state in dir (NULL: its own). */
static void
conf_text(char *buf, size_t len, const char *state_dir)
{
	snprintf(buf, len,
		 "server:\n"
		 "  listen: 127.0.0.1:0\n"
		 "topology: @SRC@/conf/topology-example.yaml\n"
		 "state_dir: %s\n"
		 "hash_seed: 7\n"
		 "lease: 1h\n"
		 "credentials:\n"
		 "  - name: ops\n"
		 "    token: " OPS_TOKEN "\n"
		 "    roles: [ctl]\n"
		 "  - name: ccl\n"
		 "    token: " CCL_TOKEN "\n"
		 "    roles: [ccl-client, agent]\n"
		 "    jobs: ['*']\n"
		 "log:\n"
		 "  level: debug\n",
		 state_dir ? state_dir : "@DIR@");
}

static int
ctl(const struct th_daemon *d, char *out, size_t outlen, const char *a1,
    const char *a2, const char *a3, const char *a4, const char *a5)
{
	return th_ctl(d->tcp, OPS_TOKEN, out, outlen, a1, a2, a3, a4, a5, NULL);
}

static long long
counter(const struct th_daemon *d, const char *name)
{
	char out[16384], key[128];
	const char *p;

	ck_assert_int_eq(
		ctl(d, out, sizeof(out), "-o", "json", "status", NULL, NULL),
		0);
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(out, key);
	ck_assert_msg(p != NULL, "no counter %s in %s", name, out);
	return atoll(p + strlen(key));
}

static void
client(struct c4p_client *c, const struct th_daemon *d, const char *job)
{
	ck_assert_msg(c4p_client_connect(c, d->tcp, CCL_TOKEN, job,
					 C4__ROLE__ROLE_CCL_CLIENT,
					 TIMEOUT_MS) == 0,
		      "%s", c->err);
}

START_TEST(test_alloc_retry_release_and_bad_requests)
{
	struct th_daemon d;
	struct c4p_client a, b;
	struct c4p_client_req r[2] = {
		{"comm1/host0-host1", "host0/nic0", "host1/nic0", 1, 8},
		{"comm1/host0-host2", "10.0.0.2", "host2/nic1", 0, 4}};
	struct c4p_client_port p1[12], p2[12];
	char conf[2048], out[65536];
	int errs[3];

	conf_text(conf, sizeof(conf), NULL);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	client(&a, &d, "job-a");
	ck_assert_int_eq(c4p_client_request(&a, r, 2, p1, errs), 0);
	for (int i = 0; i < 12; i++) {
		ck_assert_uint_ge(p1[i].sport, 49152);
		ck_assert_uint_eq(p1[i].qp_index, i < 8 ? i : i - 8);
	}
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(p1[i].side, 1); /* left asked, left given */
	ck_assert_uint_gt(a.lease_ms, 0);
	/* A retry under the same ids: the same answer (and a renewal). */
	ck_assert_int_eq(c4p_client_request(&a, r, 2, p2, errs), 0);
	ck_assert_mem_eq(p1, p2, sizeof(p1));
	ck_assert_int_eq(counter(&d, "alloc_qps"), 12);

	/* Unknown NIC, an id reused with other QPs: errors per request. */
	{
		struct c4p_client_req bad[3] = {
			{"x1", "host0/nic99", "host1/nic0", 1, 2},
			{"comm1/host0-host1", "host0/nic0", "host1/nic0", 1, 3},
			{"x3", "host3/nic0", "host4/nic0", 2, 2}};
		struct c4p_client_port p3[7];

		ck_assert_int_eq(c4p_client_request(&a, bad, 3, p3, errs), 2);
		ck_assert_int_eq(errs[0], C4__ERROR_CODE__ERR_INVALID);
		ck_assert_int_eq(errs[1], C4__ERROR_CODE__ERR_INVALID);
		ck_assert_int_eq(errs[2], 0);
		ck_assert_msg(strstr(a.err, "unknown NIC 'host0/nic99'"), "%s",
			      a.err);
		ck_assert_uint_ge(p3[5].sport, 49152);
	}
	/* Absurd counts: one request above the cap, a batch far above. */
	{
		struct c4p_client_req big = {"big", "host0/nic0", "host1/nic0",
					     1, 5000};
		struct c4p_client_req *many = calloc(300, sizeof(*many));
		struct c4p_client_port *pp = calloc(300 * 4096, sizeof(*pp));
		char ids[300][16];

		ck_assert_int_eq(c4p_client_request(&a, &big, 1, pp, errs), -1);
		ck_assert_msg(strstr(a.err, "qp_count must be 1..4096"), "%s",
			      a.err);
		/* Invalid on the wire: the session is closed; a new one. */
		c4p_client_close(&a);
		client(&a, &d, "job-a");
		for (int i = 0; i < 300; i++) {
			snprintf(ids[i], sizeof(ids[i]), "m%d", i);
			many[i] = (struct c4p_client_req){
				ids[i], "host0/nic0", "host1/nic0", 1, 4096};
		}
		ck_assert_int_eq(c4p_client_request(&a, many, 300, pp, NULL),
				 -1);
		ck_assert_msg(strstr(a.err, "at most 1048576 in one message"),
			      "%s", a.err);
		free(many);
		free(pp);
	}
	ck_assert_int_eq(counter(&d, "alloc_qps"), 14);

	/* Another job may not release job-a's request, nor ask for it. */
	client(&b, &d, "job-b");
	b.job[0] = '\0';
	snprintf(b.job, sizeof(b.job), "job-a");
	ck_assert_int_eq(c4p_client_release(&b, "comm1/host0-host1"), -1);
	ck_assert_msg(strstr(b.err, "release for job 'job-a' refused: this "
				    "session belongs to job 'job-b'"),
		      "%s", b.err);
	ck_assert_int_eq(c4p_client_request(&b, r, 1, p2, errs), 1);
	ck_assert_int_eq(errs[0], C4__ERROR_CODE__ERR_AUTH);
	/* The same request id in job-b is its own request. */
	snprintf(b.job, sizeof(b.job), "job-b");
	ck_assert_int_eq(c4p_client_request(&b, r, 1, p2, errs), 0);
	ck_assert_int_eq(counter(&d, "alloc_qps"), 22);

	ck_assert_int_eq(ctl(&d, out, sizeof(out), "alloc", "--job", "job-a",
			     NULL, NULL),
			 0);
	ck_assert_msg(strstr(out, "comm1/host0-host1") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "job-b") == NULL, "%s", out);
	ck_assert_int_eq(
		ctl(&d, out, sizeof(out), "-o", "json", "alloc", NULL, NULL),
		0);
	ck_assert_msg(strstr(out, "\"job\":\"job-b\"") != NULL, "%s", out);

	/* The owner releases; then the whole job. */
	ck_assert_int_eq(c4p_client_release(&a, "comm1/host0-host1"), 8);
	ck_assert_int_eq(c4p_client_release(&a, "comm1/host0-host1"), 0);
	ck_assert_int_eq(c4p_client_release(&a, NULL), 6);
	ck_assert_int_eq(counter(&d, "alloc_qps"), 8);
	c4p_client_close(&a);
	c4p_client_close(&b);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

START_TEST(test_link_down_reassigns_holder)
{
	struct th_daemon d;
	struct c4p_client a;
	struct c4p_client_req r = {"comm9/ring0", "host0/nic0", "host1/nic0", 1,
				   16};
	struct c4p_client_port p[16], before[16];
	char conf[2048], out[262144], link[96], needle[128];
	int moved = 0;

	conf_text(conf, sizeof(conf), NULL);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	client(&a, &d, "job-l");
	ck_assert_int_eq(c4p_client_request(&a, &r, 1, p, NULL), 0);
	memcpy(before, p, sizeof(p));
	/* host0 left is on leaf0: take down the uplink of QP 0. */
	snprintf(link, sizeof(link), "leaf0-%s", p[0].spine);
	ck_assert_int_eq(
		ctl(&d, out, sizeof(out), "link", "set", "down", link, NULL),
		0);
	ck_assert_msg(strstr(out, " QPs moved, 0 stranded") != NULL, "%s", out);
	ck_assert_int_eq(c4p_client_poll(&a, "comm9/ring0", p, 16, TIMEOUT_MS),
			 (int)atoi(strstr(out, ": ") + 2));
	for (int i = 0; i < 16; i++) {
		ck_assert_str_ne(p[i].spine, before[0].spine);
		moved += p[i].sport != before[i].sport;
	}
	ck_assert_int_gt(moved, 0);
	/* The allocation table shows the new ports, the links the state. */
	ck_assert_int_eq(
		ctl(&d, out, sizeof(out), "-o", "json", "alloc", NULL, NULL),
		0);
	snprintf(needle, sizeof(needle), "\"spine\":\"%s\"", before[0].spine);
	ck_assert_msg(strstr(out, needle) == NULL, "%s", out);
	for (int i = 0; i < 16; i++) {
		snprintf(needle, sizeof(needle), "\"index\":%d,\"sport\":%u,",
			 i, p[i].sport);
		ck_assert_msg(strstr(out, needle) != NULL, "%s in %s", needle,
			      out);
	}
	ck_assert_int_eq(
		ctl(&d, out, sizeof(out), "-o", "json", "links", NULL, NULL),
		0);
	snprintf(needle, sizeof(needle), "\"link\":\"%s\",", link);
	ck_assert_msg(strstr(out, needle) != NULL, "%s", out);
	ck_assert_msg(strstr(strstr(out, needle), "\"state\":\"down\"") != NULL,
		      "%s", out);
	ck_assert_int_eq(counter(&d, "reassign_sent"), 1);
	/* A retry now answers the moved ports. */
	{
		struct c4p_client_port again[16];

		ck_assert_int_eq(c4p_client_request(&a, &r, 1, again, NULL), 0);
		ck_assert_mem_eq(again, p, sizeof(p));
	}
	ck_assert_int_eq(ctl(&d, out, sizeof(out), "fabric", "--svg",
			     "/dev/null", NULL, NULL),
			 0);
	ck_assert_msg(strstr(out, "X") != NULL, "%s", out);
	/* Unknown link: a clear error. */
	ck_assert_int_eq(ctl(&d, out, sizeof(out), "link", "set", "down",
			     "leaf0-spine99", NULL),
			 1);
	ck_assert_int_eq(
		ctl(&d, out, sizeof(out), "link", "set", "up", link, NULL), 0);
	c4p_client_close(&a);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* Waits (TIMEOUT_MS at most) until status counter name equals want. */
static long long
wait_counter(const struct th_daemon *d, const char *name, long long want)
{
	long long v = counter(d, name);

	for (int i = 0; v != want && i < TIMEOUT_MS / 20; i++) {
		usleep(20000);
		v = counter(d, name);
	}
	return v;
}

/*
 * Master and holder agree on every QP's port: the allocation table shows
 * the holder's ports, none pending, and none of them on a spine given.
 */
static void
ports_agree(const struct th_daemon *d, const struct c4p_client_port *p, int n,
	    int side)
{
	char out[262144], needle[128], qp[1024];

	ck_assert_int_eq(wait_counter(d, "alloc_pending", 0), 0);
	ck_assert_int_eq(
		ctl(d, out, sizeof(out), "-o", "json", "alloc", NULL, NULL), 0);
	ck_assert_msg(strstr(out, "\"pending\":true") == NULL, "%s", out);
	for (int i = 0; i < n; i++) {
		const char *at;

		snprintf(needle, sizeof(needle), "\"index\":%d,\"sport\":%u,",
			 i, p[i].sport);
		at = strstr(out, needle);
		ck_assert_msg(at != NULL, "%s in %s", needle, out);
		/* the QP's own object: its side is the holder's */
		snprintf(qp, sizeof(qp), "%.*s", (int)(strchr(at, '}') - at),
			 at);
		snprintf(needle, sizeof(needle), "\"side\":\"%s\"",
			 side == 1 ? "left" : "right");
		ck_assert_msg(strstr(qp, needle) != NULL, "%s", qp);
		ck_assert_int_eq(p[i].side, side);
	}
	ck_assert_int_eq(counter(d, "port_disagreements"), 0);
}

/*
 * A whole side of a bonded NIC loses its fabric (every uplink of its left
 * leaf, one c4ctl command at a time): no QP is stranded, all fail over to
 * the right ports, the holder confirms every move, and master and holder
 * agree on every port; when the side recovers the QPs go home, again
 * confirmed.
 */
START_TEST(test_plane_failure_falls_back)
{
	struct th_daemon d;
	struct c4p_client a;
	struct c4p_client_req r = {"comm5/ring0", "host0/nic0", "host1/nic0", 1,
				   16};
	struct c4p_client_port p[16];
	char conf[2048], out[8192], link[96];

	conf_text(conf, sizeof(conf), NULL);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	client(&a, &d, "job-f");
	ck_assert_int_eq(c4p_client_request(&a, &r, 1, p, NULL), 0);
	ports_agree(&d, p, 16, 1);
	for (int s = 0; s < 8; s++) {
		int moved;

		snprintf(link, sizeof(link), "leaf0-spine%d", s);
		ck_assert_int_eq(ctl(&d, out, sizeof(out), "link", "set",
				     "down", link, NULL),
				 0);
		ck_assert_msg(strstr(out, " 0 stranded") != NULL, "%s", out);
		moved = atoi(strstr(out, ": ") + 2);
		if (moved > 0)
			ck_assert_int_eq(c4p_client_poll(&a, "comm5/ring0", p,
							 16, TIMEOUT_MS),
					 moved);
	}
	ck_assert_int_eq(counter(&d, "alloc_stranded"), 0);
	ck_assert_int_eq(counter(&d, "alloc_fallback"), 16);
	ports_agree(&d, p, 16, 2);
	ck_assert_int_eq(
		ctl(&d, out, sizeof(out), "alloc", NULL, NULL, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "failover-left") != NULL, "%s", out);
	/* one uplink back: every QP returns to its own side */
	ck_assert_int_eq(ctl(&d, out, sizeof(out), "link", "set", "up",
			     "leaf0-spine3", NULL),
			 0);
	ck_assert_int_eq(c4p_client_poll(&a, "comm5/ring0", p, 16, TIMEOUT_MS),
			 16);
	ck_assert_int_eq(counter(&d, "alloc_fallback"), 0);
	ports_agree(&d, p, 16, 1);
	for (int i = 0; i < 16; i++)
		ck_assert_str_eq(p[i].spine, "spine3");
	c4p_client_close(&a);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/*
 * A probe result says the port a QP holds now takes another spine (the
 * switches rehashed): the master places the QP again at once and tells
 * its holder, which confirms; nothing stays pending.
 */
START_TEST(test_catalog_change_replaces_qp)
{
	struct th_daemon d;
	struct c4p_client a, ag;
	struct c4p_client_req r = {"rh/0", "host0/nic0", "host5/nic0", 1, 1};
	struct c4p_client_port p[1], before[1];
	C4__ProbeResult pr = C4__PROBE_RESULT__INIT;
	C4__ProbePath pp = C4__PROBE_PATH__INIT, *ppv[1] = {&pp};
	char conf[2048], spine[16];

	conf_text(conf, sizeof(conf), NULL);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	client(&a, &d, "job-h");
	ck_assert_int_eq(c4p_client_request(&a, &r, 1, p, NULL), 0);
	before[0] = p[0];
	ck_assert_int_eq(c4p_client_connect(&ag, d.tcp, CCL_TOKEN, NULL,
					    C4__ROLE__ROLE_AGENT, TIMEOUT_MS),
			 0);
	/* the QP's port now crosses another spine */
	snprintf(spine, sizeof(spine), "spine%d",
		 (atoi(p[0].spine + 5) + 1) % 8);
	pr.has_task_id = 1;
	pr.task_id = 1;
	pr.src_ip = (char *)"10.0.0.1";
	pr.dst_ip = (char *)"10.0.5.1";
	pp.has_sport = 1;
	pp.sport = p[0].sport;
	pp.src_leaf = (char *)"leaf0";
	pp.spine = spine;
	pp.dst_leaf = (char *)"leaf2";
	pr.paths = ppv;
	pr.n_paths = 1;
	ck_assert_int_eq(
		cli_send(&ag.cli, C4__MSG_TYPE__MSG_PROBE_RESULT, &pr, NULL),
		0);
	ck_assert_int_eq(c4p_client_poll(&a, "rh/0", p, 1, TIMEOUT_MS), 1);
	ck_assert(p[0].sport != before[0].sport ||
		  strcmp(p[0].spine, before[0].spine) != 0);
	ck_assert_int_ge(counter(&d, "recheck_moves"), 1);
	ports_agree(&d, p, 1, 1);
	c4p_client_close(&ag);
	c4p_client_close(&a);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* Request i of the stream: NIC pairs across the fabric, both sides. */
static void
stream_req(struct c4p_client_req *r, char *id, size_t idlen, char *s, char *dd,
	   size_t nl, int i)
{
	snprintf(id, idlen, "stream/%d", i);
	snprintf(s, nl, "host%d/nic%d", i % 16, (i / 16) % 8);
	snprintf(dd, nl, "host%d/nic%d", (i + 5) % 16, (i / 16) % 8);
	r->request_id = id;
	r->src_nic = s;
	r->dst_nic = dd;
	r->side = 1 + i % 2;
	r->qp_count = STREAM_QPS;
}

static void
stream_send(struct c4p_client *c, int i)
{
	C4__PathRequest rq = C4__PATH_REQUEST__INIT;
	struct c4p_client_req r;
	char id[32], s[32], dd[32];

	stream_req(&r, id, sizeof(id), s, dd, sizeof(s), i);
	rq.job_id = c->job;
	rq.request_id = id;
	rq.src_nic = s;
	rq.dst_nic = dd;
	rq.has_src_side = 1;
	rq.src_side = (C4__PortSide)r.side;
	rq.has_qp_count = 1;
	rq.qp_count = STREAM_QPS;
	ck_assert_int_eq(
		cli_send(&c->cli, C4__MSG_TYPE__MSG_PATH_REQUEST, &rq, NULL),
		0);
}

static void
stream_ask(struct c4p_client *c, int i, struct c4p_client_port *p)
{
	struct c4p_client_req r;
	char id[32], s[32], dd[32];

	stream_req(&r, id, sizeof(id), s, dd, sizeof(s), i);
	ck_assert_msg(c4p_client_request(c, &r, 1, p, NULL) == 0, "%d: %s", i,
		      c->err);
}

START_TEST(test_kill9_restart_recovers)
{
	static struct c4p_client_port got[STREAM_N + 10][STREAM_QPS],
		ref[STREAM_N + 10][STREAM_QPS], again[STREAM_QPS];
	char dir[] = "/tmp/c4p-state-XXXXXX", conf[2048];
	char links_a[65536], links_b[65536];
	struct th_daemon d, r;
	struct c4p_client c, rc;
	long long qps;
	int answered = 0;

	ck_assert_ptr_nonnull(th_mkdtemp(dir));
	conf_text(conf, sizeof(conf), dir);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	client(&c, &d, "job-k");
	/* A stream: send ahead, read answers, kill while some are in flight. */
	for (int i = 0; i < STREAM_N; i++)
		stream_send(&c, i);
	for (; answered < STREAM_N / 2; answered++) {
		C4__Envelope *env = cli_recv(&c.cli);

		ck_assert_msg(env != NULL, "%s", c.cli.err);
		ck_assert_int_eq(env->type, C4__MSG_TYPE__MSG_PATH_REPLY);
		ck_assert(!env->path_reply->has_error);
		ck_assert_uint_eq(env->path_reply->n_paths, STREAM_QPS);
		for (int k = 0; k < STREAM_QPS; k++)
			got[answered][k].sport =
				(uint16_t)env->path_reply->paths[k]->udp_sport;
		msg_free(env);
	}
	ck_assert_int_eq(th_kill(&d), 0);
	c4p_client_close(&c);

	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	/* Every answered request is back; unanswered ones may be too. */
	qps = counter(&d, "alloc_qps");
	ck_assert_int_ge(qps, (long long)answered * STREAM_QPS);
	ck_assert_int_le(qps, (long long)STREAM_N * STREAM_QPS);
	ck_assert_int_eq(qps % STREAM_QPS, 0);
	client(&c, &d, "job-k");
	/* Retries: the same ports for the answered ones. */
	for (int i = 0; i < answered; i++) {
		stream_ask(&c, i, again);
		for (int k = 0; k < STREAM_QPS; k++)
			ck_assert_uint_eq(again[k].sport, got[i][k].sport);
	}
	/* Finish the stream and ask ten more. */
	for (int i = answered; i < STREAM_N + 10; i++)
		stream_ask(&c, i, got[i]);
	ck_assert_int_eq(counter(&d, "alloc_qps"),
			 (STREAM_N + 10) * STREAM_QPS);
	ck_assert_int_eq(ctl(&d, links_a, sizeof(links_a), "-o", "json",
			     "links", NULL, NULL),
			 0);

	/*
	 * A master that never crashed, given the requests in the order the
	 * crashed one committed them, answers the same and has the same
	 * link loads: nothing was lost or counted twice.
	 */
	ck_assert_int_eq(th_start(&r, "c4p-master",
				  (conf_text(conf, sizeof(conf), NULL), conf)),
			 0);
	client(&rc, &r, "job-k");
	for (int i = 0; i < STREAM_N + 10; i++)
		stream_ask(&rc, i, ref[i]);
	for (int i = 0; i < STREAM_N + 10; i++)
		for (int k = 0; k < STREAM_QPS; k++)
			ck_assert_msg(ref[i][k].sport == got[i][k].sport,
				      "request %d qp %d", i, k);
	ck_assert_int_eq(ctl(&r, links_b, sizeof(links_b), "-o", "json",
			     "links", NULL, NULL),
			 0);
	ck_assert_str_eq(links_a, links_b);
	c4p_client_close(&rc);
	c4p_client_close(&c);
	ck_assert_int_eq(th_stop(&r), 0);
	/* A clean restart too. */
	ck_assert_int_eq(th_stop(&d), 0);
	conf_text(conf, sizeof(conf), dir);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	ck_assert_int_eq(counter(&d, "alloc_qps"),
			 (STREAM_N + 10) * STREAM_QPS);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* Removes a stopped master's state folder. */
static void
store_remove(const char *dir)
{
	static const char *const files[] = {
		"c4p-master.db", "c4p-master.db-wal", "c4p-master.db-shm"};
	char path[256];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	ck_assert_int_eq(rmdir(dir), 0);
}

/* Asks for requests first..first+n-1 of the stream in one batch. */
static void
stream_batch(struct c4p_client *c, int first, int n)
{
	static struct c4p_client_port p[STORE_BATCH * STREAM_QPS];
	struct c4p_client_req r[STORE_BATCH];
	char id[STORE_BATCH][32], s[STORE_BATCH][32], dd[STORE_BATCH][32];

	ck_assert_int_le(n, STORE_BATCH);
	for (int i = 0; i < n; i++)
		stream_req(&r[i], id[i], sizeof(id[i]), s[i], dd[i],
			   sizeof(s[i]), first + i);
	ck_assert_msg(c4p_client_request(c, r, (size_t)n, p, NULL) == 0, "%s",
		      c->err);
}

/*
 * Who commits: lone requests are committed by the loop itself while the
 * writer thread is idle (store_inline_commits), a batch of many requests
 * and the release of a whole job go through the writer, and with
 * sync_full every commit does.  Either way every answered request is
 * back after kill -9, and the release is back after a restart.
 */
START_TEST(test_store_inline_and_writer_commits)
{
	for (int full = 0; full < 2; full++) {
		char dir[] = "/tmp/c4p-inline-XXXXXX", conf[2048];
		struct c4p_client_port p[STREAM_QPS];
		long long commits, inl, writer;
		struct th_daemon d;
		struct c4p_client c;

		ck_assert_ptr_nonnull(th_mkdtemp(dir));
		conf_text(conf, sizeof(conf), dir);
		if (full)
			strncat(conf, "sync_full: true\n",
				sizeof(conf) - strlen(conf) - 1);
		ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
		client(&c, &d, "job-s");
		for (int i = 0; i < STORE_LONE; i++)
			stream_ask(&c, i, p);
		commits = counter(&d, "store_commits");
		inl = counter(&d, "store_inline_commits");
		ck_assert_int_ge(commits, STORE_LONE);
		/* sync_full: an fsync never runs on the loop */
		ck_assert_int_eq(inl, full ? 0LL : commits);

		stream_batch(&c, STORE_LONE, STORE_BATCH);
		writer = counter(&d, "store_commits") -
			 counter(&d, "store_inline_commits");
		ck_assert_int_gt(writer, commits - inl);
		ck_assert_int_eq(th_kill(&d), 0);
		c4p_client_close(&c);

		ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
		ck_assert_int_eq(counter(&d, "alloc_qps"),
				 (STORE_LONE + STORE_BATCH) * STREAM_QPS);
		client(&c, &d, "job-s");
		ck_assert_int_eq(c4p_client_release(&c, NULL),
				 (STORE_LONE + STORE_BATCH) * STREAM_QPS);
		ck_assert_int_eq(counter(&d, "store_commits") -
					 counter(&d, "store_inline_commits"),
				 1);
		c4p_client_close(&c);
		ck_assert_int_eq(th_stop(&d), 0);
		ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
		ck_assert_int_eq(counter(&d, "alloc_qps"), 0);
		ck_assert_int_eq(th_stop(&d), 0);
		store_remove(dir);
	}
}
END_TEST

/*
 * The writer's checkpoint (when the WAL is long) and the loop's own
 * commits use the store's one connection in turn.  A checkpoint the loop
 * asked for used to start while the loop was already committing its next
 * lone request, and SQLite's file went corrupt ("database disk image is
 * malformed") on a 64-core host.  With a WAL of a few frames the writer
 * checkpoints after nearly every commit; every request must be answered
 * and back after kill -9.
 */
struct valve_client {
	const struct th_daemon *d;
	int first, failed;
	char err[640];
};

/* One of the clients: lone requests, one after another (no asserts). */
static void *
valve_client_main(void *arg)
{
	struct valve_client *v = arg;
	struct c4p_client_port p[STREAM_QPS];
	struct c4p_client c;

	if (c4p_client_connect(&c, v->d->tcp, CCL_TOKEN, "job-v",
			       C4__ROLE__ROLE_CCL_CLIENT, TIMEOUT_MS) != 0) {
		v->failed = 1;
		snprintf(v->err, sizeof(v->err), "connect: %s", c.err);
		return NULL;
	}
	for (int i = 0; i < STORE_VALVE_LONE && !v->failed; i++) {
		struct c4p_client_req r;
		char id[32], s[32], dd[32];

		stream_req(&r, id, sizeof(id), s, dd, sizeof(s), v->first + i);
		if (c4p_client_request(&c, &r, 1, p, NULL) != 0) {
			v->failed = 1;
			snprintf(v->err, sizeof(v->err), "%d: %s", v->first + i,
				 c.err);
		}
	}
	c4p_client_close(&c);
	return NULL;
}

START_TEST(test_store_checkpoint_while_loop_commits)
{
	char dir[] = "/tmp/c4p-valve-XXXXXX", conf[2048];
	struct valve_client v[STORE_VALVE_CLIENTS];
	pthread_t t[STORE_VALVE_CLIENTS];
	struct th_daemon d;

	ck_assert_ptr_nonnull(th_mkdtemp(dir));
	conf_text(conf, sizeof(conf), dir);
	ck_assert_int_eq(setenv("C4P_TEST_WAL_MAX_FRAMES", "2", 1), 0);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	/* several clients: the loop has a commit of its own at once */
	for (int k = 0; k < STORE_VALVE_CLIENTS; k++) {
		v[k] = (struct valve_client){&d, k * STORE_VALVE_LONE, 0, ""};
		ck_assert_int_eq(
			pthread_create(&t[k], NULL, valve_client_main, &v[k]),
			0);
	}
	for (int k = 0; k < STORE_VALVE_CLIENTS; k++) {
		ck_assert_int_eq(pthread_join(t[k], NULL), 0);
		ck_assert_msg(!v[k].failed, "client %d: %s", k, v[k].err);
	}
	ck_assert_int_ge(counter(&d, "store_inline_commits"), 1);
	ck_assert_int_eq(th_kill(&d), 0);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	ck_assert_int_eq(counter(&d, "alloc_qps"),
			 STORE_VALVE_CLIENTS * STORE_VALVE_LONE * STREAM_QPS);
	ck_assert_int_eq(th_stop(&d), 0);
	ck_assert_int_eq(unsetenv("C4P_TEST_WAL_MAX_FRAMES"), 0);
	store_remove(dir);
}
END_TEST

/* ProbeResult goes into the catalog and the store; QpLoadUpdate counted. */
START_TEST(test_probe_result_and_qp_load)
{
	static const char want[] =
		"{\"side\":\"left\",\"sport\":60001,\"src_leaf\":\"leaf0\","
		"\"spine\":\"spine3\",\"dst_leaf\":\"leaf2\",\"up_link\":"
		"\"leaf0-spine3\",\"down_link\":\"leaf2-spine3\",\"healthy\":"
		"true,\"origin\":\"probe\"}";
	char dir[] = "/tmp/c4p-probe-XXXXXX", conf[2048], out[65536];
	C4__ProbeResult pr = C4__PROBE_RESULT__INIT;
	C4__ProbePath pp = C4__PROBE_PATH__INIT, *ppv[1] = {&pp};
	C4__QpLoadUpdate lu = C4__QP_LOAD_UPDATE__INIT;
	C4__QpLoad q = C4__QP_LOAD__INIT, *qv[1] = {&q};
	C4__Heartbeat hb = C4__HEARTBEAT__INIT;
	struct th_daemon d;
	struct c4p_client a;
	C4__Envelope *env;

	ck_assert_ptr_nonnull(th_mkdtemp(dir));
	conf_text(conf, sizeof(conf), dir);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	ck_assert_int_eq(c4p_client_connect(&a, d.tcp, CCL_TOKEN, NULL,
					    C4__ROLE__ROLE_AGENT, TIMEOUT_MS),
			 0);
	pr.has_task_id = 1;
	pr.task_id = 1;
	pr.src_ip = (char *)"10.0.0.1";
	pr.dst_ip = (char *)"10.0.5.1";
	pp.has_sport = 1;
	pp.sport = 60001;
	pp.src_leaf = (char *)"leaf0";
	pp.spine = (char *)"spine3";
	pp.dst_leaf = (char *)"leaf2";
	pr.paths = ppv;
	pr.n_paths = 1;
	ck_assert_int_eq(
		cli_send(&a.cli, C4__MSG_TYPE__MSG_PROBE_RESULT, &pr, NULL), 0);
	lu.job_id = (char *)"job-q";
	q.request_id = (char *)"r1";
	q.has_udp_sport = 1;
	q.udp_sport = 60001;
	lu.qps = qv;
	lu.n_qps = 1;
	ck_assert_int_eq(cli_send(&a.cli, C4__MSG_TYPE__MSG_QP_LOAD, &lu, NULL),
			 0);
	/* Frames are handled in order: the echo comes after both. */
	env = cli_call(&a.cli, C4__MSG_TYPE__MSG_HEARTBEAT, &hb);
	ck_assert_msg(env != NULL, "%s", a.cli.err);
	msg_free(env);
	ck_assert_int_eq(counter(&d, "probe_paths"), 1);
	ck_assert_int_eq(counter(&d, "qp_load_qps"), 1);
	ck_assert_int_eq(ctl(&d, out, sizeof(out), "-o", "json", "paths",
			     "host0/nic0", "host5/nic0"),
			 0);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	c4p_client_close(&a);
	ck_assert_int_eq(th_stop(&d), 0);
	/* Stored: back after a restart. */
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	ck_assert_int_eq(ctl(&d, out, sizeof(out), "-o", "json", "paths",
			     "host0/nic0", "host5/nic0"),
			 0);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	ck_assert_int_eq(th_stop(&d), 0);
}
END_TEST

/* Sum of the samples of name whose line contains every one of with. */
static unsigned long long
metric_sum(const char *text, const char *name, const char *with)
{
	unsigned long long sum = 0;
	size_t nl = strlen(name);

	for (const char *l = text; l != NULL && *l != '\0';) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		if (strncmp(line, name, nl) == 0 &&
		    (line[nl] == '{' || line[nl] == ' ') &&
		    (with == NULL || strstr(line, with) != NULL))
			sum += strtoull(strrchr(line, ' ') + 1, NULL, 10);
		l = end ? end + 1 : NULL;
	}
	return sum;
}

/*
 * /metrics over a real HTTP GET: the counters of requests, errors by code,
 * live QPs and reassignments; each cable's health and load (labels leaf,
 * spine, link); the store's commit latency.  /healthz answers ok.
 */
START_TEST(test_metrics_over_http)
{
	struct th_daemon d;
	struct c4p_client a;
	struct c4p_client_req r[2] = {
		{"comm1/ring0", "host0/nic0", "host1/nic0", 1, 16},
		{"comm1/bad", "host0/nic77", "host1/nic0", 1, 2}};
	struct c4p_client_port p[18];
	char conf[2048], out[65536], link[96], needle[256];
	char *body = malloc(4u << 20);
	unsigned long long moved;
	int errs[2];

	ck_assert_ptr_nonnull(body);
	conf_text(conf, sizeof(conf), NULL);
	strncat(conf, "http:\n  listen: 127.0.0.1:0\n",
		sizeof(conf) - strlen(conf) - 1);
	ck_assert_int_eq(th_start(&d, "c4p-master", conf), 0);
	ck_assert_msg(d.http[0] != '\0', "no HTTP address announced");
	client(&a, &d, "job-m");
	ck_assert_int_eq(c4p_client_request(&a, r, 2, p, errs), 1);
	ck_assert_int_eq(errs[1], C4__ERROR_CODE__ERR_INVALID);
	snprintf(link, sizeof(link), "leaf0-%s", p[0].spine);
	ck_assert_int_eq(
		ctl(&d, out, sizeof(out), "link", "set", "down", link, NULL),
		0);
	moved = strtoull(strstr(out, ": ") + 2, NULL, 10);
	ck_assert_uint_gt(moved, 0);

	ck_assert_int_eq(th_http_get(d.http, "GET", "/metrics", body, 4u << 20),
			 200);
	ck_assert_msg(strstr(body, "text/plain; version=0.0.4") != NULL, "%s",
		      body);
#define HAS(s) ck_assert_msg(strstr(body, s) != NULL, "no '%s' in %s", s, body)
	HAS("# TYPE c4p_path_requests_total counter\n");
	HAS("c4p_path_requests_total{daemon=\"c4p-master\"} 2\n");
	HAS("c4p_path_errors_total{daemon=\"c4p-master\"} 1\n");
	HAS("c4p_path_errors_by_code_total{daemon=\"c4p-master\","
	    "code=\"ERR_INVALID\"} 1\n");
	HAS("c4p_path_errors_by_code_total{daemon=\"c4p-master\","
	    "code=\"ERR_AUTH\"} 0\n");
	HAS("# TYPE c4p_qps_live gauge\n");
	HAS("c4p_qps_live{daemon=\"c4p-master\"} 16\n");
	HAS("c4p_requests_live{daemon=\"c4p-master\"} 1\n");
	HAS("c4p_link_changes_total{daemon=\"c4p-master\"} 1\n");
	HAS("c4p_probe_results_total{daemon=\"c4p-master\"} 0\n");
	HAS("c4_srv_conns_active{daemon=\"c4p-master\"}");
	HAS("c4p_store_healthy{daemon=\"c4p-master\"} 1\n");
	HAS("# TYPE c4p_store_commit_seconds histogram\n");
	HAS("c4p_store_commit_seconds_bucket{daemon=\"c4p-master\","
	    "le=\"+Inf\"}");
	snprintf(needle, sizeof(needle),
		 "c4p_reassigned_qps_total{daemon=\"c4p-master\"} %llu\n",
		 moved);
	HAS(needle);
	/* The failed cable: down and empty; every QP on one up cable. */
	snprintf(needle, sizeof(needle),
		 "c4p_link_up{daemon=\"c4p-master\",leaf=\"leaf0\","
		 "spine=\"%s\",link=\"%s\"} 0\n",
		 p[0].spine, link);
	HAS(needle);
	snprintf(needle, sizeof(needle),
		 "c4p_link_load{daemon=\"c4p-master\",leaf=\"leaf0\","
		 "spine=\"%s\",link=\"%s\",direction=\"up\"} 0\n",
		 p[0].spine, link);
	HAS(needle);
#undef HAS
	ck_assert_uint_eq(metric_sum(body, "c4p_link_load", "\"up\""), 16);
	ck_assert_uint_eq(metric_sum(body, "c4p_link_load", "\"down\""), 16);
	/* The example fabric: 8 leaves x 8 spines, one cable each. */
	ck_assert_uint_eq(metric_sum(body, "c4p_link_up", NULL), 63);
	ck_assert_uint_ge(
		metric_sum(body, "c4p_store_commit_seconds_count", NULL), 2);

	ck_assert_int_eq(th_http_get(d.http, "GET", "/healthz", body, 4096),
			 200);
	ck_assert_msg(strstr(body, "\r\n\r\nok\n") != NULL, "%s", body);
	ck_assert_int_eq(th_http_get(d.http, "GET", "/nope", body, 4096), 404);
	ck_assert_int_eq(th_http_get(d.http, "POST", "/metrics", body, 4096),
			 405);
	c4p_client_close(&a);
	ck_assert_int_eq(th_stop(&d), 0);
	free(body);
}
END_TEST

START_TEST(test_bad_topology_positions)
{
	char conf[PATH_MAX], topo[PATH_MAX], out[8192], err[8192], want[8192];
	char expect[16384] = "", *p = want, *at;
	char *argv[] = {(char *)th_bin("daemons/c4p-master/c4p-master"),
			(char *)"-n", (char *)"-f", conf, NULL};
	char dir[] = "/tmp/c4p-badtopo-XXXXXX";
	FILE *fp;
	size_t n;

	ck_assert_ptr_nonnull(th_mkdtemp(dir));
	snprintf(topo, sizeof(topo), "%s",
		 th_data("topology/bad-topology.yaml"));
	snprintf(conf, sizeof(conf), "%s/c4p-master.yaml", dir);
	fp = fopen(conf, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp,
		"server: {listen: 127.0.0.1:0}\n"
		"credentials: [{name: ops, token: " OPS_TOKEN
		", roles: [ctl]}]\n"
		"topology: %s\n"
		"state_dir: %s\n",
		topo, dir);
	fclose(fp);
	ck_assert_int_eq(
		th_run(argv, out, sizeof(out), err, sizeof(err), TIMEOUT_MS),
		1);
	fp = fopen(th_data("topology/bad-topology.err"), "r");
	ck_assert_ptr_nonnull(fp);
	n = fread(want, 1, sizeof(want) - 1, fp);
	want[n] = '\0';
	fclose(fp);
	while ((at = strstr(p, "@FILE@")) != NULL) {
		strncat(expect, p, (size_t)(at - p));
		strcat(expect, topo);
		p = at + 6;
	}
	strcat(expect, p);
	ck_assert_str_eq(err, expect);
	unlink(conf);
	rmdir(dir);
}
END_TEST

static Suite *
c4p_suite(void)
{
	Suite *s = suite_create("c4p");
	TCase *tc = tcase_create("processes");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_alloc_retry_release_and_bad_requests);
	tcase_add_test(tc, test_link_down_reassigns_holder);
	tcase_add_test(tc, test_plane_failure_falls_back);
	tcase_add_test(tc, test_catalog_change_replaces_qp);
	tcase_add_test(tc, test_kill9_restart_recovers);
	tcase_add_test(tc, test_store_inline_and_writer_commits);
	tcase_add_test(tc, test_store_checkpoint_while_loop_commits);
	tcase_add_test(tc, test_probe_result_and_qp_load);
	tcase_add_test(tc, test_bad_topology_positions);
	tcase_add_test(tc, test_metrics_over_http);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(c4p_suite());
	int failed;

	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
