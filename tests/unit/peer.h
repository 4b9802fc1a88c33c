/*
 * peer.h - the far end of a c4 session, played by a unit test: a
 * listening socket on loopback or a unix path, one accepted connection,
 * and frames read and written on it with lib/proto's own packing and
 * validation.  Used by the tests of lib/net's blocking client and of
 * lib/client's sender thread; every wait is bounded by a timeout.
 */
#ifndef C4_TEST_PEER_H
#define C4_TEST_PEER_H

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "net.h"

struct peer {
	int lfd, fd;
	struct frame_buf in;
	char addr[NET_PATH_MAX + 8]; /* the address bound */
};

/*
 * Listens on addr ("127.0.0.1:0" gets a free port); p->addr gets the
 * address bound.  Returns 0, or -1 with nothing open.
 */
static inline int
peer_listen(struct peer *p, const char *addr)
{
	struct net_addr a;
	char err[128];

	memset(p, 0, sizeof(*p));
	p->lfd = p->fd = -1;
	frame_buf_init(&p->in);
	if (net_addr_parse(addr, &a, err, sizeof(err)) < 0)
		return -1;
	p->lfd = net_listen(&a, 4, 0, p->addr, sizeof(p->addr), err,
			    sizeof(err));
	return p->lfd < 0 ? -1 : 0;
}

/* Accepts one connection within timeout_ms; 0, or -1 when none came. */
static inline int
peer_accept(struct peer *p, int timeout_ms)
{
	struct pollfd pfd = {p->lfd, POLLIN, 0};

	if (poll(&pfd, 1, timeout_ms) != 1)
		return -1;
	p->fd = accept(p->lfd, NULL, NULL);
	frame_buf_free(&p->in);
	frame_buf_init(&p->in);
	return p->fd < 0 ? -1 : 0;
}

/*
 * The next message on the connection, validated by msg_unpack() (the
 * caller msg_free()s it); NULL when none came within timeout_ms or the
 * connection ended.
 */
static inline C4__Envelope *
peer_recv(struct peer *p, int timeout_ms)
{
	for (;;) {
		const uint8_t *body;
		uint32_t len;
		struct msg_err err;
		struct pollfd pfd = {p->fd, POLLIN, 0};
		uint8_t chunk[4096];
		ssize_t n;

		if (frame_buf_next(&p->in, FRAME_MAX_LIMIT, &body, &len) ==
		    FRAME_READY)
			return msg_unpack(body, len, &err);
		if (poll(&pfd, 1, timeout_ms) != 1)
			return NULL;
		n = read(p->fd, chunk, sizeof(chunk));
		if (n <= 0 || frame_buf_append(&p->in, chunk, (size_t)n) < 0)
			return NULL;
	}
}

/*
 * Sends body as a message of the given type, answering the message
 * numbered reply_to (0: none).  Returns 0 or -1.  Reads body only.
 */
static inline int
peer_send(struct peer *p, C4__MsgType type, void *body, uint64_t reply_to)
{
	C4__Envelope env;
	uint8_t *buf;
	size_t n;
	int rc;

	msg_init(&env, type, body);
	env.has_reply_to = reply_to != 0;
	env.reply_to = reply_to;
	n = msg_frame_size(&env);
	buf = malloc(n);
	if (buf == NULL)
		return -1;
	msg_pack_frame(&env, buf);
	rc = net_send_all(p->fd, buf, n);
	free(buf);
	return rc;
}

/* Answers the hello numbered seq with a reply naming daemon "peer". */
static inline int
peer_hello_reply(struct peer *p, uint64_t seq)
{
	C4__HelloReply r = C4__HELLO_REPLY__INIT;

	r.daemon = (char *)"peer";
	return peer_send(p, C4__MSG_TYPE__MSG_HELLO_REPLY, &r, seq);
}

/* Closes the accepted connection (the listening socket stays). */
static inline void
peer_hangup(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

/* Closes everything; a unix socket file is left for the caller. */
static inline void
peer_close(struct peer *p)
{
	peer_hangup(p);
	if (p->lfd >= 0)
		close(p->lfd);
	p->lfd = -1;
	frame_buf_free(&p->in);
}

#endif
