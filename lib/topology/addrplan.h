/*
 * addrplan.h: the addresses of the switches' own interfaces, and stable
 * names for cables.
 *
 * A traceroute-style probe learns where it went from the source address of
 * each ICMP time-exceeded reply: a switch answers from the interface the
 * probe came in on. For that address to name a cable (or a NIC-facing leaf
 * port) of the topology, every switch interface gets an address from one
 * plan, computed from the topology alone, so the fabric (or the fabric
 * emulator, tools/c4fabric) and c4p-master agree on it without talking.
 *
 * The plan lives in the network switch_net (topology YAML key, default
 * TOPO_SWITCH_NET_DEFAULT), base B:
 *   cable L (link id):  leaf end B + 2L, spine end B + 2L + 1  (a /31)
 *   NIC port P:         leaf end B + 2 * nlinks + 2P           (a /31 whose
 *                       other half is not used)
 * topo_finalize() rejects a plan that does not fit in switch_net or that
 * overlaps a NIC IP.
 */
#ifndef C4_ADDRPLAN_H
#define C4_ADDRPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "topo.h"

enum addrplan_ifkind {
	ADDRPLAN_IF_NONE = 0,
	ADDRPLAN_IF_CABLE_LEAF = 1,  /* leaf end of cable id */
	ADDRPLAN_IF_CABLE_SPINE = 2, /* spine end of cable id */
	ADDRPLAN_IF_LEAF_PORT = 3,   /* leaf's interface facing NIC port id */
};

/* IPv4 (host order) of a switch interface; 0 if id is out of range. */
uint32_t addrplan_if_addr(const struct topo *t, enum addrplan_ifkind kind,
			  uint32_t id);
/*
 * Which switch interface owns addr; ADDRPLAN_IF_NONE if none. *id (when id is
 * not NULL) gets the cable or port id.
 */
enum addrplan_ifkind addrplan_if_lookup(const struct topo *t, uint32_t addr,
					uint32_t *id);

/*
 * Stable cable names: "leaf0-spine0" for the only cable of a leaf-spine
 * pair, "leaf0-spine0.N" for parallel cable N (0-based) of the pair.
 * addrplan_link_name writes "?" for a bad id; addrplan_link_lookup returns the
 * link id of a name, or TOPO_NONE.
 */
void addrplan_link_name(const struct topo *t, uint32_t link, char *buf,
			size_t len);
uint32_t addrplan_link_lookup(const struct topo *t, const char *name);

/*
 * "a.b.c.d/len" -> *base, *prefix. Returns -1 on malformed text, a length
 * over 32, or host bits set below the prefix.
 */
int addrplan_cidr_parse(const char *s, uint32_t *base, uint8_t *prefix);
/* Sets switch_net (before topo_finalize); -1 with a message if malformed. */
int addrplan_set_switch_net(struct topo *t, uint32_t base, uint8_t prefix,
			    char *err, size_t errlen);
/*
 * Checks that the plan of t's current links and ports fits in switch_net,
 * does not start at 0.0.0.0 and overlaps no NIC IP. Returns 0, or -1 with
 * the problem in err (called by topo_finalize; callable before it).
 */
int addrplan_check(const struct topo *t, char *err, size_t errlen);

#endif /* C4_ADDRPLAN_H */
