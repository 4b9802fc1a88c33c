/*
 * topo_yaml.h: the fabric from a YAML file (see conf/topology-example.yaml).
 *
 *   leaves: [{name, pod: 0, plane: 0}, ...]
 *   spines: [{name, pod: 0, plane: 0}, ...]
 *   links:  [{leaf, spine, count: 1, gbps}, ...]   leaf or spine may be
 *           "*": every leaf (spine) of the other end's pod and plane
 *   hosts:  [{name, nics: [{name, gbps, left: {leaf, ip},
 *                                      right: {leaf, ip}}, ...]}, ...]
 *   switch_net: 100.64.0.0/10    optional: network of the switch interface
 *           addresses (addrplan.h); must hold the plan, miss the NIC IPs
 *
 * Schema errors come from lib/daemon/cfg; then every name and reference is
 * checked (unknown leaf or spine, duplicate names, a NIC with both ports on
 * one leaf, a malformed or duplicate IP, a link across pods or planes, a
 * link declared twice, a host without NICs), all of them in one run, each
 * as "file:line:col: message".
 */
#ifndef C4_TOPO_YAML_H
#define C4_TOPO_YAML_H

#include "cfg.h"
#include "topo.h"

/*
 * Loads and validates the fabric in path. On success returns 0 and a final
 * topology in *out (free with topo_free). On error returns -1, *out is NULL
 * and d holds every problem. d is initialised by the call in both cases;
 * release it with cfg_diag_free().
 */
int topo_yaml_load(const char *path, struct topo **out, struct cfg_diag *d);
/* The same from memory; name stands for the file in messages. */
int topo_yaml_load_buffer(const char *name, const void *buf, size_t len,
			  struct topo **out, struct cfg_diag *d);

#endif /* C4_TOPO_YAML_H */
