/*
 * agent.h - c4a-agent's parts: configuration (main.c), per-job interval
 * aggregation (agg.c, agg_) and the sessions to the job masters
 * (upstream.c, upstream_).
 *
 * Data flow: CCL processes of the node send CommRegister and
 * TelemetryBatch over the unix socket; per job, registrations are merged
 * (union of rank entries) and forwarded at once, batches are merged into
 * one TelemetryBatch per agent interval and handed to the job's upstream,
 * which keeps them in a bounded FIFO while its master is away.
 *
 * With a `c4p:` section the agent also keeps a session to the c4p-master
 * (upstream.c again, without a job) and runs the probe tasks it sends
 * (prober.c, prober_): UDP probes toward the RoCEv2 port with rising TTLs,
 * the ICMP answers read from the sockets' error queues, ProbeResult back.
 */
#ifndef C4_AGENT_H
#define C4_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <event2/event.h>

#include "c4limits.h"
#include "cfg.h"
#include "msg.h"
#include "tls.h"

/* Aggregation limits, per job. */
#define AGG_RECORDS_MAX (1u << 20)   /* summaries held in one interval */
#define AGG_BYTES_MAX	(256u << 20) /* their encoded size, likewise */
#define AGG_RANKS_MAX	65536u	     /* (comm, rank) pairs tracked */
#define AGG_COMMS_MAX	4096u	     /* communicators registered */
/*
 * Bytes of one forwarded batch before it is cut in parts: well below a
 * master's default max_frame (4 MiB), so that one interval of a large
 * all-to-all job still gets through.
 */
#define AGG_PART_TARGET (1u << 20)

/* Upstream sessions. */
#define UPSTREAM_BACKOFF_MIN_MS	  100
#define UPSTREAM_BACKOFF_MAX_MS	  10000
#define UPSTREAM_HELLO_TIMEOUT_MS 5000
#define UPSTREAM_SILENT_BEATS	  3 /* heartbeats unanswered: reconnect */
#define UPSTREAM_OUT_HIGH	  (1u << 20) /* bytes handed to the socket at once */
#define UPSTREAM_READ_MAX                                                      \
	(1u << 20) /* largest frame accepted from a master                     \
		    */

/* One entry of "masters:". */
struct agent_master_conf {
	char *job;
	char *address;
	char *token;
	char *token_file;
	struct cfg_pos pos;
	struct tls_files tls; /* TLS 1.3 to the master */
	bool insecure;	      /* plaintext TCP to a non-loopback address */
	char *secret;	      /* filled by validation; NULL: certificate */
};

/* ---- agg.c ----------------------------------------------------------------
 */

struct agg;

struct agg_stats {
	uint64_t batches;	  /* client batches merged */
	uint64_t records;	  /* summaries in them */
	uint64_t registrations;	  /* CommRegister messages taken */
	uint64_t records_refused; /* over AGG_RECORDS_MAX in an interval */
	uint64_t client_dropped;  /* dropped_records the clients told */
	uint64_t progress_filled; /* Progress entries made for silent ranks */
	uint64_t parts;		  /* batches forwarded (parts of intervals) */
};

/*
 * Creates the aggregator of one job on one host; job and host are
 * copied.  Returns NULL without memory.  agg_free() frees it with every
 * registration and record it holds (NULL is fine).  Like the rest of the
 * agent, an aggregator is used from the event loop's thread only.
 */
struct agg *agg_new(const char *job, const char *host);
void agg_free(struct agg *a);
/*
 * Merges a registration into the job's (comm_hash) entry: the union of rank
 * entries (a later entry for a rank replaces the earlier).  A destroyed
 * registration forgets the comm.  When anything changed, *frame gets the
 * frame to forward (the merged registration, or the destroyed one; the
 * caller frees it).  0 (changed or not), or -1 over a limit or on ENOMEM.
 */
int agg_register(struct agg *a, const C4__CommRegister *m, uint8_t **frame,
		 size_t *len);
/* The number of communicators registered now; changes nothing. */
size_t agg_ncomms(const struct agg *a);
/* The frame of the i-th merged registration (caller frees), or NULL. */
uint8_t *agg_comm_frame(const struct agg *a, size_t i, size_t *len);
/* Ranks known to the job (registered or reported). */
uint32_t agg_nranks(const struct agg *a);
/*
 * Takes a client's batch into the current interval (copied).  -1 if it
 * does not fit AGG_RECORDS_MAX or AGG_BYTES_MAX (its records are counted
 * as dropped).
 */
int agg_add(struct agg *a, const C4__TelemetryBatch *b);
/* One part of an interval's batch: a whole frame. */
struct agg_part {
	uint8_t *frame;
	size_t len;
	uint64_t records; /* summaries in it */
	uint64_t dropped; /* its dropped_records */
};

/*
 * Ends the interval: one TelemetryBatch holding every record taken since
 * the last call, plus a Progress entry with the last known markers for each
 * known rank that sent none, dropped_records = what clients reported lost
 * + extra_dropped + records refused.  A batch above AGG_PART_TARGET bytes
 * is cut into several with the same interval (the first carries
 * dropped_records).  Returns the number of parts in *parts (at least 1;
 * free with agg_parts_free()), or -1 on ENOMEM (the interval's records are
 * then lost and counted for the next one).
 */
ssize_t agg_take(struct agg *a, uint64_t interval_id, uint64_t start_ns,
		 uint32_t interval_ms, uint64_t extra_dropped,
		 struct agg_part **parts);
/* Frees the n parts agg_take() returned, their frames and the array. */
void agg_parts_free(struct agg_part *parts, size_t n);
/* The counters, owned by a and updated in place until agg_free(). */
const struct agg_stats *agg_get_stats(const struct agg *a);

/* ---- upstream.c -----------------------------------------------------------
 */

struct upstream;
struct evdns_base;

struct upstream_stats {
	uint64_t connected; /* 0 or 1 */
	uint64_t sessions;
	uint64_t reconnects;	   /* sessions after the first */
	uint64_t connect_failures; /* attempts that got no session */
	uint64_t frames_forwarded;
	uint64_t bytes_forwarded;
	uint64_t frames_buffered; /* in the FIFO now */
	uint64_t bytes_buffered;
	uint64_t frames_dropped; /* batches dropped from a full FIFO */
	uint64_t records_dropped;
	uint64_t errors; /* Error messages from the master */
};

/* Called each time a session to the master is up (hello answered). */
typedef void (*upstream_ready_fn)(struct upstream *u, void *arg);
/*
 * Called for each message of a ready session other than heartbeats,
 * errors and goodbyes; returns -1 to end the session.
 */
typedef int (*upstream_msg_fn)(struct upstream *u, const C4__Envelope *env,
			       void *arg);

/*
 * Creates the link to one master and starts connecting at once (then
 * reconnecting with backoff for as long as it lives).  The strings of m
 * and node are copied; base, dns and arg are kept and must outlive it.
 * m->job NULL: a session without a job (the c4p-master's); the hello then
 * names no job and the reply's job is not checked.  Returns NULL when
 * m->address does not parse or without memory.  Every up_ function runs
 * on base's thread.
 */
struct upstream *upstream_new(struct event_base *base, struct evdns_base *dns,
			      const struct agent_master_conf *m,
			      const char *node, size_t buffer_limit,
			      upstream_ready_fn ready, void *arg);
/* Sets (or with fn NULL removes) the handler of the master's messages. */
void upstream_set_handler(struct upstream *u, upstream_msg_fn fn, void *arg);
/* Sends a message now if the session is up; 0, or -1 (not sent). */
int upstream_send(struct upstream *u, C4__MsgType type, void *body);
/*
 * Closes the session, drops the queued batches and frees u (NULL is
 * fine); no callback runs.  The event base and DNS base stay.
 */
void upstream_free(struct upstream *u);
/*
 * Queues a batch frame (taking it) in the FIFO of at most buffer_limit
 * bytes, dropping the oldest batches to make room, and sends what the
 * session can take.  carried is the batch's dropped_records: when the
 * batch itself is dropped, that count is told in a later one instead.
 */
void upstream_send_batch(struct upstream *u, uint8_t *frame, size_t len,
			 uint64_t records, uint64_t carried);
/*
 * Sends a frame now if the session is up (registrations: they are all sent
 * again on the next session anyway); otherwise does nothing.
 */
void upstream_send_now(struct upstream *u, const uint8_t *frame, size_t len);
/* Records dropped since the last call, for the next batch's count. */
uint64_t upstream_take_dropped(struct upstream *u);
/*
 * upstream_is_ready(): 1 while a session is up (hello answered), else 0.
 * upstream_address(): the master's address as configured, owned by u.
 * upstream_get_stats(): the counters, owned by u and updated in place.  None
 * changes anything; the pointers are valid until upstream_free().
 */
int upstream_is_ready(const struct upstream *u);
const char *upstream_address(const struct upstream *u);
const struct upstream_stats *upstream_get_stats(const struct upstream *u);

/* ---- prober.c -------------------------------------------------------------
 */

#define PROBER_QUEUE_MAX	 4096 /* tasks waiting to run */
#define PROBER_ACTIVE_MAX	 16   /* tasks running at once */
#define PROBER_TICK_MS		 5    /* token bucket refill period */
#define PROBER_TIMEOUT_MS	 500  /* wait after a task's last probe */
#define PROBER_DEADLINE_SLACK_MS 2000 /* a task's deadline beyond its due */
#define PROBER_DPORT		 4791 /* RoCEv2 */
#define PROBER_MAGIC		 0x43345042u /* "C4PB", first payload word */
#define PROBER_PAYLOAD_LEN	 16 /* magic, task id, sport, ttl, rep */

struct prober;

enum prober_kind {
	PROBER_TTL_EXCEEDED = 1, /* a switch on the way answered */
	PROBER_REACHED = 2,	 /* the destination: port unreachable */
	PROBER_OTHER = 3,	 /* any other ICMP error (counted only) */
};

/* What one message of a probe socket's error queue says. */
struct prober_reply {
	uint64_t task;
	uint16_t sport;
	uint8_t ttl;
	uint8_t rep;
	uint8_t kind;	   /* enum prober_kind */
	uint32_t offender; /* IPv4 of who answered, network order */
};

struct prober_stats {
	uint64_t tasks;		/* tasks received */
	uint64_t tasks_refused; /* malformed, or the queue full */
	uint64_t tasks_done;	/* results sent (or attempted) */
	uint64_t sent;		/* probe packets sent */
	uint64_t send_errors;
	uint64_t replies;	/* matched ICMP answers */
	uint64_t reached;	/* of which from the destination */
	uint64_t timeouts;	/* probes never answered */
	uint64_t stray;		/* answers matching no running probe */
	uint64_t tasks_expired; /* ended by their deadline: reported failed */
	uint64_t rehashed;	/* (port, TTL)s answered from two addresses */
	uint64_t queued;	/* tasks waiting now */
	uint64_t active;	/* tasks running now */
};

/* A finished task: send r (valid during the call only). */
typedef void (*prober_result_fn)(const C4__ProbeResult *r, void *arg);

/*
 * rate: packets per second over all tasks (0 counts as 1). netns: name
 * under /run/netns whose network namespace the probe sockets are created
 * in, or NULL.  done gets each finished task's result; base and arg are
 * kept and must outlive the prober.  Returns NULL (logged) when netns
 * cannot be opened or without memory.  Runs on base's thread.
 */
struct prober *prober_new(struct event_base *base, uint32_t rate,
			  const char *netns, prober_result_fn done, void *arg);
/*
 * Drops every task without calling done, closes the namespace handles
 * and frees pr (NULL is fine).
 */
void prober_free(struct prober *pr);
/* Queues a task (copied); 0, or -1 with err (refused, counted). */
int prober_task(struct prober *pr, const C4__ProbeTask *t, char *err,
		size_t errlen);
/* Drops every queued and running task (the master's session ended). */
void prober_cancel(struct prober *pr);
/* The counters, owned by pr and updated in place until prober_free(). */
const struct prober_stats *prober_get_stats(const struct prober *pr);

/*
 * Decodes one message read with MSG_ERRQUEUE from a probe socket: its
 * IP_RECVERR control message and the payload of the original probe.
 * 0, or -1 when it is no answer to a probe of ours.
 */
int prober_parse(const struct msghdr *msg, const uint8_t *data, size_t len,
		 struct prober_reply *r);
/* The payload of probe (task, sport, ttl, rep): PROBER_PAYLOAD_LEN bytes. */
void prober_payload(uint8_t *buf, uint64_t task, uint16_t sport, uint8_t ttl,
		    uint8_t rep);

#endif
