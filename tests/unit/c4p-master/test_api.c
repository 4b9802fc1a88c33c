/*
 * test_api.c - client requests through api_handle(): a path request gets
 * its ports once they are stored, a retry renews the same ports, another
 * job's session is refused, a release frees them; an expired lease lets
 * them go.
 */
#include "api.h"
#include "tc4p.h"
#include "tmain.h"

static C4__PathReply *
tc4p_reply(struct tc4p *x, size_t i)
{
	ck_assert_uint_gt(x->nsent, i);
	ck_assert_int_eq(x->sent[i].type, C4__MSG_TYPE__MSG_PATH_REPLY);
	return c4__path_reply__unpack(NULL, x->sent[i].len, x->sent[i].buf);
}

START_TEST(test_request_renew_release)
{
	struct tc4p *x = tc4p_new();
	struct c4p_sess s;
	struct api_from from = {&s, "train", C4__ROLE__ROLE_CCL_CLIENT};
	C4__PathRequest rq = C4__PATH_REQUEST__INIT;
	C4__PathRelease rl = C4__PATH_RELEASE__INIT;
	C4__Envelope env = C4__ENVELOPE__INIT;
	struct msg_err err = {0, ""};
	C4__PathReply *a, *b, *c;

	tc4p_sess_init(&s);
	rq.job_id = "train";
	rq.request_id = "r1";
	rq.src_nic = "h0/nic0";
	rq.dst_nic = "h2/nic1";
	rq.qp_count = 2;
	env.type = C4__MSG_TYPE__MSG_PATH_REQUEST;
	env.seq = 7;
	env.path_request = &rq;
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), 0);
	ck_assert_uint_eq(x->nsent, 0); /* waits for its commit */
	tc4p_settle(x);
	ck_assert_uint_eq(x->nsent, 1);
	ck_assert_uint_eq(x->sent[0].reply_to, 7);
	a = tc4p_reply(x, 0);
	ck_assert(!a->has_error);
	ck_assert_uint_eq(a->n_paths, 2);
	ck_assert_uint_eq(a->lease_ms, 600000);
	/* the same request again: the same ports, renewed */
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), 0);
	tc4p_settle(x);
	b = tc4p_reply(x, 1);
	ck_assert_uint_eq(b->paths[0]->udp_sport, a->paths[0]->udp_sport);
	ck_assert_uint_eq(b->paths[1]->udp_sport, a->paths[1]->udp_sport);
	/* another job's session may not ask for this one */
	from.job = "other";
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), 0);
	tc4p_settle(x);
	c = tc4p_reply(x, 2);
	ck_assert(c->has_error);
	ck_assert_int_eq(c->error, C4__ERROR_CODE__ERR_AUTH);
	ck_assert_uint_eq(x->p.st.path_errors, 1);
	c4__path_reply__free_unpacked(c, NULL);
	/* released by its own job */
	from.job = "train";
	rl.job_id = "train";
	rl.request_id = "r1";
	env.type = C4__MSG_TYPE__MSG_PATH_RELEASE;
	env.path_release = &rl;
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), 0);
	tc4p_settle(x);
	c = tc4p_reply(x, 3);
	ck_assert_uint_eq(c->released, 2);
	c4__path_reply__free_unpacked(a, NULL);
	c4__path_reply__free_unpacked(b, NULL);
	c4__path_reply__free_unpacked(c, NULL);
	tc4p_free(x);
}
END_TEST

/*
 * An agent session without a job and without a credential that names the
 * job may neither ask for nor release that job's paths (it once could
 * read and release any job's allocations).
 */
START_TEST(test_jobless_agent_refused)
{
	struct tc4p *x = tc4p_new();
	struct c4p_sess s;
	struct api_from from = {&s, NULL, C4__ROLE__ROLE_AGENT};
	C4__PathRequest rq = C4__PATH_REQUEST__INIT;
	C4__PathRelease rl = C4__PATH_RELEASE__INIT;
	C4__Envelope env = C4__ENVELOPE__INIT;
	struct msg_err err = {0, ""};
	C4__PathReply *a;

	tc4p_sess_init(&s);
	rq.job_id = "j";
	rq.request_id = "r";
	rq.src_nic = "h0/nic0";
	rq.dst_nic = "h2/nic1";
	rq.qp_count = 1;
	env.type = C4__MSG_TYPE__MSG_PATH_REQUEST;
	env.path_request = &rq;
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), 0);
	tc4p_settle(x);
	a = tc4p_reply(x, 0);
	ck_assert_int_eq(a->error, C4__ERROR_CODE__ERR_AUTH);
	c4__path_reply__free_unpacked(a, NULL);
	rl.job_id = "j";
	rl.has_all_of_job = 1;
	rl.all_of_job = 1;
	env.type = C4__MSG_TYPE__MSG_PATH_RELEASE;
	env.path_release = &rl;
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), -1);
	ck_assert_int_eq(err.code, C4__ERROR_CODE__ERR_AUTH);
	tc4p_free(x);
}
END_TEST

START_TEST(test_unknown_nic_and_expiry)
{
	struct tc4p *x = tc4p_new();
	struct c4p_sess s;
	struct api_from from = {&s, "j", C4__ROLE__ROLE_CCL_CLIENT};
	C4__PathRequest rq = C4__PATH_REQUEST__INIT;
	C4__Envelope env = C4__ENVELOPE__INIT;
	struct msg_err err = {0, ""};
	struct alloc_stats as;
	C4__PathReply *a;

	tc4p_sess_init(&s);
	rq.job_id = "j";
	rq.request_id = "r";
	rq.src_nic = "h0/nic7";
	rq.dst_nic = "h2/nic1";
	rq.qp_count = 1;
	env.type = C4__MSG_TYPE__MSG_PATH_REQUEST;
	env.path_request = &rq;
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), 0);
	tc4p_settle(x);
	a = tc4p_reply(x, 0);
	ck_assert_int_eq(a->error, C4__ERROR_CODE__ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(a->error_text, "unknown NIC"));
	c4__path_reply__free_unpacked(a, NULL);
	/* a lapsed lease lets the QPs go */
	rq.src_nic = "h0/nic0";
	x->conf.lease = 1000;
	ck_assert_int_eq(api_handle(&x->p, &from, &env, &err), 0);
	tc4p_settle(x);
	alloc_stats(x->p.alloc, &as);
	ck_assert_uint_eq(as.qps, 1);
	sleep(2);
	api_expire(&x->p);
	alloc_stats(x->p.alloc, &as);
	ck_assert_uint_eq(as.qps, 0);
	ck_assert_uint_eq(x->p.st.path_expired, 1);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-api", test_request_renew_release, test_unknown_nic_and_expiry,
      test_jobless_agent_refused)
