/*
 * fab.h: fabrics and ring jobs for the C4P benchmarks (bench-fabric-sim,
 * bench-alloc), built through the lib/topology builder API.
 *
 * Fabric layout: leaves come in pairs (2p, 2p+1); host h hangs off pair
 * h % leaf_pairs with every NIC's left port on leaf 2p and its right port
 * on leaf 2p+1. Every leaf has link_mult cables of link_gbps to every
 * spine. NIC n of host h has IP 10.0.0.0 + h * 64 + n * 2 (+1 for the
 * right port when not bonded).
 */
#ifndef C4_BENCH_FAB_H
#define C4_BENCH_FAB_H

#include "topo.h"

struct fab_cfg {
	uint32_t hosts;
	uint32_t nics; /* per host */
	uint32_t leaf_pairs;
	uint32_t spines;
	uint32_t link_mult;
	double port_gbps;
	double link_gbps;
	bool bonded;
};

/* A ring edge: NIC src_nic sends to NIC dst_nic for job. */
struct fab_conn {
	uint32_t job;
	uint32_t src_nic;
	uint32_t dst_nic;
};

struct fab_conns {
	struct fab_conn *v;
	size_t n, cap;
};

/* Builds and finalizes the fabric; NULL with a message on error. */
struct topo *fab_build(const struct fab_cfg *c, char *err, size_t errlen);
/*
 * Appends the ring edges of a job over hosts[0..n): for every rail r <
 * rails, NIC r of hosts[i] sends to NIC r of hosts[(i + 1) % n] (for n = 2
 * both directions). Returns 0 or -1 when out of memory.
 */
int fab_ring(const struct topo *t, uint32_t job, const uint32_t *hosts,
	     uint32_t n, uint32_t rails, struct fab_conns *out);
uint32_t fab_ip(uint32_t host, uint32_t nic, uint32_t side, bool bonded);

#endif /* C4_BENCH_FAB_H */
