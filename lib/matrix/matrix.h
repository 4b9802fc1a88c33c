/*
 * matrix.h: the C4D detection engine.
 *
 * The engine takes per-interval summaries of what every rank of a job did
 * (collectives, connections, waits, progress markers) as plain C structs and
 * returns events: slow connections, slow transmit or receive sides, slow
 * ranks, hangs and lost nodes. It is independent of the wire format; the
 * c4d-master fills these structs from what the agents send.
 *
 * Everything is sparse: state is kept per communicator member, per device,
 * per NIC port and per connection that actually carried traffic, never per
 * pair of ranks. All durations are microseconds measured on one host; the
 * engine never compares timestamps taken on different hosts.
 *
 * The library never prints and never exits. It is not thread-safe: one
 * engine per job, driven by one thread.
 */
#ifndef C4_MATRIX_H
#define C4_MATRIX_H

#include <stddef.h>
#include <stdint.h>

/* ---- limits ------------------------------------------------------------ */
#define MATRIX_MAX_RANKS    (1u << 19) /* ranks per communicator (19-bit key) */
#define MATRIX_MAX_COMMS    (1u << 23) /* communicators per job (23-bit key) */
#define MATRIX_MAX_SUSPECTS 4	       /* suspects carried by one event */
#define MATRIX_MAX_CELLS    8	 /* triggering cells carried by one event */
#define MATRIX_HIST_MAX	    16	 /* longest persistence window (n) */
#define MATRIX_CLS_USABLE   3	 /* fewest cells whose median means anything */
#define MATRIX_CLS_MIN	    2	 /* fewest scored: a pair, on own history  */
#define MATRIX_STAT_SAMPLE  2048 /* class statistics from about this many */
#define MATRIX_INV_MAX	    64	 /* longest running-mean start of a baseline */
#define MATRIX_VAR_PRIOR                                                       \
	8.0f		    /* weight of the class spread in a cell's noise    \
			     */
#define MATRIX_GAP_QMIN 20  /* gap samples for quantiles as its location */
#define MATRIX_WSUM_MIN 100 /* samples before p99 caps a sum (wsum) */
#define MATRIX_MEM_HDR	16u /* bytes before each counted allocation */

/* ---- default parameters (see docs/detection.md) ------------------------ */
#define MATRIX_DEF_PERSIST_K	  2   /* hot in k ...                      */
#define MATRIX_DEF_PERSIST_N	  3   /* ... of the last n intervals       */
#define MATRIX_DEF_RESOLVE_N	  6   /* clean intervals before resolution */
#define MATRIX_DEF_WEAK_K	  3   /* weak evidence: hot in k ...       */
#define MATRIX_DEF_WEAK_N	  4   /* ... of the last n intervals       */
#define MATRIX_DEF_Z_STRONG	  5.0 /* z at which evidence is strong     */
#define MATRIX_DEF_CUSUM_K	  2.0 /* CUSUM drift: z above this accumulates */
#define MATRIX_DEF_CUSUM_H	  6.0 /* accumulated z that is strong evidence */
#define MATRIX_DEF_MIN_SLOWDOWN	  1.05 /* least slowdown that is an anomaly */
#define MATRIX_DEF_COLD_SLOWDOWN  1.40 /* same, before a baseline exists    */
#define MATRIX_DEF_Z_MIN	  4.0  /* least robust z of a hot cell      */
#define MATRIX_DEF_COLD_Z_MIN	  6.0  /* same, before a baseline exists    */
#define MATRIX_DEF_SIGMA_FLOOR	  0.01 /* least spread (log units)          */
#define MATRIX_DEF_BASE_ALPHA	  0.1  /* EWMA weight of a new clean sample */
#define MATRIX_DEF_WARM_INTERVALS 4    /* clean samples before warm         */
#define MATRIX_DEF_MIN_CHUNKS	  8    /* chunks for a usable cell sample   */
#define MATRIX_DEF_MIN_CLASS	  128  /* cells for a class of its own      */
#define MATRIX_DEF_MIN_GROUP	  4    /* members for a rank comparison     */
#define MATRIX_DEF_ROW_MIN_HOT	  2    /* hot cells for a hot row/column    */
#define MATRIX_DEF_ROW_FRAC	  0.6  /* hot fraction for a hot row/column */
#define MATRIX_DEF_COLD_FRAC	  0.5  /* below this a row/column is clean  */
#define MATRIX_DEF_ELEV_FRAC	  0.75 /* elevated: this share of min_slowdown */
#define MATRIX_DEF_HANG_TIMEOUT	  2    /* intervals without completion      */
#define MATRIX_DEF_NODE_TIMEOUT	  2    /* intervals without any data        */
#define MATRIX_DEF_LINK_GRACE	  3    /* ... more while its session is open */
#define MATRIX_DEF_UPDATE_DELTA	  0.10	/* slowdown change worth an update   */
#define MATRIX_DEF_STALL_TIMEOUT  3	/* still intervals of a job stall    */
#define MATRIX_DEF_STALL_FRAC	  0.5	/* share of the job: stall, quorum   */
#define MATRIX_DEF_RESOLVE_MAX	  12	/* most clean intervals to resolve   */
#define MATRIX_DEF_HOST_MIN_DEVS  2	/* devices of one host: host event   */
#define MATRIX_DEF_STORM_FRAC	  0.25	/* share of hosts blamed: a storm    */
#define MATRIX_DEF_STORM_MIN	  3	/* ... and at least this many hosts  */
#define MATRIX_DEF_STORM_WINDOW	  3	/* intervals a blame counts for      */
#define MATRIX_DEF_ISOLATE_CONF	  0.9	/* least confidence for isolation    */
#define MATRIX_DEF_ISOLATE_SLOW	  1.5	/* least slowdown for isolation      */
#define MATRIX_DEF_CREEP_MAX	  0.002 /* baseline creep per interval (log) */
#define MATRIX_DEF_TAIL_MIN	  2.0	/* least tail (p90/p50) growth      */
#define MATRIX_DEF_BP_FRAC	  0.75	/* neighbour share of extra time     */
#define MATRIX_DEF_TAIL_RUN	  3	/* tail grown in this many in a row  */
#define MATRIX_DEF_FLAP_K	  3	/* intermittent: strong in k ...     */
#define MATRIX_DEF_FLAP_N	  7	/* ... of the last n intervals       */
#define MATRIX_DEF_PAIR_MAX	  1e-4	/* chance pairs per interval: fast   */
#define MATRIX_DEF_SPIKE_DECAY	  0.95	/* weight of the spike rate's past   */

/* ---- enumerations ------------------------------------------------------ */
enum matrix_transport {
	MATRIX_TR_NVLINK = 0, /* intra-host */
	MATRIX_TR_PCIE,	      /* intra-host */
	MATRIX_TR_SHM,	      /* intra-host */
	MATRIX_TR_NET,	      /* inter-host: IB/RoCE through a NIC port */
	MATRIX_TR_COUNT
};

enum matrix_algo {
	MATRIX_ALGO_RING = 0,
	MATRIX_ALGO_TREE,
	MATRIX_ALGO_P2P, /* send/recv, all-to-all */
	MATRIX_ALGO_OTHER,
	MATRIX_ALGO_COUNT
};

enum matrix_kind {
	MATRIX_EV_COMM_SLOW_LINK = 0, /* one connection (cable, port, path) */
	MATRIX_EV_COMM_SLOW_TX,	      /* a source's transmit side (row)     */
	MATRIX_EV_COMM_SLOW_RX,	      /* a destination's receive side (col) */
	MATRIX_EV_COMM_SLOW_AMBIG,    /* pattern cannot separate tx/link/rx */
	MATRIX_EV_NONCOMM_SLOW,	      /* a rank late to its collectives     */
	MATRIX_EV_COMM_HANG,	      /* all entered op k, connections stuck */
	MATRIX_EV_NONCOMM_HANG,	      /* ranks never entered op k           */
	MATRIX_EV_NODE_LOST,	      /* no data from a host                */
	MATRIX_EV_HOST_SLOW,	      /* several devices of one host slow   */
	MATRIX_EV_JOB_STALL, /* job-wide stall or storm: no isolation */
	MATRIX_EV_COUNT
};

/*
 * The smallest fault domain that explains an event's evidence.  Concurrent
 * anomalies whose suspects share a larger domain (every GPU or NIC of one
 * host) are reported once, as that domain.
 */
enum matrix_domain {
	MATRIX_DOM_LINK = 0, /* one connection: cable, path or port pair */
	MATRIX_DOM_NIC_PORT, /* one port of a NIC                         */
	MATRIX_DOM_NIC,	     /* a whole NIC                               */
	MATRIX_DOM_GPU,	     /* one GPU (its process)                     */
	MATRIX_DOM_HOST,     /* a whole host                              */
	MATRIX_DOM_JOB,	     /* the job itself: stall, storm, no culprit  */
	MATRIX_DOM_COUNT
};

/* What kind of evidence opened an event. */
enum matrix_basis {
	MATRIX_BASIS_MEDIAN = 0, /* per-connection transfer-time medians */
	MATRIX_BASIS_TAIL,	 /* tail quantiles of transfer times      */
	MATRIX_BASIS_KERNEL,	 /* kernel times of a rank                */
	MATRIX_BASIS_WAIT,	 /* gaps and waits: who waits for whom    */
	MATRIX_BASIS_PROGRESS,	 /* progress markers (hangs, stalls)      */
	MATRIX_BASIS_HEARTBEAT,	 /* no reports at all                     */
	MATRIX_BASIS_COUNT
};

enum matrix_state { MATRIX_ST_OPEN = 0, MATRIX_ST_UPDATED, MATRIX_ST_RESOLVED };

enum matrix_role {
	MATRIX_ROLE_TX = 0, /* transmit side of a NIC port or GPU  */
	MATRIX_ROLE_RX,	    /* receive side of a NIC port or GPU   */
	MATRIX_ROLE_LINK,   /* the path between two endpoints      */
	MATRIX_ROLE_RANK,   /* the process / GPU itself            */
	MATRIX_ROLE_HOST    /* the whole host                      */
};

/*
 * What the job-steering service should do.  Only a high-confidence event
 * on a single domain recommends isolation; everything else is observe,
 * check_link or check_job.
 */
enum matrix_action {
	MATRIX_ACT_OBSERVE = 0,	 /* keep watching: too weak or ambiguous   */
	MATRIX_ACT_ISOLATE_HOST, /* take isolate_host out, restart         */
	MATRIX_ACT_ISOLATE_NIC,	 /* take the suspect's NIC out of service  */
	MATRIX_ACT_CHECK_LINK,	 /* inspect the path between the two ends  */
	MATRIX_ACT_CHECK_JOB,	 /* the job itself: stall, storm           */
	MATRIX_ACT_COUNT
};

/* ---- input ------------------------------------------------------------- */

/* Where a rank runs. nic/port name the NIC port its network traffic uses. */
struct matrix_rank_loc {
	uint32_t host;
	uint16_t gpu;
	uint16_t nic;
	uint8_t port;
};

/*
 * Summary of one duration distribution over an interval, in microseconds.
 * Quantiles are those of the agent's sketch; count == 0 means no samples.
 */
struct matrix_stats {
	uint64_t count;
	double sum;
	/*
	 * sum with each sample above p99 counted as p99, from MATRIX_WSUM_MIN
	 * samples on (0: not given, use sum): robust to the odd pause of
	 * milliseconds when few samples are taken
	 */
	double wsum;
	double min;
	double max;
	double p50;
	double p90;
	double p99;
};

/*
 * Per rank and communicator, per interval. Sent even when the rank ran no
 * collective in the interval: the progress markers double as a heartbeat.
 * seq_enter/seq_done are cumulative (last op sequence number entered and
 * completed, 0 = none yet). gap is the local time between the end of the
 * rank's previous collective (on any communicator) and the start of this
 * one, i.e. its own compute and data loading. t_first_ns is a host clock
 * reading kept for the record; the engine does not trust it.
 */
struct matrix_coll {
	uint64_t comm;
	uint32_t rank;
	uint8_t op;
	uint8_t algo;
	uint8_t proto;
	uint32_t nops;
	uint64_t bytes;
	struct matrix_stats kernel;
	struct matrix_stats gap;
	uint64_t seq_enter_first;
	uint64_t seq_enter;
	uint64_t seq_done_first;
	uint64_t seq_done;
	int64_t t_first_ns;
	uint8_t done_at_enqueue; /* seq_done read at enqueue, not the GPU */
	uint8_t carried;	 /* markers repeated by the agent (silent) */
	uint8_t stuck; /* the rank has ops open to a peer, nothing moving */
};

/*
 * Per directed connection (src rank -> dst rank of a communicator, one
 * algorithm's connection over a set of channels), per interval. xfer holds
 * the per-chunk transfer time (post to completion at the sender). pending is
 * the number of chunks posted but not completed at the end of the interval;
 * with bytes == 0 it marks a connection that stopped moving.
 */
struct matrix_conn {
	uint64_t comm;
	uint32_t src;
	uint32_t dst;
	uint64_t channels;
	uint8_t transport;
	uint8_t algo;
	uint64_t bytes;
	uint64_t chunks;
	uint32_t pending;
	struct matrix_stats xfer;
};

/* Per rank and communicator, per interval: proxy wait totals (us). */
struct matrix_wait {
	uint64_t comm;
	uint32_t rank;
	uint64_t nsteps;
	double recv_wait_us;
	double send_peer_wait_us;
	double send_gpu_wait_us;
};

/*
 * One reporting interval. hosts lists the hosts heard from (agent
 * heartbeats); when it is NULL the engine counts a host as heard from when
 * any summary names one of its ranks. linked (or NULL) lists hosts whose
 * agent's session is still open: unheard, such a host is late (a starved
 * or stopped agent) for link_grace intervals more before it is lost.
 */
struct matrix_input {
	uint64_t interval;
	const struct matrix_coll *coll;
	size_t ncoll;
	const struct matrix_conn *conn;
	size_t nconn;
	const struct matrix_wait *wait;
	size_t nwait;
	const uint32_t *hosts;
	size_t nhosts;
	const uint32_t *linked;
	size_t nlinked;
};

/* ---- output ------------------------------------------------------------ */

struct matrix_suspect {
	uint8_t role;	    /* enum matrix_role */
	uint8_t transport;  /* enum matrix_transport for tx/rx/link */
	uint64_t comm;	    /* communicator the rank numbers refer to */
	uint32_t rank;	    /* rank in comm (tx side for a link) */
	uint32_t peer_rank; /* rx side rank of a link, else = rank */
	uint32_t host;
	uint16_t gpu;
	uint16_t nic;
	uint8_t port;
	uint32_t peer_host; /* rx side of a link, else = host */
	uint16_t peer_gpu;
	uint16_t peer_nic;
	uint8_t peer_port;
};

struct matrix_cell {
	uint64_t comm;
	uint32_t src;
	uint32_t dst;
	uint8_t algo;
	float ratio; /* time per byte over this cell's own baseline */
	float z;     /* robust z against its class */
};

/*
 * The evidence that opened (or last updated) an event, so an operator and a
 * controller can judge it without the engine's state.
 */
struct matrix_evidence {
	uint8_t basis;	       /* enum matrix_basis */
	uint8_t hot_intervals; /* intervals with evidence ...               */
	uint8_t window;	       /* ... among this many last ones             */
	float z_open;	       /* score when the event opened               */
	float slowdown_open;   /* slowdown when the event opened            */
	uint64_t gpus;	       /* host domain: bit g for GPU g with evidence */
	uint32_t nmembers;     /* member anomalies folded into this event */
	uint32_t hosts_blamed; /* job domain: hosts that would be blamed */
	/*
	 * 1 when the evidence is a small slowdown accumulated over intervals
	 * (per-connection CUSUM of z reaching cusum_h) rather than a score
	 * of z_min in single intervals: score is then below z_min.
	 */
	uint8_t accumulated;
};

/*
 * An event. id is stable for the life of the anomaly (a hash of its kind
 * and culprit), so the daemon can store its lifecycle and drop duplicates:
 * one OPEN, zero or more UPDATED, one RESOLVED per id and episode.
 */
struct matrix_event {
	uint64_t id;
	uint8_t kind;  /* enum matrix_kind */
	uint8_t state; /* enum matrix_state */
	uint8_t ambiguous;
	uint8_t action; /* enum matrix_action */
	uint8_t domain; /* enum matrix_domain */
	uint64_t comm;	/* communicator of the evidence (first seen) */
	uint8_t nsuspects;
	struct matrix_suspect
		suspects[MATRIX_MAX_SUSPECTS]; /* most likely first */
	uint8_t ncells;
	uint32_t ncells_total; /* triggering cells, of which ncells kept */
	struct matrix_cell cells[MATRIX_MAX_CELLS];
	double slowdown;   /* typical ratio over baseline (1.0 for hangs) */
	double score;	   /* strongest robust z, or intervals stalled */
	double confidence; /* 0..1 */
	uint64_t hang_seq; /* op sequence a hang is stuck at */
	uint32_t isolate_host;
	uint64_t first_interval;
	uint64_t last_interval; /* last interval with evidence */
	struct matrix_evidence evidence;
};

/* ---- parameters -------------------------------------------------------- */
struct matrix_params {
	unsigned persist_k; /* strong evidence */
	unsigned persist_n;
	unsigned weak_k; /* weak evidence (z_min <= z < z_strong) */
	unsigned weak_n;
	double z_strong;
	double cusum_k; /* per-cell CUSUM of z: S = max(0, S + min(z, z_strong)
			   - k) */
	double cusum_h; /* S >= h (and r >= min_slowdown now) is strong evidence
			 */
	unsigned resolve_n;
	double min_slowdown;
	double cold_slowdown;
	double z_min;
	double cold_z_min;
	double sigma_floor;
	double base_alpha;
	unsigned warm_intervals;
	unsigned min_chunks;
	unsigned min_class;
	unsigned min_group;
	unsigned row_min_hot;
	double row_frac;
	double cold_frac;
	double elev_frac; /* a link counts for a side from elev_frac x log(min)
			   */
	unsigned hang_timeout; /* intervals */
	unsigned node_timeout; /* intervals */
	double update_delta;
	unsigned stall_timeout; /* intervals the job stands still: a stall */
	double stall_frac;	/* share of devices for a stall, of hosts for a
				   heard interval */
	/*
	 * An open event resolves after max(resolve_n, twice the longest
	 * clean run seen inside it) clean intervals, at most resolve_max: an
	 * intermittent fault stays one event.
	 */
	unsigned resolve_max;
	unsigned host_min_devs;	  /* devices of one host slow: one host event */
	double storm_frac;	  /* more than this share of the hosts ...   */
	unsigned storm_min_hosts; /* ... and at least this many blamed ...  */
	unsigned storm_window;	  /* ... within this many intervals: storm */
	double isolate_conf;	  /* least confidence for an isolation      */
	double isolate_slowdown;  /* least slowdown for isolating (slow)    */
	/*
	 * A warm cell above min_slowdown but not hot, with no CUSUM evidence,
	 * moves its baseline by at most creep_max (log units) per interval
	 * towards its sample: slow drift is followed, a step is not.
	 */
	double creep_max;
	/* tail evidence: p90/p50 grown by this factor over its baseline */
	double tail_min;
	/*
	 * back-pressure: a hot link whose extra time (slowdown - 1) is at
	 * most bp_frac of a hotter link's that ends at the device it starts
	 * from, or starts at the device it ends at, is explained by that
	 * link and opens nothing
	 */
	double bp_frac;
	/*
	 * samples in a row whose tail grew by tail_min before it is
	 * evidence: a fault-free heavy tail reaches p90 now and then, a
	 * fault keeps it there
	 */
	unsigned tail_run;
	/*
	 * intermittent evidence: strong in flap_k of the last flap_n
	 * intervals also opens (a fault on one interval in three never
	 * shows twice in persist_n = 3)
	 */
	unsigned flap_k;
	unsigned flap_n;
	/*
	 * two samples in a row, slowed alike, open a connection or rank
	 * event (instead of three) while the job's rate q of one-interval
	 * spikes (decayed by spike_decay per interval) makes a chance pair
	 * unlikely: q x q x samples per interval at most pair_max (0:
	 * never)
	 */
	double pair_max;
	double spike_decay;
	/*
	 * intervals a host whose agent session is still open (matrix_input
	 * linked) may stay unheard beyond node_timeout before it is lost
	 */
	unsigned link_grace;
};

struct matrix;

/* Fills every field of *p with the MATRIX_DEF_ defaults above. */
void matrix_params_default(struct matrix_params *p);
/*
 * Creates an engine with a copy of the parameters p (NULL: the
 * defaults).  Returns NULL when p is invalid (a window longer than
 * MATRIX_HIST_MAX, k > n, thresholds out of range) or memory runs out.
 * The caller frees it with matrix_free().
 */
struct matrix *matrix_new(const struct matrix_params *p);
/*
 * Frees the engine and everything it holds, including the events
 * matrix_analyze() returned; NULL is fine.
 */
void matrix_free(struct matrix *m);
/*
 * Registers communicator comm with nranks members, rank r placed at
 * map[r]; map is copied, not kept.  Registering a known comm again with
 * the same size changes nothing, except that a retired one is judged
 * afresh.  Returns 0, or -1 when m or map is NULL, nranks is 0 or above
 * MATRIX_MAX_RANKS, a known comm has another size, the engine is full or
 * memory runs out; on -1 no communicator is added (hosts and devices met
 * on the way may stay registered).
 */
int matrix_comm_add(struct matrix *m, uint64_t comm, uint32_t nranks,
		    const struct matrix_rank_loc *map);
/*
 * Retires communicator comm: the job destroyed it, so its ranks stop
 * reporting on purpose.  From the next interval it is neither analysed
 * nor judged for hangs, and a host whose every rank belongs to retired
 * communicators is no longer expected to report.  Events already open
 * stay as they are.  Returns 0 (also when already retired), or -1 when
 * comm is unknown.
 */
int matrix_comm_retire(struct matrix *m, uint64_t comm);
/*
 * Analyses one interval; in->interval must be greater than the last
 * one's.  in is read during the call, never kept.  On success *ev points
 * at the events emitted for this interval, owned by the engine and valid
 * until the next call or matrix_free(), and *nev holds their number.
 * Summaries naming an unknown communicator or a rank out of range are
 * skipped.  Returns 0, or -1 on bad arguments (NULL, an interval not
 * after the last: nothing changes) or memory exhaustion (*ev NULL, *nev
 * 0; the interval counts as analysed and the engine stays usable).
 */
int matrix_analyze(struct matrix *m, const struct matrix_input *in,
		   const struct matrix_event **ev, size_t *nev);
/*
 * Calls fn(e, arg) for every event open now (OPEN or UPDATED, not yet
 * RESOLVED), in no particular order; e is valid during the call only and
 * its last_interval is the last interval with evidence.  Lets the daemon
 * keep last_seen current without the engine emitting an update every
 * interval.  Changes nothing.
 */
void matrix_open_each(const struct matrix *m,
		      void (*fn)(const struct matrix_event *e, void *arg),
		      void *arg);
/*
 * Returns how many events the final pass dropped since the engine was
 * created because they broke the event contract (a slow kind whose score
 * is below z_min, or a slowdown below min_slowdown).  Such a candidate
 * stays tracked and is published once its evidence meets the contract.
 */
uint64_t matrix_dropped(const struct matrix *m);
/* Returns how many connections (cells) the engine holds state for. */
size_t matrix_ncells(const struct matrix *m);
/*
 * Names of an event kind, an event state and a suspect role: static
 * strings, never freed, "unknown" when out of range.
 */
const char *matrix_kind_name(unsigned kind);
const char *matrix_domain_name(unsigned domain);
const char *matrix_action_name(unsigned action);
const char *matrix_basis_name(unsigned basis);
const char *matrix_state_name(unsigned state);
const char *matrix_role_name(unsigned role);
/*
 * Stores the bytes allocated by all engines of the process now and at
 * their peak into *cur and *peak (either may be NULL).  Thread-safe: the
 * counters are atomic.
 */
void matrix_mem_usage(size_t *cur, size_t *peak);
/*
 * Writes a one-line account of e for an operator into buf (len bytes,
 * always terminated): what is wrong, where, the evidence and what to do.
 * Returns the length snprintf() reports (>= len: truncated), or -1 when
 * buf is NULL or len is 0.  Does not change e.
 */
int matrix_event_describe(const struct matrix_event *e, char *buf, size_t len);

#endif /* C4_MATRIX_H */
