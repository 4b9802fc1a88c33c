/*
 * c4client_int.h - the CCL client library's state, shared by its files:
 * c4client.c (the public calls and the queue), batch.c (messages built
 * on the caller's thread) and transport.c (the sender thread and its
 * session with the agent).
 *
 * Locking: one mutex guards the queue, the registrations, the counters and
 * the closing flag.  The caller's threads hold it only to link or unlink
 * queue items and copy counters; every socket call happens on the sender
 * thread without it.  A non-blocking pipe wakes the sender thread.
 */
#ifndef C4_CLIENT_INT_H
#define C4_CLIENT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "c4client.h"
#include "msg.h"
#include "net.h"

#define C4CLIENT_RANKS_MAX    65536u /* ranks of one comm this process owns */
#define C4CLIENT_SILENT_BEATS 3	     /* heartbeats without a word: reconnect */

struct c4client_item {
	struct c4client_item *next;
	uint8_t *frame;
	size_t len;
	uint64_t records; /* summaries inside, for the drop count */
};

struct c4client_reg {
	uint64_t hash;
	uint32_t nranks;
	char *name;
	C4__RankInfo *ranks; /* strings owned */
	size_t n;
	int sent; /* on the current session */
};

struct c4client {
	pthread_t thread;
	pthread_mutex_t mu;
	int wake[2]; /* pipe: [0] polled by the sender thread */
	char *job, *token, *node;
	struct net_addr agent; /* the agent's unix socket */
	size_t limit;

	/* Guarded by mu. */
	struct c4client_item *head, *tail;
	struct c4client_item *ctrl, *ctrl_tail; /* never dropped */
	struct c4client_reg *regs;
	size_t nregs;
	uint64_t pending_dropped; /* records lost, not yet told */
	uint64_t seq, interval;
	int closing;
	uint64_t close_by_ns; /* CLOCK_MONOTONIC; meaningful when closing */
	struct c4client_stats st;

	/* Sender thread only. */
	int fd;
	struct frame_buf in;
	uint32_t hb_ms;
	uint32_t max_frame; /* the agent's, from its hello reply */
	uint64_t sessions;
	unsigned backoff_ms;
	unsigned seed;
};

/*
 * Builds r as one TelemetryBatch frame of c's job and node, numbered with
 * c's next sequence number and (when r has none) interval id, both taken
 * under c->mu, which the caller must not hold.  Returns the frame (the
 * caller frees it) with *len set, or NULL when out of memory.  Reads r
 * only; r's arrays must match their counts.
 */
uint8_t *batch_report(struct c4client *c, const struct c4client_report *r,
		      size_t *len);
/*
 * Builds a CommRegister frame for g (with destroyed set, the message
 * that forgets it) with c's next sequence number; c->mu must be held.
 * Returns the frame (the caller frees it) with *len set, or NULL when
 * out of memory.  Does not change g.
 */
uint8_t *batch_register(struct c4client *c, const struct c4client_reg *g,
			int destroyed, size_t *len);

/*
 * The sender thread (pthread_create's start routine, arg the client):
 * connects to the agent with backoff, says hello, sends registrations,
 * control messages and the queue in order, heartbeats, and when c is
 * closing sends what it can until c->close_by_ns, says goodbye and
 * returns NULL.  Owns c's sender-thread fields; takes c->mu for the rest.
 */
void *transport_run(void *arg);

#endif
