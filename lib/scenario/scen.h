/*
 * scen.h: synthetic bulk-synchronous training jobs with injected,
 * labeled faults, producing the per-interval summaries that c4d-master
 * would build from its agents (struct matrix_input of matrix.h).
 *
 * A job is N ranks on hosts of 8 GPUs, one NIC port per GPU. Layouts
 * combine tensor-parallel communicators inside a host (NVLink), pipeline
 * send/recv pairs and data-parallel communicators across hosts (network
 * ring and double binary tree), or one flat data-parallel communicator.
 * Each step, every rank computes (per-GPU speed, lognormal jitter) and
 * joins its communicators' collectives; a collective ends when its last
 * member arrived plus a transfer time set by its slowest connection.
 * Connection statistics are drawn per interval: per-link static
 * heterogeneity, per-interval fluctuation, job-wide drift, lognormal
 * per-chunk jitter (the median and quantiles of n chunks are sampled from
 * their sampling distribution), rare per-chunk spikes and rare one-interval
 * bursts. Host clocks carry offsets and drift; timestamps are reported but
 * must not be trusted.
 *
 * The ground truth lives only in struct scen_fault; the summaries carry
 * nothing but what an agent could measure.
 */
#ifndef C4_SCEN_H
#define C4_SCEN_H

#include <stdint.h>

#include "matrix.h"

#define SCEN_GPUS_PER_HOST 8
#define SCEN_MAX_FAULTS	   4
#define SCEN_MAX_RANKS	   (1u << 18)
#define SCEN_PP_STAGES	   4
#define SCEN_EP_SIZE	   8
#define SCEN_MAX_DEV_COMMS 6  /* communicators one device belongs to */
#define SCEN_MAX_LATE	   64 /* late (host, interval) reports */

/* bandwidths and sizes of the model (bytes, microseconds) */
#define SCEN_NVLINK_US_PER_B (1.0 / 150e3) /* 150 GB/s */
#define SCEN_NET_US_PER_B    (1.0 / 23e3)  /* ~190 Gbit/s effective */
#define SCEN_RING_CHUNK	     (512u << 10)
#define SCEN_TREE_CHUNK	     (128u << 10)
#define SCEN_P2P_CHUNK	     (1u << 20)
#define SCEN_EP_CHUNK	     (256u << 10)
#define SCEN_NVL_CHUNK	     (256u << 10)
#define SCEN_LAUNCH_US	     20.0 /* gap floor between collectives */
#define SCEN_INTERVAL_NS     10000000000ll
#define SCEN_MAX_PHASES	     4
#define SCEN_SNAPSHOT_SKEW   0.3 /* share of ranks inside an op at a cut */

enum scen_layout {
	SCEN_L_TP_DP = 0, /* TP=8 in host (NVLink ring), DP rails ring+tree */
	SCEN_L_TP_PP_DP,  /* TP=8, PP=4 stages (send/recv), DP ring+tree */
	SCEN_L_DP_FLAT,	  /* one DP comm: 8-channel ring + per-NIC trees */
	SCEN_L_TP_EP_DP,  /* TP mesh, EP all-to-all of 8 hosts, DP rails */
	SCEN_L_DP_RING,	  /* DP rails, ring only (rows of one cell) */
	SCEN_L_COUNT
};

enum scen_fault_kind {
	SCEN_F_NONE = 0,
	SCEN_F_SLOW_CONN,     /* one network path between two NIC ports */
	SCEN_F_SLOW_TX,	      /* a NIC port's transmit side */
	SCEN_F_SLOW_RX,	      /* a NIC port's receive side */
	SCEN_F_SLOW_GPU,      /* a GPU computing slower (non-communication) */
	SCEN_F_INTERMITTENT,  /* one of the four above, flapping */
	SCEN_F_COMM_HANG,     /* a connection stops moving bytes */
	SCEN_F_NONCOMM_HANG,  /* a rank stops entering collectives */
	SCEN_F_NODE_LOST,     /* a host goes silent */
	SCEN_F_SLOW_HOST,     /* every GPU of a host computing slower */
	SCEN_F_SLOW_HOST_NIC, /* every NIC port of a host, both directions */
	SCEN_F_COUNT
};

/* Ground truth of one injected fault. */
struct scen_fault {
	uint8_t kind;	  /* enum scen_fault_kind */
	uint8_t base;	  /* effective kind (intermittent: what flaps) */
	double slowdown;  /* factor on time (slow kinds) */
	uint32_t start;	  /* first faulty interval */
	uint32_t on_mask; /* intermittent: bit i = active at start + i */
	uint32_t end;  /* slow kinds: first healthy interval again; 0 never */
	uint32_t host; /* culprit device (tx side of a connection) */
	uint16_t gpu;
	uint32_t peer_host; /* rx side of a connection */
	uint16_t peer_gpu;
	uint64_t comm; /* comm-hang: the stuck connection */
	uint32_t src;
	uint32_t dst;
	uint32_t
		ramp; /* slow kinds: intervals to reach slowdown (0: at once) */
	double spread;	  /* slow-conn on a ring: share of the excess time
			     its ring neighbours see (backpressure) */
	double share;	  /* slow-conn: share of the chunks delayed by
			     slowdown (0: every chunk) */
	uint32_t partial; /* comm-hang: ranks 0..partial-1 of the comm
			     completed the stuck op (0: none did) */
	uint8_t moved_on; /* comm-hang with partial: they entered the next */
};

/*
 * What to inject (scen_add_fault_spec). kind, slowdown and start as for
 * scen_add_fault; the rest refines it and is 0 for a plain fault.
 */
struct scen_fault_spec {
	unsigned kind;
	double slowdown;
	uint32_t start;
	uint32_t on_mask;  /* bit i: active at start + i (mod 32); 0: always */
	uint32_t ramp;	   /* see struct scen_fault */
	double spread;	   /* needs a ring connection (slow-conn) */
	double share;	   /* slow-conn only, in (0, 1) */
	double partial;	   /* comm-hang: share of the ranks below the stuck
			      connection's lower end that complete, (0, 1] */
	uint8_t moved_on;  /* see struct scen_fault */
	uint8_t want_ring; /* slow-conn, comm-hang: a ring connection */
};

struct scen_noise {
	double jitter_sigma;   /* per-chunk lognormal sigma */
	double spike_prob;     /* per-chunk spike probability */
	double spike_max;      /* spikes multiply by U(3, spike_max) */
	double hetero_sigma;   /* static per-link lognormal sigma */
	double link_sigma;     /* per-interval per-link lognormal sigma */
	double host_sigma;     /* per-interval per-NIC lognormal sigma */
	double drift_sigma;    /* per-interval job-wide lognormal sigma */
	double burst_prob;     /* per link-interval transient slowdown */
	double gpu_sigma;      /* static per-GPU compute lognormal sigma */
	double compute_sigma;  /* per-step compute jitter */
	double clock_offset_s; /* host clock offsets up to +- this */
	/* heavy tails (0: none): Pareto(tail_xm, tail_alpha) multipliers */
	double tail_prob;     /* per connection-interval: chunks spike */
	double tail_rate;     /* ... then per chunk */
	double tail_p50_prob; /* per connection-interval: most chunks slow */
	double tail_alpha;    /* Pareto shape */
	double tail_cap;      /* largest multiplier */
	double gap_tail_prob; /* per rank-step: a compute stall */
	/* NIC drift (0: none): a share of NIC ports get slower over time */
	double nic_drift_share; /* share of NIC ports drifting */
	double nic_drift_min;	/* each reaches 1 + U(min, max) ... */
	double nic_drift_max;
	uint32_t nic_drift_span; /* ... after this many intervals */
};

struct scen_params {
	uint32_t nranks; /* multiple of 8; >= 64 for TP_PP_DP */
	uint8_t layout;	 /* enum scen_layout */
	uint32_t steps;	 /* training steps per interval */
	uint64_t seed;
	struct scen_noise noise;
};

struct scen;

/* Fill *p with the defaults: 64 ranks, tp8-dp, 8 steps, the noise above. */
void scen_params_default(struct scen_params *p);
/*
 * Build a job from *p (copied; the caller keeps p). Returns a job the
 * caller frees with scen_free, or NULL on invalid parameters (rank count
 * not a multiple of 8, too small for the layout) or without memory.
 */
struct scen *scen_new(const struct scen_params *p);
/* Free a job and every array it handed out; NULL is fine. */
void scen_free(struct scen *s);
/*
 * Inject a fault of kind starting at interval start, its culprit drawn
 * from the job's seeded stream; slowdown (>= 1) applies to the slow kinds.
 * The ground truth is copied to *out unless out is NULL. Returns 0, or -1
 * when the kind is invalid, the job has no network connection, or
 * SCEN_MAX_FAULTS are already injected.
 */
int scen_add_fault(struct scen *s, unsigned kind, double slowdown,
		   uint32_t start, struct scen_fault *out);
/*
 * Inject the fault *spec describes (see struct scen_fault_spec); the
 * culprit is drawn as for scen_add_fault. Returns 0, or -1 as
 * scen_add_fault does, or when a refinement does not fit the kind or the
 * job has no connection that fits it.
 */
int scen_add_fault_spec(struct scen *s, const struct scen_fault_spec *spec,
			struct scen_fault *out);
/*
 * The whole job stops at an operation boundary in interval start (after
 * some of its steps) and stays stopped for len intervals (a checkpoint,
 * an evaluation): every rank has completed what it entered, nothing is
 * in flight, and the first gap after it carries the pause. Returns 0, or
 * -1 when len is 0 or a stall is already set.
 */
int scen_stall(struct scen *s, uint32_t start, uint32_t len);
/*
 * Host host's summaries of interval iv arrive late: the host is not heard
 * from in iv, and its summaries of iv come with those of iv + 1. Returns
 * 0, or -1 when host is out of range, SCEN_MAX_LATE are set or memory
 * runs out.
 */
int scen_late(struct scen *s, uint32_t host, uint32_t iv);
/*
 * Clears slow fault i (in the order added) from interval end on: the
 * culprit runs at full speed again (hangs and node loss do not clear).
 * 0, or -1 if there is no such fault or it is not a slow kind.
 */
int scen_clear_fault(struct scen *s, unsigned i, uint32_t end);
/*
 * Register every communicator of the job with engine m (matrix_comm_add).
 * Returns 0, or -1 without memory or when the engine refuses one; the job
 * does not change.
 */
int scen_register(struct scen *s, struct matrix *m);
/*
 * The job's communicators, for drivers that register them elsewhere (the
 * simulator that feeds real agents): i < scen_ncomms(); rank < nranks.
 * scen_comm and scen_rank_loc return 0 with the outputs set, or -1 (and
 * leave them alone) when i or rank is out of range.
 */
uint32_t scen_ncomms(const struct scen *s);
int scen_comm(const struct scen *s, uint32_t i, uint64_t *hash,
	      uint32_t *nranks);
int scen_rank_loc(const struct scen *s, uint32_t i, uint32_t rank,
		  struct matrix_rank_loc *loc);
/*
 * Produce interval iv's summaries into *in; its arrays belong to s and
 * stay valid until the next call or scen_free. Intervals must be produced
 * in increasing order starting at 0. Returns 0, or -1 when holding late
 * reports (scen_late) runs out of memory.
 */
int scen_interval(struct scen *s, uint32_t iv, struct matrix_input *in);
/* The number of hosts of the job (ranks / SCEN_GPUS_PER_HOST). */
uint32_t scen_nhosts(const struct scen *s);
/*
 * Names of layouts and fault kinds (static strings; "unknown" when out of
 * range), and their inverse: the index, or -1 for an unknown name.
 */
const char *scen_layout_name(unsigned layout);
const char *scen_fault_name(unsigned kind);
int scen_layout_parse(const char *name);
int scen_fault_parse(const char *name);

/*
 * family.c: randomised episodes of one phenomenon each, with their ground
 * truth. A family fixes what happens (a heavy-tailed network, a host whose
 * GPUs are all slow, a hang that caught the ranks half way); sizes (64 to
 * 256 ranks), layouts, magnitudes and timing are drawn from the seed.
 */
enum scen_family {
	SCEN_FAM_HEAVY_TAIL = 0, /* no fault: Pareto spikes in chunks, gaps */
	SCEN_FAM_DRIFT,		 /* no fault: NIC ports 1-3 % slower, slowly */
	SCEN_FAM_BACKPRESSURE,	 /* a ring link, its neighbours slowed less */
	SCEN_FAM_HOST_WIDE,	 /* every GPU of a host slow (compute) */
	SCEN_FAM_HOST_NICS,	 /* every NIC port of a host slow */
	SCEN_FAM_FLAPPING,	 /* a slow fault on one interval in three */
	SCEN_FAM_GRADUAL,	 /* a slow fault ramping up */
	SCEN_FAM_JOB_STALL,	 /* no fault: the whole job pauses */
	SCEN_FAM_LATE_REPORTS,	 /* no fault: hosts' reports come late */
	SCEN_FAM_PARTIAL_HANG,	 /* a hang some ranks got past */
	SCEN_FAM_FRACTION_DELAY, /* 30-50 % of a link's chunks delayed */
	SCEN_FAM_COUNT
};

/* The ground truth of one family episode. */
struct scen_truth {
	uint8_t family; /* enum scen_family */
	uint8_t layout; /* enum scen_layout */
	uint32_t nranks;
	uint32_t intervals; /* the episode's length */
	uint32_t nfaults;   /* 0: no fault */
	struct scen_fault fault;
	uint8_t domain;	      /* enum matrix_domain at fault; MATRIX_DOM_COUNT
				 when there is none */
	uint8_t hang;	      /* a hang: to be named within the hang timeout */
	uint8_t job_event;    /* a job-level event (domain job) is right */
	uint32_t event_start; /* job stall: first stalled interval */
	uint32_t event_len;   /* job stall: stalled intervals */
	uint32_t nlate;	      /* late reports: (host, interval) pairs */
};

/*
 * Build episode seed of family (nranks 0: drawn from 64..256, else
 * used). *t gets the truth. Returns the job (scen_free), or NULL for an
 * unknown family, a rank count the drawn layout cannot take (pipeline and
 * expert layouts need a multiple of 64), or without memory.
 */
struct scen *scen_family_new(unsigned family, uint64_t seed, uint32_t nranks,
			     struct scen_truth *t);
/* Family names ("heavy_tail"...), "unknown" out of range; and inverse. */
const char *scen_family_name(unsigned family);
int scen_family_parse(const char *name);

/*
 * score.c: judging events against the ground truth; nothing is changed.
 * score_expected_kind: the event kind that names a fault of kind base
 * exactly, or -1. score_names: 1 when suspect s names the culprit of f.
 * score_matches: 1 when event e, opened in interval iv, names f (active
 * by iv, a kind of f's family, a suspect naming the culprit).
 * score_top1: 1 when e has exactly the right kind and the culprit as its
 * first suspect.
 */
int score_expected_kind(unsigned base);
int score_names(const struct matrix_suspect *s, const struct scen_fault *f);
int score_matches(const struct matrix_event *e, uint64_t iv,
		  const struct scen_fault *f);
int score_top1(const struct matrix_event *e, const struct scen_fault *f);
/*
 * For a whole-host fault an event of any slow kind naming the host or one
 * of its devices matches, and top-1 asks that its first suspect does.
 * score_host_kind: 1 when f's culprit is a whole host (slow-host,
 * slow-host-nic). score_host_one: 1 when e reports f's host as one
 * domain: kind host-slow or domain host, naming the host first.
 * score_domain: the matrix_domain of f's culprit.
 */
int score_host_kind(const struct scen_fault *f);
int score_host_one(const struct matrix_event *e, const struct scen_fault *f);
unsigned score_domain(const struct scen_fault *f);

#endif /* C4_SCEN_H */
