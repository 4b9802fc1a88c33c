/*
 * reply.c - messages to sessions, deferred until the store committed what
 * they report (see reply.h).
 */
#include <stdlib.h>

#include "reply.h"

void
reply_sess_unref(struct c4p_sess *sess)
{
	if (--sess->pending == 0 && sess->conn == NULL)
		free(sess);
}

struct reply *
reply_new(struct c4p_sess *sess, C4__MsgType type, uint64_t reply_to)
{
	struct reply *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	arena_init(&r->arena);
	r->sess = sess;
	r->type = type;
	r->reply_to = reply_to;
	sess->pending++;
	return r;
}

static void
reply_free(struct reply *r)
{
	reply_sess_unref(r->sess);
	arena_free(&r->arena);
	free(r);
}

static void
reply_send(const struct reply_queue *q, struct reply *r)
{
	if (r->sess->conn != NULL && r->body != NULL)
		q->send(r->sess, r->type, r->body, r->reply_to, q->send_arg);
	reply_free(r);
}

int
reply_send_now(const struct reply_queue *q, struct c4p_sess *sess,
	       C4__MsgType type, const void *body)
{
	if (sess == NULL || sess->conn == NULL)
		return -1;
	return q->send(sess, type, body, 0, q->send_arg);
}

void
reply_submit(struct reply_queue *q, struct reply *r, uint64_t seq)
{
	if (seq == 0 && q->head == NULL) {
		reply_send(q, r);
		return;
	}
	/* Behind everything already waiting: the order of answers holds. */
	r->seq = seq != 0 ? seq : q->tail->seq;
	r->next = NULL;
	if (q->tail != NULL)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
}

void
reply_committed(struct reply_queue *q, uint64_t seq)
{
	while (q->head != NULL && q->head->seq <= seq) {
		struct reply *r = q->head;

		q->head = r->next;
		if (q->head == NULL)
			q->tail = NULL;
		reply_send(q, r);
	}
}

void
reply_drop_all(struct reply_queue *q)
{
	while (q->head != NULL) {
		struct reply *r = q->head;

		q->head = r->next;
		reply_free(r);
	}
	q->tail = NULL;
}

static C4__PortSide
reply_side(uint8_t side)
{
	return side == TOPO_LEFT    ? C4__PORT_SIDE__SIDE_LEFT
	       : side == TOPO_RIGHT ? C4__PORT_SIDE__SIDE_RIGHT
				    : C4__PORT_SIDE__SIDE_UNSPECIFIED;
}

void
reply_assignment(const struct topo *t, C4__PathAssignment *pa, uint32_t index,
		 uint16_t sport, uint8_t side, const struct path *path)
{
	uint32_t spine = path_spine(t, path);

	c4__path_assignment__init(pa);
	pa->has_udp_sport = 1;
	pa->udp_sport = sport;
	/* 0 for the direct (same-leaf) path; else (up+1) << 32 | (down+1) */
	pa->has_path_id = 1;
	pa->path_id = path->up == TOPO_NONE
			      ? 0
			      : ((uint64_t)(path->up + 1) << 32) |
					(uint64_t)(path->down + 1);
	pa->src_leaf = t->leaves[t->ports[path->src_port].leaf].name;
	pa->dst_leaf = t->leaves[t->ports[path->dst_port].leaf].name;
	pa->spine = spine == TOPO_NONE ? (char *)"" : t->spines[spine].name;
	pa->has_side = 1;
	pa->side = reply_side(side);
	pa->has_qp_index = 1;
	pa->qp_index = index;
}

void
reply_fallback(C4__PathAssignment *pa, bool fallback, uint8_t home_side)
{
	pa->has_fallback = 1;
	pa->fallback = fallback;
	pa->has_home_side = 1;
	pa->home_side = reply_side(home_side);
}
