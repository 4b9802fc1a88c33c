/*
 * test_link.c - a cable set down moves the QPs on it, stores the change,
 * and tells the holder with a PathReassign once it has committed; set up
 * again, it is healthy and stored so.
 */
#include "hold.h"
#include "link.h"
#include "tc4p.h"
#include "tmain.h"

START_TEST(test_down_moves_and_tells)
{
	struct tc4p *x = tc4p_new();
	const struct topo *t = x->p.topo;
	struct c4p_sess s;
	struct alloc_qp_req q = {0};
	struct alloc_qp_res res;
	uint32_t moved, stranded;
	C4__PathReassign *m;
	int64_t seq;

	tc4p_sess_init(&s);
	tc4p_alloc(x, 1, &q, &res);
	ck_assert_int_eq(hold_set(x->p.holders, "1/r", &s), 0);
	seq = link_set_state(&x->p, res.path.up, false, "link test down",
			     &moved, &stranded);
	ck_assert_int_gt(seq, 0);
	ck_assert_uint_eq(moved, 1);
	ck_assert_uint_eq(stranded, 0);
	ck_assert(!t->links[res.path.up].up);
	ck_assert_uint_eq(x->p.st.link_changes, 1);
	ck_assert_uint_eq(x->p.st.reassigned_qps, 1);
	ck_assert_uint_eq(x->nsent, 0); /* after the commit only */
	tc4p_settle(x);
	ck_assert_uint_eq(x->nsent, 1);
	ck_assert_int_eq(x->sent[0].type, C4__MSG_TYPE__MSG_PATH_REASSIGN);
	m = c4__path_reassign__unpack(NULL, x->sent[0].len, x->sent[0].buf);
	ck_assert_str_eq(m->job_id, "train");
	ck_assert_str_eq(m->request_id, "r");
	ck_assert_str_eq(m->reason, "link test down");
	ck_assert_uint_eq(m->n_paths, 1);
	c4__path_reassign__free_unpacked(m, NULL);
	/* up again: healthy, nothing stranded */
	seq = link_set_state(&x->p, res.path.up, true, "link test up", &moved,
			     &stranded);
	ck_assert_int_gt(seq, 0);
	ck_assert(t->links[res.path.up].up);
	ck_assert_uint_eq(stranded, 0);
	tc4p_settle(x);
	tc4p_free(x);
}
END_TEST

START_TEST(test_orphaned_moves_counted)
{
	struct tc4p *x = tc4p_new();
	struct alloc_change ch = {0};

	snprintf(ch.req_id, sizeof(ch.req_id), "1/gone");
	ch.kind = ALLOC_STRANDED;
	ck_assert_uint_gt(link_moves(&x->p, &ch, 1, "test"), 0);
	ck_assert_uint_eq(x->p.st.stranded_qps, 1);
	ck_assert_uint_eq(x->p.st.reassign_orphaned, 1);
	ck_assert_uint_eq(link_moves(&x->p, &ch, 0, "test"), 0);
	tc4p_settle(x);
	ck_assert_uint_eq(x->nsent, 0);
	tc4p_free(x);
}
END_TEST

TMAIN("c4p-link", test_down_moves_and_tells, test_orphaned_moves_counted)
