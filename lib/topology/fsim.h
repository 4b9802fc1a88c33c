/*
 * fsim.h: a flow-level fabric simulator: max-min fair rates by progressive
 * filling, and the all-reduce bus bandwidth derived from them.
 *
 * Resources are directional capacities. For a topology they are, per NIC
 * port, its transmit and its receive capacity; per cable, its up (leaf->
 * spine) and down (spine->leaf) direction; and per leaf a "pool" of all its
 * healthy uplink capacity, used only by the ideal model (perfect spraying
 * over the leaf's uplinks: no path collisions). Spines are non-blocking.
 * A flow crosses a set of resources and is infinitely backlogged.
 *
 * Progressive filling: all flows start at rate 0 and grow together; when a
 * resource fills, the flows crossing it freeze at the current rate; the
 * others keep growing until every flow is frozen. The result is the unique
 * max-min fair allocation.
 */
#ifndef C4_FSIM_H
#define C4_FSIM_H

#include "path.h"

#define FSIM_MAX_HOPS 4

struct fsim_flow {
	uint32_t res[FSIM_MAX_HOPS];
	uint8_t nres;
	double rate; /* output, Gbit/s */
};

/* Number of resources of a topology and their capacities (health applied:
 * a down cable or port has capacity 0). cap must hold fsim_res_count(). */
uint32_t fsim_res_count(const struct topo *t);
void fsim_res_caps(const struct topo *t, double *cap);
/* A flow along path p: source tx, cable up, cable down, destination rx. */
void fsim_flow_path(const struct topo *t, const struct path *p,
		    struct fsim_flow *f);
/* A flow for the ideal model: source tx, the source leaf's uplink pool,
 * the destination leaf's downlink pool, destination rx. */
void fsim_flow_pooled(const struct topo *t, uint32_t src_port,
		      uint32_t dst_port, struct fsim_flow *f);

/*
 * Max-min fair rates of n flows over nres resources of capacity cap[].
 * A flow crossing a resource of capacity 0 gets rate 0. Returns 0, or -1
 * with a message (bad resource id, out of memory).
 */
int fsim_solve(const double *cap, uint32_t nres, struct fsim_flow *f, size_t n,
	       char *err, size_t errlen);

/*
 * Ring all-reduce bus bandwidth per job. conn[i] is the connection (ring
 * edge) of flow i, job[c] the job of connection c. A connection moves
 * data at the sum of its flows' rates (the CCL spreads a message over the
 * connection's QPs and favours the faster ones); a pipelined ring runs at
 * its slowest edge, and a job's rings carry equal shares, so a job's busbw
 * is the minimum connection rate over all its rings. busbw[j] gets it
 * (0 for a job without connections). Returns 0 or -1 (bad ids, no memory).
 */
int fsim_busbw(const struct fsim_flow *f, size_t n, const uint32_t *conn,
	       uint32_t nconn, const uint32_t *job, uint32_t njobs,
	       double *busbw);

/*
 * Balance of the QP count per cable direction for n paths: *global is
 * max/mean over all healthy cable directions; *per_leaf the worst, over
 * leaves, of max/mean among that leaf's healthy uplinks (and, separately,
 * its healthy downlinks). 1.0 is perfect; 0 when nothing crosses a spine.
 */
void fsim_link_balance(const struct topo *t, const struct path *p, size_t n,
		       double *global, double *per_leaf);

/*
 * The smallest global max/mean any placement of the same QPs could reach:
 * each leaf's QPs must fit on its healthy uplinks (and downlinks), so some
 * cable carries at least ceil(QPs / healthy cables); divided by the mean
 * over healthy cable directions. 0 when nothing crosses a spine.
 */
double fsim_link_floor(const struct topo *t, const struct path *p, size_t n);

/*
 * Balance of throughput per cable direction after fsim_solve(): each
 * healthy cable direction's utilisation is the sum of the rates of the
 * flows crossing it over its capacity; returns max/mean of it over all
 * healthy cable directions (1.0: every cable equally busy), 0 when nothing
 * crosses a spine.  Unlike fsim_link_balance() it weighs each QP by what
 * it carries, so QPs held back by a bottleneck elsewhere count less.
 */
double fsim_link_util_balance(const struct topo *t, const struct fsim_flow *f,
			      size_t n);

#endif /* C4_FSIM_H */
