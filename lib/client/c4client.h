/*
 * c4client.h - the C4 client library for collective-communication libraries.
 *
 * A CCL process (or the NCCL profiler plugin) opens one session to the
 * node's c4a-agent, registers its communicators, and hands over one summary
 * per reporting interval.  The library never blocks its caller:
 * c4client_report() serializes the summary and appends it to a bounded
 * in-memory queue; a sender thread owned by the library connects to the
 * agent's unix socket, says hello, sends the queue in order, heartbeats,
 * and reconnects with exponential backoff (re-registering communicators)
 * when the agent goes away.  When the queue is full the oldest whole
 * summary is dropped and counted; the count travels to the agent in the
 * next summary sent.  Without an agent the library keeps counting drops.
 *
 * Every function is thread-safe.  Durations are given as sketches: the
 * caller adds each measured duration to a c4_sketch (c4_sketch_new(),
 * c4_sketch_add()) and passes a pointer, or NULL when it measured none.
 * A sketch itself is not thread-safe: one owner at a time.
 *
 * This header is self-contained (C11 or C++) and is the whole public
 * interface of libc4client (pkg-config c4client).  The library depends on
 * libc, pthreads, libm and protobuf-c only, and exports only the
 * c4client_* and c4_sketch_* symbols.
 *
 * C4CLIENT_INTERNAL is defined by c4's own build only: it makes the sketch
 * type the library's internal struct sketch (lib/proto/sketch.h), the same
 * object that c4_sketch points at.
 */
#ifndef C4_CLIENT_H
#define C4_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#define C4CLIENT_VERSION_MAJOR 0
#define C4CLIENT_VERSION_MINOR 1
#define C4CLIENT_VERSION_PATCH 0
/* 10000 * major + 100 * minor + patch, for #if comparisons. */
#define C4CLIENT_VERSION                                                       \
	(C4CLIENT_VERSION_MAJOR * 10000 + C4CLIENT_VERSION_MINOR * 100 +       \
	 C4CLIENT_VERSION_PATCH)

#ifdef C4CLIENT_INTERNAL
#include "sketch.h"
typedef struct sketch c4_sketch;
#else
typedef struct c4_sketch c4_sketch;
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define C4CLIENT_QUEUE_DEFAULT	  (4u * 1024 * 1024) /* bytes */
#define C4CLIENT_QUEUE_MIN	  4096u
#define C4CLIENT_BACKOFF_MIN_MS	  100
#define C4CLIENT_BACKOFF_MAX_MS	  5000
#define C4CLIENT_HELLO_TIMEOUT_MS 5000
#define C4CLIENT_IO_TIMEOUT_MS	  5000 /* one send or receive on the socket */
#define C4CLIENT_CLOSE_FLUSH_MS	  2000 /* close: time to send what is queued */

/* Values of the wire enums (c4d.proto), for callers without its headers. */
enum c4client_func {
	C4CLIENT_ALLREDUCE = 1,
	C4CLIENT_ALLGATHER = 2,
	C4CLIENT_REDUCESCATTER = 3,
	C4CLIENT_BROADCAST = 4,
	C4CLIENT_REDUCE = 5,
	C4CLIENT_ALLTOALL = 6,
	C4CLIENT_SENDRECV = 7,
	C4CLIENT_FUNC_OTHER = 15,
};

enum c4client_algo {
	C4CLIENT_ALGO_RING = 1,
	C4CLIENT_ALGO_TREE = 2,
	C4CLIENT_ALGO_COLLNET_DIRECT = 3,
	C4CLIENT_ALGO_COLLNET_CHAIN = 4,
	C4CLIENT_ALGO_NVLS = 5,
	C4CLIENT_ALGO_NVLS_TREE = 6,
	C4CLIENT_ALGO_PAT = 7,
	C4CLIENT_ALGO_OTHER = 15,
};

enum c4client_proto {
	C4CLIENT_PROTO_LL = 1,
	C4CLIENT_PROTO_LL128 = 2,
	C4CLIENT_PROTO_SIMPLE = 3,
};

enum c4client_transport {
	C4CLIENT_NVLINK = 1,
	C4CLIENT_PCIE = 2,
	C4CLIENT_SHM = 3,
	C4CLIENT_NET = 4,
};

struct c4client_opts {
	const char *socket_path; /* the agent's unix socket */
	const char *job_id;	 /* required */
	const char *token;	 /* credential with role ccl-client */
	const char *node_name;	 /* NULL: the host name */
	size_t queue_limit;	 /* bytes of queued summaries; 0: default */
};

/* A rank this process owns (0 or NULL where unknown). */
struct c4client_rank {
	uint32_t rank;
	const char *host; /* NULL: the node name */
	uint32_t gpu;	  /* local device index */
	const char *gpu_uuid;
	const char *nic; /* e.g. "mlx5_0" */
	uint32_t nic_port;
	uint32_t local_rank;
};

struct c4client_comm {
	uint64_t comm_hash; /* identical on every rank of the communicator */
	uint32_t nranks;
	const char *name; /* "dp", "tp", ... or NULL */
	size_t nlocal;
	const struct c4client_rank *ranks;
};

/* Collectives of one kind by one rank in the interval. */
struct c4client_op {
	int func; /* enum c4client_func */
	uint64_t count, bytes;
	int algorithm, protocol; /* 0: unknown */
	uint32_t channels;
	const c4_sketch *kernel_time, *gap_time, *enqueue_time;
};

struct c4client_coll {
	uint64_t comm_hash;
	uint32_t rank;
	size_t nops;
	const struct c4client_op *ops;
	uint64_t first_seq_entered, last_seq_entered;
	uint64_t first_seq_completed, last_seq_completed;
	uint64_t first_start_ns; /* CLOCK_REALTIME; 0: unknown */
	int idle;		 /* no collective in the interval */
};

/* Traffic src_rank -> dst_rank in the interval. */
struct c4client_conn {
	uint64_t comm_hash;
	uint32_t src_rank, dst_rank;
	uint64_t channel_mask; /* bit c: channel c carried data */
	int transport;	       /* enum c4client_transport */
	int algorithm;
	uint64_t bytes, chunks;
	uint32_t pending_chunks; /* posted, not done at the interval's end */
	uint64_t stalled_ns;
	const c4_sketch *transfer_time; /* per chunk */
	/*
	 * One-way timing of ops on this connection: for ntimed ops, the op
	 * ordinal, its chunks here and their mean time (CLOCK_REALTIME ns)
	 * of leaving (sender) or arriving (receiver set: the summary is the
	 * receiving rank's, and carries nothing else).
	 */
	int receiver;
	size_t ntimed;
	const uint64_t *timed_seq, *timed_mean_ns;
	const uint32_t *timed_chunks;
};

struct c4client_wait {
	uint64_t comm_hash;
	uint32_t rank;
	const c4_sketch *recv_wait, *send_peer_wait, *send_gpu_wait,
		*recv_gpu_wait;
	uint64_t steps;
};

struct c4client_progress {
	uint64_t comm_hash;
	uint32_t rank;
	uint64_t last_seq_entered, last_seq_completed;
	uint64_t last_change_ns; /* CLOCK_MONOTONIC of the last change */
	int inflight_func;	 /* 0: nothing in flight */
	size_t nstuck;
	const uint32_t *stuck_peers;
	int completed_at_enqueue; /* last_seq_completed not from the GPU */
};

/* Everything this process has for one interval. */
struct c4client_report {
	uint64_t interval_id;	    /* the caller's counter; 0: the library's */
	uint64_t interval_start_ns; /* CLOCK_REALTIME; 0: now */
	uint32_t interval_ms;
	size_t ncolls, nconns, nwaits, nprogress;
	const struct c4client_coll *colls;
	const struct c4client_conn *conns;
	const struct c4client_wait *waits;
	const struct c4client_progress *progress;
};

struct c4client_stats {
	uint64_t reports_queued;  /* summaries accepted by c4client_report */
	uint64_t reports_sent;	  /* written to the agent */
	uint64_t reports_dropped; /* whole summaries dropped */
	uint64_t records_dropped; /* records in them */
	uint64_t registers_sent;
	uint64_t reconnects; /* sessions opened after the first */
	uint64_t errors;     /* Error messages from the agent */
	uint64_t queue_bytes, queue_reports; /* now */
	int connected;
	char last_error[128]; /* the agent's last Error text, or a reason */
};

struct c4client;

/*
 * Starts a session (the sender thread connects in the background; no agent
 * is not an error).  Returns NULL only on bad options or when the thread
 * or memory cannot be had.  Options are copied.
 */
struct c4client *c4client_open(const struct c4client_opts *o);
/*
 * Registers a communicator with the ranks this process owns; calling it
 * again for the same comm_hash adds ranks (union).  Sent at once and again
 * after every reconnect.  0, or -1 on bad arguments or ENOMEM.
 */
int c4client_register(struct c4client *c, const struct c4client_comm *comm);
/*
 * Tells the agent the communicator is finalized (if a session is up) and
 * forgets it, so reconnects no longer register it.  Returns 0, or -1 when
 * c is NULL, comm_hash is not registered, or memory runs out (the
 * communicator is then kept).
 */
int c4client_deregister(struct c4client *c, uint64_t comm_hash);
/*
 * Queues one interval's summary.  0 when queued (older summaries may have
 * been dropped to make room); -1 when it could not be (larger than the
 * queue limit, bad arguments, ENOMEM): it is then counted as dropped.
 * r and the arrays it points at are encoded during the call, not kept.
 */
int c4client_report(struct c4client *c, const struct c4client_report *r);
/*
 * Copies a consistent snapshot of the counters into *out (taken under the
 * library's lock); changes nothing.  c must not be NULL.
 */
void c4client_stats(struct c4client *c, struct c4client_stats *out);
/*
 * When to close the next interval: the wall-clock time (CLOCK_REALTIME,
 * ns) of the multiple of interval_ms after the one nearest to now_ns, or
 * with first set the first multiple after now_ns.  c4a-agent sends its
 * batch a twentieth of an interval after each multiple and c4d-master
 * analyses a tenth after it, so a summary reported at the multiple is
 * analysed within the same interval instead of one to three later.
 */
uint64_t c4client_next_boundary(uint64_t now_ns, uint32_t interval_ms,
				int first);
/*
 * Sends what is queued (for at most C4CLIENT_CLOSE_FLUSH_MS if the agent
 * is connected), says goodbye, stops the thread and frees everything.
 */
void c4client_close(struct c4client *c);

/* Sketches: log-bucketed duration histograms (relative error bounded). */
#define C4_SKETCH_ACCURACY_DEFAULT 10000u /* ppm: 1% relative error */
#define C4_SKETCH_ACCURACY_MIN	   100u
#define C4_SKETCH_ACCURACY_MAX	   500000u

/*
 * A new empty sketch of the given accuracy in ppm (0: the default); the
 * caller frees it with c4_sketch_free().  NULL when the accuracy is out
 * of C4_SKETCH_ACCURACY_MIN..MAX or memory runs out.
 */
c4_sketch *c4_sketch_new(uint32_t accuracy_ppm);
/* Frees s and its buckets; NULL is ignored. */
void c4_sketch_free(c4_sketch *s);
/* Empties s, keeping its accuracy and memory (for the next interval). */
void c4_sketch_reset(c4_sketch *s);
/* Adds one duration (ns).  0, or -1 on allocation failure (s unchanged). */
int c4_sketch_add(c4_sketch *s, uint64_t ns);
/* Adds n samples of ns.  0, or -1 on allocation failure. */
int c4_sketch_add_n(c4_sketch *s, uint64_t ns, uint64_t n);
/*
 * Adds every sample of src to dst; src is not changed.  -1 when their
 * accuracies differ or memory runs out (dst unchanged).
 */
int c4_sketch_merge(c4_sketch *dst, const c4_sketch *src);
/* The q-quantile (0 <= q <= 1) in ns; 0 for an empty sketch. */
double c4_sketch_quantile(const c4_sketch *s, double q);
/* Samples added since the last reset. */
uint64_t c4_sketch_count(const c4_sketch *s);

#ifdef __cplusplus
}
#endif

#endif
