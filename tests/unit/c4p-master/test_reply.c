/*
 * test_reply.c - deferred messages: sent at once when nothing waits, held
 * until their commit otherwise, in order; dropped unsent on stop; and the
 * path assignment built from a path.
 */
#include <check.h>
#include <stdlib.h>

#include "reply.h"
#include "tfab.h"
#include "tmain.h"

static uint64_t sent[8];
static size_t nsent;

static int
capture(struct c4p_sess *sess, C4__MsgType type, const void *body,
	uint64_t reply_to, void *arg)
{
	(void)sess;
	(void)type;
	(void)body;
	(void)arg;
	sent[nsent++] = reply_to;
	return 0;
}

static char conn;

static struct reply *
msg(struct c4p_sess *s, uint64_t id)
{
	struct reply *r = reply_new(s, C4__MSG_TYPE__MSG_PATH_REPLY, id);

	ck_assert_ptr_nonnull(r);
	r->body = arena_alloc(&r->arena, 8);
	return r;
}

START_TEST(test_order_and_commit)
{
	struct reply_queue q = {NULL, NULL, capture, NULL};
	struct c4p_sess *s = calloc(1, sizeof(*s));

	nsent = 0;
	s->conn = (struct srv_conn *)&conn;
	reply_submit(&q, msg(s, 1), 0); /* nothing waits: at once */
	ck_assert_uint_eq(nsent, 1);
	reply_submit(&q, msg(s, 2), 5);
	reply_submit(&q, msg(s, 3), 0); /* behind 2 */
	reply_submit(&q, msg(s, 4), 7);
	ck_assert_uint_eq(nsent, 1);
	ck_assert_uint_eq(s->pending, 3);
	reply_committed(&q, 4);
	ck_assert_uint_eq(nsent, 1);
	reply_committed(&q, 5);
	ck_assert_uint_eq(nsent, 3);
	ck_assert_uint_eq(sent[1], 2);
	ck_assert_uint_eq(sent[2], 3);
	/* the session closes: what waits is dropped and frees it */
	s->conn = NULL;
	reply_drop_all(&q);
	ck_assert_ptr_null(q.head);
	ck_assert_uint_eq(nsent, 3);
}
END_TEST

START_TEST(test_send_now_and_assignment)
{
	struct reply_queue q = {NULL, NULL, capture, NULL};
	struct c4p_sess s = {0};
	struct topo *t = tfab_new(2, 1, false);
	struct path pa = {tfab_port(t, 0, 0, TOPO_LEFT),
			  tfab_port(t, 2, 0, TOPO_LEFT), 0, 0};
	C4__PathAssignment a;

	nsent = 0;
	ck_assert_int_eq(
		reply_send_now(&q, &s, C4__MSG_TYPE__MSG_PROBE_TASK, NULL),
		-1); /* closed */
	s.conn = (struct srv_conn *)&conn;
	ck_assert_int_eq(
		reply_send_now(&q, &s, C4__MSG_TYPE__MSG_PROBE_TASK, NULL), 0);
	ck_assert_uint_eq(nsent, 1);
	/* leaf0 up cable 0 to spine0, down cable to leaf2 */
	for (uint32_t l = 0; l < t->nlinks; l++)
		if (t->links[l].leaf == 2 && t->links[l].spine == 0)
			pa.down = l;
	reply_assignment(t, &a, 3, 49200, TOPO_LEFT, &pa);
	ck_assert_uint_eq(a.udp_sport, 49200);
	ck_assert_uint_eq(a.qp_index, 3);
	ck_assert_str_eq(a.src_leaf, "leaf0");
	ck_assert_str_eq(a.dst_leaf, "leaf2");
	ck_assert_str_eq(a.spine, "spine0");
	ck_assert_uint_eq(a.path_id, (1ull << 32) | (pa.down + 1));
	ck_assert_int_eq(a.side, C4__PORT_SIDE__SIDE_LEFT);
	topo_free(t);
}
END_TEST

TMAIN("c4p-reply", test_order_and_commit, test_send_now_and_assignment)
