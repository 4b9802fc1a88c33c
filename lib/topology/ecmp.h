/*
 * ecmp.h: the switch ECMP model (per-switch hashing of flows onto paths).
 *
 * Stands in for the switches' hashing in simulation, and on fabrics whose
 * hash is known it fills the path catalog. Every switch hashes the RoCEv2
 * 5-tuple (src IP, dst IP, UDP, src port, 4791) with its own seed derived
 * from the model seed and picks one of its equal-cost next hops:
 *
 *   source leaf: if a port with the destination IP is on this leaf, deliver
 *     directly; else one of the leaf's cables to any spine that has cables to
 *     a leaf holding the destination IP;
 *   spine: one of its cables to the leaves holding the destination IP (two
 *     leaves for a bonded NIC: the spine decides the receive port);
 *   destination leaf: the port with the destination IP.
 *
 * Health (when asked for) is applied like resilient hashing: a flow whose
 * hashed member is healthy keeps it; a flow whose member is down is rehashed
 * over the healthy members only. So a source port chosen for a healthy path
 * keeps that path when unrelated links fail.
 */
#ifndef C4_ECMP_H
#define C4_ECMP_H

#include "path.h"

struct ecmp_model {
	uint64_t seed;
};

struct ecmp_flow {
	uint32_t sip;
	uint32_t dip;
	uint16_t sport;
	uint16_t dport;
	uint8_t proto;
};

/* Seed of one switch: kind 0 = leaf, 1 = spine. */
uint64_t ecmp_switch_seed(const struct ecmp_model *m, unsigned kind,
			  uint32_t id);
/* The hash of a 5-tuple at a switch with seed sw_seed. */
uint64_t ecmp_flow(uint64_t sw_seed, const struct ecmp_flow *f);

/* Precomputed ECMP groups for one (source port, destination IP). */
struct ecmp_spine_grp {
	uint64_t seed;
	uint32_t first; /* into down[] */
	uint32_t count;
};

struct ecmp_ctx {
	const struct topo *t;
	uint32_t src_port;
	uint32_t sip, dip;
	uint64_t leaf_seed;
	uint32_t direct_port; /* dst port on the source leaf, or TOPO_NONE */
	uint32_t *up;	      /* uplink cables of the source leaf's group */
	uint32_t *up_grp;     /* for each up[i]: index into grp[] */
	uint32_t nup;
	struct ecmp_spine_grp *grp;
	uint32_t ngrp;
	uint32_t *down;	     /* downlink cables toward the destination */
	uint32_t *down_port; /* for each down[i]: the receiving port */
	uint32_t ndown;
	uint32_t npaths; /* distinct (up, down) pairs, health ignored */
};

/*
 * Builds the groups for traffic leaving src_port toward dst_ip. Returns 0,
 * or -1 with a message (unknown port or IP, destination unreachable).
 */
int ecmp_ctx_init(struct ecmp_ctx *c, const struct topo *t,
		  const struct ecmp_model *m, uint32_t src_port,
		  uint32_t dst_ip, char *err, size_t errlen);
/*
 * Frees the groups of c and zeroes it (c itself is the caller's); the
 * topology and model are not touched.
 */
void ecmp_ctx_free(struct ecmp_ctx *c);
/*
 * The path taken by the flow with source port sport. With use_health the
 * current link/port health applies (see above); without it, the path of a
 * fully healthy fabric. Returns 0, or -1 when no healthy path exists.
 */
int ecmp_ctx_route(const struct ecmp_ctx *c, uint16_t sport, bool use_health,
		   struct path *out);
/*
 * As ecmp_ctx_route, and *index gets a number < nup * ndown + 1 that is
 * unique to the path within this context (0 for the direct path).
 */
int ecmp_ctx_route_ix(const struct ecmp_ctx *c, uint16_t sport, bool use_health,
		      struct path *out, uint32_t *index);

/* One-shot form of ecmp_ctx_init + ecmp_ctx_route + ecmp_ctx_free. */
int ecmp_route(const struct topo *t, const struct ecmp_model *m,
	       uint32_t src_port, uint32_t dst_ip, uint16_t sport,
	       bool use_health, struct path *out, char *err, size_t errlen);

#endif /* C4_ECMP_H */
