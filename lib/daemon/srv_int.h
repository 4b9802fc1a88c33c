/*
 * srv_int.h - what srv.c, srv_conf.c and srv_flow.c share: the server's
 * and a session's state, and the flow control of srv_flow.c (admission
 * of connections awaiting their hello, output accounting and
 * back-pressure, frame deadlines).  Not for daemons: they use srv.h.
 */
#ifndef C4_SRV_INT_H
#define C4_SRV_INT_H

#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <sys/types.h>

#include "arena.h"
#include "guard.h"
#include "net.h"
#include "srv.h"

#define SRV_LISTENERS_MAX 8
#define SRV_PEER_MAX	  (NET_HOST_MAX + 16)

enum srv_conn_state {
	SRV_AWAIT_HELLO,
	SRV_HELD, /* a refused hello's answer held back; input ignored */
	SRV_READY,
	SRV_CLOSING, /* flushing a final Error; input ignored */
};

struct srv_conn {
	TAILQ_ENTRY(srv_conn) entry;
	struct srv *srv;
	struct bufferevent *bev;
	struct event *timer;	/* hello timeout, then close linger */
	struct event *more_ev;	/* continue draining after the per-cb cap */
	struct event *frame_ev; /* frame_timeout of a frame begun */
	TAILQ_ENTRY(srv_conn) uentry; /* in srv.unauth while unauth */
	enum srv_conn_state state;
	int unauth;	      /* counted as awaiting hello (srv and guard) */
	int turn;	      /* the hello's turn came (guard_turn) */
	int paused;	      /* input paused for queued output */
	uint64_t src;	      /* guard_key() of the peer */
	uint64_t secret_hash; /* of the token the session logged in with */
	size_t out_len;	      /* bytes queued, as counted in srv.out_total */
	struct msg_err held;  /* the answer of SRV_HELD */
	C4__Role role;
	char *job;
	char *node;
	char *cred_name;
	char peer[SRV_PEER_MAX];
	uint64_t session_id;
	uint64_t seq;
	void *data;
	SSL *ssl;      /* the TLS session of bev (owned by it), or NULL */
	int tls_up;    /* its handshake completed */
	int has_ucred; /* a unix peer: its uid and gid (SO_PEERCRED) */
	uid_t uid;
	gid_t gid;
};

struct srv {
	struct event_base *base;
	struct srv_params p;
	struct srv_ops ops;
	void *arg;
	struct evconnlistener *listeners[SRV_LISTENERS_MAX];
	char *unix_paths[SRV_LISTENERS_MAX];
	size_t nlisteners;
	TAILQ_HEAD(, srv_conn) conns;
	TAILQ_HEAD(, srv_conn) unauth; /* oldest first */
	/*
	 * Connections admitted in this turn of the event loop (admit_tv, its
	 * cached time): they have not been read yet, so they are not evicted.
	 */
	struct timeval admit_tv;
	uint64_t admit_n;
	int accept_paused; /* listeners off until the next turn */
	struct guard *guard;
	uint64_t nauth; /* authenticated sessions open */
	uint64_t npaused;
	struct arena decode;	     /* with p.arena_decode */
	ProtobufCAllocator pb_alloc; /* bump allocation from decode */
	struct srv_stats stats;
	uint64_t next_session;
	struct timespec started;
	SSL_CTX *tls_ctx; /* of the TCP listeners, from p.conf->tls; or NULL */
};

/*
 * Frees c at once: on_close first for an authenticated session, then its
 * buffers, events and accounting.  c must not be used afterwards.
 */
void srv_conn_free(struct srv_conn *c);

/* Milliseconds of the monotonic clock. */
int64_t srv_flow_now(void);
/* ms as a struct timeval. */
struct timeval srv_flow_tv(int64_t ms);
/* The guard parameters of conf, written to l. */
void srv_flow_limits(const struct srv_conf *conf, struct guard_limits *l);
/*
 * Logs a warning about a peer that has not authenticated, at most one
 * line per source address per log_interval, naming how many were left
 * out since the last one; the rest are counted in log_suppressed.
 */
void srv_flow_warn(struct srv *s, uint64_t src, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* c no longer counts as awaiting its hello (server and guard). */
void srv_flow_unauth_done(struct srv_conn *c);
/*
 * Would n more bytes on top of queued take c past max_output, or all
 * sessions past max_output_total?  Then c is closed (it is the one whose
 * queue grows), counted and logged, and -1 returned; else 0.
 */
int srv_flow_over_cap(struct srv_conn *c, size_t queued, size_t n);
/*
 * Should c stop reading?  When its own queue is above output_low, or it
 * has output queued while all queues together are above half of
 * max_output_total.  Changes nothing.
 */
int srv_flow_full(const struct srv_conn *c);
/* Stops reading c until its output drains (srv_more_cb resumes it). */
void srv_flow_pause(struct srv_conn *c);
/* The output buffer callback of every session (evbuffer_add_cb). */
void srv_flow_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
		     void *arg);
/*
 * Arms c's frame deadline while a frame is incomplete (avail bytes in,
 * handled frames completed in this read), removes it otherwise.
 */
void srv_flow_deadline(struct srv_conn *c, size_t avail, unsigned handled);
/*
 * Admits a new connection from src (peer is its printed address) against
 * the budgets of connections awaiting their hello: 0, or -1 when its
 * source has max_unauthenticated_per_source waiting already.  When all
 * sources together have max_unauthenticated waiting, the oldest waiting
 * connection is closed to make room, so that a peer that sends its hello
 * at once always gets in.
 */
int srv_flow_admit(struct srv *s, uint64_t src, const char *peer);
/* Counts a rejected input by its error code, logs, answers and closes. */
void srv_conn_reject(struct srv_conn *c, const struct msg_err *err);
/* Drains c's complete frames (the bufferevent read callback). */
void srv_conn_read_cb(struct bufferevent *bev, void *arg);
/*
 * A hello was refused with err.  A refused credential (ERR_AUTH) counts
 * against the source (guard_failed); past auth_fail_free failures the
 * answer is held back for the source's delay, so that a guesser learns
 * nothing sooner.
 */
void srv_flow_hello_failed(struct srv_conn *c, const struct msg_err *err);
/*
 * A complete hello waits on c: may it be checked now?  1 when it may; 0
 * when it waits for its source's turn (reading stops until then) or was
 * refused unchecked (auth_throttled).
 */
int srv_flow_hello_turn(struct srv_conn *c);

/*
 * Builds the TLS context of s->p.conf->tls for new sessions (none when
 * it names no certificate); sessions open keep theirs.  Returns 0, or -1
 * with a log line, keeping the previous context.
 */
int srv_tls_reload(struct srv *s);
/*
 * The bufferevent of a connection accepted on fd: a TLS server session
 * when s has a context and family is not AF_UNIX, else a plain socket.
 * It owns fd (and its SSL).  NULL without memory (fd is then the
 * caller's).
 */
struct bufferevent *srv_tls_bev_new(struct srv *s, evutil_socket_t fd,
				    int family);
/*
 * c's TLS handshake failed: counts it in tls_handshake_failed and logs
 * the reason, at most one line per source per log_interval.
 */
void srv_tls_failed(struct srv_conn *c);

#endif
