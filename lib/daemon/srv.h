/*
 * srv.h - the server core shared by c4a-agent, c4d-master and c4p-master.
 *
 * One libevent loop accepts connections on TCP or unix listeners and runs
 * each through the same life: the peer's first frame must be a hello within
 * hello_timeout; its credential, role, protocol version and job are checked
 * (auth.h, plus the daemon's own on_hello); then frames are decoded with
 * msg_unpack(), heartbeats and admin status requests are answered here,
 * messages the peer's role may not send are refused, and everything else is
 * handed to the daemon's on_message.  Any malformed, oversized or
 * out-of-role input gets an Error reply, a counter, a log line and a closed
 * connection; all other connections are unaffected.
 */
#ifndef C4_SRV_H
#define C4_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "cfg.h"
#include "msg.h"
#include "tls.h"

#define SRV_CLOSE_LINGER_MS 1000 /* time to flush a final Error */
/*
 * Largest frame read before the hello is accepted: a hello carries a
 * token of at most AUTH_TOKEN_MAX bytes and a few names, so a stranger
 * never makes the server buffer max_frame bytes.
 */
#define SRV_HELLO_FRAME_MAX (64u * 1024)

/* Counters, exported by ADMIN_STATUS and (later) Prometheus. */
#define SRV_COUNTERS(X)                                                        \
	X(conns_accepted, "connections accepted")                              \
	X(conns_refused, "connections refused at the connection limit")        \
	X(hello_ok, "sessions authenticated")                                  \
	X(auth_failed, "hellos refused: credential, role or job")              \
	X(hello_timeout, "connections closed for sending no hello in time")    \
	X(idle_timeout, "sessions closed for silence")                         \
	X(frames_in, "frames received")                                        \
	X(frames_out, "frames sent")                                           \
	X(bytes_in, "bytes received")                                          \
	X(bytes_out, "bytes sent")                                             \
	X(malformed, "frames that were not valid messages")                    \
	X(too_large, "frames above max_frame")                                 \
	X(bad_version, "messages of an unsupported protocol version")          \
	X(out_of_role, "messages the peer's role may not send")                \
	X(bad_state, "messages before hello or a second hello")                \
	X(invalid, "requests refused by the daemon")                           \
	X(outbuf_overflow, "sessions closed at max_output")                    \
	X(heartbeats, "heartbeats answered")                                   \
	X(unauth_refused,                                                      \
	  "connections refused: their source has max_unauthenticated_per_"     \
	  "source waiting")                                                    \
	X(unauth_evicted,                                                      \
	  "connections awaiting hello closed to make room (max_"               \
	  "unauthenticated)")                                                  \
	X(auth_delayed,                                                        \
	  "hellos held back after failed logins from the source")              \
	X(auth_throttled,                                                      \
	  "hellos refused unchecked after failed logins from the source")      \
	X(log_suppressed, "log lines about a source left out (log_interval)")  \
	X(frame_timeout, "sessions closed for not completing a frame in time") \
	X(output_paused, "times a session's input paused for its output")      \
	X(output_stalled, "sessions closed for reading nothing for idle_"      \
			  "timeout")                                           \
	X(output_total_overflow, "sessions closed at max_output_total")        \
	X(revoked, "sessions closed: a reload removed or changed their "       \
		   "credential")                                               \
	X(tls_handshake_failed,                                                \
	  "TLS handshakes that failed: no, bad or untrusted certificate")

struct srv_stats {
#define SRV_STAT_FIELD(n, h) uint64_t n;
	SRV_COUNTERS(SRV_STAT_FIELD)
#undef SRV_STAT_FIELD
	uint64_t conns_active;	/* all connections open now */
	uint64_t conns_unauth;	/* of which awaiting their hello */
	uint64_t output_queued; /* bytes queued for all peers now */
};

/* The "server:" section every daemon's configuration has. */
struct srv_conf {
	char *listen;		 /* TCP host:port (or unix:) for peers */
	int64_t max_frame;	 /* bytes */
	int64_t hello_timeout;	 /* ms */
	int64_t idle_timeout;	 /* ms */
	int64_t heartbeat;	 /* ms, told to peers in the hello reply */
	int64_t max_connections; /* authenticated sessions */
	int64_t max_unauth;	 /* connections awaiting hello, in all */
	int64_t max_unauth_per_source;
	int64_t frame_timeout;	  /* ms to complete a frame once begun */
	int64_t output_low;	  /* bytes: input pauses above it */
	int64_t max_output;	  /* bytes queued for one session */
	int64_t max_output_total; /* bytes queued for all sessions */
	int64_t auth_fail_free;	  /* failed hellos per source before delays */
	int64_t auth_fail_delay;  /* ms, doubling per further failure */
	int64_t auth_fail_delay_max; /* ms */
	int64_t auth_fail_forget;    /* ms */
	int64_t log_interval;	     /* ms between lines about one source */
	struct tls_files tls;	     /* TCP listeners: cert, key, ca */
	bool insecure; /* plaintext TCP on a non-loopback address allowed */
};

extern const struct cfg_schema srv_conf_schema;
/* A field table entry for a srv_conf member at offset off, key "server". */
#define SRV_CONF_FIELD(off)                                                    \
	{                                                                      \
		"server", CFG_SECTION, (off), 0, 0, 0, NULL, &srv_conf_schema, \
			"listener and session limits"                          \
	}

struct srv;
struct srv_conn;

struct srv_ops {
	/*
	 * Extra checks on a hello that passed the credential checks; return
	 * 0 to accept, or -1 with err filled to refuse (fatal).
	 */
	int (*on_hello)(struct srv_conn *c, const C4__Hello *h,
			struct msg_err *err, void *arg);
	/*
	 * A validated message from an authenticated peer.  Return 0; or -1
	 * with err filled: the peer gets an Error for this request (the
	 * session continues).  The handler may call srv_conn_close().
	 */
	int (*on_message)(struct srv_conn *c, const C4__Envelope *env,
			  struct msg_err *err, void *arg);
	/* Called once before a session's memory is released. */
	void (*on_close)(struct srv_conn *c, void *arg);
	/* Adds daemon counters to an ADMIN_STATUS reply (srv_reply_counter). */
	void (*on_status)(struct srv *s, C4__AdminReply *r, void *arg);
};

struct srv_params {
	const char *daemon; /* "c4d-master", shown in hello replies */
	const char *node;   /* host name */
	C4__Role role;	    /* MASTER or AGENT */
	const char *job_id; /* c4d-master: its job, else NULL */
	const struct srv_conf *conf;
	const struct cfg_list *creds; /* struct auth_credential items */
	/*
	 * Decode each frame into one reusable arena instead of malloc'ing
	 * every field: for daemons whose handlers copy what they keep and
	 * never hold a pointer into a message after on_message returns.
	 */
	int arena_decode;
};

/*
 * Creates a server on base with no listener yet.  It copies ops, the
 * daemon, node and job strings of p, and the rest of p; it keeps base,
 * arg and the p->conf and p->creds pointers, which must outlive it (or be
 * replaced with srv_set_conf()).  Returns NULL when out of memory.  Every
 * srv_ and srv_conn_ function runs on base's thread.
 */
struct srv *srv_new(struct event_base *base, const struct srv_params *p,
		    const struct srv_ops *ops, void *arg);
/*
 * Listens on addr ("host:port" or "unix:/path"); mode applies to unix
 * socket files (0: umask).  The bound address is written to bound.
 */
int srv_listen(struct srv *s, const char *addr, unsigned mode, char *bound,
	       size_t boundlen);
/*
 * Points the server at a reloaded configuration: limits and credentials
 * apply to new sessions and new frames at once; listeners stay as they are.
 * A session whose credential the new list no longer has, or has with
 * another token or without the session's role or job, is closed with an
 * ERR_AUTH error (counted in revoked; one log line per reload).  Returns
 * how many sessions it closed.
 */
size_t srv_set_conf(struct srv *s, const struct srv_conf *conf,
		    const struct cfg_list *creds);
/* Closes every connection and listener and frees s. */
void srv_free(struct srv *s);

/*
 * The server's counters, which it owns and keeps updating: the pointer is
 * valid until srv_free().
 */
const struct srv_stats *srv_get_stats(const struct srv *s);
/* Appends one counter to an admin reply (the reply owns the copy). */
int srv_reply_counter(C4__AdminReply *r, const char *name, uint64_t value,
		      const char *help, int gauge);

/* Sends a message on a session; 0, or -1 if the session is closing. */
int srv_send(struct srv_conn *c, C4__MsgType type, void *body,
	     uint64_t reply_to);
/* Sends an Error (fatal: then closes once it is flushed). */
void srv_send_error(struct srv_conn *c, C4__ErrorCode code, int fatal,
		    uint64_t ref_seq, const char *text);
/*
 * Closes the session once its output is flushed (or after a short
 * linger), logging why.  It stops reading at once, but c stays valid
 * until the loop runs again and frees it (calling on_close first for a
 * session whose hello was accepted), so a handler may call it on the
 * session it is serving.  A second call does nothing.
 */
void srv_conn_close(struct srv_conn *c, const char *why);

/*
 * What the peer's accepted hello said: its role, its job id and its node
 * name (NULL when the hello had none).  The strings belong to the session
 * and are freed with it; callers copy what they keep past on_close.
 */
C4__Role srv_conn_role(const struct srv_conn *c);
/* The name of the credential the session logged in with, or NULL. */
const char *srv_conn_cred(const struct srv_conn *c);
const char *srv_conn_job(const struct srv_conn *c);
const char *srv_conn_node(const struct srv_conn *c);
/*
 * The daemon's own pointer for this session, NULL until set.  The server
 * only stores it: the daemon frees what it points to, in on_close at the
 * latest.
 */
void *srv_conn_get_data(const struct srv_conn *c);
void srv_conn_set_data(struct srv_conn *c, void *data);

#endif
