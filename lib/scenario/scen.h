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
#define SCEN_MAX_DEV_COMMS 6 /* communicators one device belongs to */

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
	SCEN_F_SLOW_CONN,    /* one network path between two NIC ports */
	SCEN_F_SLOW_TX,	     /* a NIC port's transmit side */
	SCEN_F_SLOW_RX,	     /* a NIC port's receive side */
	SCEN_F_SLOW_GPU,     /* a GPU computing slower (non-communication) */
	SCEN_F_INTERMITTENT, /* one of the four above, flapping */
	SCEN_F_COMM_HANG,    /* a connection stops moving bytes */
	SCEN_F_NONCOMM_HANG, /* a rank stops entering collectives */
	SCEN_F_NODE_LOST,    /* a host goes silent */
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
 * in increasing order starting at 0. Returns 0.
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

#endif /* C4_SCEN_H */
