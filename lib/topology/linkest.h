/*
 * linkest.h: per-cable loss estimates from traceroute-style probes, with
 * confidence bounds over a sliding window of probe rounds, and the link
 * states (up, degraded, down) judged from them with hysteresis.
 *
 * Why a model and not a threshold per path: an ICMP answer from a switch
 * comes back over a path the prober does not choose and does not see (the
 * answering switch hashes it like any packet toward the source NIC), so a
 * lost probe is evidence against its forward cables *or* its return path.
 * Counting it against the forward cables blames the siblings of a lossy
 * parallel cable.  Here every probe group names its forward elements (the
 * source NIC port and the cables the answers resolved) and the set of
 * return paths the answer may have taken (from the topology: every cable
 * from the answering switch toward a leaf holding the source IP); the
 * return path is a latent variable, fixed per group.  An EM over all
 * groups of the window estimates the loss of every element (cable
 * directions and NIC ports) and which return path each group took.  Loss
 * that a group's return path explains is not blamed on its forward
 * cables.  The confidence bounds are Wilson score intervals on the
 * expected lost and reaching probe counts of each element.
 *
 * Elements: 2 * link + LINKEST_UP (leaf to spine), 2 * link + LINKEST_DOWN
 * (spine to leaf), then 2 * nlinks + port for NIC ports (both ways).
 */
#ifndef C4_LINKEST_H
#define C4_LINKEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo.h"

#define LINKEST_UP	   0
#define LINKEST_DOWN	   1
#define LINKEST_WINDOW_MAX 64
/* Return paths one group may have taken; a group with more is skipped. */
#define LINKEST_ALTS_MAX 1024
/* EM iterations at most, and the change of every estimate that stops it. */
#define LINKEST_EM_ITERS 200
#define LINKEST_EM_EPS	 1e-7
/* The smallest weight a degraded cable is given (never 0: see weight). */
#define LINKEST_WEIGHT_MIN 0.01

enum linkest_state {
	LINKEST_OK = 0,
	LINKEST_DEGRADED = 1,
	LINKEST_BAD = 2, /* down because of loss */
};

/* Thresholds; docs/configuration.md names them probe.* */
struct linkest_conf {
	uint32_t window;      /* rounds in the sliding window (1..64) */
	double z;	      /* quantile of the Wilson bounds */
	double loss_degraded; /* lower bound above: degraded */
	double loss_down;     /* lower bound above: down */
	double loss_recover;  /* upper bound below: back up */
	double min_probes;    /* fewer reaching a direction: no judgement */
	uint32_t gbn_window;  /* packets in flight of the weight model */
	double queue_us; /* queueing delay above which loss is congestion */
};

/* The estimate of one direction of a cable (or of a port). */
struct linkest_dir {
	double reach;  /* probes expected to have reached it */
	double lost;   /* of which expected lost there */
	double loss;   /* lost / reach (0 when nothing reached) */
	double lo, hi; /* Wilson bounds */
	double rtt_us; /* mean RTT of the answers that crossed it forward */
	/*
	 * Mean queueing delay added by it: RTT of the probes that crossed it
	 * last, less the RTT of the same port's probes one TTL shorter (the
	 * control), the largest mean of one round in the window; 0 for
	 * ports.
	 */
	double queue_us;
};

struct linkest_stats {
	uint64_t groups;	    /* groups taken into the window */
	uint64_t skipped;	    /* groups with too many return paths */
	uint64_t em_runs, em_iters; /* EM runs and iterations in all */
};

struct linkest;

/*
 * A new estimator over t (final; must outlive it) with conf (copied; 0
 * fields take the documented defaults).  NULL without memory or when t is
 * not final.  linkest_free() frees it (NULL is fine).
 */
struct linkest *linkest_new(const struct topo *t,
			    const struct linkest_conf *conf);
void linkest_free(struct linkest *e);

/*
 * One probe group of the current round: probes from NIC port src_port
 * with TTL ttl (1: answered by the source leaf; 2: by the spine of cable
 * up; 3: by the leaf of cable down) whose answers resolved to cables up
 * and down (TOPO_NONE when the TTL stops before them), sent probes of
 * which received were answered, rtt_us their mean RTT.  Groups with the
 * same (src_port, ttl, up, down) in one round are summed.  Other TTLs and
 * direct (same-leaf) paths are ignored.  0, -1 without memory or on ids
 * outside the topology.
 */
int linkest_add(struct linkest *e, uint32_t src_port, uint8_t ttl, uint32_t up,
		uint32_t down, uint32_t sent, uint32_t received, double rtt_us);

/*
 * Ends the current round: its groups join the window (the oldest round
 * leaves it), the EM runs over the window and every estimate is
 * recomputed; the next linkest_add() starts a new round.  0 or -1
 * without memory (the estimates stay those of the last run).
 */
int linkest_round_end(struct linkest *e);

/* Forgets every round (after the fabric was rebuilt, for one). */
void linkest_clear(struct linkest *e);

/* The estimate of element elem (see above); NULL when out of range. */
const struct linkest_dir *linkest_elem(const struct linkest *e, uint32_t elem);

/*
 * The state cable link should be in now, given its current state cur:
 * up -> degraded when the lower bound of a direction's loss passes
 * loss_degraded, -> bad when it passes loss_down; degraded or bad -> up
 * when the upper bounds of both directions are below loss_recover; bad ->
 * degraded when the upper bounds are below loss_down.  A direction fewer
 * than min_probes reached gives no evidence; with none, cur stays.  A
 * direction whose queueing delay passes queue_us is congested: its loss
 * is queue overflow, not a failing cable, and does not mark the cable
 * (it still keeps a marked cable from coming back).
 * *loss gets the worse direction's estimate (NULL allowed).
 */
enum linkest_state linkest_judge(const struct linkest *e, uint32_t link,
				 enum linkest_state cur, double *loss);

/*
 * The share of its capacity a cable losing the fraction loss still
 * delivers to go-back-N transport (RoCE RC): (1 - p) / (1 + (W - 1) p)
 * with W = gbn_window packets in flight, at least LINKEST_WEIGHT_MIN.
 */
double linkest_weight(const struct linkest_conf *c, double loss);

/*
 * Wilson score interval of k successes in n trials at quantile z into
 * *lo and *hi (0 and 1 when n is 0).
 */
void linkest_wilson(double k, double n, double z, double *lo, double *hi);

/* The counters; nothing changes. */
const struct linkest_stats *linkest_get_stats(const struct linkest *e);
/* The configuration in use (defaults filled in). */
const struct linkest_conf *linkest_get_conf(const struct linkest *e);

#endif /* C4_LINKEST_H */
