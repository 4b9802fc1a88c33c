/*
 * topo.h: the fabric model of C4P (hosts, NICs with a left and a right port,
 * leaves, spines, leaf-spine links) and every limit of lib/topology.
 *
 * A fabric is built with the topo_add_*() calls (or topo_yaml_load()), then
 * frozen with topo_finalize(), which validates it as a whole and builds the
 * lookup indices. After that only link and port health may change.
 *
 * Identifiers are dense indices (uint32_t) into the arrays of struct topo;
 * TOPO_NONE stands for "no such object". IPs are IPv4 addresses in host byte
 * order. Capacities are in Gbit/s and apply to each direction of a link.
 */
#ifndef C4_TOPO_H
#define C4_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- limits of lib/topology (all of them, in one place) ---------------- */
#define TOPO_NONE	       UINT32_MAX
#define TOPO_NAME_MAX	       64  /* names incl. NUL */
#define TOPO_ERR_MAX	       256 /* suggested size of error buffers */
#define TOPO_MAX_LEAVES	       8192
#define TOPO_MAX_SPINES	       8192
#define TOPO_MAX_LINKS	       (1u << 22)
#define TOPO_MAX_HOSTS	       (1u << 17)
#define TOPO_MAX_NICS_PER_HOST 32
#define TOPO_MAX_LINK_MULT     64 /* parallel links of one leaf-spine pair */
#define TOPO_MAX_GBPS	       100000.0
/* switch interface addresses (addrplan.h): 100.64.0.0/10 unless configured */
#define TOPO_SWITCH_NET_DEFAULT	       "100.64.0.0/10"
#define TOPO_SWITCH_NET_DEFAULT_BASE   0x64400000u
#define TOPO_SWITCH_NET_DEFAULT_PREFIX 10

#define HASH_ROCE_DPORT 4791 /* RoCEv2 UDP destination port */
#define HASH_PROTO_UDP	17

/*
 * Candidate UDP source ports. The catalog only ever hands out ports from
 * [CATALOG_SPORT_BASE, CATALOG_SPORT_BASE + CATALOG_SPORT_COUNT), the range
 * RoCE stacks use for their own source-port choice. Filling an entry from the
 * hash model stops once every path has a port or after CATALOG_SPORT_COUNT
 * ports; with 64 spines x 2 destination leaves the expected need is ~700.
 */
#define CATALOG_SPORT_BASE  49152
#define CATALOG_SPORT_COUNT 16384
#define CATALOG_MAX_RECS    4096 /* distinct paths kept per entry */
/* loss (permille) above which a probed port is never handed out */
#define CATALOG_LOSS_MAX       0
#define ALLOC_REQID_MAX	       64	  /* request ids incl. NUL */
#define ALLOC_MAX_BATCH	       (1u << 20) /* QPs in one request */
#define ALLOC_MAX_WEIGHT       1000000u	  /* demand weight of one QP */
#define ALLOC_MAX_LEASE_S      (30u * 24 * 3600)
#define ALLOC_REBALANCE_PASSES 8 /* passes over all QPs per rebalance */

enum topo_side {
	TOPO_LEFT = 0,
	TOPO_RIGHT = 1,
	TOPO_SIDES = 2,
	TOPO_SIDE_ANY = 3, /* only in allocation requests: master picks */
};

struct topo_leaf {
	char name[TOPO_NAME_MAX];
	uint32_t pod;
	uint32_t plane;
	/* after finalize: this leaf's links, sorted by (spine, link id) */
	uint32_t link_first; /* index into topo.leaf_links */
	uint32_t link_count;
};

struct topo_spine {
	char name[TOPO_NAME_MAX];
	uint32_t pod;
	uint32_t plane;
	/* after finalize: this spine's links, sorted by (leaf, link id) */
	uint32_t link_first; /* index into topo.spine_links */
	uint32_t link_count;
};

/*
 * One physical leaf-spine cable, full duplex: "up" is leaf->spine, "down" is
 * spine->leaf, each with capacity gbps. Parallel cables of one leaf-spine pair
 * share a bundle (same bundle id, consecutive link ids when added together).
 */
struct topo_link {
	uint32_t leaf;
	uint32_t spine;
	uint32_t bundle;
	double gbps;
	bool up;
};

struct topo_bundle {
	uint32_t leaf;
	uint32_t spine;
	uint32_t first_link;
	uint32_t count;
};

struct topo_host {
	char name[TOPO_NAME_MAX];
	uint32_t first_nic;
	uint32_t nic_count;
};

/* A NIC port: its IP, its leaf and the capacity of its cable to that leaf. */
struct topo_port {
	uint32_t nic;
	uint32_t leaf;
	uint32_t ip;
	double gbps;
	uint8_t side; /* enum topo_side */
	bool up;
};

/*
 * A NIC with two ports on two different leaves. When both ports carry the
 * same IP the NIC is bonded: the fabric (spine hash) decides on which port a
 * packet to that IP arrives.
 */
struct topo_nic {
	char name[TOPO_NAME_MAX];
	uint32_t host;
	uint32_t port[TOPO_SIDES];
	bool bonded;
};

struct topo {
	struct topo_leaf *leaves;
	struct topo_spine *spines;
	struct topo_link *links;
	struct topo_bundle *bundles;
	struct topo_host *hosts;
	struct topo_nic *nics;
	struct topo_port *ports;
	uint32_t nleaves, nspines, nlinks, nbundles, nhosts, nnics, nports;
	uint32_t cap_leaves, cap_spines, cap_links, cap_hosts, cap_nics;
	uint32_t npods, nplanes;
	/* switch_net of the interface address plan (addrplan.h) */
	uint32_t swnet_base;
	uint8_t swnet_prefix;
	/* built by topo_finalize() */
	uint32_t *leaf_links;  /* link ids grouped by leaf */
	uint32_t *spine_links; /* link ids grouped by spine */
	uint32_t *ip_slots;    /* open-addressing IP -> port index */
	uint32_t ip_cap;
	bool final;
};

/*
 * topo_new() returns an empty, not yet final topology with the default
 * switch network, or NULL without memory; the caller frees it with
 * topo_free(), which also frees every name and index (NULL is fine).
 * A topology is built and then only read: not thread-safe while it is
 * built or its health changes.
 */
struct topo *topo_new(void);
void topo_free(struct topo *t);

/*
 * Builder. Each call appends one object and returns its id, or TOPO_NONE
 * with a message in err (bad argument, limit reached, out of memory, or the
 * topology is already final). Names must be non-empty and unique per kind;
 * that and all cross-object rules are checked by topo_finalize().
 */
uint32_t topo_add_leaf(struct topo *t, const char *name, uint32_t pod,
		       uint32_t plane, char *err, size_t errlen);
uint32_t topo_add_spine(struct topo *t, const char *name, uint32_t pod,
			uint32_t plane, char *err, size_t errlen);
/* Adds mult parallel cables leaf<->spine of gbps each; returns the first id. */
uint32_t topo_add_links(struct topo *t, uint32_t leaf, uint32_t spine,
			uint32_t mult, double gbps, char *err, size_t errlen);
uint32_t topo_add_host(struct topo *t, const char *name, char *err,
		       size_t errlen);
/*
 * Adds a NIC to host (hosts must be added in order: NICs of one host are
 * contiguous, so a NIC can only be added to the most recent host). ip_left
 * and ip_right are the port IPs (equal for a bonded NIC).
 */
uint32_t topo_add_nic(struct topo *t, uint32_t host, const char *name,
		      uint32_t leaf_left, uint32_t ip_left, uint32_t leaf_right,
		      uint32_t ip_right, double gbps, char *err, size_t errlen);

/*
 * Validates the whole fabric and builds the indices. Rules: the two ports of
 * a NIC sit on different leaves; an IP belongs to one NIC only; unique names;
 * a link joins a leaf and a spine of the same pod and plane. Returns 0, or -1
 * with the first problem in err. Idempotent once it succeeded.
 */
int topo_finalize(struct topo *t, char *err, size_t errlen);

/*
 * Lookups (final topologies only), which change nothing; TOPO_NONE when
 * absent.  topo_port_by_ip() returns the port with ip on side (on either
 * side for TOPO_SIDE_ANY; TOPO_NONE when ip is the other side's of an
 * unbonded NIC); topo_nic_by_ip() the NIC owning ip.  The _by_name()
 * lookups compare names exactly, in time linear in the count.
 */
uint32_t topo_port_by_ip(const struct topo *t, uint32_t ip, uint8_t side);
uint32_t topo_nic_by_ip(const struct topo *t, uint32_t ip);
uint32_t topo_leaf_by_name(const struct topo *t, const char *name);
uint32_t topo_spine_by_name(const struct topo *t, const char *name);
uint32_t topo_host_by_name(const struct topo *t, const char *name);
/* Link ids [*first, *first + *count) of leaf..spine, or *count = 0. */
void topo_bundle_links(const struct topo *t, uint32_t leaf, uint32_t spine,
		       uint32_t *first, uint32_t *count);
/* Index range of the links of spine s to leaf in t->spine_links. */
void topo_spine_to_leaf(const struct topo *t, uint32_t spine, uint32_t leaf,
			uint32_t *pos, uint32_t *count);

/* Set a cable's or port's health; return 0, or -1 on a bad id. */
int topo_link_set_up(struct topo *t, uint32_t link, bool up);
int topo_port_set_up(struct topo *t, uint32_t port, bool up);
/* Healthy cables of a bundle. */
uint32_t topo_bundle_healthy(const struct topo *t, uint32_t bundle);

/*
 * "10.0.0.1" <-> uint32 in host order.  topo_ip_parse() returns 0 with
 * *ip set, or -1 on malformed input with *ip untouched; topo_ip_format()
 * writes into buf as snprintf() does (truncated to len bytes).
 */
int topo_ip_parse(const char *s, uint32_t *ip);
void topo_ip_format(uint32_t ip, char *buf, size_t len);

#endif /* C4_TOPO_H */
