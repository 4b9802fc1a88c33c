/*
 * reply.h - sessions and the messages the c4p-master sends them: answers
 * that wait until the store has committed what they report, in the order
 * they were made, and the path assignment every answer is made of.
 * Used by api.c and admin.c (answers), link.c (PathReassign) and
 * probes.c (probe tasks).
 */
#ifndef C4P_REPLY_H
#define C4P_REPLY_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "msg.h"
#include "path.h"
#include "topo.h"

struct srv_conn;

/* A session's data: outlives the connection while replies are pending. */
struct c4p_sess {
	struct srv_conn *conn; /* NULL once closed */
	uint32_t pending;      /* deferred messages that name this session */
	uint64_t requests;     /* path requests made on it */
	uint32_t host;	       /* an agent's topology host, or TOPO_NONE */
};

/* A message to send once the store has committed seq. */
struct reply {
	struct reply *next;
	struct c4p_sess *sess;
	uint64_t seq;
	uint64_t reply_to;
	C4__MsgType type;
	void *body;	    /* NULL: nothing is sent */
	struct arena arena; /* owns body */
};

/*
 * Sends one message on an open session now; 0, or -1 when it was not
 * sent.  The daemon's is srv_send() on sess->conn; tests capture.
 */
typedef int (*reply_send_fn)(struct c4p_sess *sess, C4__MsgType type,
			     const void *body, uint64_t reply_to, void *arg);

/* The FIFO of messages waiting for commits, and how they go out. */
struct reply_queue {
	struct reply *head, *tail;
	reply_send_fn send;
	void *send_arg;
};

/*
 * A new message of type for sess, answering reply_to (0: none), with its
 * arena ready and no body yet; it counts as a reference to sess until it
 * is sent or dropped.  NULL when out of memory.
 */
struct reply *reply_new(struct c4p_sess *sess, C4__MsgType type,
			uint64_t reply_to);

/*
 * Queues r (taken) to go out once the store has committed seq; seq 0
 * means at once, unless messages already wait, in which case it goes out
 * behind them so that each session sees its answers in order.
 */
void reply_submit(struct reply_queue *q, struct reply *r, uint64_t seq);

/* The store committed up to seq: sends (and frees) what waited for it. */
void reply_committed(struct reply_queue *q, uint64_t seq);

/*
 * Sends body now on sess if its connection is open (through q->send);
 * 0, or -1 when it was not sent.  Reads body only.
 */
int reply_send_now(const struct reply_queue *q, struct c4p_sess *sess,
		   C4__MsgType type, const void *body);

/*
 * Drops every waiting message unsent (the daemon stops; every session is
 * closed), freeing a session whose last reference it held.
 */
void reply_drop_all(struct reply_queue *q);

/*
 * Drops one reference of a message to sess, freeing sess when it was the
 * last and the connection is closed.
 */
void reply_sess_unref(struct c4p_sess *sess);

/*
 * Fills pa for QP index on source port sport, side and path of t (names
 * point into t, which must outlive pa).
 */
void reply_assignment(const struct topo *t, C4__PathAssignment *pa,
		      uint32_t index, uint16_t sport, uint8_t side,
		      const struct path *path);
/*
 * Marks pa as a fallback (the QP sends from its other side, home_side is
 * its own) or not; changes nothing else.
 */
void reply_fallback(C4__PathAssignment *pa, bool fallback, uint8_t home_side);

#endif
