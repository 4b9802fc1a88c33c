/*
 * test_admin.c - operator requests through admin_handle(): links listed
 * with their load, a link set answered once stored (QPs moved), the
 * allocations of a job, the catalog of a NIC pair, and bad requests.
 */
#include "addrplan.h"
#include "admin.h"
#include "tc4p.h"
#include "tmain.h"

static C4__AdminReply *
ask(struct tc4p *x, struct c4p_sess *s, C4__AdminRequest *q, int want)
{
	C4__Envelope env = C4__ENVELOPE__INIT;
	struct msg_err err = {0, ""};
	size_t before = x->nsent;

	env.type = C4__MSG_TYPE__MSG_ADMIN_REQUEST;
	env.seq = 9;
	env.admin_request = q;
	ck_assert_int_eq(admin_handle(&x->p, s, &env, &err), want);
	tc4p_settle(x);
	if (want < 0) {
		ck_assert_uint_eq(x->nsent, before);
		return NULL;
	}
	ck_assert_uint_eq(x->nsent, before + 1);
	ck_assert_int_eq(x->sent[before].type, C4__MSG_TYPE__MSG_ADMIN_REPLY);
	return c4__admin_reply__unpack(NULL, x->sent[before].len,
				       x->sent[before].buf);
}

START_TEST(test_links_set_allocs_paths)
{
	struct tc4p *x = tc4p_new();
	const struct topo *t = x->p.topo;
	struct c4p_sess s;
	C4__AdminRequest q = C4__ADMIN_REQUEST__INIT;
	struct alloc_qp_req qp = {0};
	struct alloc_qp_res res;
	C4__AdminReply *r;
	char name[3 * TOPO_NAME_MAX];

	tc4p_sess_init(&s);
	tc4p_alloc(x, 1, &qp, &res);
	q.has_op = 1;
	q.op = C4__ADMIN_OP__ADMIN_LINKS;
	r = ask(x, &s, &q, 0);
	ck_assert_uint_eq(r->n_links, t->nlinks);
	ck_assert_uint_eq(r->links[res.path.up]->qps_up, 1);
	c4__admin_reply__free_unpacked(r, NULL);
	/* link set: down, one QP moved */
	addrplan_link_name(t, res.path.up, name, sizeof(name));
	q.op = C4__ADMIN_OP__ADMIN_LINK_SET;
	q.link_id = name;
	q.has_link_status = 1;
	q.link_status = C4__LINK_STATUS__LINK_DOWN;
	r = ask(x, &s, &q, 0);
	ck_assert_uint_eq(r->moved, 1);
	ck_assert_uint_eq(r->n_links, 1);
	ck_assert_int_eq(r->links[0]->status, C4__LINK_STATUS__LINK_DOWN);
	c4__admin_reply__free_unpacked(r, NULL);
	q.link_id = "no-such-link";
	ask(x, &s, &q, -1);
	/* allocations of the job */
	q.op = C4__ADMIN_OP__ADMIN_ALLOCS;
	q.job_id = "train";
	r = ask(x, &s, &q, 0);
	ck_assert_uint_eq(r->n_allocs, 1);
	ck_assert_str_eq(r->allocs[0]->request_id, "r");
	ck_assert_str_eq(r->allocs[0]->src_nic, "h0/nic0");
	ck_assert_str_eq(r->allocs[0]->dst_nic, "h2/nic0");
	c4__admin_reply__free_unpacked(r, NULL);
	/* the catalog of a pair, both sides */
	q.op = C4__ADMIN_OP__ADMIN_PATHS;
	q.src = "h0/nic0";
	q.dst = "h2/nic0";
	r = ask(x, &s, &q, 0);
	ck_assert_uint_gt(r->n_paths, 0);
	c4__admin_reply__free_unpacked(r, NULL);
	q.src = "h0/nope";
	ask(x, &s, &q, -1);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-admin", test_links_set_allocs_paths)
