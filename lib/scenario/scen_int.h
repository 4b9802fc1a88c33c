/*
 * scen_int.h: internals of the scenario generator shared by its files
 * (scen.c, job.c, fault.c, emit.c, rng.c). Not installed.
 */
#ifndef SCEN_INT_H
#define SCEN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "scen.h"

struct rng {
	uint64_t s[4];
	double spare;
	int have;
};

struct sdev {
	uint32_t host;
	uint16_t gpu;
	double speed; /* static compute factor */
	double t;     /* local time within the step, us */
	double comp;  /* compute of the current phase, us */
	uint32_t comms[SCEN_MAX_DEV_COMMS];
	uint8_t ncomms;
	uint8_t idle; /* non-communication hang: never enters again */
};

struct scomm {
	uint64_t hash;
	uint32_t nranks;
	uint32_t *dev;
	uint32_t acc; /* first member accumulator */
	uint8_t phase;
	uint8_t net;
	double compute_us; /* compute before this collective */
	double coll_us;	   /* transfer time of one collective */
	double slow;	   /* this interval: worst connection factor */
	uint64_t done;	   /* cumulative completed ops */
	uint8_t intersect; /* hang bookkeeping */
};

struct sconn {
	uint32_t comm;
	uint32_t src, dst;
	uint32_t sdev, ddev;
	uint8_t algo, tr;
	uint64_t channels;
	uint32_t chunk;
	uint32_t chunks_step;
	double hetero;
};

/* per (comm, rank) accumulators of one interval */
struct sacc {
	uint32_t n;
	double ksum, kmin, kmax, klog, klog2;
	double gsum, gmin, gmax, glog, glog2;
	double recv, peer, gpuw;
	uint64_t enter, done;
	uint8_t blocked;
};

/*
 * Late reports (late.c): the (host, interval) pairs, and per kind of
 * summary the entries held back now (held) and being split off (next).
 */
struct late_buf {
	void *held, *next;
	uint32_t nheld;
};

struct late {
	uint32_t n;
	uint32_t host[SCEN_MAX_LATE], iv[SCEN_MAX_LATE];
	uint8_t *now; /* per host: late in this interval */
	struct late_buf coll, conn, wait;
};

struct scen {
	struct scen_params p;
	struct rng rng;
	uint32_t nhosts, ndevs;
	struct sdev *devs;
	struct scomm *comms;
	uint32_t ncomms, ccomms;
	struct sconn *conns;
	uint32_t nconns, cconns;
	struct sacc *acc;
	uint32_t nacc;
	uint64_t *ckeys; /* (comm, src, dst, algo) -> conn index + 1 */
	uint32_t *cvals;
	uint32_t ccap;
	double *host_off_ns;
	double *host_drift;
	double *nic_noise;
	double *conn_factor;
	struct scen_fault faults[SCEN_MAX_FAULTS];
	uint32_t nfaults;
	int hung; /* hang state computed */
	uint8_t *lost;
	struct matrix_coll *out_coll;
	struct matrix_conn *out_conn;
	struct matrix_wait *out_wait;
	uint32_t *out_hosts;
	/* the host of each out_coll, out_conn and out_wait entry */
	uint32_t *coll_host, *conn_host, *wait_host;
	double *nic_drift; /* per device: drift reached at the span; or NULL */
	double *conn_p50;  /* per connection: heavy-tail median factor */
	double *conn_dfac; /* per connection: delay of delayed chunks */
	double *conn_dshare; /* ... and their share (0: none) */
	uint32_t stall_start, stall_len, stall_steps;
	double stall_gap_us; /* pause carried by the first gap after it */
	struct late late;
};

/*
 * rng.c: the job's seeded random stream (xoshiro256**), the same for a
 * seed on every platform.  Every draw advances *r; one stream per thread.
 * rng_seed() resets *r from seed.  rng_next() returns 64 random bits,
 * rng_unif() a double in [0, 1), rng_below() an integer in [0, n) (n must
 * be above 0), rng_norm() a standard normal (every second one cached in
 * *r), rng_lognorm() exp(N(0, sigma^2)), a factor with median 1, and
 * rng_poisson() a Poisson(lambda) count (a normal approximation above
 * lambda 30).
 */
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
double rng_unif(struct rng *r);
uint32_t rng_below(struct rng *r, uint32_t n);
double rng_norm(struct rng *r);
double rng_lognorm(struct rng *r, double sigma);
uint32_t rng_poisson(struct rng *r, double lambda);

/*
 * job.c: build the communicators and connections of s->p.layout over the
 * devices scen_new set up, drawing from s->rng. Returns 0, or -1 without
 * memory or for an unknown layout (s is then freed by scen_free only).
 */
int job_build(struct scen *s);

/*
 * fault.c: the fault model. None of these change the job's model; only
 * fault_advance changes the job's progress state.
 *
 * fault_intermittent_mask draws a flapping pattern (bit i: active at
 * start + i) from r. fault_pick_net_conn draws a network connection of s,
 * or returns NULL when there is none. fault_conn and fault_gpu return the
 * slowdown factor active faults put on connection x or device dev in
 * interval iv (1.0 when none). fault_advance is described in fault.c.
 */
uint32_t fault_intermittent_mask(struct rng *r);
const struct sconn *fault_pick_net_conn(struct scen *s);
double fault_conn(const struct scen *s, const struct sconn *x, uint32_t iv);
/*
 * fault_pick_conn_if draws a network connection of s with algo (or any
 * when algo is MATRIX_ALGO_COUNT) whose both ends are ranks >= min_rank,
 * or NULL when none is found. fault_level returns the slowdown fault f
 * puts on its culprit in interval iv (1.0 when inactive; ramps count).
 * fault_conn_mix returns the delay factor of the delayed chunks of x in
 * iv and stores their share in *share (1.0 and 0 when none).
 * fault_pareto draws a Pareto(xm, alpha) value capped at cap.
 */
const struct sconn *fault_pick_conn_if(struct scen *s, unsigned algo,
				       uint32_t min_rank);
double fault_level(const struct scen_fault *f, uint32_t iv);
double fault_conn_mix(const struct scen *s, const struct sconn *x, uint32_t iv,
		      double *share);
double fault_pareto(struct rng *r, double xm, double alpha, double cap);
double fault_gpu(const struct scen *s, uint32_t dev, uint32_t iv);
int fault_advance(struct scen *s, uint32_t iv);

/*
 * emit.c: interval iv's summaries, in the order scen_interval calls them
 * (each draws from s->rng, so the order is part of the output). The
 * output arrays are the job's own (s->out_*).  emit_factors() draws every
 * connection's time factor for iv; emit_steps() runs the interval's
 * training steps unless hung; emit_colls() fills s->out_coll and
 * s->out_wait and stores their counts in *nc and *nw; emit_conns() fills
 * s->out_conn (nsteps steps ran) and returns its count.  None can fail: the
 * arrays were sized when the job was built.
 */
void emit_factors(struct scen *s, uint32_t iv, double drift);
void emit_steps(struct scen *s, uint32_t iv, uint32_t nsteps, int skew);
/*
 * emit_mix fills *st with the per-chunk statistics of n chunks of median
 * time base of which share are delayed by factor d (a two-part lognormal
 * mixture, quantiles exact).
 */
void emit_mix(struct scen *s, struct matrix_stats *st, uint64_t n, double base,
	      double share, double d);

/*
 * late.c: late_apply moves the summaries of hosts late in in->interval
 * out of *in into the held set and adds those held from the interval
 * before (in->hosts too). The arrays grow on first use: late_apply
 * returns 0, or -1 without memory. late_free frees the held set.
 */
int late_apply(struct scen *s, struct matrix_input *in);
void late_free(struct scen *s);
void emit_colls(struct scen *s, uint32_t iv, uint32_t *nc, uint32_t *nw);
uint32_t emit_conns(struct scen *s, int hung, uint32_t nsteps);

#endif /* SCEN_INT_H */
